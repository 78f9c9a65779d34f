//! A scripted chat-completions server on loopback.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::billing::Billing;
use crate::{Answer, Bill, CacheRules, Fault, Turn};

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// When the request was read in full.
    pub received_at: Instant,
}

impl Request {
    /// The chat `messages` of the request (the `input` items, for the Responses API).
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .or_else(|| self.body["input"].as_array())
            .map_or(&[], Vec::as_slice)
    }

    /// The text of every tool result, in order: the `content` of each `tool` message (chat
    /// completions), or of each `tool_result` block (Anthropic Messages).
    pub fn tool_results(&self) -> Vec<String> {
        let mut results = Vec::new();
        for message in self.messages() {
            if message["role"] == "tool" {
                results.push(message["content"].as_str().unwrap_or_default().to_owned());
            }
            if message["type"] == "function_call_output" {
                results.push(message["output"].as_str().unwrap_or_default().to_owned());
            }
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    let text: String = block["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part["text"].as_str())
                        .collect();
                    results.push(text);
                }
            }
        }
        results
    }

    /// The names of the tools offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| {
                        // Chat completions nest the name; Responses and Messages do not.
                        t["function"]["name"]
                            .as_str()
                            .or_else(|| t["name"].as_str())
                            .unwrap_or_default()
                            .to_owned()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// How a server picks its answers.
enum Script {
    /// From its turns, in order.
    Turns,
    /// As [`ScriptedServer::shell_session`].
    Shell(usize),
    /// As [`ScriptedServer::read_session`]: how many steps, and how many were asked for.
    Reads(usize, AtomicUsize),
    /// As [`ScriptedServer::tool_session`]: the prefix of the tools to call.
    Tools(String),
}

struct Shared {
    script: Script,
    turns: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<Request>>,
    /// The size of every request, kept even where the request is not.
    tokens: Mutex<Vec<RequestSize>>,
    arrived: Condvar,
    stopping: AtomicBool,
    /// Whose cache the usage reported follows, when not the script's.
    billing: OnceLock<Billing>,
    /// The answers to title requests, in order ([`ScriptedServer::with_titles`]).
    titles: Mutex<VecDeque<Turn>>,
    /// The title requests received, kept apart from [`Shared::requests`].
    title_requests: Mutex<Vec<Request>>,
}

/// The server. It stops accepting when dropped.
pub struct ScriptedServer {
    port: u16,
    shared: Arc<Shared>,
}

impl ScriptedServer {
    /// Starts a server that answers requests with `turns` in order, then with `done`.
    pub fn start(turns: Vec<Turn>) -> ScriptedServer {
        Self::launch(turns, Script::Turns, 0)
    }

    /// As [`ScriptedServer::start`], on `port` (0: a free one).
    pub fn start_on(turns: Vec<Turn>, port: u16) -> ScriptedServer {
        Self::launch(turns, Script::Turns, port)
    }

    /// Starts a server that plays a session of `steps` steps with any coding agent, for
    /// benchmarks against other agents: while a request carries fewer than `steps - 1` tool
    /// results, it asks for the command `true` with whichever shell tool the agent offers
    /// (`bash`, `shell`, `shell_command` or `exec_command`); then it answers `done`. Stateless,
    /// so retries, several agents and extra requests (titles, summaries) are all fine.
    /// `port` 0 picks a free one.
    pub fn shell_session(steps: usize, port: u16) -> ScriptedServer {
        Self::launch(Vec::new(), Script::Shell(steps), port)
    }

    /// Starts a server that plays a `read` session of `steps` steps however long the agent
    /// keeps its history: it counts the steps itself, asking each time for one of the files
    /// `f0.txt` to `f9.txt`, then answers `done`; a request for a checkpoint of the
    /// conversation (dsh's compaction) is answered with a short one. For runs too long to keep
    /// every request, it keeps only the first ([`ScriptedServer::requests`]).
    pub fn read_session(steps: usize) -> ScriptedServer {
        Self::launch(Vec::new(), Script::Reads(steps, AtomicUsize::new(0)), 0)
    }

    /// Starts a server that calls, once each and in the order offered, every tool whose name
    /// starts with `prefix` (an MCP server's `mcp__<server>__`), with arguments made from
    /// its schema (each required property: 1 for a number, `"test"` for a string, `true`,
    /// `{}` or `[]`); then it answers `done`. Stateless, like [`ScriptedServer::shell_session`]:
    /// which call comes next is read from the tool results the request carries.
    pub fn tool_session(prefix: &str, port: u16) -> ScriptedServer {
        Self::launch(Vec::new(), Script::Tools(prefix.to_owned()), port)
    }

