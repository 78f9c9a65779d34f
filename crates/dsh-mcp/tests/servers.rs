//! Start-up and reconnection against the official reference server
//! (`@modelcontextprotocol/server-everything`, installed by `.ci/run`), run through a shell
//! wrapper that the tests control. Without the server these tests say so and pass, unless
//! `DSH_TEST_REQUIRE_MCP=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dsh_mcp::{McpServer, McpStartup, Transport};
use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolContext, ToolRegistry, ToolSession};

fn everything() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("mcp-server-everything"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("DSH_TEST_REQUIRE_MCP").as_deref() != Ok("1"),
            "mcp-server-everything is required"
        );
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: mcp-server-everything is not installed");
        }
    }
    found
}

/// A server started by `sh -c script`; `$SERVER` is the reference server.
fn wrapped(name: &str, script: &str, server: &Path, dir: &Path) -> McpServer {
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.push(("SERVER".into(), server.into()));
    McpServer {
        name: name.into(),
        transport: Transport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env,
            cwd: dir.to_path_buf(),
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: false,
    }
}

fn context(dir: &Path) -> ToolContext {
    ToolContext {
        call_id: "c1".into(),
        cwd: dir.to_path_buf(),
        cancel: tokio_util::sync::CancellationToken::new(),
        session: Arc::new(ToolSession::new(
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, dir, Vec::new()),
            SpillStore::new(dir.join(".spill")),
            ModelCaps {
                name: "m".into(),
                image_input: false,
            },
        )),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_grace_period_joins_later() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    // It starts only once the test says so, whatever the machine's speed.
    let script = "while [ ! -e go ]; do sleep 0.02; done; exec \"$SERVER\" stdio";
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let (startup, joined) =
        McpStartup::begin(vec![wrapped("late", script, &server, dir.path())], notices);
    let ready = startup
        .ready(Duration::from_millis(50), joined)
        .await
        .unwrap();
    assert!(ready.groups.is_empty());
    assert_eq!(
        lines.recv().await.unwrap(),
        "mcp late: still starting; its tools join when it is ready"
    );
    let mut registry = ToolRegistry::new();
    registry.follow(ready.joins);
    assert!(!registry.take_joins());
    std::fs::write(dir.path().join("go"), "").unwrap();
    loop {
        let line = lines.recv().await.unwrap();
        if line.starts_with("mcp late: ready with ") {
            break;
        }
    }
    assert!(registry.take_joins());
    assert!(registry.names().any(|n| n == "mcp__late__echo"));
    ready.servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_finds_its_server_gone_restarts_it() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Each start appends its process id, so the test can kill the running one.
    let script = "echo $$ >> pids; exec \"$SERVER\" stdio";
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let (startup, joined) =
        McpStartup::begin(vec![wrapped("again", script, &server, dir.path())], notices);
    let ready = startup
        .ready(Duration::from_secs(30), joined)
        .await
        .unwrap();
    let mut registry = ToolRegistry::new();
    for group in ready.groups {
        registry.set_group(group);
    }
    let ctx = context(dir.path());
    let args = r#"{"message":"one"}"#;
    let first = registry.execute("mcp__again__echo", args, &ctx).await;
    assert_eq!(first.text(), "Echo: one");
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let pid: i32 = pids.trim().parse().unwrap();
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    // A call that reaches the dead server fails and says the next call restarts it (unless
    // the loss was already noticed, when it restarts at once); the next call works.
    let mut outcome = registry.execute("mcp__again__echo", args, &ctx).await;
    if outcome.is_error {
        assert!(
            outcome
                .text()
                .contains("MCP server \"again\" closed the connection"),
            "{}",
            outcome.text()
        );
        outcome = registry.execute("mcp__again__echo", args, &ctx).await;
    }
    assert_eq!(outcome.text(), "Echo: one");
    let starts = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    assert_eq!(starts.lines().count(), 2);
    ready.servers.shutdown().await;
}
