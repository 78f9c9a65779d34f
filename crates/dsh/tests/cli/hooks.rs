//! Hooks (`.dsh/hooks.json`, the format Claude Code and Codex share): real commands, their
//! payload on stdin, exit status 2 to block, under the run's sandbox.

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn hooks(env: &TestEnv, config: Value) {
    env.write(".dsh/hooks.json", &config.to_string());
}

fn command(script: &str) -> Value {
    json!({"type": "command", "command": script})
}

fn last_user_text(request: &dsh_testkit::Request) -> String {
    serde_json::to_string(request.messages().last().unwrap()).unwrap()
}

#[test]
fn a_pre_tool_use_hook_sees_the_call_and_blocks_it() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "rm -rf build", "description": "clean"}),
        ),
        Turn::text("understood"),
    ]);
    hooks(
        &env,
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            command("cat > payload.json; echo 'rm is not allowed here' >&2; exit 2")
        ]}]}}),
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let results = env.server.requests()[1].tool_results();
    assert_eq!(
        results,
        ["Error: a PreToolUse hook blocked this call: rm is not allowed here"]
    );
    let payload: Value =
        serde_json::from_str(&std::fs::read_to_string(env.ws.path().join("payload.json")).unwrap())
            .unwrap();
    assert_eq!(payload["hook_event_name"], "PreToolUse");
    assert_eq!(payload["tool_name"], "Bash");
    assert_eq!(payload["dsh_tool_name"], "bash");
    assert_eq!(payload["tool_input"]["command"], "rm -rf build");
    assert!(
        payload["session_id"]
            .as_str()
            .unwrap()
            .starts_with("session-")
    );
}

#[test]
fn post_tool_use_and_stop_hooks_talk_to_the_model() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo built", "description": "build"}),
        ),
        Turn::text("all done"),
        Turn::text("now really done"),
    ]);
    // The Stop hook sends the model back once: the second time it is told it already did.
    hooks(
        &env,
        json!({"hooks": {
            "PostToolUse": [{"matcher": "bash", "hooks": [
                command("echo 'remember to run the linter' >&2; exit 2")
            ]}],
            "Stop": [{"hooks": [command(
                "grep -q '\"stop_hook_active\":true' && exit 0; echo 'the tests were not run' >&2; exit 2"
            )]}]
        }}),
    );
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 3);
    let result = &requests[1].tool_results()[0];
    assert!(
        result.ends_with("[PostToolUse hook] remember to run the linter"),
        "{result}"
    );
    assert!(last_user_text(&requests[2]).contains("the tests were not run"));
    assert_eq!(out.events().last().unwrap()["text"], "now really done");
}

#[test]
fn prompt_hooks_add_context_or_withhold_the_message() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    hooks(
        &env,
        json!({"hooks": {
            "SessionStart": [{"hooks": [command("echo 'the repo uses tabs'")]}],
            "UserPromptSubmit": [{"hooks": [command(
                "grep -q secret && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'today is Friday'"
            )]}]
        }}),
    );
    let out = env.run(dsh(), &["fix the indentation"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let sent = last_user_text(&env.server.requests()[0]);
    assert!(
        sent.contains("fix the indentation")
            && sent.contains("the repo uses tabs")
            && sent.contains("today is Friday"),
        "{sent}"
    );

    let out = env.run(dsh(), &["--json", "here is my secret"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(env.server.requests().len(), 1, "nothing more was sent");
    let reason = out.events().last().unwrap()["reason"].clone();
    assert_eq!(reason["error"]["code"], "HOOK_BLOCKED");
    assert!(
        reason["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no secrets in prompts")
    );
}

#[test]
fn a_failing_or_slow_hook_is_reported_and_the_run_goes_on() {
    let env = TestEnv::new(vec![
        Turn::tool_call("bash", json!({"command": "echo ran", "description": "d"})),
        Turn::text("fine"),
    ]);
    hooks(
        &env,
        json!({"hooks": {"PreToolUse": [{"hooks": [
            command("echo 'lint crashed' >&2; exit 1"),
            {"type": "command", "command": "sleep 5", "timeout": 0.2}
        ]}]}}),
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "PreToolUse hook `echo 'lint crashed' >&2; exit 1` failed (exit status 1): lint crashed"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("PreToolUse hook `sleep 5` was stopped after"),
        "{}",
        out.stderr
    );
    assert!(env.server.requests()[1].tool_results()[0].contains("ran"));
}

#[test]
fn hooks_run_in_the_sandbox_and_a_bad_file_is_refused() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    // Outside the workspace and outside the temporary folders the sandbox leaves writable.
    let outside = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join(format!("escaped-{}", std::process::id()));
    hooks(
        &env,
        json!({"hooks": {"SessionStart": [{"hooks": [command(&format!(
            "touch {} 2>/dev/null || echo 'could not write outside'", target.display()
        ))]}]}}),
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(!target.exists(), "a hook wrote outside the workspace");
    assert!(last_user_text(&env.server.requests()[0]).contains("could not write outside"));

    env.write(".dsh/hooks.json", "{\"hooks\": {\"Notify\": []}}");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(out.events()[0]["code"], "CONFIG");
    assert!(
        out.stderr.contains("which dsh does not have"),
        "{}",
        out.stderr
    );
}

#[test]
fn stop_hooks_send_the_model_back_at_most_three_times() {
    let env = TestEnv::new((0..5).map(|i| Turn::text(&format!("answer {i}"))).collect());
    hooks(
        &env,
        json!({"hooks": {"Stop": [{"hooks": [command("echo 'keep going' >&2; exit 2")]}]}}),
    );
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(
        env.server.requests().len(),
        4,
        "the answer, then three times back"
    );
    assert_eq!(out.events().last().unwrap()["text"], "answer 3");
}
