//! The sandbox settings on the command line: `--permission-mode`, `DSH_PERMISSION_MODE`,
//! `--add-dir`, `--approval-policy`, what the model is told, and `dsh sandbox check`.

use dsh_testkit::{RunOutput, TestEnv, Turn};
use serde_json::json;

use crate::dsh;

fn system_prompt(env: &TestEnv, request: usize) -> String {
    env.server.requests()[request].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn the_model_is_told_the_mode_the_roots_and_the_approval_policy() {
    let env = TestEnv::new(vec![Turn::text("ok"), Turn::text("ok"), Turn::text("ok")]);
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let ws = std::fs::canonicalize(env.ws_path()).unwrap();
    let prompt = system_prompt(&env, 0);
    assert!(prompt.contains("Sandbox: workspace-write."), "{prompt}");
    assert!(
        prompt.contains(&format!("{:?}", ws.display().to_string())),
        "{prompt}"
    );
    assert!(prompt.contains("Approval policy: ask."), "{prompt}");

    // The environment picks the mode when no flag does; the flag wins over it.
    let out = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "read-only")
            .arg("go"),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(system_prompt(&env, 1).contains("Sandbox: read-only."));
    let out = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "read-only")
            .args([
                "--permission-mode",
                "workspace-write",
                "--approval-policy",
                "never",
                "go",
            ]),
    );
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let prompt = system_prompt(&env, 2);
    assert!(prompt.contains("Sandbox: workspace-write."), "{prompt}");
    assert!(prompt.contains("Approval policy: never."), "{prompt}");
}

