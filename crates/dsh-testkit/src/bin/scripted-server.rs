//! The scripted model server as a process, for benchmarks that drive other agents:
//! `scripted-server <steps> [port]` serves a shell session of `steps` steps on loopback
//! ([`dsh_testkit::ScriptedServer::shell_session`]), prints its base URL on a line of its own,
//! and serves until it is killed or its stdin closes.

use std::io::{Read, Write};

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let steps = args.next().and_then(|s| s.parse::<usize>().ok());
    let port = match args.next() {
        None => Some(0),
        Some(port) => port.parse::<u16>().ok(),
    };
    let (Some(steps), Some(port)) = (steps, port) else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: scripted-server <steps> [port]  (steps: 1 answers at once)"
        );
        return std::process::ExitCode::from(2);
    };
    let server = dsh_testkit::ScriptedServer::shell_session(steps.max(1), port);
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{}", server.base_url());
    let _ = out.flush();
    // Whoever started it stops it by closing our stdin (or killing us).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    if let Some(path) = std::env::var_os("SCRIPTED_SERVER_LOG") {
        // Every request it served, one per line: the path, then the JSON body.
        let lines: Vec<String> = server
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.path, r.body))
            .collect();
        let _ = std::fs::write(path, lines.join("\n") + "\n");
    }
    std::process::ExitCode::SUCCESS
}
