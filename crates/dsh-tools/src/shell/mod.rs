//! The shell: the `bash` tool, background jobs and the job tools, and the process machinery
//! under them.

pub(crate) mod bash;
pub(crate) mod capture;
pub(crate) mod env;
pub(crate) mod job_tools;
pub(crate) mod jobs;
pub(crate) mod pending;
pub(crate) mod process;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dsh_sandbox::Sandbox;

pub use env::{DEFAULT_SCRUB, ShellEnv};
pub use jobs::{JobRegistry, MAX_RUNNING};
pub use pending::{PendingWatches, settle_left_over};

/// A script for [`Shell::run_script`].
#[derive(Debug)]
pub struct Script<'a> {
    /// What `bash -c` runs.
    pub text: &'a str,
    /// Its stdin.
    pub input: Vec<u8>,
    /// The sandbox it runs under.
    pub policy: &'a dsh_sandbox::SandboxPolicy,
    pub cwd: &'a std::path::Path,
    /// How long it may take.
    pub limit: std::time::Duration,
    /// Added to the shell tools' environment.
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

/// Why [`Shell::run_script`] could not start a script.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// No sandbox could confine it (and nothing runs unconfined).
    #[error(transparent)]
    Unavailable(#[from] dsh_sandbox::SandboxUnavailable),
    #[error(transparent)]
    Spawn(#[from] std::io::Error),
}

/// How a script run by [`Shell::run_script`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptRun {
    /// Its exit status; `None` when a signal ended it.
    pub code: Option<i32>,
    /// It was stopped at its time limit.
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// What the shell tools of a session share.
#[derive(Debug)]
pub struct Shell {
    pub env: ShellEnv,
    pub jobs: JobRegistry,
    /// Confines every command (probed once, on the first command that needs it).
    pub sandbox: Arc<Sandbox>,
    /// Starts every process tag of this session, so the end of the run finds them all.
    tag_prefix: String,
    /// Shared with the shells made [`Shell::for_child`], so no two commands share a tag.
    commands: Arc<AtomicU64>,
    /// The protected-path watches not settled yet, shared with the children's shells.
    pub(crate) pending: Arc<PendingWatches>,
}

impl Shell {
    /// `session_id` names the session; its processes are tagged with a short form of it.
    pub fn new(env: ShellEnv, session_id: &str, sandbox: Arc<Sandbox>) -> Self {
        let alnum: Vec<char> = session_id
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let short: String = alnum[alnum.len().saturating_sub(12)..].iter().collect();
        Shell {
            env,
            jobs: JobRegistry::new(),
            sandbox,
            tag_prefix: format!("{short}-"),
            commands: Arc::new(AtomicU64::new(0)),
            pending: Arc::new(PendingWatches::default()),
        }
    }

    /// The same shell, keeping its unsettled watches in `pending` (written down where it says).
    pub fn with_pending(mut self, pending: PendingWatches) -> Self {
        self.pending = Arc::new(pending);
        self
    }

    /// The shell of a subagent: the same environment, sandbox and process tags (the end of the
    /// run stops its processes too), and jobs of its own, so that each agent waits for, and is
    /// told about, only the jobs it started.
    pub fn for_child(&self) -> Shell {
        Shell {
            env: self.env.clone(),
            jobs: JobRegistry::new(),
            sandbox: self.sandbox.clone(),
            tag_prefix: self.tag_prefix.clone(),
            commands: self.commands.clone(),
            pending: self.pending.clone(),
        }
    }

    /// A fresh tag for one command.
    fn next_tag(&self) -> (u64, String) {
        let n = self.commands.fetch_add(1, Ordering::SeqCst) + 1;
        (n, format!("{}{n}", self.tag_prefix))
    }

    /// Runs a script with `bash -c` under its policy's sandbox (as the `bash` tool would run
    /// it), with its input on stdin, for at most its limit (then it is stopped), or until
    /// `cancel` (the run was stopped: so is the script). For hooks: the last 64 KB of each
    /// stream are kept, never spilled.
    pub async fn run_script(
        &self,
        script: Script<'_>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<ScriptRun, ScriptError> {
        let Script {
            text,
            input,
            policy,
            cwd,
            limit,
            env: extra_env,
        } = script;
        let argv = vec!["bash".into(), "-c".into(), text.into()];
        let confined = self.sandbox.confine(argv, policy)?;
        let (_, tag) = self.next_tag();
        let spec = process::Spec {
            argv: confined.argv.clone(),
            cwd: cwd.to_path_buf(),
            env: {
                let mut env = confined.environment(self.env.build(std::env::vars_os(), &tag));
                env.extend(extra_env);
                env
            },
            tag,
            spill: None,
            confinement: confined.child_setup().cloned(),
            stdin: Some(input),
            // Hooks answer in JSON that must reach dsh whole; what a hook says is redacted
            // where it is shown (`dsh_core::HookRunner`).
            redactor: None,
            helper: confined.helper().cloned(),
        };
        let process = process::ShellProcess::spawn(spec).await?;
        let (exit, timed_out) = tokio::select! {
            exit = tokio::time::timeout(limit, process.settled()) => match exit {
                Ok(exit) => (exit, false),
                Err(_) => {
                    process.terminate();
                    (process.settled().await, true)
                }
            },
            () = cancel.cancelled() => {
                process.terminate();
                (process.settled().await, false)
            }
        };
        let text = |capture: &std::sync::Mutex<capture::StreamCapture>| {
            capture
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .text()
        };
        Ok(ScriptRun {
            code: exit.code,
            timed_out,
            stdout: text(&process.stdout),
            stderr: text(&process.stderr),
        })
    }

    /// Stops this shell's jobs and waits for them, leaving other shells' processes alone.
    pub async fn stop_jobs(&self) {
        self.jobs.stop_all().await;
    }

    /// Stops every job and everything the session's commands left running, then settles the
    /// protected-path watches of commands whose results were never made (a run stopped in the
    /// middle of one). What was set aside, a line each, for the user.
    pub async fn shutdown(&self) -> Vec<String> {
        self.jobs.shutdown(&self.tag_prefix).await;
        self.pending.settle_all()
    }
}
