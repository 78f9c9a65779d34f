//! `--input-format stream-json`: one process, several turns, messages and interrupts as JSON
//! lines on stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use dsh_testkit::{TestEnv, Turn};
use serde_json::Value;

use crate::dsh;

fn user(text: &str) -> String {
    format!(
        "{}\n",
        serde_json::json!({"type": "user", "message": {"role": "user", "content": text}})
    )
}

/// `dsh --json --input-format stream-json` with `extra` arguments: the process, its stdin
/// and its stdout.
fn spawn(env: &TestEnv, extra: &[&str]) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = env
        .command(dsh())
        .args(["--json", "--input-format", "stream-json"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, out)
}

/// Reads events until one of type `kind`; returns all read.
fn read_until(out: &mut BufReader<ChildStdout>, kind: &str) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the stream ended early: {events:?}"
        );
        let event: Value = serde_json::from_str(&line).unwrap();
        dsh_testkit::check_event(&event);
        let done = event["type"] == kind;
        events.push(event);
        if done {
            return events;
        }
    }
}

#[test]
fn one_process_answers_each_message_in_turn() {
    let env = TestEnv::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]);
    let (mut child, mut stdin, mut out) = spawn(&env, &[]);
    stdin.write_all(user("one").as_bytes()).unwrap();
    let first = read_until(&mut out, "final");
    assert_eq!(first[0]["type"], "session");
    assert_eq!(first.last().unwrap()["text"], "first answer");

    stdin.write_all(b"this is not json\n").unwrap();
    let bad = read_until(&mut out, "error");
    assert_eq!(bad.last().unwrap()["code"], "BAD_INPUT");

    stdin.write_all(user("two").as_bytes()).unwrap();
    let second = read_until(&mut out, "final");
    assert_eq!(second.last().unwrap()["text"], "second answer");
    // Each message's final counts its own run.
    assert_eq!(first.last().unwrap()["steps"], 1);
    assert_eq!(second.last().unwrap()["steps"], 1);
    assert_eq!(
        second.last().unwrap()["sessionId"],
        first.last().unwrap()["sessionId"]
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let sent = serde_json::to_string(env.server.requests()[1].messages()).unwrap();
    assert!(
        sent.contains("one") && sent.contains("first answer"),
        "{sent}"
    );
}

#[test]
fn an_interrupt_stops_the_turn_and_the_next_message_goes_on() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("after")]);
    let (mut child, mut stdin, mut out) = spawn(&env, &[]);
    stdin.write_all(user("wait forever").as_bytes()).unwrap();
    assert!(
        env.server
            .wait_for_requests(1, std::time::Duration::from_secs(20))
    );
    stdin.write_all(b"{\"type\":\"interrupt\"}\n").unwrap();
    let first = read_until(&mut out, "final");
    let reason = &first.last().unwrap()["reason"];
    assert_eq!(reason["kind"], "aborted");
    assert_eq!(reason["reason"]["kind"], "user");
    stdin.write_all(user("again").as_bytes()).unwrap();
    let second = read_until(&mut out, "final");
    assert_eq!(second.last().unwrap()["text"], "after");
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn stream_input_needs_the_json_stream_and_no_task_words() {
    let env = TestEnv::new(vec![]);
    let out = env.run(dsh(), &["--input-format", "stream-json"]);
    assert!(out.stderr.contains("add --json"), "{}", out.stderr);
    let out = env.run(dsh(), &["--json", "--input-format", "stream-json", "task"]);
    assert!(out.stderr.contains("give no task words"), "{}", out.stderr);
    let out = env.run(dsh(), &["--input-format", "yaml", "task"]);
    assert!(
        out.stderr.contains("must be text or stream-json"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_timeout_while_waiting_for_a_message_is_said_and_has_its_status() {
    let env = TestEnv::new(vec![Turn::text("answered")]);
    let (mut child, mut stdin, mut out) = spawn(&env, &["--timeout", "1s"]);
    stdin.write_all(user("one").as_bytes()).unwrap();
    read_until(&mut out, "final");
    // stdin stays open: the process waits for a message until its time runs out.
    let error = read_until(&mut out, "error");
    assert_eq!(error.last().unwrap()["code"], "RUN_TIMEOUT");
    assert_eq!(child.wait().unwrap().code(), Some(5));
    drop(stdin);
}
