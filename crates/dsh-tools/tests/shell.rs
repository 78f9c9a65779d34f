//! `bash` and the job tools through the registry, running real commands (in
//! `danger-full-access`: the kernel sandbox is tested with its backends).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_testkit::process_alive as alive;
use dsh_tools::{
    ModelCaps, Shell, ShellEnv, SpillStore, ToolContext, ToolOutcome, ToolRegistry, ToolSession,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Sh {
    _ws: tempfile::TempDir,
    registry: ToolRegistry,
    ctx: ToolContext,
    shell: Arc<Shell>,
}

impl Sh {
    fn new() -> Sh {
        let ws = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(ws.path()).unwrap();
        let shell = Arc::new(Shell::new(
            ShellEnv::new(vec![("DSH_SESSION_ID".into(), "session-test".into())]),
            &format!("session-{}", uuid_like()),
            Arc::new(dsh_sandbox::Sandbox::default()),
        ));
        let session = ToolSession::new(
            SandboxPolicy::new(SandboxMode::DangerFullAccess, &cwd, Vec::new()),
            SpillStore::new(cwd.join(".spill")),
            ModelCaps {
                name: "m".into(),
                image_input: false,
            },
        )
        .with_shell(shell.clone());
        let mut registry = ToolRegistry::new();
        registry.add_shell_tools(false);
        Sh {
            _ws: ws,
            registry,
            ctx: ToolContext {
                call_id: "c".into(),
                cwd,
                cancel: CancellationToken::new(),
                session: Arc::new(session),
            },
            shell,
        }
    }

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

/// A session id no other test of this process shares: the end-of-run sweep of one test must
/// not reach another's processes.
fn uuid_like() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("{:x}x{n}", std::process::id())
}

#[tokio::test]
async fn results_have_the_reference_shape_and_marker_order() {
    let sh = Sh::new();
    assert_eq!(sh.bash("echo hello").await, "hello\n");
    assert_eq!(sh.bash("true").await, "(no output)");
    assert_eq!(
        sh.bash("echo out; echo err >&2").await,
        "out\n[stderr]\nerr\n"
    );
    assert_eq!(sh.bash("printf partial >&2").await, "[stderr]\npartial");
    assert_eq!(
        sh.bash("echo failing; exit 3").await,
        "failing\n[exit code: 3]"
    );
    assert_eq!(sh.bash("printf x; exit 255").await, "x\n[exit code: 255]");
    assert_eq!(
        sh.bash("echo before; kill -TERM $$").await,
        "before\n[killed by signal: SIGTERM]"
    );
    assert_eq!(sh.bash("echo '[exit code: 5]'").await, "[exit code: 5]\n");
    let outcome = sh
        .call(
            "bash",
            json!({"command": "pwd", "description": "x", "workdir": "nope"}),
        )
        .await;
    assert!(outcome.is_error);
    assert!(
        outcome
            .text()
            .starts_with("Error: workdir \"nope\" cannot be used"),
        "{}",
        outcome.text()
    );
    assert_eq!(
        sh.call(
            "bash",
            json!({"command": "x", "description": "x", "timeoutMs": 0})
        )
        .await
        .text(),
        "Error: invalid timeoutMs: expected a positive number, got 0"
    );
    assert_eq!(
        sh.call("bash", json!({"command": " ", "description": "x"}))
            .await
            .text(),
        "Error: invalid command: expected a non-empty string"
    );
}

#[tokio::test]
async fn long_streams_keep_their_last_bytes_and_show_a_cut_character() {
    let sh = Sh::new();
    // 70,005 bytes of two-byte characters, then a marker line: the last 64,000 bytes start on
    // the second byte of an é, which reads as U+FFFD, as the reference shows it.
    let text = sh
        .bash("python3 -c \"import sys; sys.stdout.write('é'*35000 + '\\nend\\n')\"")
        .await;
    // Over 50,000 bytes, the result itself is cut to a head and a tail by the spill policy.
    assert!(text.starts_with("\u{FFFD}é"), "{}", &text[..20]);
    let (_, notice) = text
        .split_once("end\n\n[output truncated; full output: ")
        .unwrap();
    let path = notice.split_once(']').unwrap().0;
    assert_eq!(std::fs::read(path).unwrap().len(), 70_005);
}

/// A job that prints fast and much, read once when it has ended: the result holds what it
/// printed last, then the lossy notice and the status, whatever the spill policy cut.
#[tokio::test]
async fn a_flood_read_at_the_end_keeps_what_the_job_printed_last() {
    let sh = Sh::new();
    sh.call(
        "bash",
        json!({"command": "seq 1 200000", "description": "x", "run_in_background": true}),
    )
    .await;
    let text = sh
        .call("job_output", json!({"job_id": "bash-1", "wait": true}))
        .await
        .text();
    let (_, end) = text.split_once("199999\n200000\n").unwrap();
    let (notice, rest) = end.split_once('\n').unwrap();
    let path = notice
        .strip_prefix("[some output was dropped from memory; full output: ")
        .and_then(|p| p.strip_suffix(']'))
        .unwrap();
    assert!(path.ends_with("stdout.log"), "{path}");
    assert!(
        rest.starts_with("[status: completed, exit code: 0]\n\n(Omitted "),
        "{rest}"
    );
}

#[tokio::test]
async fn the_environment_is_scrubbed_and_marked() {
    // SAFETY: set before any command of this test spawns; other tests read other names.
    unsafe {
        std::env::set_var("DSHTEST_API_KEY", "secret");
        std::env::set_var("DSHTEST_PLAIN", "plain");
    }
    let sh = Sh::new();
    assert_eq!(
        sh.bash("echo ${DSHTEST_API_KEY-unset} $DSHTEST_PLAIN $TERM $NO_COLOR $DSH_SHELL $DSH_SESSION_ID")
            .await,
        "unset plain dumb 1 1 session-test\n"
    );
    let stdin = sh.bash("cat; echo eof").await;
    assert_eq!(stdin, "eof\n", "stdin is empty");
}

#[tokio::test]
async fn a_command_past_its_timeout_becomes_a_job() {
    let sh = Sh::new();
    let text = sh
        .call(
            "bash",
            json!({"command": "echo started; exec sleep 30", "description": "x", "timeoutMs": 300.5}),
        )
        .await
        .text();
    assert_eq!(
        text,
        "started\n[still running after 301ms; moved to background job bash-1]\nThe command keeps \
         running in the background. You will be notified when it finishes; read newer output \
         with job_output, stop it with job_kill."
    );
    assert_eq!(
        sh.call("job_output", json!({"job_id": "bash-1"}))
            .await
            .text(),
        "(no new output)\n[status: running]"
    );
    assert_eq!(
        sh.call("job_kill", json!({"job_id": "bash-1"}))
            .await
            .text(),
        "requested cancellation of job bash-1"
    );
    assert_eq!(
        sh.call("job_output", json!({"job_id": "bash-1", "wait": true}))
            .await
            .text(),
        "(no new output)\n[status: killed, signal: SIGTERM]"
    );
    assert_eq!(
        sh.call("job_kill", json!({"job_id": "bash-1"}))
            .await
            .text(),
        "job bash-1 had already finished [status: killed, signal: SIGTERM]"
    );
    assert!(
        sh.shell.jobs.take_notices().is_empty(),
        "the model saw the end"
    );
}

#[tokio::test]
async fn with_the_job_limit_reached_a_timeout_kills() {
    let sh = Sh::new();
    for i in 1..=10 {
        assert_eq!(
            sh.call(
                "bash",
                json!({"command": "exec sleep 60", "description": "x", "run_in_background": true})
            )
            .await
            .text(),
            format!("started background job bash-{i}")
        );
    }
    assert_eq!(
        sh.call(
            "bash",
            json!({"command": "sleep 60", "description": "x", "run_in_background": true})
        )
        .await
        .text(),
        "Error: background job limit reached for this owner (limit: 10); use job_kill to stop an \
         unneeded job, wait for it to finish, then retry"
    );
    assert_eq!(
        sh.call(
            "bash",
            json!({"command": "exec sleep 60", "description": "x", "timeoutMs": 200})
        )
        .await
        .text(),
        "(no output)\n[timed out after 200ms]\n[killed by signal: SIGTERM]"
    );
    let list = sh.call("job_list", json!({})).await.text();
    assert!(
        list.starts_with("bash-1 [bash] running — exec sleep 60\n"),
        "{list}"
    );
    sh.shell.shutdown().await;
    assert_eq!(sh.shell.jobs.running(), 0);
}

#[tokio::test]
async fn a_finished_job_is_announced_once() {
    let sh = Sh::new();
    sh.call(
        "bash",
        json!({"command": "echo out; echo err >&2; exit 3", "description": "x", "run_in_background": true}),
    )
    .await;
    let job = sh.shell.jobs.get("bash-1").unwrap();
    job.wait(Duration::from_secs(10)).await;
    assert_eq!(
        sh.shell.jobs.take_notices(),
        vec![
            "background job bash-1 (bash: echo out; echo err >&2; exit 3) finished [status: \
             completed, exit code: 3]. Read its output with job_output."
                .to_owned()
        ]
    );
    assert!(sh.shell.jobs.take_notices().is_empty());
    assert_eq!(
        sh.call("job_output", json!({"job_id": "bash-1"}))
            .await
            .text(),
        "out\n[stderr]\nerr\n[status: completed, exit code: 3]"
    );
}

#[tokio::test]
async fn a_daemon_that_left_the_process_group_does_not_outlive_the_run() {
    let sh = Sh::new();
    // setsid puts the sleep in a session of its own, out of reach of the group signal.
    let pid: i32 = sh
        .bash("setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!")
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    sh.shell.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(dsh_testkit::POLL).await;
    }
    assert!(!alive(pid), "the daemon {pid} survived");
}

