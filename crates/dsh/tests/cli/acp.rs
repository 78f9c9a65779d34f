//! `dsh acp` driven over its stdio by a client written here (JSON-RPC, one message per line),
//! as an editor drives it, against the scripted model server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// How long a test waits for one message before it fails (a limit, never a delay).
const LIMIT: Duration = Duration::from_secs(60);

/// What the client does with a `session/request_permission`: the option to pick, or
/// `None` to answer that the prompt was cancelled.
type Answer = dyn FnMut(&Value) -> Option<String>;

struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: mpsc::Receiver<Value>,
    next_id: u64,
    /// Every `session/update` received so far, its `update` object.
    updates: Vec<Value>,
    /// Every permission request received so far, its params.
    asked: Vec<Value>,
    /// The editor's open buffers, by absolute path, when it offers its file system: what
    /// `fs/read_text_file` answers and `fs/write_text_file` changes (never the disk).
    buffers: Option<std::collections::BTreeMap<String, String>>,
    /// Every `fs/*` request received so far: the method and the path.
    file_requests: Vec<(String, String)>,
    /// Everything received, in order: `update <kind> <toolCallId>` or the method of a
    /// request.
    order: Vec<String>,
    /// When the editor shows forms: what it fills into every `elicitation/create` form.
    forms: Option<Value>,
    /// Every `elicitation/create` received so far, its params.
    elicited: Vec<Value>,
}

impl Editor {
    fn start(env: &TestEnv, args: &[&str]) -> Editor {
        Editor::launch(env, args, None, None)
    }

    /// An editor that shows forms (elicitation), answering each with `filled`.
    fn with_forms(env: &TestEnv, filled: Value) -> Editor {
        Editor::launch(env, &[], None, Some(filled))
    }

    /// An editor that offers its file system, holding `buffers` open.
    fn with_buffers(env: &TestEnv, buffers: &[(&str, &str)]) -> Editor {
        let open = buffers
            .iter()
            .map(|(path, text)| {
                let path = env.ws_path().join(path).display().to_string();
                (path, (*text).to_owned())
            })
            .collect();
        Editor::launch(env, &[], Some(open), None)
    }

