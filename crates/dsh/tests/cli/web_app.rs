//! `dsh web`'s server, driven over HTTP as its page drives it, against the scripted model
//! server: who may talk to it (token, Host, Origin), a conversation streamed as server-sent
//! events, an escalation allowed and one denied, a stop mid-turn, and a page that connects
//! late getting everything.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// How long a test waits for one event before it fails (a limit, never a delay).
const LIMIT: Duration = Duration::from_secs(60);

/// `dsh web --port 0` in the workspace of a test environment, killed when dropped.
struct Web {
    child: Child,
    port: u16,
    token: String,
}

impl Web {
    fn start(env: &TestEnv) -> Web {
        Web::start_with(env, &[])
    }

    /// `dsh web --port 0` with more flags (what new sessions start from).
    fn start_with(env: &TestEnv, flags: &[&str]) -> Web {
        let mut command = env.command(dsh());
        command.args(["web", "--port", "0"]).args(flags);
        Web::spawn(command)
    }

    /// `command` (a `dsh web`), up and serving.
    fn spawn(mut command: std::process::Command) -> Web {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("dsh web: open ")
            .unwrap_or_else(|| panic!("no address printed: {line}"));
        let (base, token) = url.split_once("/#token=").unwrap();
        let port = base.rsplit(':').next().unwrap().parse().unwrap();
        Web {
            child,
            port,
            token: token.to_owned(),
        }
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One request; the status and the body. `headers` replace the defaults (the host, the
    /// token's cookie and, for a POST, the page's origin) of the same name.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let body = body.map(Value::to_string).unwrap_or_default();
        let (status, _, body) = self.request_bytes(method, path, body.as_bytes(), headers);
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// [`Web::request`] with a body of any bytes; the status, the head and the body's bytes.
    fn request_bytes(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        headers: &[(&str, &str)],
    ) -> (u16, String, Vec<u8>) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut sent = vec![
            ("Host".to_owned(), format!("127.0.0.1:{}", self.port)),
            ("Authorization".to_owned(), format!("Bearer {}", self.token)),
        ];
        if method == "POST" {
            sent.push(("Origin".to_owned(), self.origin()));
            sent.push(("Content-Type".to_owned(), "application/json".into()));
        }
        for (name, value) in headers {
            sent.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            if !value.is_empty() {
                sent.push(((*name).to_owned(), (*value).to_owned()));
            }
        }
        let mut text = format!(
            "{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (name, value) in &sent {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        stream.write_all(text.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let split = (answer.windows(4))
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(answer.len());
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let status = head[9..12].parse().unwrap();
        let body = answer.get(split + 4..).unwrap_or_default().to_vec();
        (status, head, body)
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let (status, text) = self.request("POST", path, Some(&body), &[]);
        assert!(status < 300, "{path}: {status} {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// A new session in the test's workspace.
    fn open(&self, env: &TestEnv) -> String {
        let opened = self.post("/api/sessions", json!({"cwd": env.ws_path()}));
        opened["id"].as_str().unwrap().to_owned()
    }

    /// The session's events, as a page reads them: each `data:` line's JSON, as it comes.
    fn events(&self, id: &str) -> mpsc::Receiver<Value> {
        self.events_after(id, 0)
    }

    /// As [`Web::events`], for a page that reconnects having seen up to report `last`; each
    /// event gets its number as `_id`.
    fn events_after(&self, id: &str, last: u64) -> mpsc::Receiver<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let request = format!(
            "GET /api/sessions/{id}/events?token={} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\
             Last-Event-ID: {last}\r\n\r\n",
            self.token, self.port
        );
        stream.write_all(request.as_bytes()).unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut number = 0u64;
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                // The body is chunked: only the `id:` and `data:` lines matter.
                if let Some(id) = line.strip_prefix("id: ") {
                    number = id.parse().unwrap_or(0);
                }
                if let Some(data) = line.strip_prefix("data: ") {
                    let mut event: Value = serde_json::from_str(data).unwrap();
                    event["_id"] = json!(number);
                    if tx.send(event).is_err() {
                        break;
                    }
                }
            }
        });
        rx
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads events until one of `kind` for which `also` holds; every event read, in order.
fn until(events: &mpsc::Receiver<Value>, kind: &str, also: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let event = events
            .recv_timeout(LIMIT)
            .unwrap_or_else(|_| panic!("no {kind} event; saw {seen:#?}"));
        let done = event["kind"] == kind && also(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn texts(seen: &[Value]) -> Vec<String> {
    seen.iter()
        .filter(|e| e["kind"] == "view" && e["view"]["view"] == "answer")
        .flat_map(|e| {
            e["view"]["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|b| b["text"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn only_the_printed_address_with_its_token_gets_in() {
    let env = TestEnv::new(vec![]);
    let web = Web::start(&env);
    let none = [("Authorization", "")];
    // No token: refused; a cookie is never taken for one (every server on another port of
    // this host would be sent it).
    assert_eq!(web.request("GET", "/api/sessions", None, &none).0, 401);
    let cookie = format!("dsh_token={}", web.token);
    let by_cookie = [("Authorization", ""), ("Cookie", cookie.as_str())];
    assert_eq!(web.request("GET", "/api/sessions", None, &by_cookie).0, 401);
    let wrong = [("Authorization", "Bearer nope")];
    assert_eq!(web.request("GET", "/api/sessions", None, &wrong).0, 401);
    // The stream takes the token in its query (a browser cannot give it a header).
    let (status, _) = web.request("GET", "/api/sessions/none/events?token=nope", None, &none);
    assert_eq!(status, 401);
    // The page holds no data: it is served without the token, and sets no cookie.
    let (status, page) = web.request("GET", "/", None, &none);
    assert_eq!(status, 200);
    assert!(page.contains("<script src=\"/app.js\""), "{page}");
    // A page elsewhere whose name points here (DNS rebinding), or another site's request.
    assert_eq!(
        web.request("GET", "/api/sessions", None, &[("Host", "evil.example")])
            .0,
        421
    );
    let foreign = [("Origin", "https://evil.example")];
    assert_eq!(
        web.request("POST", "/api/sessions", Some(&json!({})), &foreign)
            .0,
        403
    );
    assert_eq!(web.request("GET", "/api/sessions", None, &foreign).0, 403);
    // A change without an Origin is refused too (no form post from elsewhere gets in).
    assert_eq!(
        web.request("POST", "/api/sessions", Some(&json!({})), &[("Origin", "")])
            .0,
        403
    );
    // What installs the app needs no token.
    assert_eq!(
        web.request("GET", "/manifest.webmanifest", None, &none).0,
        200
    );
    // A bad request is an error that says so, and the server goes on.
    let (status, body) = web.request(
        "POST",
        "/api/sessions",
        Some(&json!({"cwd": "relative"})),
        &[],
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("absolute path"), "{body}");
    assert_eq!(
        web.request("GET", "/api/sessions/nope/events", None, &[]).0,
        404
    );
    assert_eq!(web.request("GET", "/api/sessions", None, &[]).0, 200);
}

#[test]
fn a_two_turn_conversation_streams_and_a_late_page_gets_all_of_it() {
    let env = TestEnv::new(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
    ]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "one"}),
    );
    let first = until(&events, "busy", |e| e["busy"] == false);
    assert_eq!(texts(&first), ["first answer"]);
    assert!(
        first.iter().any(|e| e["kind"] == "delta"),
        "the answer streams"
    );
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "two"}),
    );
    let second = until(&events, "busy", |e| e["busy"] == false);
    assert_eq!(texts(&second), ["second answer"]);
    // The model saw the first turn in the second request.
    let requests = env.server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("first answer"));
    // A reload: a new page gets the whole session, then what comes next.
    let late = web.events(&id);
    let replayed = until(&late, "busy", |e| e["busy"] == false);
    assert_eq!(texts(&replayed), ["first answer"]);
    // The sidebar lists it under its workspace.
    let (_, listing) = web.request("GET", "/api/sessions", None, &[]);
    let listing: Value = serde_json::from_str(&listing).unwrap();
    assert_eq!(listing["workspaces"][0]["sessions"][0]["id"], id.as_str());
    assert_eq!(listing["workspaces"][0]["sessions"][0]["turns"], 2);
}

