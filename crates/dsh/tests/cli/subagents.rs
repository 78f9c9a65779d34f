//! Subagents: children run in the same process against the same scripted model, each with
//! its own session log, bounded, and accounted in the parent's usage.

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

fn delegate(prompt: &str) -> (&'static str, Value) {
    (
        "subagent",
        json!({"description": "check", "prompt": prompt}),
    )
}

fn tool_results(out: &dsh_testkit::RunOutput) -> Vec<Value> {
    out.events()
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

#[test]
fn a_child_answers_the_call_and_its_tokens_are_the_parents_too() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[delegate("Say CHILD_OK.")]).usage(100, 10, 0),
        Turn::text("CHILD_OK").usage(50, 5, 0),
        Turn::text("the child said CHILD_OK").usage(200, 20, 0),
    ]);
    let out = env.run(dsh(), &["--json", "delegate"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // What the model reads has no runs of spaces inside its sentences (a string literal
    // broken over lines without `\` keeps the next line's indentation).
    for (who, request) in [("parent", 0), ("child", 1)] {
        for message in env.server.requests()[request].messages() {
            let text = message["content"].as_str().unwrap_or_default();
            for line in text.lines() {
                assert!(
                    !line.trim().contains("  "),
                    "a run of spaces in the {who}'s {} message: {line:?}",
                    message["role"]
                );
            }
        }
    }
    let events = out.events();
    let results = tool_results(&out);
    assert_eq!(results.len(), 1, "the parent's own results only");
    assert_eq!(results[0]["result"], "CHILD_OK");
    // The child's events are there, tagged, never mixed into the parent's.
    let child: Vec<&Value> = events.iter().filter(|e| e["type"] == "agent").collect();
    assert!(!child.is_empty());
    assert!(child.iter().all(|e| e["agentId"] == "subagent-1"));
    assert!(
        child
            .iter()
            .any(|e| e["event"]["type"] == "text" && e["event"]["text"] == "CHILD_OK")
    );
    // Every request billed is in the run's usage, the child's included, and in the step that
    // ran it.
    let last = events.last().unwrap();
    assert_eq!(last["usage"]["inputTokens"], 350);
    assert_eq!(last["usage"]["outputTokens"], 35);
    let first_step = events
        .iter()
        .find(|e| e["type"] == "status" && e["phase"] == "step_end")
        .unwrap();
    assert_eq!(first_step["usage"]["inputTokens"], 150);
    // The parent's log names the child's session, whose header names the parent.
    let log = env.session_logs();
    let run = log
        .lines()
        .find(|l| l.contains("\"type\":\"subagent/run\""))
        .unwrap_or_else(|| panic!("no subagent/run in {log}"));
    let run: Value = serde_json::from_str(run).unwrap();
    let child_session = run["data"]["sessionId"].as_str().unwrap();
    assert_eq!(run["data"]["agentId"], "subagent-1");
    let parent_session = events[0]["sessionId"].as_str().unwrap();
    assert!(
        log.contains(&format!("\"id\":\"{child_session}\"",))
            && log.contains(&format!("\"parentSession\":\"{parent_session}\"")),
        "{log}"
    );
}

#[test]
fn two_children_run_at_once_and_a_fork_starts_from_the_completed_turns() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[delegate("Say A."), delegate("Say B.")]),
        // Each child's one request is answered only once both children's have arrived: one
        // child after the other would never get its answer (the server refuses it after a
        // minute, and the result says so).
        Turn::text("ANSWER").after_requests(3),
        Turn::text("ANSWER").after_requests(3),
        Turn::text("both answered"),
    ]);
    let out = env.run(dsh(), &["--json", "two at once"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    let results = tool_results(&out);
    assert_eq!(results[0]["result"], "ANSWER");
    assert_eq!(results[1]["result"], "ANSWER");
    let ids: std::collections::BTreeSet<String> = out
        .events()
        .iter()
        .filter(|e| e["type"] == "agent")
        .map(|e| e["agentId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    // A fork in a resumed session sees the turn before.
    let session = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let env2 = TestEnv::new(vec![
        Turn::tool_call(
            "subagent_fork",
            json!({"description": "recall", "prompt": "What did I ask first?"}),
        ),
        Turn::text("you asked: two at once"),
        Turn::text("recalled"),
    ]);
    // The same home and workspace: resume the first run's session.
    let out = dsh_testkit::RunOutput::of(
        env2.command(dsh())
            .env("DSH_HOME", env.home.path())
            .current_dir(env.ws_path())
            .args(["--json", "--session-id", &session, "fork it"]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env2.server.requests();
    let child = requests[1].body["messages"].to_string();
    assert!(child.contains("two at once"), "{child}");
    assert!(child.contains("What did I ask first?"), "{child}");
    assert!(
        !child.contains("fork it"),
        "the turn in flight is not the child's"
    );
}

#[test]
fn each_limit_is_a_tool_error_naming_its_key() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "deep", "prompt": "Go deeper."}),
        ),
        // The child tries a grandchild: depth 2 over max_depth 1.
        Turn::tool_call("subagent", json!({"description": "deeper", "prompt": "x"})),
        Turn::text("could not go deeper"),
        Turn::tool_call("subagent", json!({"description": "again", "prompt": "y"})),
        Turn::text("done"),
    ]);
    env.write(
        ".dsh/config.toml",
        "[subagents]\nmax_depth = 1\nmax_total = 1\n",
    );
    let out = env.run(dsh(), &["--json", "limits"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let nested = events
        .iter()
        .find(|e| e["type"] == "agent" && e["event"]["type"] == "tool_result")
        .unwrap();
    assert!(
        nested["event"]["result"]
            .as_str()
            .unwrap()
            .starts_with("Error: subagent depth 2 exceeds maxDepth 1 (subagents.max_depth)"),
        "{nested}"
    );
    let results = tool_results(&out);
    assert_eq!(results[0]["result"], "could not go deeper");
    assert_eq!(
        results[1]["error"],
        json!({"name": "SubagentError", "code": "SUBAGENT_LIMIT"})
    );
    assert!(
        results[1]["result"]
            .as_str()
            .unwrap()
            .contains("(subagents.max_total = 1)"),
        "{}",
        results[1]["result"]
    );
}

#[test]
fn a_child_over_its_token_budget_is_a_failed_call_with_what_it_said() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "costly", "prompt": "Work hard."}),
        )
        .usage(1, 1, 0),
        Turn::tool_call("read", json!({"file_path": "a.txt"}))
            .with_text("reading first")
            .usage(900, 200, 0),
        Turn::text("the child ran out").usage(1, 1, 0),
    ]);
    env.write("a.txt", "alpha\n");
    env.write(".dsh/config.toml", "[subagents]\nmax_tokens = 1000\n");
    let out = env.run(dsh(), &["--json", "budget"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = tool_results(&out);
    assert_eq!(results[0]["status"], "error");
    assert_eq!(
        results[0]["result"],
        "Error: subagent run hit its token limit before finishing\nDiagnostic: the agent spent \
         its budget of 1000 tokens (subagents.max_tokens) before a final answer\nPartial output \
         before the run ended:\nreading first"
    );
    // Its tokens still count; it made no request past its budget.
    assert_eq!(
        out.events().last().unwrap()["usage"]["inputTokens"],
        902,
        "{}",
        out.stdout
    );
    assert_eq!(env.server.requests().len(), 3);
}

/// SIGTERM while a child waits for the model: both turns end aborted (the child's because its
/// parent stopped), both logs are closed, and the parent's session resumes.
#[test]
fn sigterm_mid_child_stops_both_and_the_parent_resumes() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "slow", "prompt": "Take your time."}),
        ),
        Turn::hang(),
        Turn::text("resumed"),
    ]);
    let child = env
        .command(dsh())
        .args(["--json", "go"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        env.server
            .wait_for_requests(2, std::time::Duration::from_secs(30)),
        "the child's request did not arrive"
    );
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = dsh_testkit::RunOutput::from(child.wait_with_output().unwrap());
    assert_eq!(out.code(), Some(143), "stderr: {}", out.stderr);
    let events = out.events();
    let child_end = events
        .iter()
        .find(|e| {
            e["type"] == "agent"
                && e["event"]["type"] == "status"
                && e["event"]["phase"] == "turn_end"
        })
        .unwrap_or_else(|| panic!("no child turn end in {}", out.stdout));
    assert_eq!(
        child_end["event"]["reason"],
        json!({"kind": "aborted", "reason": {"kind": "parent"}})
    );
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["result"], "Error: subagent run was cancelled");
    assert_eq!(
        events.last().unwrap()["reason"],
        json!({"kind": "aborted", "reason": {"kind": "signal", "signal": "SIGTERM"}})
    );
    // Every log ends with its turn closed.
    for line in env
        .session_logs()
        .lines()
        .filter(|l| l.contains("\"type\":\"turn/end\""))
    {
        assert!(line.contains("aborted"), "{line}");
    }
    assert_eq!(
        env.session_logs()
            .lines()
            .filter(|l| l.contains("\"type\":\"turn/end\""))
            .count(),
        2
    );
    let session = events[0]["sessionId"].as_str().unwrap();
    let out = env.run(dsh(), &["--session-id", session, "go on"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "resumed");
}

