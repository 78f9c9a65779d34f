//! Auto review (`--permission-mode auto`): a scripted reviewer allows, denies, answers
//! garbage, times out or is cut off, and the call runs only when it allowed it. The reviewer's
//! requests come from the same scripted server, in order, between the agent's.

use dsh_testkit::{Fault, ScriptedServer, TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

fn verdict(decision: &str, reason: &str) -> Turn {
    Turn::text(&json!({"decision": decision, "reason": reason}).to_string())
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect()
}

fn reviews(log: &str) -> Vec<Value> {
    log.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["type"] == "review/decision")
        .map(|record| record["data"].clone())
        .collect()
}

/// The requests that offered no tools: the reviewer's.
fn reviewer_requests(server: &ScriptedServer) -> Vec<String> {
    (server.requests().iter())
        .filter(|r| r.tool_names().is_empty())
        .map(|r| r.body.to_string())
        .collect()
}

#[test]
fn an_allowed_call_runs_a_denied_one_does_not_and_reads_are_not_reviewed() {
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().join("outside.txt");
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("read", json!({"file_path": "notes.txt"})),
            (
                "bash",
                json!({"command": "echo built > made.txt", "description": "d"}),
            ),
        ]),
        verdict("allow", "writes a build marker in the project").usage(50, 7, 0),
        Turn::tool_call(
            "write",
            json!({"file_path": outside.to_str().unwrap(), "content": "owned"}),
        ),
        verdict(
            "deny",
            "writes outside the project; keep changes in the workspace",
        )
        .usage(60, 9, 0),
        Turn::text("I kept to the workspace."),
    ]);
    env.write("notes.txt", "build it\n");
    let out = env.run(
        dsh(),
        &["--json", "--permission-mode", "auto", "build the project"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("made.txt")).unwrap(),
        "built\n"
    );
    assert!(!outside.exists(), "the denied write ran");

    let events = out.events();
    let results = results(&events);
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0]["status"], "completed",
        "the read: {}",
        results[0]
    );
    assert_eq!(
        results[1]["status"], "completed",
        "the command: {}",
        results[1]
    );
    let denied = results[2];
    assert_eq!(denied["status"], "error");
    assert_eq!(
        denied["error"],
        json!({
            "name": "AutoReviewDeniedError",
            "code": "AUTO_REVIEW_DENIED",
            "reason": "writes outside the project; keep changes in the workspace"
        })
    );
    assert_eq!(
        denied["result"],
        "Error: auto review denied this call, so it did not run: writes outside the project; \
         keep changes in the workspace. Change the approach; the same call will be denied again"
    );

    // Two reviews, none for the read; each saw the task and its call, and no tools.
    let asked = reviewer_requests(&env.server);
    assert_eq!(asked.len(), 2, "{asked:#?}");
    assert!(asked[0].contains(r#"<task written_by=\"the user\">\n\"build the project\"\n</task>"#));
    assert!(asked[0].contains("<call tool=\\\"bash\\\">"));
    assert!(asked[0].contains("echo built > made.txt"));
    assert!(asked[1].contains("<call tool=\\\"write\\\">"));
    // The model read the denial in its next request.
    let last = env.server.requests().pop().unwrap();
    assert!(last.tool_results()[2].contains("auto review denied this call"));

    // The log keeps each review with what it billed, and the steps' usage includes it.
    let log = env.session_log();
    let reviews = reviews(&log);
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[0]["decision"], "allowed");
    assert_eq!(reviews[0]["tool"], "bash");
    assert_eq!(reviews[1]["decision"], "denied");
    assert_eq!(reviews[1]["usage"]["totalTokens"], 69);
    let steps: Vec<u64> = (events.iter())
        .filter(|e| e["type"] == "status" && e["phase"] == "step_end")
        .map(|e| e["usage"]["totalTokens"].as_u64().unwrap())
        .collect();
    // Each agent request bills 110 by default; the reviews 57 and 69 on top.
    assert_eq!(steps, [110 + 57, 110 + 69, 110]);

    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    let shown = env.run(dsh(), &["sessions", "show", &id]);
    assert!(
        shown
            .stdout
            .contains("auto review: 2 calls reviewed (1 allowed, 1 denied, 0 failed), 126 tokens"),
        "{}",
        shown.stdout
    );
}

/// The call of a run whose reviewer answered with `reviewer`, under extra `config`.
fn failed_review(reviewer: Turn, config: &str) -> (TestEnv, Value) {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo ran > ran.txt", "description": "d"}),
        ),
        reviewer,
        Turn::text("ok"),
    ]);
    env.write("review.toml", config);
    let out = env.run(
        dsh(),
        &[
            "--json",
            "--permission-mode",
            "auto",
            "--patch",
            "review.toml",
            "go",
        ],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(!env.ws.path().join("ran.txt").exists(), "the call ran");
    let error = results(&out.events())[0]["error"].clone();
    assert_eq!(error["code"], "AUTO_REVIEW_FAILED", "{error}");
    assert_eq!(error["name"], "AutoReviewFailedError");
    (env, error)
}