#[test]
fn an_escalation_is_allowed_once_and_one_denied_with_a_reason() {
    let env = TestEnv::new(vec![
        Turn::escalated("echo allowed-run"),
        Turn::text("ran it"),
        Turn::escalated("echo denied-run"),
        Turn::text("understood"),
    ]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "do it"}),
    );
    let asked = until(&events, "ask", |_| true);
    let ask = asked.last().unwrap();
    assert_eq!(ask["ask"], "approval");
    assert_eq!(
        ask["reason"],
        "escalate sandbox to danger-full-access: needs the whole machine"
    );
    web.post(
        &format!("/api/sessions/{id}/answer"),
        json!({"id": ask["id"], "answer": {"outcome": "once"}}),
    );
    until(&events, "busy", |e| e["busy"] == false);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "again"}),
    );
    let ask = until(&events, "ask", |_| true).pop().unwrap();
    web.post(
        &format!("/api/sessions/{id}/answer"),
        json!({"id": ask["id"], "answer": {"outcome": "deny", "reason": "not on this machine"}}),
    );
    until(&events, "busy", |e| e["busy"] == false);
    // Answering twice is an error the page reads, not a crash.
    let (status, _) = web.request(
        "POST",
        &format!("/api/sessions/{id}/answer"),
        Some(&json!({"id": ask["id"], "answer": {}})),
        &[],
    );
    assert_eq!(status, 404);
    let requests = env.server.requests();
    assert!(requests[1].tool_results()[0].contains("allowed-run"));
    assert!(
        requests[3]
            .tool_results()
            .last()
            .unwrap()
            .contains("the user said: not on this machine"),
        "{:?}",
        requests[3].tool_results()
    );
}

