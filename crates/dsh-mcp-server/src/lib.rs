//! `dsh mcp-server`: dsh as an MCP server over stdio, so that another agent or an editor can
//! hand it work. Two tools:
//!
//! - `dsh` runs a task in a new session: `prompt`, and optionally `cwd`, `sandbox`, `model`;
//! - `dsh-reply` sends another message to a session: `sessionId` and `prompt`.
//!
//! Each call is one turn of `dsh_core::Agent`, built by `AgentBuilder` exactly as the headless
//! mode builds its run, logged in the session's file like any other, so `dsh --session-id` or
//! the terminal UI can take the session over later. While the turn runs, a client that sent a
//! progress token gets a progress notification for every step, tool call and result; a
//! cancelled request stops the turn (the log records it as aborted). The result is the answer
//! as text and, as structured content, the `final` event of the `--json` stream.
//!
//! No one can answer an approval here, so the session runs as a headless one does: a command
//! that needs an escalation is refused at once, with the reason, to the model.

mod arguments;
mod sessions;
mod task;

use std::path::PathBuf;

use dsh_core::Flags;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

use crate::arguments::{ArgumentError, ReplyArguments, TaskArguments};
use crate::sessions::Sessions;
use crate::task::{Progress, Task};

/// Why the server could not run.
#[derive(Debug)]
pub struct ServeError(pub String);

/// Serves MCP on stdin and stdout until the client closes stdin. `base` holds the command
/// line's settings (`--model`, `--permission-mode`, `--patch`, ...), which every call starts
/// from; a call's own arguments win.
pub fn serve_stdio(base: Flags) -> Result<(), ServeError> {
    let cwd = std::env::current_dir()
        .map_err(|e| ServeError(format!("cannot read the current directory: {e}")))?;
    let runtime = dsh_core::runtime().map_err(ServeError)?;
    let server = DshServer {
        base,
        cwd,
        sessions: Sessions::default(),
    };
    let outcome = runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError(format!("the MCP client's initialize failed: {e}")))?;
        service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| ServeError(format!("the MCP connection failed: {e}")))
    });
    // A turn running when the client hung up was cancelled and closed before the service
    // ended; nothing else should hold the exit.
    runtime.shutdown_background();
    outcome
}

#[derive(Clone)]
struct DshServer {
    base: Flags,
    /// Where the server was started: a call's `cwd` is taken from here.
    cwd: PathBuf,
    sessions: Sessions,
}

impl DshServer {
    /// The task a call asks for, or the tool error that says what is wrong with its arguments.
    fn task_for(&self, request: &CallToolRequestParams) -> Result<Task, ArgumentError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let mut flags = self.base.clone();
        match request.name.as_ref() {
            arguments::TASK_TOOL => {
                let call = TaskArguments::parse(&arguments)?;
                if let Some(model) = call.model {
                    flags.model = Some(model);
                }
                flags.session_id = None;
                Ok(Task {
                    flags,
                    cwd: self.resolve(call.cwd),
                    prompt: call.prompt,
                    sandbox: call.sandbox,
                })
            }
            _ => {
                let call = ReplyArguments::parse(&arguments)?;
                let cwd = match call.cwd {
                    Some(cwd) => self.resolve(Some(cwd)),
                    None => (self.sessions.folder_of(&call.session_id))
                        .unwrap_or_else(|| self.cwd.clone()),
                };
                flags.session_id = Some(call.session_id);
                Ok(Task {
                    flags,
                    cwd,
                    prompt: call.prompt,
                    sandbox: None,
                })
            }
        }
    }

    fn resolve(&self, cwd: Option<PathBuf>) -> PathBuf {
        match cwd {
            Some(cwd) => self.cwd.join(cwd),
            None => self.cwd.clone(),
        }
    }
}

impl ServerHandler for DshServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("dsh", env!("CARGO_PKG_VERSION"))
                    .with_title("dsh coding agent"),
            )
            .with_instructions(
                "dsh is a coding agent. Call `dsh` with a task to have it work in a folder \
                 (reading, editing and running commands in its sandbox); it answers when the \
                 task is done and gives you its session id. Call `dsh-reply` with that id to \
                 follow up in the same conversation.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(arguments::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !arguments::is_ours(&request.name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool \"{}\": this server offers {} and {}",
                    request.name,
                    arguments::TASK_TOOL,
                    arguments::REPLY_TOOL
                ),
                None,
            ));
        }
        let task = match self.task_for(&request) {
            Ok(task) => task,
            Err(error) => return Ok(tool_error(error.to_string()).into()),
        };
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| Progress::new(context.peer.clone(), token));
        // A session takes one turn at a time: a reply waits for the turn before it (one
        // just cancelled, say) to close its log.
        let _turn = match &task.flags.session_id {
            Some(id) => tokio::select! {
                turn = self.sessions.turn_of(id) => turn,
                () = context.ct.cancelled() => return Ok(tool_error("cancelled".into()).into()),
            },
            None => None,
        };
        let result = match task.run(progress, context.ct.clone(), &self.sessions).await {
            Ok(ran) => ran.into_result(),
            Err(failure) => tool_error(failure.to_string()),
        };
        Ok(result.into())
    }
}

/// A result the calling model reads as a failed call.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
