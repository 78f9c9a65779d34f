//! Host tools: tools a front end's client declares (a name, a description, a JSON Schema for
//! the arguments) that the model is offered beside dsh's own and that run in the client, in
//! its language (`dsh app-server`'s SDKs). A call goes through the same pipeline as any tool's
//! (hooks, Auto review, plan mode, accounting, the log): only its last step, running, is
//! handed to the front end as a [`HostCall`], which the client answers.

use dsh_tools::{
    Arguments, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture, ToolKind,
    ToolOutput,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

pub(crate) mod install;

/// A tool the client declares.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTool {
    pub name: String,
    pub description: String,
    /// The arguments' JSON Schema (an object schema), as the model is sent it.
    pub input_schema: Value,
}

/// Why a declared tool cannot be offered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HostToolError {
    #[error(
        "host tool name \"{0}\" is not 1 to 64 letters, digits, '_' or '-'; hint: name it as \
         the model may call it"
    )]
    BadName(String),
    #[error(
        "host tool \"{0}\" has the name of one of dsh's tools or an MCP server's (in any case); \
         hint: give it a name of its own"
    )]
    Taken(String),
    #[error("host tool \"{0}\" is declared twice; hint: declare each tool once")]
    Twice(String),
    #[error(
        "host tool \"{0}\": its input schema is not a JSON Schema of an object ({{\"type\": \
         \"object\", ...}}, with no $ref to another document); hint: describe the arguments as \
         an object"
    )]
    BadSchema(String),
}

impl HostTool {
    /// Checks a client's list of tools: names the model can call that are no one else's, each
    /// once, each with an object schema.
    pub fn check(tools: &[HostTool]) -> Result<(), HostToolError> {
        let mut seen = std::collections::HashSet::new();
        for tool in tools {
            let name = &tool.name;
            let fits = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if name.is_empty() || name.len() > 64 || !name.chars().all(fits) {
                return Err(HostToolError::BadName(name.clone()));
            }
            // In any case: `Bash` beside `bash` would pass for the shell with the model, and
            // with hooks whose matchers use other agents' names (`Bash`, `Read`).
            let lower = name.to_ascii_lowercase();
            if lower.starts_with("mcp__") || dsh_config::BUILTIN_TOOLS.contains(&lower.as_str()) {
                return Err(HostToolError::Taken(name.clone()));
            }
            if !seen.insert(name) {
                return Err(HostToolError::Twice(name.clone()));
            }
            let object = tool.input_schema.get("type").and_then(Value::as_str) == Some("object");
            if !object || crate::OutputSchema::of(&tool.input_schema, name).is_none() {
                return Err(HostToolError::BadSchema(name.clone()));
            }
        }
        Ok(())
    }
}

/// A call of a host tool for the client to run. Dropped unanswered, the call fails.
pub struct HostCall {
    /// The model's id of the call (its `tool_call` event's `callId`).
    pub call_id: String,
    pub tool: String,
    /// The arguments, checked against the tool's schema.
    pub input: Value,
    reply: oneshot::Sender<Result<String, String>>,
}

impl HostCall {
    /// The call's result, which the model reads.
    pub fn succeed(self, output: String) {
        let _ = self.reply.send(Ok(output));
    }

    /// The call failed: the model reads `message` as the call's error.
    pub fn fail(self, message: String) {
        let _ = self.reply.send(Err(message));
    }
}

/// The host tools of a [`crate::User`], and where their calls go.
#[derive(Clone)]
pub(crate) struct HostTools {
    tools: Vec<HostTool>,
    calls: mpsc::UnboundedSender<HostCall>,
}

impl HostTools {
    /// `tools`, whose calls go to `calls`.
    pub(crate) fn new(tools: Vec<HostTool>, calls: mpsc::UnboundedSender<HostCall>) -> Self {
        HostTools { tools, calls }
    }

