//! Start-up and reconnection against the official reference server
//! (`@modelcontextprotocol/server-everything`, installed by `.ci/run`), run through a shell
//! wrapper that the tests control. Without the server these tests say so and pass, unless
//! `DSH_TEST_REQUIRE_MCP=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use dsh_mcp::{McpServer, McpServers, McpStartup, Transport};
use dsh_testkit::mcp::{HttpServer, everything};
use dsh_testkit::process_alive as alive;
use dsh_tools::ToolRegistry;

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

/// `server` started and listed, its tools in a registry.
async fn ready(server: McpServer) -> (McpServers, ToolRegistry) {
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let registry = common::started(&servers, server, notices).await;
    (servers, registry)
}

use common::context;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_slower_than_the_grace_period_joins_later() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    // It starts only once the test says so, whatever the machine's speed.
    let script = "while [ ! -e go ]; do sleep 0.02; done; exec \"$SERVER\" stdio";
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let (startup, joined) = McpStartup::begin(
        &servers,
        vec![wrapped("late", script, &server, dir.path())],
        notices,
    );
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
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_finds_its_server_gone_restarts_it() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Each start appends its process id, so the test can kill the running one.
    let script = "echo $$ >> pids; exec \"$SERVER\" stdio";
    let (servers, registry) = ready(wrapped("again", script, &server, dir.path())).await;
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
    servers.shutdown().await;
}

/// Waits, up to 10 s, for `pid` to be gone; SIGKILL takes effect soon, not at once.
async fn gone(pid: i32) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(dsh_testkit::POLL).await;
    }
    true
}

/// The pids a script announced on stderr as `pid N` (forwarded as notices).
async fn announced(
    lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    name: &str,
    count: usize,
) -> Vec<i32> {
    let prefix = format!("mcp {name}: pid ");
    let mut pids = Vec::new();
    while pids.len() < count {
        let line = lines.recv().await.unwrap();
        if let Some(pid) = line.strip_prefix(&prefix) {
            pids.push(pid.trim().parse().unwrap());
        }
    }
    pids
}

fn silent(name: &str, script: &str, dir: &Path) -> McpServer {
    McpServer {
        name: name.into(),
        transport: Transport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: std::env::vars_os().collect(),
            cwd: dir.to_path_buf(),
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(600),
        fail_on_startup_error: false,
    }
}

/// A script that never answers, ignores SIGTERM and has a child of its own in its group; it
/// announces both pids.
const STUBBORN: &str = "trap '' TERM; sleep 600 & echo \"pid $!\" >&2; echo \"pid $$\" >&2; wait";

