//! The official MCP reference server (`@modelcontextprotocol/server-everything` from npm,
//! installed by `.ci/run`) for tests that need a real server.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The reference server's executable, when installed. Without it a test should say so and
/// pass, unless `DSH_TEST_REQUIRE_MCP=1` (set by `.ci/run`), which makes its absence a
/// failure here.
pub fn everything() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("mcp-server-everything"))
            .find(|candidate| candidate.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("DSH_TEST_REQUIRE_MCP").as_deref() != Ok("1"),
            "mcp-server-everything is required (npm install -g @modelcontextprotocol/server-everything)"
        );
        #[allow(clippy::print_stderr)]
        {
            eprintln!("skipped: mcp-server-everything is not installed");
        }
    }
    found
}

/// `mcp-server-everything streamableHttp` on a loopback port, killed when dropped.
#[derive(Debug)]
pub struct HttpServer {
    child: Child,
    pub port: u16,
}

impl HttpServer {
    /// On a free port.
    pub fn start(server: &Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        HttpServer::start_on(server, port)
    }

    /// On `port`: a server that comes back where an earlier one was.
    pub fn start_on(server: &Path, port: u16) -> HttpServer {
        let mut child = Command::new(server)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It says when it listens; everything before that line is start-up noise.
        let stderr = child.stderr.take().unwrap();
        let mut lines = std::io::BufReader::new(stderr).lines();
        loop {
            let line = lines
                .next()
                .expect("the server ended before listening")
                .unwrap();
            if line.contains("listening on port") {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stdio server whose tool `sign_up` asks the client the SEP-1034 question and returns what
/// came back; it writes the capabilities the client declared to `capabilities.json`.
pub const ASKING_SERVER: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
schema = {"type": "object", "properties": {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "status": {"type": "string", "enum": ["active", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True}}, "required": []}
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        json.dump(message["params"]["capabilities"], open("capabilities.json", "w"))
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "asking", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "sign_up", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "id": "q1", "method": "elicitation/create",
              "params": {"mode": "form", "message": "Who are you?", "requestedSchema": schema}})
        for reply in sys.stdin:
            reply = json.loads(reply)
            if reply.get("id") == "q1":
                break
        send({"jsonrpc": "2.0", "id": ident, "result": {"content": [
            {"type": "text", "text": json.dumps(reply.get("result"), sort_keys=True)}]}})
    elif ident is not None:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
"#;
