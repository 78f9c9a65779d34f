//! The run's caps: `--max-turns`, `--max-budget-usd` and `--timeout` each end the run cleanly,
//! with its own `final` reason, a closed log and its own exit status.

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn read_call() -> Turn {
    Turn::tool_call("read", json!({"file_path": "a.txt"}))
}

fn final_reason(events: &[Value]) -> Value {
    let last = events.last().expect("events");
    assert_eq!(
        last["type"], "final",
        "the stream ends with final: {events:?}"
    );
    last["reason"].clone()
}

/// The log's last record: the run closed its turn.
fn last_record(env: &TestEnv) -> Value {
    let log = env.session_log();
    serde_json::from_str(log.lines().last().unwrap()).unwrap()
}

#[test]
fn max_turns_stops_before_the_request_it_does_not_allow() {
    let env = TestEnv::new(vec![
        read_call(),
        read_call(),
        read_call(),
        Turn::text("never"),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(dsh(), &["--json", "--max-turns", "2", "go"]);
    assert_eq!(out.code(), Some(3), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests().len(), 2);
    let reason = final_reason(&out.events());
    assert_eq!(reason["kind"], "max-turns");
    assert!(
        reason["message"]
            .as_str()
            .unwrap()
            .contains("2 model requests --max-turns allows"),
        "{reason}"
    );
    assert!(out.stderr.contains("dsh: MAX_TURNS: "), "{}", out.stderr);
    let last = last_record(&env);
    assert_eq!(last["type"], "turn/end");
    assert_eq!(last["data"]["reason"]["kind"], "max-turns");
}

#[test]
fn max_budget_counts_at_the_declared_prices_and_needs_them() {
    let env = TestEnv::new(vec![read_call(), read_call(), Turn::text("never")]);
    env.write("a.txt", "alpha\n");
    // $1 per input token: the first request (100 prompt tokens) costs $100.
    env.write(
        "prices.toml",
        "[models.\"deepseek-v4-flash\".prices]\ninput = 1000000.0\noutput = 0.0\n",
    );
    let out = env.run(
        dsh(),
        &[
            "--json",
            "--patch",
            "prices.toml",
            "--max-budget-usd",
            "50",
            "go",
        ],
    );
    assert_eq!(out.code(), Some(4), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests().len(), 1);
    let reason = final_reason(&out.events());
    assert_eq!(reason["kind"], "max-budget");
    assert!(
        reason["message"].as_str().unwrap().starts_with(
            "the run spent $100.0000, which is more than the $50.00 --max-budget-usd allows"
        ),
        "{reason}"
    );
    assert_eq!(last_record(&env)["data"]["reason"]["kind"], "max-budget");

    // Without prices there is nothing to count with: refused before anything is sent.
    let env = TestEnv::new(vec![Turn::text("never")]);
    let out = env.run(
        dsh(),
        &[
            "--json",
            "--model",
            "deepseek-unpriced",
            "--max-budget-usd",
            "1",
            "go",
        ],
    );
    assert_eq!(out.code(), Some(1));
    assert!(out.stderr.contains("has none declared"), "{}", out.stderr);
    assert!(env.server.requests().is_empty());
    assert_eq!(out.events().last().unwrap()["type"], "error");
}

#[test]
fn timeout_stops_a_run_that_waits_on_the_model() {
    let env = TestEnv::new(vec![Turn::hang()]);
    // Long enough for set-up on a loaded machine; the model never answers anyway.
    let out = env.run(dsh(), &["--json", "--timeout", "2s", "go"]);
    assert_eq!(out.code(), Some(5), "stderr: {}", out.stderr);
    let reason = final_reason(&out.events());
    assert_eq!(reason["kind"], "timeout");
    assert_eq!(
        reason["message"],
        "the run's --timeout of 2s ran out before a final answer"
    );
    assert!(out.stderr.contains("dsh: RUN_TIMEOUT: "), "{}", out.stderr);
    assert_eq!(last_record(&env)["data"]["reason"]["kind"], "timeout");
}
