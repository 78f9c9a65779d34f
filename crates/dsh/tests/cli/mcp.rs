//! MCP servers: the official reference server (`@modelcontextprotocol/server-everything` from
//! npm, installed by `.ci/run`) over stdio and streamable HTTP, driven from a scripted session.
//!
//! Without the server on PATH these tests say so and pass, unless `DSH_TEST_REQUIRE_MCP=1`
//! (set by `.ci/run`), which makes its absence a failure.

use std::io::BufRead;
use std::process::Stdio;

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

use dsh_testkit::mcp::{HttpServer, everything};
use dsh_testkit::process_alive as alive;

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
            "[mcp.servers.a__b]\ncommand = \"x\"\n",
            "config mcp.servers.a__b: the name must be 1 to 32 letters, digits, `_` or `-`, \
             without `__`",
        ),
        (
            "[mcp.servers.a]\nurl = \"ftp://h/?key=secret1\"\n",
            "config mcp.servers.a: url is not an http:// or https:// address",
        ),
    ] {
        config(&env, toml);
        let out = env.run(dsh(), &["go"]);
        assert_eq!(out.code(), Some(1), "{toml}");
        // The key, then the file that set it, then what is wrong.
        let (key, what) = expected.split_once(": ").unwrap();
        let file = env.ws_path().join(".dsh/config.toml");
        let expected = format!("{key} ({}): {what}", file.display());
        assert!(out.stderr.contains(&expected), "{toml}: {}", out.stderr);
        assert!(!out.stderr.contains("secret1"), "{}", out.stderr);
    }
    assert!(env.server.requests().is_empty());
}

/// Waits up to 10 s for `pid` to be gone: a killed process dies soon, not at once.
fn gone(pid: i32) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(dsh_testkit::POLL);
    }
    true
}

#[test]
fn a_signal_while_a_required_server_starts_stops_the_run_and_the_server_s_group() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    // It never answers, ignores SIGTERM, and has a child of its own.
    config(
        &env,
        "[mcp.servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"trap '' TERM; sleep 600 & echo \\\"pid $!\\\" >&2; echo \\\"pid $$\\\" >&2; wait\"]\nfail_on_startup_error = true\n",
    );
    let mut child = env
        .command(dsh())
        .args(["--json", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut pids = Vec::new();
    while pids.len() < 2 {
        let line = lines.next().expect("dsh ended early").unwrap();
        if let Some(pid) = line.strip_prefix("dsh: mcp mute: pid ") {
            pids.push(pid.trim().parse::<i32>().unwrap());
        }
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "stderr: {rest:?}");
    assert!(
        rest.iter()
            .any(|l| l == "dsh: stopped by a signal before the task was sent"),
        "{rest:?}"
    );
    for pid in pids {
        assert!(gone(pid), "process {pid} outlived dsh");
    }
    assert!(env.server.requests().is_empty());
}

/// The pids a server script wrote to `file` in the workspace, once it has written them (within
/// 60 s).
fn pids_in(env: &TestEnv, file: &str) -> Vec<i32> {
    let path = env.ws_path().join(file);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path)
            && text.ends_with('\n')
        {
            return text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{file} never got its pids"
        );
        std::thread::sleep(dsh_testkit::POLL);
    }
}

#[test]
fn a_required_server_that_fails_takes_the_other_servers_down_with_the_run() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    // `mute` ignores SIGTERM and has a child; `broken` must start, and fails once `mute` runs.
    config(
        &env,
        "[mcp.servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"trap '' TERM; sleep 600 & echo \\\"$! $$\\\" > mute.pids; wait\"]\n\n\
         [mcp.servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"while [ ! -s mute.pids ]; do sleep 0.01; done; echo giving up >&2; exit 3\"]\nfail_on_startup_error = true\n",
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1), "stderr: {}", out.stderr);
    assert!(
        out.stderr
            .contains("dsh: MCP server \"broken\" could not start: "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("giving up"), "{}", out.stderr);
    for pid in pids_in(&env, "mute.pids") {
        assert!(gone(pid), "process {pid} outlived dsh");
    }
    assert!(env.server.requests().is_empty());
}

#[test]
fn a_stdio_server_does_not_outlive_a_dsh_killed_outright() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    // It never answers, so dsh waits for it until it is killed.
    config(
        &env,
        "[mcp.servers.mute]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ > mute.pids; exec sleep 600\"]\nfail_on_startup_error = true\n",
    );
    let mut child = env
        .command(dsh())
        .arg("go")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = pids_in(&env, "mute.pids");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(gone(pids[0]), "the server outlived a killed dsh");
}

/// A loopback TCP proxy that keeps a copy of everything the client sent.
struct Tap {
    port: u16,
    sent: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Tap {
    fn to(upstream: u16) -> Tap {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let copy = sent.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { return };
                let Ok(mut server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                    return;
                };
                let (mut client_read, mut server_read) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                let copy = copy.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 8192];
                    while let Ok(n @ 1..) = client_read.read(&mut buf) {
                        copy.lock().unwrap().extend_from_slice(&buf[..n]);
                        if server.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = server.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut server_read, &mut client);
                    let _ = client.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Tap { port, sent }
    }

