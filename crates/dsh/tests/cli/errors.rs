use dsh_testkit::{RunOutput, TestEnv, Turn};
use pretty_assertions::assert_eq;

use crate::dsh;

#[test]
fn no_api_key_fails_before_any_request() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    let out = RunOutput::of(env.command(dsh()).env_remove("DEEPSEEK_API_KEY").arg("go"));
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr,
        "dsh: no API key for provider \"deepseek\": set DEEPSEEK_API_KEY in the environment\n"
    );
    assert_eq!(out.stdout, "");
    // An exported empty key is no key either; in JSON mode the failure is an event.
    let out = RunOutput::of(
        env.command(dsh())
            .env("DEEPSEEK_API_KEY", "")
            .args(["--json", "go"]),
    );
    assert_eq!(out.events()[0]["type"], "error");
    assert_eq!(out.events().len(), 1);
    assert!(env.server.requests().is_empty());
}

#[test]
fn keys_come_from_the_environment_then_the_project_env_then_the_home_env() {
    let env = TestEnv::new(vec![Turn::text("a"), Turn::text("b"), Turn::text("c")]);
    std::fs::write(env.home.path().join(".env"), "DEEPSEEK_API_KEY=from-home\n").unwrap();
    let bearer = |i: usize| env.server.requests()[i].headers["authorization"].clone();
    let out = RunOutput::of(env.command(dsh()).env_remove("DEEPSEEK_API_KEY").arg("go"));
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(bearer(0), "Bearer from-home");
    env.write(
        ".env",
        "# the project's\nexport DEEPSEEK_API_KEY=\"from-project\"\n",
    );
    let out = RunOutput::of(env.command(dsh()).env_remove("DEEPSEEK_API_KEY").arg("go"));
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(bearer(1), "Bearer from-project");
    // The launch environment wins (TestEnv exports test-key).
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(bearer(2), "Bearer test-key");
    // An exported empty key hides the files, and says so.
    let out = RunOutput::of(env.command(dsh()).env("DEEPSEEK_API_KEY", "").arg("go"));
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("DEEPSEEK_API_KEY is exported empty"),
        "{}",
        out.stderr
    );
    // A .env may not set what decides how dsh starts or reaches the network.
    env.write(
        ".env",
        "DEEPSEEK_API_KEY=k\nDEEPSEEK_BASE_URL=http://evil.example\n",
    );
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1));
    let ws = std::fs::canonicalize(env.ws_path()).unwrap();
    assert!(
        out.stderr.starts_with(&format!(
            "dsh: {}:2 sets \"DEEPSEEK_BASE_URL\", which only the launching environment may set",
            ws.join(".env").display()
        )),
        "{}",
        out.stderr
    );
    // The key's value never appears in what dsh prints or records.
    assert!(!out.stderr.contains("from-home") && !env.session_logs().contains("from-"));
    assert_eq!(env.server.requests().len(), 3);
}

#[test]
fn bad_tasks_are_refused_before_anything_runs() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    let blank = env.run(dsh(), &["  "]);
    assert_eq!(blank.code(), Some(1));
    assert_eq!(
        blank.stderr,
        "dsh: a task is required, for example: dsh --profile headless \"run the tests\"\n"
    );
    let mixed = env.run(dsh(), &["-", "more"]);
    assert_eq!(mixed.stderr, "dsh: `-` must be the only task argument\n");
    // stdin is /dev/null here: an empty pipe is no task, and the error says stdin was read.
    let empty = env.run(dsh(), &["-"]);
    assert_eq!(empty.code(), Some(1));
    assert_eq!(
        empty.stderr,
        "dsh: a task is required, for example: dsh --profile headless \"run the tests\" \
         (stdin was empty)\n"
    );
    let blanks = dsh_testkit::RunOutput::fed(env.command(dsh()).arg("-"), b" \n\t\n");
    assert_eq!(blanks.code(), Some(1));
    assert!(
        blanks.stderr.ends_with("(stdin held only whitespace)\n"),
        "{}",
        blanks.stderr
    );
    let unknown_profile = env.run(dsh(), &["--profile", "web", "go"]);
    assert!(
        unknown_profile
            .stderr
            .starts_with("dsh: profile \"web\" is not available")
    );
    assert!(env.server.requests().is_empty());
}

