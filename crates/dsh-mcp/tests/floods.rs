//! Servers that send more than dsh should take: a flood of "my tool list changed", a server
//! that keeps changing its list, a result larger than dsh reads. Each is a real stdio server
//! (a Python script) speaking MCP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use dsh_mcp::{McpServer, McpServers, Transport};

/// A server whose `flood` tool sends 20,000 list-changed notifications before it answers,
/// whose `big` tool answers with 20 MB of text, whose `ask` tool asks 300 questions
/// (elicitation) and answers once each has its answer, and which, with `RELIST=1`, says its list
/// changed after every listing, a tool named for the listing's number in the list. It writes
/// how many listings it made to `listings`.
const SERVER: &str = r#"
import json, os, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
changed = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}) + "\n"
listings = 0
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {"listChanged": True}},
              "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        listings += 1
        with open("listings.tmp", "w") as f:
            f.write(str(listings))
        os.replace("listings.tmp", "listings")
        tools = [{"name": name, "inputSchema": {"type": "object"}}
                 for name in ["flood", "big", "ask", "n%d" % listings]]
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": tools}})
        if os.environ.get("RELIST") == "1" and listings > 1:
            sys.stdout.write(changed); sys.stdout.flush()
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "flood":
            sys.stdout.write(changed * 20000)
            text = "flooded"
        elif name == "big":
            text = "x" * (20 << 20)
        elif name == "ask":
            question = {"message": "confirm?", "requestedSchema": {"type": "object",
                        "properties": {"a": {"type": "string"}}}}
            for i in range(300):
                send({"jsonrpc": "2.0", "id": "q%d" % i, "method": "elicitation/create",
                      "params": question})
            answered = 0
            while answered < 300:
                reply = json.loads(sys.stdin.readline())
                if reply.get("method") is None and str(reply.get("id")).startswith("q"):
                    answered += 1
            text = "asked"
        else:
            text = "listings so far: %d" % listings
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [
            {"type": "text", "text": text}]}})
    elif method is not None and ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
"#;

fn server(dir: &Path, relist: bool) -> McpServer {
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.push(("RELIST".into(), if relist { "1" } else { "0" }.into()));
    McpServer {
        name: "flood".into(),
        transport: Transport::Stdio {
            command: "python3".into(),
            args: vec!["-c".into(), SERVER.into()],
            env,
            cwd: dir.to_path_buf(),
        },
        call_timeout: Duration::from_secs(120),
        startup_timeout: Duration::from_secs(30),
        fail_on_startup_error: true,
    }
}

/// How many listings the server has made.
fn listings(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join("listings"))
        .map(|text| text.trim().parse().unwrap())
        .unwrap_or(0)
}

/// The red team's finding 4 after issue 47: a server that sends list-changed without end had
/// dsh list its tools once for each notification, all at once (dsh grew past 1 GB). Now one
/// listing runs at a time and one more is owed, so 20,000 notifications make two or three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_list_changed_notifications_is_listed_a_few_times() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let registry = common::started(&servers, server(dir.path(), false), notices).await;
    let context = common::context(dir.path());
    let result = registry.execute("mcp__flood__flood", "{}", &context).await;
    assert_eq!(result.text(), "flooded");
    // The owed listing says so when it is done: the flood is over by then.
    let mut told = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while told.len() < 2 && Instant::now() < deadline {
        let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(60), lines.recv()).await
        else {
            break;
        };
        if line.contains("tool list changed") {
            told.push(line);
        }
    }
    assert_eq!(told.len(), 2, "{told:?}");
    // Asked behind whatever listings dsh asked for: each one is answered before this.
    let count = registry.execute("mcp__flood__n1", "{}", &context).await;
    servers.shutdown().await;
    let made = listings(dir.path());
    assert!(made <= 6, "{made} listings ({})", count.text());
    while let Ok(line) = lines.try_recv() {
        if line.contains("tool list changed") {
            told.push(line);
        }
    }
    assert!(told.len() <= 5, "{told:?}");
    dsh_testkit::fault_matrix(
        "attack",
        "an MCP server sends 20,000 tools/list_changed notifications at once",
        "one listing at a time and one more owed: at most a few listings, not one each",
    );
}

/// A server that says its list changed after every listing, with a new list each time, is
/// listed again and again (once a second), and the user is told of its changes five times a
/// minute, not at each listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_keeps_changing_its_list_is_told_of_in_part() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let registry = common::started(&servers, server(dir.path(), true), notices).await;
    // The flood starts it off; then it says its list changed after each listing.
    let context = common::context(dir.path());
    let _ = registry.execute("mcp__flood__flood", "{}", &context).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while listings(dir.path()) < 9 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let made = listings(dir.path());
    servers.shutdown().await;
    let mut told = Vec::new();
    while let Ok(line) = lines.try_recv() {
        if line.contains("tool list changed") {
            told.push(line);
        }
    }
    assert!(made >= 9, "{made} listings");
    assert_eq!(told.len(), 5, "{told:?}");
    dsh_testkit::fault_matrix(
        "attack",
        "an MCP server says its tool list changed after every listing, with a new list each time",
        "listed at most once a second; 5 notices a minute, then how many were held back",
    );
}

/// The red team's note after issue 47: a result of 20 MB or more made the call wait for its
/// timeout (rmcp drops a message past its limit and reads on). Now the call fails at once,
/// saying why, and the next call starts the server again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_larger_than_dsh_reads_fails_the_call_at_once_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, _lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let registry = common::started(&servers, server(dir.path(), false), notices).await;
    let context = common::context(dir.path());
    let result = registry.execute("mcp__flood__big", "{}", &context).await;
    let text = result.text();
    assert!(
        text.starts_with(
            "Error: MCP server \"flood\" sent a message of more than 16 MiB, more than dsh reads from a \
             server (most likely this call's result)"
        ),
        "{}",
        &text[..text.len().min(400)]
    );
    // The server is started again for the next call.
    let next = registry.execute("mcp__flood__n1", "{}", &context).await;
    assert!(
        next.text().starts_with("listings so far: "),
        "{}",
        next.text()
    );
    servers.shutdown().await;
    dsh_testkit::fault_matrix(
        "hostile input",
        "an MCP server answers a call with 20 MB of text",
        "the call fails at once with what the limit is; the next call restarts the server",
    );
}

/// The red team's finding 7 after issue 47: each question a server asks where no one can
/// answer it (a headless run) is declined with a notice, and a server that asked without end
/// made notices without end (230 lines in 25 s). Now they are limited like list changes and
/// stderr: five a minute, then how many were held back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_questions_is_declined_with_a_few_notices() {
    let dir = tempfile::tempdir().unwrap();
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let servers = McpServers::default();
    let registry = common::started(&servers, server(dir.path(), false), notices).await;
    let context = common::context(dir.path());
    // The call ends once each of the 300 questions has been declined.
    let result = registry.execute("mcp__flood__ask", "{}", &context).await;
    assert_eq!(result.text(), "asked");
    servers.shutdown().await;
    let mut told = Vec::new();
    while let Ok(line) = lines.try_recv() {
        if line.contains("declined") {
            told.push(line);
        }
    }
    assert_eq!(told.len(), 5, "{} notices: {told:?}", told.len());
    assert!(
        told[0].contains("asked a question (\"confirm?\") and no one can answer it here"),
        "{told:?}"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "an MCP server asks 300 questions (elicitation) in a run where no one can answer",
        "each declined; 5 notices a minute, then how many were held back",
    );
}