#[test]
fn bad_permission_settings_fail_before_any_request() {
    let env = TestEnv::new(vec![Turn::text("ok")]);
    let out = RunOutput::of(
        env.command(dsh())
            .env("DSH_PERMISSION_MODE", "open")
            .arg("go"),
    );
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr,
        "dsh: DSH_PERMISSION_MODE must be read-only, workspace-write, danger-full-access, plan or auto, got \"open\"\n"
    );
    let out = env.run(dsh(), &["--approval-policy", "sometimes", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("--approval-policy must be ask or never, got \"sometimes\""),
        "{}",
        out.stderr
    );
    for (dir, expected) in [
        ("relative", "is not an absolute path"),
        ("/nonexistent/dsh-dir", "it does not exist"),
    ] {
        let out = env.run(dsh(), &["--add-dir", dir, "go"]);
        assert_eq!(out.code(), Some(1));
        assert!(out.stderr.contains(expected), "{dir}: {}", out.stderr);
    }
    // A relative path is refused with the real path it names from here, ready to copy.
    std::fs::create_dir(env.ws_path().join("granted")).unwrap();
    let out = env.run(dsh(), &["--add-dir", "../ws-link/../granted", "go"]);
    assert!(
        out.stderr.contains("would be") && out.stderr.contains("which does not exist"),
        "{}",
        out.stderr
    );
    let out = env.run(dsh(), &["--add-dir", "./granted", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(&format!(
            "--add-dir \"./granted\" is not an absolute path: from here it is \"{}\"; give that",
            env.ws_path().join("granted").display()
        )),
        "{}",
        out.stderr
    );
    // A symlinked spelling is refused with the real path to give instead.
    let real = tempfile::tempdir().unwrap();
    let link = env.ws_path().join("link");
    std::os::unix::fs::symlink(real.path(), &link).unwrap();
    let out = env.run(dsh(), &["--add-dir", link.to_str().unwrap(), "go"]);
    assert_eq!(out.code(), Some(1));
    let canonical = std::fs::canonicalize(real.path()).unwrap();
    assert!(
        out.stderr.contains(&format!(
            "is not a physical path: it resolves to \"{}\"",
            canonical.display()
        )),
        "{}",
        out.stderr
    );
    env.write("bad.toml", "[sandbox]\nbackend = \"chroot\"\n");
    let out = env.run(dsh(), &["--patch", "bad.toml", "go"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(
            "bad.toml: line 2: unknown sandbox backend \"chroot\": use auto, bubblewrap or landlock"
        ),
        "{}",
        out.stderr
    );
    assert!(env.server.requests().is_empty());
}

#[test]
fn an_added_directory_is_writable_by_the_file_tools() {
    let granted = tempfile::tempdir_in(dsh_testkit::scratch_outside_temp(env!(
        "CARGO_TARGET_TMPDIR"
    )))
    .unwrap();
    let granted = std::fs::canonicalize(granted.path()).unwrap();
    let target = granted.join("note.txt");
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": target.to_str().unwrap(), "content": "granted\n"}),
        ),
        Turn::text("ok"),
    ]);
    // Without the grant the fence refuses it ...
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(!target.exists());
    assert!(env.server.requests()[1].tool_results()[0].contains("[sandbox: file access denied"));
    // ... and with it the write lands, and the model is told about the extra root.
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": target.to_str().unwrap(), "content": "granted\n"}),
        ),
        Turn::text("ok"),
    ]);
    let out = env.run(dsh(), &["--add-dir", granted.to_str().unwrap(), "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "granted\n");
    assert!(system_prompt(&env, 0).contains(&format!("{:?}", granted.display().to_string())));
}

/// The red team's attacks on protected paths through the file tools (issue 31): a `.git/hooks`
/// and an `.env` that are symlinks to folders in the workspace (a common way to share hooks),
/// which the tools used to write through because the check compared the resolved path with
/// the unresolved protected one; a linked worktree's `.git` file, repointed at a repository of
/// the model's making; and dsh's own config and hooks in a `DSH_HOME` under `/tmp`, a writable
/// root. Each write is refused and changes nothing.
#[test]
fn protected_paths_hold_against_symlinks_git_files_and_a_home_under_tmp() {
    let env = TestEnv::new(Vec::new());
    let ws = env.ws_path();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::create_dir_all(ws.join("tools/githooks")).unwrap();
    std::os::unix::fs::symlink("../tools/githooks", ws.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(ws.join("config")).unwrap();
    std::fs::write(ws.join("config/app.env"), "KEY=1\n").unwrap();
    std::os::unix::fs::symlink("config/app.env", ws.join(".env")).unwrap();
    let home = std::fs::canonicalize(env.home.path()).unwrap();
    let hook = ws.join("tools/githooks/pre-commit");
    let (config, hooks) = (home.join("config.toml"), home.join("hooks.json"));
    let attempts = [
        (".git/hooks/pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n"),
        (hook.to_str().unwrap(), "#!/bin/sh\ntouch /tmp/pwned\n"),
        ("config/app.env", "KEY=2\n"),
        (".env", "KEY=2\n"),
        (
            config.to_str().unwrap(),
            "[sandbox]\nmode = \"danger-full-access\"\n",
        ),
        (hooks.to_str().unwrap(), "{}"),
    ];
    let mut turns: Vec<Turn> = attempts
        .iter()
        .map(|(path, content)| {
            Turn::tool_call("write", json!({"file_path": path, "content": content}))
        })
        .collect();
    turns.push(Turn::text("done"));
    let env = TestEnv {
        server: dsh_testkit::ScriptedServer::start(turns),
        ..env
    };
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let requests = env.server.requests();
    for (i, (path, _)) in attempts.iter().enumerate() {
        let result = requests[i + 1].tool_results().pop().unwrap();
        assert!(
            result.starts_with("Error: [sandbox: file access denied under workspace-write mode]")
                && result.contains("is protected under workspace-write"),
            "{path}: {result}"
        );
    }
    assert!(!hook.exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("config/app.env")).unwrap(),
        "KEY=1\n"
    );
    assert!(!config.exists() && !hooks.exists());

    // A linked worktree's `.git` file: repointing it is refused too.
    let env = TestEnv::new(vec![
        Turn::tool_call("read", json!({"file_path": ".git"})),
        Turn::tool_call(
            "write",
            json!({"file_path": ".git", "content": "gitdir: ./evil-repo\n"}),
        ),
        Turn::text("done"),
    ]);
    env.write(".git", "gitdir: /elsewhere/.git/worktrees/w\n");
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = env.server.requests()[2].tool_results().pop().unwrap();
    assert!(
        result.contains("is protected under workspace-write"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join(".git")).unwrap(),
        "gitdir: /elsewhere/.git/worktrees/w\n"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "write through a symlinked .git/hooks or .env, to a .git file, or to DSH_HOME under /tmp",
        "refused as protected; nothing changed",
    );
}

#[test]
fn sandbox_check_names_each_backend_and_the_one_used() {
    let env = TestEnv::new(Vec::new());
    let out = RunOutput::of(env.command(dsh()).args(["sandbox", "check"]));
    assert!(out.stdout.contains("  bubblewrap  "), "{}", out.stdout);
    assert!(out.stdout.contains("  landlock    "), "{}", out.stdout);
    // Forced onto a bubblewrap that is not there: not usable, what to do, exit 1.
    env.write(
        "bwrap.toml",
        "[sandbox]\nbackend = \"bubblewrap\"\nbwrap = \"/nonexistent/bwrap\"\n",
    );
    let out = RunOutput::of(
        env.command(dsh())
            .args(["sandbox", "check", "--patch", "bwrap.toml"]),
    );
    assert_eq!(out.code(), Some(1), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("bubblewrap  not usable: sandbox.bwrap names /nonexistent/bwrap"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("what to do: point sandbox.bwrap"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("No backend can confine commands here"),
        "{}",
        out.stdout
    );
}

/// `dsh sandbox check` reads only `[sandbox]`: a mistake anywhere else in the files (an unknown
/// key, a bad value, a bad project config) does not stop it; one in `[sandbox]` does.
#[test]
fn sandbox_check_reads_only_the_sandbox_table() {
    let env = TestEnv::new(Vec::new());
    env.write(
        ".dsh/config.toml",
        "effort = \"huge\"\nbogus_key = 1\n[tools]\nallow = 3\n",
    );
    env.write(
        "bwrap.toml",
        "model = 7\n[sandbox]\nbackend = \"bubblewrap\"\nbwrap = \"/nonexistent/bwrap\"\n",
    );
    let out = RunOutput::of(
        env.command(dsh())
            .args(["sandbox", "check", "--patch", "bwrap.toml"]),
    );
    assert_eq!(out.stderr, "");
    assert!(
        out.stdout
            .contains("bubblewrap  not usable: sandbox.bwrap names /nonexistent/bwrap"),
        "{}",
        out.stdout
    );
    env.write("bad.toml", "[sandbox]\nnetwork = \"maybe\"\n");
    let out = RunOutput::of(
        env.command(dsh())
            .args(["sandbox", "check", "--patch", "bad.toml"]),
    );
    assert_eq!(out.code(), Some(1));
    assert_eq!(
        out.stderr,
        "dsh: config file bad.toml: [sandbox]: sandbox.network must be true, false or \
         \"allowlist\", got \"maybe\"\n"
    );
}

/// Under bubblewrap, a run's commands go through one sandbox helper: each still sees only its
/// own processes (the helper's init is its PID 1, a fresh /proc), starts in a session of its
/// own with no capabilities, cannot write outside the workspace, and does not leave daemons
/// behind; with `sandbox.helper = false` each gets a `bwrap` of its own instead.
#[test]
fn commands_run_through_the_sandbox_helper_with_the_same_confinement() {
    let probe = "echo init=$(cat /proc/1/comm) self=$$ procs=$(ls /proc | grep -c '^[0-9]'); \
                 grep CapEff /proc/self/status; (setsid sleep 3017 &); \
                 echo x > /etc/dsh-helper-probe; echo rc=$?";
    let call = |n: usize| {
        (
            "bash",
            json!({"command": probe, "description": format!("probe {n}")}),
        )
    };
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[call(1), call(2)]),
        Turn::tool_calls(&[call(3)]),
        Turn::text("done"),
    ]);
    if !bubblewrap_usable() {
        return;
    }
    let out = env.run(dsh(), &["--json", "probe"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The last request carries all three results.
    let results = env.server.requests()[2].tool_results();
    assert_eq!(results.len(), 3);
    for result in &results {
        // PID 1 is the helper's init (a copy of dsh), the shell is PID 2, and the only
        // processes in view are the command's own (init, shell, the subshells, ls, grep).
        assert!(result.contains("init=dsh self=2 "), "{result}");
        let procs: usize = result
            .split("procs=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        assert!(procs <= 6, "{result}");
        assert!(result.contains("CapEff:\t0000000000000000"), "{result}");
        assert!(result.contains("Read-only file system"), "{result}");
    }
    assert!(!std::path::Path::new("/etc/dsh-helper-probe").exists());
    // Each command's `sleep 3017`, in a session of its own, died with its namespace.
    let sleepers: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .filter(|cmdline| cmdline.as_slice() == b"sleep\x003017\x00")
        .map(|cmdline| String::from_utf8_lossy(&cmdline).into_owned())
        .collect();
    assert!(sleepers.is_empty(), "{sleepers:?}");

    // Without the helper: bwrap's own init.
    let env2 = TestEnv::new(vec![Turn::tool_calls(&[call(4)]), Turn::text("done")]);
    env2.write(".dsh/config.toml", "[sandbox]\nhelper = false\n");
    let out = env2.run(dsh(), &["--json", "probe"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = &env2.server.requests()[1].tool_results()[0];
    assert!(result.contains("init=bwrap self=2 "), "{result}");
}

/// dsh run from a file a command could replace (inside the workspace, as in a checkout used as
/// its own workspace) still gets the run's sandbox helper, started from a sealed in-memory copy
/// of itself: the helper keeps CAP_SYS_ADMIN in the sandbox, so it must never run from a file
/// a command could replace. The commands see the helper's init as PID 1 (with a `bwrap` each
/// it would be bwrap), and a command that replaces the file changes nothing for the next.
#[test]
fn a_helper_for_an_executable_inside_the_workspace_runs_from_a_sealed_copy() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "cat /proc/1/comm; echo broken > bin/dsh.new && mv bin/dsh.new bin/dsh && echo replaced",
                   "description": "who is PID 1"}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": "cat /proc/1/comm", "description": "again"}),
        ),
        Turn::text("done"),
    ]);
    if !bubblewrap_usable() {
        return;
    }
    let copy = env.ws_path().join("bin/dsh");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(dsh(), &copy).unwrap();
    let out = env.run(&copy, &["--json", "probe"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = env.server.requests()[2].tool_results();
    assert_eq!(results, ["dsh\nreplaced\n", "dsh\n"]);
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "broken\n");
}

/// The red team's finding (issue 31): with the network on (the default), a command shares the
/// host's network namespace, and with it the host's abstract Unix sockets (on a desktop the X
/// server's). Under bubblewrap, through the run's helper, each command gets a Landlock scope
/// that refuses them, where the kernel has it (Linux 6.12); Landlock's own backend has it too.
#[test]
fn a_command_cannot_reach_the_hosts_abstract_unix_sockets() {
    use std::os::linux::net::SocketAddrExt;
    if !bubblewrap_usable() || !landlock_scopes() {
        return;
    }
    let name = format!("dsh-test-abstract-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); print('connected')\" 2>&1 | tail -1"
    );
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": connect, "description": "connect"}),
        ),
        Turn::text("done"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = env.server.requests()[1].tool_results().pop().unwrap();
    assert!(result.contains("PermissionError"), "{result}");
    assert!(
        listener.accept().is_err(),
        "the command connected: {result}"
    );
    // The control: the same connection from outside the sandbox is accepted.
    std::os::unix::net::UnixStream::connect_addr(&address).unwrap();
    assert!(listener.accept().is_ok());
    dsh_testkit::fault_matrix(
        "attack",
        "a command connects to a host abstract Unix socket with the network on",
        "refused (Landlock scope, kernels with ABI 6)",
    );
}

/// Whether this kernel's Landlock can scope abstract Unix sockets (ABI 6, Linux 6.12). CI's
/// kernel is newer, and there (`DSH_TEST_REQUIRE_BACKENDS=1`) an older one fails the test
/// rather than let it vanish; elsewhere the test says it is skipped.
#[allow(clippy::print_stderr)] // a skipped test says so
fn landlock_scopes() -> bool {
    // SAFETY: the documented version query: no attribute, size 0, the VERSION flag.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    if abi < 6 {
        assert!(
            std::env::var("DSH_TEST_REQUIRE_BACKENDS").as_deref() != Ok("1"),
            "this kernel's Landlock cannot scope abstract sockets (ABI {abi}, 6 needed) and the \
             sandbox backends are required (DSH_TEST_REQUIRE_BACKENDS is set)"
        );
        eprintln!("skipped: this kernel's Landlock cannot scope abstract sockets (ABI {abi})");
    }
    abi >= 6
}

