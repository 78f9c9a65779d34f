//! What a client sends `dsh app-server`, one JSON object per line, read into [`Message`]s; and
//! what the server writes back besides the `--json` events: responses and its own requests.
//! `docs/sdk.schema.json` is the schema of both directions.

use std::path::PathBuf;

use dsh_core::config::PermissionMode;
use dsh_core::{HostTool, Opening};
use serde_json::{Value, json};

/// The version of the protocol, said in `ready`: fields may be added within a version.
pub const PROTOCOL_VERSION: u32 = 1;

/// The codes an error response carries for a message the protocol refuses (a session's own
/// failures carry dsh's codes: `SESSION_NOT_FOUND`, `CONFIG`...).
pub mod code {
    /// The line is not a JSON object.
    pub const BAD_INPUT: &str = "BAD_INPUT";
    /// A JSON object the protocol has no meaning for: an unknown type, a field missing or of
    /// the wrong kind.
    pub const BAD_REQUEST: &str = "BAD_REQUEST";
    /// `send`, `set` or `close` before a session was opened.
    pub const NO_SESSION: &str = "NO_SESSION";
    /// A message that must wait for the turn to end (`open`, `send`, `set`, `close`).
    pub const BUSY: &str = "BUSY";
    /// An answer to a request that is not waiting (answered already, withdrawn, never asked).
    pub const UNKNOWN_REQUEST: &str = "UNKNOWN_REQUEST";
}

/// One message from the client. `id` is echoed in its response as given (`null` when absent).
#[derive(Debug, PartialEq)]
pub struct Message {
    pub id: Value,
    pub body: Body,
}

#[derive(Debug, PartialEq)]
pub enum Body {
    /// Opens a session (closing the one open): a new one, a resumed one, or a fork.
    Open(OpenRequest),
    /// A turn of the open session.
    Send { text: String },
    /// Stops the running turn.
    Interrupt,
    /// Another permission mode or model for the next turns.
    Set {
        mode: Option<PermissionMode>,
        model: Option<String>,
    },
    /// An answer to one of the server's requests; read against the request it names.
    Answer { request: String, answer: Value },
    /// Closes the open session (its processes stopped); the server waits for another `open`.
    Close,
    /// Back to the start of a turn (its files, its conversation or both), or, without a
    /// turn, the last rewind undone; between turns.
    Rewind(dsh_core::checkpoints::RewindRequest),
}

#[derive(Debug, PartialEq)]
pub struct OpenRequest {
    pub cwd: Option<PathBuf>,
    /// The client's own tools, offered to the model and run by the client.
    pub tools: Vec<HostTool>,
    pub opening: Opening,
    pub mode: Option<PermissionMode>,
    pub model: Option<String>,
}

/// A message refused: answered with an error response and skipped, and the session goes on.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    /// The message's `id`, when it could be read.
    pub id: Value,
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub fn new(id: &Value, code: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            id: id.clone(),
            code,
            message: message.into(),
        }
    }
}

