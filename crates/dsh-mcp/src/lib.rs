//! dsh's MCP client: the configured servers' tools, offered to the model as
//! `mcp__<server>__<tool>`.
//!
//! [`McpStartup::begin`] starts every server at once (a child process speaking MCP on its
//! stdio, or a streamable-HTTP endpoint). [`McpStartup::ready`] then waits for the servers that
//! must start (`fail_on_startup_error`) and gives the others a short grace period; a server
//! ready later sends its tools as a [`ToolGroup`] that joins the next request. A server that
//! says its tool list changed is listed again the same way. A call that finds its server gone
//! restarts it once; one whose connection fails under it drops the connection, so the next
//! call connects afresh. Every failure of a call, from a timeout to the server's own error result,
//! is a tool error the model reads.
//!
//! Servers are not confined by dsh's sandbox: like the model's provider, they are part of the
//! set-up the user chose, not commands the model runs.

mod bounded;
mod content;
mod elicit;
mod failures;
mod handler;
mod link;
mod name;
pub mod oauth;
mod resources;
mod tool;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_tools::ToolGroup;
use futures_util::future::BoxFuture;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::{AbortHandle, JoinHandle};

pub use name::{public_tool_name, valid_server_name};

pub use dsh_protocol::shown_url;
use link::Link;

/// One configured server.
#[derive(Debug, Clone)]
pub struct McpServer {
    /// The namespace of its tools' names (see [`valid_server_name`]).
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
        /// Where its OAuth sign-in is kept and how dsh signs in; `None` when the
        /// configuration sends its own `Authorization` header.
        oauth: Option<oauth::OAuthSetup>,
    },
}

/// A server that had to start and did not: the run stops before its task is sent.
#[derive(Debug, thiserror::Error)]
#[error("MCP server \"{server}\" could not start: {reason}")]
pub struct McpStartupError {
    pub server: String,
    pub reason: String,
}

/// The servers of a run, from before they start to after they are stopped: a handle the run
/// keeps on every path out, so no server outlives it. Cloning it gives another handle to the
/// same servers.
#[derive(Clone, Default)]
pub struct McpServers {
    inner: Arc<Mutex<Started>>,
}

#[derive(Default)]
struct Started {
    /// The run's redactor, which learns the tokens renewed during the run.
    redactor: Option<dsh_tools::Redactor>,
    /// Who answers a server's questions (elicitation); none in a headless run.
    questions: Option<Arc<dyn dsh_tools::UserQuestions>>,
    links: Vec<Arc<Link>>,
    /// The start-up tasks, stopped first so none spawns a server after the stop.
    starts: Vec<AbortHandle>,
}

/// The servers, starting.
pub struct McpStartup {
    starting: Vec<(Arc<Link>, JoinHandle<Listing>)>,
    notices: UnboundedSender<String>,
    /// The handle, for the resource tools over every server.
    handle: McpServers,
}

/// A server's tools, or why it could not start.
type Listing = Result<ToolGroup, String>;

/// What [`McpStartup::ready`] has for the first request.
pub struct McpReady {
    /// The tools of every server ready in time.
    pub groups: Vec<ToolGroup>,
    /// Where the tools of later servers, and changed lists, arrive.
    pub joins: UnboundedReceiver<ToolGroup>,
}

impl McpStartup {
    /// Starts every server at once, each registered with `handle` before it spawns anything;
    /// `notices` gets lines for the user (the servers' stderr, late starts, failures). Must be
    /// called within a Tokio runtime.
    pub fn begin(
        handle: &McpServers,
        servers: Vec<McpServer>,
        notices: UnboundedSender<String>,
    ) -> (McpStartup, UnboundedReceiver<ToolGroup>) {
        let (joins, joined) = unbounded_channel();
        let mut started = handle.lock();
        let starting = servers
            .into_iter()
            .map(|server| {
                let link = Link::new(
                    server,
                    joins.clone(),
                    notices.clone(),
                    link::Attached {
                        redactor: started.redactor.clone(),
                        questions: started.questions.clone(),
                    },
                );
                let task = {
                    let link = link.clone();
                    tokio::spawn(async move { link.start().await })
                };
                started.links.push(link.clone());
                started.starts.push(task.abort_handle());
                (link, task)
            })
            .collect();
        (
            McpStartup {
                starting,
                notices,
                handle: handle.clone(),
            },
            joined,
        )
    }

