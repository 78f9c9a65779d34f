//! The network allowlist end to end (`sandbox.network = "allowlist"`): commands in a network
//! namespace of their own reach a server on the host's loopback only through dsh's proxy and
//! only by an allowed name; every other way is tried as an outsider would, and fails.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// A server on the host's loopback that answers every request with its request line, and
/// counts the connections it was given.
fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&buf).into_owned();
                let body = format!("served {}\n", text.lines().next().unwrap_or(""));
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, count)
}

fn bash(command: &str) -> Turn {
    Turn::tool_call("bash", json!({"command": command, "description": "d"}))
}

/// A request sent to the proxy named in `$HTTPS_PROXY` over bash's own TCP, and what came
/// back (no client program needed, and nothing but the variable says where the proxy is).
fn through_proxy(request: &str) -> String {
    format!(
        "p=${{HTTPS_PROXY#http://}}; exec 3<>/dev/tcp/${{p%:*}}/${{p##*:}} && \
         printf '{request}' >&3 && cat <&3"
    )
}

fn results(env: &TestEnv) -> Vec<String> {
    let requests = env.server.requests();
    (1..requests.len())
        .map(|i| requests[i].tool_results().pop().unwrap_or_default())
        .collect()
}

fn allowlist_config(env: &TestEnv, extra: &str) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"localhost\"]\n{extra}"),
    )
    .unwrap();
}