    fn sent(&self) -> String {
        String::from_utf8_lossy(&self.sent.lock().unwrap()).into_owned()
    }
}

#[test]
fn configured_headers_are_sent_to_an_http_server() {
    let Some(server) = everything() else { return };
    let http = HttpServer::start(&server);
    let tap = Tap::to(http.port);
    let env = TestEnv::new(vec![
        Turn::tool_call("mcp__web__echo", json!({"message": "tapped"})),
        Turn::text("done"),
    ]);
    config(
        &env,
        &format!(
            "[mcp.servers.web]\nurl = \"http://127.0.0.1:{}/mcp\"\nheaders = {{ X-Dsh-Test = \"header-value-1\" }}\n",
            tap.port
        ),
    );
    let out = env.run(dsh(), &["use the tool"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(result_text(&env.server.requests()[1], 0), "Echo: tapped");
    let sent = tap.sent().to_ascii_lowercase();
    // Every request of the session carries it: the handshake, the listing and the call.
    let posts = sent.matches("post /mcp http/1.1").count();
    assert!(posts >= 3, "{sent}");
    assert_eq!(
        sent.matches("x-dsh-test: header-value-1").count(),
        sent.matches(" /mcp http/1.1").count(),
        "{sent}"
    );
}

#[test]
fn dump_config_hides_what_servers_are_given_but_names_it() {
    let env = TestEnv::new(vec![]);
    config(
        &env,
        "[mcp.servers.gh]\ncommand = \"gh-mcp\"\nenv = { GITHUB_TOKEN = \"ghp_secret1\" }\n\
         [mcp.servers.web]\nurl = \"https://mcp.example.com/v1?key=secret2\"\nheaders = { Authorization = \"Bearer secret3\" }\n",
    );
    let out = env.run(dsh(), &["--dump-config"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    for secret in ["secret1", "secret2", "secret3"] {
        assert!(
            !out.stdout.contains(secret),
            "{secret} shown:\n{}",
            out.stdout
        );
    }
    for shown in [
        "mcp.servers.gh.env.GITHUB_TOKEN = \"[hidden]\"",
        "mcp.servers.web.headers.Authorization = \"[hidden]\"",
        "mcp.servers.web.url = \"https://mcp.example.com/v1?[hidden]\"",
        "mcp.servers.gh.command = \"gh-mcp\"",
    ] {
        assert!(
            out.stdout.contains(shown),
            "{shown} not in:\n{}",
            out.stdout
        );
    }
}

#[test]
fn what_a_server_writes_while_it_is_stopped_is_printed_before_dsh_exits() {
    let env = TestEnv::new(vec![Turn::text("fine")]);
    // It never answers; told to stop, it says goodbye on stderr.
    config(
        &env,
        "[mcp]\nstartup_grace_ms = 1\n[mcp.servers.bye]\ncommand = \"sh\"\nargs = [\"-c\", \"trap 'echo goodbye from the server >&2; exit 0' TERM; while :; do sleep 1; done\"]\n",
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, "fine\n");
    assert!(
        out.stderr
            .lines()
            .any(|l| l == "dsh: mcp bye: goodbye from the server"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_server_s_resources_are_listed_and_read() {
    let Some(server) = everything() else { return };
    let toml = format!(
        "[mcp.servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n",
        server.display().to_string()
    );
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            ("list_mcp_resources", json!({})),
            ("list_mcp_resources", json!({"server": "nope"})),
        ]),
        Turn::text("listed"),
    ]);
    config(&env, &toml);
    let out = env.run(dsh(), &["list the resources"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    let names = requests[0].tool_names();
    assert!(
        names.contains(&"list_mcp_resources".to_owned()),
        "{names:?}"
    );
    assert!(names.contains(&"read_mcp_resource".to_owned()), "{names:?}");
    let listed: Value = serde_json::from_str(&result_text(&requests[1], 0)).unwrap();
    let resources = listed["resources"].as_array().unwrap();
    assert!(!resources.is_empty(), "{listed}");
    assert!(resources.iter().all(|r| r["server"] == "everything"));
    assert_eq!(
        result_text(&requests[1], 1),
        "Error: no MCP server \"nope\" with resources; servers with resources: everything"
    );
    // Reading the first text resource listed gives its text under a header naming it.
    let text = resources
        .iter()
        .find(|r| {
            r["mimeType"]
                .as_str()
                .is_some_and(|m| m.starts_with("text/"))
        })
        .unwrap_or(&resources[0]);
    let uri = text["uri"].as_str().unwrap().to_owned();
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "read_mcp_resource",
            json!({"server": "everything", "uri": uri}),
        ),
        Turn::text("read"),
    ]);
    config(&env, &toml);
    let out = env.run(dsh(), &["read one"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let read = result_text(&env.server.requests()[1], 0);
    assert!(read.starts_with(&format!("[resource {uri} (")), "{read}");
    assert!(read.lines().count() > 1, "{read}");
}