#[tokio::test]
async fn daemons_still_being_started_as_the_run_ends_do_not_outlive_it() {
    let sh = Sh::new();
    let mark = format!("DSH_TEST_MARK={}", uuid_like());
    // A spawner of its own session, deaf to SIGTERM, starts daemons of their own sessions
    // without pause until it is killed: whenever the end-of-run sweep passes, some of them are
    // in the middle of an exec, when a process shows no environment to be recognised by.
    // The command ends once twenty are started (told through a FIFO).
    sh.bash(&format!(
        "export {mark}; mkfifo started; setsid sh -c 'trap \"\" TERM; i=0; while :; do \
         setsid sleep 300 </dev/null >/dev/null 2>&1 & i=$((i+1)); \
         [ $i = 20 ] && echo > started; done' </dev/null >/dev/null 2>&1 & read _ < started"
    ))
    .await;
    sh.shell.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !carrying(&mark).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(dsh_testkit::POLL).await;
    }
    let survivors = carrying(&mark);
    for pid in &survivors {
        // SAFETY: killing what this test started, so a failure leaves nothing behind.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert_eq!(survivors, Vec::<i32>::new(), "these survived the run");
}

/// The live processes whose environment holds `entry`.
fn carrying(entry: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == entry.as_bytes()))
                && alive(*pid)
        })
        .collect()
}