/// Reads line `number` of stdin.
pub fn parse(number: usize, line: &str) -> Result<Message, Refusal> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        Refusal::new(
            &Value::Null,
            code::BAD_INPUT,
            format!("line {number} is not JSON ({e}); send one JSON object per line"),
        )
    })?;
    let Value::Object(fields) = &value else {
        return Err(Refusal::new(
            &Value::Null,
            code::BAD_INPUT,
            format!("line {number} is not a JSON object; send one object per line"),
        ));
    };
    let id = fields.get("id").cloned().unwrap_or(Value::Null);
    // The id is echoed as given: only what the schema lets a response carry.
    if !(id.is_null() || id.is_string() || id.is_i64() || id.is_u64()) {
        return Err(Refusal::new(
            &Value::Null,
            code::BAD_REQUEST,
            format!("line {number}: \"id\" must be a string or a whole number"),
        ));
    }
    let bad = |what: String| Refusal::new(&id, code::BAD_REQUEST, format!("line {number}: {what}"));
    let kind = value["type"]
        .as_str()
        .ok_or_else(|| bad("no \"type\"; see docs/sdk.md for the messages".into()))?;
    let text = |name: &str| -> Result<Option<String>, Refusal> {
        match value.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(bad(format!("\"{name}\" must be a string"))),
        }
    };
    let mode = |given: Option<String>| -> Result<Option<PermissionMode>, Refusal> {
        given
            .map(|m| {
                m.parse::<PermissionMode>()
                    .map_err(|e| bad(format!("\"mode\": {e}")))
            })
            .transpose()
    };
    let body = match kind {
        "open" => Body::Open(OpenRequest {
            cwd: text("cwd")?.map(PathBuf::from),
            tools: host_tools(&value["tools"]).map_err(bad)?,
            opening: match (text("resume")?, text("fork")?) {
                (None, None) => Opening::New,
                (Some(id), None) => Opening::Resume(id),
                (None, Some(id)) => Opening::Fork(id),
                (Some(_), Some(_)) => {
                    return Err(bad("give \"resume\" or \"fork\", not both".into()));
                }
            },
            mode: mode(text("mode")?)?,
            model: text("model")?,
        }),
        "send" => match text("text")? {
            Some(text) if !text.trim().is_empty() => Body::Send { text },
            _ => return Err(bad("\"send\" needs a \"text\" that is not blank".into())),
        },
        "interrupt" => Body::Interrupt,
        "set" => {
            let (mode, model) = (mode(text("mode")?)?, text("model")?);
            if mode.is_none() && model.is_none() {
                return Err(bad("\"set\" needs a \"mode\" or a \"model\"".into()));
            }
            Body::Set { mode, model }
        }
        "answer" => Body::Answer {
            request: text("request")?
                .ok_or_else(|| bad("\"answer\" needs the \"request\" it answers".into()))?,
            answer: value.clone(),
        },
        "close" => Body::Close,
        "rewind" => Body::Rewind(rewind(&value).map_err(bad)?),
        other => {
            return Err(bad(format!(
                "unknown type \"{other}\": use open, send, interrupt, set, answer, rewind or \
                 close"
            )));
        }
    };
    Ok(Message { id, body })
}

/// `rewind`'s fields: `turn` (none: undo the last rewind), `files` and `conversation` (both
/// by default), `force`, and `apply` (false: only say what it would do).
fn rewind(value: &Value) -> Result<dsh_core::checkpoints::RewindRequest, String> {
    let flag = |name: &str, default: bool| match &value[name] {
        Value::Null => Ok(default),
        Value::Bool(given) => Ok(*given),
        _ => Err(format!("\"{name}\" must be true or false")),
    };
    let to_turn = match &value["turn"] {
        Value::Null => None,
        turn => Some(
            (turn.as_u64().and_then(|t| u32::try_from(t).ok()))
                .filter(|t| *t > 0)
                .ok_or("\"turn\" must be a turn's number, 1 or more")?,
        ),
    };
    Ok(dsh_core::checkpoints::RewindRequest {
        to_turn,
        before_call: None,
        files: flag("files", true)?,
        conversation: flag("conversation", true)?,
        force: flag("force", false)?,
        accepted_outside: Vec::new(),
        apply: flag("apply", true)?,
    })
}

/// `open`'s `tools`: each `{"name", "description", "inputSchema"}`.
fn host_tools(given: &Value) -> Result<Vec<HostTool>, String> {
    let shape = "\"tools\" is a list of {\"name\", \"description\", \"inputSchema\"}";
    let tools = match given {
        Value::Null => return Ok(Vec::new()),
        Value::Array(tools) => tools,
        _ => return Err(shape.into()),
    };
    tools
        .iter()
        .map(|tool| {
            let text = |name: &str| tool[name].as_str().map(str::to_owned);
            Some(HostTool {
                name: text("name")?,
                description: text("description").unwrap_or_default(),
                input_schema: tool.get("inputSchema")?.clone(),
            })
        })
        .collect::<Option<_>>()
        .ok_or_else(|| shape.into())
}