/// The red team's finding (issue 31): nothing bounded what a command could take. With
/// `sandbox.max_memory_mb` and `sandbox.max_processes`, every process of a command (through
/// the sandbox helper, with a `bwrap` each, and under Landlock) holds at most that much data
/// and its user at most that many processes; a runaway allocation fails in the command
/// instead of taking the machine. 0 is refused with the file named.
#[test]
fn commands_run_under_the_configured_memory_and_process_limits() {
    let probe = "ulimit -d; ulimit -u; python3 -c 'x = bytearray(300 << 20)' 2>&1 | tail -1";
    for backend in ["bubblewrap-helper", "bubblewrap", "landlock"] {
        let env = TestEnv::new(vec![
            Turn::tool_call("bash", json!({"command": probe, "description": "limits"})),
            Turn::text("done"),
        ]);
        let (backend_name, helper) = match backend {
            "bubblewrap-helper" => ("bubblewrap", true),
            other => (other, false),
        };
        env.write(
            ".dsh/config.toml",
            &format!(
                "[sandbox]\nbackend = \"{backend_name}\"\nhelper = {helper}\n\
                 max_memory_mb = 200\nmax_processes = 9000\n"
            ),
        );
        if backend_name == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        let out = env.run(dsh(), &["--json", "go"]);
        assert_eq!(out.code(), Some(0), "{backend}: {}", out.stderr);
        let result = env.server.requests()[1].tool_results().pop().unwrap();
        assert_eq!(result, "204800\n9000\nMemoryError\n", "{backend}");
    }
    let env = TestEnv::new(vec![Turn::text("done")]);
    env.write(".dsh/config.toml", "[sandbox]\nmax_processes = 0\n");
    let out = env.run(dsh(), &["go"]);
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(".dsh/config.toml: line 2: a limit of 0 would stop every command"),
        "{}",
        out.stderr
    );
    dsh_testkit::fault_matrix(
        "attack",
        "a command allocates past sandbox.max_memory_mb (helper, bwrap, Landlock)",
        "the allocation fails in the command",
    );
}

