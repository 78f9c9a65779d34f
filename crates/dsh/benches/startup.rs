//! Start-up and tool-path costs of the `dsh` binary against the scripted model server on
//! loopback (an instant model), so that what is measured is dsh itself:
//!
//! * `first request`: from just before `exec` to the first request read by the server;
//! * `0-step run`: wall time of a run whose model answers at once, and its peak RSS;
//! * `10-step run`: wall time of ten steps that each `read` a file, then an answer, and its
//!   peak RSS;
//! * `1 GiB read`: one `read` of the last lines of a 1 GiB text file, which is streamed to the
//!   end to count its lines: the peak RSS shows the file is never held in memory;
//! * `10-step bash true run`: ten `bash` calls of `true`; (its wall time - the 0-step run's) / 10
//!   is the cost of one call through the tool path: unconfined (`danger-full-access`), then
//!   confined in `workspace-write` by bubblewrap (through the run's sandbox helper, and with a
//!   `bwrap` per command) and by Landlock (`sandbox.backend`, `sandbox.helper`).
//!
//! Run with `cargo bench -p dsh --bench startup` (the release profile), or `bench/run.sh`,
//! which also writes `docs/performance.md`. Prints a Markdown table: medians of N runs, with
//! the fastest and slowest alongside, since one machine's single runs are noisy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dsh_testkit::{TestEnv, Turn};
use serde_json::json;

const RUNS: usize = 25;

struct Sample {
    first_request: Duration,
    wall: Duration,
    peak_rss_kib: i64,
    /// dsh's own CPU time (user + system).
    cpu: Duration,
}

fn dsh() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_dsh"))
}

/// One run: spawn, wait with `wait4` for the exit status and the child's peak RSS.
fn run_once(turns: Vec<Turn>, prepare: &dyn Fn(&TestEnv)) -> Sample {
    run_with(turns, prepare, &["--permission-mode", "danger-full-access"])
}

/// One run with `args` before the task.
fn run_with(turns: Vec<Turn>, prepare: &dyn Fn(&TestEnv), args: &[&str]) -> Sample {
    run_in(TestEnv::new(turns), prepare, args)
}

