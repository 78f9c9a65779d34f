//! Test support for dsh.
//!
//! * [`ScriptedServer`]: a model server on `127.0.0.1` that plays a script of [`Turn`]s (text,
//!   tool calls, reasoning, usage, an HTTP status, or a request left hanging) in the
//!   chat-completions dialect, and records every request so tests can check what was sent.
//!   It can bill as DeepSeek, OpenAI or Anthropic do ([`ScriptedServer::bill_as`]): what their
//!   prompt caches would serve, reported in their own usage fields.
//! * [`TestEnv`]: a temporary workspace and home wired to a server, and a way to run the real
//!   `dsh` binary in them ([`RunOutput`], whose JSON events are checked against the published
//!   schema, `docs/events.schema.json`).
//! * [`mcp`]: the official MCP reference server, over stdio or streamable HTTP.
//! * [`site`]: a small web site on loopback for the web tools.
//! * [`fault_matrix`]: how the fault tests report each case to `scripts/fault-matrix`.
//!
//! Everything here panics on unexpected failures: it exists to fail tests loudly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod billing;
mod env;
pub mod mcp;
mod schema;
mod script;
mod server;
pub mod site;
mod titles;
pub mod tmux;
mod tree;

pub use billing::{Bill, CacheRules};
pub use env::{RunOutput, TestEnv};
pub use schema::{check_event, check_output, check_sdk_line, events_schema, sdk_schema};
pub use script::{Answer, Fault, Turn};
pub use server::{Dialect, Request, ScriptedServer, stream_body};
pub use tree::tree;

/// Records one case of the fault matrix, once its assertions held: its class (`provider
/// fault`, `kill point`, `hostile input`, `secret`), what was done to dsh, and how dsh came
/// out of it. `scripts/fault-matrix` sets `DSH_FAULT_MATRIX` to a file the cases are appended
/// to (one line each, written whole) and counts them into `docs/reliability.md`; in any other
/// run this does nothing.
pub fn fault_matrix(class: &str, case: &str, outcome: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("DSH_FAULT_MATRIX") else {
        return;
    };
    let line = format!("{class}\t{case}\t{outcome}\n");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    if let Ok(mut file) = file {
        let _ = file.write_all(line.as_bytes());
    }
}

/// How long a test's wait sleeps between two looks at what it waits for: short enough that
/// the test goes on at once, long enough not to take a core from what it waits on.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// Whether `git` runs here. A test that needs it skips without it, saying so, unless
/// `DSH_TEST_REQUIRE_GIT=1` (set by `.ci/run`, which installs it) makes that a failure.
#[allow(clippy::print_stderr)] // a skipped test says so
pub fn git_available() -> bool {
    let found = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("DSH_TEST_REQUIRE_GIT").as_deref() != Ok("1"),
            "git is required (DSH_TEST_REQUIRE_GIT is set) but cannot be run"
        );
        eprintln!("skipped: git is not installed");
    }
    found
}

/// The most memory process `pid` has held so far, in MiB (its `VmHWM`): what a test that
/// floods a process with output checks at the end, however briefly the peak lasted.
pub fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process runs");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib / 1024
}

/// A folder for test files that must lie outside every writable root of the default sandbox
/// policy (so not under `/tmp` or the OS temporary directory): the test crate's
/// `CARGO_TARGET_TMPDIR` when the checkout itself is not under one of those, else `/var/tmp`,
/// else `$HOME`.
pub fn scratch_outside_temp(cargo_target_tmpdir: &str) -> std::path::PathBuf {
    let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap_or_else(|_| "/tmp".into());
    let outside = |dir: &std::path::Path| !dir.starts_with("/tmp") && !dir.starts_with(&temp);
    [
        Some(std::path::PathBuf::from(cargo_target_tmpdir)),
        Some(std::path::PathBuf::from("/var/tmp")),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .filter_map(|dir| {
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::canonicalize(dir).ok()
    })
    .find(|dir| outside(dir))
    .expect("a folder outside /tmp and the temporary directory for test files")
}

/// Whether `pid` is a live process; a zombie awaiting its parent counts as gone.
pub fn process_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which ends at the last ')'.
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}