    fn launch(turns: Vec<Turn>, script: Script, port: u16) -> ScriptedServer {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            script,
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
            tokens: Mutex::new(Vec::new()),
            arrived: Condvar::new(),
            stopping: AtomicBool::new(false),
            billing: OnceLock::new(),
            titles: Mutex::new(VecDeque::new()),
            title_requests: Mutex::new(Vec::new()),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accepting.clone();
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        ScriptedServer { port, shared }
    }

    /// This server, billing from now on as `rules` say the provider does: every answer's usage
    /// is what that provider's prompt cache would have served of the request, in its own
    /// fields (the rules are in the testkit's `billing.rs`); the script's usage gives only the
    /// output.
    pub fn bill_as(self, rules: CacheRules) -> ScriptedServer {
        let _ = self.shared.billing.set(Billing::new(rules));
        self
    }

    /// This server, answering the title requests dsh makes after a session's first turn
    /// with `titles` in order (a text turn is the title; a status turn fails the request).
    /// Title requests never use up the script's turns and are not among
    /// [`ScriptedServer::requests`]; once these are used up (or with none scripted), each is
    /// answered with the first six words of the user's first message.
    pub fn with_titles(self, titles: Vec<Turn>) -> ScriptedServer {
        self.shared.titles.lock().unwrap().extend(titles);
        self
    }

    /// Every title request received so far ([`ScriptedServer::with_titles`]).
    pub fn title_requests(&self) -> Vec<Request> {
        self.shared.title_requests.lock().unwrap().clone()
    }

    /// What each request was billed, in order, on a server that [`ScriptedServer::bill_as`].
    pub fn bills(&self) -> Vec<Bill> {
        self.shared
            .billing
            .get()
            .map_or_else(Vec::new, Billing::bills)
    }

    /// `http://127.0.0.1:<port>`, what `DEEPSEEK_BASE_URL` is set to.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The size of every model request received so far, in order: kept for every request, also
    /// where only the first request itself is kept.
    pub fn request_sizes(&self) -> Vec<RequestSize> {
        self.shared.tokens.lock().unwrap().clone()
    }

    /// Waits until `count` requests have arrived; false if `limit` passed first.
    pub fn wait_for_requests(&self, count: usize, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut requests = self.shared.requests.lock().unwrap();
        while requests.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            requests = self.shared.arrived.wait_timeout(requests, left).unwrap().0;
        }
        true
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    // The Messages dialect is asked for at `.../messages`; every other path is chat completions.
    let dialect = if request.path.ends_with("/messages") {
        Dialect::Messages
    } else if request.path.ends_with("/responses") {
        Dialect::Responses
    } else {
        Dialect::Chat
    };
    if request.method == "GET" && request.path.ends_with("/models") {
        return list_models(stream, request, shared);
    }
    if request.method != "POST" {
        let mut stream = stream;
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    if let Some(answer) = hosted_search_answer(&request) {
        shared.requests.lock().unwrap().push(request);
        shared.arrived.notify_all();
        let body = answer.to_string();
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return;
    }
    if crate::titles::is_title_request(&request.body) {
        let turn = (shared.titles.lock().unwrap().pop_front())
            .unwrap_or_else(|| crate::titles::default_title(&request.body));
        shared.title_requests.lock().unwrap().push(request);
        shared.arrived.notify_all();
        let mut stream = stream;
        return respond(&mut stream, turn, dialect);
    }
    let turn = {
        let mut requests = shared.requests.lock().unwrap();
        shared.tokens.lock().unwrap().push(RequestSize {
            body_tokens: request_tokens(&request),
            message_tokens: message_tokens(&request),
        });
        let turn = match &shared.script {
            Script::Shell(steps) => shell_turn(&request, *steps),
            Script::Tools(prefix) => tools_turn(&request, prefix),
            Script::Reads(steps, served) => read_turn(&request, *steps, served),
            Script::Turns => shared
                .turns
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| Turn::text("done")),
        };
        let turn = billed(filled_in(turn, &request), &request, shared);
        if !matches!(shared.script, Script::Reads(..)) || requests.is_empty() {
            requests.push(request);
        }
        shared.arrived.notify_all();
        turn
    };
    let turn = after_the_barrier(turn, shared);
    let mut stream = stream;
    respond(&mut stream, turn, dialect);
}

