//! `dsh login` and `dsh logout`: a key checked with the provider (its model list, nothing
//! billed), saved readable by the user alone where runs find it, never printed; refused keys
//! are not saved; the environment still wins over a saved key.

use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{RunOutput, TestEnv, Turn};

use crate::dsh;

/// `dsh args...` with no key in the environment and `input` piped in.
fn keyless(env: &TestEnv, args: &[&str], input: &str) -> RunOutput {
    RunOutput::fed(keyless_command(env).args(args), input.as_bytes())
}

/// `dsh` with no key in its environment, for a test to set more on.
fn keyless_command(env: &TestEnv) -> std::process::Command {
    let mut command = env.command(dsh());
    command.env_remove("DEEPSEEK_API_KEY");
    command
}

/// `dsh args...` on a 100x24 terminal, with no key in its environment.
fn keyless_terminal(env: &TestEnv, args: &[&str]) -> Tmux {
    let mut argv = vec![dsh().to_str().unwrap()];
    argv.extend_from_slice(args);
    Tmux::start(
        &argv,
        env.ws.path(),
        &[
            ("DEEPSEEK_BASE_URL", env.server.base_url()),
            ("DSH_HOME", env.home.path().display().to_string()),
            ("HOME", env.user_home.path().display().to_string()),
        ],
        100,
        24,
    )
}

fn authorization(env: &TestEnv, request: usize) -> String {
    env.server.requests()[request].headers["authorization"].clone()
}

#[test]
fn a_checked_key_is_saved_used_and_removed() {
    let env = TestEnv::new(vec![Turn::text("one"), Turn::text("two")]);
    let saved = env.home.path().join("credentials");

    // A refused key is said so and not saved; the provider quotes it, and nothing of it is
    // printed.
    let out = keyless(&env, &["login"], "refused-key-typed-7Hw3Pn\n");
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("the provider refused the API key")
            && out
                .stderr
                .contains("Incorrect API key provided: [REDACTED]"),
        "{}",
        out.stderr
    );
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !text.contains("7Hw3Pn"),
            "the typed key was printed: {text}"
        );
    }
    assert!(!saved.exists());

    let out = keyless(&env, &["login"], "sk-good-key\n");
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(out.stdout.contains("saved in"), "{}", out.stdout);
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !text.contains("sk-good-key"),
            "the key is never printed: {text}"
        );
    }
    let checks = env.server.requests();
    assert_eq!(checks[1].method, "GET");
    assert!(checks[1].path.ends_with("/models"), "{}", checks[1].path);
    assert_eq!(authorization(&env, 1), "Bearer sk-good-key");
    let mode = std::fs::metadata(&saved).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "readable by the user alone");

    // A run without a key in its environment uses the saved one...
    let out = keyless(&env, &["say one"], "");
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(authorization(&env, 2), "Bearer sk-good-key");
    // ...and --dump-config says where it came from, never what it is.
    let dump = keyless(&env, &["--dump-config"], "");
    let row = (dump.stdout.lines())
        .find(|line| line.contains("route.api_key"))
        .unwrap_or_else(|| panic!("no key row in {}", dump.stdout));
    assert!(row.contains(&saved.display().to_string()), "{row}");
    assert!(!dump.stdout.contains("sk-good-key"));
    // A key in the environment is a choice for this run: it wins.
    let out = env.run(dsh(), &["say two"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(authorization(&env, 3), "Bearer test-key");

    let out = keyless(&env, &["logout"], "");
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(out.stdout.contains("was removed"), "{}", out.stdout);
    assert!(!saved.exists());
    let out = keyless(&env, &["logout"], "");
    assert!(out.stdout.contains("No key was saved"), "{}", out.stdout);
    let out = keyless(&env, &["say three"], "");
    assert_eq!(out.code(), Some(1));
}

#[test]
fn a_key_that_cannot_be_checked_is_not_saved() {
    let env = TestEnv::new(vec![]);
    let out = RunOutput::of(
        env.command(dsh())
            .env_remove("DEEPSEEK_API_KEY")
            .env("DEEPSEEK_BASE_URL", "http://127.0.0.1:9/")
            .arg("login")
            .stdin(Stdio::null()),
    );
    assert_eq!(out.code(), Some(1));
    assert!(out.stderr.contains("no key was given"), "{}", out.stderr);
    let out = keyless(&env, &["login", "--model"], "");
    assert!(
        out.stderr.contains("takes only --model NAME"),
        "{}",
        out.stderr
    );
    let out = RunOutput::fed(
        keyless_command(&env)
            .env("DEEPSEEK_BASE_URL", "http://127.0.0.1:9/")
            .arg("login"),
        b"sk-any\n",
    );
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("could not be checked"),
        "{}",
        out.stderr
    );
    assert!(!env.home.path().join("credentials").exists());
}

