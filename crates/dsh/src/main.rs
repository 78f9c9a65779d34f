//! `dsh`, the command-line entry point: it parses the command line, renders the agent's events
//! (plain text, or the `--json` stream) and maps the outcome onto an exit status. The agent
//! itself lives in `dsh-core`.

mod cli;
mod dump_config;
mod place;
mod run;
mod sandbox_check;
mod sessions_cmd;
mod surface;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use cli::Command;

fn main() -> ExitCode {
    let args = std::env::args_os().skip(1).collect();
    match cli::parse(args, std::io::stdin().is_terminal()) {
        Ok(Command::Help) => {
            let _ = std::io::stdout().write_all(cli::HELP.as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::Version) => {
            let _ = writeln!(std::io::stdout(), "dsh {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(Command::Run(args)) => ExitCode::from(run::run(args)),
        Ok(Command::SandboxCheck { patches }) => ExitCode::from(sandbox_check::run(&patches)),
        Ok(Command::DumpConfig(args)) => ExitCode::from(dump_config::run(&args)),
        Ok(Command::SessionsList { json }) => ExitCode::from(sessions_cmd::list(json)),
        Ok(Command::SessionsShow { id, json }) => ExitCode::from(sessions_cmd::show(&id, json)),
        Err(usage) => {
            let mut surface = surface::Surface::new(usage.json);
            let hint = if usage.hint { " (see dsh --help)" } else { "" };
            surface.fail(&format!("{}{hint}", usage.message), &usage.message, None);
            ExitCode::FAILURE
        }
    }
}
