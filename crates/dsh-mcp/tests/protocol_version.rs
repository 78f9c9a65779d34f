//! dsh offers the newest protocol version it speaks and settles on an older one when the
//! server answers with it, as the MCP lifecycle says: the server below knows only 2025-06-18.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use dsh_mcp::{McpServer, McpServers, McpStartup, Transport};

/// A stdio MCP server that answers every `initialize` with the version in `$ANSWER`, writes
/// the version the client offered to `offered.txt`, and serves one tool, `ping`.
const SERVER: &str = r#"
import json, os, sys
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        open("offered.txt", "w").write(message["params"]["protocolVersion"])
        result = {"protocolVersion": os.environ["ANSWER"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "old", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "pong"}]}
    elif ident is None:
        continue
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\n")
    sys.stdout.flush()
"#;

fn answering(version: &str, dir: &std::path::Path) -> McpServer {
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.push(("ANSWER".into(), version.into()));
    McpServer {
        name: "old".into(),
        transport: Transport::Stdio {
            command: "python3".into(),
            args: vec!["-c".into(), SERVER.into()],
            env,
            cwd: dir.to_path_buf(),
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: true,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_protocol_version_the_server_answers_with_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    // It must start: `started` fails the test otherwise.
    let registry = common::started(&servers, answering("2025-06-18", dir.path()), notices).await;
    let context = common::context(dir.path());
    let result = registry.execute("mcp__old__ping", "{}", &context).await;
    assert_eq!(result.text(), "pong");
    let offered = std::fs::read_to_string(dir.path().join("offered.txt")).unwrap();
    assert_eq!(
        offered, "2026-07-28",
        "dsh offers the newest version it speaks"
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_dsh_does_not_speak_ends_the_connection_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let (startup, joined) =
        McpStartup::begin(&servers, vec![answering("2019-01-01", dir.path())], notices);
    let Err(error) = startup.ready(Duration::from_secs(30), joined).await else {
        panic!("a server on an unknown version must not start");
    };
    assert!(
        error
            .reason
            .contains("protocol version 2019-01-01, which dsh does not speak"),
        "{}",
        error.reason
    );
    servers.shutdown().await;
}