    fn launch(
        env: &TestEnv,
        args: &[&str],
        buffers: Option<std::collections::BTreeMap<String, String>>,
        forms: Option<Value>,
    ) -> Editor {
        let offers_files = buffers.is_some();
        let mut child = env
            .command(dsh())
            .arg("acp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut editor = Editor {
            child,
            stdin,
            messages,
            next_id: 0,
            updates: Vec::new(),
            asked: Vec::new(),
            buffers,
            file_requests: Vec::new(),
            order: Vec::new(),
            elicited: Vec::new(),
            forms,
        };
        let fs = json!({"readTextFile": offers_files, "writeTextFile": offers_files});
        let mut capabilities = json!({"fs": fs});
        if editor.forms.is_some() {
            capabilities["elicitation"] = json!({"form": {}});
        }
        let init = editor.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        );
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        editor
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response; permission requests on the way are
    /// refused as cancelled.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id, &mut |_| None)
    }

    /// Reads until the response to `id`, keeping updates and answering permission requests.
    fn response(&mut self, id: u64, answer: &mut Answer) -> Value {
        loop {
            let message = self
                .messages
                .recv_timeout(LIMIT)
                .expect("a message from dsh acp");
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            let update = &message["params"]["update"];
            self.order.push(match message["method"].as_str() {
                Some("session/update") => format!(
                    "update {} {}",
                    update["sessionUpdate"].as_str().unwrap_or_default(),
                    update["toolCallId"].as_str().unwrap_or_default()
                ),
                other => other.unwrap_or_default().to_owned(),
            });
            match message["method"].as_str() {
                Some("session/update") => self.updates.push(update.clone()),
                Some("session/request_permission") => {
                    self.asked.push(message["params"].clone());
                    let outcome = match answer(&message["params"]) {
                        Some(option) => json!({"outcome": "selected", "optionId": option}),
                        None => json!({"outcome": "cancelled"}),
                    };
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}});
                    self.send(&reply);
                }
                Some("elicitation/create") => {
                    self.elicited.push(message["params"].clone());
                    let filled = self
                        .forms
                        .clone()
                        .expect("a form sent to an editor without forms");
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                        "result": {"action": "accept", "content": filled}});
                    self.send(&reply);
                }
                Some(method @ ("fs/read_text_file" | "fs/write_text_file")) => {
                    let params = &message["params"];
                    let path = params["path"].as_str().unwrap().to_owned();
                    self.file_requests.push((method.to_owned(), path.clone()));
                    let buffers = self
                        .buffers
                        .as_mut()
                        .expect("fs request to an editor without fs");
                    let outcome = if method == "fs/read_text_file" {
                        match buffers.get(&path) {
                            Some(text) => json!({"result": {"content": text}}),
                            None => json!({"error": {"code": -32002, "message": "not open"}}),
                        }
                    } else {
                        buffers.insert(path, params["content"].as_str().unwrap().to_owned());
                        json!({"result": {}})
                    };
                    let mut reply = json!({"jsonrpc": "2.0", "id": message["id"]});
                    reply
                        .as_object_mut()
                        .unwrap()
                        .extend(outcome.as_object().unwrap().clone());
                    self.send(&reply);
                }
                _ => panic!("unexpected message: {message}"),
            }
        }
    }

    fn new_session(&mut self, env: &TestEnv) -> String {
        let cwd = env.ws_path();
        let opened = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        opened["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {opened}"))
            .to_owned()
    }

    fn prompt(&mut self, session: &str, text: &str, answer: &mut Answer) -> Value {
        let id = self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        self.response(id, answer)
    }

    /// The updates of one kind (`tool_call`, `agent_message_chunk`, ...).
    fn updates_of(&self, kind: &str) -> Vec<&Value> {
        (self.updates.iter())
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    fn text_of(&self, kind: &str) -> String {
        (self.updates_of(kind).iter())
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    /// Closes stdin, as an editor does when it quits, and waits for the agent to exit.
    fn quit(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }
}

#[test]
fn a_prompt_streams_reasoning_tool_calls_with_diffs_the_plan_and_the_answer() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "notes.txt"})).reasoning("Look first."),
        Turn::tool_call(
            "edit",
            json!({"file_path": "notes.txt", "old_string": "helo", "new_string": "hello"}),
        ),
        Turn::tool_call(
            "todo_write",
            json!({"todos": [{"content": "fix the typo", "status": "completed"}]}),
        ),
        Turn::text("Fixed the typo.").usage(120, 30, 0),
    ]);
    env.write("notes.txt", "helo world\n");
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);

    let done = editor.prompt(&session, "Fix the typo in notes.txt", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        done["result"]["usage"]["totalTokens"].as_u64().unwrap() > 0,
        "{done}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("notes.txt")).unwrap(),
        "hello world\n"
    );

    assert_eq!(editor.text_of("agent_thought_chunk"), "Look first.");
    assert_eq!(editor.text_of("agent_message_chunk"), "Fixed the typo.");
    let notes = env.ws_path().join("notes.txt");
    let calls = editor.updates_of("tool_call");
    let titles: Vec<&str> = calls.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        ["Read notes.txt", "Edit notes.txt", "Update the plan"]
    );
    assert_eq!(calls[0]["kind"], "read");
    assert_eq!(calls[0]["status"], "in_progress");
    assert_eq!(calls[0]["locations"], json!([{"path": notes}]));
    assert_eq!(
        calls[1]["content"],
        json!([{"type": "diff", "path": notes, "oldText": "helo", "newText": "hello"}])
    );
    let results = editor.updates_of("tool_call_update");
    let statuses: Vec<&Value> = results.iter().map(|r| &r["status"]).collect();
    assert_eq!(statuses, ["completed", "completed", "completed"]);
    assert_eq!(results[0]["toolCallId"], calls[0]["toolCallId"]);
    assert!(
        results[0]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("helo world"),
        "{}",
        results[0]
    );
    let plan = editor.updates_of("plan");
    assert_eq!(
        plan[0]["entries"],
        json!([{"content": "fix the typo", "priority": "medium", "status": "completed"}])
    );
    // The context in use after each step, against the model's window.
    let usage = editor.updates_of("usage_update");
    assert_eq!(usage.len(), 4);
    assert_eq!(usage[3]["used"], 150);
    assert!(usage[3]["size"].as_u64().unwrap() > 0);
    assert!(editor.quit().success());
}

