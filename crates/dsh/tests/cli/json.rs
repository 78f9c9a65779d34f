use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::dsh;

#[test]
fn events_come_in_the_reference_order_and_match_the_schema() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"}))
            .reasoning("thinking hard")
            .with_text("let me look")
            .usage(1000, 50, 900),
        Turn::text("answer").usage(1200, 20, 1000),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stderr, "", "no reasoning on stderr in JSON mode");
    assert_eq!(
        out.event_kinds(),
        vec![
            "session",
            "status:turn_start",
            "status:step_start",
            "thinking",
            "text",
            "tool_call",
            "tool_result",
            "status:step_end",
            "status:step_start",
            "text",
            "status:step_end",
            "status:turn_end",
            "final",
        ]
    );
    let events = out.events();
    let session_id = events[0]["sessionId"].as_str().unwrap();
    assert!(session_id.starts_with("session-"));
    assert_eq!(events[0]["cwd"], env.ws_path().display().to_string());
    assert_eq!(
        events[3],
        json!({"type": "thinking", "text": "thinking hard"})
    );
    assert_eq!(events[5]["input"], json!({"file_path": "a.txt"}));
    assert_eq!(events[5]["tool"], "read");
    assert_eq!(events[6]["status"], "completed");
    assert_eq!(events[6]["callId"], events[5]["callId"]);
    let mut usage = events[7]["usage"].clone();
    let cost = usage.as_object_mut().unwrap().remove("costUsd").unwrap();
    assert_eq!(
        usage,
        json!({"inputTokens": 100, "outputTokens": 50, "cacheReadTokens": 900,
               "cacheWriteTokens": 0, "reasoningTokens": 0, "totalTokens": 1050})
    );
    // The default model is priced at DeepSeek's published rates.
    crate::providers::assert_flash_cost(cost.as_f64().unwrap(), 100, 50, 900);
    assert_eq!(events[11]["reason"], json!({"kind": "completed"}));
    let last = &events[12];
    assert_eq!(last["sessionId"], session_id);
    assert_eq!(last["reason"], json!({"kind": "completed"}));
    assert_eq!(last["text"], "answer");
    // The run's usage is the sum of every request.
    assert_eq!(last["usage"]["inputTokens"], 300);
    assert_eq!(last["usage"]["cacheReadTokens"], 1900);
    assert_eq!(last["usage"]["outputTokens"], 70);
    assert_eq!(last["usage"]["totalTokens"], 2270);
}

#[test]
fn tool_errors_carry_their_code() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "missing"})),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["status"], "error");
    assert_eq!(
        result["error"],
        json!({"name": "FsError", "code": "FS_NOT_FOUND"})
    );
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .ends_with("missing\": not found")
    );
}

#[test]
fn long_results_are_cut_in_the_stream_but_not_for_the_model() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "big.txt"})),
        Turn::text("ok"),
    ]);
    env.write("big.txt", &format!("{}\n", "x".repeat(99)).repeat(200));
    let out = env.run(dsh(), &["--json", "go"]);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["truncated"], true);
    assert_eq!(result["result"].as_str().unwrap().len(), 8192);
    assert!(env.server.requests()[1].tool_results()[0].len() > 20_000);
}

