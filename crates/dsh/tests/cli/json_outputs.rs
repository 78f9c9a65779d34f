//! Every command that takes `--json`, in success and failure, with every line it prints checked
//! against docs/events.schema.json: a run's events as events, a listing command's output as the
//! definition the schema gives it, and every failure as one `error` event with its `code`. The
//! commands are those `dsh --help` lists, so a new one is not left out.

use dsh_testkit::{RunOutput, TestEnv, Turn, check_event, check_output};
use serde_json::{Value, json};

use crate::dsh;

/// Every line of stdout, each parsed as JSON.
fn json_lines(out: &RunOutput) -> Vec<Value> {
    (out.stdout.lines())
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
        })
        .collect()
}

/// The lines of a run: events, each valid.
fn events(out: &RunOutput) -> Vec<Value> {
    let lines = json_lines(out);
    lines.iter().for_each(check_event);
    lines
}

/// The lines of a listing command: each valid as the schema's definition `name`.
fn outputs(out: &RunOutput, name: &str) -> Vec<Value> {
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let lines = json_lines(out);
    assert!(!lines.is_empty(), "{name}: nothing printed");
    lines.iter().for_each(|line| check_output(name, line));
    lines
}

/// A failure: exactly one line, the `error` event, valid and with a code; the code.
fn failure(out: &RunOutput) -> String {
    assert_eq!(out.code(), Some(1), "{}\n{}", out.stdout, out.stderr);
    let lines = events(out);
    assert_eq!(lines.len(), 1, "one error event: {}", out.stdout);
    assert_eq!(lines[0]["type"], "error", "{}", out.stdout);
    let code = lines[0]["code"].as_str().unwrap().to_owned();
    // The same message on stderr, as `dsh: <message>`.
    let message = lines[0]["message"].as_str().unwrap();
    assert!(out.stderr.contains(message), "{}", out.stderr);
    code
}