/// One run in `env`, with `args` before the task.
fn run_in(env: TestEnv, prepare: &dyn Fn(&TestEnv), args: &[&str]) -> Sample {
    prepare(&env);
    let mut command = env.command(dsh());
    command
        .args(args)
        .args(["--json", "bench task"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    // Reaped below with wait4.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().unwrap();
    // The peak RSS is the child's own high-water mark (VmHWM), read until it exits: wait4's
    // ru_maxrss also counts the parent's memory at spawn (a bench process that grew holding
    // a long run's requests would be reported as dsh's).
    let pid = child.id();
    let sampler = std::thread::spawn(move || {
        let mut hwm = 0i64;
        while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            match status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
            {
                Some(kib) => hwm = kib,
                None => break, // a zombie: its memory is gone
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        hwm
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, which nothing else reaps.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(pid, child.id() as i32);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "dsh failed: {status}"
    );
    let first = env.server.requests()[0].received_at;
    Sample {
        first_request: first - started,
        wall,
        peak_rss_kib: sampler.join().unwrap(),
        cpu: Duration::from_micros(
            (usage.ru_utime.tv_sec * 1_000_000
                + usage.ru_utime.tv_usec
                + usage.ru_stime.tv_sec * 1_000_000
                + usage.ru_stime.tv_usec) as u64,
        ),
    }
}

fn median(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

/// The medians of one scenario, for the targets summary.
#[derive(Clone, Copy)]
struct Medians {
    first_request_ms: f64,
    wall_ms: f64,
    peak_rss_mib: f64,
}

/// Figures for `bench/targets.py`, which sets them against the targets: one JSON object a
/// line, appended to the file `DSH_BENCH_SUMMARY` names (when it does).
fn record(metric: &str, value: f64) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("DSH_BENCH_SUMMARY") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "{}", json!({"metric": metric, "value": value})).unwrap();
}

fn report(name: &str, samples: &[Sample]) -> Medians {
    let ms = |f: &dyn Fn(&Sample) -> Duration| {
        median(
            samples
                .iter()
                .map(|s| f(s).as_secs_f64() * 1000.0)
                .collect(),
        )
    };
    let (first, first_min, first_max) = ms(&|s| s.first_request);
    let (wall, wall_min, wall_max) = ms(&|s| s.wall);
    let (rss, rss_min, rss_max) = median(
        samples
            .iter()
            .map(|s| s.peak_rss_kib as f64 / 1024.0)
            .collect(),
    );
    println!(
        "| {name} | {first:.1} ({first_min:.1}–{first_max:.1}) | {wall:.1} ({wall_min:.1}–{wall_max:.1}) | {rss:.1} ({rss_min:.1}–{rss_max:.1}) |"
    );
    Medians {
        first_request_ms: first,
        wall_ms: wall,
        peak_rss_mib: rss,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    let ten_steps = || {
        let mut turns: Vec<Turn> = (0..10)
            .map(|i| Turn::tool_call("read", json!({"file_path": format!("f{i}.txt")})))
            .collect();
        turns.push(Turn::text("done"));
        turns
    };
    let files = |env: &TestEnv| {
        for i in 0..10 {
            env.write(
                &format!("f{i}.txt"),
                &"some line of source code\n".repeat(200),
            );
        }
    };
    // Warm the page cache and the binary.
    run_once(vec![Turn::text("done")], &|_| {});

    let zero: Vec<Sample> = (0..RUNS)
        .map(|_| run_once(vec![Turn::text("done")], &|_| {}))
        .collect();
    let ten: Vec<Sample> = (0..RUNS).map(|_| run_once(ten_steps(), &files)).collect();
    // The same ten reads asked for at once, in one step: they run in parallel.
    let parallel_reads = || {
        let calls: Vec<(&str, serde_json::Value)> = (0..10)
            .map(|i| ("read", json!({"file_path": format!("f{i}.txt")})))
            .collect();
        vec![Turn::tool_calls(&calls), Turn::text("done")]
    };
    let parallel: Vec<Sample> = (0..RUNS)
        .map(|_| run_once(parallel_reads(), &files))
        .collect();
    let big = huge_text_file();
    let link = |env: &TestEnv| {
        std::os::unix::fs::symlink(big.path(), env.ws_path().join("big.txt")).unwrap();
    };
    let huge: Vec<Sample> = (0..3)
        .map(|_| {
            run_once(
                vec![
                    Turn::tool_call(
                        "read",
                        json!({"file_path": "big.txt", "offset": HUGE_LINES - 10}),
                    ),
                    Turn::text("done"),
                ],
                &link,
            )
        })
        .collect();
    println!("Median of {RUNS} runs (fastest–slowest in brackets).\n");
    println!("| scenario | exec → first request (ms) | wall time (ms) | peak RSS (MiB) |");
    println!("|---|---|---|---|");
    let zero_medians = report("0-step run", &zero);
    let ten_medians = report("10-step `read` run", &ten);
    let parallel_medians = report("10 `read` calls in one step", &parallel);
    let huge_medians = report("1 GiB `read` (3 runs)", &huge);
    record("first_request_ms", zero_medians.first_request_ms);
    record("ten_read_wall_ms", ten_medians.wall_ms);
    record("parallel_read_wall_ms", parallel_medians.wall_ms);
    record("huge_read_rss_mib", huge_medians.peak_rss_mib);
    let mut peak_rss = zero_medians.peak_rss_mib.max(ten_medians.peak_rss_mib);
    let bash_turns = |steps: usize| {
        let mut turns: Vec<Turn> = (0..steps)
            .map(|_| Turn::tool_call("bash", json!({"command": "true", "description": "bench"})))
            .collect();
        turns.push(Turn::text("done"));
        turns
    };
    let wall_ms =
        |runs: &[Sample]| median(runs.iter().map(|s| s.wall.as_secs_f64() * 1000.0).collect()).0;
    let zero_wall = wall_ms(&zero);
    let mut per_call = Vec::new();
    // The unconfined run's (call through the tool path, marginal call, first call).
    let mut unconfined: Option<(f64, f64, f64)> = None;
    // `bubblewrap` is the default: one sandbox helper per run; `bubblewrap_each` is a `bwrap`
    // per command (`sandbox.helper = false`), as before the helper.
    for (name, backend, sandbox) in [
        ("no sandbox", None, ""),
        (
            "bubblewrap, one helper per run",
            Some("bubblewrap"),
            "backend = \"bubblewrap\"",
        ),
        (
            "bubblewrap, a bwrap per command",
            Some("bubblewrap_each"),
            "backend = \"bubblewrap\"\nhelper = false",
        ),
        ("Landlock", Some("landlock"), "backend = \"landlock\""),
    ] {
        let patch = tempfile::NamedTempFile::new().unwrap();
        let args: Vec<String> = match backend {
            None => vec!["--permission-mode".into(), "danger-full-access".into()],
            Some(_) => {
                std::fs::write(patch.path(), format!("[sandbox]\n{sandbox}\n")).unwrap();
                vec!["--patch".into(), patch.path().display().to_string()]
            }
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let runs: Vec<Sample> = (0..RUNS)
            .map(|_| run_with(bash_turns(10), &|_| {}, &args))
            .collect();
        let medians = report(&format!("10-step `bash true` run ({name})"), &runs);
        let one: Vec<Sample> = (0..RUNS)
            .map(|_| run_with(bash_turns(1), &|_| {}, &args))
            .collect();
        report(&format!("1-step `bash true` run ({name})"), &one);
        peak_rss = peak_rss.max(medians.peak_rss_mib);
        // Through the tool path, averaged over the run: (10-step - 0-step) / 10. A command
        // after the first (the marginal one): (10-step - 1-step) / 9. The first command's
        // extra is what the run's sandbox costs once (probing it, starting its helper).
        let call = (wall_ms(&runs) - zero_wall) / 10.0;
        let marginal = (wall_ms(&runs) - wall_ms(&one)) / 9.0;
        let first = wall_ms(&one) - zero_wall;
        let (bare_call, bare_marginal, bare_first) =
            *unconfined.get_or_insert((call, marginal, first));
        if let Some(backend) = backend {
            record(&format!("bash10_{backend}_wall_ms"), medians.wall_ms);
            record(&format!("bash_{backend}_call_ms"), call);
            record(&format!("bash_{backend}_run_cost_ms"), call - bare_call);
            record(&format!("bash_{backend}_cost_ms"), marginal - bare_marginal);
            record(
                &format!("bash_{backend}_setup_ms"),
                (first - bare_first) - (marginal - bare_marginal),
            );
        }
        per_call.push(if backend.is_none() {
            format!("{name}: {call:.1} ms a call, {marginal:.1} ms after the first")
        } else {
            format!(
                "{name}: {call:.1} ms a call (the sandbox's own cost {:+.1} ms averaged over the \
                 run, {:+.1} ms for each command after the first, and {:+.1} ms once, for the \
                 first)",
                call - bare_call,
                marginal - bare_marginal,
                (first - bare_first) - (marginal - bare_marginal)
            )
        });
    }
    println!(
        "\nOne `bash true` call through the tool path, (10-step run - 0-step run) / 10, and after \
         the first, (10-step run - 1-step run) / 9: {}.",
        per_call.join("; ")
    );
    record("peak_rss_mib", peak_rss);

    // Sessions: resuming a long one (exec to first request covers finding, locking, reading,
    // repairing and rebuilding it), and a long run's memory.
    println!();
    println!("| session scenario | exec → first request (ms) | wall time (ms) | peak RSS (MiB) |");
    println!("|---|---|---|---|");
    for zstd in [false, true] {
        let resumed: Vec<Sample> = (0..10)
            .map(|_| {
                run_with(
                    vec![Turn::text("done")],
                    &|env| write_long_session(env, zstd),
                    &["--session-id", BENCH_SESSION],
                )
            })
            .collect();
        let name = if zstd {
            "resume a 10,000-record session (zstd, 10 runs)"
        } else {
            "resume a 10,000-record session (10 runs)"
        };
        // Exec to the first request: finding, locking, reading, repairing and rebuilding.
        let loaded = report(name, &resumed).first_request_ms;
        record(if zstd { "resume_zstd_ms" } else { "resume_ms" }, loaded);
    }
    let thousand: Vec<Sample> = (0..3)
        .map(|_| {
            let mut turns: Vec<Turn> = (0..1000)
                .map(|i| Turn::tool_call("read", json!({"file_path": format!("f{}.txt", i % 10)})))
                .collect();
            turns.push(Turn::text("done"));
            run_with(
                turns,
                &files,
                &[
                    "--permission-mode",
                    "danger-full-access",
                    "--max-steps",
                    "2000",
                ],
            )
        })
        .collect();
    let long_run = report("1,000-step `read` run (3 runs)", &thousand);
    record("thousand_rss_mib", long_run.peak_rss_mib);
    let cpu = median(thousand.iter().map(|s| s.cpu.as_secs_f64()).collect()).0;
    println!(
        "\nThe 1,000-step run sends the whole history each step (2.5 GB of requests in all); \
         its wall time is mostly the scripted server parsing them: dsh itself used {cpu:.1} s \
         of CPU. Its peak RSS is the history it holds, not more."
    );

    // Long runs inside a small window (16,000 tokens): compaction keeps the history bounded,
    // so memory and CPU per step should not grow with the number of steps.
    let window = |env: &TestEnv| {
        files(env);
        env.write(
            "window.toml",
            "[models.\"deepseek-v4-flash\"]\ncontext_window = 16000\n",
        );
    };
    let mut per_step = Vec::new();
    for steps in [1_000usize, 10_000] {
        let env = TestEnv::with_server(dsh_testkit::ScriptedServer::read_session(steps));
        let max_steps = (steps * 2).to_string();
        let args = [
            "--permission-mode",
            "danger-full-access",
            "--patch",
            "window.toml",
            "--max-steps",
            max_steps.as_str(),
        ];
        let run = run_in(env, &window, &args);
        let cpu_ms = run.cpu.as_secs_f64() * 1000.0 / steps as f64;
        let rss = run.peak_rss_kib as f64 / 1024.0;
        let wall = run.wall.as_secs_f64();
        println!(
            "| {steps}-step `read` run in a 16,000-token window (1 run) | {wall:.1} s | \
             {cpu_ms:.2} ms of CPU a step | {rss:.1} MiB |"
        );
        per_step.push((steps, cpu_ms, rss));
    }
    if let [(_, cpu_1k, rss_1k), (_, cpu_10k, rss_10k)] = per_step[..] {
        record("long_run_rss_mib", rss_10k);
        record("long_run_cpu_ms_per_step", cpu_10k);
        record("long_run_cpu_growth", cpu_10k / cpu_1k);
        record("long_run_rss_growth", rss_10k / rss_1k);
    }
}

const BENCH_SESSION: &str = "session-bench";

/// A session of 10,000 records (909 turns of a read and an answer) recorded in `env`'s
/// workspace.
fn write_long_session(env: &TestEnv, zstd: bool) {
    use dsh_protocol::{
        AssistantMessageRecord, Block, FinishReason, Message, Record, Role, SessionHeader,
        ToolCallRecord, ToolOutputPart, ToolResultRecord, TurnEndReason, Usage,
    };
    let cwd = std::fs::canonicalize(env.ws_path()).unwrap();
    let header = SessionHeader::new(BENCH_SESSION.into(), 1, cwd.to_string_lossy().into_owned());
    let options = dsh_core::LogOptions { fsync: false, zstd };
    let mut log = dsh_core::SessionLog::create(env.home.path(), header, options);
    let usage = Usage::new(1000, 50, 0, 0, 0);
    let answer = |turn, step, content| {
        Record::AssistantMessage(AssistantMessageRecord {
            turn,
            step,
            message: Message {
                role: Role::Assistant,
                content,
            },
            finish: FinishReason::Stop,
            provider: "deepseek".into(),
            model: "deepseek-v4-flash".into(),
            usage,
        })
    };
    let mut written = 0;
    let mut turn = 0;
    while written < 10_000 {
        turn += 1;
        let id = format!("call_{turn}");
        let records = vec![
            Record::TurnStart { turn },
            Record::UserMessage {
                turn,
                message: Message::user_text(format!("task number {turn}: look at the file")),
                instructions: None,
            },
            Record::StepStart { turn, step: 1 },
            answer(
                turn,
                1,
                vec![Block::ToolCall {
                    id: id.clone(),
                    name: "read".into(),
                    arguments: r#"{"file_path":"src/lib.rs"}"#.into(),
                }],
            ),
            Record::ToolCall(ToolCallRecord {
                turn,
                step: 1,
                call_id: id.clone(),
                name: "read".into(),
                arguments: r#"{"file_path":"src/lib.rs"}"#.into(),
            }),
            Record::ToolResult(ToolResultRecord {
                turn,
                step: 1,
                message: Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_call_id: id,
                        content: vec![ToolOutputPart::Text {
                            text: "1: some line of source code\n".repeat(20),
                        }],
                        is_error: false,
                    }],
                },
                error: None,
                command: None,
            }),
            Record::StepEnd {
                turn,
                step: 1,
                usage,
            },
            Record::StepStart { turn, step: 2 },
            answer(
                turn,
                2,
                vec![Block::Text {
                    text: "The file defines the library's entry points.".into(),
                }],
            ),
            Record::StepEnd {
                turn,
                step: 2,
                usage,
            },
            Record::TurnEnd {
                turn,
                reason: TurnEndReason::Completed,
            },
        ];
        for record in records {
            log.append(record).unwrap();
            written += 1;
        }
    }
}

/// Lines of 64 bytes in the 1 GiB file.
const HUGE_LINES: u64 = 1 << 24;

/// A 1 GiB file of numbered text lines, in a temporary folder.
fn huge_text_file() -> tempfile::NamedTempFile {
    use std::io::Write;
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file.as_file_mut());
    for i in 0..HUGE_LINES {
        writeln!(
            out,
            "{i:>16} the quick brown fox jumps over the lazy dog .."
        )
        .unwrap();
    }
    out.flush().unwrap();
    drop(out);
    assert_eq!(file.as_file().metadata().unwrap().len(), HUGE_LINES * 64);
    file
}
