//! Signing in to an MCP server that uses OAuth, end to end against a loopback authorization
//! server (tests/fixtures/oauth_mcp_server.py): a run reports the missing sign-in with the
//! command to run; `dsh mcp login` signs in through a "browser" that follows the redirects;
//! runs then use the token, renew it as it expires and keep both tokens out of what the model
//! reads; `dsh mcp list` and `dsh mcp logout` show and forget the sign-in.

use std::io::BufRead;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use dsh_testkit::{RunOutput, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_mcp_server.py")
}

/// The fixture server, killed when dropped.
pub(crate) struct AuthServer {
    child: Child,
    pub(crate) base: String,
}

impl AuthServer {
    pub(crate) fn start(expires_in: u32) -> AuthServer {
        AuthServer::start_with(expires_in, &[])
    }

    fn start_with(expires_in: u32, env: &[(&str, &str)]) -> AuthServer {
        let mut child = Command::new("python3")
            .arg(fixture())
            .env("EXPIRES_IN", expires_in.to_string())
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the fixture");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        AuthServer {
            child,
            base: line.trim().to_owned(),
        }
    }

    fn state(&self) -> Value {
        let out = Command::new("python3")
            .args([
                "-c",
                "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                &format!("{}/state", self.base),
            ])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(env: &TestEnv, args: &[&str]) -> RunOutput {
    let browser = format!("python3 {} --browser %s", fixture().display());
    RunOutput::of(env.command(dsh()).env("BROWSER", browser).args(args))
}

fn record_file(env: &TestEnv) -> PathBuf {
    let dir = env.home.path().join("mcp-auth");
    let mut records: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    records.remove(0)
}

#[test]
fn a_sign_in_is_reported_made_used_renewed_redacted_and_forgotten() {
    let auth = AuthServer::start(3600);
    let env = TestEnv::new(vec![
        Turn::text("nothing to call"),
        Turn::tool_call("mcp__docs__whoami", json!({})),
        Turn::text("done"),
    ]);
    env.write(
        ".dsh/config.toml",
        &format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\n", auth.base),
    );

    // A run before any sign-in goes on without the server and says what to run.
    let first = run(&env, &["--json", "first"]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    assert!(
        first
            .stderr
            .contains("MCP server \"docs\" needs a sign-in: run `dsh mcp login docs`"),
        "{}",
        first.stderr
    );
    let listed = run(&env, &["mcp", "list"]);
    assert!(
        listed
            .stdout
            .contains("needs a sign-in: dsh mcp login docs"),
        "{}",
        listed.stdout
    );

    let login = run(&env, &["mcp", "login", "docs", "--timeout", "30s"]);
    assert_eq!(login.code(), Some(0), "{}\n{}", login.stdout, login.stderr);
    assert_eq!(
        login.stdout,
        "Signed in to \"docs\" (scopes: files:read); it lists 1 tools.\n"
    );
    assert!(login.stderr.contains("/authorize?"), "{}", login.stderr);
    let state = auth.state();
    assert_eq!(state["registrations"], 1);
    assert_eq!(state["authorizations"], 1);
    let record = record_file(&env);
    let mode = std::fs::metadata(&record).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the sign-in is the user's alone");
    let listed = run(&env, &["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed[0]["name"], "docs");
    assert_eq!(listed[0]["signIn"]["state"], "stored");
    assert_eq!(listed[0]["signIn"]["scopes"], json!(["files:read"]));
    assert_eq!(listed[0]["signIn"]["refreshable"], true);

    // An hour on, the token has run out: a run renews it before use, and the server's echo of
    // either token reaches neither the model, the stream nor the session log.
    let mut stored: Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let received = stored["credentials"]["token_received_at"].as_u64().unwrap();
    stored["credentials"]["token_received_at"] = json!(received - 3600);
    std::fs::write(&record, stored.to_string()).unwrap();
    let before = auth.state();
    let second = run(&env, &["--json", "second"]);
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    let after = auth.state();
    assert!(
        after["refreshes"].as_u64() > before["refreshes"].as_u64(),
        "{before} {after}"
    );
    let requests = env.server.requests();
    let result = requests.last().unwrap().tool_results()[0].clone();
    assert_eq!(result, "called with Bearer [REDACTED]");
    for token in [&before["token"], &after["token"]] {
        let token = token.as_str().unwrap();
        assert!(!second.stdout.contains(token));
        assert!(!env.session_logs().contains(token));
    }
    let stored = std::fs::read_to_string(&record).unwrap();
    assert!(stored.contains(after["token"].as_str().unwrap()));

    let logout = run(&env, &["mcp", "logout", "docs"]);
    assert_eq!(logout.code(), Some(0), "{}", logout.stderr);
    assert!(
        logout.stdout.starts_with("Signed out of \"docs\""),
        "{}",
        logout.stdout
    );
    assert!(!record.exists());
    let listed = run(&env, &["mcp", "list"]);
    assert!(listed.stdout.contains("not signed in"), "{}", listed.stdout);
}

/// `--profile headless` does not use a stored sign-in, as the reference's profile does not,
/// and says why and how to have it used; the seed's rows restore it. A run headless only for
/// want of a terminal uses it.
#[test]
fn the_headless_profile_uses_a_stored_sign_in_only_when_the_rows_restore_it() {
    let auth = AuthServer::start(3600);
    let env = TestEnv::new(vec![
        Turn::text("no server"),
        Turn::tool_call("mcp__docs__whoami", json!({})),
        Turn::text("done"),
        Turn::tool_call("mcp__docs__whoami", json!({})),
        Turn::text("done"),
    ]);
    env.write(
        ".dsh/config.toml",
        &format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\n", auth.base),
    );
    let login = run(&env, &["mcp", "login", "docs", "--timeout", "30s"]);
    assert_eq!(login.code(), Some(0), "{}", login.stderr);
    let record = record_file(&env);
    let stored = std::fs::read(&record).unwrap();

    let profiled = run(&env, &["--profile", "headless", "go"]);
    assert_eq!(profiled.code(), Some(0), "{}", profiled.stderr);
    assert!(
        profiled.stderr.contains(
            "MCP server \"docs\" needs a sign-in: under --profile headless the sign-ins \
             `dsh mcp login` stored are not used unless a patch restores stored authentication"
        ),
        "{}",
        profiled.stderr
    );
    assert_eq!(
        std::fs::read(&record).unwrap(),
        stored,
        "ignored, not changed"
    );
    let tools = env.server.requests()[0].tool_names();
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__docs")),
        "{tools:?}"
    );

    let rows = env.ws.path().join("restore.yml");
    std::fs::write(&rows, crate::stored_auth::RESTORE_ROWS).unwrap();
    let restored = run(
        &env,
        &[
            "--profile",
            "headless",
            "--patch",
            rows.to_str().unwrap(),
            "go",
        ],
    );
    assert_eq!(restored.code(), Some(0), "{}", restored.stderr);
    let piped = run(&env, &["go"]);
    assert_eq!(piped.code(), Some(0), "{}", piped.stderr);
    let results: Vec<String> = (env.server.requests().iter())
        .flat_map(dsh_testkit::Request::tool_results)
        .collect();
    assert_eq!(
        results,
        [
            "called with Bearer [REDACTED]",
            "called with Bearer [REDACTED]"
        ]
    );
}

#[test]
fn login_names_what_is_wrong() {
    let env = TestEnv::new(vec![]);
    env.write(
        ".dsh/config.toml",
        "[mcp.servers.files]\ncommand = \"true\"\n[mcp.servers.own]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer mine-0123456789\" }\n",
    );
    let unknown = run(&env, &["mcp", "login", "nope"]);
    assert_eq!(unknown.code(), Some(1));
    assert!(
        unknown
            .stderr
            .contains("no MCP server \"nope\" is configured here; the servers are: files, own"),
        "{}",
        unknown.stderr
    );
    let stdio = run(&env, &["mcp", "login", "files"]);
    assert!(
        stdio.stderr.contains("is started as a command"),
        "{}",
        stdio.stderr
    );
    let own = run(&env, &["mcp", "login", "own"]);
    assert!(
        own.stderr.contains("sends its own Authorization header"),
        "{}",
        own.stderr
    );
    let listed = run(&env, &["mcp", "list"]);
    assert!(
        listed
            .stdout
            .contains("(sends its own Authorization header)"),
        "{}",
        listed.stdout
    );
    assert!(!listed.stdout.contains("mine-0123456789"));
}

/// A hostile server's metadata names an authorization address of another scheme (an app's
/// handler, a file): dsh refuses it before any browser or handler is started.
#[test]
fn an_authorization_address_that_is_not_https_is_never_opened() {
    let auth = AuthServer::start_with(3600, &[("AUTHORIZE_AT", "smb://evil.example/share")]);
    let env = TestEnv::new(vec![]);
    env.write(
        ".dsh/config.toml",
        &format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\n", auth.base),
    );
    let opened = env.home.path().join("browser-was-opened");
    let browser = format!("touch {} %s", opened.display());
    let login = RunOutput::of(env.command(dsh()).env("BROWSER", browser).args([
        "mcp",
        "login",
        "docs",
        "--timeout",
        "10s",
    ]));
    assert_eq!(login.code(), Some(1), "{}", login.stdout);
    assert!(
        login.stderr.contains("an address of scheme \"smb\""),
        "{}",
        login.stderr
    );
    assert!(!opened.exists(), "the browser was started");
    assert_eq!(auth.state()["registrations"], 0);
}

/// The attack: an address that only looks like this machine, as the server's own URL in a
/// repository's config, or as the authorization address a hostile server names. dsh signs in
/// to none of them: nothing is sent out, no browser is started, no client registered. A user
/// part in front of a loopback host counts as such an address too.
#[test]
fn lookalike_addresses_get_no_sign_in() {
    let outside = crate::outside::Outside::start();
    let login = |env: &TestEnv, opened: &Path| {
        let browser = format!("touch {} %s", opened.display());
        let mut command = env.command(dsh());
        outside.route(&mut command);
        RunOutput::of(command.env("BROWSER", browser).args([
            "mcp",
            "login",
            "docs",
            "--timeout",
            "10s",
        ]))
    };
    for base in crate::outside::LOOKALIKES {
        let env = TestEnv::new(vec![]);
        env.write(
            ".dsh/config.toml",
            &format!("[mcp.servers.docs]\nurl = \"{base}/mcp\"\n"),
        );
        let opened = env.home.path().join("browser-was-opened");
        let out = login(&env, &opened);
        assert_eq!(out.code(), Some(1), "{base}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("a plain http:// address that is not this machine"),
            "{base}: {}",
            out.stderr
        );
        assert!(!opened.exists(), "{base}: the browser was started");
    }
    let named = crate::outside::LOOKALIKES
        .iter()
        .map(|base| format!("{base}/authorize"))
        .chain(["http://user:pw@127.0.0.1:9/authorize".to_owned()]);
    for authorize in named {
        let auth = AuthServer::start_with(3600, &[("AUTHORIZE_AT", &authorize)]);
        let env = TestEnv::new(vec![]);
        env.write(
            ".dsh/config.toml",
            &format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\n", auth.base),
        );
        let opened = env.home.path().join("browser-was-opened");
        let out = login(&env, &opened);
        assert_eq!(out.code(), Some(1), "{authorize}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("names an endpoint at a plain http:// address that is not this machine"),
            "{authorize}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("user:pw"), "{}", out.stderr);
        assert!(!opened.exists(), "{authorize}: the browser was started");
        assert_eq!(auth.state()["registrations"], 0);
    }
    assert!(
        outside.requests().is_empty(),
        "sent out: {:?}",
        outside.requests()
    );
    dsh_testkit::fault_matrix(
        "attack",
        "an MCP server, or the authorization address it names, at an address that only looks like this machine (127.0.0.1.evil.example, 127.0.0.1:1@evil.example, localhost.evil.example, [::1]:1@evil.example, user:pw@127.0.0.1)",
        "no sign-in: nothing sent, no browser started, no client registered",
    );
}

/// The attack: the sign-in's lock file is a link planted to a file elsewhere (which opening
/// it would create, anywhere the user may write). dsh refuses the link and creates nothing.
#[test]
fn a_sign_in_lock_planted_as_a_link_is_refused() {
    let env = TestEnv::new(vec![]);
    env.write(
        ".dsh/config.toml",
        "[mcp.servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    // A first logout finds no sign-in, and leaves the record's lock file: its name.
    let out = run(&env, &["mcp", "logout", "docs"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let dir = env.home.path().join("mcp-auth");
    let lock = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".json.lock"))
        .expect("a lock file");
    let elsewhere = tempfile::tempdir().unwrap();
    let planted = elsewhere.path().join("made-by-dsh");
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&planted, &lock).unwrap();
    let out = run(&env, &["mcp", "logout", "docs"]);
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("is a symbolic link or not a regular file"),
        "{}",
        out.stderr
    );
    assert!(!planted.exists(), "the lock was opened through the link");
    assert!(
        std::fs::symlink_metadata(&lock)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    dsh_testkit::fault_matrix(
        "attack",
        "the MCP sign-in's lock file planted as a link to a file elsewhere",
        "refused; nothing created or opened through the link",
    );
}
