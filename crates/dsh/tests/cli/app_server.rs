//! `dsh app-server`: the SDKs' protocol on stdio (docs/sdk.md), driven line by line against
//! the scripted model server. Every line either side writes is checked against
//! docs/sdk.schema.json.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

pub(crate) struct Client {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
    /// Every line the server wrote, in order.
    pub(crate) seen: Vec<Value>,
    next_id: u64,
}

impl Client {
    pub(crate) fn start(env: &TestEnv, extra: &[&str]) -> Client {
        let mut child = env
            .command(dsh())
            .arg("app-server")
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut client = Client {
            child,
            stdin,
            out,
            seen: Vec::new(),
            next_id: 0,
        };
        let ready = client.read();
        assert_eq!(ready["type"], "ready", "{ready}");
        assert_eq!(ready["protocolVersion"], 1);
        client
    }

    pub(crate) fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.out.read_line(&mut line).unwrap() > 0,
            "the server's stdout ended: {:#?}",
            self.seen
        );
        let value: Value = serde_json::from_str(&line).unwrap();
        dsh_testkit::check_sdk_line(&value, None);
        self.seen.push(value.clone());
        value
    }

    pub(crate) fn write(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends `message` with a new id; returns the id.
    pub(crate) fn send(&mut self, mut message: Value) -> u64 {
        self.next_id += 1;
        message["id"] = json!(self.next_id);
        dsh_testkit::check_sdk_line(&message, Some("clientMessage"));
        self.write(&message.to_string());
        self.next_id
    }

    /// Reads until the response to `id`, answering each request with what `answer` gives
    /// (nothing: the request is left waiting). Returns the response and the lines before it.
    pub(crate) fn until(
        &mut self,
        id: u64,
        answer: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let line = self.read();
            if line["type"] == "response" && line["id"] == id {
                return (line, before);
            }
            if line["type"] == "request"
                && let Some(mut answered) = answer(&line)
            {
                answered["type"] = json!("answer");
                answered["request"] = line["id"].clone();
                self.send(answered);
            }
            before.push(line);
        }
    }

    /// Sends a message no client should (the schema refuses it) and returns its response.
    pub(crate) fn refused(&mut self, mut message: Value) -> Value {
        self.next_id += 1;
        message["id"] = json!(self.next_id);
        self.write(&message.to_string());
        self.until(self.next_id, &mut |_| None).0
    }

    pub(crate) fn call(&mut self, message: Value) -> (Value, Vec<Value>) {
        let id = self.send(message);
        self.until(id, &mut |_| None)
    }

    pub(crate) fn quit(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

fn types(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["type"].as_str().unwrap()).collect()
}

#[test]
fn two_turns_a_bad_line_and_a_resume_in_another_process() {
    let env = TestEnv::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::text("third answer"),
    ]);
    let mut client = Client::start(&env, &[]);
    let (opened, before) = client.call(json!({"type": "open"}));
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(types(&before), ["session"]);
    assert_eq!(before[0]["sessionId"], session);

    let (done, events) = client.call(json!({"type": "send", "text": "one"}));
    assert_eq!(done["result"]["text"], "first answer");
    assert_eq!(done["result"]["reason"]["kind"], "completed");
    assert_eq!(events.last().unwrap()["type"], "final");
    assert!(types(&events).contains(&"text"), "{events:?}");

    // A malformed line is answered with its code, and the session goes on.
    client.write("this is not json");
    let bad = client.read();
    assert_eq!(bad["error"]["code"], "BAD_INPUT", "{bad}");
    assert_eq!(bad["id"], Value::Null);
    let unknown = client.refused(json!({"type": "dance"}));
    assert_eq!(unknown["error"]["code"], "BAD_REQUEST", "{unknown}");
    let (stray, _) = client.call(json!({"type": "answer", "request": "ask-9", "choice": "once"}));
    assert_eq!(stray["error"]["code"], "UNKNOWN_REQUEST", "{stray}");

    let (done, _) = client.call(json!({"type": "send", "text": "two"}));
    assert_eq!(done["result"]["text"], "second answer");
    assert!(client.quit().success());

    let mut again = Client::start(&env, &[]);
    let (missing, _) = again.call(json!({"type": "open", "resume": "session-nope"}));
    assert_eq!(missing["error"]["code"], "SESSION_NOT_FOUND", "{missing}");
    let (resumed, _) = again.call(json!({"type": "open", "resume": session}));
    assert_eq!(resumed["result"]["sessionId"], session.as_str());
    let (done, _) = again.call(json!({"type": "send", "text": "three"}));
    assert_eq!(done["result"]["text"], "third answer");
    assert!(again.quit().success());
    let sent = serde_json::to_string(env.server.requests()[2].messages()).unwrap();
    assert!(
        sent.contains("one") && sent.contains("second answer"),
        "{sent}"
    );
}