#[test]
fn a_failed_turn_still_ends_with_final() {
    let env = TestEnv::new(vec![Turn::status(503, "overloaded")]);
    env.write("no-retries.toml", "[requests]\nretries = 0\n");
    let out = env.run(dsh(), &["--json", "--patch", "no-retries.toml", "go"]);
    assert_eq!(out.code(), Some(1));
    let events = out.events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["reason"]["kind"], "error");
    assert_eq!(last["reason"]["error"]["code"], "SERVER");
    assert_eq!(last["reason"]["error"]["status"], 503);
    assert!(
        out.stderr
            .starts_with("dsh: SERVER: the provider failed (HTTP 503: overloaded)")
    );
    // What to try: the fault is the provider's, past the retries.
    assert!(
        out.stderr.contains(
            "the fault is on its side and the retries did not get past it: try again in a \
             while, or use another model or provider"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_protocol_server_refuses_its_options_on_stderr_alone() {
    let env = TestEnv::new(vec![]);
    for args in [
        &["mcp-server", "--json"][..],
        &["acp", "--json"],
        &["acp", "--bogus", "--json"],
        &["app-server", "--bogus", "--json"],
        &["app-server", "a task"],
        &["mcp-server", "--json", "a task"],
    ] {
        let out = env.run(dsh(), args);
        assert_eq!(out.code(), Some(1), "{args:?}");
        // stdout is the protocol's: not even a JSON error event goes there.
        assert_eq!(out.stdout, "", "{args:?}");
        assert!(out.stderr.starts_with("dsh: "), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
    }
    let out = env.run(dsh(), &["acp", "--json"]);
    assert_eq!(
        out.stderr,
        "dsh: dsh acp does not take --json: it is about one run, and the client picks each \
         session\n"
    );
}

#[test]
fn usage_errors_are_error_events_too() {
    let env = TestEnv::new(vec![]);
    let out = env.run(dsh(), &["--bogus", "--json", "go"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.events(),
        vec![json!({"type": "error", "message": "unknown option '--bogus'", "code": "USAGE"})]
    );
    assert_eq!(
        out.stderr,
        "dsh: unknown option '--bogus' (see dsh --help)\n"
    );
    let out = env.run(dsh(), &["--json", "   "]);
    assert_eq!(
        out.events(),
        vec![
            json!({"type": "error", "message": "a task is required, for example: dsh --profile headless \"run the tests\"", "code": "USAGE"})
        ]
    );
}

#[test]
fn the_stream_names_its_version_and_final_counts_time_and_steps() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::text("done").delayed(std::time::Duration::from_millis(200)),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(events[0]["type"], "session");
    assert_eq!(events[0]["schemaVersion"], 1);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["steps"], 2);
    assert!(last["durationMs"].as_u64().unwrap() >= 200, "{last}");
}

#[test]
fn bash_results_carry_how_the_command_ended() {
    let bash = |command: &str, background: bool| {
        Turn::tool_call(
            "bash",
            json!({"command": command, "description": "d", "run_in_background": background}),
        )
    };
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("bash", json!({"command": "exit 3", "description": "d"})),
            (
                "bash",
                json!({"command": "kill -TERM $$", "description": "d"}),
            ),
        ]),
        bash("true", true),
        Turn::text("done"),
    ]);
    let out = env.run(
        dsh(),
        &["--json", "--permission-mode", "danger-full-access", "go"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let commands: Vec<serde_json::Value> = out
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| e["command"].clone())
        .collect();
    assert_eq!(commands[0], json!({"exitCode": 3}));
    assert_eq!(commands[1], json!({"signal": "SIGTERM"}));
    assert!(
        commands[2]["jobId"].as_str().unwrap().starts_with("bash-"),
        "{commands:?}"
    );
    assert_eq!(
        commands[2].as_object().unwrap().len(),
        1,
        "a started job has not ended"
    );
}

#[test]
fn every_error_event_names_its_kind() {
    let env = TestEnv::new(vec![]);
    let code = |out: &dsh_testkit::RunOutput| {
        let events = out.events();
        assert_eq!(events.len(), 1, "{events:?}");
        events[0]["code"].as_str().unwrap().to_owned()
    };
    let out = env.run(dsh(), &["--json", "--session-id", "session-nope", "go"]);
    assert_eq!(code(&out), "SESSION_NOT_FOUND");
    let out = env.run(dsh(), &["--json", "--effort", "medium", "go"]);
    assert_eq!(code(&out), "USAGE");
    env.write(".dsh/config.toml", "effort = \"medium\"\n");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(code(&out), "CONFIG");
    std::fs::remove_file(env.ws.path().join(".dsh/config.toml")).unwrap();
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env_remove("DEEPSEEK_API_KEY")
            .args(["--json", "go"]),
    );
    assert_eq!(code(&out), "AUTH");
    let out = env.run(dsh(), &["--json", "-o", "no/such/dir/answer.txt", "go"]);
    assert_eq!(code(&out), "OUTPUT_FILE");
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env_remove("DSH_HOME")
            .env_remove("HOME")
            .args(["--json", "go"]),
    );
    assert_eq!(code(&out), "NO_HOME");
    let out = env.run(dsh(), &["--json", "--continue", "go"]);
    assert_eq!(code(&out), "SESSION_NOT_FOUND");
}
