//! Compaction: a history that reaches its share of the context window is pruned and then
//! summarised, and a provider's context-window error compacts and retries the step.

use dsh_testkit::{TestEnv, Turn};
use serde_json::json;

use crate::dsh;

const INSTRUCTION_START: &str = "Stop working on the task for a moment";

fn small_window(env: &TestEnv, tokens: u64) {
    env.write(
        "window.toml",
        &format!("[models.\"deepseek-v4-flash\"]\ncontext_window = {tokens}\n"),
    );
}

fn text_of(message: &serde_json::Value) -> String {
    message["content"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_long_result_is_pruned_before_anything_is_summarised() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "big.txt"})),
        Turn::text("done"),
    ]);
    // ~20,000 characters read back: over the 8,192-character prune threshold and over 0.8 of
    // a 5,000-token window, but under it once pruned.
    let lines: Vec<String> = (0..400)
        .map(|i| format!("line {i:04} of the big file .........."))
        .collect();
    env.write("big.txt", &lines.join("\n"));
    small_window(&env, 5000);
    let out = env.run(dsh(), &["--patch", "window.toml", "read it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2, "no summary request was needed");
    let result = &requests[1].tool_results()[0];
    assert!(
        result.contains("\n\n[... tool result middle pruned ...]\n\n"),
        "{result}"
    );
    assert!(result.chars().count() < 5200, "{}", result.chars().count());
    assert!(result.starts_with("<path>"));
    // The log keeps the whole result, and the prune.
    let log = env.session_log();
    assert!(log.contains("line 0200 of the big file"));
    assert!(log.contains("\"type\":\"compaction/prune\""));
}

#[test]
fn a_history_still_too_large_is_summarised_and_the_summary_is_counted() {
    // Each step writes a 3,000-character file and reads it back: results under the prune
    // threshold, so only a summary can shrink the history. The server's usage is what dsh
    // measures by: the last tool-calling answer reports a prompt past 0.8 of the window, so
    // the summary is asked for right after it.
    let chunk = "word ".repeat(600);
    let mut script = Vec::new();
    for i in 0..3 {
        script.push(Turn::tool_call(
            "write",
            json!({"file_path": format!("f{i}.txt"), "content": chunk}),
        ));
        script.push(Turn::tool_call(
            "read",
            json!({"file_path": format!("f{i}.txt")}),
        ));
    }
    let last = script.pop().unwrap().usage(5000, 10, 0);
    script.push(last);
    script.push(
        Turn::text("## Goal\n- write and read three files\n## Next\n- (none)").usage(900, 40, 0),
    );
    script.push(Turn::text("finished"));
    let env = TestEnv::new(script);
    small_window(&env, 6000);
    let out = env.run(
        dsh(),
        &["--json", "--patch", "window.toml", "write and read"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let summary_at = requests
        .iter()
        .position(|r| {
            r.messages()
                .last()
                .is_some_and(|m| text_of(m).starts_with(INSTRUCTION_START))
        })
        .expect("a summary request");
    let next = &requests[summary_at + 1];
    let first = text_of(&next.messages()[1]);
    assert!(first.contains("<compacted-summary>\n## Goal"), "{first}");
    assert!(next.messages().len() < requests[summary_at].messages().len());
    // The summary's 940 tokens are in the run's total.
    let events = out.events();
    let total = events.last().unwrap()["usage"]["totalTokens"]
        .as_u64()
        .unwrap();
    assert_eq!(summary_at, 6);
    assert_eq!(
        total,
        5 * 110 + 5010 + 940 + 110,
        "{}",
        events.last().unwrap()
    );
    assert!(
        env.session_log()
            .contains("\"type\":\"compaction/summary\"")
    );
    // A resumed session rebuilds the compacted history, not the original one.
    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    let out = env.run(
        dsh(),
        &["--patch", "window.toml", "--session-id", &id, "go on"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let all = env.server.requests();
    let resumed = all.last().unwrap();
    assert!(text_of(&resumed.messages()[1]).contains("<compacted-summary>"));
    assert_eq!(
        resumed.messages().len(),
        all[summary_at + 1].messages().len() + 2,
        "the compacted history, the last answer and the new task"
    );
}

#[test]
fn a_context_window_error_compacts_and_retries_the_step() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::status(400, "This model's maximum context length is 1000 tokens"),
        Turn::text("## Goal\n- read a.txt twice"),
        Turn::text("after compaction"),
    ]);
    env.write("a.txt", &"alpha beta gamma delta\n".repeat(40));
    let out = env.run(dsh(), &["read twice"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "after compaction\n");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 5);
    assert!(text_of(requests[3].messages().last().unwrap()).starts_with(INSTRUCTION_START));
    let retried = &requests[4];
    assert!(text_of(&retried.messages()[1]).contains("<compacted-summary>"));
    // The last call and its result are kept as they were.
    assert_eq!(retried.tool_results().len(), 1);
}

/// A run far longer than its window stays inside it: 300 steps of 5 KB reads in a
/// 4,000-token window are pruned and summarised as they go, so no request grows with the run
/// (the server answers each checkpoint request and counts the steps itself).
#[test]
fn a_long_run_in_a_small_window_keeps_every_request_inside_it() {
    let server = dsh_testkit::ScriptedServer::read_session(300);
    let env = TestEnv::with_server(server);
    for i in 0..10 {
        env.write(
            &format!("f{i}.txt"),
            &"some line of source code\n".repeat(200),
        );
    }
    small_window(&env, 4000);
    let out = env.run(
        dsh(),
        &[
            "--patch",
            "window.toml",
            "--max-steps",
            "1000",
            "--json",
            "read them all",
        ],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let log = env.session_log();
    assert_eq!(log.matches("\"type\":\"tool/result\"").count(), 299);
    assert!(log.matches("\"type\":\"compaction/summary\"").count() >= 5);
    let final_event = out.events().into_iter().last().unwrap();
    assert_eq!(final_event["type"], "final", "{final_event}");
    // Every request the server received, the summary requests included, fits the window by
    // the measure dsh keeps its history by (its estimate of the messages), and none grows
    // with the run: the largest body is no larger than the largest of the first steps'. (By
    // the body's bytes, tool schemas and all, even the first request is over 4,000 tokens.)
    let sizes = env.server.request_sizes();
    assert!(sizes.len() >= 300, "{} requests", sizes.len());
    let over: Vec<(usize, u64)> = sizes
        .iter()
        .map(|s| s.message_tokens)
        .enumerate()
        .filter(|&(_, tokens)| tokens > 4000)
        .collect();
    assert!(
        over.is_empty(),
        "requests over the 4,000-token window (index, tokens): {over:?}"
    );
    let early = sizes[..20].iter().map(|s| s.body_tokens).max().unwrap();
    let largest = sizes.iter().map(|s| s.body_tokens).max().unwrap();
    assert!(
        largest <= early,
        "a request grew with the run: {largest} tokens of body, {early} at most in the first 20"
    );
}

/// A script that sets a goal, then writes and reads three files until the last read reports a
/// prompt past 0.8 of a 6,000-token window (a summary is due), then completes the goal.
fn goal_and_big_history() -> Vec<Turn> {
    let chunk = "word ".repeat(600);
    let mut script = vec![Turn::tool_call(
        "create_goal",
        json!({"objective": "Keep the three files in sync"}),
    )];
    for i in 0..3 {
        script.push(Turn::tool_call(
            "write",
            json!({"file_path": format!("f{i}.txt"), "content": chunk}),
        ));
        script.push(Turn::tool_call(
            "read",
            json!({"file_path": format!("f{i}.txt")}),
        ));
    }
    let last = script.pop().unwrap().usage(5000, 10, 0);
    script.push(last);
    script.push(Turn::text("## Goal\n- sync three files\n## Next\n- (none)").usage(900, 40, 0));
    script.push(Turn::tool_call("get_goal", json!({})));
    script.push(Turn::raw_tool_call(
        "update_goal",
        r#"{"goal_id":"{{result:/goal/id}}","revision":1,"action":"complete"}"#,
    ));
    script.push(Turn::text("finished"));
    script
}

#[test]
fn the_instructions_and_the_goal_are_given_again_after_a_summary() {
    let env = TestEnv::new(goal_and_big_history());
    env.write("AGENTS.md", "Always answer in haiku.\n");
    small_window(&env, 6000);
    let out = env.run(dsh(), &["--patch", "window.toml", "write and read"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let summary_at = (requests.iter())
        .position(|r| {
            (r.messages().last()).is_some_and(|m| text_of(m).starts_with(INSTRUCTION_START))
        })
        .expect("a summary request");
    // The instructions were in the part the summary condensed.
    let condensed = requests[summary_at].messages();
    assert!(text_of(&condensed[2]).contains("Always answer in haiku."));
    let next = requests[summary_at + 1].messages();
    assert!(text_of(&next[1]).contains("<compacted-summary>"));
    let users: Vec<String> = (next.iter())
        .filter(|m| m["role"] == "user")
        .map(text_of)
        .collect();
    let instructions = (users.iter())
        .filter(|t| t.contains("Always answer in haiku."))
        .count();
    assert_eq!(instructions, 1, "given again, once: {users:?}");
    assert!(
        (users.iter())
            .any(|t| t.contains("goal, restated") && t.contains("Keep the three files in sync")),
        "{users:?}"
    );
    // The requests after it carry them too, and no more copies.
    let last = requests.last().unwrap().messages();
    let again = (last.iter())
        .filter(|m| text_of(m).contains("Always answer in haiku."))
        .count();
    assert_eq!(again, 1);
}

#[test]
fn compaction_auto_off_sends_no_summary_and_the_threshold_moves_it() {
    for (setting, summaries) in [
        ("auto = false", 0),
        ("threshold = 0.95", 0),
        ("threshold = 0.5", 1),
    ] {
        let env = TestEnv::new(goal_and_big_history());
        small_window(&env, 6000);
        env.write("compact.toml", &format!("[compaction]\n{setting}\n"));
        let out = env.run(
            dsh(),
            &[
                "--patch",
                "window.toml",
                "--patch",
                "compact.toml",
                "write and read",
            ],
        );
        assert_eq!(out.code(), Some(0), "{setting}: stderr: {}", out.stderr);
        let asked = (env.server.requests().iter())
            .filter(|r| {
                (r.messages().last()).is_some_and(|m| text_of(m).starts_with(INSTRUCTION_START))
            })
            .count();
        assert!(
            if summaries == 0 {
                asked == 0
            } else {
                asked >= 1
            },
            "{setting}: {asked} summary requests"
        );
    }
}