/// The red team's attacks on Git (issue 31, items 3 and 5), under each backend: a hooks path
/// that a hand-written parser of `.git/config` could not place (set with a trailing comment),
/// where a command plants a hook; and a repository a command makes, gives a `core.fsmonitor`
/// and adds as a gitlink, which the user's next `git status` would run. dsh asks Git what it
/// reads: the hooks folder is protected (read-only under bubblewrap), and after the command
/// what Git would newly run is set aside and the model told.
#[test]
fn what_git_would_run_is_protected_and_checked_after_each_command() {
    if !dsh_testkit::git_available() {
        return;
    }
    let plant = "mkdir -p .githooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .githooks/pre-commit; \
                 chmod +x .githooks/pre-commit; echo planted";
    let embed = "git init -q sub && git -C sub config core.fsmonitor 'touch /tmp/pwned' && \
                 git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && \
                 git add sub 2>/dev/null && echo embedded";
    for backend in ["bubblewrap", "landlock"] {
        if backend == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        let env = TestEnv::new(vec![
            Turn::tool_call(
                "bash",
                json!({"command": plant, "description": "plant a hook"}),
            ),
            Turn::tool_call(
                "bash",
                json!({"command": embed, "description": "embed a repo"}),
            ),
            Turn::text("done"),
        ]);
        let ws = env.ws_path();
        let git = |args: &[&str]| {
            let status = std::process::Command::new("git")
                .arg("-C")
                .arg(&ws)
                .args(args)
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&[
            "config",
            "--comment",
            "the team's hooks",
            "core.hooksPath",
            ".githooks",
        ]);
        std::fs::create_dir_all(ws.join(".githooks")).unwrap();
        env.write(
            ".dsh/config.toml",
            &format!("[sandbox]\nbackend = \"{backend}\"\n"),
        );
        let out = env.run(dsh(), &["--json", "go"]);
        assert_eq!(out.code(), Some(0), "{backend}: {}", out.stderr);
        let results = env.server.requests()[2].tool_results();
        // The hook: refused where it is bound read-only, else set aside after the command.
        let hook = ws.join(".githooks/pre-commit");
        assert!(!hook.exists(), "{backend}: {}", results[0]);
        if backend == "landlock" {
            assert!(
                results[0].contains(
                    ".githooks/pre-commit, which Git runs, appeared or changed during the \
                     command; Git would run it outside the sandbox, so .githooks/pre-commit was \
                     renamed to .githooks/pre-commit.dsh-set-aside"
                ),
                "{backend}: {}",
                results[0]
            );
        } else {
            assert!(
                results[0].contains("Read-only file system"),
                "{}",
                results[0]
            );
        }
        // The embedded repository's fsmonitor: its config set aside, so Git does not read it.
        assert!(
            results[1].contains(
                "Git setting core.fsmonitor = \"touch /tmp/pwned\" appeared or changed during \
                 the command; Git would run it outside the sandbox, so sub/.git/config was \
                 renamed to sub/.git/config.dsh-set-aside"
            ),
            "{backend}: {}",
            results[1]
        );
        assert!(!ws.join("sub/.git/config").exists());
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a hook planted in a core.hooksPath set with a trailing comment, and an embedded repository with core.fsmonitor added as a gitlink (bubblewrap, Landlock)",
        "the hooks folder protected; what Git would newly run set aside after the command",
    );
}