/// `turn` with the usage the provider the server bills as would report for `request`, or with
/// the refusal it would answer it with.
fn billed(turn: Turn, request: &Request, shared: &Shared) -> Turn {
    let Some(billing) = shared.billing.get() else {
        return turn;
    };
    let Turn::Answer(mut answer) = turn else {
        return turn;
    };
    let output = answer.usage.map_or(10, |(_, completion, _)| completion);
    match billing.bill(request, output) {
        Ok(usage) => {
            answer.wire_usage = Some(usage);
            Turn::Answer(answer)
        }
        Err(refusal) => Turn::status(400, &refusal),
    }
}

/// `turn`, once the requests a [`Turn::AfterRequests`] waits for have arrived (or a refusal,
/// if they do not come within a minute).
fn after_the_barrier(turn: Turn, shared: &Shared) -> Turn {
    let Turn::AfterRequests(count, turn) = turn else {
        return turn;
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut requests = shared.requests.lock().unwrap();
    while requests.len() < count {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Turn::status(
                500,
                &format!(
                    "the test's barrier was not reached: {} of {count} requests came",
                    requests.len()
                ),
            );
        }
        requests = shared.arrived.wait_timeout(requests, left).unwrap().0;
    }
    drop(requests);
    after_the_barrier(*turn, shared)
}

/// The model list, as a key check asks for it: a key that starts with `refused` is refused
/// (401), quoted in the message as some providers quote it, any other is taken; no key at all
/// is refused too. The request is recorded.
fn list_models(mut stream: TcpStream, request: Request, shared: &Shared) {
    let key = (request.headers.get("authorization"))
        .and_then(|v| v.strip_prefix("Bearer "))
        .or(request.headers.get("x-api-key").map(String::as_str))
        .unwrap_or_default()
        .to_owned();
    shared.requests.lock().unwrap().push(request);
    shared.arrived.notify_all();
    let (status, body) = if key.is_empty() || key.starts_with("refused") {
        (
            "401 Unauthorized",
            json!({"error": {"message": format!("Incorrect API key provided: {key}. Authentication Fails, Your api key is invalid"),
                "type": "authentication_error"}}),
        )
    } else {
        (
            "200 OK",
            json!({"object": "list", "data": [{"id": "deepseek-v4-flash", "object": "model"}]}),
        )
    };
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// The turn with each `{{result:<JSON pointer>}}` in its calls' argument text replaced by the
/// value at that pointer in the last tool result the request carries, read as JSON: a script
/// can pass on an id the agent made up (a goal's), as a model would. A string is put in
/// without its quotes, so the placeholder goes inside them.
fn filled_in(turn: Turn, request: &Request) -> Turn {
    let Turn::Answer(mut answer) = turn else {
        return turn;
    };
    if !answer
        .tool_calls
        .iter()
        .any(|(_, args)| args.contains("{{result:"))
    {
        return Turn::Answer(answer);
    }
    let last: Value = request
        .tool_results()
        .last()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    for (_, arguments) in &mut answer.tool_calls {
        while let Some(start) = arguments.find("{{result:") {
            let Some(length) = arguments[start..].find("}}") else {
                break;
            };
            let pointer = &arguments[start + "{{result:".len()..start + length];
            let value = match last.pointer(pointer) {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                // Left visibly wrong, for the test's assertion to show.
                None => format!("<nothing at {pointer}>"),
            };
            arguments.replace_range(start..start + length + 2, &value);
        }
    }
    Turn::Answer(answer)
}

/// A provider's hosted web search (a Messages request offering the `web_search_20250305`
/// server tool) answers here without using up a scripted turn, as the service would: one
/// source a query, at `https://example.com/<query words joined by ->`, titled
/// `Result for <query>`, its citation quoting `About <query>.`, with the usage of a small
/// request (1000 tokens in, 50 out). The query is the last line of the request's user text.
fn hosted_search_answer(request: &Request) -> Option<Value> {
    let tools = request.body["tools"].as_array()?;
    let hosted = tools.iter().any(|t| {
        t["type"]
            .as_str()
            .is_some_and(|kind| kind.starts_with("web_search_"))
    });
    if !hosted {
        return None;
    }
    let text: String = request
        .messages()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|block| block["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n");
    let query = text.lines().last().unwrap_or_default().trim().to_owned();
    let url = format!(
        "https://example.com/{}",
        query.split_whitespace().collect::<Vec<_>>().join("-")
    );
    let title = format!("Result for {query}");
    Some(json!({
        "id": "msg_search",
        "type": "message",
        "role": "assistant",
        "model": request.body["model"],
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": query}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "url": url, "title": title, "page_age": "2026-12-01", "encrypted_content": "opaque"},
            ]},
            {"type": "text", "text": "Here is what I found.", "citations": [
                {"type": "web_search_result_location", "url": url, "title": title, "cited_text": format!("About {query}."), "encrypted_index": "opaque"},
            ]},
        ],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1000, "output_tokens": 50, "server_tool_use": {"web_search_requests": 1}},
    }))
}