#[test]
fn stop_ends_the_running_turn_and_the_session_goes_on() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("still here")]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "wait"}),
    );
    until(&events, "view", |e| e["view"]["view"] == "step_start");
    // The hanging answer is the model's only once the request has reached it.
    assert!(env.server.wait_for_requests(1, LIMIT));
    // A second prompt while the turn runs is refused, saying why.
    let (status, body) = web.request(
        "POST",
        &format!("/api/sessions/{id}/prompt"),
        Some(&json!({"text": "more"})),
        &[],
    );
    assert_eq!(status, 409, "{body}");
    web.post(&format!("/api/sessions/{id}/stop"), json!({}));
    let stopped = until(&events, "turn_end", |_| true);
    assert_eq!(stopped.last().unwrap()["reason"]["kind"], "aborted");
    until(&events, "busy", |e| e["busy"] == false);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "and now"}),
    );
    let next = until(&events, "busy", |e| e["busy"] == false);
    assert_eq!(texts(&next), ["still here"]);
}

#[test]
fn the_mode_is_switched_between_turns_and_a_bad_one_named() {
    let env = TestEnv::new(vec![Turn::text("looked")]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    let opened = until(&events, "settings", |_| true);
    assert_eq!(opened.last().unwrap()["mode"], "workspace-write");
    let (status, body) = web.request(
        "POST",
        &format!("/api/sessions/{id}/settings"),
        Some(&json!({"permissionMode": "everything"})),
        &[],
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("read-only"), "{body}");
    web.post(
        &format!("/api/sessions/{id}/settings"),
        json!({"permissionMode": "read-only"}),
    );
    let switched = until(&events, "settings", |_| true);
    assert_eq!(switched.last().unwrap()["mode"], "read-only");
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "look"}),
    );
    let turn = until(&events, "busy", |e| e["busy"] == false);
    assert!(texts(&turn).contains(&"looked".to_owned()));
    // The session keeps the mode: its log says so, for a resume too.
    let modes: Vec<Value> = env
        .session_log()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["type"] == "permission/mode")
        .collect();
    assert_eq!(
        modes.last().unwrap()["data"]["mode"],
        "read-only",
        "{modes:?}"
    );
}

