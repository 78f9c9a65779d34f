use std::process::Stdio;
use std::time::Duration;

use dsh_testkit::{RunOutput, TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::dsh;

/// Starts a run whose model never answers, signals it once the request is on the wire, and
/// returns what it printed.
fn stopped_by(signal: i32) -> (TestEnv, RunOutput) {
    let env = TestEnv::new(vec![Turn::hang()]);
    let child = env
        .command(dsh())
        .args(["--json", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        env.server.wait_for_requests(1, Duration::from_secs(30)),
        "no request arrived"
    );
    // SAFETY: kill(2) on our own child's pid.
    let sent = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(sent, 0);
    let out = RunOutput::from(child.wait_with_output().unwrap());
    (env, out)
}

#[test]
fn sigterm_stops_the_run_with_a_final_event_and_status_143() {
    let (env, out) = stopped_by(libc::SIGTERM);
    assert_eq!(out.code(), Some(143), "stderr: {}", out.stderr);
    let events = out.events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(
        last["reason"],
        json!({"kind": "aborted", "reason": {"kind": "signal", "signal": "SIGTERM"}})
    );
    // The request that was cut off is counted, as one whose tokens are unknown.
    assert_eq!(last["usage"]["unreportedCalls"], 1);
    // The log is complete: the turn is closed.
    let log = env.session_log();
    assert!(
        log.lines()
            .last()
            .unwrap()
            .contains("\"type\":\"turn/end\"")
    );
}

#[test]
fn sigint_stops_the_run_with_status_130() {
    let (_env, out) = stopped_by(libc::SIGINT);
    assert_eq!(out.code(), Some(130), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(
        events.last().unwrap()["reason"]["reason"]["signal"],
        "SIGINT"
    );
}