/// The size of one request, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSize {
    /// One per 4 bytes of the JSON body, tool schemas and all: the prompt tokens
    /// [`ScriptedServer::read_session`] reports.
    pub body_tokens: u64,
    /// The messages alone, estimated as dsh estimates its history (`estimate_tokens` in
    /// dsh-core's compaction): 4 bytes of text a token, a call's name and arguments plus 16,
    /// and 4 a message.
    pub message_tokens: u64,
}

/// A request's size in tokens: one per 4 bytes of its JSON body.
fn request_tokens(request: &Request) -> u64 {
    (request.body.to_string().len() / 4) as u64
}

/// A chat-completions request's messages, estimated as dsh estimates its history.
fn message_tokens(request: &Request) -> u64 {
    let text = |v: &Value| match v {
        Value::String(s) => s.len(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| p["text"].as_str().map_or(0, str::len))
            .sum(),
        _ => 0,
    };
    request
        .messages()
        .iter()
        .map(|m| {
            let calls: usize = m["tool_calls"].as_array().map_or(0, |calls| {
                calls
                    .iter()
                    .map(|c| {
                        let f = &c["function"];
                        f["name"].as_str().map_or(0, str::len)
                            + f["arguments"].as_str().map_or(0, str::len)
                            + 16
                    })
                    .sum()
            });
            let chars = text(&m["content"]) + text(&m["reasoning_content"]) + calls;
            (chars as u64).div_ceil(4) + 4
        })
        .sum()
}

/// The next answer of a shell session of `steps` steps.
fn shell_turn(request: &Request, steps: usize) -> Turn {
    let results = request.tool_results();
    if results.len() + 1 >= steps {
        // A run whose calls the agent refused is not a run of the scenario: say so.
        let refused = results
            .iter()
            .any(|r| r.contains("invalid arguments") || r.contains("unknown tool"));
        return Turn::text(if refused { "tool calls failed" } else { "done" });
    }
    let names = request.tool_names();
    let has = |name: &str| names.iter().any(|n| n == name);
    if has("bash") {
        Turn::tool_call(
            "bash",
            json!({"command": "true", "description": "Run true"}),
        )
    } else if has("shell_command") {
        Turn::tool_call("shell_command", json!({"command": "true"}))
    } else if has("exec_command") {
        Turn::tool_call("exec_command", json!({"cmd": "true"}))
    } else if has("shell") {
        Turn::tool_call("shell", json!({"command": ["true"]}))
    } else {
        Turn::text("done")
    }
}

/// The next call of a tool session over the tools named `prefix*`.
fn tools_turn(request: &Request, prefix: &str) -> Turn {
    let offered: Vec<&Value> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            t["function"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    let Some(tool) = offered.get(request.tool_results().len()) else {
        return Turn::text("done");
    };
    let schema = &tool["function"]["parameters"];
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("test"),
        };
        arguments.insert(name.to_owned(), value);
    }
    let name = tool["function"]["name"].as_str().unwrap_or_default();
    Turn::tool_call(name, Value::Object(arguments))
}