#[test]
fn an_escalation_is_a_permission_request_the_client_answers() {
    let env = TestEnv::new(vec![
        Turn::escalated("echo allowed-run"),
        Turn::text("ran it"),
        Turn::escalated("echo denied-run"),
        Turn::text("understood"),
    ]);
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);

    let done = editor.prompt(&session, "do it", &mut |asked| {
        let options: Vec<&str> = (asked["options"].as_array().unwrap().iter())
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
        Some("allow-once".into())
    });
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let asked = &editor.asked[0].clone();
    assert_eq!(
        asked["toolCall"]["toolCallId"],
        editor.updates_of("tool_call")[0]["toolCallId"]
    );
    assert!(env.server.requests()[1].tool_results()[0].contains("allowed-run"));
    // The client knows the call before it is asked about it, and the call keeps its title.
    let call_id = asked["toolCall"]["toolCallId"].as_str().unwrap();
    let announced = (editor.order.iter())
        .position(|m| m == &format!("update tool_call {call_id}"))
        .unwrap();
    let request = (editor.order.iter())
        .position(|m| m == "session/request_permission")
        .unwrap();
    assert!(announced < request, "{:?}", editor.order);
    assert!(asked["toolCall"].get("title").is_none(), "{asked}");
    assert_eq!(
        asked["toolCall"]["content"][0]["content"]["text"],
        "escalate sandbox to danger-full-access: needs the whole machine"
    );

    let done = editor.prompt(&session, "again", &mut |_| Some("reject".into()));
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let denied = env.server.requests()[3].tool_results();
    assert!(
        denied
            .last()
            .unwrap()
            .contains("the user rejected escalating this command"),
        "{denied:?}"
    );
    let results = editor.updates_of("tool_call_update");
    assert_eq!(results.last().unwrap()["status"], "failed");
    assert!(editor.quit().success());
}

#[test]
fn cancel_stops_the_turn_and_the_session_goes_on() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("Still here.")]);
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    let id = editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait forever"}]}),
    );
    assert!(env.server.wait_for_requests(1, LIMIT));
    editor.notify("session/cancel", json!({"sessionId": session}));
    let stopped = editor.response(id, &mut |_| None);
    assert_eq!(stopped["result"]["stopReason"], "cancelled", "{stopped}");

    let next = editor.prompt(&session, "are you there?", &mut |_| None);
    assert_eq!(next["result"]["stopReason"], "end_turn");
    assert_eq!(editor.text_of("agent_message_chunk"), "Still here.");
    assert!(env.session_log().contains("\"kind\":\"aborted\""));
    assert!(editor.quit().success());
}

#[test]
fn a_session_is_listed_loaded_with_its_history_and_continued() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "notes.txt"})),
        Turn::text("It says hello."),
        Turn::text("Second answer."),
    ]);
    env.write("notes.txt", "hello\n");
    let mut first = Editor::start(&env, &[]);
    let session = first.new_session(&env);
    first.prompt(&session, "What do the notes say?", &mut |_| None);
    assert!(first.quit().success());

    // A new editor window: the session is on disk.
    let mut editor = Editor::start(&env, &[]);
    let listed = editor.call("session/list", json!({"cwd": env.ws_path()}));
    let sessions = listed["result"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], session);
    assert_eq!(sessions[0]["title"], "What do the notes say?");
    assert!(sessions[0]["updatedAt"].as_str().unwrap().ends_with('Z'));

    let loaded = editor.call(
        "session/load",
        json!({"sessionId": session, "cwd": env.ws_path(), "mcpServers": []}),
    );
    assert!(loaded.get("result").is_some(), "{loaded}");
    let kinds: Vec<&str> = (editor.updates.iter())
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            // The title the model wrote after the first turn, for the editor's list.
            "session_info_update"
        ]
    );
    assert_eq!(
        editor.text_of("user_message_chunk"),
        "What do the notes say?"
    );
    // Pending is the protocol's default status, which the SDK leaves out.
    let replayed = &editor.updates_of("tool_call")[0]["status"];
    assert!(replayed.is_null() || replayed == "pending", "{replayed}");

    let next = editor.prompt(&session, "And again?", &mut |_| None);
    assert_eq!(next["result"]["stopReason"], "end_turn");
    let history = serde_json::to_string(env.server.requests()[2].messages()).unwrap();
    assert!(history.contains("It says hello."), "{history}");
    // Loading the open session again shows the turn it has had since.
    editor.updates.clear();
    let again = editor.call(
        "session/load",
        json!({"sessionId": session, "cwd": env.ws_path(), "mcpServers": []}),
    );
    assert!(again.get("result").is_some(), "{again}");
    assert_eq!(
        editor.text_of("user_message_chunk"),
        "What do the notes say?And again?"
    );
    assert!(
        editor
            .text_of("agent_message_chunk")
            .ends_with("Second answer.")
    );
    assert!(editor.quit().success());
}

