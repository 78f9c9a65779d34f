//! The two tools' schemas, and their arguments read with an error that names the argument.

use std::path::PathBuf;
use std::sync::Arc;

use dsh_core::config::PermissionMode;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

pub const TASK_TOOL: &str = "dsh";
pub const REPLY_TOOL: &str = "dsh-reply";

pub fn is_ours(name: &str) -> bool {
    name == TASK_TOOL || name == REPLY_TOOL
}

/// What both tools return as structured content: the `final` event of dsh's `--json` stream.
fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "sessionId": {"type": "string", "description": "Give it to dsh-reply to follow up."},
            "reason": {
                "type": ["object", "null"],
                "description": "How the turn ended: {\"kind\": \"completed\"} when it answered."
            },
            "text": {"type": "string", "description": "The final answer."},
            "usage": {"type": "object", "description": "Tokens billed for the turn, and its cost when the model's prices are known."},
            "durationMs": {"type": "integer"},
            "steps": {"type": "integer", "description": "Model requests made."}
        },
        "required": ["sessionId", "text", "usage"]
    })
}

pub fn tools() -> Vec<Tool> {
    let task = json!({
        "type": "object",
        "properties": {
            "prompt": {
                "type": "string",
                "description": "The task, as you would say it to an engineer: what to do and how to know it is done."
            },
            "cwd": {
                "type": "string",
                "description": "The folder to work in (relative to the server's own); the server's folder when left out."
            },
            "sandbox": {
                "type": "string",
                "enum": ["read-only", "workspace-write", "danger-full-access", "plan", "auto"],
                "description": "What commands may change: read-only; workspace-write (the folder and temporary files, no network); danger-full-access (no sandbox); plan (read-only, answers with a plan); auto (no sandbox, but a reviewer model allows or denies each changing call first). The server's setting when left out; a call may narrow it, never widen it."
            },
            "model": {
                "type": "string",
                "description": "The model to use, as dsh --model takes it; the server's setting when left out."
            }
        },
        "required": ["prompt"],
        "additionalProperties": false
    });
    let reply = json!({
        "type": "object",
        "properties": {
            "sessionId": {
                "type": "string",
                "description": "The sessionId a dsh call returned."
            },
            "prompt": {
                "type": "string",
                "description": "The next message in that session."
            },
            "cwd": {
                "type": "string",
                "description": "The session's folder, when the session was not started by this server."
            }
        },
        "required": ["sessionId", "prompt"],
        "additionalProperties": false
    });
    let annotations = ToolAnnotations::default()
        .read_only(false)
        .destructive(true)
        .idempotent(false)
        .open_world(true);
    vec![
        tool(
            TASK_TOOL,
            "Run a coding task with dsh, an agent that reads, edits and runs commands in a sandboxed folder, and get its final answer and session id.",
            task,
        )
        .annotate(annotations.clone()),
        tool(
            REPLY_TOOL,
            "Continue a dsh session with another message; the agent remembers the conversation and what it did.",
            reply,
        )
        .annotate(annotations),
    ]
}

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let mut tool = Tool::new(name, description, object(schema));
    tool.output_schema = Some(object(output_schema()));
    tool
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

/// What is wrong with a call's arguments, said to the calling model as `invalid arguments for
/// <tool>: <what>`.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("invalid arguments for {tool}: {problem}")]
pub struct ArgumentError {
    pub tool: &'static str,
    pub problem: Problem,
}

/// The argument at fault, and how.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("unknown argument \"{name}\"; it takes {}", known.join(", "))]
    Unknown {
        name: String,
        known: Vec<&'static str>,
    },
    #[error("{0} is required")]
    Required(String),
    #[error("{0} is empty")]
    Empty(String),
    #[error("{key} must be a string, got {got}")]
    NotText { key: String, got: &'static str },
    #[error("sandbox must be {choices}, got \"{0}\"", choices = PermissionMode::CHOICES)]
    Sandbox(String),
}

/// The `dsh` tool's arguments.
#[derive(Debug, PartialEq)]
pub struct TaskArguments {
    pub prompt: String,
    pub cwd: Option<PathBuf>,
    pub sandbox: Option<PermissionMode>,
    pub model: Option<String>,
}