/// The next answer of a read session of `steps` steps.
fn read_turn(request: &Request, steps: usize, served: &AtomicUsize) -> Turn {
    let last = request.messages().last().cloned().unwrap_or_default();
    let asks_for_checkpoint = last["role"] == "user"
        && last["content"]
            .as_str()
            .is_some_and(|text| text.contains("checkpoint of the conversation"));
    if asks_for_checkpoint {
        return Turn::text(
            "## Goal\n- read the files one by one\n## State\n- reading, nothing found yet\n\
             ## Files\n- f0.txt to f9.txt\n## Problems\n(none)\n## Background jobs\n(none)\n\
             ## Next step\n- read the next file",
        );
    }
    let step = served.fetch_add(1, Ordering::SeqCst);
    // Usage as a real provider reports it, about a token per 4 bytes of the request: what
    // dsh measures its history by.
    let prompt = request_tokens(request);
    let turn = if step + 1 >= steps {
        Turn::text("done")
    } else {
        Turn::tool_call("read", json!({"file_path": format!("f{}.txt", step % 10)}))
    };
    turn.usage(prompt, 20, 0)
}

/// Which API a request was sent to, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Chat completions (DeepSeek, OpenAI-compatible servers).
    Chat,
    /// Anthropic Messages.
    Messages,
    /// OpenAI Responses.
    Responses,
}

/// The event stream (the body after the HTTP head) the server sends for `answer` in
/// `dialect`, for tests that feed a stream to a decoder directly (chunked as they choose).
pub fn stream_body(answer: &Answer, dialect: Dialect) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = match dialect {
        Dialect::Chat => write_stream(&mut out, answer, true),
        Dialect::Messages => write_messages_stream(&mut out, answer),
        Dialect::Responses => write_responses_stream(&mut out, answer),
    };
    out.split_off(SSE_HEAD.len())
}

const SSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

fn text_chunk(text: &str) -> String {
    let chunk = json!({"id":"chatcmpl-test","object":"chat.completion.chunk","model":"m",
                       "choices":[{"index":0,"delta":{"role":"assistant","content":text},
                                   "finish_reason":null}]});
    format!("data: {chunk}\n\n")
}

fn respond(stream: &mut TcpStream, turn: Turn, dialect: Dialect) {
    match turn {
        Turn::Answer(answer) if dialect == Dialect::Messages => {
            let _ = write_messages_stream(stream, &answer);
        }
        Turn::Answer(answer) if dialect == Dialect::Responses => {
            let _ = write_responses_stream(stream, &answer);
        }
        Turn::Answer(answer) => {
            let _ = write_stream(stream, &answer, true);
        }
        Turn::Delayed(delay, turn) => {
            std::thread::sleep(delay);
            respond(stream, *turn, dialect);
        }
        // Waited for in `serve`, which knows the requests.
        Turn::AfterRequests(_, turn) => respond(stream, *turn, dialect),
        Turn::Fault(Fault::ResetMidStream(text)) => {
            let _ = stream.write_all(SSE_HEAD);
            let _ = stream.write_all(text_chunk(&text).as_bytes());
            let _ = stream.flush();
            reset(stream);
        }
        Turn::Fault(Fault::ClosedBeforeDone(answer)) => {
            let _ = write_stream(stream, &answer, false);
        }
        Turn::Fault(Fault::MalformedEvent) => {
            let _ = stream.write_all(SSE_HEAD);
            let _ = stream.write_all(b"data: {\"choices\": [not json\n\n");
        }
        Turn::Fault(Fault::Empty) => {
            let _ = stream.write_all(SSE_HEAD);
            let _ = stream.write_all(b"data: [DONE]\n\n");
        }
        Turn::Status {
            status,
            body,
            headers,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        Turn::Hang => hold(stream),
        Turn::HangMidStream(text) => {
            let started = stream
                .write_all(SSE_HEAD)
                .and_then(|()| stream.write_all(text_chunk(&text).as_bytes()))
                .and_then(|()| stream.flush());
            if started.is_ok() {
                hold(stream);
            }
        }
    }
}

/// A call's argument text in two pieces, cut on a character boundary near the middle: every
/// dialect streams arguments in pieces, as real servers do.
fn halves(arguments: &str) -> (&str, &str) {
    let mut cut = arguments.len() / 2;
    while !arguments.is_char_boundary(cut) {
        cut -= 1;
    }
    arguments.split_at(cut)
}

/// Closes the connection with a reset (RST), as a crashed proxy does.
fn reset(stream: &TcpStream) {
    use std::os::fd::AsRawFd as _;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt on our own socket, with a valid linger value and its size.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    // Dropped by the caller's caller; the reset goes out at close.
}

/// Holds the connection open until the client gives up on it.
fn hold(stream: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_lowercase(), value.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request {
        method,
        path,
        headers,
        body,
        received_at: Instant::now(),
    })
}