#[test]
fn a_session_is_forked_and_one_not_open_deleted() {
    let env = TestEnv::new(vec![Turn::text("headless answer")]);
    let out = env.run(dsh(), &["first task"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let web = Web::start(&env);
    let listing = |web: &Web| -> Vec<String> {
        let (_, body) = web.request("GET", "/api/sessions", None, &[]);
        let listing: Value = serde_json::from_str(&body).unwrap();
        listing["workspaces"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|w| w["sessions"].as_array().unwrap().clone())
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let original = listing(&web).pop().unwrap();
    let forked = web.post(
        "/api/sessions",
        json!({"cwd": env.ws_path(), "resume": original, "fork": true}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(forked, original);
    // The fork starts from a copy of the history.
    let copied = until(&web.events(&forked), "ready", |_| true);
    let seed = copied
        .iter()
        .find(|e| e["view"]["kind"] == "fork")
        .unwrap_or_else(|| panic!("no seed: {copied:#?}"));
    assert!(seed.to_string().contains("headless answer"), "{seed}");
    assert_eq!(listing(&web).len(), 2);
    let cwd = env.ws_path();
    let delete = |id: &str| {
        web.request(
            "POST",
            &format!("/api/sessions/{id}/delete"),
            Some(&json!({"cwd": cwd})),
            &[],
        )
    };
    // The fork is open here: it stays, until its run is closed here.
    assert_eq!(delete(&forked).0, 409);
    let closing = web.events(&forked);
    web.post(&format!("/api/sessions/{forked}/close"), json!({}));
    until(&closing, "closed", |_| true);
    assert_eq!(delete(&forked).0, 200);
    assert_eq!(
        web.request("GET", &format!("/api/sessions/{forked}/events"), None, &[])
            .0,
        404
    );
    assert_eq!(delete(&original).0, 200);
    assert!(listing(&web).is_empty());
    // A session that is not there is named.
    let (status, body) = delete(&original);
    assert_eq!(status, 422, "{body}");
}

#[test]
fn a_rewind_is_shown_then_done_and_the_conversation_goes_back() {
    let write = |path: &str, text: &str| {
        Turn::tool_call("write", json!({"file_path": path, "content": text}))
    };
    let env = TestEnv::new(vec![
        write("a.txt", "one\n"),
        Turn::text("wrote a"),
        write("b.txt", "two\n"),
        Turn::text("wrote b"),
        Turn::text("after the rewind"),
    ]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    for task in ["make a", "make b"] {
        web.post(&format!("/api/sessions/{id}/prompt"), json!({"text": task}));
        until(&events, "busy", |e| e["busy"] == false);
    }
    let (status, turns) = web.request("GET", &format!("/api/sessions/{id}/turns"), None, &[]);
    assert_eq!(status, 200, "{turns}");
    let turns: Value = serde_json::from_str(&turns).unwrap();
    assert_eq!(turns[1]["task"], "make b");
    assert_eq!(turns[1]["changes"][0]["path"], "b.txt");
    let rewind = format!("/api/sessions/{id}/rewind");
    // Shown first: nothing changes.
    let plan = web.post(&rewind, json!({"toTurn": 2}));
    assert_eq!(plan["plan"]["remove"], json!(["b.txt"]));
    assert!(env.ws_path().join("b.txt").exists());
    let done = web.post(&rewind, json!({"toTurn": 2, "apply": true}));
    assert!(!done["applied"].is_null(), "{done}");
    assert!(!env.ws_path().join("b.txt").exists());
    assert!(env.ws_path().join("a.txt").exists());
    until(&events, "rewound", |_| true);
    // The conversation went back too: the next request no longer holds turn 2.
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "and now"}),
    );
    until(&events, "busy", |e| e["busy"] == false);
    let last = env.server.requests().pop().unwrap();
    let sent = last.body.to_string();
    assert!(
        sent.contains("make a") && !sent.contains("make b"),
        "{sent}"
    );
    // A rewind without a target is named.
    let (status, body) = web.request("POST", &rewind, Some(&json!({})), &[]);
    assert_eq!(status, 400, "{body}");
}

/// The red team's finding: a process moves the workspace of a session open in `dsh web` and
/// links another folder in its place; a rewind then deleted and wrote that folder's files.
#[test]
fn a_workspace_replaced_by_a_link_is_neither_checkpointed_nor_rewound_into() {
    let write = |path: &str, text: &str| {
        Turn::tool_call("write", json!({"file_path": path, "content": text}))
    };
    let env = TestEnv::new(vec![
        write("a.txt", "one\n"),
        Turn::text("wrote a"),
        write("b.txt", "two\n"),
        Turn::text("wrote b"),
    ]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    for task in ["make a", "make b"] {
        web.post(&format!("/api/sessions/{id}/prompt"), json!({"text": task}));
        until(&events, "busy", |e| e["busy"] == false);
    }
    // Another folder, with files a rewind to turn 1 would remove or write, in its place.
    let ws = env.ws_path();
    let moved = ws.with_extension("moved");
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("b.txt"), "the victim's\n").unwrap();
    std::fs::write(victim.path().join("important.txt"), "keep me\n").unwrap();
    std::fs::rename(&ws, &moved).unwrap();
    std::os::unix::fs::symlink(victim.path(), &ws).unwrap();
    let rewind = format!("/api/sessions/{id}/rewind");
    let (status, body) = web.request(
        "POST",
        &rewind,
        // Accepting what differs, as a user shown a plan of relative names would.
        Some(&json!({"toTurn": 2, "apply": true,
            "acceptedOutside": ["a.txt", "b.txt", "important.txt"]})),
        &[],
    );
    let outcome = (status, body);
    // Put the workspace back before asserting, so that the test's folders are removed.
    std::fs::remove_file(&ws).unwrap();
    std::fs::rename(&moved, &ws).unwrap();
    assert_ne!(outcome.0, 200, "{}", outcome.1);
    assert!(
        outcome
            .1
            .contains("no longer the folder the run started in"),
        "{}",
        outcome.1
    );
    assert_eq!(
        std::fs::read_to_string(victim.path().join("b.txt")).unwrap(),
        "the victim's\n"
    );
    assert_eq!(
        std::fs::read_to_string(victim.path().join("important.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!victim.path().join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(ws.join("b.txt")).unwrap(), "two\n");
    dsh_testkit::fault_matrix(
        "attack",
        "the workspace of a session open in dsh web moved and a link to another folder put in its place, then a rewind",
        "refused: nothing in the other folder is read as the workspace, removed or written",
    );
}

#[test]
fn a_page_that_reconnects_gets_only_what_it_missed() {
    let env = TestEnv::new(vec![Turn::text("one"), Turn::text("two")]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "first"}),
    );
    let first = until(&events, "busy", |e| e["busy"] == false);
    let last = first.last().unwrap()["_id"].as_u64().unwrap();
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "second"}),
    );
    until(&events, "busy", |e| e["busy"] == false);
    let again = web.events_after(&id, last);
    let missed = until(&again, "busy", |e| e["busy"] == false);
    assert!(
        missed.iter().all(|e| e["_id"].as_u64() > Some(last)),
        "{missed:#?}"
    );
    assert_eq!(texts(&missed), ["two"]);
    // The finished answer's streamed pieces are not kept: its record draws it.
    let all = until(&web.events(&id), "busy", |e| {
        e["busy"] == false && e["_id"].as_u64() > Some(last)
    });
    assert!(!all.iter().any(|e| e["kind"] == "delta"), "{all:#?}");
}

#[test]
fn a_question_shows_its_call_and_is_withdrawn_when_the_turn_stops() {
    let env = TestEnv::new(vec![Turn::tool_call(
        "bash",
        json!({
            "command": "echo escalated",
            "description": "print a word",
            "sandbox_permissions": "danger-full-access",
            "justification": "trust me",
        }),
    )]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(&format!("/api/sessions/{id}/prompt"), json!({"text": "go"}));
    let ask = until(&events, "ask", |_| true).pop().unwrap();
    assert_eq!(ask["call"]["title"], "Run echo escalated");
    assert!(
        ask["call"]["arguments"]
            .as_str()
            .unwrap()
            .contains("echo escalated")
    );
    web.post(&format!("/api/sessions/{id}/stop"), json!({}));
    // The withdrawal and the turn's end come in either order (the run stops waiting as the
    // turn stops): read until both are seen.
    let withdrawn_and_ended = |events: &mpsc::Receiver<Value>| {
        let mut seen: Vec<Value> = Vec::new();
        while !(seen
            .iter()
            .any(|e| e["kind"] == "answered" && e["id"] == ask["id"])
            && seen
                .iter()
                .any(|e| e["kind"] == "busy" && e["busy"] == false))
        {
            seen.push(
                events
                    .recv_timeout(LIMIT)
                    .unwrap_or_else(|_| panic!("{seen:#?}")),
            );
        }
        seen
    };
    let seen = withdrawn_and_ended(&events);
    let withdrawn = (seen.iter())
        .find(|e| e["kind"] == "answered" && e["id"] == ask["id"])
        .unwrap();
    assert_eq!(withdrawn["withdrawn"], true);
    // A late page does not get a question that no longer waits: it gets its withdrawal.
    // (Waited for: it comes, or the read fails.)
    withdrawn_and_ended(&web.events(&id));
}

#[test]
fn mentions_complete_from_the_workspace_s_files() {
    let env = TestEnv::new(vec![]);
    env.write("src/main.rs", "fn main() {}\n");
    env.write("src/lib.rs", "\n");
    env.write(".hidden/secret.rs", "\n");
    let web = Web::start(&env);
    let id = web.open(&env);
    let (status, body) = web.request(
        "GET",
        &format!("/api/sessions/{id}/files?q=src%2Fma"),
        None,
        &[],
    );
    assert_eq!(status, 200, "{body}");
    let found: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(found["matches"][0], "src/main.rs");
    let (_, body) = web.request(
        "GET",
        &format!("/api/sessions/{id}/files?q=secret"),
        None,
        &[],
    );
    assert!(
        !body.contains("secret.rs"),
        "hidden files are left out: {body}"
    );
}

/// `/diff` shows git's view of the uncommitted changes, and runs none of the programs a
/// repository can name to show a diff (an external diff, a text conversion filter).
#[test]
fn the_workspace_diff_is_shown_and_runs_no_program_of_the_repository() {
    let env = TestEnv::new(vec![]);
    let ws = env.ws_path();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
    };
    env.write("notes.txt", "one\n");
    env.write("readme.md", "hello\n");
    git(&["init", "-q"]);
    git(&["add", "notes.txt", "readme.md"]);
    git(&["commit", "-q", "-m", "first"]);
    env.write("notes.txt", "one\nchanged\n");
    env.write("readme.md", "hello\nagain\n");
    // What a hostile repository could set up to run on a diff.
    let ran = ws.join("ran");
    let run = format!("touch {}", ran.display());
    git(&["config", "diff.external", &run]);
    git(&["config", "diff.x.textconv", &run]);
    // What a background job can write into .git/config before the user asks for the diff:
    // a file system monitor, and filters the attributes run on each file's bytes.
    git(&["config", "core.fsmonitor", &run]);
    git(&["config", "filter.x.clean", &run]);
    git(&["config", "filter.y.process", &run]);
    git(&["config", "filter.y.required", "true"]);
    env.write(".gitattributes", "*.txt diff=x filter=x\n*.md filter=y\n");
    let web = Web::start(&env);
    let id = web.open(&env);
    let (status, body) = web.request("GET", &format!("/api/sessions/{id}/diff"), None, &[]);
    assert_eq!(status, 200, "{body}");
    let diff: Value = serde_json::from_str(&body).unwrap();
    assert!(
        diff["diff"].as_str().unwrap().contains("+changed"),
        "{diff}"
    );
    assert!(!ran.exists(), "git ran a program the repository named");
    dsh_testkit::fault_matrix(
        "attack",
        "a repository (or a background job writing .git/config) names an external diff, a text conversion, clean and process filters and a file system monitor, then the user asks for /diff",
        "none runs; the diff is shown",
    );
}

/// `/NAME` sends a saved prompt, expanded on the server from the workspace's or dsh's home's
/// `prompts/`; a repository's prompt that links to a file elsewhere is never read (the attack:
/// typing its name would send that file to the model). Sessions are renamed from the page,
/// and the skills `/skills` lists come with the settings.
#[test]
fn saved_prompts_are_sent_and_a_session_renamed() {
    let env = TestEnv::new(vec![Turn::text("reviewed")]);
    env.write(".dsh/prompts/review.md", "Review $ARGUMENTS closely.\n");
    let secret = env.home.path().join("secret.txt");
    std::fs::write(&secret, "hunter2-secret").unwrap();
    std::os::unix::fs::symlink(&secret, env.ws_path().join(".dsh/prompts/leak.md")).unwrap();
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    let settings = until(&events, "settings", |_| true);
    assert!(settings.last().unwrap()["skills"].is_array());

    let (status, body) = web.request("GET", &format!("/api/sessions/{id}/prompts"), None, &[]);
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed["prompts"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(listed["prompts"][0]["name"], "review");

    let path = format!("/api/sessions/{id}/prompt");
    for (saved, status, says) in [
        ("leak", 404, "nor a saved prompt"),
        ("nope", 404, "/prompts the saved prompts"),
    ] {
        let (got, body) = web.request("POST", &path, Some(&json!({"saved": saved})), &[]);
        assert_eq!(got, status, "{body}");
        assert!(body.contains(says), "{body}");
        assert!(!body.contains("hunter2"), "{body}");
    }
    web.post(&path, json!({"saved": "review", "arguments": "src/lib.rs"}));
    until(&events, "busy", |e| e["busy"] == false);
    let sent = env.server.requests()[0].body.to_string();
    assert!(sent.contains("Review src/lib.rs closely."), "{sent}");
    assert!(!sent.contains("hunter2"));

    let rename = format!("/api/sessions/{id}/rename");
    let cwd = env.ws_path().to_string_lossy().into_owned();
    web.post(&rename, json!({"cwd": cwd, "title": "the review"}));
    let (_, listing) = web.request("GET", "/api/sessions", None, &[]);
    let listing: Value = serde_json::from_str(&listing).unwrap();
    assert_eq!(
        listing["workspaces"][0]["sessions"][0]["title"],
        "the review"
    );
    let (status, body) = web.request(
        "POST",
        &rename,
        Some(&json!({"cwd": cwd, "title": "a\u{7}bell"})),
        &[],
    );
    assert_eq!(status, 400, "{body}");
    let (status, body) = web.request(
        "POST",
        "/api/sessions/session-nope/rename",
        Some(&json!({"cwd": cwd, "title": "x"})),
        &[],
    );
    assert_eq!(status, 404, "{body}");
}

/// An image attached in the composer is stored, shown from the session's own copy, and sent
/// with the message to a model that takes images; a model that does not is never sent one.
#[test]
fn an_attached_image_goes_to_an_image_model_with_the_message() {
    let env = TestEnv::new(vec![Turn::text("a dot")]);
    let web = Web::start_with(&env, &["--model", "deepseek-v4-flash-vision-exp"]);
    let id = web.open(&env);
    let events = web.events(&id);
    let settings = until(&events, "settings", |_| true);
    assert_eq!(settings.last().unwrap()["imageInput"], true);

    let images = format!("/api/sessions/{id}/images");
    let (status, _, body) = web.request_bytes("POST", &images, b"not an image", &[]);
    assert_eq!(status, 422, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("not an image dsh takes"));
    let (status, _, body) = web.request_bytes("POST", &images, &crate::headless::DOT_PNG, &[]);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let image: Value = serde_json::from_slice(&body).unwrap();
    let attachment = image["attachmentId"].as_str().unwrap().to_owned();
    assert!(attachment.starts_with("sha256:"), "{image}");
    assert_eq!(
        (image["width"].clone(), image["height"].clone()),
        (json!(1), json!(1))
    );
    assert!(
        image.get("path").is_none(),
        "the page is never told where files are"
    );

    // Served from the session's copy, to this session's pages only.
    let (status, head, served) =
        web.request_bytes("GET", &format!("{images}/{attachment}"), b"", &[]);
    assert_eq!(status, 200);
    assert!(
        head.to_lowercase().contains("content-type: image/png"),
        "{head}"
    );
    assert_eq!(served, crate::headless::DOT_PNG);
    let (status, _, _) = web.request_bytes("GET", &format!("{images}/sha256:00"), b"", &[]);
    assert_eq!(status, 404);

    let path = format!("/api/sessions/{id}/prompt");
    let (status, body) = web.request(
        "POST",
        &path,
        Some(&json!({"text": "what is it?", "images": ["sha256:00"]})),
        &[],
    );
    assert_eq!(status, 404, "an image never attached: {body}");
    web.post(
        &path,
        json!({"text": "what is it?", "images": [attachment]}),
    );
    let turn = until(&events, "busy", |e| e["busy"] == false);
    let shown = turn.iter().find(|e| e["view"]["view"] == "user").unwrap();
    assert_eq!(
        shown["view"]["images"][0]["attachmentId"],
        attachment.as_str()
    );
    let requests = env.server.requests();
    let messages = requests[0].messages();
    let user = messages.last().unwrap();
    assert_eq!(
        user["content"][0],
        json!({"type": "text", "text": "what is it?"})
    );
    let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );

    // A text model's session takes none.
    let text_only = Web::start(&env);
    let other = text_only.open(&env);
    let (status, _, body) = text_only.request_bytes(
        "POST",
        &format!("/api/sessions/{other}/images"),
        &crate::headless::DOT_PNG,
        &[],
    );
    assert_eq!(status, 422);
    assert!(String::from_utf8_lossy(&body).contains("does not take images"));
}

/// The page asks for a key only when none is found; one it sends is checked before it is
/// saved, and a refused one is said so.
#[test]
fn a_key_is_asked_for_only_when_none_is_found_and_checked_before_it_is_saved() {
    let env = TestEnv::new(vec![]);
    let web = Web::start(&env);
    let (status, body) = web.request("GET", "/api/key", None, &[]);
    assert_eq!(status, 200, "{body}");
    let wanted: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(wanted["found"], true, "the environment has one: {body}");
    assert_eq!(wanted["variable"], "DEEPSEEK_API_KEY");
    // The provider quotes the key it refused: the dialog is told nothing of it.
    let (status, body) = web.request(
        "POST",
        "/api/key",
        Some(&json!({"key": "refused-key-typed-4Kq9Zx"})),
        &[],
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("refused the API key"), "{body}");
    assert!(body.contains("[REDACTED]"), "{body}");
    assert!(!body.contains("4Kq9Zx"), "the typed key was shown: {body}");
    assert!(!env.home.path().join("credentials").exists());
    // Another site's page cannot set one.
    let (status, _) = web.request(
        "POST",
        "/api/key",
        Some(&json!({"key": "sk-attacker"})),
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(status, 403);
    web.post("/api/key", json!({"key": "sk-good"}));
    let saved = std::fs::read_to_string(env.home.path().join("credentials")).unwrap();
    assert!(saved.contains("DEEPSEEK_API_KEY='sk-good'"), "{saved}");
    // Off loopback the key would travel in plain HTTP: the page may not send one.
    let open = Web::start_with(&env, &["--host", "0.0.0.0"]);
    let (status, body) = open.request(
        "POST",
        "/api/key",
        Some(&json!({"key": "sk-over-the-network"})),
        &[],
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("dsh login"), "{body}");
}

/// The token is taken from a request's address only by the event stream (a browser cannot give
/// it a header); on every other route, reading or changing, a token in the query opens nothing
/// (it would be written down wherever addresses are: history, logs, a Referer).
#[test]
fn a_token_in_the_query_opens_only_the_event_stream() {
    let env = TestEnv::new(vec![Turn::text("streamed")]);
    let web = Web::start(&env);
    let id = web.open(&env);
    let none = [("Authorization", "")];
    let token = format!("token={}", web.token);
    for (method, path) in [
        ("GET", "/api/sessions".to_owned()),
        ("GET", "/api/key".to_owned()),
        ("GET", format!("/api/sessions/{id}/turns")),
        ("GET", format!("/api/sessions/{id}/diff")),
        ("POST", "/api/key".to_owned()),
        ("POST", format!("/api/sessions/{id}/prompt")),
        ("POST", format!("/api/sessions/{id}/close")),
    ] {
        let body = json!({"text": "from the query", "key": "sk-from-the-query"});
        let (status, answer) = web.request(method, &format!("{path}?{token}"), Some(&body), &none);
        assert_eq!(status, 401, "{method} {path}: {answer}");
    }
    assert!(!env.home.path().join("credentials").exists());
    assert_eq!(env.server.requests().len(), 0, "no turn was started");
    // The event stream takes it, and the session is still there to stream.
    let events = web.events(&id);
    web.post(&format!("/api/sessions/{id}/prompt"), json!({"text": "hi"}));
    let seen = until(&events, "view", |e| e["view"]["view"] == "answer");
    assert_eq!(texts(&seen), ["streamed"]);
    dsh_testkit::fault_matrix(
        "attack",
        "dsh web: the token given in the query of an API route other than the event stream",
        "refused (401); only the event stream takes it there",
    );
}

/// The page that sends the browser in (`--open`) holds the token: it is gone once `dsh web`
/// ends, however it is ended, so nothing on disk outlasts the server with its token.
#[test]
fn the_token_page_is_removed_however_dsh_web_ends() {
    let bin = tempfile::tempdir().unwrap();
    // The "browser": notes the page it was given and its text, then ends dsh web as a person
    // would (its parent, dsh, is $PPID).
    let opener = bin.path().join("xdg-open");
    std::fs::write(
        &opener,
        "#!/bin/sh\ncp \"$1\" \"$RECORD.page\"\nprintf %s \"$1\" > \"$RECORD.tmp\"\n\
         mv \"$RECORD.tmp\" \"$RECORD\"\nkill -\"$SIG\" \"$PPID\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for signal in ["INT", "TERM", "HUP"] {
        let env = TestEnv::new(vec![]);
        let record = env.home.path().join("opened");
        let mut child = env
            .command(dsh())
            .args(["web", "--port", "0", "--open"])
            .env("PATH", &path)
            .env("SIG", signal)
            .env("RECORD", &record)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.wait().unwrap();
        let page = std::fs::read_to_string(&record).unwrap();
        let held = std::fs::read_to_string(record.with_extension("page")).unwrap();
        assert!(held.contains("#token="), "the page sent the token: {held}");
        assert!(
            !std::path::Path::new(&page).exists(),
            "SIG{signal}: {page} outlived dsh web"
        );
    }
    dsh_testkit::fault_matrix(
        "attack",
        "dsh web --open ended by SIGINT, SIGTERM or SIGHUP: the page holding the token read after it",
        "the page is removed on every exit",
    );
}

/// The page may not have a key sent to an address that only looks like this machine: the key
/// would go over plain HTTP to another host.
#[test]
fn lookalike_addresses_get_no_key_from_the_page() {
    let outside = crate::outside::Outside::start();
    for base in crate::outside::LOOKALIKES {
        let env = TestEnv::new(vec![]);
        let mut command = env.command(dsh());
        command
            .env_remove("DEEPSEEK_API_KEY")
            .env("DEEPSEEK_BASE_URL", base)
            .args(["web", "--port", "0"]);
        outside.route(&mut command);
        let web = Web::spawn(command);
        let (status, body) = web.request("GET", "/api/key", None, &[]);
        assert_eq!(status, 200, "{body}");
        let wanted: Value = serde_json::from_str(&body).unwrap();
        assert!(
            wanted["problem"]
                .as_str()
                .is_some_and(|p| p.contains("plain http://")),
            "{base}: {body}"
        );
        let (status, body) = web.request(
            "POST",
            "/api/key",
            Some(&json!({"key": "sk-typed-in-the-page"})),
            &[],
        );
        assert_eq!(status, 403, "{base}: {body}");
        assert!(body.contains("not this machine"), "{base}: {body}");
        assert!(!env.home.path().join("credentials").exists());
    }
    assert!(
        outside.requests().is_empty(),
        "sent out: {:?}",
        outside.requests()
    );
    dsh_testkit::fault_matrix(
        "attack",
        "dsh web's key dialog with the provider at an address that only looks like this machine (127.0.0.1.evil.example, 127.0.0.1:1@evil.example, localhost.evil.example, [::1]:1@evil.example)",
        "refused before the key is sent anywhere",
    );
}

#[test]
fn a_workflow_that_logs_without_end_leaves_dsh_web_small() {
    let env = TestEnv::new(vec![
        crate::tui::flooding_workflow(),
        Turn::text("flood over"),
    ]);
    env.write(".dsh/config.toml", crate::tui::FLOOD_CONFIG);
    let web = Web::start(&env);
    let id = web.open(&env);
    let events = web.events(&id);
    web.post(
        &format!("/api/sessions/{id}/prompt"),
        json!({"text": "flood"}),
    );
    let seen = until(&events, "busy", |e| e["busy"] == false);
    assert_eq!(texts(&seen), ["flood over"]);
    // The page was shown the log as it came, and told where it was cut.
    let shown: String = (seen.iter())
        .filter(|e| e["kind"] == "output")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(shown.contains("[log output cut"), "{}", shown.len());
    let peak = dsh_testkit::peak_rss_mib(web.child.id());
    assert!(peak < 100, "dsh web held {peak} MiB at its peak");
    dsh_testkit::fault_matrix(
        "attack",
        "a workflow logs 4,000 characters a line without end (dsh web, a page connected)",
        "dsh stays under 100 MiB: lines cut, the log budgeted, the queue bounded",
    );
}

/// `dsh web --app` with no browser on PATH says what it looked for and serves nothing; with
/// a Chromium-family one, that browser is started in its app mode on a page only the user can
/// read (the token is on no command line).
#[test]
fn the_app_window_is_a_chromium_app_or_a_clear_error() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new(vec![]);
    let bin = env.ws.path().join("no-browsers");
    std::fs::create_dir_all(&bin).unwrap();
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .args(["web", "--app", "--port", "0"])
            .env("PATH", &bin),
    );
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(
        out.stderr.contains("no browser to open the app in"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("chromium"), "{}", out.stderr);

    // A stand-in chromium writes down how it was started.
    let called = env.ws.path().join("called.txt");
    let chromium = bin.join("chromium");
    std::fs::write(
        &chromium,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}.new'\nmv '{0}.new' '{0}'\n",
            called.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&chromium, std::fs::Permissions::from_mode(0o755)).unwrap();
    let system_path = std::env::var("PATH").unwrap_or_default();
    let mut web = env
        .command(dsh())
        .args(["web", "--app", "--port", "0"])
        .env("PATH", format!("{}:{system_path}", bin.display()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(web.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let (_, token) = line.trim().split_once("#token=").unwrap();
    let (done, waited) = mpsc::channel();
    let watched = called;
    std::thread::spawn(move || {
        // The receiving end's timeout bounds the wait.
        while !watched.exists() {
            std::thread::sleep(dsh_testkit::POLL);
        }
        let _ = done.send(std::fs::read_to_string(&watched).unwrap());
    });
    let args = waited
        .recv_timeout(Duration::from_secs(30))
        .expect("chromium was started");
    web.kill().unwrap();
    web.wait().unwrap();
    let page = args.trim().strip_prefix("--app=file://").expect(&args);
    assert!(
        !args.contains(token),
        "the token is on a command line: {args}"
    );
    assert!(page.ends_with(".html"), "{args}");
}