#[test]
fn a_refused_key_names_the_variable() {
    let env = TestEnv::new(vec![Turn::status(
        401,
        "Authentication Fails, Your api key is invalid",
    )]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1));
    assert_eq!(out.stdout, "\n");
    assert_eq!(
        out.stderr,
        "dsh: AUTH: the provider refused the API key (HTTP 401: Authentication Fails, Your api key is invalid); check DEEPSEEK_API_KEY\n"
    );
}

#[test]
fn a_wrong_base_url_and_an_unknown_model_say_so() {
    let env = TestEnv::new(vec![Turn::status(404, "Not Found")]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1));
    let url = format!("{}/chat/completions", env.server.base_url());
    assert_eq!(
        out.stderr,
        format!(
            "dsh: HTTP_404: {url} does not exist (HTTP 404: Not Found); check DEEPSEEK_BASE_URL\n"
        )
    );

    let env = TestEnv::new(vec![Turn::status(400, "Model Not Exist")]);
    let out = env.run(dsh(), &["--model", "deepseek-v9", "go"]);
    assert_eq!(
        out.stderr,
        "dsh: UNKNOWN_MODEL: model \"deepseek-v9\" does not exist on this provider (HTTP 400: Model Not Exist); choose another with --model\n"
    );
}

#[test]
fn an_unreachable_server_is_a_transport_failure() {
    let env = TestEnv::new(vec![]);
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    // Without retries, so that the one failure is all there is to read.
    env.write("no-retries.toml", "[requests]\nretries = 0\n");
    let out = RunOutput::of(env.command(dsh()).env("DEEPSEEK_BASE_URL", &url).args([
        "--patch",
        "no-retries.toml",
        "go",
    ]));
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr,
        format!("dsh: TRANSPORT: cannot reach {url}/chat/completions: connection refused\n")
    );
}

#[test]
fn a_base_url_that_is_not_a_url_is_refused() {
    let env = TestEnv::new(vec![]);
    let out = RunOutput::of(
        env.command(dsh())
            .env("DEEPSEEK_BASE_URL", "api.deepseek.com")
            .arg("go"),
    );
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr,
        "dsh: DEEPSEEK_BASE_URL is not an http:// or https:// URL (its text is not shown, as \
         it may hold a password)\n"
    );
}

/// The red team's finding: credentials in the address silently took the key's place (the
/// HTTP client sends them as the one Authorization header), so the user's key was never sent.
#[test]
fn an_address_with_credentials_beside_a_key_is_refused_and_shown_hidden() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    let url = env
        .server
        .base_url()
        .replace("http://", "http://u:pw-in-address@");
    let out = RunOutput::of(env.command(dsh()).env("DEEPSEEK_BASE_URL", &url).arg("go"));
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("holds credentials and the provider has a key")
            && out.stderr.contains("hint: take the credentials out"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("pw-in-address"), "{}", out.stderr);
    assert!(env.server.requests().is_empty());
    dsh_testkit::fault_matrix(
        "attack",
        "a route's address holds user:password beside the route's key (the client would send them in the key's place)",
        "refused at start with the address hidden; no request made",
    );
}