/// Streams an answer the way chat-completions servers do: a role chunk, reasoning, the text in
/// 16-character pieces, each tool call, the finish reason, the usage, `[DONE]`.
/// The answer as an Anthropic Messages stream: thinking (signed), text, then each tool call
/// with its input in two `input_json_delta` pieces.
fn write_messages_stream(stream: &mut impl Write, answer: &Answer) -> std::io::Result<()> {
    stream.write_all(SSE_HEAD)?;
    let mut send = |kind: &str, data: Value| -> std::io::Result<()> {
        stream.write_all(format!("event: {kind}\ndata: {data}\n\n").as_bytes())?;
        stream.flush()
    };
    let (prompt, mut completion, cached) = answer.usage.unwrap_or((0, 0, 0));
    let mut start = json!({"type":"message_start","message":{"id":"msg_test","type":"message",
        "role":"assistant","content":[],"model":"m"}});
    if let Some(wire) = &answer.wire_usage {
        completion = wire["output_tokens"].as_u64().unwrap_or(0);
        start["message"]["usage"] = wire.clone();
        start["message"]["usage"]["output_tokens"] = json!(1);
    } else if answer.usage.is_some() {
        start["message"]["usage"] = json!({"input_tokens": prompt - cached,
            "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0, "output_tokens": 1});
    }
    send("message_start", start)?;
    let mut index = 0;
    if let Some(reasoning) = &answer.reasoning {
        send(
            "content_block_start",
            json!({"type":"content_block_start","index":index,
            "content_block":{"type":"thinking","thinking":""}}),
        )?;
        send(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,
            "delta":{"type":"thinking_delta","thinking":reasoning}}),
        )?;
        send(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,
            "delta":{"type":"signature_delta","signature":format!("sig-{index}")}}),
        )?;
        send(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        )?;
        index += 1;
    }
    if !answer.text.is_empty() {
        send(
            "content_block_start",
            json!({"type":"content_block_start","index":index,
            "content_block":{"type":"text","text":""}}),
        )?;
        send(
            "content_block_delta",
            json!({"type":"content_block_delta","index":index,
            "delta":{"type":"text_delta","text":answer.text}}),
        )?;
        send(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        )?;
        index += 1;
    }
    for (n, (name, arguments)) in answer.tool_calls.iter().enumerate() {
        let (head, tail) = halves(arguments);
        send(
            "content_block_start",
            json!({"type":"content_block_start","index":index,
            "content_block":{"type":"tool_use","id":format!("toolu_{n}_{name}"),"name":name,"input":{}}}),
        )?;
        for piece in [head, tail] {
            send(
                "content_block_delta",
                json!({"type":"content_block_delta","index":index,
                "delta":{"type":"input_json_delta","partial_json":piece}}),
            )?;
        }
        send(
            "content_block_stop",
            json!({"type":"content_block_stop","index":index}),
        )?;
        index += 1;
    }
    let stop = match answer.finish.as_deref() {
        Some("length") => "max_tokens",
        _ if !answer.tool_calls.is_empty() => "tool_use",
        _ => "end_turn",
    };
    let mut delta = json!({"type":"message_delta","delta":{"stop_reason":stop}});
    if answer.usage.is_some() || answer.wire_usage.is_some() {
        delta["usage"] = json!({"output_tokens": completion});
    }
    send("message_delta", delta)?;
    send("message_stop", json!({"type":"message_stop"}))
}

