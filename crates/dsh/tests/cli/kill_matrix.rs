//! The kill matrix: a run is killed outright (SIGKILL) right after its log's 1st, 2nd, ...
//! record, through every record of a three-step turn with parallel tool calls and a background
//! job;
//! after each kill, `--session-id` resumes the session, and no record that was written whole
//! is lost, changed or written twice.

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};

use dsh_testkit::{ScriptedServer, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// The turn every run of the matrix plays: two reads and a background job in one step, a
/// command in the next, then the answer.
fn script() -> Vec<Turn> {
    vec![
        Turn::tool_calls(&[
            ("read", json!({"file_path": "a.txt"})),
            ("read", json!({"file_path": "b.txt"})),
            (
                "bash",
                json!({"command": "sleep 30", "description": "wait", "run_in_background": true}),
            ),
        ]),
        Turn::tool_call(
            "bash",
            json!({"command": "echo step-two", "description": "print"}),
        ),
        Turn::text("all done"),
    ]
}

fn prepared(env: &TestEnv) {
    env.write("a.txt", "first\n");
    env.write("b.txt", "second\n");
    // The answer does not wait for the job: the run ends, and stops it, at once.
    env.write(".dsh/config.toml", "[jobs]\nwait_ms = 1\n");
}

/// The one session log under the test's home, once there is one.
fn log_path(home: &Path) -> Option<PathBuf> {
    let project = std::fs::read_dir(home.join("sessions"))
        .ok()?
        .next()?
        .ok()?;
    let session = std::fs::read_dir(project.path()).ok()?.next()?.ok()?;
    Some(session.path().join("session.jsonl"))
}

/// The whole lines of a log (a torn last line left out).
fn whole_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.last().is_some_and(|line| !line.ends_with('\n')) {
        lines.pop();
    }
    lines
}

/// How many records a full run writes (the header line aside).
fn records_of_a_full_run() -> usize {
    let env = TestEnv::new(script());
    prepared(&env);
    let out = env.run(dsh(), &["--json", "do the work"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    whole_lines(&env.session_log()).len() - 1
}

/// Runs the turn in a dsh that kills itself (SIGKILL) the moment its log's `records`th record
/// is written (`DSH_TEST_DIE_AFTER_RECORDS`, debug builds only): a kill exactly on that
/// record boundary. Returns the log as the kill left it.
fn killed_after(env: &TestEnv, records: usize) -> String {
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env("DSH_TEST_DIE_AFTER_RECORDS", records.to_string())
            .args(["--json", "do the work"]),
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGKILL),
        "dsh was not killed at record {records}: {}",
        out.stderr
    );
    let path = log_path(env.home.path()).unwrap();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_run_killed_at_any_record_resumes_with_nothing_lost_or_doubled() {
    let total = records_of_a_full_run();
    assert!(total >= 15, "the turn writes {total} records");
    for records in 1..=total {
        let env = TestEnv::new(script());
        prepared(&env);
        let before = killed_after(&env, records);
        // The kill came exactly after that record.
        assert_eq!(whole_lines(&before).len() - 1, records);
        let header: Value = serde_json::from_str(before.lines().next().unwrap()).unwrap();
        let id = header["id"].as_str().unwrap().to_owned();

        // Resumed against a model that answers at once.
        let model = ScriptedServer::start(vec![Turn::text("resumed"), Turn::text("again")]);
        let out = dsh_testkit::RunOutput::of(
            env.command(dsh())
                .env("DEEPSEEK_BASE_URL", model.base_url())
                .args(["--json", "--session-id", &id, "go on"]),
        );
        assert_eq!(
            out.code(),
            Some(0),
            "killed after {records}: {}",
            out.stderr
        );

        let after = env.session_log();
        // Every line written whole before the kill is still there, byte for byte, in order.
        let kept = whole_lines(&before);
        let now = whole_lines(&after);
        assert!(
            now.len() > kept.len(),
            "killed after {records}: nothing was added"
        );
        assert_eq!(&now[..kept.len()], &kept[..], "killed after {records}");
        // No record twice: the sequence numbers run 1, 2, 3 ... with no gap or repeat, and
        // each call has one result.
        let parsed: Vec<Value> = now[1..]
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        for (i, record) in parsed.iter().enumerate() {
            assert_eq!(
                record["seq"],
                json!(i + 1),
                "killed after {records}: {record}"
            );
        }
        let mut results: Vec<&str> = parsed
            .iter()
            .filter(|r| r["type"] == "tool/result")
            .filter_map(|r| r["data"]["message"]["content"][0]["toolCallId"].as_str())
            .collect();
        let count = results.len();
        results.sort_unstable();
        results.dedup();
        assert_eq!(
            results.len(),
            count,
            "killed after {records}: a call answered twice"
        );
        // ... and every call the model asked for has one: the ones the kill cut off are
        // answered by the resume.
        let mut asked: Vec<&str> = parsed
            .iter()
            .filter(|r| r["type"] == "assistant/message")
            .flat_map(|r| r["data"]["message"]["content"].as_array().unwrap().iter())
            .filter(|block| block["type"] == "tool-call")
            .filter_map(|block| block["id"].as_str())
            .collect();
        asked.sort_unstable();
        assert_eq!(
            results, asked,
            "killed after {records}: a call left unanswered"
        );
        // The resumed turn answered, and every turn the log opened was closed.
        assert!(
            out.stdout.contains("\"resumed\""),
            "killed after {records}: {}",
            out.stdout
        );
        let opened = parsed.iter().filter(|r| r["type"] == "turn/start").count();
        let closed = parsed.iter().filter(|r| r["type"] == "turn/end").count();
        assert_eq!(opened, closed, "killed after {records}");
        // The session resumes again from there.
        let again = dsh_testkit::RunOutput::of(
            env.command(dsh())
                .env("DEEPSEEK_BASE_URL", model.base_url())
                .args(["--session-id", &id, "and again"]),
        );
        assert_eq!(
            again.code(),
            Some(0),
            "killed after {records}: {}",
            again.stderr
        );
        dsh_testkit::fault_matrix(
            "kill point",
            "SIGKILL right after each record of a 3-step turn (parallel calls, a \
             background job)",
            "survived: resumed; records lost 0, doubled 0, calls unanswered 0",
        );
    }
}