/// The title the model writes after the first turn reaches the editor's session list as it is
/// written, and a listing afterwards has it; the conversation holds no word of it.
#[test]
fn the_sessions_title_is_sent_to_the_editor_when_written() {
    let server = dsh_testkit::ScriptedServer::start(vec![Turn::text("They say hello.")])
        .with_titles(vec![Turn::text("Read the notes")]);
    let env = TestEnv::with_server(server);
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "What do the notes say?", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let info = editor.updates_of("session_info_update");
    assert_eq!(info.len(), 1, "{:?}", editor.updates);
    assert_eq!(info[0]["title"], "Read the notes");
    assert_eq!(editor.text_of("agent_message_chunk"), "They say hello.");
    assert!(!editor.text_of("agent_thought_chunk").contains("titled"));
    let listed = editor.call("session/list", json!({"cwd": env.ws_path()}));
    assert_eq!(
        listed["result"]["sessions"][0]["title"], "Read the notes",
        "{listed}"
    );
    assert!(editor.quit().success());
}

#[test]
fn bad_requests_are_errors_that_say_what_was_wrong() {
    let env = TestEnv::new(vec![]);
    let mut editor = Editor::start(&env, &[]);
    let relative = editor.call("session/new", json!({"cwd": "src", "mcpServers": []}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    assert!(
        relative["error"]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("not absolute")
    );

    let unknown = editor.call(
        "session/resume",
        json!({"sessionId": "session-nope", "cwd": env.ws_path()}),
    );
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    // Said as an editor can act on it: the folder's sessions are listed by session/list.
    let said = unknown["error"]["message"].as_str().unwrap();
    assert!(
        said.starts_with("SESSION_NOT_FOUND: no session session-nope was recorded in ")
            && said.ends_with(": session/list shows the folder's sessions"),
        "{said}"
    );

    let session = editor.new_session(&env);
    let image = editor.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    );
    assert_eq!(image["error"]["code"], -32602, "{image}");
    let not_open = editor.call(
        "session/prompt",
        json!({"sessionId": "session-other", "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(not_open["error"]["code"], -32002, "{not_open}");
    let unknown_method = editor.call("session/set_model", json!({"sessionId": session}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    // Nothing reached the model.
    assert!(env.server.requests().is_empty());
    assert!(editor.quit().success());
}

#[test]
fn the_models_question_is_asked_with_its_choices() {
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
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "set up storage", &mut |asked| {
        let names: Vec<&str> = (asked["options"].as_array().unwrap().iter())
            .map(|o| o["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["SQLite", "Postgres", "Skip"]);
        Some(asked["options"][1]["optionId"].as_str().unwrap().to_owned())
    });
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(
        editor.asked[0]["toolCall"]["title"],
        "Storage: Which database?"
    );
    // Asked on the model's call itself, which the client already shows.
    let call = &editor.updates_of("tool_call")[0];
    assert_eq!(call["title"], "Ask Which database?");
    assert_eq!(
        editor.asked[0]["toolCall"]["toolCallId"],
        call["toolCallId"]
    );
    let answer = env.server.requests()[1].tool_results();
    assert_eq!(
        answer.last().unwrap(),
        r#"{"answers":[{"id":"db","selected":["Postgres"]}]}"#
    );
    assert!(editor.quit().success());
}

#[test]
fn the_editors_mcp_servers_are_started_for_the_session() {
    let Some(server) = dsh_testkit::mcp::everything() else {
        return;
    };
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__everything__echo", json!({"message": "hi"})),
        Turn::text("done"),
    ]);
    let mut editor = Editor::start(&env, &[]);
    let opened = editor.call(
        "session/new",
        json!({"cwd": env.ws_path(), "mcpServers": [
            {"name": "everything", "command": server, "args": ["stdio"], "env": []}
        ]}),
    );
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    let done = editor.prompt(&session, "echo hi", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let requests = env.server.requests();
    assert!(
        requests[0]
            .tool_names()
            .contains(&"mcp__everything__echo".to_owned())
    );
    assert_eq!(requests[1].tool_results()[0], "Echo: hi");
    assert!(editor.quit().success());
}

/// An MCP server's question goes to an editor that shows forms as its own
/// `elicitation/create`, and what the editor filled in goes back with the defaults of the
/// fields it left alone.
#[test]
fn an_mcp_servers_question_is_the_editors_form() {
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__asking__sign_up", json!({})),
        Turn::text("done"),
    ]);
    let mut editor = Editor::with_forms(&env, json!({"age": 41}));
    let opened = editor.call(
        "session/new",
        json!({"cwd": env.ws_path(), "mcpServers": [{"name": "asking", "command": "python3",
            "args": ["-c", dsh_testkit::mcp::ASKING_SERVER], "env": []}]}),
    );
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    let done = editor.prompt(&session, "sign up", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let asked = &editor.elicited[0];
    assert_eq!(asked["mode"], "form");
    assert_eq!(asked["sessionId"], session.as_str());
    assert_eq!(asked["message"], "MCP server \"asking\" asks: Who are you?");
    assert_eq!(
        asked["requestedSchema"]["properties"]["name"]["default"],
        "John Doe"
    );
    let result: Value = serde_json::from_str(&env.server.requests()[1].tool_results()[0]).unwrap();
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"name": "John Doe", "age": 41, "status": "active", "verified": true})
    );
    assert!(editor.quit().success());
}

/// What an editor hands over with its MCP servers (a stdio server's `env`, an HTTP server's
/// headers) is a secret of the run like its own keys: the server printing its environment, or a
/// file that holds the header, shows `[REDACTED]` to the model, the editor and the session log.
#[test]
fn the_secrets_of_the_editors_mcp_servers_are_redacted() {
    let Some(server) = dsh_testkit::mcp::everything() else {
        return;
    };
    let http = dsh_testkit::mcp::HttpServer::start(&server);
    let env_secret = "editor-env-7Qx2Vb9LmZ4t";
    let header_secret = "editor-header-3Nw8Rk5JpY1c";
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("mcp__tools__get-env", json!({})),
            ("read", json!({"file_path": ".vscode/mcp.json"})),
        ]),
        Turn::text("done"),
    ]);
    // Where an editor keeps its servers' settings, in the workspace the model reads.
    let settings = json!({"servers": {"web": {"headers": {"Authorization": format!("Bearer {header_secret}")}}}});
    env.write(".vscode/mcp.json", &settings.to_string());
    let mut editor = Editor::start(&env, &[]);
    let opened = editor.call(
        "session/new",
        json!({"cwd": env.ws_path(), "mcpServers": [
            {"name": "tools", "command": server, "args": ["stdio"],
             "env": [{"name": "EDITOR_API_TOKEN", "value": env_secret}]},
            {"type": "http", "name": "web", "url": format!("http://127.0.0.1:{}/mcp", http.port),
             "headers": [{"name": "Authorization", "value": format!("Bearer {header_secret}")}]}
        ]}),
    );
    let session = opened["result"]["sessionId"].as_str().unwrap().to_owned();
    let done = editor.prompt(&session, "look", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let requests = env.server.requests();
    let results = requests[1].tool_results();
    let printed: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(printed["EDITOR_API_TOKEN"], "[REDACTED]");
    assert!(
        results[1].contains(r#""Authorization":"[REDACTED]""#),
        "{}",
        results[1]
    );
    let sent: String = requests.iter().map(|r| r.body.to_string()).collect();
    let updates = Value::from(editor.updates.clone()).to_string();
    let log = env.session_logs();
    for secret in [env_secret, header_secret] {
        for (seen, what) in [
            (&sent, "the model's requests"),
            (&updates, "the editor's updates"),
            (&log, "the session log"),
        ] {
            assert!(!seen.contains(secret), "{what} hold {secret}");
        }
    }
    assert!(editor.quit().success());
}

#[test]
fn with_the_editors_file_system_reads_see_unsaved_text_and_changes_go_to_its_buffers() {
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": "notes.txt"})),
        Turn::tool_call(
            "edit",
            json!({"file_path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}),
        ),
        Turn::tool_call(
            "write",
            json!({"file_path": "new.txt", "content": "fresh\n"}),
        ),
        Turn::tool_call("read", json!({"file_path": "other.txt"})),
        Turn::text("done"),
    ]);
    env.write("notes.txt", "saved text\n");
    env.write("other.txt", "only on disk\n");
    let mut editor = Editor::with_buffers(&env, &[("notes.txt", "unsaved text\n")]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "change the notes", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let results = env.server.requests()[4].tool_results();
    assert!(results[0].contains("unsaved text"), "{results:?}");
    assert!(results[1].contains("updated successfully"), "{results:?}");
    assert!(results[2].contains("Created file"), "{results:?}");
    // A file the editor does not hold is read from the disk.
    assert!(results[3].contains("only on disk"), "{results:?}");

    let notes = env.ws_path().join("notes.txt").display().to_string();
    let created = env.ws_path().join("new.txt").display().to_string();
    let buffers = editor.buffers.clone().unwrap();
    assert_eq!(buffers[&notes], "edited text\n");
    assert_eq!(buffers[&created], "fresh\n");
    // The editor saves when it chooses: dsh did not write the disk itself.
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("notes.txt")).unwrap(),
        "saved text\n"
    );
    assert!(!env.ws.path().join("new.txt").exists());
    let methods: Vec<&str> = (editor.file_requests.iter())
        .map(|(method, _)| method.as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "fs/read_text_file",
            "fs/read_text_file",
            "fs/write_text_file",
            "fs/write_text_file",
            "fs/read_text_file"
        ]
    );
    assert!(editor.quit().success());
}