/// The red team's finding (issue 31, item 7): a set-aside moves the file a running sandbox
/// binds read-only (the bind moves with it), which frees the name inside that sandbox. Here a
/// background job creates `.env.local` (absent when it started), a later command runs in a
/// sandbox that binds it read-only, and the job's end sets it aside: that sandbox is ended,
/// with the command in it, rather than left to make the name again.
#[test]
fn a_sandbox_whose_bind_a_set_aside_moved_is_ended() {
    if !bubblewrap_usable() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "touch .env.local; while [ ! -e go ]; do sleep 0.01; done",
                   "description": "make it", "run_in_background": true}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": "while [ ! -e .env.local ]; do sleep 0.01; done; echo there",
                   "description": "wait for it"}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": "touch go; sleep 20; echo survived", "description": "release it"}),
        ),
        Turn::text("done"),
    ]);
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = env.server.requests()[3].tool_results().pop().unwrap();
    assert!(!result.contains("survived"), "{result}");
    assert!(result.contains("SIGKILL"), "{result}");
    assert!(!env.ws.path().join(".env.local").exists());
    assert!(env.ws.path().join(".env.local.dsh-set-aside").exists());
    dsh_testkit::fault_matrix(
        "attack",
        "a protected file set aside while another command's sandbox binds it read-only",
        "that sandbox and its commands end",
    );
}

/// Whether bubblewrap can start here; a test that needs it is skipped with a note when it
/// cannot, unless `DSH_TEST_REQUIRE_BACKENDS=1` (set by `.ci/run`) makes that a failure.
#[allow(clippy::print_stderr)] // a skipped test says so
pub(crate) fn bubblewrap_usable() -> bool {
    let usable = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !usable {
        assert!(
            std::env::var("DSH_TEST_REQUIRE_BACKENDS").as_deref() != Ok("1"),
            "bubblewrap is required but cannot start here"
        );
        eprintln!("skipped: bubblewrap is not usable here");
    }
    usable
}

/// `text` with its letters turned 13 places, as `tr a-zA-Z n-za-mN-ZA-M` does: how a command
/// would send a key past a redaction by value.
fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            other => other,
        })
        .collect()
}

/// Has dsh confine commands with `backend`, set in the user's own config in `home` (which
/// applies whatever the workspace's trust), and gives back a shell line for the command and
/// a check to make after the run that the command really ran under it: under bubblewrap the
/// host's temporary folder is out of sight, so the mark the line leaves there shows only under
/// Landlock.
fn under_backend(home: &std::path::Path, backend: &str) -> (String, impl Fn() + use<>) {
    use std::io::Write as _;
    std::fs::create_dir_all(home).unwrap();
    let mut config = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("config.toml"))
        .unwrap();
    writeln!(config, "[sandbox]\nbackend = \"{backend}\"").unwrap();
    let marks = tempfile::tempdir().unwrap();
    let mark = marks.path().join("landlock");
    let line = format!("touch '{}' 2>/dev/null; ", mark.display());
    let landlock = backend == "landlock";
    let check = move || {
        let _kept = &marks;
        assert_eq!(
            mark.exists(),
            landlock,
            "the command did not run under {}",
            if landlock { "Landlock" } else { "bubblewrap" }
        );
    };
    (line, check)
}

/// Issue 47, item 3: a command reads the keys dsh keeps in its home (`dsh login`'s
/// `credentials`, its `.env`, the MCP sign-ins) and sends them on encoded, where no redaction
/// by value can see them. Under each backend, with the home outside every writable root and
/// (the harder case for Landlock, which can only add access) inside one.
#[test]
fn commands_cannot_read_the_secrets_dsh_keeps_in_its_home() {
    let files = [
        ("credentials", "ZP_ACCESS=zp-saved-0123456789\n"),
        (".env", "OTHER=home-env-0123456789\n"),
        (
            "mcp-auth/srv.json",
            "{\"refresh\":\"mcp-refresh-0123456789\"}",
        ),
    ];
    let secrets = [
        "zp-saved-0123456789",
        "home-env-0123456789",
        "mcp-refresh-0123456789",
    ];
    home_files_are_unread(&files, &secrets);
    dsh_testkit::fault_matrix(
        "attack",
        "a command reads dsh login's keys, the home's .env and the MCP sign-ins and sends them encoded (bwrap, Landlock; the home in and outside a writable root)",
        "nothing read: covered under bwrap, never granted under Landlock",
    );
}