/// A child has jobs of its own: the parent's finished job is told to the parent, never to the
/// child, and the child does not wait for it.
#[test]
fn a_child_is_not_told_of_its_parent_s_jobs() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            (
                "bash",
                json!({"command": "true", "description": "quick", "run_in_background": true}),
            ),
            delegate("Say A."),
        ]),
        Turn::text("A"),
        Turn::text("done"),
        Turn::text("done"),
    ]);
    let out = env.run(dsh(), &["--json", "job then child"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(tool_results(&out)[1]["result"], "A");
    let requests = env.server.requests();
    let told = |r: &dsh_testkit::Request| r.body.to_string().contains("background job bash-1");
    let (child, parent): (Vec<_>, Vec<_>) = requests
        .iter()
        .skip(1)
        .partition(|r| r.messages()[1]["content"] == "Say A.");
    assert!(!child.iter().any(|r| told(r)), "the child was told");
    assert!(parent.iter().any(|r| told(r)), "the parent was not told");
}

/// A background child: the call returns its id at once, the parent answers, the run waits for
/// the child and wakes the parent with its closing message; its tokens count.
#[test]
fn a_background_child_is_collected_when_it_finishes() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "side task", "prompt": "Say LATE.", "run_in_background": true}),
        )
        .usage(1, 1, 0),
        // The parent and the child ask at once; the answers are held back a little so that the
        // parent's turn has ended before the child's does (its notice then wakes the parent).
        Turn::text("ONE").usage(10, 1, 0).delayed(SETTLE),
        Turn::text("TWO").usage(100, 1, 0).delayed(SETTLE),
        Turn::text("collected").usage(1000, 1, 0),
    ]);
    let out = env.run(dsh(), &["--json", "start it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let results = tool_results(&out);
    assert_eq!(results[0]["result"], "started subagent subagent-1");
    let last = events.last().unwrap();
    assert_eq!(last["text"], "collected");
    // Every request counts: the parent's three and the child's one, in the final usage and
    // in the parent's steps (the wake turn's first step carries the child's).
    assert_eq!(last["usage"]["inputTokens"], 1111);
    let in_steps: u64 = events
        .iter()
        .filter(|e| e["phase"] == "step_end")
        .map(|e| e["usage"]["inputTokens"].as_u64().unwrap())
        .sum();
    assert_eq!(in_steps, 1111);
    // `steps` is the top agent's, over its first turn and the one the child's end woke.
    let top_steps = events.iter().filter(|e| e["phase"] == "step_end").count();
    assert_eq!((top_steps, &last["steps"]), (3, &json!(3)));
    let requests = env.server.requests();
    let notice = requests.last().unwrap().body["messages"].to_string();
    assert!(
        notice.contains(
            "Background subagent subagent-1 finished and will do no further work unless you send it more."
        ),
        "{notice}"
    );
    assert!(notice.contains("Its closing message:"), "{notice}");
    assert!(env.session_logs().contains("\"type\":\"subagent/run\""));
}

/// How long the scripted server holds the answers of requests that race, so that their order
/// does not change what a test sees.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// send_message gives an idle background child a new turn; its end wakes the parent again.
#[test]
fn a_message_gives_an_idle_background_child_another_turn() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "side task", "prompt": "Say LATE.", "run_in_background": true}),
        ),
        Turn::text("A").delayed(SETTLE),
        Turn::text("B").delayed(SETTLE),
        Turn::tool_call(
            "send_message",
            json!({"subagent_id": "subagent-1", "message": "And now say MORE."}),
        ),
        Turn::text("C").delayed(SETTLE),
        Turn::text("D").delayed(SETTLE),
        Turn::text("done"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = tool_results(&out);
    assert_eq!(
        results[1]["result"],
        "message queued as the next turn for subagent subagent-1"
    );
    assert_eq!(out.events().last().unwrap()["text"], "done");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 7);
    // The child's second turn carries the message after its first exchange.
    let said = |messages: &[Value], text: &str| {
        messages.iter().any(|m| m["content"].as_str() == Some(text))
    };
    let child_second = requests
        .iter()
        .map(dsh_testkit::Request::messages)
        .find(|messages| said(messages, "And now say MORE."))
        .unwrap();
    assert!(said(child_second, "Say LATE."), "{child_second:?}");
    let last = requests.last().unwrap().body["messages"].to_string();
    assert_eq!(
        last.matches("Background subagent subagent-1 finished")
            .count(),
        2,
        "{last}"
    );
    assert_eq!(
        env.session_logs()
            .matches("\"type\":\"subagent/run\"")
            .count(),
        2
    );
}