/// Whether a process whose command line holds `marker` runs on this machine.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
    })
}

#[test]
fn closing_a_session_stops_its_turn_its_commands_and_its_jobs() {
    let job = format!("600.{}1", std::process::id());
    let command = format!("600.{}2", std::process::id());
    let sleep = |seconds: &str, background: bool| {
        Turn::tool_call(
            "bash",
            json!({"command": format!("sleep {seconds}"), "description": "wait", "run_in_background": background}),
        )
    };
    let env = TestEnv::new(vec![
        sleep(&job, true),
        Turn::text("started"),
        sleep(&command, false),
    ]);
    // The turn that started the job answers at once instead of waiting for the job.
    env.write(".dsh/config.toml", "[jobs]\nwait_ms = 1\n");
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "start it", &mut |_| None);
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let started = env.server.requests()[1].tool_results();
    assert!(running(&job), "the job did not start: {started:?}");

    let turn = editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
    );
    let deadline = std::time::Instant::now() + LIMIT;
    while !running(&command) {
        assert!(
            std::time::Instant::now() < deadline,
            "the command did not start"
        );
        std::thread::sleep(dsh_testkit::POLL);
    }
    let close = editor.request("session/close", json!({"sessionId": session}));
    let stopped = editor.response(turn, &mut |_| None);
    assert_eq!(stopped["result"]["stopReason"], "cancelled", "{stopped}");
    let closed = editor.response(close, &mut |_| None);
    assert!(closed.get("result").is_some(), "{closed}");
    // Sandboxed commands die with their sandbox's PID namespace: the kernel kills them as it
    // tears the namespace down, a moment after the stop returns. Wait for that, within LIMIT.
    let deadline = std::time::Instant::now() + LIMIT;
    while (running(&job) || running(&command)) && std::time::Instant::now() < deadline {
        std::thread::sleep(dsh_testkit::POLL);
    }
    assert!(!running(&job), "the job outlived its session");
    assert!(!running(&command), "the command outlived its session");
    let again = editor.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(again["error"]["code"], -32002, "{again}");
    assert!(editor.quit().success());
}

