//! One server's connection: started, listed, called, restarted when a call finds it gone.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc::UnboundedSender;

use crate::{McpServer, Transport};
use dsh_tools::{Tool, ToolGroup};

/// How many of a server's last stderr lines an error quotes.
const STDERR_TAIL: usize = 8;

type Running = RunningService<RoleClient, Handler>;

/// A server and, while it is connected, the running client.
pub(crate) struct Link {
    pub(crate) server: McpServer,
    running: tokio::sync::Mutex<Option<Running>>,
    /// Where a new tool list goes when the server says its list changed.
    joins: UnboundedSender<ToolGroup>,
    /// Lines for the user: the server's stderr, re-syncs, failures.
    notices: UnboundedSender<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Link {
    pub(crate) fn new(
        server: McpServer,
        joins: UnboundedSender<ToolGroup>,
        notices: UnboundedSender<String>,
    ) -> Arc<Link> {
        Arc::new(Link {
            server,
            running: tokio::sync::Mutex::new(None),
            joins,
            notices,
            stderr_tail: Arc::new(Mutex::new(VecDeque::new())),
        })
    }

    /// Connects and lists the tools, within the server's startup timeout.
    pub(crate) async fn start(self: &Arc<Self>) -> Result<Vec<Box<dyn Tool>>, String> {
        let limit = self.server.startup_timeout;
        let started = tokio::time::timeout(limit, async {
            let peer = self.connect().await?;
            list_tools(self, &peer).await
        })
        .await;
        match started {
            Ok(result) => result,
            Err(_) => Err(format!(
                "it did not answer within {} ms{}; raise startup_timeout_ms if it needs longer",
                limit.as_millis(),
                self.stderr_note()
            )),
        }
    }

    /// Calls `raw` with `arguments` within the call timeout, restarting the connection first
    /// when it was lost.
    pub(crate) async fn call(
        self: &Arc<Self>,
        raw: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, String> {
        let peer = match self.live_peer().await {
            Some(peer) => peer,
            None => tokio::time::timeout(self.server.startup_timeout, self.connect())
                .await
                .map_err(|_| {
                    format!(
                        "MCP server \"{}\" was disconnected and did not come back within {} ms",
                        self.server.name,
                        self.server.startup_timeout.as_millis()
                    )
                })?
                .map_err(|e| {
                    format!(
                        "MCP server \"{}\" was disconnected and could not be restarted: {e}",
                        self.server.name
                    )
                })?,
        };
        let mut params = CallToolRequestParams::new(raw.to_owned());
        params.arguments = Some(arguments);
        let limit = self.server.call_timeout;
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(error)) => Err(call_error(&self.server.name, &error)),
            Err(_) => Err(format!(
                "MCP error -32001: Request timed out after {} ms (call_timeout_ms of MCP server \
                 \"{}\")",
                limit.as_millis(),
                self.server.name
            )),
        }
    }

    /// Stops the server: closes its input and waits a moment, then kills it.
    pub(crate) async fn shutdown(&self) {
        if let Some(mut running) = self.running.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), running.close()).await;
        }
    }

    async fn live_peer(&self) -> Option<Peer<RoleClient>> {
        let running = self.running.lock().await;
        running
            .as_ref()
            .filter(|r| !r.is_closed() && !r.peer().is_transport_closed())
            .map(|r| r.peer().clone())
    }

    /// Starts the transport and the MCP handshake; the running client replaces any old one.
    async fn connect(self: &Arc<Self>) -> Result<Peer<RoleClient>, String> {
        let handler = Handler {
            link: Arc::downgrade(self),
        };
        let running = match &self.server.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear().envs(env.iter().cloned());
                cmd.current_dir(cwd);
                // Its own process group: a Ctrl-C at the terminal stops dsh, which then stops
                // the server, rather than reaching the server first.
                cmd.process_group(0);
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        format!(
                            "cannot run \"{}\": {e}; check the server's command",
                            command.to_string_lossy()
                        )
                    })?;
                if let Some(stderr) = stderr {
                    self.follow_stderr(stderr);
                }
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("{e}{}", self.stderr_note()))?
            }
            Transport::Http { url, headers } => {
                let client = http_client()?;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
                for (name, value) in headers {
                    let name = reqwest::header::HeaderName::try_from(name.as_str())
                        .map_err(|e| format!("header \"{name}\" cannot be sent: {e}"))?;
                    let value =
                        reqwest::header::HeaderValue::try_from(value.as_str()).map_err(|e| {
                            format!("header \"{name}\" has a value that cannot be sent: {e}")
                        })?;
                    config.custom_headers.insert(name, value);
                }
                let transport = StreamableHttpClientTransport::with_client(client, config);
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("{e} (at {url})"))?
            }
        };
        let peer = running.peer().clone();
        if let Some(mut old) = self.running.lock().await.replace(running) {
            let _ = tokio::time::timeout(Duration::from_secs(1), old.close()).await;
        }
        Ok(peer)
    }

    /// Forwards the server's stderr as notices and keeps its last lines for errors.
    fn follow_stderr(&self, stderr: tokio::process::ChildStderr) {
        let tail = self.stderr_tail.clone();
        let notices = self.notices.clone();
        let name = self.server.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = notices.send(format!("mcp {name}: {line}"));
                let Ok(mut tail) = tail.lock() else { break };
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
    }

    /// The server's last stderr lines, for an error message; empty when it wrote none.
    fn stderr_note(&self) -> String {
        let Ok(tail) = self.stderr_tail.lock() else {
            return String::new();
        };
        if tail.is_empty() {
            return String::new();
        }
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!("; its last stderr lines: {}", lines.join(" | "))
    }
}

/// Lists every page of the server's tools as dsh tools.
async fn list_tools(
    link: &Arc<Link>,
    peer: &Peer<RoleClient>,
) -> Result<Vec<Box<dyn Tool>>, String> {
    let listed = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("listing its tools failed: {e}"))?;
    crate::tool::bridge(link, listed)
}

/// A reqwest client for streamable HTTP, with the same TLS set-up as the model clients.
fn http_client() -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot set up HTTP: {e}"))
}

fn call_error(server: &str, error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(e) => {
            format!("MCP error {}: {}", e.code.0, e.message)
        }
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => format!(
            "MCP server \"{server}\" closed the connection during the call: {error}; the next \
             call restarts it"
        ),
        other => format!("MCP server \"{server}\": {other}"),
    }
}

/// Answers the server's notifications: a changed tool list is listed again and replaces the
/// old one from the next request on.
#[derive(Clone)]
pub(crate) struct Handler {
    link: Weak<Link>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(link) = self.link.upgrade() else {
            return;
        };
        match list_tools(&link, &context.peer).await {
            Ok(tools) => {
                let line = format!(
                    "mcp {}: tool list changed, now {} tools",
                    link.server.name,
                    tools.len()
                );
                let _ = link.joins.send(ToolGroup {
                    name: link.server.name.clone(),
                    tools,
                });
                let _ = link.notices.send(line);
            }
            Err(e) => {
                let _ = link.notices.send(format!(
                    "mcp {}: the tool list changed but could not be read again ({e}); keeping \
                     the old one",
                    link.server.name
                ));
            }
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("dsh", env!("CARGO_PKG_VERSION")),
        )
    }
}
