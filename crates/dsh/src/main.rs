//! `dsh`, the command-line entry point: it parses the command line, renders a headless run's
//! events (plain text, or the `--json` stream) and maps the outcome onto an exit status, or
//! hands a person at a terminal to the terminal UI (`dsh-tui`). The agent itself lives in
//! `dsh-core`.

mod app_server;
mod blame_cmd;
mod cli;
mod diff_cmd;
mod dump_config;
mod exit_status;
mod login_cmd;
mod mcp_cmd;
mod place;
mod replay_cmd;
mod rewind_cmd;
mod run;
mod sandbox_check;
mod sessions_cmd;
mod stream_input;
mod surface;
mod trust_cmd;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use cli::Command;

fn main() -> ExitCode {
    // Before anything else, and before any thread starts: this process may be the run's
    // sandbox helper, started by bubblewrap inside its sandbox.
    if let Some(status) = dsh_core::sandbox_helper::serve_if_asked() {
        // The helper served its sandbox's commands; nothing else of dsh runs in it.
        std::process::exit(status);
    }
    let args = std::env::args_os().skip(1).collect();
    let terminals = cli::Terminals {
        stdin: std::io::stdin().is_terminal(),
        stdout: std::io::stdout().is_terminal(),
    };
    match cli::parse(args, terminals) {
        Ok(Command::Help) => {
            let _ = std::io::stdout().write_all(cli::help().as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::HelpOf(word)) => {
            let help = cli::command_help(&word).unwrap_or_else(cli::help);
            let _ = std::io::stdout().write_all(help.as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::Version) => {
            let _ = writeln!(std::io::stdout(), "{}", cli::version());
            ExitCode::SUCCESS
        }
        Ok(Command::Run(args)) => ExitCode::from(run::run(args)),
        Ok(Command::SandboxCheck { patches }) => ExitCode::from(sandbox_check::run(&patches)),
        Ok(Command::DumpConfig(args)) => ExitCode::from(dump_config::run(&args)),
        Ok(Command::SessionsList { json }) => ExitCode::from(sessions_cmd::list(json)),
        Ok(Command::SessionsShow { id, json }) => ExitCode::from(sessions_cmd::show(&id, json)),
        Ok(Command::SessionsSearch { text, limit, json }) => {
            ExitCode::from(sessions_cmd::search(&text, limit, json))
        }
        Ok(Command::Key(command)) => ExitCode::from(login_cmd::run(&command)),
        Ok(Command::Trust(command)) => ExitCode::from(trust_cmd::run(&command)),
        Ok(Command::Completions(shell)) => {
            let _ = std::io::stdout().write_all(cli::completions(shell).as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::Man) => {
            let _ = std::io::stdout().write_all(cli::man_page().as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::SessionsExport { id, format }) => {
            ExitCode::from(sessions_cmd::export(&id, format))
        }
        Ok(Command::SessionsDiff { a, b, json }) => ExitCode::from(diff_cmd::run(&a, &b, json)),
        Ok(Command::SessionsRename { id, title }) => {
            ExitCode::from(sessions_cmd::rename(&id, &title))
        }
        Ok(Command::WorkflowList) => ExitCode::from(workflow_list()),
        Ok(Command::Rewind(args)) => ExitCode::from(rewind_cmd::run(&args)),
        Ok(Command::Replay(args)) => ExitCode::from(replay_cmd::run(&args)),
        Ok(Command::Blame { file, line, json }) => {
            ExitCode::from(blame_cmd::run(&file, line, json))
        }
        Ok(Command::Mcp(command)) => ExitCode::from(mcp_cmd::run(&command)),
        Ok(Command::Web(args)) => {
            let options = dsh_web_ui::WebOptions {
                host: args.host,
                port: args.port,
                open: args.open,
                app: args.app,
                flags: args.flags,
            };
            match dsh_web_ui::run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    surface::Surface::new(false).fail(&message, &message, None);
                    ExitCode::FAILURE
                }
            }
        }
        Ok(Command::Tui(args)) => {
            // Trust first: it decides which provider, and so which key, the run needs.
            if let Err(message) = trust_cmd::ask_first(&args.flags) {
                surface::Surface::new(false).fail(&message, &message, None);
                return ExitCode::FAILURE;
            }
            let settings = match login_cmd::ensure_key(&args.flags) {
                Ok(settings) => settings,
                Err(message) => {
                    surface::Surface::new(false).fail(&message, &message, None);
                    return ExitCode::FAILURE;
                }
            };
            let options = dsh_tui::Options {
                flags: args.flags,
                task: args.task,
                pick_session: args.pick_session,
                settings: settings.map(Box::new),
            };
            match dsh_tui::run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(dsh_tui::StartError(message)) => {
                    surface::Surface::new(false).fail(&message, &message, None);
                    ExitCode::FAILURE
                }
            }
        }
        Ok(Command::Serve { protocol, flags }) => serve(protocol, flags),
        Err(usage) => {
            let mut surface = surface::Surface::new(usage.json);
            let hint = (usage.hint.as_ref())
                .map(|help| format!(" (see {help})"))
                .unwrap_or_default();
            surface.fail(
                &format!("{}{hint}", usage.message),
                &usage.message,
                Some("USAGE".into()),
            );
            ExitCode::FAILURE
        }
    }
}

/// `dsh mcp-server`, `dsh acp` and `dsh app-server`: stdout is the protocol's, so a failure goes
/// to stderr only.
fn serve(protocol: cli::Protocol, flags: dsh_core::Flags) -> ExitCode {
    let outcome = match protocol {
        cli::Protocol::Mcp => dsh_mcp_server::serve_stdio(flags).map_err(|e| e.0),
        cli::Protocol::Acp => dsh_acp::serve_stdio(flags).map_err(|e| e.0),
        cli::Protocol::App => app_server::serve_stdio(flags),
        cli::Protocol::Web => Err("dsh web is served by its own command".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            surface::Surface::new(false).fail(&message, &message, None);
            ExitCode::FAILURE
        }
    }
}

/// `dsh workflow list`: the saved workflows this directory can run, and the files that cannot.
fn workflow_list() -> u8 {
    let env = dsh_core::Environment::from_process();
    let (cwd, home) = match (place::cwd(), dsh_core::config::home(&env)) {
        (Ok(cwd), Ok(home)) => (cwd, home.value),
        (Err(e), _) | (_, Err(e)) => {
            let _ = writeln!(std::io::stderr(), "dsh: {}", e.message);
            return 1;
        }
    };
    let (found, problems) = dsh_core::saved_workflows(&cwd, &home);
    let mut out = String::new();
    for workflow in &found {
        out.push_str(&format!(
            "{}  {}\n    {}\n",
            workflow.name,
            workflow.description,
            workflow.path.display()
        ));
    }
    if found.is_empty() {
        out.push_str("no saved workflows: put one in .dsh/workflows/<name>.js\n");
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    for problem in problems {
        let _ = writeln!(std::io::stderr(), "dsh: skipped {problem}");
    }
    0
}