/// On a terminal the key is asked for without echo, and a refused one is asked for again.
#[test]
fn on_a_terminal_the_key_is_not_echoed_and_a_refused_one_asked_again() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![]);
    let ui = keyless_terminal(&env, &["login"]);
    ui.wait_for("(input hidden):");
    ui.type_text("refused-by-the-server");
    ui.press(&["Enter"]);
    ui.wait_for("try again");
    ui.type_text("sk-typed-key");
    ui.press(&["Enter"]);
    assert_eq!(ui.wait_exit(), 0);
    let screen = ui.everything();
    assert!(screen.contains("saved in"), "{screen}");
    assert!(!screen.contains("sk-typed-key"), "echoed: {screen}");
    assert!(
        !screen.contains("refused-by-the-server"),
        "echoed: {screen}"
    );
    let saved = std::fs::read_to_string(env.home.path().join("credentials")).unwrap();
    assert!(saved.contains("DEEPSEEK_API_KEY='sk-typed-key'"), "{saved}");
}

/// A first run of the terminal UI with no key anywhere: it asks for one (without echo), a
/// refused key is asked for again, and the accepted one is saved and used by the session.
#[test]
fn the_terminal_ui_asks_for_a_key_on_a_first_run() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("Signed in and answering.")]);
    let ui = keyless_terminal(&env, &[]);
    ui.wait_for("dsh has no API key for deepseek yet");
    ui.wait_for("(input hidden):");
    ui.type_text("refused-first");
    ui.press(&["Enter"]);
    ui.wait_for("try again");
    ui.type_text("sk-first-run");
    ui.press(&["Enter"]);
    ui.wait_for("Type a message");
    ui.type_text("hello");
    ui.press(&["Enter"]);
    ui.wait_for("Signed in and answering.");
    let requests = env.server.requests();
    let chat = requests.iter().find(|r| r.method == "POST").unwrap();
    assert_eq!(chat.headers["authorization"], "Bearer sk-first-run");
    assert!(
        !ui.everything().contains("sk-first-run"),
        "the key was shown"
    );
}

/// The attack: a repository's config points the provider elsewhere, so that a key typed in
/// would be "checked" by its server. The sign-in is refused before any key is asked for, and
/// the address is shown whenever one is.
#[test]
fn a_projects_config_cannot_choose_where_a_key_is_sent() {
    let env = TestEnv::new(vec![]);
    let elsewhere = env.server.base_url();
    env.write(
        ".dsh/config.toml",
        &format!("[providers.deepseek]\nbase_url = \"{elsewhere}\"\n"),
    );
    let out = RunOutput::fed(
        keyless_command(&env)
            .env_remove("DEEPSEEK_BASE_URL")
            .arg("login"),
        b"sk-would-leak\n",
    );
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("is not your own config"),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty(), "the key was sent");
    assert!(!env.home.path().join("credentials").exists());
}

/// The attack: the provider's address only looks like this machine, so a key typed in would
/// go over plain HTTP to another host. `dsh login` refuses before it asks for one; this
/// machine's own address still takes a key.
#[test]
fn lookalike_addresses_get_no_key() {
    let env = TestEnv::new(vec![]);
    let outside = crate::outside::Outside::start();
    for base in crate::outside::LOOKALIKES {
        let mut command = keyless_command(&env);
        outside.route(&mut command);
        let out = RunOutput::fed(
            command.env("DEEPSEEK_BASE_URL", base).arg("login"),
            b"sk-would-leak\n",
        );
        assert_eq!(out.code(), Some(1), "{base}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("is plain http:// to a host that is not this machine"),
            "{base}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("sk-would-leak"));
    }
    assert!(
        outside.requests().is_empty(),
        "sent out: {:?}",
        outside.requests()
    );
    assert!(!env.home.path().join("credentials").exists());
    let out = keyless(&env, &["login"], "sk-good-key\n");
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    dsh_testkit::fault_matrix(
        "attack",
        "dsh login with the provider at an address that only looks like this machine (127.0.0.1.evil.example, 127.0.0.1:1@evil.example, localhost.evil.example, [::1]:1@evil.example)",
        "refused before a key is asked for; nothing sent",
    );
}

/// The attack: the credentials file is a link planted to another file (another tool's
/// secrets). `dsh login` and `dsh logout` refuse it: they never read through it, so the other
/// file's lines are not copied into dsh's own, and both files stay as they were.
#[test]
fn a_credentials_file_planted_as_a_link_is_not_read_through() {
    let env = TestEnv::new(vec![]);
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("other-tool.env");
    let other = "OTHER_TOOL_TOKEN=outside-secret-4567\n";
    std::fs::write(&target, other).unwrap();
    let link = env.home.path().join("credentials");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for args in [&["login"][..], &["logout"][..]] {
        let out = keyless(&env, args, "sk-good-key\n");
        assert_eq!(out.code(), Some(1), "{args:?}: {}", out.stdout);
        assert!(
            out.stderr
                .contains("is a symbolic link or not a regular file"),
            "{args:?}: {}",
            out.stderr
        );
        let kept = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            kept.file_type().is_symlink(),
            "{args:?}: the link was replaced"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), other);
    }
    let staged: Vec<_> = std::fs::read_dir(env.home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".credentials.") && name != ".credentials.lock")
        .collect();
    assert!(staged.is_empty(), "left behind: {staged:?}");
    dsh_testkit::fault_matrix(
        "attack",
        "$DSH_HOME/credentials planted as a link to another file, then dsh login / dsh logout",
        "refused; nothing read through the link, both files unchanged",
    );
}
