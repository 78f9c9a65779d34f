//! The escape suite: ways out of the `workspace-write` sandbox, each tried through the tools the
//! model has (`bash`, `write`, `edit`), under a kernel backend, with the network off. Every
//! attempt must fail; the suite prints `N attempts, 0 escapes`. Shared by the tests of
//! `dsh-tools` (each backend, a `bwrap` per command) and of `dsh` (bubblewrap through the
//! sandbox helper, which needs dsh's executable).
//!
//! A backend the machine cannot run is skipped with a note, unless
//! `DSH_TEST_REQUIRE_BACKENDS=1` (set by `.ci/run`), which makes it a failure.
//!
//! The count of attempts is checked against [`ATTEMPTS`], and a control run
//! ([`run_control`]) makes the same attempts under `danger-full-access` (no sandbox, network
//! on), where each must get out: an attempt that fails for another reason than the sandbox
//! (a missing program, a cross-device link) would otherwise pass as "confined". A few are not
//! tried or not required there, each with its reason ([`Suite::control_exemption`]).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test
#![allow(clippy::print_stdout, clippy::print_stderr)] // the suite reports its count
#![allow(dead_code)] // each includer uses part of it

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_sandbox::{BackendChoice, Sandbox, SandboxMode, SandboxPolicy, SandboxSettings};
use dsh_tools::{
    ModelCaps, Shell, ShellEnv, SpillStore, ToolContext, ToolOutcome, ToolRegistry, ToolSession,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How many attempts the suite makes (under Landlock one fewer: metadata is a known limit).
pub const ATTEMPTS: usize = 29;

struct Suite {
    /// The control run: no sandbox, and every attempt must get out.
    control: bool,
    /// Attempts the control run did not get out with (each a failure).
    unproven: Vec<String>,
    /// Attempts the control run did not try or require, with why.
    exempted: Vec<String>,
    /// Whether this process runs as root, and may create device nodes.
    root: bool,
    mknod: bool,
    /// Whether this process may go through /proc/1/root (it may trace pid 1).
    proc_one: bool,
    /// $HOME of the commands: the control run's own, so that its writes there (a probe,
    /// `git config --global`) never touch the real one, which the confined runs beside it
    /// watch.
    home: PathBuf,
    ws: PathBuf,
    outside: PathBuf,
    registry: ToolRegistry,
    ctx: ToolContext,
    shell: Arc<Shell>,
    attempts: usize,
    escapes: Vec<String>,
    /// What a backend is known not to confine, tried and reported but not counted.
    known_limits: Vec<String>,
    /// A probe file under /etc and $HOME, unique to this run.
    tag: String,
}

impl Suite {
    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx)
            .await
    }

    async fn bash(&self, command: &str) -> String {
        let outcome = self
            .call(
                "bash",
                json!({"command": command, "description": "escape attempt"}),
            )
            .await;
        let text = outcome.text();
        assert!(
            !text.contains("SANDBOX_UNAVAILABLE") && !text.contains("no sandbox backend"),
            "the sandbox refused to run anything: {text}"
        );
        text
    }

    /// Records one attempt; `escaped` says whether it got out.
    fn check(&mut self, name: &str, escaped: bool, detail: &str) {
        self.attempts += 1;
        if self.control {
            if !escaped {
                match self.control_exemption(name) {
                    Some(why) => self.exempted.push(format!("{name} ({why})")),
                    None => self.unproven.push(format!("{name}: {detail}")),
                }
            }
        } else if escaped {
            self.escapes.push(format!("{name}: {detail}"));
        }
    }

    /// Puts `existing.txt` back as it was, so that the next attempt's check of its content
    /// sees only that attempt's doing (in the control run, the one before changed it).
    fn reset_existing(&self) {
        std::fs::write(self.outside.join("existing.txt"), "original\n").unwrap();
    }

    /// In the control run, an attempt that is counted but not made: it would change the host
    /// for real. Outside the control run, `None`: make it.
    fn not_tried_in_control(&mut self, name: &str) -> bool {
        if !self.control {
            return false;
        }
        self.attempts += 1;
        let why = self.control_exemption(name).unwrap_or("not tried");
        self.exempted.push(format!("{name} ({why})"));
        true
    }

    /// Why the control run may not get out with `name`; `None` when it must.
    fn control_exemption(&self, name: &str) -> Option<&'static str> {
        match name {
            "write /proc/sys" | "write /proc/sysrq-trigger" => {
                Some("not tried: it would write the host's kernel settings")
            }
            "remount / read-write" => Some("not tried: it would remount the host's root"),
            "write /etc"
            | "/proc/self/root"
            | "/proc/1/root"
            | "remount in a new user namespace"
                if !self.root =>
            {
                Some("writes under /etc, which needs root")
            }
            "mknod" if !self.mknod => Some("needs root with CAP_MKNOD"),
            "/proc/1/root" if !self.proc_one => {
                Some("this process may not go through pid 1's root (ptrace access to pid 1)")
            }
            _ => None,
        }
    }
}

