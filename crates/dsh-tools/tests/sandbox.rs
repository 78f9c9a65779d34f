//! `bash` under each kernel backend: what is denied and marked, what is the command's own
//! failure, the network switch, read-only mode, background denials, and escalation under each
//! approval policy.
//!
//! A backend the machine cannot run is skipped with a note, unless
//! `DSH_TEST_REQUIRE_BACKENDS=1` (set by `.ci/run`), which makes it a failure.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test
#![allow(clippy::print_stderr)] // a skipped backend says so

use std::net::TcpListener;
use std::sync::Arc;

use dsh_sandbox::escalation::ApprovalPolicy;
use dsh_sandbox::{BackendChoice, Sandbox, SandboxMode, SandboxPolicy, SandboxSettings};
use dsh_tools::{
    ModelCaps, Shell, ShellEnv, SpillStore, ToolContext, ToolOutcome, ToolRegistry, ToolSession,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const DENIED: &str = "[sandbox: file access denied under workspace-write mode]";
const HINT: &str = "[sandbox: escalation available — retry this exact command once with \
                    sandbox_permissions (the narrowest wider mode that suffices) + justification; \
                    the approval prompt asks the user]";

struct Sh {
    _ws: tempfile::TempDir,
    ws: std::path::PathBuf,
    registry: ToolRegistry,
    ctx: ToolContext,
}

struct Options {
    backend: BackendChoice,
    mode: SandboxMode,
    network: bool,
    approval: ApprovalPolicy,
}

impl Options {
    fn new(backend: BackendChoice) -> Options {
        Options {
            backend,
            mode: SandboxMode::WorkspaceWrite,
            network: true,
            approval: ApprovalPolicy::Ask,
        }
    }
}

fn sh(options: Options) -> Option<Sh> {
    let sandbox = Arc::new(Sandbox::new(SandboxSettings {
        backend: options.backend,
        network: options.network,
        ..SandboxSettings::default()
    }));
    if sandbox.chosen().is_none() {
        if std::env::var("DSH_TEST_REQUIRE_BACKENDS").as_deref() == Ok("1") {
            panic!("backend {:?} is required but unusable", options.backend);
        }
        eprintln!("skipped: backend {:?} is not usable here", options.backend);
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let shell = Arc::new(Shell::new(
        ShellEnv::new(Vec::new()),
        &format!("session-sbx{}x{n}", std::process::id()),
        sandbox,
    ));
    let session = ToolSession::new(
        SandboxPolicy::new(options.mode, &ws, Vec::new()),
        SpillStore::new(ws.join(".spill")),
        ModelCaps {
            name: "m".into(),
            image_input: false,
        },
    )
    .with_shell(shell)
    .with_approval(options.approval);
    let mut registry = ToolRegistry::new();
    registry.add_shell_tools(true);
    Some(Sh {
        _ws: dir,
        ws: ws.clone(),
        registry,
        ctx: ToolContext {
            call_id: "c".into(),
            cwd: ws,
            cancel: CancellationToken::new(),
            session: Arc::new(session),
        },
    })
}

impl Sh {
    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx)
            .await
    }

    async fn bash(&self, command: &str) -> String {
        self.call("bash", json!({"command": command, "description": "test"}))
            .await
            .text()
    }
}

/// The text of `/etc` denial for each backend's error dialect.
fn denied_write(backend: BackendChoice) -> &'static str {
    match backend {
        BackendChoice::Landlock => "Permission denied",
        _ => "Read-only file system",
    }
}

async fn denials_are_marked_and_own_failures_are_not(backend: BackendChoice) {
    let Some(sh) = sh(Options::new(backend)) else {
        return;
    };
    let dialect = denied_write(backend);
    assert_eq!(
        sh.bash("echo x > /etc/dsh-test-denied").await,
        format!(
            "[stderr]\nbash: line 1: /etc/dsh-test-denied: {dialect}\n{DENIED}\n{HINT}\n[exit code: 1]"
        )
    );
    // Merged into stdout, the denial is still seen (the reference misses this one).
    assert_eq!(
        sh.bash("{ echo x > /etc/dsh-test-denied; } 2>&1").await,
        format!("bash: line 1: /etc/dsh-test-denied: {dialect}\n{DENIED}\n{HINT}\n[exit code: 1]")
    );
    // Failures of the command's own: no marker.
    assert_eq!(sh.bash("false").await, "(no output)\n[exit code: 1]");
    assert_eq!(
        sh.bash("cat missing.txt").await,
        "[stderr]\ncat: missing.txt: No such file or directory\n[exit code: 1]"
    );
    let push = sh
        .bash("git init -q . && git push 2>&1 | head -1; exit 1")
        .await;
    assert!(!push.contains("[sandbox:"), "{push}");
    // A file inside the workspace that the command may not open (dsh drops root's
    // capabilities, so mode 000 holds for root too) is the command's problem, not a denial.
    let locked = sh
        .bash("echo a > locked && chmod 000 locked && echo b > locked")
        .await;
    assert!(locked.contains("Permission denied"), "{locked}");
    assert!(!locked.contains("[sandbox:"), "{locked}");
    // Writes inside the workspace work; /dev/null too.
    assert_eq!(
        sh.bash("echo in > in.txt && cat in.txt && echo x > /dev/null")
            .await,
        "in\n"
    );
}

