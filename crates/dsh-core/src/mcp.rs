//! MCP wired into the run: the servers the settings declare start with the run, before its
//! task is read, and the top agent is offered their tools as each is ready (a subagent has
//! none: MCP tools stay with the top agent).

use std::ffi::OsString;
use std::sync::Arc;

use dsh_mcp::{McpReady, McpServer, McpServers, McpStartup, Transport};
use dsh_tools::{ShellEnv, ToolGroup, UserQuestions};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::config::{McpServerSettings, McpTransport, Settings, SetupError};
use crate::install::{Draft, Role, Seat, Wiring};

/// The run's servers, started and not yet waited for.
pub(crate) struct Starting {
    startup: McpStartup,
    joins: UnboundedReceiver<ToolGroup>,
}

/// A tool list's `mcp__<server>__...` name must name one of the run's MCP servers (the
/// config's, and in an editor its own): else it covers no tool, and the list does not do what
/// it was written for.
pub(crate) fn check_tool_names(settings: &Settings) -> Result<(), SetupError> {
    let servers: Vec<&str> = (settings.mcp_servers().iter())
        .map(|server| server.name.as_str())
        .collect();
    let Some(name) = settings.tool_filter().unknown_server_name(&servers) else {
        return Ok(());
    };
    let servers = if servers.is_empty() {
        "this run has no MCP server (declare one under [mcp.servers.<name>])".to_owned()
    } else {
        format!("this run's MCP servers are {}", servers.join(", "))
    };
    Err(SetupError::config(format!(
        "the tool list names \"{name}\", which covers no tool: {servers}; name a tool as \
         mcp__<server>__<tool> (a trailing * covers several) or a built-in tool ({})",
        dsh_config::BUILTIN_TOOLS.join(", ")
    )))
}

/// Starts the run's servers, registered with `handle` before anything spawns. A server whose
/// every tool is withheld is not started at all; their stderr goes to `notices`, and their
/// questions for the user to `questions`.
pub(crate) fn start(
    handle: &McpServers,
    settings: &Settings,
    shell_env: &ShellEnv,
    questions: Option<Arc<dyn UserQuestions>>,
    notices: UnboundedSender<String>,
) -> Starting {
    let servers = (settings.mcp_servers().iter())
        .filter(|server| {
            settings
                .tool_filter()
                .may_allow_some(&format!("mcp__{}__", server.name))
        })
        .map(|server| McpServer {
            name: server.name.clone(),
            transport: transport(server, settings, shell_env),
            call_timeout: server.call_timeout,
            startup_timeout: server.startup_timeout,
            fail_on_startup_error: server.fail_on_startup_error,
        })
        .collect();
    handle.redact_with(settings.redactor());
    handle.answer_with(questions);
    let (startup, joins) = McpStartup::begin(handle, servers, notices);
    Starting { startup, joins }
}

impl Starting {
    /// Waits for the servers that must start, and up to `mcp.startup_grace_ms` for the others.
    pub(crate) async fn ready(self, settings: &Settings) -> Result<McpReady, SetupError> {
        (self.startup)
            .ready(settings.mcp_grace().value, self.joins)
            .await
            .map_err(|e| {
                let message = dsh_tools::redacted(settings.redactor().as_ref(), e.to_string());
                SetupError::new("MCP_STARTUP", message)
            })
    }
}

/// Gives the top agent the tools of the servers ready in time, and those of the others as
/// they join.
pub(crate) fn install(_wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let Role::Top(top) = &mut seat.role else {
        return;
    };
    let Some(ready) = top.mcp.take() else {
        return;
    };
    for group in ready.groups {
        draft.tools.set_group(group);
    }
    draft.tools.follow(ready.joins);
}

/// The names a run with `settings` offers of its servers' tools, `mcp__<server>__*` each
/// (their tools are known once the server has started).
pub(crate) fn offered(settings: &Settings) -> impl Iterator<Item = String> + '_ {
    (settings.mcp_servers().iter())
        .map(|server| format!("mcp__{}__", server.name))
        .filter(|prefix| settings.tool_filter().may_allow_some(prefix))
        .map(|prefix| format!("{prefix}*"))
}

/// What `dsh-mcp` starts for a server. A stdio server inherits the environment commands get
/// (secrets and `DSH_*` scrubbed) plus its own `env`.
fn transport(server: &McpServerSettings, settings: &Settings, shell_env: &ShellEnv) -> Transport {
    match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut inherited: Vec<(OsString, OsString)> = std::env::vars_os()
                .filter(|(name, _)| !shell_env.scrubs(name))
                .collect();
            for (key, value) in env {
                inherited.retain(|(name, _)| name.as_os_str() != key.as_str());
                inherited.push((key.into(), value.into()));
            }
            Transport::Stdio {
                command: command.into(),
                args: args.iter().map(Into::into).collect(),
                env: inherited,
                cwd: cwd.clone(),
            }
        }
        McpTransport::Http { url, headers, .. } => Transport::Http {
            url: url.clone(),
            headers: headers.clone(),
            oauth: server.oauth_setup(&settings.home().value).map(|setup| {
                match settings.stored_auth().unused_sign_in() {
                    Some(why) => setup.unused_because(why),
                    None => setup,
                }
            }),
        },
    }
}