/// Writes `files` into a dsh home and has a model-steered command read each (turned by rot13,
/// as an attacker sends a key past redaction by value), under each backend, with the home
/// outside every writable root and (the harder case for Landlock, which can only add access)
/// inside one: none of `secrets` may show.
fn home_files_are_unread(files: &[(&str, &str)], secrets: &[&str]) {
    let outside = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&outside).unwrap();
    for backend in ["bubblewrap", "landlock"] {
        if backend == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        for home_outside in [true, false] {
            // Outside every root, or under the temporary folder, which is one.
            let scratch = if home_outside {
                tempfile::tempdir_in(&outside).unwrap()
            } else {
                tempfile::tempdir().unwrap()
            };
            let home = std::fs::canonicalize(scratch.path()).unwrap();
            for (name, text) in files {
                let path = home.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
            let h = home.display();
            let (probe, ran_under) = under_backend(&home, backend);
            let paths: Vec<String> = (files.iter())
                .map(|(name, _)| format!("'{h}/{name}'"))
                .collect();
            let command = format!(
                "{probe}for f in {}; do tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; done; \
                 ls '{h}' | tr '\\n' ' '",
                paths.join(" ")
            );
            let env = TestEnv::new(vec![
                Turn::tool_call("bash", json!({"command": command, "description": "peek"})),
                Turn::text("done"),
            ]);
            let out = env
                .command(dsh())
                .env("DSH_HOME", &home)
                .args(["--json", "go"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{backend}: {out:?}");
            let result = env.server.requests()[1].tool_results().pop().unwrap();
            let case = format!("{backend}, home outside every root: {home_outside}");
            for secret in secrets {
                assert!(
                    !result.contains(&rot13(secret)),
                    "{case}: {secret} was read: {result}"
                );
            }
            // The home itself is still there to see (the names are not secrets).
            let first = files[0].0.split('/').next().unwrap();
            assert!(result.contains(first), "{case}: {result}");
            ran_under();
        }
    }
}

/// The red team's finding 4 after issue 47: the config files in dsh's home hold secrets (a
/// route's or a server's `Authorization` header, URL passwords, MCP `env` values, a client
/// secret) and a command read them and sent them on encoded. Like the reference's patch files
/// in the home, which can hold the same.
#[test]
fn commands_cannot_read_the_config_files_in_dsh_s_home() {
    let files = [
        (
            "config.toml",
            "[providers.deepseek]\nheaders = { Authorization = \"Bearer hdr-secret-7781xy\" }\n\
             [mcp.servers.off]\nenabled = false\nurl = \"https://u:url-pw-55432@h/mcp\"\n\
             oauth = { client_id = \"dsh\", client_secret = \"client-secret-3321\" }\n",
        ),
        ("cordis.patch.yml", "# patch-secret-0123456789\n[]\n"),
        (
            "profiles/headless/cordis.patch.yml",
            "# headless-secret-0123456789\n[]\n",
        ),
    ];
    let secrets = [
        "hdr-secret-7781xy",
        "url-pw-55432",
        "client-secret-3321",
        "patch-secret-0123456789",
        "headless-secret-0123456789",
    ];
    home_files_are_unread(&files, &secrets);
    dsh_testkit::fault_matrix(
        "attack",
        "a command reads the header token, URL password and client secret in $DSH_HOME/config.toml and the home's patch files and sends them encoded (bwrap, Landlock; the home in and outside a writable root)",
        "nothing read: the config files are hidden like the other secrets",
    );
}

/// The secrets of a dsh home for the attacks below, each with a value of its own.
const MOVED_SECRETS: [(&str, &str); 3] = [
    ("credentials", "ZP_ACCESS=zp-moved-0123456789\n"),
    (".env", "OTHER=home-env-moved-0123456789\n"),
    (
        "mcp-auth/srv.json",
        "{\"refresh\":\"mcp-moved-0123456789\"}",
    ),
];

/// Runs `first` then `second` as two commands of one run under `backend`, with `$H` set to
/// dsh's home: `home`, or `state/home` in the workspace when `None` (its secrets written
/// first). Gives back every tool result the model saw.
fn two_commands_with_home(
    backend: &str,
    home: Option<std::path::PathBuf>,
    first: &str,
    second: &str,
) -> String {
    let ws = tempfile::Builder::new()
        .prefix("dsh-test-ws-")
        .tempdir()
        .unwrap();
    let in_ws = || std::fs::canonicalize(ws.path()).unwrap().join("state/home");
    let home = home.unwrap_or_else(in_ws);
    let (probe, ran_under) = under_backend(&home, backend);
    let set = format!("H='{}'; ", home.display());
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": set.clone() + first, "description": "move"}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": set + &probe + second, "description": "read"}),
        ),
        Turn::text("done"),
    ]);
    let env = TestEnv { ws, ..env };
    for (name, text) in MOVED_SECRETS {
        let path = home.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let out = env
        .command(dsh())
        .env("DSH_HOME", &home)
        .args(["--json", "go"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{backend}: {out:?}");
    let requests = env.server.requests();
    let results: Vec<String> = (requests[1..].iter())
        .filter_map(|request| request.tool_results().pop())
        .collect();
    let results = results.join("\n");
    // Under Landlock a moved home refuses the second command, probe and all.
    if !results.contains("no longer the folder dsh found there") {
        ran_under();
    }
    results
}

/// The red team's finding 2 after issue 47: with dsh's home in a writable root (the workspace,
/// the temporary folder), one command renames or links the secrets (or the home itself, or
/// the folder above it) to names the next command's sandbox, built by name, did not hide, and
/// the next command reads them. Under Landlock the renames within a folder succeed and the
/// secrets stay hidden by what they are; moves to another folder are refused by the kernel;
/// a home moved away refuses every later command. Under bubblewrap the home is read-only (in
/// the workspace) or out of sight (under `/tmp`).
#[test]
fn a_secret_one_command_moves_is_not_read_by_the_next() {
    let moved = "(cd \"$H\" && mv credentials c2; ln .env e2; mv mcp-auth m2; ln c2 ../c3; \
                 mv .env ../e3; mv m2/srv.json ../s3) 2>&1; echo moved";
    let read = "cd \"$H/..\"; for f in \"$H\"/c2 \"$H\"/e2 \"$H\"/m2/srv.json c3 e3 s3 \
                \"$H\"/credentials \"$H\"/.env \"$H\"/mcp-auth/srv.json; do \
                tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; done; ls \"$H\" | tr '\\n' ' '; \
                echo read-done";
    let away = "mv \"$H\" \"$H.moved\" 2>&1; echo moved";
    let read_away = "for f in \"$H.moved\"/credentials \"$H.moved\"/.env \
                     \"$H.moved\"/mcp-auth/srv.json; do \
                     tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; done; echo read-done";
    let parent_away = "P=$(dirname \"$H\"); mv \"$P\" \"$P.moved\" 2>&1; echo moved";
    let read_parent = "P=$(dirname \"$H\"); for f in \"$P.moved\"/home/credentials \
                       \"$P.moved\"/home/.env \"$P.moved\"/home/mcp-auth/srv.json; do \
                       tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; done; echo read-done";
    for backend in ["bubblewrap", "landlock"] {
        if backend == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        for in_workspace in [true, false] {
            let attacks = [(moved, read), (away, read_away), (parent_away, read_parent)];
            for (first, second) in attacks {
                // The home's folder, `$H/..`, is the attacker's to rename in both places.
                let scratch = tempfile::tempdir().unwrap();
                let home = (!in_workspace).then(|| {
                    std::fs::canonicalize(scratch.path())
                        .unwrap()
                        .join("state/home")
                });
                let all = two_commands_with_home(backend, home, first, second);
                let case = format!("{backend}, home in the workspace: {in_workspace}, {first}");
                for (name, text) in MOVED_SECRETS {
                    assert!(
                        !all.contains(&rot13(text.trim_end())),
                        "{case}: {name} was read: {all}"
                    );
                }
                if backend == "landlock" && first == moved {
                    // The attack ran: the renames in the home's own folder succeeded, and
                    // the secrets were still not read.
                    let listed = |name| all.split_whitespace().any(|word| word == name);
                    assert!(["c2", "e2", "m2"].into_iter().all(listed), "{case}: {all}");
                    assert!(all.contains("read-done"), "{case}: {all}");
                }
                if backend == "landlock" && first != moved {
                    assert!(
                        all.contains("no longer the folder dsh found there"),
                        "{case}: {all}"
                    );
                }
            }
        }
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a command renames or links dsh's secrets, the home or its folder, and the next command reads them (bwrap, Landlock; the home in the workspace and under /tmp)",
        "nothing read: renamed secrets stay hidden by identity, moves to other folders are refused, a moved home refuses commands",
    );
}

/// The red team's finding 6 after issue 47: `$DSH_HOME/.env` is a symlink to a file kept
/// elsewhere (a dotfiles setup). Under Landlock the link and where it leads were readable;
/// under bubblewrap every command failed (bwrap cannot mount at a link). Now where it leads is
/// hidden, through the link and by its own path, and commands run. Where it leads lies outside
/// every writable root, or under `/tmp`, which is one.
#[test]
fn a_symlinked_env_in_the_home_is_hidden_where_it_leads() {
    let outside = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&outside).unwrap();
    let secret = "OTHER=dotfiles-env-0123456789";
    for backend in ["bubblewrap", "landlock"] {
        if backend == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        for target_outside in [true, false] {
            let dotfiles = if target_outside {
                tempfile::tempdir_in(&outside).unwrap()
            } else {
                tempfile::tempdir().unwrap()
            };
            let target = std::fs::canonicalize(dotfiles.path())
                .unwrap()
                .join("dsh.env");
            std::fs::write(&target, format!("{secret}\n")).unwrap();
            let scratch = tempfile::tempdir_in(&outside).unwrap();
            let home = std::fs::canonicalize(scratch.path()).unwrap();
            std::os::unix::fs::symlink(&target, home.join(".env")).unwrap();
            let (probe, ran_under) = under_backend(&home, backend);
            let command = format!(
                "{probe}for f in '{}/.env' '{}'; do tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; \
                 done; echo ran-ok",
                home.display(),
                target.display()
            );
            let env = TestEnv::new(vec![
                Turn::tool_call("bash", json!({"command": command, "description": "peek"})),
                Turn::text("done"),
            ]);
            let out = env
                .command(dsh())
                .env("DSH_HOME", &home)
                .args(["--json", "go"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{backend}: {out:?}");
            let result = env.server.requests()[1].tool_results().pop().unwrap();
            let case = format!("{backend}, where it leads is outside every root: {target_outside}");
            assert!(result.contains("ran-ok"), "{case}: {result}");
            assert!(!result.contains(&rot13(secret)), "{case}: read: {result}");
            ran_under();
        }
    }
    dsh_testkit::fault_matrix(
        "attack",
        "$DSH_HOME/.env is a symlink (dotfiles) and a command reads it and where it leads (bwrap, Landlock; the target outside every root and under /tmp)",
        "nothing read, and commands still run: where the link leads is hidden too",
    );
}

/// A uid no process of this machine runs as: the kernel counts `sandbox.max_processes` per
/// real uid, and root's own processes are never refused a fork whatever its limit.
const UNPRIVILEGED: u32 = 54_321;

/// Forks children that wait, until the kernel refuses one; says how many it had, once every
/// child has ended (so none is left to count against the next command).
const FORKER: &str = "python3 -c '
import os
r, w = os.pipe()
n = 0
said = None
try:
    while n < 500:
        if os.fork() == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        n += 1
    said = \"forked %d\" % n
except OSError as e:
    said = \"refused after %d %d\" % (n, e.errno)
os.close(w)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print(said)
'";

/// Issue 48, item 12: `sandbox.max_processes` is not only set but enforced: a command that
/// forks past it is refused by the kernel. Run as a user the kernel enforces it for (when the
/// test runs as root, dsh itself runs as an unprivileged uid, from a copy of the binary).
#[test]
fn a_command_that_forks_past_the_process_limit_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    let mut backends = vec!["landlock"];
    if bubblewrap_usable() && (!root || bubblewrap_usable_as(UNPRIVILEGED)) {
        backends.push("bubblewrap");
    }
    for backend in backends {
        let env = TestEnv::new(vec![
            Turn::tool_call("bash", json!({"command": FORKER, "description": "fork"})),
            Turn::text("done"),
        ]);
        env.write(
            ".dsh/config.toml",
            &format!("[sandbox]\nbackend = \"{backend}\"\nmax_processes = 60\n"),
        );
        let bin_dir = tempfile::tempdir().unwrap();
        let mut command = if root {
            for dir in [env.ws.path(), env.home.path(), env.user_home.path()] {
                chown_tree(dir, UNPRIVILEGED);
            }
            std::fs::set_permissions(bin_dir.path(), PermissionsExt::from_mode(0o755)).unwrap();
            let bin = bin_dir.path().join("dsh");
            std::fs::copy(dsh(), &bin).unwrap();
            let mut command = env.command(std::path::Path::new("setpriv"));
            command
                .args(["--reuid", &UNPRIVILEGED.to_string()])
                .args(["--regid", &UNPRIVILEGED.to_string(), "--clear-groups", "--"])
                .arg(bin);
            command
        } else {
            env.command(dsh())
        };
        let out = dsh_testkit::RunOutput::of(command.args(["--json", "go"]));
        assert_eq!(out.code(), Some(0), "{backend}: {}", out.stderr);
        let result = env.server.requests()[1].tool_results().pop().unwrap();
        let refused_after: u32 = result
            .strip_prefix("refused after ")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{backend}: no fork was refused: {result}"));
        assert!(refused_after < 60, "{backend}: {result}");
        assert!(
            result.trim_end().ends_with(" 11"),
            "{backend}: EAGAIN: {result}"
        );
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a command forks past sandbox.max_processes as an unprivileged user (Landlock, bwrap where it starts)",
        "the kernel refuses the fork (EAGAIN) before the limit",
    );
}

/// Gives `dir` and everything in it to `uid` (and the group of the same number).
fn chown_tree(dir: &std::path::Path, uid: u32) {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            chown_tree(&entry.path(), uid);
        } else {
            std::os::unix::fs::lchown(entry.path(), Some(uid), Some(uid)).unwrap();
        }
    }
}