#[test]
fn a_patch_file_turns_on_str_replace_editor_and_a_bad_one_is_named() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    let patch = env.ws_path().join("extra.toml");
    std::fs::write(&patch, "[tools]\nstr_replace_editor = true\n").unwrap();
    let out = env.run(dsh(), &["--patch", patch.to_str().unwrap(), "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        env.server.requests()[0]
            .tool_names()
            .contains(&"str_replace_editor".to_owned())
    );

    std::fs::write(&patch, "[tools]\nstr_replace = true\n").unwrap();
    let out = env.run(dsh(), &["--patch", patch.to_str().unwrap(), "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.starts_with(&format!(
            "dsh: config file {}: line 2: unknown field `str_replace`",
            patch.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        env.server.requests().len(),
        1,
        "nothing was sent for the bad run"
    );
}

/// Every URL the dump test sets carries one of these in its user part or its query: none may
/// be printed, in a row, a reason or an error.
const URL_SECRETS: [&str; 7] = [
    "pw-route-env",
    "pw-provider",
    "pw-mcp-user",
    "pw-mcp-query",
    "pw-metadata",
    "pw-search",
    "pw-search-query",
];

#[test]
fn dump_config_shows_each_value_with_the_layer_it_came_from() {
    let env = TestEnv::new(vec![]);
    std::fs::write(
        env.home.path().join("config.toml"),
        "model = \"home\"\n[jobs]\nwait_ms = 1\n[sandbox]\nmode = \"read-only\"\n\
         [providers.other]\nkind = \"openai-completions\"\n\
         base_url = \"https://u:pw-provider@other.example/v1\"\n",
    )
    .unwrap();
    env.write(
        ".dsh/config.toml",
        "model = \"workspace\"\n[shell]\nscrub = [\"KEY\"]\n\
         [mcp.servers.docs]\nurl = \"https://bot:pw-mcp-user@mcp.example/v1?token=pw-mcp-query\"\n\
         [mcp.servers.docs.oauth]\n\
         client_metadata_url = \"https://u:pw-metadata@meta.example/client.json\"\n",
    );
    env.write("one.toml", "model = \"patch-one\"\n[jobs]\nwait_ms = 2\n");
    env.write(
        "two.toml",
        "[jobs]\nwait_ms = 3\n[web.search]\n\
         base_url = \"http://u:pw-search@127.0.0.1.evil.example/v1?key=pw-search-query\"\n",
    );
    // The route's own address, whose password the `tools` row's reason once printed raw.
    let route = "http://u:pw-route-env@127.0.0.1:1";
    let dump = |args: &[&str]| {
        let out = RunOutput::of(
            env.command(dsh())
                .env("DEEPSEEK_BASE_URL", route)
                .arg("--dump-config")
                .args(args),
        );
        for secret in URL_SECRETS {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{secret} printed:\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
        out
    };
    let out = dump(&["--patch", "one.toml", "--patch", "two.toml"]);
    let plain = dump(&[]);
    let tools = (plain.stdout.lines())
        .find(|l| l.starts_with("tools ="))
        .unwrap();
    assert!(
        tools.contains("web_search is off: web.search.base_url \"http://[hidden]@127.0.0.1:1/"),
        "{tools}"
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let line = |key: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("{key} in {}", out.stdout))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Later files win key by key; an untouched key keeps its lower layer.
    assert_eq!(line("model"), "model = \"patch-one\" # one.toml");
    assert_eq!(line("jobs.wait_ms"), "jobs.wait_ms = 3 # two.toml");
    assert!(
        line("shell.scrub").ends_with(".dsh/config.toml"),
        "{}",
        line("shell.scrub")
    );
    assert!(
        line("sandbox.mode").ends_with("config.toml"),
        "{}",
        line("sandbox.mode")
    );
    // The environment beats the files, and a flag beats the environment.
    let out2 = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "workspace-write")
            .args(["--dump-config", "--model", "flag"]),
    );
    assert!(
        out2.stdout.contains("# DSH_PERMISSION_MODE"),
        "{}",
        out2.stdout
    );
    assert!(out2.stdout.contains("model = \"flag\""), "{}", out2.stdout);
    let out3 = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "workspace-write")
            .args(["--dump-config", "--permission-mode", "danger-full-access"]),
    );
    assert!(
        out3.stdout
            .contains("sandbox.mode = \"danger-full-access\""),
        "{}",
        out3.stdout
    );
    // No key's value is ever printed: the config holds variable names only.
    assert!(!out.stdout.contains("test-key"));
}

#[test]
fn a_bad_effort_in_the_config_fails_before_the_task_is_read_from_stdin() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    env.write(".dsh/config.toml", "effort = \"medium\"\n");
    let mut child = env
        .command(dsh())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stdin stays open: a dsh that read it first would wait for a task that never comes.
    let _stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("dsh waited for stdin before checking effort");
        }
        std::thread::sleep(dsh_testkit::POLL);
    };
    assert_eq!(status.code(), Some(1));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        stderr.contains(
            ".dsh/config.toml: line 1: unknown reasoning effort \"medium\": use off, low, high or max"
        ),
        "{stderr}"
    );
    assert!(env.server.requests().is_empty());
}