#[test]
fn a_reviewer_that_answers_garbage_fails_the_review() {
    let (env, error) = failed_review(Turn::text("Looks fine to me, go ahead."), "");
    assert_eq!(
        error["reason"],
        "the reviewer did not answer with a decision ({\"decision\": \"allow\" or \"deny\", \
         \"reason\": ...}); it said: Looks fine to me, go ahead."
    );
    assert_eq!(reviews(&env.session_log())[0]["decision"], "failed");
}

#[test]
fn a_reviewer_that_does_not_answer_in_time_fails_the_review() {
    let (_, error) = failed_review(Turn::hang(), "[auto_review]\ntimeout_ms = 300\n");
    assert_eq!(
        error["reason"],
        "the reviewer did not answer within 300 ms (auto_review.timeout_ms)"
    );
}

#[test]
fn a_reviewer_whose_stream_is_cut_fails_the_review() {
    let (_, error) = failed_review(
        Turn::Fault(Fault::ResetMidStream("{\"decision\": \"al".into())),
        "[requests]\nretries = 0\n",
    );
    let reason = error["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the reviewer's request failed: "),
        "{reason}"
    );
}

#[test]
fn the_reviewer_can_be_another_model_with_its_own_instructions_and_view() {
    let reviewer = ScriptedServer::start(vec![verdict("allow", "fine")]);
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo ran > ran.txt", "description": "d"}),
        ),
        Turn::text("ok"),
    ]);
    env.write(
        "review.toml",
        &format!(
            "[providers.judge]\nkind = \"openai-completions\"\nbase_url = \"{}/v1\"\n\n\
             [auto_review]\nmodel = \"judge/strict-1\"\nprompt = \"Be strict.\"\n\
             task = false\ntranscript_messages = 0\n",
            reviewer.base_url()
        ),
    );
    let args = [
        "--permission-mode",
        "auto",
        "--patch",
        "review.toml",
        "secret task words",
    ];
    let out = env.run(dsh(), &args);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(env.ws.path().join("ran.txt").exists());
    let asked = reviewer.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].body["model"], "strict-1");
    let body = asked[0].body.to_string();
    assert!(body.contains("Be strict."));
    assert!(
        !body.contains("secret task words"),
        "the task was shown: {body}"
    );
    assert!(!body.contains("<recent_messages>"));
    // The session's server answered only the agent.
    assert_eq!(env.server.requests().len(), 2);

    let mut dump = args.to_vec();
    dump.insert(0, "--dump-config");
    dump.pop();
    let out = env.run(dsh(), &dump);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    for row in [
        "auto_review.model",
        "\"judge/strict-1\"",
        "auto_review.timeout_ms",
        "60000",
        "auto_review.transcript_messages",
        "auto_review.task",
        "auto_review.prompt",
        "\"Be strict.\"",
    ] {
        assert!(
            out.stdout.contains(row),
            "{row} missing from:\n{}",
            out.stdout
        );
    }
    let approval = (out.stdout.lines())
        .find(|line| line.starts_with("approval.policy"))
        .unwrap();
    assert!(approval.contains("ask"), "{approval}");
}

#[test]
fn a_subagents_calls_are_reviewed_too() {
    let env = TestEnv::new(vec![
        // The parent delegates: handing work over is not itself reviewed.
        Turn::tool_call(
            "subagent",
            json!({"description": "clean up", "prompt": "remove the build folder"}),
        ),
        // The child's call, and the reviewer's answer to it.
        Turn::tool_call(
            "bash",
            json!({"command": "rm -rf ~/important", "description": "d"}),
        ),
        verdict("deny", "deletes outside the project"),
        Turn::text("I was not allowed to delete that."),
        Turn::text("The subagent could not do it."),
    ]);
    let out = env.run(dsh(), &["--json", "--permission-mode", "auto", "clean up"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let logs = env.session_logs();
    let reviews = reviews(&logs);
    assert_eq!(reviews.len(), 1, "{logs}");
    assert_eq!(reviews[0]["tool"], "bash");
    assert_eq!(reviews[0]["decision"], "denied");
    assert!(logs.contains("AUTO_REVIEW_DENIED"));
    // The child's reviewer is told its task came from another agent, not from the user.
    let asked = reviewer_requests(&env.server);
    assert!(
        asked[0].contains("task written_by=\\\"another agent, which started this one"),
        "{}",
        asked[0]
    );
}
