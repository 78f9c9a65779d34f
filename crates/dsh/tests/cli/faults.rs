//! Provider faults: each outage is retried and the run ends with the same answer, other
//! failures end the run with their code, and the usage reported is the sum of what the server
//! reported for every attempt (a request it reported nothing for is counted as unreported).

use std::time::Duration;

use dsh_testkit::{Answer, Fault, RunOutput, TestEnv, Turn};
use serde_json::Value;

use crate::dsh;

/// Fast retries and a short silence limit, so the faults play out in milliseconds.
const FAST: &str = "[requests]\nretry_base_ms = 1\nretry_max_ms = 5\nretry_after_max_ms = 20\nidle_timeout_ms = 300\n";

fn run(turns: Vec<Turn>) -> (TestEnv, RunOutput) {
    let env = TestEnv::new(turns);
    env.write("fast.toml", FAST);
    let out = env.run(dsh(), &["--json", "--patch", "fast.toml", "go"]);
    (env, out)
}

fn final_usage(out: &RunOutput) -> Value {
    out.events().last().unwrap()["usage"].clone()
}

/// A fault, then an answer the server reports 100 + 10 tokens for.
fn survives(name: &str, fault: Turn, unreported: u64, extra_tokens: u64) {
    let (env, out) = run(vec![fault, Turn::text("same answer")]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(events.last().unwrap()["text"], "same answer");
    assert_eq!(env.server.requests().len(), 2);
    assert!(
        out.stderr.contains("dsh: retrying (attempt 2 of 6) in "),
        "{}",
        out.stderr
    );
    let usage = final_usage(&out);
    assert_eq!(usage["totalTokens"], 110 + extra_tokens, "{usage}");
    assert_eq!(
        usage["unreportedCalls"].as_u64().unwrap_or(0),
        unreported,
        "{usage}"
    );
    // step_end carries the same sum.
    let step_end = events
        .iter()
        .find(|e| e["phase"] == "step_end")
        .unwrap()
        .clone();
    assert_eq!(step_end["usage"], usage);
    dsh_testkit::fault_matrix(
        "provider fault",
        name,
        "survived: retried, the same answer, every attempt's tokens counted",
    );
}

#[test]
fn rate_limits_and_server_errors_are_retried_honouring_retry_after() {
    survives(
        "429 with retry-after",
        Turn::status_with(429, "slow down", &[("retry-after", "1")]),
        0,
        0,
    );
    survives("500", Turn::status(500, "internal error"), 0, 0);
    survives("503", Turn::status(503, "overloaded"), 0, 0);
}

#[test]
fn broken_streams_are_retried_and_their_usage_kept() {
    // Cut before any usage: the attempt is counted as one whose tokens nobody reported.
    survives(
        "connection reset mid-stream",
        Turn::Fault(Fault::ResetMidStream("partial".into())),
        1,
        0,
    );
    survives("empty stream", Turn::Fault(Fault::Empty), 1, 0);
    // Closed after the server reported 300 + 20 tokens: those are kept.
    survives(
        "stream closed before its end",
        Turn::Fault(Fault::ClosedBeforeDone(Answer {
            text: "an answer that never ends".into(),
            usage: Some((300, 20, 0)),
            ..Answer::default()
        })),
        0,
        320,
    );
}

#[test]
fn a_server_slower_than_the_idle_limit_is_retried() {
    survives(
        "first byte after the idle limit",
        Turn::text("too late").delayed(Duration::from_millis(1500)),
        1,
        0,
    );
}

#[test]
fn a_usage_less_answer_counts_as_unreported_not_zero() {
    let (_env, out) = run(vec![Turn::text("ok").without_usage()]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let usage = final_usage(&out);
    assert_eq!(usage["unreportedCalls"], 1, "{usage}");
    assert_eq!(usage["totalTokens"], 0, "{usage}");
    dsh_testkit::fault_matrix(
        "provider fault",
        "answer without usage",
        "survived: counted as an unreported call, not as zero tokens",
    );
}

#[test]
fn a_malformed_event_is_not_retried_and_ends_with_its_code() {
    let (env, out) = run(vec![
        Turn::Fault(Fault::MalformedEvent),
        Turn::text("never"),
    ]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(env.server.requests().len(), 1);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("dsh: MALFORMED_RESPONSE: ")),
        "{}",
        out.stderr
    );
    dsh_testkit::fault_matrix(
        "provider fault",
        "malformed event",
        "reported: MALFORMED_RESPONSE, not retried",
    );
}

#[test]
fn outages_end_the_run_after_five_retries_with_every_attempt_counted() {
    let mut turns: Vec<Turn> = (0..6)
        .map(|_| {
            Turn::Fault(Fault::ClosedBeforeDone(Answer {
                text: "x".into(),
                usage: Some((50, 5, 0)),
                ..Answer::default()
            }))
        })
        .collect();
    turns.push(Turn::text("never"));
    let (env, out) = run(turns);
    assert_eq!(out.code(), Some(1));
    assert_eq!(env.server.requests().len(), 6);
    assert!(
        out.stderr
            .lines()
            .any(|l| l.starts_with("dsh: STREAM_CLOSED: ")),
        "{}",
        out.stderr
    );
    assert_eq!(final_usage(&out)["totalTokens"], 6 * 55);
    dsh_testkit::fault_matrix(
        "provider fault",
        "outage on every attempt",
        "reported: STREAM_CLOSED after 6 attempts, all their tokens counted",
    );
}

#[test]
fn a_refused_key_is_not_retried() {
    let (env, out) = run(vec![
        Turn::status(401, "invalid api key"),
        Turn::text("never"),
    ]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(env.server.requests().len(), 1);
    assert!(!out.stderr.contains("retrying"), "{}", out.stderr);
    dsh_testkit::fault_matrix("provider fault", "401", "reported: AUTH, not retried");
}

/// Never hang: a provider that starts an answer and then goes silent, every time, ends the
/// run with its code once the retries are spent (each attempt bounded by the idle limit).
#[test]
fn a_stream_that_stalls_every_time_ends_the_run() {
    let turns: Vec<Turn> = (0..6).map(|_| Turn::hang_mid_stream("half an")).collect();
    let (env, out) = run(turns);
    assert_eq!(out.code(), Some(1), "stderr: {}", out.stderr);
    assert_eq!(env.server.requests().len(), 6);
    let last = out.events().last().unwrap().clone();
    assert_eq!(last["type"], "final");
    assert_eq!(last["reason"]["kind"], "error");
    assert_eq!(last["reason"]["error"]["code"], "TIMEOUT", "{last}");
    // The failure names the setting that bounds the wait.
    let message = last["reason"]["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with(
            "sent nothing for 0.3 s (requests.idle_timeout_ms sets the limit: raise it for a \
             server that thinks that long)"
        ),
        "{message}"
    );
    dsh_testkit::fault_matrix(
        "provider fault",
        "stream stalls on every attempt",
        "reported: TIMEOUT after 6 attempts, never hangs",
    );
}

/// A provider that takes the request and never starts its answer is bounded by the same
/// limit, and the failure names it.
#[test]
fn a_provider_that_never_answers_names_the_limit() {
    let turns: Vec<Turn> = (0..6).map(|_| Turn::hang()).collect();
    let (_env, out) = run(turns);
    assert_eq!(out.code(), Some(1), "stderr: {}", out.stderr);
    let last = out.events().last().unwrap().clone();
    assert_eq!(last["reason"]["error"]["code"], "TIMEOUT", "{last}");
    let message = last["reason"]["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with(
            "did not start answering within 0.3 s (requests.idle_timeout_ms sets the limit: \
             raise it for a server that thinks that long)"
        ),
        "{message}"
    );
}

/// Never hang: with no one to ask, an escalation under the approval policy `ask` is refused
/// at once with a result that says so, and the run goes on.
#[test]
fn an_escalation_with_no_one_to_ask_is_refused_at_once() {
    let (env, out) = run(vec![
        Turn::tool_call(
            "bash",
            serde_json::json!({
                "command": "echo wider",
                "description": "d",
                "sandbox_permissions": "danger-full-access",
                "justification": "needs it",
            }),
        ),
        Turn::text("understood"),
    ]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = env.server.requests()[1].tool_results();
    assert!(
        results[0].contains(
            "sandbox escalation to \"danger-full-access\" requires approval, but no approval \
             channel is available"
        ),
        "{results:?}"
    );
}