/// Whether this process runs as uid 0, and whether it has CAP_MKNOD (bit 27) in effect.
fn root_and_mknod() -> (bool, bool) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.split_whitespace().next().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    let root = field("Uid:") == "0";
    let caps = u64::from_str_radix(&field("CapEff:"), 16).unwrap_or(0);
    (root, root && caps & (1 << 27) != 0)
}

/// A folder that is not under any root the policy grants (so not under /tmp either).
fn outside_base(policy: &SandboxPolicy) -> PathBuf {
    let base = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    assert!(
        !policy.allows_write(&base.join("x")),
        "{} is writable",
        base.display()
    );
    base
}

fn setup(backend: BackendChoice, via_helper: bool) -> Option<Suite> {
    setup_as(backend, via_helper, false)
}

/// `control`: the policy is `danger-full-access`, so no backend confines the commands.
fn setup_as(backend: BackendChoice, via_helper: bool, control: bool) -> Option<Suite> {
    let sandbox = Arc::new(Sandbox::new(SandboxSettings {
        backend,
        network: false,
        helper: via_helper,
        ..SandboxSettings::default()
    }));
    if !control && sandbox.chosen().is_none() {
        let why: Vec<String> = sandbox
            .probes()
            .iter()
            .map(|p| format!("{}: {:?}", p.backend, p.result))
            .collect();
        if std::env::var("DSH_TEST_REQUIRE_BACKENDS").as_deref() == Ok("1") {
            panic!("backend {backend:?} is required but unusable: {why:?}");
        }
        eprintln!("skipped: backend {backend:?} is not usable here: {why:?}");
        return None;
    }
    let ws_dir = tempfile::tempdir().unwrap().keep();
    let ws = std::fs::canonicalize(&ws_dir).unwrap();
    let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &ws, Vec::new());
    let base = outside_base(&policy);
    let policy = if control {
        policy.with_mode(SandboxMode::DangerFullAccess)
    } else {
        policy
    };
    let tag = format!(
        "dsh-escape-{}-{}",
        std::process::id(),
        if control {
            "control"
        } else {
            backend_name(backend)
        }
    );
    let outside = base.join(&tag);
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("existing.txt"), "original\n").unwrap();
    std::fs::write(outside.join("existing2.txt"), "second\n").unwrap();
    let mut vars = vec![("DSH_SESSION_ID".into(), "session-escape".into())];
    let home = if control {
        let home = base.join(format!("{tag}-home"));
        std::fs::create_dir_all(&home).unwrap();
        vars.push(("HOME".into(), home.clone().into_os_string()));
        home
    } else {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/root".into())
    };
    let shell = Arc::new(Shell::new(
        ShellEnv::new(vars),
        &format!(
            "session-escape{}{}",
            std::process::id(),
            backend_name(backend)
        ),
        sandbox,
    ));
    let session = ToolSession::new(
        policy,
        SpillStore::new(ws.join(".spill")),
        ModelCaps {
            name: "m".into(),
            image_input: false,
        },
    )
    .with_shell(shell.clone());
    let mut registry = ToolRegistry::with_file_tools(true);
    registry.add_shell_tools(true);
    let (root, mknod) = root_and_mknod();
    Some(Suite {
        control,
        unproven: Vec::new(),
        exempted: Vec::new(),
        root,
        mknod,
        proc_one: std::fs::read_dir("/proc/1/root/").is_ok(),
        home,
        ws: ws.clone(),
        outside,
        registry,
        ctx: ToolContext {
            call_id: "c".into(),
            cwd: ws,
            cancel: CancellationToken::new(),
            session: Arc::new(session),
        },
        shell,
        attempts: 0,
        escapes: Vec::new(),
        known_limits: Vec::new(),
        tag,
    })
}

