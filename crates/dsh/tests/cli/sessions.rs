//! Sessions on disk: `--session-id` resume, the lock, the working-directory rule, torn lines,
//! and a run killed with SIGKILL at many points, each resumed with nothing committed lost.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use dsh_testkit::{RunOutput, TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

/// The one session log's path.
fn log_path(env: &TestEnv) -> std::path::PathBuf {
    let sessions = env.home.path().join("sessions");
    let mut found = Vec::new();
    for project in std::fs::read_dir(sessions).unwrap() {
        for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let dir = session.unwrap().path();
            for name in ["session.jsonl", "session.jsonl.zst"] {
                if dir.join(name).is_file() {
                    found.push(dir.join(name));
                }
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

fn session_id(env: &TestEnv) -> String {
    log_path(env)
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The whole records of the log, plain or compressed, as JSON.
fn records(env: &TestEnv) -> Vec<Value> {
    dsh_core::read_log(&log_path(env))
        .unwrap()
        .records
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

#[test]
fn a_resumed_session_sends_its_history_and_continues_its_turns() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]);
    env.write("a.txt", "alpha\n");
    let out = env.run(dsh(), &["first task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = session_id(&env);
    let out = env.run(dsh(), &["--json", "--session-id", &id, "second task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.events()[0]["sessionId"], id);
    let requests = env.server.requests();
    let resumed = requests[2].messages();
    // system, first task, the read call, its result, the first answer, the second task.
    assert_eq!(resumed.len(), 6, "{resumed:#?}");
    assert_eq!(resumed[1], json!({"role": "user", "content": "first task"}));
    assert_eq!(resumed[3]["role"], "tool");
    assert_eq!(resumed[4]["content"], "first answer");
    assert_eq!(
        resumed[5],
        json!({"role": "user", "content": "second task"})
    );
    let turns: Vec<Value> = records(&env)
        .iter()
        .filter(|r| r["type"] == "turn/start")
        .map(|r| r["data"]["turn"].clone())
        .collect();
    assert_eq!(turns, vec![json!(1), json!(2)]);
}

#[test]
fn unknown_ids_other_directories_and_bad_ids_fail_before_any_request() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    let out = env.run(dsh(), &["--session-id", "session-nope", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .starts_with("dsh: no session \"session-nope\" in "),
        "{}",
        out.stderr
    );
    let out = env.run(dsh(), &["--session-id", "../x", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(out.stderr.contains("is not a session id"), "{}", out.stderr);
    assert!(env.server.requests().is_empty());

    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = session_id(&env);
    let elsewhere = env.ws_path().join("sub");
    std::fs::create_dir(&elsewhere).unwrap();
    let out =
        RunOutput::of(
            env.command(dsh())
                .current_dir(&elsewhere)
                .args(["--session-id", &id, "go"]),
        );
    assert_eq!(out.code(), Some(1));
    let ws = std::fs::canonicalize(env.ws_path()).unwrap();
    assert!(
        out.stderr.contains(&format!(
            "was recorded in {}, not in this directory",
            ws.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(env.server.requests().len(), 1);
}

#[test]
fn a_session_in_use_is_refused_with_the_holders_pid() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::hang()]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = session_id(&env);
    let mut holder = spawn(&env, &["--session-id", &id, "hold it"]);
    assert!(env.server.wait_for_requests(2, Duration::from_secs(30)));
    let out = env.run(dsh(), &["--session-id", &id, "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(&format!(
            "session \"{id}\" is in use by another dsh process (pid {})",
            holder.id()
        )),
        "{}",
        out.stderr
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The kernel dropped the lock with the process: the session can be resumed now.
    let out = env.run(dsh(), &["--session-id", &id, "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
}

#[test]
fn a_torn_last_line_is_dropped_and_cut_from_the_file() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("again")]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let path = log_path(&env);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"seq":99,"time":1,"type":"turn/sta"#);
    std::fs::write(&path, &text).unwrap();
    let out = env.run(dsh(), &["--session-id", &session_id(&env), "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    check_log(&env);
    // A damaged line with records after it is not guessed at.
    let mut lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines[2] = "{not json".into();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = env.run(dsh(), &["--session-id", &session_id(&env), "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("is damaged: line 3 is not a valid record"),
        "{}",
        out.stderr
    );
}

fn spawn(env: &TestEnv, args: &[&str]) -> Child {
    env.command(dsh())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Every line parses, `seq` counts from 1, every turn is closed, and every tool call of an
/// answer has a result.
fn check_log(env: &TestEnv) {
    let records = records(env);
    let mut open_turn = false;
    let mut unanswered: Vec<String> = Vec::new();
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record["seq"], json!(i + 1), "seq of {record}");
        match record["type"].as_str().unwrap() {
            "turn/start" => {
                assert!(!open_turn, "a turn started inside another");
                open_turn = true;
            }
            "turn/end" => {
                assert!(unanswered.is_empty(), "turn ended with calls unanswered");
                open_turn = false;
            }
            "assistant/message" => {
                for block in record["data"]["message"]["content"].as_array().unwrap() {
                    if block["type"] == "tool-call" {
                        unanswered.push(block["id"].as_str().unwrap().to_owned());
                    }
                }
            }
            "tool/result" => {
                let id = record["data"]["message"]["content"][0]["toolCallId"]
                    .as_str()
                    .unwrap();
                unanswered.retain(|u| u != id);
            }
            _ => {}
        }
    }
    assert!(!open_turn, "the log ends inside a turn");
}

/// What the committed records of a log say the model has seen: user texts, the ids of the
/// calls the model made, and each result's call id and text, in order.
fn committed_conversation(lines: &[Value]) -> Vec<String> {
    let mut seen = Vec::new();
    for record in lines {
        let message = &record["data"]["message"];
        match record["type"].as_str().unwrap() {
            "user/message" => seen.push(format!("user:{}", message["content"][0]["text"])),
            "assistant/message" => {
                for block in message["content"].as_array().unwrap() {
                    if block["type"] == "tool-call" {
                        seen.push(format!("call:{}", block["id"]));
                    }
                }
            }
            "tool/result" => {
                let block = &message["content"][0];
                seen.push(format!(
                    "result:{}:{}",
                    block["toolCallId"], block["content"][0]["text"]
                ));
            }
            _ => {}
        }
    }
    seen
}

/// The same, read from the chat messages of a request.
fn sent_conversation(messages: &[Value]) -> Vec<String> {
    let mut sent = Vec::new();
    for message in messages {
        match message["role"].as_str().unwrap() {
            "user" => sent.push(format!("user:{}", message["content"])),
            "assistant" => {
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    sent.push(format!("call:{}", call["id"]));
                }
            }
            "tool" => sent.push(format!(
                "result:{}:{}",
                message["tool_call_id"], message["content"]
            )),
            _ => {}
        }
    }
    sent
}

/// How a run is killed.
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// While the model is asked for step `n` (every earlier record committed).
    Waiting(usize),
    /// In the middle of step `n`'s streamed answer.
    MidStream(usize),
    /// While step `n`'s tool runs.
    MidTool(usize),
}

const STEPS: usize = 20;

/// Step `i`'s call: reads, writes and commands in turn; a command waits for `release` when it
/// is the one to be killed in.
fn step_call(i: usize, kill_in_tool: bool) -> Turn {
    match i % 3 {
        0 => Turn::tool_call("read", json!({"file_path": "notes.txt"})),
        1 => Turn::tool_call(
            "write",
            json!({"file_path": format!("out-{i}.txt"), "content": format!("step {i}\n")}),
        ),
        _ if kill_in_tool => Turn::tool_call(
            "bash",
            json!({"command": format!("touch running-{i}; until [ -e release ]; do sleep 0.01; done"),
                   "description": "wait"}),
        ),
        _ => Turn::tool_call(
            "bash",
            json!({"command": format!("echo step {i}"), "description": "echo"}),
        ),
    }
}

fn killed_and_resumed(point: KillPoint, zstd: bool) {
    let (at, turn) = match point {
        KillPoint::Waiting(n) => (n, Turn::hang()),
        KillPoint::MidStream(n) => (n, Turn::hang_mid_stream("partial answer")),
        KillPoint::MidTool(n) => (n, step_call(n, true)),
    };
    assert!((1..=STEPS).contains(&at));
    let mut turns: Vec<Turn> = (1..at).map(|i| step_call(i, false)).collect();
    turns.push(turn);
    // What the resumed run's first request gets.
    turns.push(Turn::text("resumed"));
    let env = TestEnv::new(turns);
    env.write("notes.txt", "some notes\n");
    env.write("zstd.toml", "[sessions]\ncompression = \"zstd\"\n");
    let mut args = vec!["--permission-mode", "danger-full-access"];
    if zstd {
        args.extend(["--patch", "zstd.toml"]);
    }
    let mut first = args.clone();
    first.push("go");
    let mut child = spawn(&env, &first);
    match point {
        KillPoint::Waiting(n) | KillPoint::MidStream(n) => {
            assert!(
                env.server.wait_for_requests(n, Duration::from_secs(60)),
                "{point:?}: request {n} never came"
            );
        }
        KillPoint::MidTool(n) => {
            let marker = env.ws_path().join(format!("running-{n}"));
            let start = Instant::now();
            while !marker.exists() {
                assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "{point:?}: tool never ran"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = records(&env);
    let committed = committed_conversation(&before);

    let id = session_id(&env);
    let mut resume = args.clone();
    resume.extend(["--session-id", &id, "after the crash"]);
    let out = env.run(dsh(), &resume);
    assert_eq!(out.code(), Some(0), "{point:?}: {}", out.stderr);
    let requests = env.server.requests();
    let resumed = requests.last().unwrap();
    let sent = sent_conversation(resumed.messages());
    // Every committed record is there, in order, before what the repair added.
    assert_eq!(
        &sent[..committed.len()],
        &committed[..],
        "{point:?}: the resumed request lost committed records"
    );
    assert_eq!(sent.last().unwrap(), "user:\"after the crash\"");
    // A command killed mid-run has an unknown outcome, said so.
    if let KillPoint::MidTool(_) = point {
        assert!(
            resumed
                .tool_results()
                .last()
                .unwrap()
                .starts_with("The tool call was interrupted after it was recorded"),
            "{point:?}"
        );
    }
    check_log(&env);
}

#[test]
fn a_run_killed_at_any_point_resumes_with_everything_it_committed() {
    let mut points = Vec::new();
    for n in [1, 2, 3, 5, 8, 11, 14, 17, 20] {
        points.push(KillPoint::Waiting(n));
    }
    for n in [1, 4, 7, 10, 13, 16, 19] {
        points.push(KillPoint::MidStream(n));
    }
    for n in [2, 5, 8, 11, 20] {
        points.push(KillPoint::MidTool(n));
    }
    assert!(points.len() >= 20);
    for point in points {
        killed_and_resumed(point, false);
    }
}

#[test]
fn a_compressed_log_survives_kills_the_same_way() {
    for point in [
        KillPoint::Waiting(3),
        KillPoint::MidStream(4),
        KillPoint::MidTool(5),
    ] {
        killed_and_resumed(point, true);
    }
}

#[test]
fn sessions_are_listed_newest_first_and_shown_as_a_transcript() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::text("It says alpha."),
        Turn::text("second"),
    ]);
    env.write("a.txt", "alpha\n");
    env.write("zstd.toml", "[sessions]\ncompression = \"zstd\"\n");
    let out = env.run(dsh(), &["what does a.txt say\nsecond line of the task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // A compressed session is listed and shown the same way.
    let out = env.run(dsh(), &["--patch", "zstd.toml", "another task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);

    let list = env.run(dsh(), &["sessions", "list"]);
    assert_eq!(list.code(), Some(0), "stderr: {}", list.stderr);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", list.stdout);
    assert!(lines[0].starts_with("id "), "{}", list.stdout);
    assert!(lines[1].ends_with("another task"), "{}", list.stdout);
    assert!(lines[2].ends_with("what does a.txt say"), "{}", list.stdout);
    let first_id = lines[2].split_whitespace().next().unwrap();
    let second_id = lines[1].split_whitespace().next().unwrap();
    // The same list for programs: one object per line, in the same order.
    let listed = env.run(dsh(), &["sessions", "list", "--json"]);
    assert_eq!(listed.code(), Some(0), "stderr: {}", listed.stderr);
    let objects: Vec<serde_json::Value> = listed
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{}", listed.stdout);
    assert_eq!(objects[0]["id"], second_id);
    assert_eq!(objects[1]["id"], first_id);
    assert_eq!(objects[1]["firstTask"], "what does a.txt say");
    assert_eq!(objects[1]["turns"], 1);
    assert!(objects[1]["totalTokens"].as_u64().unwrap() > 0);
    assert!(objects[1]["createdAt"].as_u64().is_some());
    assert!(objects[1].get("parentSession").is_none());
    assert!(
        objects[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("session.jsonl.zst")
    );

    // A title the user gives is listed in place of the first task; "" takes it away.
    let first_row = || {
        let list = env.run(dsh(), &["sessions", "list"]).stdout;
        list.lines().nth(2).unwrap().to_owned()
    };
    let renamed = env.run(
        dsh(),
        &["sessions", "rename", first_id, "the", "a.txt", "question"],
    );
    assert_eq!(renamed.code(), Some(0), "stderr: {}", renamed.stderr);
    let row = first_row();
    assert!(row.ends_with("  the a.txt question"), "{row}");
    let listed = env.run(dsh(), &["sessions", "list", "--json"]);
    let renamed_line: serde_json::Value =
        serde_json::from_str(listed.stdout.lines().nth(1).unwrap()).unwrap();
    assert_eq!(renamed_line["title"], "the a.txt question");
    assert_eq!(renamed_line["firstTask"], "what does a.txt say");
    let bad = env.run(dsh(), &["sessions", "rename", first_id, "two\nlines"]);
    assert_eq!(bad.code(), Some(1));
    assert!(bad.stderr.contains("one line of text"), "{}", bad.stderr);
    let unknown = env.run(dsh(), &["sessions", "rename", "session-nope", "x"]);
    assert!(
        unknown
            .stderr
            .contains("a session is renamed from the directory it ran in")
    );
    let cleared = env.run(dsh(), &["sessions", "rename", first_id, ""]);
    assert_eq!(cleared.code(), Some(0), "stderr: {}", cleared.stderr);
    let row = first_row();
    assert!(row.ends_with("what does a.txt say"), "{row}");

    let show = env.run(dsh(), &["sessions", "show", first_id]);
    assert_eq!(show.code(), Some(0), "stderr: {}", show.stderr);
    for expected in [
        "── turn 1 ──",
        "user: what does a.txt say\n  second line of the task",
        "→ read {\"file_path\":\"a.txt\"}",
        "← <path>",
        "assistant: It says alpha.",
        "[turn 1 ended: completed]",
    ] {
        assert!(
            show.stdout.contains(expected),
            "{expected:?} in\n{}",
            show.stdout
        );
    }
    let json = env.run(dsh(), &["sessions", "show", second_id, "--json"]);
    assert_eq!(json.code(), Some(0), "stderr: {}", json.stderr);
    let lines: Vec<Value> = json
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["id"], second_id);
    // The permissions the session runs under come first, then its turns.
    assert_eq!(lines[1]["type"], "permission/mode");
    assert_eq!(lines[2]["type"], "turn/start");

    let missing = env.run(dsh(), &["sessions", "show", "session-nope"]);
    assert_eq!(missing.code(), Some(1));
    // What to do, in terms of this command (it takes no --session-id).
    assert_eq!(
        missing.stderr,
        format!(
            "dsh: no session \"session-nope\" was recorded in {}: `dsh sessions list` shows \
             this directory's sessions; a session is shown from the directory it ran in\n",
            env.ws_path().display()
        )
    );
}

#[test]
fn a_resumed_session_gets_only_the_instructions_that_changed() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("third answer"),
    ]);
    env.write("AGENTS.md", "rules v1\n");
    env.write("pkg/AGENTS.md", "pkg rules\n");
    env.write("pkg/x.txt", "x\n");
    let out = env.run(dsh(), &["first task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = session_id(&env);
    let delivered = records(&env)
        .into_iter()
        .filter(|r| r["data"]["instructions"].is_array())
        .count();
    assert_eq!(delivered, 2, "the baseline and pkg/AGENTS.md");

    // One file changed, one deleted, one new in the chain.
    env.write("AGENTS.md", "rules v2\n");
    std::fs::remove_file(env.ws.path().join("pkg/AGENTS.md")).unwrap();
    env.write("CLAUDE.md", "claude rules\n");
    let out = env.run(dsh(), &["--session-id", &id, "second task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let messages = requests[2].messages();
    let last = messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(
        messages[messages.len() - 2]["content"],
        "second task",
        "the changes follow the task"
    );
    assert!(last.starts_with("<system-reminder>\n"), "{last}");
    assert!(
        last.contains("Updated instructions from: AGENTS.md\n\n"),
        "{last}"
    );
    assert!(last.contains("rules v2"), "{last}");
    assert!(
        last.contains("Additional instructions from: CLAUDE.md\n\nclaude rules"),
        "{last}"
    );
    assert!(
        last.contains("Instructions removed: pkg/AGENTS.md"),
        "{last}"
    );
    assert!(!last.contains("rules v1"), "{last}");

    // Nothing changed since: no message (the removed file stays withdrawn).
    let out = env.run(dsh(), &["--session-id", &id, "third task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let messages = requests[3].messages();
    assert_eq!(messages.last().unwrap()["content"], "third task");
    let after_read = requests[4].messages();
    assert_eq!(after_read.last().unwrap()["role"], "tool");
}

#[test]
fn a_nested_file_delivered_before_a_resume_is_not_sent_again() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("first answer"),
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("second answer"),
    ]);
    env.write("pkg/AGENTS.md", "pkg rules\n");
    env.write("pkg/x.txt", "x\n");
    let out = env.run(dsh(), &["first task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let first = env.server.requests()[1].messages().to_vec();
    assert!(
        first.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("Additional instructions from: pkg/AGENTS.md")
    );
    let out = env.run(dsh(), &["--session-id", &session_id(&env), "again"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let resumed = requests[3].messages();
    assert_eq!(resumed.last().unwrap()["role"], "tool", "no second copy");
}

#[test]
fn a_session_logged_before_instructions_were_tracked_gets_none_again_on_resume() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("first answer"),
        Turn::tool_call("read", json!({"file_path": "pkg/x.txt"})),
        Turn::text("second answer"),
    ]);
    env.write("AGENTS.md", "rules v1\n");
    env.write("pkg/AGENTS.md", "pkg rules v1\n");
    env.write("pkg/x.txt", "x\n");
    let out = env.run(dsh(), &["first task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // Made into a log of an older dsh, whose instruction messages named no files: the
    // baseline message and the nested file's.
    let path = log_path(&env);
    let log = std::fs::read_to_string(&path).unwrap();
    let mut stripped = 0;
    let legacy: String = log
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            if let Some(data) = record.get_mut("data").and_then(Value::as_object_mut)
                && data.remove("instructions").is_some()
            {
                stripped += 1;
            }
            format!("{record}\n")
        })
        .collect();
    assert_eq!(stripped, 2);
    std::fs::write(&path, legacy).unwrap();
    env.write("AGENTS.md", "rules v2\n");
    let out = env.run(dsh(), &["--session-id", &session_id(&env), "second task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let reminders = |messages: &[Value]| {
        messages
            .iter()
            .filter(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("<system-reminder>"))
            })
            .count()
    };
    let resumed = requests[2].messages();
    assert_eq!(resumed.last().unwrap()["content"], "second task");
    assert_eq!(reminders(resumed), 2, "the first deliveries only");
    // Reading in pkg again does not bring its AGENTS.md a second time.
    let after_read = requests[3].messages();
    assert_eq!(after_read.last().unwrap()["role"], "tool");
    assert_eq!(reminders(after_read), 2, "no second copy of pkg/AGENTS.md");
}

/// The session id a `--json` run reported.
fn reported_session(out: &dsh_testkit::RunOutput) -> String {
    out.events()[0]["sessionId"].as_str().unwrap().to_owned()
}

#[test]
fn continue_picks_the_latest_session_of_the_directory() {
    let env = TestEnv::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::text("continued answer"),
        Turn::text("older again"),
        Turn::text("continued older"),
    ]);
    let out = env.run(dsh(), &["--continue", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("--continue: no session was recorded"),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty());

    // `--dump-config` fails as the run would, and names the session the run would continue.
    let out = env.run(dsh(), &["--dump-config", "--continue"]);
    assert!(
        out.stderr.contains("--continue: no session was recorded"),
        "{}",
        out.stderr
    );

    let older = reported_session(&env.run(dsh(), &["--json", "one"]));
    let newer = reported_session(&env.run(dsh(), &["--json", "two"]));
    let out = env.run(dsh(), &["--dump-config", "--continue"]);
    let row = format!("session = \"{newer}\"");
    let line = out.stdout.lines().find(|l| l.starts_with(&row));
    assert!(
        line.is_some_and(|l| l.ends_with("# --continue")),
        "{}",
        out.stdout
    );
    let out = env.run(dsh(), &["--dump-config", "--fork", "--continue"]);
    assert!(
        out.stdout
            .contains(&format!("session.fork_from = \"{newer}\"")),
        "{}",
        out.stdout
    );
    let out = env.run(dsh(), &["--json", "--continue", "three"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(reported_session(&out), newer);
    let sent = env.server.requests()[2].messages().to_vec();
    let text = serde_json::to_string(&sent).unwrap();
    assert!(text.contains("two") && !text.contains("\"one\""), "{text}");

    let out = env.run(dsh(), &["--continue", "--session-id", &newer, "x"]);
    assert!(out.stderr.contains("give one"), "{}", out.stderr);

    // The latest is the one used last, not the one started last.
    let out = env.run(dsh(), &["--json", "--session-id", &older, "four"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let out = env.run(dsh(), &["--json", "--continue", "five"]);
    assert_eq!(reported_session(&out), older);
}

#[test]
fn fork_starts_a_new_session_from_a_copy_and_leaves_the_old_one_alone() {
    let env = TestEnv::new(vec![Turn::text("remember 42"), Turn::text("forked answer")]);
    let first = reported_session(&env.run(dsh(), &["--json", "pick a number"]));
    let before = env.session_log();

    let out = env.run(
        dsh(),
        &["--json", "--fork", "--session-id", &first, "what was it?"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let forked = reported_session(&out);
    assert_ne!(forked, first);
    let sent = serde_json::to_string(env.server.requests()[1].messages()).unwrap();
    assert!(
        sent.contains("pick a number") && sent.contains("remember 42"),
        "{sent}"
    );

    let old_log = std::fs::read_dir(env.home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|project| project.path().join(&first).join("session.jsonl"))
        .find(|path| path.exists())
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(old_log).unwrap(),
        before,
        "the old log is unchanged"
    );
    let logs = env.session_logs();
    let header = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "session" && r["id"] == forked)
        .unwrap();
    assert_eq!(header["forkedFrom"], first.as_str());

    let out = env.run(dsh(), &["--fork", "go"]);
    assert!(
        out.stderr.contains("--fork copies a session"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_resumed_session_keeps_its_permission_mode_unless_a_flag_changes_it() {
    let env = TestEnv::new(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ]);
    let out = env.run(
        dsh(),
        &["--json", "--permission-mode", "read-only", "first"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = reported_session(&out);
    let mode_row = |args: &[&str]| {
        let mut all = vec!["--dump-config"];
        all.extend_from_slice(args);
        let shown = env.run(dsh(), &all).stdout;
        shown
            .lines()
            .find(|l| l.starts_with("sandbox.mode = "))
            .unwrap_or_default()
            .to_owned()
    };
    // Resumed without a flag: the session's mode, over the default.
    let row = mode_row(&["--session-id", &id]);
    assert!(
        row.contains("\"read-only\"") && row.ends_with("# the session"),
        "{row}"
    );
    let out = env.run(dsh(), &["--json", "--session-id", &id, "second"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The commands of the resumed run are told they are read-only.
    let system = env.server.requests()[1].messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(system.contains("read-only"), "{system}");
    let log = env.session_log();
    assert_eq!(log.matches("\"type\":\"permission/mode\"").count(), 1);
    // A flag on the resume changes it, and the change is recorded.
    let out = env.run(
        dsh(),
        &[
            "--json",
            "--session-id",
            &id,
            "--permission-mode",
            "workspace-write",
            "third",
        ],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let log = env.session_log();
    assert_eq!(log.matches("\"type\":\"permission/mode\"").count(), 2);
    assert!(
        log.contains(r#""mode":"workspace-write","approval":"ask","source":"--permission-mode""#),
        "{log}"
    );
    let row = mode_row(&["--session-id", &id]);
    assert!(row.contains("\"workspace-write\""), "{row}");
}

/// A subagent's session, plain or forked, belongs to the agent that started it: `--session-id`
/// refuses it before anything is written, says whose it is and that `--fork` branches from it;
/// and `--fork` does.
#[test]
fn a_subagents_session_is_refused_and_can_be_forked() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "look", "prompt": "Look."}),
        ),
        Turn::text("child answer"),
        Turn::tool_call(
            "subagent_fork",
            json!({"description": "branch", "prompt": "Branch."}),
        ),
        Turn::text("forked child answer"),
        Turn::text("done"),
        Turn::text("branched"),
    ]);
    let out = env.run(dsh(), &["--json", "start"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let parent = reported_session(&out);
    let listed = env.run(dsh(), &["sessions", "list", "--json"]);
    let children: Vec<Value> = (listed.stdout.lines())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|s| s["parentSession"] == parent.as_str())
        .collect();
    assert_eq!(children.len(), 2, "{}", listed.stdout);
    let requests = env.server.requests().len();
    for child in &children {
        let id = child["id"].as_str().unwrap();
        let log = child["path"].as_str().unwrap();
        let before = std::fs::read(log).unwrap();
        let out = env.run(dsh(), &["--json", "--session-id", id, "go on"]);
        assert_eq!(out.code(), Some(1), "{}", out.stdout);
        let events = out.events();
        assert_eq!(events.len(), 1, "{}", out.stdout);
        assert_eq!(events[0]["code"], "SESSION_SUBAGENT");
        let message = events[0]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "session \"{id}\" is a subagent or forked session and cannot be driven \
                 directly: it belongs to session \"{parent}\""
            )),
            "{message}"
        );
        assert!(
            message.contains(&format!("--session-id {id} --fork")),
            "{message}"
        );
        assert_eq!(
            std::fs::read(log).unwrap(),
            before,
            "refused before any write"
        );
    }
    assert_eq!(env.server.requests().len(), requests, "nothing was sent");

    let child = children[0]["id"].as_str().unwrap();
    let out = env.run(
        dsh(),
        &["--json", "--session-id", child, "--fork", "branch"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_ne!(reported_session(&out), child);
}

/// A headless run pays for no title it did not ask for; with `--title` it asks once, after
/// the first turn, and the title is listed, its tokens in the run's and the session's.
#[test]
fn a_headless_run_titles_its_session_only_when_asked() {
    let server = dsh_testkit::ScriptedServer::start(vec![
        Turn::text("one"),
        Turn::text("two"),
        Turn::text("three"),
    ])
    .with_titles(vec![Turn::text("Alpha question").usage(40, 5, 0)]);
    let env = TestEnv::with_server(server);
    let out = env.run(dsh(), &["--json", "what does a.txt say"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(env.server.title_requests().is_empty());
    assert!(!env.session_logs().contains("session/title"));

    let out = env.run(dsh(), &["--json", "--title", "the second task"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.title_requests().len(), 1);
    let last = out.events().last().cloned().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["usage"]["totalTokens"], 110 + 45, "{last}");
    let list = env.run(dsh(), &["sessions", "list"]).stdout;
    let rows: Vec<&str> = list.lines().collect();
    assert!(rows[1].ends_with("  Alpha question"), "{list}");
    assert!(rows[2].ends_with("what does a.txt say"), "{list}");
    let listed = env.run(dsh(), &["sessions", "list", "--json"]).stdout;
    let newest: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(newest["title"], "Alpha question");
    assert_eq!(newest["totalTokens"], 110 + 45);

    // Resumed, the titled session is not titled again.
    let id = newest["id"].as_str().unwrap();
    let out = env.run(dsh(), &["--json", "--title", "--session-id", id, "more"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.title_requests().len(), 1);
}

/// `sessions.titles = true` asks too, and `--dump-config` says where the choice came from.
#[test]
fn the_titles_setting_turns_them_on_for_a_headless_run() {
    let env = TestEnv::new(vec![Turn::text("one")]);
    let dump = env.run(dsh(), &["--dump-config"]).stdout;
    assert!(
        dump.lines()
            .any(|l| l.starts_with("sessions.titles") && l.contains("false")),
        "{dump}"
    );
    env.write("titles.toml", "[sessions]\ntitles = true\n");
    let out = env.run(
        dsh(),
        &["--json", "--patch", "titles.toml", "a task to title"],
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(env.server.title_requests().len(), 1);
    // The scripted server's own answer: the message's first words.
    assert!(env.session_logs().contains(r#""title":"a task to title""#));
}
