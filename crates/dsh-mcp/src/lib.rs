//! dsh's MCP client: the configured servers' tools, offered to the model as
//! `mcp__<server>__<tool>`.
//!
//! [`McpStartup::begin`] starts every server at once (a child process speaking MCP on its
//! stdio, or a streamable-HTTP endpoint). [`McpStartup::ready`] then waits for the servers that
//! must start (`fail_on_startup_error`) and gives the others a short grace period; a server
//! ready later sends its tools as a [`ToolGroup`] that joins the next request. A server that
//! says its tool list changed is listed again the same way. A call that finds its server gone
//! restarts it once. Every failure of a call, from a timeout to the server's own error result,
//! is a tool error the model reads.
//!
//! Servers are not confined by dsh's sandbox: like the model's provider, they are part of the
//! set-up the user chose, not commands the model runs.

mod content;
mod link;
mod name;
mod tool;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dsh_tools::ToolGroup;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

pub use name::{public_tool_name, valid_server_name};

use link::Link;

/// One configured server.
#[derive(Debug, Clone)]
pub struct McpServer {
    /// The namespace of its tools' names (`[A-Za-z0-9_-]{1,32}`).
    pub name: String,
    pub transport: Transport,
    /// How long one tool call may take.
    pub call_timeout: Duration,
    /// How long connecting and listing the tools may take.
    pub startup_timeout: Duration,
    /// Whether the run fails when the server cannot start (else it runs without its tools).
    pub fail_on_startup_error: bool,
}

/// How a server is reached.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process speaking MCP on stdin and stdout.
    Stdio {
        command: OsString,
        args: Vec<OsString>,
        /// Its whole environment (the caller scrubs what it inherits).
        env: Vec<(OsString, OsString)>,
        cwd: PathBuf,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// A server that had to start and did not: the run stops before its task is sent.
#[derive(Debug, thiserror::Error)]
#[error("MCP server \"{server}\" could not start: {reason}")]
pub struct McpStartupError {
    pub server: String,
    pub reason: String,
}

/// The servers, starting.
pub struct McpStartup {
    starting: Vec<(Arc<Link>, JoinHandle<Listing>)>,
    joins: UnboundedSender<ToolGroup>,
    notices: UnboundedSender<String>,
}

/// A server's tools, or why it could not start.
type Listing = Result<Vec<Box<dyn dsh_tools::Tool>>, String>;

/// The servers of a running session, for stopping them at its end.
pub struct McpServers {
    links: Vec<Arc<Link>>,
}

/// What [`McpStartup::ready`] has for the first request.
pub struct McpReady {
    /// The tools of every server ready in time.
    pub groups: Vec<ToolGroup>,
    /// Where the tools of later servers, and changed lists, arrive.
    pub joins: UnboundedReceiver<ToolGroup>,
    pub servers: McpServers,
}

impl McpStartup {
    /// Starts every server at once; `notices` gets lines for the user (the servers' stderr,
    /// late starts, failures). Must be called within a Tokio runtime.
    pub fn begin(
        servers: Vec<McpServer>,
        notices: UnboundedSender<String>,
    ) -> (McpStartup, UnboundedReceiver<ToolGroup>) {
        let (joins, joined) = unbounded_channel();
        let starting = servers
            .into_iter()
            .map(|server| {
                let link = Link::new(server, joins.clone(), notices.clone());
                let task = {
                    let link = link.clone();
                    tokio::spawn(async move { link.start().await })
                };
                (link, task)
            })
            .collect();
        (
            McpStartup {
                starting,
                joins,
                notices,
            },
            joined,
        )
    }

    /// Waits for every server that must start, and up to `grace` for the others. A server
    /// still starting after that joins later through `joined` (or, failing, says so in a
    /// notice). Fails with the first server that had to start and did not.
    pub async fn ready(
        self,
        grace: Duration,
        joined: UnboundedReceiver<ToolGroup>,
    ) -> Result<McpReady, McpStartupError> {
        let deadline = tokio::time::Instant::now() + grace;
        let mut groups = Vec::new();
        let mut links = Vec::new();
        for (link, mut task) in self.starting {
            links.push(link.clone());
            let name = link.server.name.clone();
            let outcome = if link.server.fail_on_startup_error {
                Some((&mut task).await)
            } else {
                tokio::time::timeout_at(deadline, &mut task).await.ok()
            };
            let Some(outcome) = outcome else {
                let joins = self.joins.clone();
                let notices = self.notices.clone();
                let _ = notices.send(format!(
                    "mcp {name}: still starting; its tools join when it is ready"
                ));
                tokio::spawn(async move {
                    match task.await {
                        Ok(Ok(tools)) => {
                            // The tools first: whoever reads the notice finds them there.
                            let line = format!("mcp {name}: ready with {} tools", tools.len());
                            let _ = joins.send(ToolGroup { name, tools });
                            let _ = notices.send(line);
                        }
                        Ok(Err(reason)) => {
                            let _ = notices.send(failed(&name, &reason));
                        }
                        Err(_) => {}
                    }
                });
                continue;
            };
            match outcome.map_err(|e| format!("its start-up failed inside dsh: {e}")) {
                Ok(Ok(tools)) => groups.push(ToolGroup { name, tools }),
                Ok(Err(reason)) | Err(reason) => {
                    if link.server.fail_on_startup_error {
                        let servers = McpServers { links };
                        servers.shutdown().await;
                        return Err(McpStartupError {
                            server: name,
                            reason,
                        });
                    }
                    let _ = self.notices.send(failed(&name, &reason));
                }
            }
        }
        Ok(McpReady {
            groups,
            joins: joined,
            servers: McpServers { links },
        })
    }
}

fn failed(name: &str, reason: &str) -> String {
    format!("mcp {name}: could not start ({reason}); the session runs without its tools")
}

impl McpServers {
    /// Stops every server (their input closed, then killed if they linger).
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.links.iter().map(|link| link.shutdown())).await;
    }
}
