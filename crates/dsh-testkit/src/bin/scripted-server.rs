//! The scripted model server as a process, for benchmarks that drive other agents and for
//! suites that drive dsh from outside: `scripted-server <steps> [port]` serves a shell session
//! of `steps` steps ([`dsh_testkit::ScriptedServer::shell_session`]); `scripted-server --tools
//! <prefix> [port]` calls each offered tool named `<prefix>*` once
//! ([`dsh_testkit::ScriptedServer::tool_session`]); `scripted-server --turns <file.json>
//! [port]` answers with the turns the file lists ([`dsh_testkit::Turn::script_from_json`]),
//! and the title requests with the titles `SCRIPTED_SERVER_TITLES` lists (a JSON list of
//! strings; [`dsh_testkit::ScriptedServer::with_titles`]). Either serves on loopback, prints its
//! base URL on a line of its own, and serves until it is killed or its stdin closes.

use std::io::{Read, Write};

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "--turns") {
        args.next();
        let turns = args
            .next()
            .ok_or_else(|| "--turns needs a file".to_owned())
            .and_then(|path| {
                std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))
            })
            .and_then(|text| serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}")))
            .and_then(|script| dsh_testkit::Turn::script_from_json(&script));
        let port = args.next().map_or(Some(0), |p| p.parse::<u16>().ok());
        let (Ok(turns), Some(port)) = (turns, port) else {
            let _ = writeln!(
                std::io::stderr(),
                "usage: scripted-server --turns <file.json> [port]"
            );
            return std::process::ExitCode::from(2);
        };
        let titles: Vec<dsh_testkit::Turn> = std::env::var("SCRIPTED_SERVER_TITLES")
            .ok()
            .and_then(|text| serde_json::from_str::<Vec<String>>(&text).ok())
            .unwrap_or_default()
            .iter()
            .map(|title| dsh_testkit::Turn::text(title).usage(40, 5, 0))
            .collect();
        return serve(dsh_testkit::ScriptedServer::start_on(turns, port).with_titles(titles));
    }
    let prefix = if args.peek().is_some_and(|a| a == "--tools") {
        args.next();
        args.next()
    } else {
        None
    };
    let steps = match prefix {
        Some(_) => Some(0),
        None => args.next().and_then(|s| s.parse::<usize>().ok()),
    };
    let port = match args.next() {
        None => Some(0),
        Some(port) => port.parse::<u16>().ok(),
    };
    let (Some(steps), Some(port)) = (steps, port) else {
        let _ = writeln!(
            std::io::stderr(),
            "usage: scripted-server <steps> [port]  (steps: 1 answers at once)\n       \
             scripted-server --tools <prefix> [port]"
        );
        return std::process::ExitCode::from(2);
    };
    serve(match prefix {
        Some(prefix) => dsh_testkit::ScriptedServer::tool_session(&prefix, port),
        None => dsh_testkit::ScriptedServer::shell_session(steps.max(1), port),
    })
}

/// Prints the base URL, serves until stdin closes, then writes the log if asked.
fn serve(server: dsh_testkit::ScriptedServer) -> std::process::ExitCode {
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