/// A `silent` server started under its own handle; its notices, and the first `count` pids
/// its script announced.
async fn started(
    name: &str,
    script: &str,
    count: usize,
    dir: &Path,
) -> (
    McpServers,
    tokio::sync::mpsc::UnboundedReceiver<String>,
    Vec<i32>,
) {
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let _ = McpStartup::begin(&servers, vec![silent(name, script, dir)], notices);
    let pids = announced(&mut lines, name, count).await;
    (servers, lines, pids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_starting_is_stopped_with_everything_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let (servers, _lines, pids) = started("mute", STUBBORN, 2, dir.path()).await;
    assert!(pids.iter().all(|&pid| alive(pid)));
    servers.shutdown().await;
    for pid in pids {
        assert!(gone(pid).await, "process {pid} outlived the shutdown");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_now_takes_the_whole_group_without_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let script = "sleep 600 & echo \"pid $!\" >&2; echo \"pid $$\" >&2; wait";
    let (servers, _lines, pids) = started("quick", script, 2, dir.path()).await;
    servers.kill_now();
    for pid in pids {
        assert!(gone(pid).await, "process {pid} outlived kill_now");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_that_is_not_utf8_is_passed_on_and_read_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let script = "printf 'bad \\377\\376 bytes\\n' >&2; echo after >&2; echo \"pid $$\" >&2; \
                  exec sleep 600";
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let (_startup, _joined) =
        McpStartup::begin(&servers, vec![silent("bytes", script, dir.path())], notices);
    assert_eq!(
        lines.recv().await.unwrap(),
        "mcp bytes: bad \u{fffd}\u{fffd} bytes"
    );
    assert_eq!(lines.recv().await.unwrap(), "mcp bytes: after");
    let pids = announced(&mut lines, "bytes", 1).await;
    servers.shutdown().await;
    assert!(gone(pids[0]).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_now_during_the_stop_sequence_takes_the_groups_being_stopped() {
    use futures_util::FutureExt as _;
    let dir = tempfile::tempdir().unwrap();
    // It ignores its input closing and SIGTERM, so its stop sequence takes seconds.
    let (servers, _lines, pids) = started("slow", STUBBORN, 2, dir.path()).await;
    // One poll starts the stop sequence: the process is taken out to be stopped. The stop is
    // kept, not polled again, so only kill_now can end the processes while it waits.
    let mut stop = Box::pin(servers.shutdown());
    assert!((&mut stop).now_or_never().is_none());
    servers.kill_now();
    for pid in pids {
        assert!(gone(pid).await, "process {pid} outlived kill_now");
    }
    drop(stop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_went_away_is_connected_again_without_its_url_token_shown() {
    let Some(server) = everything() else { return };
    let dir = tempfile::tempdir().unwrap();
    let http = HttpServer::start(&server);
    let port = http.port;
    let token = "s3cret-token-7";
    let web = McpServer {
        name: "web".into(),
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp?token={token}"),
            headers: Vec::new(),
            oauth: None,
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: true,
    };
    let (servers, registry) = ready(web).await;
    let ctx = context(dir.path());
    let args = r#"{"message":"one"}"#;
    assert_eq!(
        registry.execute("mcp__web__echo", args, &ctx).await.text(),
        "Echo: one"
    );
    drop(http);
    let lost = registry.execute("mcp__web__echo", args, &ctx).await;
    assert!(lost.is_error, "{}", lost.text());
    assert!(!lost.text().contains(token), "{}", lost.text());
    // Back on the same port: the next call connects again.
    let _http = HttpServer::start_on(&server, port);
    let back = registry.execute("mcp__web__echo", args, &ctx).await;
    assert_eq!(back.text(), "Echo: one");
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_http_server_is_named_with_what_to_check() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let remote = McpServer {
        name: "remote".into(),
        transport: Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp?token=s3cret"),
            headers: Vec::new(),
            oauth: None,
        },
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: true,
    };
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let (startup, joined) = McpStartup::begin(&servers, vec![remote], notices);
    let Err(error) = startup.ready(Duration::from_secs(30), joined).await else {
        panic!("nothing listens there");
    };
    assert_eq!(
        error.to_string(),
        format!(
            "MCP server \"remote\" could not start: cannot reach \
             http://127.0.0.1:{port}/mcp?[hidden]: connection refused; check that the server is \
             running there, and mcp.servers.remote.url"
        )
    );
    servers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_floods_its_stderr_is_shown_in_part_and_told_how_much_was_held() {
    let dir = tempfile::tempdir().unwrap();
    // 100,000 lines as fast as the pipe takes them, then its stderr closed.
    let script = "i=0; while [ $i -lt 100000 ]; do echo \"noise $i\"; i=$((i+1)); done >&2; \
                  exec 2>&-; exec sleep 600";
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let (_startup, _joined) =
        McpStartup::begin(&servers, vec![silent("loud", script, dir.path())], notices);
    let mut received = Vec::new();
    let limit = Duration::from_secs(30);
    while let Ok(Some(line)) = tokio::time::timeout(limit, lines.recv()).await {
        let told = line.contains("more stderr lines not shown");
        received.push(line);
        if told {
            break;
        }
    }
    servers.shutdown().await;
    let shown = (received.iter())
        .filter(|l| l.starts_with("mcp loud: noise"))
        .count();
    // 50 a window of 10 s: a slow machine may take a few windows to write them all.
    assert!((50..100_000 / 10).contains(&shown), "{shown} lines shown");
    let told = received.last().unwrap();
    assert!(told.contains("more stderr lines not shown"), "{told}");
    dsh_testkit::fault_matrix(
        "attack",
        "an MCP server writes 100,000 lines to its stderr",
        "at most 50 lines shown every 10 s, then how many were held back",
    );
}