#[test]
fn a_cancel_also_cancels_the_prompt_waiting_behind_the_turn() {
    let env = TestEnv::new(vec![Turn::hang(), Turn::text("never sent")]);
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    let prompt = |editor: &mut Editor, text: &str| {
        editor.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    };
    let first = prompt(&mut editor, "wait forever");
    assert!(env.server.wait_for_requests(1, LIMIT));
    let second = prompt(&mut editor, "and then this");
    editor.notify("session/cancel", json!({"sessionId": session}));
    let stopped = editor.response(first, &mut |_| None);
    assert_eq!(stopped["result"]["stopReason"], "cancelled", "{stopped}");
    let queued = editor.response(second, &mut |_| None);
    assert_eq!(queued["result"]["stopReason"], "cancelled", "{queued}");
    assert_eq!(env.server.requests().len(), 1);
    assert!(editor.quit().success());
}

#[test]
fn load_answers_while_a_turn_runs_and_two_loads_share_one_opening() {
    let env = TestEnv::new(vec![Turn::text("first answer"), Turn::hang()]);
    let mut first = Editor::start(&env, &[]);
    let session = first.new_session(&env);
    first.prompt(&session, "hello", &mut |_| None);
    assert!(first.quit().success());

    let mut editor = Editor::start(&env, &[]);
    let load = json!({"sessionId": session, "cwd": env.ws_path(), "mcpServers": []});
    let one = editor.request("session/load", load.clone());
    let two = editor.request("session/load", load.clone());
    for id in [one, two] {
        let loaded = editor.response(id, &mut |_| None);
        assert!(loaded.get("result").is_some(), "{loaded}");
    }
    let turn = editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
    );
    assert!(env.server.wait_for_requests(2, LIMIT));
    editor.updates.clear();
    let during = editor.call("session/load", load);
    assert!(during.get("result").is_some(), "{during}");
    assert_eq!(editor.text_of("user_message_chunk"), "hellowait");
    editor.notify("session/cancel", json!({"sessionId": session}));
    let stopped = editor.response(turn, &mut |_| None);
    assert_eq!(stopped["result"]["stopReason"], "cancelled", "{stopped}");
    assert!(editor.quit().success());
}