#[test]
fn commands_reach_an_allowed_name_only_through_the_proxy_and_a_denied_one_is_named() {
    if !crate::sandbox::bubblewrap_usable() {
        return;
    }
    let (port, connections) = server();
    let attempts = [
        // Allowed: a tunnel, then a plain HTTP request by URL.
        through_proxy(&format!(
            "CONNECT localhost:{port} HTTP/1.1\\r\\n\\r\\nGET /tunnel HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n"
        )),
        through_proxy(&format!(
            "GET http://localhost:{port}/plain HTTP/1.1\\r\\nHost: localhost:{port}\\r\\n\\r\\n"
        )),
        // Denied: a name not on the list; the same server by its address; a Host header
        // naming the allowed host on a tunnel to another.
        through_proxy("CONNECT example.org:443 HTTP/1.1\\r\\n\\r\\n"),
        through_proxy(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\n")),
        through_proxy(&format!(
            "CONNECT evil.test:{port} HTTP/1.1\\r\\nHost: localhost:{port}\\r\\n\\r\\n"
        )),
        // Around the proxy: its variables removed, straight to the server's address and
        // name, a name server, and the proxy's own socket from outside the namespace.
        format!(
            "unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy; \
             (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo direct-reached || \
             echo direct-failed; \
             (exec 3<>/dev/tcp/localhost/{port}) 2>/dev/null && echo name-reached || \
             echo name-failed; \
             (exec 3<>/dev/udp/1.1.1.1/53 && echo x >&3) 2>/dev/null && echo udp-sent || \
             echo udp-failed; \
             getent hosts example.org >/dev/null && echo resolved || echo no-resolver; \
             ip -o addr 2>/dev/null | grep -v ' lo ' | grep -c inet || true"
        ),
    ];
    let mut turns: Vec<Turn> = attempts.iter().map(|a| bash(a)).collect();
    turns.push(Turn::text("done"));
    let env = TestEnv::new(turns);
    allowlist_config(&env, "backend = \"bubblewrap\"\n");
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = results(&env);
    assert_eq!(results.len(), attempts.len(), "{results:?}");
    assert!(
        results[0].contains("HTTP/1.1 200 Connection established")
            && results[0].contains("served GET /tunnel HTTP/1.1"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("served GET /plain HTTP/1.1"),
        "{}",
        results[1]
    );
    for (result, host, why) in [
        (&results[2], "example.org", "not in sandbox.allowed_domains"),
        (&results[3], "127.0.0.1", "IP address"),
        (&results[4], "evil.test", "not in sandbox.allowed_domains"),
    ] {
        assert!(result.contains("HTTP/1.1 403 Forbidden"), "{result}");
        assert!(
            result.contains(&format!("[sandbox: network access to {host} denied: ")),
            "{result}"
        );
        assert!(result.contains(why), "{result}");
        assert!(!result.contains("served"), "{result}");
    }
    assert!(
        results[2].contains("add \"example.org\" to sandbox.allowed_domains"),
        "{}",
        results[2]
    );
    let bypass = &results[5];
    for line in ["direct-failed", "name-failed", "udp-failed", "no-resolver"] {
        assert!(bypass.contains(line), "{bypass}");
    }
    assert!(!bypass.contains("[sandbox: network access"), "{bypass}");
    // Only the two allowed requests ever reached the server.
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    // The model was told.
    let prompt = env.server.requests()[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.contains("only through dsh's HTTP proxy") && prompt.contains("only: localhost;"),
        "{prompt}"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "a command under the network allowlist tries IP literals, another name in CONNECT than \
         in Host, no proxy variables, direct TCP and UDP, DNS",
        "only allowed names through dsh's proxy; each refusal named in the result",
    );
}

/// Where the allowlist cannot hold (Landlock, no helper), commands are refused saying why,
/// never run with the network open.
#[test]
fn where_the_allowlist_cannot_be_enforced_commands_are_refused_saying_why() {
    for (extra, why) in [
        (
            "backend = \"landlock\"\n",
            "Landlock can limit TCP connections by port",
        ),
        (
            "backend = \"bubblewrap\"\nhelper = false\n",
            "needs bubblewrap's sandbox helper",
        ),
    ] {
        if extra.contains("bubblewrap") && !crate::sandbox::bubblewrap_usable() {
            continue;
        }
        let env = TestEnv::new(vec![bash("echo ran"), Turn::text("done")]);
        allowlist_config(&env, extra);
        let out = env.run(dsh(), &["--json", "go"]);
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
        let event = (out.events().into_iter())
            .find(|e| e["type"] == "tool_result")
            .unwrap_or(Value::Null);
        let text = event.to_string();
        assert!(text.contains("SANDBOX_UNAVAILABLE"), "{extra}: {text}");
        if text.contains("no sandbox backend is usable")
            && std::env::var("DSH_TEST_REQUIRE_BACKENDS").as_deref() != Ok("1")
        {
            continue; // Landlock is not usable here: refused all the same, for another reason
        }
        assert!(text.contains(why), "{extra}: {text}");
        assert!(!results(&env)[0].starts_with("ran"), "{extra}: {text}");
    }
}

/// A wildcard typo is refused when the file is read, naming the file, the line, the entry
/// and what to write; a list without the switch is refused too; `--dump-config` shows both
/// keys with their source.
#[test]
fn a_bad_domain_list_is_a_config_error_and_the_dump_shows_the_allowlist() {
    let env = TestEnv::new(vec![Turn::text("done")]);
    for (text, expected) in [
        (
            "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"ok.org\", \"*example.com\"]\n",
            "line 3: sandbox.allowed_domains: \"*example.com\" has a wildcard that is not a \
             whole first label; hint: a wildcard may only stand for the labels before a name: \
             write \"*.example.com\"",
        ),
        (
            "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"**.x.org\"]\n",
            "\"**.x.org\" has a wildcard",
        ),
        (
            "[sandbox]\nnetwork = \"some\"\n",
            "must be true, false or \"allowlist\"",
        ),
        (
            "[sandbox]\nallowed_domains = [\"a.org\"]\n",
            "sandbox.allowed_domains is set but sandbox.network is true",
        ),
    ] {
        std::fs::write(env.home.path().join("config.toml"), text).unwrap();
        let out = env.run(dsh(), &["go"]);
        assert_eq!(out.code(), Some(1), "{text}");
        assert!(out.stderr.contains(expected), "{text}: {}", out.stderr);
    }
    std::fs::write(
        env.home.path().join("config.toml"),
        "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"*.Crates.io\", \"github.com\"]\n",
    )
    .unwrap();
    let out = env.run(dsh(), &["--dump-config"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let line = |key: &str| {
        (out.stdout.lines())
            .find(|l| l.starts_with(key))
            .unwrap_or_default()
            .to_owned()
    };
    let network = line("sandbox.network ");
    assert!(
        network.contains("\"allowlist\"") && network.contains("config.toml"),
        "{network}"
    );
    let domains = line("sandbox.allowed_domains ");
    assert!(
        domains.contains("[\"*.crates.io\", \"github.com\"]") && domains.contains("config.toml"),
        "{domains}"
    );
}