    /// Waits for every server that must start, and up to `grace` for the others. A server
    /// still starting after that joins later through `joined` (or, failing, says so in a
    /// notice). Fails with the first server that had to start and did not; stopping the
    /// servers is then, as always, the handle's [`McpServers::shutdown`].
    pub async fn ready(
        self,
        grace: Duration,
        joined: UnboundedReceiver<ToolGroup>,
    ) -> Result<McpReady, McpStartupError> {
        let deadline = tokio::time::Instant::now() + grace;
        let mut groups = Vec::new();
        for (link, mut task) in self.starting {
            let name = link.server.name.clone();
            let outcome = if link.server.fail_on_startup_error {
                Some((&mut task).await)
            } else {
                tokio::time::timeout_at(deadline, &mut task).await.ok()
            };
            let Some(outcome) = outcome else {
                let notices = self.notices.clone();
                let _ = notices.send(format!(
                    "mcp {name}: still starting; its tools join when it is ready"
                ));
                let handle = self.handle.clone();
                tokio::spawn(async move {
                    match task.await {
                        Ok(Ok(group)) => {
                            // The tools first: whoever reads the notice finds them there.
                            let line =
                                format!("mcp {name}: ready with {} tools", group.tools.len());
                            link.publish(group);
                            if link.has_resources() {
                                link.publish(resources::group(&handle));
                            }
                            let _ = notices.send(line);
                        }
                        Ok(Err(reason)) => {
                            let _ = notices.send(failed(&name, &reason));
                        }
                        // Stopped by the shutdown.
                        Err(_) => {}
                    }
                });
                continue;
            };
            match outcome.map_err(|e| format!("its start-up failed inside dsh: {e}")) {
                Ok(Ok(group)) => groups.push(group),
                Ok(Err(reason)) | Err(reason) => {
                    if link.server.fail_on_startup_error {
                        return Err(McpStartupError {
                            server: name,
                            reason,
                        });
                    }
                    let _ = self.notices.send(failed(&name, &reason));
                }
            }
        }
        if self.handle.links().iter().any(|link| link.has_resources()) {
            groups.push(resources::group(&self.handle));
        }
        Ok(McpReady {
            groups,
            joins: joined,
        })
    }
}

fn failed(name: &str, reason: &str) -> String {
    format!("mcp {name}: could not start ({reason}); the session runs without its tools")
}

impl McpServers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Started> {
        // A panic elsewhere while the list was held leaves it whole: keep using it.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stops every server, those still starting included, and forwards their last stderr
    /// lines. Each is given its stop sequence at once: input closed and a moment to exit,
    /// then SIGTERM to its process group, then SIGKILL: about 2 s for a server that ignores
    /// both, 4.3 s at most however the servers behave. No server starts after this is called;
    /// [`McpServers::kill_now`] still reaches every group while this runs.
    ///
    /// Boxed so that it is compiled once, here, and not in every front end that awaits it.
    pub fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shut_down_all())
    }

    async fn shut_down_all(&self) {
        let links = {
            let mut started = self.lock();
            for start in started.starts.drain(..) {
                start.abort();
            }
            started.links.clone()
        };
        futures_util::future::join_all(links.iter().map(|link| link.shutdown())).await;
    }

    /// Gives the servers started from now on the run's redactor: a token renewed during the
    /// run is a secret the run learns then, and must be redacted like the others.
    pub fn redact_with(&self, redactor: Option<dsh_tools::Redactor>) {
        self.lock().redactor = redactor;
    }

    /// Gives the servers started from now on someone to put their questions to: only then is
    /// elicitation declared to them. Without, a question is declined with a notice.
    pub fn answer_with(&self, questions: Option<Arc<dyn dsh_tools::UserQuestions>>) {
        self.lock().questions = questions;
    }

    /// Every server started, in start order.
    fn links(&self) -> Vec<Arc<Link>> {
        self.lock().links.clone()
    }

    /// Kills every server's process group at once, without waiting: for a process about to
    /// exit (a second Ctrl-C).
    pub fn kill_now(&self) {
        let started = self.lock();
        for start in &started.starts {
            start.abort();
        }
        for link in &started.links {
            link.kill_now();
        }
    }
}
