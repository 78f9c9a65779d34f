//! What the MCP client's integration tests share: a tool context, and servers started with
//! their tools in a registry.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use dsh_mcp::{McpServer, McpServers, McpStartup};
use dsh_tools::{ToolContext, ToolRegistry};
use tokio::sync::mpsc::UnboundedSender;

/// A call's context in `dir`, sandboxed for workspace-write.
pub fn context(dir: &Path) -> ToolContext {
    ToolContext::in_workspace(dir)
}

/// `server` started under `servers` and listed, its tools in a registry; it must start.
pub async fn started(
    servers: &McpServers,
    server: McpServer,
    notices: UnboundedSender<String>,
) -> ToolRegistry {
    let (startup, joined) = McpStartup::begin(servers, vec![server], notices);
    let ready = startup
        .ready(Duration::from_secs(30), joined)
        .await
        .expect("the server starts");
    let mut registry = ToolRegistry::new();
    for group in ready.groups {
        registry.set_group(group);
    }
    registry
}