#[test]
fn approvals_are_allowed_and_denied_by_the_client() {
    let env = TestEnv::new(vec![
        Turn::escalated("echo allowed-run"),
        Turn::text("ran it"),
        Turn::escalated("echo denied-run"),
        Turn::text("understood"),
    ]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open"}));
    let id = client.send(json!({"type": "send", "text": "do it"}));
    let (done, lines) = client.until(id, &mut |asked| {
        assert_eq!(asked["kind"], "approval");
        assert_eq!(asked["tool"], "bash");
        assert_eq!(
            asked["reason"],
            "escalate sandbox to danger-full-access: needs the whole machine"
        );
        Some(json!({"choice": "once"}))
    });
    assert_eq!(done["result"]["text"], "ran it");
    // The call is told before the request about it.
    let call = types(&lines)
        .iter()
        .position(|t| *t == "tool_call")
        .unwrap();
    let asked = types(&lines).iter().position(|t| *t == "request").unwrap();
    assert!(call < asked, "{lines:?}");
    assert_eq!(lines[call]["callId"], lines[asked]["callId"]);
    assert!(env.server.requests()[1].tool_results()[0].contains("allowed-run"));

    let id = client.send(json!({"type": "send", "text": "again"}));
    let (done, _) = client.until(id, &mut |_| {
        Some(json!({"choice": "deny", "reason": "not today"}))
    });
    assert_eq!(done["result"]["text"], "understood");
    let denied = env.server.requests()[3].tool_results();
    assert!(denied.last().unwrap().contains("rejected"), "{denied:?}");
    assert!(denied.last().unwrap().contains("not today"), "{denied:?}");
    assert!(client.quit().success());
}

#[test]
fn the_models_question_is_answered_by_the_client() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "ask_user_question",
            json!({"questions": [{
                "id": "db",
                "question": "Which database?",
                "header": "Storage",
                "options": [{"label": "SQLite"}, {"label": "Postgres"}]
            }]}),
        ),
        Turn::text("Postgres it is."),
    ]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open"}));
    let id = client.send(json!({"type": "send", "text": "pick one"}));
    let asked = loop {
        let line = client.read();
        if line["type"] == "request" {
            break line;
        }
    };
    assert_eq!(asked["kind"], "questions");
    assert_eq!(asked["questions"][0]["question"], "Which database?");
    assert_eq!(asked["questions"][0]["options"][1]["label"], "Postgres");
    // An answer of the wrong shape is refused, and the question still waits.
    let refused =
        client.refused(json!({"type": "answer", "request": asked["id"], "answers": "Postgres"}));
    assert_eq!(refused["error"]["code"], "BAD_REQUEST", "{refused}");
    let good = json!({"type": "answer", "request": asked["id"],
        "answers": [{"id": "db", "selected": ["Postgres"]}]});
    let (accepted, _) = client.call(good);
    assert_eq!(accepted["result"], json!({}), "{accepted}");
    let (done, _) = client.until(id, &mut |_| None);
    assert_eq!(done["result"]["text"], "Postgres it is.");
    let result = &env.server.requests()[1].tool_results()[0];
    assert!(result.contains("Postgres"), "{result}");
    assert!(client.quit().success());
}

#[test]
fn an_interrupt_stops_the_turn_and_the_session_goes_on() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("after")]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open"}));
    let turn = client.send(json!({"type": "send", "text": "wait forever"}));
    assert!(
        env.server
            .wait_for_requests(1, std::time::Duration::from_secs(60))
    );
    // What must wait for the turn's end is refused while it runs.
    let busy = client.send(json!({"type": "set", "mode": "plan"}));
    let (refused, _) = client.until(busy, &mut |_| None);
    assert_eq!(refused["error"]["code"], "BUSY", "{refused}");
    let interrupt = client.send(json!({"type": "interrupt"}));
    let (stopped, _) = client.until(interrupt, &mut |_| None);
    assert_eq!(stopped["result"]["interrupted"], true);
    let (done, events) = client.until(turn, &mut |_| None);
    assert_eq!(done["result"]["reason"]["kind"], "aborted");
    assert_eq!(done["result"]["reason"]["reason"]["kind"], "user");
    assert_eq!(events.last().unwrap()["type"], "final");
    let (done, _) = client.call(json!({"type": "send", "text": "again"}));
    assert_eq!(done["result"]["text"], "after");
    assert!(client.quit().success());
}