    /// The tools as the registry takes them.
    pub(crate) fn offered(&self) -> Vec<Box<dyn Tool>> {
        let mut offered: Vec<Box<dyn Tool>> = Vec::new();
        for tool in &self.tools {
            // Checked when the user was made: each compiles.
            let Some(schema) = crate::OutputSchema::of(&tool.input_schema, &tool.name) else {
                continue;
            };
            offered.push(Box::new(Offered {
                schema,
                parameters: Parameters::declared(tool.input_schema.clone()),
                tool: tool.clone(),
                calls: self.calls.clone(),
            }));
        }
        offered
    }
}

/// The names of the host tools, which `BUILTIN_TOOLS` rightly lacks.
pub(crate) fn names(host: Option<&HostTools>) -> Vec<String> {
    host.map(|h| h.tools.iter().map(|t| t.name.clone()).collect())
        .unwrap_or_default()
}

struct Offered {
    tool: HostTool,
    /// The arguments' schema, compiled: a call that does not match it never reaches the
    /// client, and the model reads why.
    schema: crate::OutputSchema,
    parameters: Parameters,
    calls: mpsc::UnboundedSender<HostCall>,
}

impl Tool for Offered {
    fn name(&self) -> &str {
        &self.tool.name
    }

    fn description(&self) -> &str {
        &self.tool.description
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// dsh cannot tell what a client's tool changes: it is no read-only tool, so plan mode
    /// keeps it back and Auto review looks at each call.
    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, self.tool.name.clone())
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let input = Value::Object(args.into_map());
            let problems = self.schema.problems(&input);
            if !problems.is_empty() {
                return Err(ToolError::plain(format!(
                    "the arguments do not match {}'s schema: {}",
                    self.tool.name,
                    problems.join("; ")
                )));
            }
            let (reply, answered) = oneshot::channel();
            let call = HostCall {
                call_id: ctx.call_id.clone(),
                tool: self.tool.name.clone(),
                input,
                reply,
            };
            // The call's tool_call event reaches the front end first, as a request's does
            // (requests.rs): a front end that reads events before it polls the run again has
            // taken it in once the run has given way once.
            tokio::task::yield_now().await;
            if self.calls.send(call).is_err() {
                return Err(ToolError::plain(format!(
                    "the client that declared \"{}\" is gone",
                    self.tool.name
                )));
            }
            tokio::select! {
                answer = answered => match answer {
                    Ok(Ok(output)) => Ok(ToolOutput::text(output)),
                    Ok(Err(message)) => Err(ToolError::plain(message)),
                    Err(_) => Err(ToolError::plain(format!(
                        "the client did not run \"{}\"",
                        self.tool.name
                    ))),
                },
                () = ctx.cancel.cancelled() => Err(ToolError::plain("the call was stopped")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> HostTool {
        HostTool {
            name: name.into(),
            description: "d".into(),
            input_schema: schema,
        }
    }

    #[test]
    fn a_declared_tool_needs_a_free_name_and_an_object_schema() {
        let object = json!({"type": "object"});
        assert_eq!(HostTool::check(&[tool("lookup", object.clone())]), Ok(()));
        assert_eq!(
            HostTool::check(&[tool("two words", object.clone())]),
            Err(HostToolError::BadName("two words".into()))
        );
        assert_eq!(
            HostTool::check(&[tool("bash", object.clone())]),
            Err(HostToolError::Taken("bash".into()))
        );
        for taken in ["Bash", "READ", "MCP__srv__tool"] {
            assert_eq!(
                HostTool::check(&[tool(taken, object.clone())]),
                Err(HostToolError::Taken(taken.into()))
            );
        }
        assert_eq!(
            HostTool::check(&[tool("a", object.clone()), tool("a", object)]),
            Err(HostToolError::Twice("a".into()))
        );
        assert_eq!(
            HostTool::check(&[tool("a", json!({"type": "string"}))]),
            Err(HostToolError::BadSchema("a".into()))
        );
    }
}