/// The answer as an OpenAI Responses stream: reasoning summary, text, then each call with its
/// arguments in two pieces, then `response.completed` with the usage.
fn write_responses_stream(stream: &mut impl Write, answer: &Answer) -> std::io::Result<()> {
    stream.write_all(SSE_HEAD)?;
    let mut send = |data: Value| -> std::io::Result<()> {
        let kind = data["type"].as_str().unwrap_or("").to_owned();
        stream.write_all(format!("event: {kind}\ndata: {data}\n\n").as_bytes())?;
        stream.flush()
    };
    send(json!({"type":"response.created","response":{"id":"resp_test","status":"in_progress"}}))?;
    if let Some(reasoning) = &answer.reasoning {
        send(
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","delta":reasoning}),
        )?;
    }
    // Each item is announced, streamed and then sent whole, as OpenAI's server does (clients
    // such as Codex read the whole item from `response.output_item.done`).
    if !answer.text.is_empty() {
        let message = |text: &str| {
            json!({"type":"message","id":"msg_1","role":"assistant","status":"completed",
                   "content":[{"type":"output_text","text":text,"annotations":[]}]})
        };
        send(json!({"type":"response.output_item.added","output_index":0,"item":message("")}))?;
        send(json!({"type":"response.output_text.delta","item_id":"msg_1","delta":answer.text}))?;
        send(
            json!({"type":"response.output_item.done","output_index":0,"item":message(&answer.text)}),
        )?;
    }
    for (n, (name, arguments)) in answer.tool_calls.iter().enumerate() {
        let item = format!("fc_{n}");
        let call = |arguments: &str| {
            json!({"type":"function_call","id":item,"call_id":format!("call_{n}_{name}"),
                   "name":name,"arguments":arguments,"status":"completed"})
        };
        send(json!({"type":"response.output_item.added","output_index":n + 1,"item":call("")}))?;
        let (head, tail) = halves(arguments);
        for piece in [head, tail] {
            send(
                json!({"type":"response.function_call_arguments.delta","item_id":item,"delta":piece}),
            )?;
        }
        send(
            json!({"type":"response.output_item.done","output_index":n + 1,"item":call(arguments)}),
        )?;
    }
    let mut response = json!({"id":"resp_test","status":"completed"});
    if answer.finish.as_deref() == Some("length") {
        response["status"] = json!("incomplete");
        response["incomplete_details"] = json!({"reason":"max_output_tokens"});
    }
    if let Some(wire) = &answer.wire_usage {
        response["usage"] = wire.clone();
    } else if let Some((prompt, completion, cached)) = answer.usage {
        response["usage"] = json!({"input_tokens":prompt,"input_tokens_details":{"cached_tokens":cached},
            "output_tokens":completion,"output_tokens_details":{"reasoning_tokens":0},
            "total_tokens":prompt + completion});
    }
    send(json!({"type":"response.completed","response":response}))
}

fn write_stream(stream: &mut impl Write, answer: &Answer, done: bool) -> std::io::Result<()> {
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    )?;
    let mut send = |chunk: Value| -> std::io::Result<()> {
        stream.write_all(format!("data: {chunk}\n\n").as_bytes())?;
        stream.flush()
    };
    let delta = |delta: Value, finish: Value| {
        json!({"id":"chatcmpl-test","object":"chat.completion.chunk","model":"m",
               "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
    };
    send(delta(json!({"role":"assistant","content":""}), Value::Null))?;
    if let Some(reasoning) = &answer.reasoning {
        send(delta(json!({"reasoning_content": reasoning}), Value::Null))?;
    }
    let chars: Vec<char> = answer.text.chars().collect();
    for piece in chars.chunks(16) {
        send(delta(
            json!({"content": piece.iter().collect::<String>()}),
            Value::Null,
        ))?;
    }
    // Each call arrives in pieces, as real servers send them: the id and name with the first
    // half of the arguments, then the rest under the same index.
    for (index, (name, arguments)) in answer.tool_calls.iter().enumerate() {
        let (head, tail) = halves(arguments);
        send(delta(
            json!({"tool_calls":[{"index":index,"id":format!("call_{index}_{}", name),"type":"function",
                                  "function":{"name":name,"arguments":head}}]}),
            Value::Null,
        ))?;
        send(delta(
            json!({"tool_calls":[{"index":index,"function":{"arguments":tail}}]}),
            Value::Null,
        ))?;
    }
    let finish = answer.finish.clone().unwrap_or_else(|| {
        if answer.tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    send(delta(json!({}), Value::from(finish)))?;
    let usage = answer.wire_usage.clone().or_else(|| {
        answer.usage.map(|(prompt, completion, cached)| {
            json!({"prompt_tokens":prompt,"completion_tokens":completion,
                   "total_tokens":prompt + completion,
                   "prompt_cache_hit_tokens":cached,"prompt_cache_miss_tokens":prompt - cached,
                   "prompt_tokens_details":{"cached_tokens":cached}})
        })
    });
    if let Some(usage) = usage {
        send(
            json!({"id":"chatcmpl-test","object":"chat.completion.chunk","choices":[],
                    "usage":usage}),
        )?;
    }
    if done {
        stream.write_all(b"data: [DONE]\n\n")?;
    }
    stream.flush()
}