#[test]
fn mode_and_model_change_between_turns() {
    let env = TestEnv::new(vec![Turn::text("planned"), Turn::text("later")]);
    let mut client = Client::start(&env, &[]);
    let (none, _) = client.call(json!({"type": "set", "mode": "plan"}));
    assert_eq!(none["error"]["code"], "NO_SESSION", "{none}");
    client.call(json!({"type": "open", "mode": "read-only"}));
    let (set, _) = client.call(json!({"type": "set", "mode": "plan"}));
    assert_eq!(set["result"]["mode"], "plan", "{set}");
    let (done, _) = client.call(json!({"type": "send", "text": "plan it"}));
    assert_eq!(done["result"]["text"], "planned");
    assert!(env.session_logs().contains(r#""mode":"plan""#));
    // A model no route knows is refused with dsh's code; the session goes on as it was.
    let (refused, _) = client.call(json!({"type": "set", "model": "nowhere/none"}));
    assert!(refused["error"]["code"].is_string(), "{refused}");
    let (done, _) = client.call(json!({"type": "send", "text": "go on"}));
    assert_eq!(done["result"]["text"], "later");
    let (closed, _) = client.call(json!({"type": "close"}));
    assert_eq!(closed["result"], json!({}));
    assert!(client.quit().success());
}

#[test]
fn a_host_tool_is_offered_and_run_by_the_client() {
    let env = TestEnv::new(vec![
        Turn::tool_call("lookup", json!({"key": "answer"})),
        Turn::tool_call("lookup", json!({"key": "missing"})),
        Turn::tool_call("lookup", json!({"wrong": 1})),
        Turn::text("it is forty-two"),
    ]);
    let mut client = Client::start(&env, &[]);
    let bad = client.refused(json!({"type": "open", "tools": [{"name": "bash",
        "description": "mine", "inputSchema": {"type": "object"}}]}));
    assert_eq!(bad["error"]["code"], "BAD_REQUEST", "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"bash\"")
    );
    let schema = json!({"type": "object", "properties": {"key": {"type": "string"}},
        "required": ["key"], "additionalProperties": false});
    let tools = json!([{"name": "lookup", "description": "Looks a key up", "inputSchema": schema}]);
    client.call(json!({"type": "open", "tools": tools}));
    let id = client.send(json!({"type": "send", "text": "what is the answer?"}));
    let mut called = Vec::new();
    let (done, lines) = client.until(id, &mut |asked| {
        assert_eq!(asked["kind"], "tool");
        assert_eq!(asked["tool"], "lookup");
        called.push(asked["input"].clone());
        Some(match asked["input"]["key"].as_str() {
            Some("answer") => json!({"output": "forty-two"}),
            _ => json!({"error": "no such key"}),
        })
    });
    assert_eq!(done["result"]["text"], "it is forty-two");
    // Arguments the schema refuses never reach the client: the model reads why.
    assert_eq!(
        called,
        [json!({"key": "answer"}), json!({"key": "missing"})]
    );
    let results: Vec<&Value> = (lines.iter())
        .filter(|l| l["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["status"], "completed");
    assert_eq!(results[1]["status"], "error");
    assert_eq!(results[2]["status"], "error");
    let first = &env.server.requests()[0];
    let offered = serde_json::to_string(&first.body["tools"]).unwrap();
    assert!(offered.contains("Looks a key up"), "{offered}");
    let seen = env.server.requests()[1].tool_results();
    assert!(seen[0].contains("forty-two"), "{seen:?}");
    let seen = env.server.requests()[2].tool_results();
    assert!(seen.last().unwrap().contains("no such key"), "{seen:?}");
    assert!(client.quit().success());
}

#[test]
fn a_hook_keeps_a_host_tool_call_from_the_client() {
    let env = TestEnv::new(vec![
        Turn::tool_call("lookup", json!({"key": "secret"})),
        Turn::text("blocked, then"),
    ]);
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "lookup", "hooks": [
            {"type": "command", "command": "echo 'not that key' >&2; exit 2"}
        ]}]}})
        .to_string(),
    );
    let mut client = Client::start(&env, &[]);
    let tools = json!([{"name": "lookup", "description": "Looks a key up",
        "inputSchema": {"type": "object"}}]);
    client.call(json!({"type": "open", "tools": tools}));
    let id = client.send(json!({"type": "send", "text": "look it up"}));
    let (done, lines) = client.until(id, &mut |asked| panic!("the client was asked: {asked}"));
    assert_eq!(done["result"]["text"], "blocked, then");
    assert!(lines.iter().all(|l| l["type"] != "request"), "{lines:?}");
    assert_eq!(
        env.server.requests()[1].tool_results(),
        ["Error: a PreToolUse hook blocked this call: not that key"]
    );
    assert!(client.quit().success());
}

#[test]
fn a_rewind_takes_the_conversation_back_to_a_turns_start() {
    let env = TestEnv::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::text("third answer"),
    ]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open"}));
    client.call(json!({"type": "send", "text": "remember alpha"}));
    client.call(json!({"type": "send", "text": "remember beta"}));
    let (rewound, _) = client.call(json!({"type": "rewind", "turn": 2, "files": false}));
    assert!(rewound["result"].is_object(), "{rewound}");
    let (missing, _) = client.call(json!({"type": "rewind", "turn": 9}));
    assert_eq!(missing["error"]["code"], "REWIND_TARGET", "{missing}");
    let (done, _) = client.call(json!({"type": "send", "text": "what do you remember?"}));
    assert_eq!(done["result"]["text"], "third answer");
    let sent = serde_json::to_string(env.server.requests()[2].messages()).unwrap();
    assert!(sent.contains("remember alpha"), "{sent}");
    assert!(!sent.contains("remember beta"), "{sent}");
    assert!(client.quit().success());
}