/// A background child outlives its run in its log: once the parent's session is resumed it is
/// listed as idle, a message resumes the child's own session for its next turn, and a new
/// child's id follows the recorded ones.
#[test]
fn a_resumed_parent_can_message_its_background_child() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "side task", "prompt": "Remember PLUM.", "run_in_background": true, "read_only": true}),
        ),
        Turn::text("A").delayed(SETTLE),
        Turn::text("B").delayed(SETTLE),
        Turn::text("first run done"),
    ]);
    let out = env.run(dsh(), &["--json", "start it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let session = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let env2 = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("list_agents", json!({})),
            (
                "send_message",
                json!({"subagent_id": "subagent-1", "message": "What did you remember?"}),
            ),
        ]),
        Turn::text("C").delayed(SETTLE),
        Turn::text("D").delayed(SETTLE),
        Turn::tool_call(
            "subagent",
            json!({"description": "another", "prompt": "Say X.", "run_in_background": true}),
        ),
        Turn::text("E").delayed(SETTLE),
        Turn::text("F").delayed(SETTLE),
        Turn::text("second run done"),
    ]);
    let out = dsh_testkit::RunOutput::of(
        env2.command(dsh())
            .env("DSH_HOME", env.home.path())
            .current_dir(env.ws_path())
            .args(["--json", "--session-id", &session, "ask it"]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = tool_results(&out);
    assert_eq!(results[0]["result"], "subagent-1 [idle] — side task");
    assert_eq!(
        results[1]["result"],
        "message queued as the next turn for subagent subagent-1"
    );
    assert_eq!(results[2]["result"], "started subagent subagent-2");
    assert_eq!(out.events().last().unwrap()["text"], "second run done");
    // The child's turn goes on from its own history, under the sandbox it was given.
    let requests = env2.server.requests();
    let said = |messages: &[Value], text: &str| {
        messages.iter().any(|m| m["content"].as_str() == Some(text))
    };
    let child = requests
        .iter()
        .map(dsh_testkit::Request::messages)
        .find(|messages| said(messages, "What did you remember?"))
        .unwrap();
    assert!(said(child, "Remember PLUM."), "{child:?}");
    let system = child[0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("read-only"), "{system}");
    // Its log goes on in the same file: one header per child, subagent-1's not written again.
    let logs = env.session_logs();
    assert_eq!(logs.matches("\"parentSession\"").count(), 2, "{logs}");
}

/// interrupt_agent stops a background child's turn, even one that has not begun yet; the
/// parent is told it was stopped.
#[test]
fn an_interrupted_background_child_is_reported_stopped() {
    // The child's request may or may not reach the server before the stop: every answer the
    // parent can get says the same.
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            (
                "subagent",
                json!({"description": "side task", "prompt": "Say LATE.", "run_in_background": true}),
            ),
            ("interrupt_agent", json!({"agent_id": "subagent-1"})),
        ]),
        Turn::text("stopped it").delayed(SETTLE),
        Turn::text("stopped it").delayed(SETTLE),
        Turn::text("stopped it"),
    ]);
    let out = env.run(dsh(), &["--json", "start and stop"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = tool_results(&out);
    assert_eq!(
        results[1]["result"],
        "interrupt requested for agent subagent-1"
    );
    assert_eq!(out.events().last().unwrap()["text"], "stopped it");
    let last = env.server.requests().last().unwrap().body["messages"].to_string();
    assert!(
        last.contains("Background subagent subagent-1 was stopped before it finished."),
        "{last}"
    );
    let logs = env.session_logs();
    assert!(
        logs.contains("\"type\":\"subagent/run\"") && logs.contains("\"kind\":\"parent\""),
        "{logs}"
    );
}

#[test]
fn background_children_are_listed_and_unknown_ids_are_refused() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("list_agents", json!({})),
            (
                "send_message",
                json!({"subagent_id": "subagent-9", "message": "more"}),
            ),
            ("interrupt_agent", json!({"agent_id": "subagent-9"})),
        ]),
        Turn::text("none"),
    ]);
    let out = env.run(dsh(), &["--json", "list"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = tool_results(&out);
    assert_eq!(results[0]["result"], "(no subagents)");
    assert_eq!(
        results[1]["result"],
        "Error: subagent \"subagent-9\" is unavailable"
    );
    assert_eq!(
        results[1]["error"],
        json!({"name": "SubagentError", "code": "NOT_AVAILABLE"})
    );
    assert_eq!(
        results[2]["result"],
        "Error: subagent \"subagent-9\" is unavailable"
    );
    // A started one is listed by its id and description, in the same answer that started it.
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            (
                "subagent",
                json!({"description": "side task", "prompt": "x", "run_in_background": true}),
            ),
            ("list_agents", json!({})),
        ]),
        Turn::text("first"),
        Turn::text("second"),
        Turn::text("third"),
    ]);
    let out = env.run(dsh(), &["--json", "list"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let listed = tool_results(&out)[1]["result"].as_str().unwrap().to_owned();
    assert!(listed.starts_with("subagent-1 ["), "{listed}");
    assert!(listed.ends_with("] — side task"), "{listed}");
}

#[test]
fn ralph_runs_fresh_workers_that_hand_on_only_their_report_until_one_completes() {
    let report = |status: &str, next: &[&str]| {
        json!({
            "status": status,
            "summary": format!("Round said {status}."),
            "evidence": ["cargo test ran"],
            "nextSteps": next,
            "blocker": "",
        })
        .to_string()
    };
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "ralph",
            json!({"objective": "Make the tests pass", "maxRounds": 3}),
        ),
        Turn::text(&report("continue", &["fix the lexer"])),
        Turn::text(&report("complete", &[])),
        Turn::text("Done."),
    ]);
    let out = env.run(dsh(), &["--json", "ralph it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    // Each round is a fresh worker: its system prompt and its round's prompt, nothing else.
    let first = requests[1].messages();
    assert_eq!(first.len(), 2, "{first:?}");
    let prompt = first[1]["content"].as_str().unwrap();
    assert!(prompt.contains("Immutable objective:\nMake the tests pass\n\nRalph round: 1 of 3."));
    assert!(prompt.contains("Previous structured handoff:\n(none — this is the first round)"));
    let second = requests[2].messages()[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(second.contains("Ralph round: 2 of 3."));
    assert!(
        second.contains(&format!(
            "Previous structured handoff:\n{}",
            report("continue", &["fix the lexer"])
        )),
        "{second}"
    );
    let results = requests[3].tool_results();
    assert_eq!(
        results,
        [
            "Ralph worker reported completion after 2 rounds.\nFinal report:\n{\n  \"status\": \
             \"complete\",\n  \"summary\": \"Round said complete.\",\n  \"evidence\": [\n    \
             \"cargo test ran\"\n  ],\n  \"nextSteps\": [],\n  \"blocker\": \"\"\n}"
        ]
    );
    // What the workers billed is the run's; each round is a subagent run in the log.
    let last = out.events().last().cloned().unwrap();
    assert_eq!(last["usage"]["inputTokens"], 400);
    let logs = env.session_logs();
    assert_eq!(logs.matches("\"type\":\"subagent/run\"").count(), 2);
}

#[test]
fn a_ralph_worker_without_a_report_ends_the_loop_with_the_last_handoff() {
    let env = TestEnv::new(vec![
        Turn::tool_call("ralph", json!({"objective": "Ship it", "maxRounds": 2})),
        // Round 1 never answers with a report: its answer and both corrections are prose.
        Turn::text("I worked on it."),
        Turn::text("Still prose."),
        Turn::text("Prose again."),
        Turn::text("The loop failed."),
    ]);
    let out = env.run(dsh(), &["--json", "ralph it"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["status"], "error");
    assert_eq!(
        result["result"],
        "Error: Ralph round 1 child failed before producing a structured report.\nNo previous \
         handoff was available."
    );
    let env = TestEnv::new(vec![
        Turn::tool_call("ralph", json!({"objective": "Ship it", "maxRounds": 65})),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["--json", "ralph it"]);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(
        result["result"],
        "Error: Ralph maxRounds 65 exceeds the deployment ceiling 64"
    );
}

#[test]
fn a_workflow_script_runs_its_agents_as_subagents_and_returns_json() {
    let script = r#"
        phase("Ask");
        const a = await agent("Say A");
        const b = await agent("Give JSON", {schema: {type: "object", properties: {n: {type: "number"}}, required: ["n"]}});
        return {a, b};
    "#;
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "workflow",
            json!({"script": script, "meta": {"name": "demo", "description": "Two agents."}}),
        ),
        Turn::text("A"),
        Turn::text("{\"n\": 7}"),
        Turn::text("Done."),
    ]);
    let out = env.run(dsh(), &["--json", "run the workflow"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    // Each agent is a fresh subagent with the script's prompt.
    assert_eq!(requests[1].messages()[1]["content"], "Say A");
    assert_eq!(
        requests[3].tool_results(),
        [
            "workflow \"demo\" completed (2 agents).\nReturn value:\n{\n  \"a\": \"A\",\n  \"b\": {\n    \"n\": 7\n  }\n}"
        ]
    );
    let last = out.events().last().cloned().unwrap();
    assert_eq!(last["usage"]["inputTokens"], 400);
    let logs = env.session_logs();
    assert_eq!(logs.matches("\"type\":\"subagent/run\"").count(), 2);
    // The agents' events reach the stream tagged as subagents'.
    assert!(out.events().iter().any(|e| e["type"] == "agent"));
}

#[test]
fn a_workflow_with_bad_meta_or_a_runtime_error_says_what_is_wrong() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            (
                "workflow",
                json!({"script": "return 1;", "meta": {"name": "x", "description": "", "colour": 1}}),
            ),
            (
                "workflow",
                json!({"script": "throw new Error('boom');", "meta": {"name": "x", "description": "d"}}),
            ),
        ]),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results: Vec<Value> = out
        .events()
        .into_iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(
        results[0]["result"],
        "Error: invalid meta: meta.colour is not a recognized field \
         (name/description/whenToUse/phases); meta.description must be a non-empty string"
    );
    assert_eq!(results[0]["error"]["code"], "META_INVALID");
    let failed = results[1]["result"].as_str().unwrap();
    assert!(
        failed.starts_with("Error: workflow run failed: Error: boom\n    at "),
        "{failed}"
    );
}

