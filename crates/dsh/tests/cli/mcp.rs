//! MCP servers: the official reference server (`@modelcontextprotocol/server-everything` from
//! npm, installed by `.ci/run`) over stdio and streamable HTTP, driven from a scripted session.
//!
//! Without the server on PATH these tests say so and pass, unless `DSH_TEST_REQUIRE_MCP=1`
//! (set by `.ci/run`), which makes its absence a failure.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// The reference server's executable, when installed.
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

fn config(env: &TestEnv, toml: &str) {
    env.write(".dsh/config.toml", toml);
}

fn result_text(request: &dsh_testkit::Request, index: usize) -> String {
    request.tool_results()[index].clone()
}

#[test]
fn a_stdio_server_s_tools_are_offered_and_called() {
    let Some(server) = everything() else { return };
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("mcp__everything__echo", json!({"message": "hello"})),
            ("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
            ("mcp__everything__get-sum", json!({"a": "two"})),
            ("mcp__everything__get-env", json!({})),
        ]),
        Turn::text("done"),
    ]);
    config(
        &env,
        &format!(
            "[mcp.servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\nenv = {{ FROM_CONFIG = \"set\" }}\n",
            server.display().to_string()
        ),
    );
    let out = dsh_testkit::RunOutput::of(
        env.command(dsh())
            .env("MCP_TEST_SECRET_TOKEN", "hidden")
            .env("MCP_TEST_PLAIN", "visible")
            .arg("use the tools"),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let names = requests[0].tool_names();
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-env",
        "read",
    ] {
        assert!(names.contains(&name.to_owned()), "{name} not in {names:?}");
    }
    // The server's own schema is what the model is given.
    let tools = requests[0].body["tools"].as_array().unwrap();
    let sum = tools
        .iter()
        .find(|t| t["function"]["name"] == "mcp__everything__get-sum")
        .unwrap();
    assert_eq!(sum["function"]["parameters"]["required"], json!(["a", "b"]));
    let last = &requests[1];
    assert_eq!(result_text(last, 0), "Echo: hello");
    assert_eq!(result_text(last, 1), "The sum of 2 and 3 is 5.");
    let refused = result_text(last, 2);
    assert!(refused.starts_with("Error: "), "{refused}");
    assert!(refused.contains("a") && refused.contains("b"), "{refused}");
    let printed: Value = serde_json::from_str(&result_text(last, 3)).unwrap();
    assert_eq!(printed["FROM_CONFIG"], "set");
    assert_eq!(printed["MCP_TEST_PLAIN"], "visible");
    assert!(printed.get("MCP_TEST_SECRET_TOKEN").is_none(), "{printed}");
    assert!(printed.get("DSH_HOME").is_none(), "{printed}");
    assert!(printed.get("DEEPSEEK_API_KEY").is_none(), "{printed}");
}

/// `mcp-server-everything streamableHttp` on a free loopback port, stopped when dropped.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start(server: &std::path::Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
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

#[test]
fn a_streamable_http_server_s_tools_are_offered_and_called() {
    let Some(server) = everything() else { return };
    let http = HttpServer::start(&server);
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__web__echo", json!({"message": "over http"})),
        Turn::text("done"),
    ]);
    config(
        &env,
        &format!(
            "[mcp.servers.web]\nurl = \"http://127.0.0.1:{}/mcp\"\nheaders = {{ X-Test = \"1\" }}\n",
            http.port
        ),
    );
    let out = env.run(dsh(), &["--json", "use the tool"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    assert!(
        requests[0]
            .tool_names()
            .contains(&"mcp__web__echo".to_owned())
    );
    assert_eq!(result_text(&requests[1], 0), "Echo: over http");
    let events = out.events();
    let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
    assert_eq!(call["tool"], "mcp__web__echo");
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["result"], "Echo: over http");
}

#[test]
fn a_call_past_its_timeout_is_an_error_the_model_reads() {
    let Some(server) = everything() else { return };
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "mcp__slow__trigger-long-running-operation",
            json!({"duration": 30, "steps": 1}),
        ),
        Turn::text("gave up"),
    ]);
    config(
        &env,
        &format!(
            "[mcp.servers.slow]\ncommand = {:?}\nargs = [\"stdio\"]\ncall_timeout_ms = 300\n",
            server.display().to_string()
        ),
    );
    let out = env.run(dsh(), &["wait"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        result_text(&env.server.requests()[1], 0),
        "Error: MCP error -32001: Request timed out after 300 ms (call_timeout_ms of MCP server \"slow\")"
    );
}

#[test]
fn a_required_server_that_cannot_start_stops_the_run_before_the_task() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    config(
        &env,
        "[mcp.servers.tools]\ncommand = \"dsh-test-no-such-server\"\nfail_on_startup_error = true\n",
    );
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "dsh: MCP server \"tools\" could not start: cannot run \"dsh-test-no-such-server\": "
        ),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty());
    let events = out.events();
    assert_eq!(events.last().unwrap()["type"], "error");
}

#[test]
fn an_optional_server_that_cannot_start_is_reported_and_the_run_goes_on() {
    let env = TestEnv::new(vec![Turn::text("fine")]);
    config(
        &env,
        "[mcp.servers.tools]\ncommand = \"sh\"\nargs = [\"-c\", \"echo no config here >&2; exit 3\"]\n",
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "fine\n");
    assert!(
        out.stderr.contains("dsh: mcp tools: no config here"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("; the session runs without its tools"),
        "{}",
        out.stderr
    );
    let names = env.server.requests()[0].tool_names();
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
}

#[test]
fn bad_server_entries_are_refused_with_the_key() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    for (toml, expected) in [
        (
            "[mcp.servers.a]\n",
            "config mcp.servers.a: give command (a stdio server) or url (an HTTP server)",
        ),
        (
            "[mcp.servers.a]\ncommand = \"x\"\nurl = \"http://h\"\n",
            "config mcp.servers.a: give either command",
        ),
        (
            "[mcp.servers.\"a.b\"]\ncommand = \"x\"\n",
            "config mcp.servers.a.b: the name must be 1 to 32 letters",
        ),
        (
            "[mcp.servers.a]\nurl = \"ftp://h\"\n",
            "url \"ftp://h\" is not an http:// or https:// address",
        ),
    ] {
        config(&env, toml);
        let out = env.run(dsh(), &["go"]);
        assert_eq!(out.code(), Some(1), "{toml}");
        assert!(out.stderr.contains(expected), "{toml}: {}", out.stderr);
    }
    assert!(env.server.requests().is_empty());
}