#[tokio::test]
async fn a_loud_job_keeps_memory_bounded_and_its_output_on_disk() {
    let sh = Sh::new();
    sh.call(
        "bash",
        json!({"command": "head -c 10000000 /dev/zero | tr '\\0' x", "description": "x", "run_in_background": true}),
    )
    .await;
    let job = sh.shell.jobs.get("bash-1").unwrap();
    job.wait(Duration::from_secs(30)).await;
    let text = job.read(true);
    let (kept, rest) = text
        .split_once("[some output was dropped from memory; full output: ")
        .unwrap();
    assert_eq!(kept.len(), 64_001, "the kept tail and a line end");
    // Only the stream that has a saved copy is named (stderr was empty).
    let path = rest.strip_suffix(']').unwrap();
    assert!(!path.contains(", "), "{path}");
    assert_eq!(std::fs::metadata(path).unwrap().len(), 10_000_000);
    assert_eq!(job.status().describe(), "completed, exit code: 0");
}

#[tokio::test]
async fn a_watched_command_passes_its_output_on_as_it_comes() {
    let mut sh = Sh::new();
    let seen: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
    let sink = seen.clone();
    let session = Arc::get_mut(&mut sh.ctx.session).unwrap();
    session.progress = Some(Arc::new(move |call_id: &str, text: &str| {
        sink.lock()
            .unwrap()
            .push((call_id.to_owned(), text.to_owned()));
    }));
    let result = sh.bash("echo first; echo second >&2; echo third").await;
    assert_eq!(result, "first\nthird\n[stderr]\nsecond\n");
    {
        let seen = seen.lock().unwrap();
        assert!(seen.iter().all(|(id, _)| id == "c"), "{seen:?}");
        let mut lines: Vec<&str> = seen.iter().flat_map(|(_, text)| text.lines()).collect();
        lines.sort_unstable();
        assert_eq!(
            lines,
            ["first", "second", "third"],
            "every line once: {seen:?}"
        );
    }
    // Output comes while the command runs, and a character written in two halves arrives
    // whole. (The command's own pauses give the watcher's ticks something to see.)
    seen.lock().unwrap().clear();
    sh.bash("printf a; sleep 0.3; printf '\\303'; sleep 0.3; printf '\\251'")
        .await;
    let seen = seen.lock().unwrap();
    let chunks: Vec<&str> = seen.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(
        chunks.first(),
        Some(&"a"),
        "the first part came alone: {chunks:?}"
    );
    assert_eq!(chunks.concat(), "aé", "no half character: {chunks:?}");
}