impl TaskArguments {
    pub fn parse(arguments: &JsonObject) -> Result<Self, ArgumentError> {
        let read = Reader::new(TASK_TOOL, arguments, &["prompt", "cwd", "sandbox", "model"])?;
        let sandbox = match read.text("sandbox", false)? {
            None => None,
            Some(mode) => Some(
                mode.parse::<PermissionMode>()
                    .map_err(|_| read.fault(Problem::Sandbox(mode)))?,
            ),
        };
        Ok(TaskArguments {
            prompt: read.prompt()?,
            cwd: read.text("cwd", false)?.map(PathBuf::from),
            sandbox,
            model: read.text("model", false)?,
        })
    }
}

/// The `dsh-reply` tool's arguments.
#[derive(Debug, PartialEq)]
pub struct ReplyArguments {
    pub session_id: String,
    pub prompt: String,
    pub cwd: Option<PathBuf>,
}

impl ReplyArguments {
    pub fn parse(arguments: &JsonObject) -> Result<Self, ArgumentError> {
        let read = Reader::new(REPLY_TOOL, arguments, &["sessionId", "prompt", "cwd"])?;
        Ok(ReplyArguments {
            session_id: read.text("sessionId", true)?.unwrap_or_default(),
            prompt: read.prompt()?,
            cwd: read.text("cwd", false)?.map(PathBuf::from),
        })
    }
}

/// Reads one call's arguments; every error names the tool and the argument.
struct Reader<'a> {
    tool: &'static str,
    arguments: &'a JsonObject,
}

impl<'a> Reader<'a> {
    fn new(
        tool: &'static str,
        arguments: &'a JsonObject,
        known: &[&'static str],
    ) -> Result<Reader<'a>, ArgumentError> {
        let read = Reader { tool, arguments };
        if let Some(unknown) = arguments.keys().find(|key| !known.contains(&key.as_str())) {
            return Err(read.fault(Problem::Unknown {
                name: unknown.clone(),
                known: known.to_vec(),
            }));
        }
        Ok(read)
    }

    fn fault(&self, problem: Problem) -> ArgumentError {
        ArgumentError {
            tool: self.tool,
            problem,
        }
    }

    fn text(&self, key: &str, required: bool) -> Result<Option<String>, ArgumentError> {
        match self.arguments.get(key) {
            None | Some(Value::Null) if required => {
                Err(self.fault(Problem::Required(key.to_owned())))
            }
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.trim().is_empty() => {
                Err(self.fault(Problem::Empty(key.to_owned())))
            }
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.fault(Problem::NotText {
                key: key.to_owned(),
                got: kind(other),
            })),
        }
    }

    fn prompt(&self) -> Result<String, ArgumentError> {
        Ok(self.text("prompt", true)?.unwrap_or_default())
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn a_task_reads_every_argument() {
        let call = TaskArguments::parse(&args(json!({
            "prompt": "fix the build",
            "cwd": "sub",
            "sandbox": "read-only",
            "model": "deepseek-chat"
        })));
        assert_eq!(
            call,
            Ok(TaskArguments {
                prompt: "fix the build".into(),
                cwd: Some("sub".into()),
                sandbox: Some(PermissionMode::ReadOnly),
                model: Some("deepseek-chat".into()),
            })
        );
    }

    #[test]
    fn bad_arguments_are_named() {
        let error = |value| {
            TaskArguments::parse(&args(value))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert_eq!(
            error(json!({})),
            "invalid arguments for dsh: prompt is required"
        );
        assert_eq!(
            error(json!({"prompt": 3})),
            "invalid arguments for dsh: prompt must be a string, got a number"
        );
        assert_eq!(
            error(json!({"prompt": "  "})),
            "invalid arguments for dsh: prompt is empty"
        );
        assert_eq!(
            error(json!({"prompt": "x", "sandbox": "open"})),
            "invalid arguments for dsh: sandbox must be read-only, workspace-write, \
             danger-full-access, plan or auto, got \"open\""
        );
        assert_eq!(
            error(json!({"prompt": "x", "approval": "never"})),
            "invalid arguments for dsh: unknown argument \"approval\"; it takes prompt, cwd, \
             sandbox, model"
        );
        let reply = ReplyArguments::parse(&args(json!({"prompt": "more"})));
        assert_eq!(
            reply.err(),
            Some(ArgumentError {
                tool: REPLY_TOOL,
                problem: Problem::Required("sessionId".into())
            })
        );
    }

    #[test]
    fn the_schemas_are_objects_that_require_a_prompt() {
        for tool in tools() {
            let required = tool.input_schema.get("required").cloned();
            assert!(
                required.is_some_and(|r| r.to_string().contains("prompt")),
                "{}",
                tool.name
            );
            assert!(tool.output_schema.is_some());
        }
    }
}