async fn the_network_is_on_by_default_and_off_on_request(backend: BackendChoice) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    if let Some(sh) = sh(Options::new(backend)) {
        assert_eq!(sh.bash(&connect).await, "connected\n");
        listener.accept().unwrap();
    }
    let off = Options {
        network: false,
        ..Options::new(backend)
    };
    if let Some(sh) = sh(off) {
        let text = sh.bash(&connect).await;
        assert!(!text.contains("connected\n"), "{text}");
        assert!(text.ends_with("[exit code: 1]"), "{text}");
        // A Unix socket still works (build tools talk to local daemons through them).
        let unix = sh
            .bash("python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'u'); print(b.recv(1).decode())\"")
            .await;
        assert_eq!(unix, "u\n");
    }
}

async fn read_only_denies_the_workspace_too(backend: BackendChoice) {
    let Some(sh) = sh(Options {
        mode: SandboxMode::ReadOnly,
        ..Options::new(backend)
    }) else {
        return;
    };
    let text = sh.bash("echo x > here.txt").await;
    assert!(
        text.contains("[sandbox: file access denied under read-only mode]"),
        "{text}"
    );
    assert!(!sh.ws.join("here.txt").exists());
    assert_eq!(
        sh.bash("cat /etc/hostname > /dev/null; echo ok").await,
        "ok\n"
    );
}

async fn a_background_denial_is_marked_on_every_read_once_it_ends(backend: BackendChoice) {
    let Some(sh) = sh(Options::new(backend)) else {
        return;
    };
    let started = sh
        .call(
            "bash",
            json!({"command": "echo x > /etc/dsh-test-bg", "description": "bg", "run_in_background": true}),
        )
        .await
        .text();
    assert_eq!(started, "started background job bash-1");
    let first = sh
        .call("job_output", json!({"job_id": "bash-1", "wait": true}))
        .await
        .text();
    assert!(
        first.ends_with(&format!(
            "{DENIED}\n{HINT}\n[status: completed, exit code: 1]"
        )),
        "{first}"
    );
    // As the reference does: the facts of a settled job are repeated with each read, in place
    // of "(no new output)".
    for _ in 0..2 {
        let again = sh
            .call("job_output", json!({"job_id": "bash-1"}))
            .await
            .text();
        assert_eq!(
            again,
            format!("{DENIED}\n{HINT}\n[status: completed, exit code: 1]")
        );
    }
}

async fn escalation_follows_the_approval_policy(backend: BackendChoice) {
    let escalate = json!({
        "command": "echo x > /etc/dsh-test-esc",
        "description": "escalate",
        "sandbox_permissions": "danger-full-access",
        "justification": "The test needs it."
    });
    if let Some(sh) = sh(Options::new(backend)) {
        assert_eq!(
            sh.call("bash", escalate.clone()).await.text(),
            "Error: sandbox escalation to \"danger-full-access\" requires approval, but no \
             approval channel is available"
        );
    }
    let never = Options {
        approval: ApprovalPolicy::Never,
        ..Options::new(backend)
    };
    if let Some(sh) = sh(never) {
        let refused = sh.call("bash", escalate).await.text();
        assert!(
            refused.starts_with(
                "Error: sandbox escalation to \"danger-full-access\" was refused by the approval \
                 policy \"never\""
            ),
            "{refused}"
        );
        // Under never, a denial does not advertise escalation.
        let denied = sh.bash("echo x > /etc/dsh-test-denied").await;
        assert!(denied.contains(DENIED), "{denied}");
        assert!(!denied.contains("escalation available"), "{denied}");
    }
    assert!(!std::path::Path::new("/etc/dsh-test-esc").exists());
}

