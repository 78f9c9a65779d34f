//! The hook events around subagents and the session's end: SubagentStart (its output added to
//! the child's task), SubagentStop (a child's Stop, exit 2 sending it back to work) and
//! SessionEnd, real commands against the scripted model.

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

fn command(script: &str) -> Value {
    json!({"type": "command", "command": script})
}

fn payload(env: &TestEnv, file: &str) -> Value {
    let path = env.ws.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn subagent_start_and_stop_and_session_end_hooks_run() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "check it", "prompt": "Check."}),
        ),
        Turn::text("FIRST"),
        Turn::text("SECOND"),
        Turn::text("done"),
    ]);
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {
            "SubagentStart": [{"hooks": [command("cat > start.json; echo CONTEXT_FROM_HOOK")]}],
            "SubagentStop": [{"hooks": [command(
                "cat >> stops.jsonl; echo >> stops.jsonl; if [ ! -e once ]; then touch once; \
                 echo 'check the tests too' >&2; exit 2; fi"
            )]}],
            "SessionEnd": [{"hooks": [command("cat > end.json")]}],
        }})
        .to_string(),
    );
    let out = env.run(dsh(), &["--json", "delegate"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);

    let start = payload(&env, "start.json");
    assert_eq!(start["hook_event_name"], "SubagentStart");
    assert_eq!(start["agent_id"], "subagent-1");
    assert_eq!(start["agent_type"], "general");
    assert_eq!(start["description"], "check it");

    let requests = env.server.requests();
    assert_eq!(requests.len(), 4, "parent, child twice, parent");
    // The child's task carries what SubagentStart printed; its Stop sent it back once.
    let task = serde_json::to_string(requests[1].messages().last().unwrap()).unwrap();
    assert!(
        task.contains("Check.") && task.contains("CONTEXT_FROM_HOOK"),
        "{task}"
    );
    let again = serde_json::to_string(requests[2].messages().last().unwrap()).unwrap();
    assert!(again.contains("check the tests too"), "{again}");
    let stops: Vec<Value> = std::fs::read_to_string(env.ws.path().join("stops.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stops.len(), 2);
    assert_eq!(stops[0]["hook_event_name"], "SubagentStop");
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
    let result = (out.events().into_iter())
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["result"], "SECOND");

    let end = payload(&env, "end.json");
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "exit");
}

#[test]
fn a_pre_compact_hook_runs_before_the_summary_is_asked_for() {
    // As compaction.rs's summary test: three files written and read back, the last answer
    // reporting a prompt past 0.8 of a 6,000-token window.
    let chunk = "word ".repeat(600);
    let mut script = Vec::new();
    for i in 0..3 {
        let file = format!("f{i}.txt");
        script.push(Turn::tool_call(
            "write",
            json!({"file_path": file, "content": chunk}),
        ));
        script.push(Turn::tool_call("read", json!({"file_path": file})));
    }
    let last = script.pop().unwrap().usage(5000, 10, 0);
    script.push(last);
    script.push(Turn::text("## Goal\n- files\n## Next\n- (none)"));
    script.push(Turn::text("finished"));
    let env = TestEnv::new(script);
    env.write(
        "window.toml",
        "[models.\"deepseek-v4-flash\"]\ncontext_window = 6000\n",
    );
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {
            "PreCompact": [
                {"matcher": "manual", "hooks": [command("touch manual-ran")]},
                {"matcher": "auto", "hooks": [command("cat > compact.json")]},
            ],
        }})
        .to_string(),
    );
    let out = env.run(dsh(), &["--json", "--patch", "window.toml", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let compact = payload(&env, "compact.json");
    assert_eq!(compact["hook_event_name"], "PreCompact");
    assert_eq!(compact["trigger"], "auto");
    assert!(!env.ws.path().join("manual-ran").exists());
    assert!(
        env.session_log()
            .contains("\"type\":\"compaction/summary\"")
    );
}