#[test]
fn an_editor_that_quits_mid_turn_leaves_the_turn_closed_in_the_log() {
    let env = TestEnv::new(vec![Turn::hang()]);
    let mut editor = Editor::start(&env, &[]);
    let session = editor.new_session(&env);
    editor.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
    );
    assert!(env.server.wait_for_requests(1, LIMIT));
    assert!(editor.quit().success());
    let ends: Vec<Value> = (env.session_log().lines())
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["type"] == "turn/end")
        .map(|record| record["data"]["reason"].clone())
        .collect();
    assert_eq!(
        ends,
        [json!({"kind": "aborted", "reason": {"kind": "user"}})]
    );
}

/// Auto review in an editor: a denial is put to the user, who may run the call anyway; a
/// refusal leaves the denial standing.
#[test]
fn an_auto_review_denial_is_put_to_the_user_who_may_override_it() {
    let write = |word: &str| {
        Turn::tool_call(
            "bash",
            json!({"command": format!("echo {word} >> words.txt"), "description": "d"}),
        )
    };
    let deny =
        || Turn::text(r#"{"decision":"deny","reason":"appends to a file nobody asked for"}"#);
    let env = TestEnv::new(vec![
        write("overridden"),
        deny(),
        Turn::text("ran it"),
        write("refused"),
        deny(),
        Turn::text("understood"),
    ]);
    let mut editor = Editor::start(&env, &["--permission-mode", "auto"]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "write a word", &mut |asked| {
        let text = asked["toolCall"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap();
        assert_eq!(
            text,
            "run this call, which auto review denied: appends to a file nobody asked for"
        );
        // One call's override: no "always".
        let kinds: Vec<&str> = (asked["options"].as_array().unwrap().iter())
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["allow_once", "reject_once"]);
        Some("allow-once".into())
    });
    assert_eq!(done["result"]["stopReason"], "end_turn");
    let done = editor.prompt(&session, "another", &mut |_| Some("reject".into()));
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert_eq!(editor.asked.len(), 2);
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("words.txt")).unwrap(),
        "overridden\n"
    );
    let refused = &env.server.requests()[5].tool_results()[1];
    assert!(
        refused.contains("auto review denied this call"),
        "{refused}"
    );
    let log = env.session_log();
    assert!(log.contains(r#""overridden":true"#), "{log}");
    assert!(editor.quit().success());
}

/// Plan mode in an editor: the submitted plan is a question; approved, the same turn carries
/// it out in the mode picked, and the session keeps that mode.
#[test]
fn an_approved_plan_is_carried_out_in_the_same_turn_in_the_mode_picked() {
    let plan = "# Add the marker\n\nWrite done.txt with one line.";
    let env = TestEnv::new(vec![
        Turn::tool_call("exit_plan_mode", json!({ "plan": plan })),
        Turn::tool_call(
            "write",
            json!({"file_path": "done.txt", "content": "done\n"}),
        ),
        Turn::text("Carried out."),
        Turn::tool_call(
            "write",
            json!({"file_path": "more.txt", "content": "more\n"}),
        ),
        Turn::text("Also done."),
    ]);
    let mut editor = Editor::start(&env, &["--permission-mode", "plan"]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "plan the marker", &mut |asked| {
        let options: Vec<&str> = (asked["options"].as_array().unwrap().iter())
            .map(|o| o["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            options,
            [
                "Carry it out (workspace-write)",
                "Carry it out with Auto review (auto)",
                "Carry it out with full access (danger-full-access)",
                "Keep planning",
                "Skip"
            ]
        );
        Some("choice-0".into())
    });
    assert_eq!(done["result"]["stopReason"], "end_turn");
    // The editor was shown the plan whole on the call.
    let call = &editor.updates_of("tool_call")[0];
    assert_eq!(call["content"][0]["content"]["text"], plan);
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("done.txt")).unwrap(),
        "done\n"
    );
    let requests = env.server.requests();
    assert!(
        requests[1].tool_results()[0]
            .starts_with("The user approved the plan and switched the session to workspace-write"),
        "{:?}",
        requests[1].tool_results()
    );
    let log = env.session_log();
    let turns = log.matches(r#""type":"turn/start""#).count();
    assert_eq!(turns, 1, "the plan and its carrying out are one turn");
    assert!(
        log.contains(r#""mode":"workspace-write","approval":"ask","source":"the plan's approval""#)
    );
    // The next turn works in the mode picked.
    editor.prompt(&session, "one more", &mut |_| None);
    assert!(env.ws.path().join("more.txt").exists());
    assert!(editor.quit().success());
}

#[test]
fn a_plan_sent_back_keeps_plan_mode() {
    let env = TestEnv::new(vec![
        // A call after the plan in the same answer waits for the model to read the answer.
        Turn::tool_calls(&[
            ("exit_plan_mode", json!({"plan": "# Quick fix\n\nEdit it."})),
            ("write", json!({"file_path": "eager.txt", "content": "x"})),
        ]),
        Turn::tool_call("write", json!({"file_path": "early.txt", "content": "x"})),
        Turn::text("I will plan more."),
    ]);
    let mut editor = Editor::start(&env, &["--permission-mode", "plan"]);
    let session = editor.new_session(&env);
    let done = editor.prompt(&session, "plan it", &mut |_| Some("choice-3".into()));
    assert_eq!(done["result"]["stopReason"], "end_turn");
    assert!(!env.ws.path().join("early.txt").exists());
    let requests = env.server.requests();
    assert!(requests[1].tool_results()[0].starts_with("The user did not approve the plan yet"));
    assert!(
        requests[1].tool_results()[1].contains(
            "an earlier call of this answer submitted a plan, which the user has answered"
        ),
        "{:?}",
        requests[1].tool_results()
    );
    assert!(!env.ws.path().join("eager.txt").exists());
    assert!(requests[2].tool_results()[2].contains("not available in plan mode"));
    assert!(editor.quit().success());
}