/// What a command creates where a protected path was absent (Git files that cannot be bound
/// before they exist, new `.env` files, `.dsh/` under Landlock) is renamed where it has no
/// effect when it ends, and the model is told so; a background job's, when the job ends.
async fn protected_paths_a_command_creates_are_set_aside(backend: BackendChoice) {
    let Some(sh) = sh(Options::new(backend)) else {
        return;
    };
    std::fs::create_dir_all(sh.ws.join(".git")).unwrap();
    std::fs::write(
        sh.ws.join(".git/config"),
        "[core]\n\thooksPath = .githooks\n",
    )
    .unwrap();
    let out = sh
        .bash(
            "echo ../elsewhere > .git/commondir; mkdir -p .git/hooks .githooks; \
             echo run > .git/hooks/pre-commit; echo run > .githooks/pre-push; \
             echo K=1 > .env.local; echo K= > .env.example; echo made",
        )
        .await;
    assert!(out.starts_with("made\n"), "{out}");
    for created in [".git/commondir", ".git/hooks", ".githooks", ".env.local"] {
        assert!(!sh.ws.join(created).exists(), "{created}: {out}");
        let line = format!(
            "[sandbox: {created} is protected under workspace-write; the command created it, \
             and it was renamed to {created}.dsh-set-aside, where it has no effect]"
        );
        assert!(out.contains(&line), "{created}: {out}");
    }
    assert!(out.contains(HINT), "{out}");
    assert!(!out.contains(DENIED), "{out}");
    assert!(sh.ws.join(".env.example").exists());
    assert_eq!(
        std::fs::read_to_string(sh.ws.join(".githooks.dsh-set-aside/pre-push")).unwrap(),
        "run\n"
    );
    // A background job's creation is set aside when it ends, read or not.
    let started = sh
        .call(
            "bash",
            json!({"command": "echo K=2 > .env.production", "description": "t",
                   "run_in_background": true}),
        )
        .await
        .text();
    let id = started.trim_start_matches("started background job ").trim();
    let read = sh
        .call("job_output", json!({"job_id": id, "wait": true}))
        .await
        .text();
    assert!(
        read.contains("[sandbox: .env.production is protected"),
        "{read}"
    );
    assert!(!sh.ws.join(".env.production").exists());
    // Nothing created, nothing said.
    assert_eq!(sh.bash("echo fine > a.txt && cat a.txt").await, "fine\n");
}

macro_rules! per_backend {
    ($($name:ident),* $(,)?) => {
        mod bubblewrap {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(dsh_sandbox::BackendChoice::Bubblewrap).await;
                }
            )*
        }
        mod landlock {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(dsh_sandbox::BackendChoice::Landlock).await;
                }
            )*
        }
    };
}

per_backend!(
    denials_are_marked_and_own_failures_are_not,
    the_network_is_on_by_default_and_off_on_request,
    read_only_denies_the_workspace_too,
    a_background_denial_is_marked_on_every_read_once_it_ends,
    escalation_follows_the_approval_policy,
    protected_paths_a_command_creates_are_set_aside,
);

/// Git's hooks and config, `.dsh/` (even before it exists) and the top folder's `.env` files
/// stay read-only to commands under workspace-write; the rest of `.git` does not.
#[tokio::test(flavor = "current_thread")]
async fn protected_paths_stay_read_only_to_commands_under_bubblewrap() {
    let Some(sh) = sh(Options::new(BackendChoice::Bubblewrap)) else {
        return;
    };
    std::fs::create_dir_all(sh.ws.join(".git/hooks")).unwrap();
    std::fs::write(sh.ws.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(sh.ws.join(".env"), "A=1\n").unwrap();
    for command in [
        "echo x > .git/hooks/pre-commit",
        "echo x >> .git/config",
        "echo B=2 >> .env",
        "echo x > .dsh/config.toml",
        // Renamed away (to be replaced by a folder with hooks of its own), or replaced.
        "mv .git .git.old",
        "sed -i s/1/2/ .env",
    ] {
        let out = sh.bash(command).await;
        assert!(out.contains(DENIED), "{command}: {out}");
        assert!(out.contains(HINT), "{command}: {out}");
    }
    assert!(!sh.ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(sh.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(sh.ws.join(".env")).unwrap(),
        "A=1\n"
    );
    assert!(!sh.ws.join(".dsh/config.toml").exists());
    assert!(sh.ws.join(".git/hooks").is_dir() && !sh.ws.join(".git.old").exists());
    let out = sh
        .bash("echo ok > .git/description && echo fine > a.txt && cat a.txt")
        .await;
    assert_eq!(out, "fine\n");
}