fn backend_name(backend: BackendChoice) -> &'static str {
    match backend {
        BackendChoice::Bubblewrap => "bwrap",
        BackendChoice::Landlock => "landlock",
        BackendChoice::Auto => "auto",
    }
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Waits for `path` to appear, up to `limit`.
fn appears(path: &Path, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    path.exists()
}

/// A protected file replaced on the host while the run goes on (Git renames a new
/// `.git/config` over the old one; so does an editor saving `.env`) is still read-only to the
/// next command: a sandbox that outlives one command (the helper's) has lost its bind there,
/// and must not be reused.
pub async fn a_replaced_protected_file_stays_protected(via_helper: bool) {
    let Some(s) = setup(BackendChoice::Bubblewrap, via_helper) else {
        return;
    };
    std::fs::create_dir_all(s.ws.join(".git")).unwrap();
    std::fs::write(s.ws.join(".git/config"), "[core]\n").unwrap();
    assert_eq!(s.bash("cat .git/config").await, "[core]\n");
    std::fs::write(s.ws.join(".git/config.lock"), "[core]\n\tbare = false\n").unwrap();
    std::fs::rename(s.ws.join(".git/config.lock"), s.ws.join(".git/config")).unwrap();
    let out = s.bash("echo '[core]' >> .git/config").await;
    assert!(out.contains("[sandbox: file access denied"), "{out}");
    assert_eq!(
        std::fs::read_to_string(s.ws.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
}

/// Runs every attempt under `backend`; `via_helper`: bubblewrap's commands go through the
/// sandbox helper (the process must have offered one: `dsh_sandbox::helper::offer`), which
/// the suite checks before it starts.
pub async fn run_suite(backend: BackendChoice, via_helper: bool) {
    let Some(s) = setup(backend, via_helper) else {
        return;
    };
    attempts(s, backend, via_helper).await;
}

/// The control run: every attempt without a sandbox (`danger-full-access`, network on), where
/// each must get out, but those [`Suite::control_exemption`] names.
pub async fn run_control() {
    let s = setup_as(BackendChoice::Auto, false, true).expect("the control needs no backend");
    attempts(s, BackendChoice::Auto, false).await;
}

async fn attempts(mut s: Suite, backend: BackendChoice, via_helper: bool) {
    if backend == BackendChoice::Bubblewrap {
        let init = s.bash("cat /proc/1/comm").await;
        let expected = if via_helper { "dsh\n" } else { "bwrap\n" };
        assert_eq!(init, expected, "the suite must run the way it says it does");
    }
    // Kernel settings a uid-0 command could change without any capability: which program
    // runs (as host root) on a crash, and the SysRq trigger. Each write would change nothing
    // (the setting's own value; SysRq's help): a write that succeeds is the escape.
    for (name, command) in [
        (
            "write /proc/sys",
            "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern",
        ),
        ("write /proc/sysrq-trigger", "echo h > /proc/sysrq-trigger"),
    ] {
        if s.not_tried_in_control(name) {
            continue;
        }
        let r = s.bash(command).await;
        s.check(name, !r.contains("[exit code:"), &r);
    }
    let out = s.outside.clone();
    let o = out.display().to_string();
    let etc = PathBuf::from("/etc").join(&s.tag);
    let home = s.home.clone();
    let home_probe = home.join(&s.tag);

    // 1-3: plain writes outside.
    let r = s.bash(&format!("echo x > {}", etc.display())).await;
    s.check("write /etc", etc.exists(), &r);
    let r = s.bash(&format!("touch {}", home_probe.display())).await;
    s.check("write $HOME", home_probe.exists(), &r);
    let rel = pathdiff(&s.ws, &out.join("dotdot"));
    let r = s.bash(&format!("echo x > {rel}")).await;
    s.check("write through ..", out.join("dotdot").exists(), &r);

    // 4-6: a symlink in the workspace pointing outside, through bash, write and edit.
    let r = s
        .bash(&format!("ln -s {o} link && echo x > link/via-link"))
        .await;
    s.check("bash through a symlink", out.join("via-link").exists(), &r);
    std::os::unix::fs::symlink(&out, s.ws.join("link2")).ok();
    let r = s
        .call(
            "write",
            json!({"file_path": "link2/via-write", "content": "x"}),
        )
        .await
        .text();
    s.check(
        "write tool through a symlink",
        out.join("via-write").exists(),
        &r,
    );
    let _ = s
        .call("read", json!({"file_path": "link2/existing.txt"}))
        .await;
    let r = s
        .call(
            "edit",
            json!({"file_path": "link2/existing.txt", "old_string": "original", "new_string": "edited"}),
        )
        .await
        .text();
    s.check(
        "edit tool through a symlink",
        read(&out.join("existing.txt")).as_deref() != Some("original\n"),
        &r,
    );

    // 7: a hard link to an outside file, then a write through it.
    s.reset_existing();
    let r = s
        .bash(&format!("ln {o}/existing.txt hard; echo more >> hard"))
        .await;
    s.check(
        "hard link",
        read(&out.join("existing.txt")).as_deref() != Some("original\n"),
        &r,
    );

    // 8-9: /proc root links.
    let proc_self = PathBuf::from("/etc").join(format!("{}-proc-self", s.tag));
    let r = s
        .bash(&format!("echo x > /proc/self/root{}", proc_self.display()))
        .await;
    s.check("/proc/self/root", proc_self.exists(), &r);
    let proc_one = PathBuf::from("/etc").join(format!("{}-proc-1", s.tag));
    let r = s
        .bash(&format!("echo x > /proc/1/root{}", proc_one.display()))
        .await;
    s.check("/proc/1/root", proc_one.exists(), &r);

    // 10: /dev/shm (under bubblewrap a private /dev; the host's must stay untouched).
    let shm = PathBuf::from("/dev/shm").join(&s.tag);
    let r = s.bash(&format!("echo x > {}", shm.display())).await;
    s.check("/dev/shm", shm.exists(), &r);

    // 11-12: renames across the boundary.
    let r = s.bash(&format!("mv {o}/existing2.txt ./moved-in")).await;
    s.check(
        "rename an outside file in",
        !out.join("existing2.txt").exists(),
        &r,
    );
    let r = s
        .bash(&format!("echo x > leaving && mv leaving {o}/left"))
        .await;
    s.check("rename a file out", out.join("left").exists(), &r);

    // 13-14: metadata of an outside file.
    let r = s.bash(&format!("chmod 777 {o}/existing.txt")).await;
    let mode = std::fs::metadata(out.join("existing.txt")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    if backend == BackendChoice::Landlock && !s.control {
        // Landlock governs file contents and names, not metadata: the owner of a file outside
        // the roots can still chmod, chown or touch it (docs/sandbox.md, "Limits").
        s.known_limits
            .push("chmod/chown/utime of files the user owns".into());
        std::fs::set_permissions(
            out.join("existing.txt"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
    } else {
        s.check(
            "chmod outside",
            mode.permissions().mode() & 0o777 == 0o777,
            &r,
        );
    }
    s.reset_existing();
    let r = s.bash(&format!("truncate -s 0 {o}/existing.txt")).await;
    s.check(
        "truncate outside",
        read(&out.join("existing.txt")).as_deref() != Some("original\n"),
        &r,
    );

    // 15: a daemon that leaves the command's session and writes after the call returned.
    let r = s
        .bash(&format!(
            "(setsid bash -c 'until [ -e go ]; do sleep 0.01; done; echo x > {o}/daemon; touch \
             tried' > /dev/null 2>&1 &) ; echo started"
        ))
        .await;
    std::fs::write(s.ws.join("go"), "").unwrap();
    // Under bubblewrap the daemon dies with the sandbox; under Landlock it runs, confined.
    appears(&s.ws.join("tried"), Duration::from_secs(3));
    s.check("setsid daemon", out.join("daemon").exists(), &r);

    // 16-17: mount namespaces and remounts.
    let mount_probe = PathBuf::from("/etc").join(format!("{}-mount", s.tag));
    if !s.not_tried_in_control("remount / read-write") {
        let r = s
            .bash(&format!(
                "mount -o remount,rw,bind / / ; echo x > {}",
                mount_probe.display()
            ))
            .await;
        s.check("remount / read-write", mount_probe.exists(), &r);
    }
    let _ = std::fs::remove_file(&mount_probe);
    let r = s
        .bash(&format!(
            "unshare -rm sh -c 'mount -o remount,rw,bind / / ; echo x > {}'",
            mount_probe.display()
        ))
        .await;
    s.check("remount in a new user namespace", mount_probe.exists(), &r);

    // 18: an fd to an outside folder, then a path through /proc/self/fd.
    let r = s
        .bash(&format!("exec 3< {o}; echo x > /proc/self/fd/3/via-fd"))
        .await;
    s.check("/proc/self/fd", out.join("via-fd").exists(), &r);

    // 19: a symlink to a file outside, appended to (the shape of `>> ~/.bashrc` via a link).
    s.reset_existing();
    let r = s
        .bash(&format!(
            "ln -s {o}/existing.txt appended; echo x >> appended"
        ))
        .await;
    s.check(
        "append through a symlink to a file",
        read(&out.join("existing.txt")).as_deref() != Some("original\n"),
        &r,
    );

    // 20-21: the write and edit tools straight at outside paths.
    let r = s
        .call(
            "write",
            json!({"file_path": format!("{o}/direct-write"), "content": "x"}),
        )
        .await
        .text();
    s.check("write tool outside", out.join("direct-write").exists(), &r);
    s.reset_existing();
    let _ = s
        .call("read", json!({"file_path": format!("{o}/existing.txt")}))
        .await;
    let r = s
        .call(
            "edit",
            json!({"file_path": format!("{o}/existing.txt"), "old_string": "original", "new_string": "x"}),
        )
        .await
        .text();
    s.check(
        "edit tool outside",
        read(&out.join("existing.txt")).as_deref() != Some("original\n"),
        &r,
    );

    // 22: a device node.
    let r = s.bash("mknod disk b 8 0 && echo made").await;
    s.check("mknod", r.contains("made"), &r);

    // 23-24: the network, which is off: TCP and UDP to listeners on 127.0.0.1.
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let r = s
        .bash(&format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected >&3"
        ))
        .await;
    let connected = tcp.accept().is_ok();
    s.check(
        "TCP to 127.0.0.1",
        connected || r.contains("connected\n"),
        &r,
    );
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let uport = udp.local_addr().unwrap().port();
    let r = s
        .bash(&format!("echo datagram > /dev/udp/127.0.0.1/{uport}"))
        .await;
    let mut buf = [0u8; 64];
    let received = udp.recv(&mut buf).is_ok();
    s.check("UDP to 127.0.0.1", received, &r);

    // 25: signalling dsh itself (here: the test process).
    let r = s
        .bash(&format!("kill -0 {} && echo reachable", std::process::id()))
        .await;
    s.check("signal the agent", r.contains("reachable"), &r);

    // 26: $HOME configuration through a tool that writes it (git config --global).
    let gitconfig = home.join(".gitconfig");
    let before = read(&gitconfig);
    let r = s
        .bash("git config --global dsh.escape yes 2>&1; echo done")
        .await;
    let after = read(&gitconfig);
    if after != before {
        match &before {
            Some(text) => std::fs::write(&gitconfig, text).unwrap(),
            None => std::fs::remove_file(&gitconfig).unwrap(),
        }
    }
    s.check("git config --global", after != before, &r);

    // A Unix socket of a host daemon outside the roots: neither backend refuses connect(2)
    // to a socket it can see (bubblewrap hides the well-known daemon sockets only).
    let socket_path = out.join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let _ = s
        .bash(&format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}')\"",
            socket_path.display()
        ))
        .await;
    if listener.accept().is_ok() {
        s.known_limits
            .push("connect to a host daemon's Unix socket it can see".into());
    }

    // 27: last, since it breaks the workspace: rename the workspace away (its parent, /tmp, is
    // writable) and put a symlink to the outside folder in its place; then write "into the
    // workspace" with bash and with the write tool.
    let ws = s.ws.display().to_string();
    let r = s
        .bash(&format!(
            "cd / && mv {ws} {ws}.old && ln -s {o} {ws} && echo swapped"
        ))
        .await;
    let r2 = s.bash("echo x > swapped-bash").await;
    let r3 = s
        .call(
            "write",
            json!({"file_path": "swapped-write", "content": "x"}),
        )
        .await
        .text();
    s.check(
        "swap the workspace for a symlink, then write through it",
        out.join("swapped-bash").exists() || out.join("swapped-write").exists(),
        &format!("{r}\n{r2}\n{r3}"),
    );
    if std::fs::symlink_metadata(&s.ws).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(&s.ws).unwrap();
        std::fs::rename(format!("{ws}.old"), &s.ws).unwrap();
    }

    s.shell.shutdown().await;
    let _ = std::fs::remove_dir_all(&s.outside);
    let _ = std::fs::remove_dir_all(&s.ws);
    // Tidy anything an escape left behind first, so a failure does not poison the next run.
    for leftover in [&etc, &home_probe, &proc_self, &proc_one, &shm, &mount_probe] {
        let _ = std::fs::remove_file(leftover);
    }
    if s.control {
        let _ = std::fs::remove_dir_all(&home);
    }
    let limits = if s.known_limits.is_empty() {
        String::new()
    } else {
        format!(
            " (known limits, not counted: {})",
            s.known_limits.join("; ")
        )
    };
    let through = if via_helper {
        " (the sandbox helper)"
    } else {
        ""
    };
    let expected = if backend == BackendChoice::Landlock && !s.control {
        ATTEMPTS - 1
    } else {
        ATTEMPTS
    };
    if s.control {
        println!(
            "control, no sandbox: {} attempts, {} got out, {} not required ({}), {} did not get out",
            s.attempts,
            s.attempts - s.exempted.len() - s.unproven.len(),
            s.exempted.len(),
            s.exempted.join("; "),
            s.unproven.len()
        );
        assert_eq!(
            s.attempts, expected,
            "the suite's count of attempts changed"
        );
        assert!(
            s.unproven.is_empty(),
            "without the sandbox these attempts still did not get out, so the suite does not \
             show that the sandbox stops them:\n{}",
            s.unproven.join("\n---\n")
        );
        return;
    }
    println!(
        "{}{through}: {} attempts, {} escapes{limits}",
        backend_name(backend),
        s.attempts,
        s.escapes.len()
    );
    assert_eq!(
        s.attempts, expected,
        "the suite's count of attempts changed"
    );
    assert!(
        s.escapes.is_empty(),
        "escaped the {} sandbox:\n{}",
        backend_name(backend),
        s.escapes.join("\n---\n")
    );
}

/// `to` relative to `from`, through `..`.
fn pathdiff(from: &Path, to: &Path) -> String {
    let up = from.components().count() - 1;
    let mut rel = String::new();
    for _ in 0..up {
        rel.push_str("../");
    }
    rel + to.strip_prefix("/").unwrap().to_str().unwrap()
}
