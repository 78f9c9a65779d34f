//! Goals: the model sets one in the human's turn, the run goes on in automatic rounds until
//! the model completes it (or it runs out of rounds), and a resumed session keeps it, waiting.

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

fn goal_events(events: &[Value]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter(|e| e["type"] == "goal")
        .map(|e| {
            (
                e["operation"].as_str().unwrap().to_owned(),
                e["goal"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_goal_runs_rounds_in_the_same_run_until_the_model_completes_it() {
    let env = TestEnv::new(vec![
        // The human's turn: the model sets the goal and answers.
        Turn::tool_call(
            "create_goal",
            json!({"objective": "Make the tests pass", "max_goal_rounds": 3}),
        ),
        Turn::text("I set the goal."),
        // Round 1: not done yet; it may not report the goal blocked so early.
        Turn::tool_call("get_goal", json!({})),
        Turn::raw_tool_call(
            "update_goal",
            r#"{"goal_id":"{{result:/goal/id}}","revision":1,"action":"blocked","blocked_reason":"flaky"}"#,
        ),
        Turn::text("Half of them pass."),
        // Round 2: done.
        Turn::tool_call("get_goal", json!({})),
        Turn::raw_tool_call(
            "update_goal",
            r#"{"goal_id":"{{result:/goal/id}}","revision":1,"action":"complete"}"#,
        ),
        Turn::text("All tests pass now: see the test run above."),
    ]);
    let out = env.run(
        dsh(),
        &["--json", "fix the tests, keep going until they pass"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let goals = goal_events(&events);
    let operations: Vec<&str> = goals.iter().map(|(op, _)| op.as_str()).collect();
    assert_eq!(operations, ["create", "round", "round", "complete"]);
    assert_eq!(goals[1].1["roundsStarted"], 1);
    assert_eq!(goals[3].1["phase"], "complete");
    assert_eq!(goals[3].1["revision"], 2);

    let requests = env.server.requests();
    assert_eq!(requests.len(), 8, "every scripted answer was asked for");
    // Each round opens with its prompt, as a user message of a turn of its own.
    let opening = |i: usize| {
        let messages = requests[i].messages();
        messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone()
    };
    let round = opening(2).as_str().unwrap_or_default().to_owned();
    assert!(
        round.starts_with("<goal_round>\nObjective: \"Make the tests pass\"\nRound: 1/3\n\n"),
        "{round}"
    );
    assert!(opening(5).as_str().unwrap().contains("Round: 2/3"));
    // The early "blocked" was refused with the reference's code.
    let results = requests[4].tool_results();
    assert_eq!(
        results.last().unwrap(),
        "Error: blocked requires at least 3 consecutive goal rounds; current round is 1"
    );
    // After completing it in a round, the model is asked for its closing message.
    let wrap_up = opening(7).as_str().unwrap().to_owned();
    assert!(wrap_up.starts_with("<goal_complete>\n"), "{wrap_up}");

    // The run's answer is the last round's, its usage every request's.
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["text"], "All tests pass now: see the test run above.");
    assert_eq!(
        last["usage"]["inputTokens"], 800,
        "eight requests of 100 input tokens"
    );
    assert_eq!(last["steps"], 8);
    assert!(env.session_log().contains("\"type\":\"goal/change\""));
}

#[test]
fn a_goal_out_of_rounds_is_blocked_and_a_resumed_one_waits_for_the_human() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "create_goal",
            json!({"objective": "Port the parser", "max_goal_rounds": 1}),
        ),
        Turn::text("Goal set."),
        Turn::text("Round one: some progress."),
        // The resumed run: the goal is there, not armed; the human's turn may resume it.
        Turn::tool_call("get_goal", json!({})),
        Turn::text("It is blocked."),
    ]);
    let out = env.run(dsh(), &["--json", "port the parser"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let goals = goal_events(&out.events());
    let operations: Vec<&str> = goals.iter().map(|(op, _)| op.as_str()).collect();
    assert_eq!(operations, ["create", "round", "block"]);
    assert_eq!(
        goals[2].1["blockedReason"],
        json!({"code": "round-limit", "message": "Goal reached its configured limit of 1 rounds."})
    );
    assert_eq!(env.server.requests().len(), 3);

    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let out = env.run(dsh(), &["--json", "--session-id", &id, "where are we?"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The resumed stream says at once where the goal stands.
    assert_eq!(out.events()[1]["type"], "goal");
    assert_eq!(out.events()[1]["goal"]["phase"], "blocked");
    let read = env.server.requests()[4].tool_results();
    let goal: Value = serde_json::from_str(read.last().unwrap()).unwrap();
    assert_eq!(goal["activation"], "disarmed");
    assert_eq!(goal["goal"]["roundsStarted"], 1);
    let shown = env.run(dsh(), &["sessions", "show", &id]);
    assert!(
        shown
            .stdout
            .contains("[goal blocked: Port the parser (round-limit:"),
        "{}",
        shown.stdout
    );
}

#[test]
fn subagents_get_no_goal_tools_and_the_tool_lists_can_withhold_them() {
    // The top agent has them; the subagent it starts is neither offered them nor may call
    // one (the call it makes anyway is an error it reads).
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "helper", "prompt": "Set yourself a goal."}),
        ),
        Turn::tool_call("create_goal", json!({"objective": "take over the run"})),
        Turn::text("could not"),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["--json", "hi"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert_eq!(requests.len(), 4);
    let offered = requests[0].tool_names();
    for name in ["create_goal", "get_goal", "update_goal"] {
        assert!(offered.iter().any(|t| t == name), "{name} in {offered:?}");
    }
    // Request 1 is the child's first: it is its own conversation, with the prompt.
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("Set yourself a goal."),
        "{:?}",
        requests[1].body
    );
    let child_offered = requests[1].tool_names();
    assert!(!child_offered.is_empty());
    for name in ["create_goal", "get_goal", "update_goal"] {
        assert!(
            !child_offered.iter().any(|t| t == name),
            "{name} offered to the subagent: {child_offered:?}"
        );
    }
    let refused = requests[2].tool_results().pop().unwrap();
    assert!(refused.starts_with("Error: "), "{refused}");
    assert!(refused.contains("create_goal"), "{refused}");
    assert!(
        !env.session_logs().contains("\"type\":\"goal"),
        "no goal was set"
    );
    let env = TestEnv::new(vec![Turn::text("ok")]);
    let out = env.run(
        dsh(),
        &[
            "--json",
            "--disallowed-tools",
            "create_goal,update_goal",
            "hi",
        ],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let offered = env.server.requests()[0].tool_names();
    assert!(offered.iter().any(|t| t == "get_goal"));
    assert!(!offered.iter().any(|t| t == "create_goal"), "{offered:?}");
}