/// The line that starts the conversation.
pub fn ready() -> Value {
    json!({
        "type": "ready",
        "protocolVersion": PROTOCOL_VERSION,
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The response to the message `id` that succeeded.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"type": "response", "id": id, "result": result})
}

/// The response to the message `id` that failed, with its code and, when dsh knows one, what
/// to do about it.
pub fn error(id: &Value, code: &str, message: &str, hint: Option<&str>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(hint) = hint {
        error["hint"] = json!(hint);
    }
    json!({"type": "response", "id": id, "error": error})
}

/// Writes one line of the protocol on stdout. Write errors are ignored: a client that stopped
/// reading must not stop the turn, whose log is on disk either way.
pub fn say(message: &Value) {
    use std::io::Write;
    let mut text = message.to_string();
    text.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &str) -> Refusal {
        parse(7, line).expect_err("refused")
    }

    #[test]
    fn messages_are_read_with_their_ids() {
        let open = parse(1, r#"{"type":"open","id":1,"fork":"s1","mode":"plan"}"#).unwrap();
        assert_eq!(open.id, json!(1));
        assert_eq!(
            open.body,
            Body::Open(OpenRequest {
                cwd: None,
                tools: Vec::new(),
                opening: Opening::Fork("s1".into()),
                mode: Some(PermissionMode::Plan),
                model: None,
            })
        );
        let send = parse(2, r#"{"type":"send","id":"a","text":"hi"}"#).unwrap();
        assert_eq!(send.body, Body::Send { text: "hi".into() });
        let set = parse(3, r#"{"type":"set","model":"m"}"#).unwrap();
        assert_eq!(set.id, Value::Null);
        assert_eq!(
            set.body,
            Body::Set {
                mode: None,
                model: Some("m".into())
            }
        );
    }

    #[test]
    fn what_cannot_be_read_is_named_with_its_code_and_id() {
        let not_json = refused("hello");
        assert_eq!(
            (not_json.code, &not_json.id),
            (code::BAD_INPUT, &Value::Null)
        );
        assert!(
            not_json.message.starts_with("line 7 is not JSON"),
            "{not_json:?}"
        );
        assert_eq!(refused("[1]").code, code::BAD_INPUT);
        let unknown = refused(r#"{"type":"dance","id":9}"#);
        assert_eq!((unknown.code, &unknown.id), (code::BAD_REQUEST, &json!(9)));
        assert!(
            unknown.message.contains("unknown type \"dance\""),
            "{unknown:?}"
        );
        let blank = refused(r#"{"type":"send","text":"  "}"#);
        assert!(blank.message.contains("not blank"), "{blank:?}");
        let mode = refused(r#"{"type":"set","mode":"yolo"}"#);
        assert!(
            mode.message.contains("unknown permission mode \"yolo\""),
            "{mode:?}"
        );
        let both = refused(r#"{"type":"open","resume":"a","fork":"b"}"#);
        assert!(both.message.contains("not both"), "{both:?}");
        let answer = refused(r#"{"type":"answer","choice":"once"}"#);
        assert!(answer.message.contains("\"request\""), "{answer:?}");
        for id in ["1.5", "{\"deep\":[1]}", "[1]", "true"] {
            let odd = refused(&format!(r#"{{"type":"interrupt","id":{id}}}"#));
            assert_eq!(
                (odd.code, &odd.id),
                (code::BAD_REQUEST, &Value::Null),
                "{id}"
            );
        }
        let wrong = refused(r#"{"type":"send","text":3}"#);
        assert!(
            wrong.message.contains("\"text\" must be a string"),
            "{wrong:?}"
        );
    }
}
