//! `dsh app-server` attacked as an outsider would: bytes that are not text, a line far over
//! any message's size, answers to requests never asked and ids reused, host tools that take a
//! built-in's name or bring a schema that is not one, secrets in a host tool's result, and
//! session ids that climb out of the sessions folder. Each case is recorded in the fault
//! matrix (docs/reliability.md) once its assertions held.

use std::io::Write;

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::app_server::Client;

fn attack(case: &str, outcome: &str) {
    dsh_testkit::fault_matrix("attack", case, outcome);
}

fn lookup_tool() -> Value {
    json!([{"name": "lookup", "description": "Looks a key up",
        "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}}])
}

/// Reads until a request, which must come after its call's `tool_call` event.
fn next_request(client: &mut Client) -> Value {
    let mut calls = Vec::new();
    loop {
        let line = client.read();
        if line["type"] == "tool_call" {
            calls.push(line["callId"].clone());
        }
        if line["type"] == "request" {
            assert!(
                calls.contains(&line["callId"]),
                "{line} came before its tool_call"
            );
            return line;
        }
    }
}

/// Reads until a response.
fn next_response(client: &mut Client) -> Value {
    loop {
        let line = client.read();
        if line["type"] == "response" {
            return line;
        }
    }
}

/// The peak memory of process `pid`, in bytes (VmHWM).
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[test]
fn a_line_that_is_not_utf8_is_refused_and_the_session_goes_on() {
    let env = TestEnv::new(vec![Turn::text("still here")]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open"}));
    let stdin = client.stdin.as_mut().unwrap();
    stdin
        .write_all(b"{\"type\":\"send\",\"text\":\"\xff\xfe\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let refused = client.read();
    assert_eq!(refused["error"]["code"], "BAD_INPUT", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("UTF-8"),
        "{refused}"
    );
    let (done, _) = client.call(json!({"type": "send", "text": "hello"}));
    assert_eq!(done["result"]["text"], "still here", "{done}");
    assert!(client.quit().success());
    attack(
        "dsh app-server is sent a line that is not UTF-8",
        "refused (BAD_INPUT); the server and its session go on",
    );
}

#[test]
fn a_host_tools_answer_of_100_mb_is_refused_in_bounded_memory() {
    let env = TestEnv::new(vec![
        Turn::tool_call("lookup", json!({"key": "big"})),
        Turn::text("done"),
    ]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open", "tools": lookup_tool()}));
    let id = client.send(json!({"type": "send", "text": "look it up"}));
    let asked = next_request(&mut client);
    // 100 MB of output in one line, written in pieces, as a tool returning it would send it.
    let head = format!(
        "{{\"type\":\"answer\",\"id\":\"huge\",\"request\":{},\"output\":\"",
        asked["id"]
    );
    let stdin = client.stdin.as_mut().unwrap();
    stdin.write_all(head.as_bytes()).unwrap();
    let piece = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        stdin.write_all(&piece).unwrap();
    }
    stdin.write_all(b"\"}\n").unwrap();
    stdin.flush().unwrap();
    let refused = next_response(&mut client);
    assert_eq!(refused["error"]["code"], "BAD_INPUT", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MiB"),
        "{refused}"
    );
    let peak = peak_memory(client.child.id());
    assert!(
        peak < 80 << 20,
        "dsh app-server peaked at {} MiB reading a 100 MB line",
        peak >> 20
    );
    // The call still waits: the client answers it within the limit.
    client.send(json!({"type": "answer", "request": asked["id"], "error": "too big to send"}));
    let (done, _) = client.until(id, &mut |_| None);
    assert_eq!(done["result"]["text"], "done", "{done}");
    let seen = env.server.requests()[1].tool_results();
    assert!(seen[0].contains("too big to send"), "{seen:?}");
    assert!(client.quit().success());
    attack(
        "dsh app-server is sent a host tool's answer of 100 MB in one line",
        "refused past 16 MiB (BAD_INPUT), read in bounded memory; the call still waits for an answer",
    );
}

const TOKEN: &str = "tok_live_5a4b3c2d1e0f";

#[test]
fn a_secret_in_a_host_tools_result_or_error_is_redacted_where_it_leaves() {
    let env = TestEnv::new(vec![
        Turn::tool_call("lookup", json!({"key": "output"})),
        Turn::tool_call("lookup", json!({"key": "error"})),
        Turn::text("done"),
    ]);
    env.write(".env", &format!("PAYMENT_API_TOKEN={TOKEN}\n"));
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open", "tools": lookup_tool()}));
    let id = client.send(json!({"type": "send", "text": "look them up"}));
    let (done, _) = client.until(id, &mut |asked| {
        Some(match asked["input"]["key"].as_str() {
            Some("output") => json!({"output": format!("the key is {TOKEN}")}),
            _ => json!({"error": format!("failed with {TOKEN} in hand")}),
        })
    });
    assert_eq!(done["result"]["text"], "done", "{done}");
    let results: Vec<String> = (client.seen.iter())
        .filter(|l| l["type"] == "tool_result")
        .map(Value::to_string)
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    for result in &results {
        assert!(!result.contains(TOKEN), "{result}");
        assert!(result.contains("[REDACTED]"), "{result}");
    }
    let sent = serde_json::to_string(&env.server.requests()[2].body).unwrap();
    assert!(
        !sent.contains(TOKEN) && sent.contains("[REDACTED]"),
        "{sent}"
    );
    let log = env.session_logs();
    assert!(!log.contains(TOKEN), "the session log holds the token");
    assert!(client.quit().success());
    attack(
        "a host tool returns a .env token in its output and in its error",
        "redacted in the tool_result events, the next request and the log",
    );
}

#[test]
fn host_tools_that_take_a_builtins_name_or_bring_no_schema_are_refused() {
    let env = TestEnv::new(vec![]);
    let mut client = Client::start(&env, &[]);
    let object = json!({"type": "object"});
    let names = [
        "Bash",
        "READ",
        "Write",
        "MCP__srv__tool",
        "mcp__srv__tool",
        "bash",
        "../x",
        "",
    ];
    for name in names {
        let tools = json!([{"name": name, "description": "mine", "inputSchema": object}]);
        let refused = client.refused(json!({"type": "open", "tools": tools}));
        assert_eq!(refused["error"]["code"], "BAD_REQUEST", "{name}: {refused}");
    }
    let schemas = [
        json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}),
        json!({"type": "object", "properties": "a"}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "$ref": "https://schemas.example/tool.json"}),
        json!({"$schema": "https://schemas.example/meta.json", "type": "object"}),
        json!({"type": "object", "properties": {"a": {"pattern": "("}}}),
        json!({"type": "array"}),
        json!("object"),
    ];
    for schema in schemas {
        let tools = json!([{"name": "lookup", "description": "mine", "inputSchema": schema}]);
        let refused = client.refused(json!({"type": "open", "tools": tools}));
        assert_eq!(
            refused["error"]["code"], "BAD_REQUEST",
            "{schema}: {refused}"
        );
    }
    // Nothing opened: a send has no session.
    let none = client.refused(json!({"type": "send", "text": "hi"}));
    assert_eq!(none["error"]["code"], "NO_SESSION", "{none}");
    assert!(client.quit().success());
    attack(
        "a host tool named like a built-in in another case (Bash, READ, MCP__), or with a schema that is not JSON Schema (a bad type, a remote $ref or $schema, a bad pattern)",
        "refused (BAD_REQUEST) and nothing opened; no other document fetched",
    );
}

#[test]
fn session_ids_that_climb_out_of_the_sessions_folder_are_refused() {
    let env = TestEnv::new(vec![]);
    let mut client = Client::start(&env, &[]);
    for id in [
        "../../etc/passwd",
        "..",
        "/etc/passwd",
        "session-a/../../x",
        "a\u{0}b",
    ] {
        for how in ["resume", "fork"] {
            let refused = client.refused(json!({"type": "open", how: id}));
            let code = refused["error"]["code"].as_str().unwrap_or_default();
            assert!(
                ["SESSION_NOT_FOUND", "BAD_REQUEST", "CONFIG"].contains(&code),
                "{how} {id:?}: {refused}"
            );
        }
    }
    assert!(client.quit().success());
    attack(
        "dsh app-server asked to resume or fork a session id that climbs out of the sessions folder (.., an absolute path, a NUL)",
        "refused before any file is opened",
    );
}

#[test]
fn answers_never_asked_and_reused_ids_change_nothing() {
    let env = TestEnv::new(vec![
        Turn::tool_call("lookup", json!({"key": "a"})),
        Turn::text("done"),
    ]);
    let mut client = Client::start(&env, &[]);
    client.call(json!({"type": "open", "tools": lookup_tool()}));
    let early = client.refused(json!({"type": "answer", "request": "ask-1", "output": "early"}));
    assert_eq!(early["error"]["code"], "UNKNOWN_REQUEST", "{early}");
    let id = client.send(json!({"type": "send", "text": "look it up"}));
    let asked = next_request(&mut client);
    // Ids no response may carry are refused, not echoed.
    for odd in ["1.5", "{\"deep\":[[1]]}", "[1,2]", "true"] {
        client.write(&format!(r#"{{"type":"interrupt","id":{odd}}}"#));
        let refused = next_response(&mut client);
        assert_eq!(refused["error"]["code"], "BAD_REQUEST", "{refused}");
        assert_eq!(refused["id"], Value::Null, "{refused}");
    }
    // Answers to requests never sent, with the turn's own id reused.
    for request in ["ask-2", "ask-0", "ask-1 ", "approval"] {
        let line = json!({"type": "answer", "id": id, "request": request, "output": "forged"});
        client.write(&line.to_string());
        let refused = next_response(&mut client);
        assert_eq!(refused["error"]["code"], "UNKNOWN_REQUEST", "{refused}");
        assert_eq!(refused["id"], id, "{refused}");
    }
    client.send(json!({"type": "answer", "request": asked["id"], "output": "real"}));
    let (done, _) = client.until(id, &mut |_| None);
    assert_eq!(done["result"]["text"], "done", "{done}");
    let again = client.refused(json!({"type": "answer", "request": asked["id"], "output": "x"}));
    assert_eq!(again["error"]["code"], "UNKNOWN_REQUEST", "{again}");
    let seen = env.server.requests()[1].tool_results();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("real") && !seen[0].contains("forged"),
        "{seen:?}"
    );
    assert!(client.quit().success());
    attack(
        "a host tool's call: its request could reach the client before the call's tool_call event",
        "the tool_call event always first (the run gives way once before it hands the call over)",
    );
    attack(
        "answers to requests never sent (before any turn, forged ids, one already answered), with a message id reused, and ids no response may carry (1.5, an object, a list)",
        "each refused (UNKNOWN_REQUEST, BAD_REQUEST with a null id); only the real answer reaches the model",
    );
}

#[test]
fn a_client_that_writes_20000_messages_before_reading_one_is_answered_in_order() {
    let env = TestEnv::new(vec![]);
    let mut client = Client::start(&env, &[]);
    // Written from another thread: the server stops reading once its answers fill the pipe
    // nobody reads, so this side's writes wait too until the answers are read below.
    let mut stdin = client.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for id in 1..=20_000u32 {
            let line = format!("{{\"type\":\"interrupt\",\"id\":{id}}}\n");
            stdin.write_all(line.as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    for id in 1..=20_000u32 {
        let answer = client.read();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["interrupted"], false, "{answer}");
    }
    client.stdin = Some(writer.join().unwrap());
    let peak = peak_memory(client.child.id());
    assert!(
        peak < 80 << 20,
        "dsh app-server peaked at {} MiB",
        peak >> 20
    );
    assert!(client.quit().success());
    attack(
        "a client writes 20,000 messages and reads no answer until it has written them all",
        "the server waits on its output and holds no queue beyond a pipe; each answered, in order",
    );
}