/// The command words `dsh --help`'s usage lines start with ("" for a run).
fn command_words(env: &TestEnv) -> Vec<String> {
    let help = env.run(dsh(), &["--help"]).stdout;
    let (_, usage) = help.split_once("Usage:\n").unwrap();
    let (usage, _) = usage.split_once("\n\n").unwrap();
    let mut words: Vec<String> = (usage.lines())
        .filter_map(|line| line.trim().strip_prefix("dsh "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|word| {
            if word.starts_with(['-', '[']) {
                String::new()
            } else {
                word.to_owned()
            }
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

fn script() -> Vec<Turn> {
    vec![
        Turn::tool_call("write", json!({"file_path": "a.txt", "content": "one\n"})),
        Turn::text("made a.txt"),
        Turn::text("second answer"),
        Turn::text("third answer"),
        Turn::text("fourth answer"),
        Turn::text("fifth answer"),
    ]
}

#[test]
fn every_json_output_of_every_command_matches_the_schema() {
    let env = TestEnv::new(script());
    let mut covered: Vec<&str> = Vec::new();

    // A run: its events, then its failures before the turn.
    let run = env.run(dsh(), &["--json", "make a.txt"]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let id = events(&run)[0]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(failure(&env.run(dsh(), &["--json", "--bogus"])), "USAGE");
    assert_eq!(failure(&env.run(dsh(), &["--json", "-"])), "TASK");
    let nope = ["--json", "--session-id", "session-nope", "go"];
    assert_eq!(failure(&env.run(dsh(), &nope)), "SESSION_NOT_FOUND");
    let dump = ["--json", "--dump-config"];
    assert_eq!(failure(&env.run(dsh(), &dump)), "USAGE");
    for head in [&["headless"][..], &["--profile", "headless"]] {
        let args = [head, &["--json", "go on", "--session-id", &id]].concat();
        let out = env.run(dsh(), &args);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert_eq!(events(&out).last().unwrap()["type"], "final");
        let bad = [head, &["--json", "--max-turns", "0", "x"]].concat();
        assert_eq!(failure(&env.run(dsh(), &bad)), "USAGE");
    }
    // Without a terminal `resume` is a task word, and the run's.
    let resumed = env.run(dsh(), &["resume", "--json", "--session-id", &id]);
    assert_eq!(events(&resumed).last().unwrap()["type"], "final");
    covered.extend(["", "headless", "resume"]);

    // A saved workflow is a run too.
    env.write(
        ".dsh/workflows/hello.js",
        "// says hello\nreturn {hello: args.who};\n",
    );
    let workflow = env.run(
        dsh(),
        &["workflow", "hello", "--args", "{\"who\":1}", "--json"],
    );
    assert_eq!(workflow.code(), Some(0), "{}", workflow.stderr);
    assert_eq!(events(&workflow).last().unwrap()["type"], "final");
    let missing = env.run(dsh(), &["workflow", "nope", "--json"]);
    assert_eq!(failure(&missing), "WORKFLOW_NOT_FOUND");
    assert_eq!(
        failure(&env.run(dsh(), &["workflow", "list", "--json"])),
        "USAGE"
    );
    covered.push("workflow");

    // The session listings.
    let listed = outputs(
        &env.run(dsh(), &["sessions", "list", "--json"]),
        "sessionSummary",
    );
    assert!(listed.iter().any(|s| s["id"] == id.as_str()));
    let shown = outputs(
        &env.run(dsh(), &["sessions", "show", &id, "--json"]),
        "logLine",
    );
    assert_eq!(shown[0]["type"], "session");
    let found = outputs(
        &env.run(dsh(), &["sessions", "search", "a.txt", "--json"]),
        "searchHit",
    );
    assert_eq!(found[0]["id"], id.as_str());
    let diffed = outputs(
        &env.run(dsh(), &["sessions", "diff", &id, &id, "--json"]),
        "sessionDiff",
    );
    assert!(diffed[0]["divergence"].is_null());
    let no_other = env.run(dsh(), &["sessions", "diff", &id, "session-nope", "--json"]);
    assert_eq!(failure(&no_other), "SESSION_NOT_FOUND");
    let one_id = env.run(dsh(), &["sessions", "diff", &id, "--json"]);
    assert_eq!(failure(&one_id), "USAGE");
    let no_text = env.run(dsh(), &["sessions", "search", "--json"]);
    assert_eq!(failure(&no_text), "USAGE");
    let unknown = env.run(dsh(), &["sessions", "show", "session-nope", "--json"]);
    assert_eq!(failure(&unknown), "SESSION_NOT_FOUND");
    let elsewhere = env.ws_path().join("sub");
    std::fs::create_dir(&elsewhere).unwrap();
    let moved =
        |args: &[&str]| RunOutput::of(env.command(dsh()).current_dir(&elsewhere).args(args));
    assert_eq!(
        failure(&moved(&["sessions", "show", &id, "--json"])),
        "SESSION_ELSEWHERE"
    );
    assert_eq!(
        failure(&env.run(dsh(), &["sessions", "list", "--json", "x"])),
        "USAGE"
    );
    covered.push("sessions");

    // A replay on the same route (the script's next answer), and its refusals.
    let replayed = outputs(
        &env.run(
            dsh(),
            &[
                "replay",
                &id,
                "--model",
                "deepseek-v4-flash",
                "--to",
                "1",
                "--json",
            ],
        ),
        "replayReport",
    );
    assert_eq!(replayed[0]["original"], id.as_str());
    let no_turn = [
        "replay",
        &id,
        "--model",
        "deepseek-v4-flash",
        "--to",
        "99",
        "--json",
    ];
    assert_eq!(failure(&env.run(dsh(), &no_turn)), "REPLAY_TURN");
    let nobody = ["replay", "session-nope", "--model", "x", "--json"];
    assert_eq!(failure(&env.run(dsh(), &nobody)), "SESSION_NOT_FOUND");
    assert_eq!(
        failure(&env.run(dsh(), &["replay", &id, "--json"])),
        "USAGE"
    );
    covered.push("replay");

    // Rewinds: the listing, a plan, and each way one is refused.
    let turns = outputs(&env.run(dsh(), &["rewind", &id, "--json"]), "rewindTurns");
    assert_eq!(turns[0][0]["turn"], 1);
    let plan = outputs(
        &env.run(dsh(), &["rewind", &id, "--to", "1", "--json"]),
        "rewindReport",
    );
    assert!(plan[0]["applied"].is_null());
    let no_turn = env.run(dsh(), &["rewind", &id, "--to", "9", "--json"]);
    assert_eq!(failure(&no_turn), "REWIND_TARGET");
    assert_eq!(
        failure(&env.run(dsh(), &["rewind", "session-nope", "--json"])),
        "SESSION_NOT_FOUND"
    );
    assert_eq!(
        failure(&moved(&["rewind", &id, "--json"])),
        "SESSION_ELSEWHERE"
    );
    // From another folder, the error says where the session lives and what to run there.
    let away = moved(&["rewind", &id]);
    let ws = env.ws_path();
    assert!(
        away.stderr.contains(&format!(
            "session \"{id}\" lives in {} (it was recorded there), not in this directory ({}): \
             run `dsh rewind {id}` from {}",
            ws.display(),
            elsewhere.display(),
            ws.display()
        )),
        "{}",
        away.stderr
    );
    assert!(!away.stderr.contains("--session-id"), "{}", away.stderr);
    env.write("a.txt", "changed by hand\n");
    let outside = env.run(dsh(), &["rewind", &id, "--to", "1", "--yes", "--json"]);
    assert_eq!(failure(&outside), "CHANGED_OUTSIDE");
    let done = env.run(
        dsh(),
        &["rewind", &id, "--to", "1", "--yes", "--force", "--json"],
    );
    let done = outputs(&done, "rewindReport");
    assert_eq!(done[0]["applied"]["toTurn"], 1);
    assert_eq!(
        failure(&env.run(dsh(), &["rewind", &id, "--soon", "--json"])),
        "USAGE"
    );
    covered.push("rewind");

    // Blame: every line of a.txt (rewound away above: made again by hand), one line, and a
    // file that is not there.
    env.write("a.txt", "by hand\nagain\n");
    let blamed = outputs(&env.run(dsh(), &["blame", "a.txt", "--json"]), "blameLine");
    assert_eq!(blamed[0]["line"], 1);
    let one = outputs(
        &env.run(dsh(), &["blame", "a.txt:1", "--json"]),
        "blameLine",
    );
    assert_eq!(one.len(), 1);
    let nowhere = env.run(dsh(), &["blame", "nope.txt", "--json"]);
    assert_eq!(failure(&nowhere), "FILE_NOT_FOUND");
    assert_eq!(failure(&env.run(dsh(), &["blame", "--json"])), "USAGE");
    covered.push("blame");

    // The MCP servers: none, one of each kind, and a config that cannot be read.
    let none = outputs(&env.run(dsh(), &["mcp", "list", "--json"]), "mcpServers");
    assert_eq!(none[0], json!([]));
    env.write(
        ".dsh/config.toml",
        "[mcp.servers.files]\ncommand = \"true\"\n[mcp.servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    let two = outputs(&env.run(dsh(), &["mcp", "list", "--json"]), "mcpServers");
    assert_eq!(two[0].as_array().unwrap().len(), 2);
    env.write(".dsh/config.toml", "[mcp.servers.files]\ncommand = 3\n");
    assert_eq!(
        failure(&env.run(dsh(), &["mcp", "list", "--json"])),
        "CONFIG"
    );
    std::fs::remove_file(env.ws.path().join(".dsh/config.toml")).unwrap();
    assert_eq!(
        failure(&env.run(dsh(), &["mcp", "list", "--json", "x"])),
        "USAGE"
    );
    covered.push("mcp");

    // Commands with no --json of their own: asked for it, they answer with the error event
    // (dsh acp, dsh app-server and dsh mcp-server, whose stdout is their protocol's, on
    // stderr alone).
    for (word, args) in [
        ("login", &["login", "--json"][..]),
        ("logout", &["logout", "--json"]),
        ("trust", &["trust", "--json"]),
        ("untrust", &["untrust", "--json"]),
        ("web", &["web", "--json"]),
        ("sandbox", &["sandbox", "check", "--json"]),
        ("completions", &["completions", "bash", "--json"]),
        ("man", &["man", "--json"]),
    ] {
        assert_eq!(failure(&env.run(dsh(), args)), "USAGE", "{word}");
        covered.push(word);
    }
    for word in ["acp", "app-server", "mcp-server"] {
        let out = env.run(dsh(), &[word, "--json"]);
        assert_eq!(out.code(), Some(1));
        assert_eq!(out.stdout, "", "{word}'s stdout is its protocol's");
        covered.push(word);
    }

    covered.sort_unstable();
    assert_eq!(
        command_words(&env),
        covered,
        "a command `dsh --help` lists is not covered"
    );
}