#[test]
fn dsh_workflow_runs_a_saved_workflow_without_the_model() {
    let env = TestEnv::new(vec![Turn::text("hello")]);
    env.write(
        ".dsh/workflows/greet.js",
        "// Ask one agent to say a word, and return what it said.\n\
         const said = await agent(\"Say \" + args.word);\nreturn {said};\n",
    );
    let out = env.run(dsh(), &["workflow", "list"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stdout
            .starts_with("greet  Ask one agent to say a word, and return what it said.\n"),
        "{}",
        out.stdout
    );
    let out = env.run(
        dsh(),
        &["workflow", "greet", "--json", "--args", r#"{"word": "hi"}"#],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The only request is the workflow's agent's: no model turn around it.
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages()[1]["content"], "Say hi");
    let last = out.events().last().cloned().unwrap();
    assert_eq!(
        last["text"],
        "workflow \"greet\" completed (1 agent).\nReturn value:\n{\n  \"said\": \"hello\"\n}"
    );
    assert_eq!(last["reason"]["kind"], "completed");
    assert_eq!(last["usage"]["inputTokens"], 100);
    let log = env.session_logs();
    assert!(
        log.contains(r#"/workflow greet {\"word\":\"hi\"}"#),
        "{log}"
    );

    let out = env.run(dsh(), &["workflow", "nope"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("no saved workflow \"nope\""),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.requests().len(), 1);
}

#[test]
fn a_workflow_is_bounded_by_the_workflows_settings() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "workflow",
            json!({
                "script": "await agent('one'); await agent('two'); return 1;",
                "meta": {"name": "capped", "description": "Two agents, one allowed."}
            }),
        ),
        Turn::text("first"),
        Turn::text("ok"),
    ]);
    env.write(".dsh/config.toml", "[workflows]\nmax_agents = 1\n");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = out
        .events()
        .into_iter()
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    let text = result["result"].as_str().unwrap();
    assert!(
        text.starts_with(
            "Error: workflow run failed: WorkflowError: this run reached its total agent cap (1)"
        ),
        "{text}"
    );
    let shown = env.run(dsh(), &["--dump-config"]).stdout;
    assert!(shown.contains("workflows.max_agents = 1"), "{shown}");
}