/// Whether bubblewrap starts for `uid` (unprivileged user namespaces may be off).
fn bubblewrap_usable_as(uid: u32) -> bool {
    std::process::Command::new("setpriv")
        .args(["--reuid", &uid.to_string(), "--regid", &uid.to_string()])
        .args([
            "--clear-groups",
            "--",
            "bwrap",
            "--ro-bind",
            "/",
            "/",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

/// One request to a `dsh web` on `port` with its `token`, as the page makes it; the status
/// and the body.
fn web_request(port: u16, token: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let origin = format!("http://127.0.0.1:{port}");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Authorization: Bearer {token}\r\nOrigin: {origin}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned());
    (status, body.unwrap_or_default())
}

/// The red team's finding 1 after issue 47: `dsh web --open` leaves the token in
/// `$DSH_HOME/web/open-<port>.html`, and a command of a session (or of any other dsh run)
/// read it, opened a session of its own over loopback, switched it to `danger-full-access`
/// and ran unconfined. Under each backend a model-steered command of a `dsh web` session tries
/// to read the page while it is on disk: nothing. Then the browser comes for the app, and the
/// page is gone.
#[test]
fn commands_cannot_read_the_token_page_of_dsh_web_open() {
    use std::io::BufRead as _;
    let outside = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&outside).unwrap();
    // A "browser" that opens nothing: the test asks for the page itself.
    let bin = tempfile::tempdir().unwrap();
    let opener = bin.path().join("xdg-open");
    std::fs::write(&opener, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for backend in ["bubblewrap", "landlock"] {
        if backend == "bubblewrap" && !bubblewrap_usable() {
            continue;
        }
        // Outside /tmp, which bubblewrap would hide from commands anyway.
        let scratch = tempfile::tempdir_in(&outside).unwrap();
        let home = std::fs::canonicalize(scratch.path()).unwrap();
        let (probe, ran_under) = under_backend(&home, backend);
        let h = home.display();
        let command = format!(
            "{probe}for f in '{h}'/web/*; do tr a-zA-Z n-za-mN-ZA-M < \"$f\" 2>&1; echo; done; \
             echo ran-ok"
        );
        let env = TestEnv::new(vec![
            Turn::tool_call("bash", json!({"command": command, "description": "peek"})),
            Turn::text("done"),
        ]);
        let mut web = env
            .command(dsh())
            .args(["web", "--port", "0", "--open"])
            .env("DSH_HOME", &home)
            .env("PATH", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(web.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let (base, token) = line.trim().split_once("/#token=").unwrap();
        let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
        let ask =
            |method: &str, path: &str, body: &str| web_request(port, token, method, path, body);
        let cwd = json!({"cwd": env.ws_path()}).to_string();
        let (status, opened) = ask("POST", "/api/sessions", &cwd);
        assert_eq!(status, 200, "{backend}: {opened}");
        let id = serde_json::from_str::<serde_json::Value>(&opened).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let page = home.join(format!("web/open-{port}.html"));
        assert!(page.exists(), "{backend}: no page at {}", page.display());
        let prompt = json!({"text": "look around"}).to_string();
        let (status, sent) = ask("POST", &format!("/api/sessions/{id}/prompt"), &prompt);
        assert!(status < 300, "{backend}: {sent}");
        let answered = (env.server).wait_for_requests(2, std::time::Duration::from_secs(60));
        assert!(answered, "{backend}: the command's result never came");
        let result = env.server.requests()[1].tool_results().pop().unwrap();
        assert!(result.contains("ran-ok"), "{backend}: {result}");
        for seen in [token.to_owned(), rot13(token)] {
            assert!(!result.contains(&seen), "{backend}: read: {result}");
        }
        ran_under();
        // The page was there to read all along; the browser's first request removes it.
        assert!(page.exists(), "{backend}: {}", page.display());
        let (status, _) = ask("GET", "/", "");
        assert_eq!(status, 200);
        assert!(!page.exists(), "{backend}: the page outlived its reading");
        let _ = web.kill();
        let _ = web.wait();
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a command reads dsh web --open's token page in $DSH_HOME/web to drive the web app unconfined (bwrap, Landlock)",
        "nothing read: web/ is hidden like the other secrets, and the page is removed once the browser has read it",
    );
}
