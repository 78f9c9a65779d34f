//! Background jobs: commands that run on after their call returned, by request
//! (`run_in_background`) or because they outlived their timeout.
//!
//! Ids are `bash-1`, `bash-2`, ... for the life of the process. At most [`MAX_RUNNING`] jobs run
//! (or are stopping) at once. A job's output is read as a consuming delta: each read returns
//! what is new since the last one. When a job ends without the model having seen its end (read
//! to completion, or killed by it), a notice says so at the model's next step.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_sandbox::{ConfinedCommand, SandboxUnavailable, Subject, Verdict};

use super::process::{Exit, ShellProcess, signal_name};

/// Jobs that may run at once.
pub const MAX_RUNNING: usize = 10;
/// How many passes over `/proc` the end of a run makes at most, and how far apart.
const SWEEP_PASSES: usize = 50;
const SWEEP_PAUSE: Duration = Duration::from_millis(20);

/// Where a job is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStatus {
    Running,
    Stopping,
    Completed { exit_code: i32 },
    Killed { signal: Option<String> },
}

impl JobStatus {
    pub fn is_live(&self) -> bool {
        matches!(self, JobStatus::Running | JobStatus::Stopping)
    }

    /// `running`, or `completed, exit code: 0` and the like: what goes in `[status: ...]`.
    pub fn describe(&self) -> String {
        match self {
            JobStatus::Running => "running".into(),
            JobStatus::Stopping => "stopping".into(),
            JobStatus::Completed { exit_code } => format!("completed, exit code: {exit_code}"),
            JobStatus::Killed { signal: Some(s) } => format!("killed, signal: {s}"),
            JobStatus::Killed { signal: None } => "killed, killed before exit".into(),
        }
    }

    /// The status word alone.
    pub fn word(&self) -> &'static str {
        match self {
            JobStatus::Running => "running",
            JobStatus::Stopping => "stopping",
            JobStatus::Completed { .. } => "completed",
            JobStatus::Killed { .. } => "killed",
        }
    }
}

/// Sets aside `created` (protected paths a command created in `workspace`, which exist only
/// under `workspace-write`) and says so, a line each, as the model and the user read it.
pub(crate) fn set_aside_lines(
    created: Vec<std::path::PathBuf>,
    workspace: &std::path::Path,
) -> Vec<String> {
    let mode = dsh_sandbox::SandboxMode::WorkspaceWrite;
    let shown = |path: &std::path::Path| {
        path.strip_prefix(workspace)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    (created.into_iter())
        .map(|path| match dsh_sandbox::set_aside(&path, workspace) {
            Ok(to) => format!(
                "[sandbox: {} is protected under {mode}; the command created it, and it was \
                 renamed to {}, where it has no effect]",
                shown(&path),
                shown(&to)
            ),
            Err(error) => format!(
                "[sandbox: {} is protected under {mode}; the command created it, and it could \
                 not be set aside ({error}): remove it before running Git or dsh there]",
                shown(&path),
            ),
        })
        .collect()
}

/// How a command was confined, to read its outcome by when it ends.
#[derive(Debug)]
pub struct SandboxFacts {
    pub confined: ConfinedCommand,
    /// Where it ran (relative paths in error lines are taken from here).
    pub cwd: std::path::PathBuf,
    /// Whether a denial may point at escalation.
    pub hint: bool,
    /// What was set aside, as the lines the model reads: worked out once, when it ended.
    set_aside: std::sync::OnceLock<Vec<String>>,
    /// Where its watch waits to be settled ([`super::pending::PendingWatches`]).
    registration: std::sync::OnceLock<super::pending::Registration>,
}

impl SandboxFacts {
    pub fn new(confined: ConfinedCommand, cwd: std::path::PathBuf, hint: bool) -> Self {
        SandboxFacts {
            confined,
            cwd,
            hint,
            set_aside: std::sync::OnceLock::new(),
            registration: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn register(&self, registration: super::pending::Registration) {
        let _ = self.registration.set(registration);
    }

    /// Once the command has ended: the protected paths it created, renamed to where they
    /// have no effect ([`dsh_sandbox::CreationWatch`], [`dsh_sandbox::set_aside`]), one line
    /// each for the model. Done once, however often it is asked.
    pub fn set_created_aside(&self) -> &[String] {
        self.set_aside.get_or_init(|| {
            let lines = self.set_aside_now();
            if let Some(registration) = self.registration.get() {
                registration.settled();
            }
            lines
        })
    }

    fn set_aside_now(&self) -> Vec<String> {
        let mut lines =
            set_aside_lines(self.confined.created_protected(), self.confined.workspace());
        // And what Git would now run that it did not before the run's first command.
        lines.extend(self.confined.policy().git_changes());
        // A set-aside may have moved a file another command's sandbox binds read-only: that
        // sandbox (and what runs in it) ends, so its commands cannot make the name again.
        if !lines.is_empty()
            && let Some(helper) = self.confined.helper()
        {
            helper.retire_stale();
        }
        lines
    }

    /// The sandbox markers for a finished run: the denial marker and, when offered, the
    /// escalation hint. A runner failure is an error: the command never ran.
    pub fn markers(
        &self,
        exit: Exit,
        stdout: &str,
        stderr: &str,
    ) -> Result<Vec<String>, SandboxUnavailable> {
        let code = if exit.signal.is_some() {
            None
        } else {
            exit.code
        };
        let moved = self.set_created_aside();
        let hint = |mut markers: Vec<String>| {
            if self.hint {
                markers.push(dsh_sandbox::escalation_hint(Subject::Command));
            }
            markers
        };
        // The hosts dsh's proxy refused it (network allowlist), named whatever the command
        // made of the refusal.
        let network: Vec<String> = (self.confined.network_denials().iter())
            .map(dsh_sandbox::network::denial_marker)
            .collect();
        match self.confined.verdict(code, stdout, stderr, &self.cwd) {
            Verdict::Ran if moved.is_empty() => Ok(network),
            Verdict::Ran => Ok(hint([network, moved.to_vec()].concat())),
            Verdict::Denied => {
                let mut markers = vec![dsh_sandbox::denial_marker(self.confined.mode)];
                markers.extend(network);
                markers.extend_from_slice(moved);
                Ok(hint(markers))
            }
            Verdict::RunnerFailed(line) => {
                Err(SandboxUnavailable::runner_failed(self.confined.mode, line))
            }
        }
    }
}

/// One background job.
#[derive(Debug)]
pub struct Job {
    pub id: String,
    pub label: String,
    process: Arc<ShellProcess>,
    sandbox: Arc<SandboxFacts>,
    /// The sandbox's notices once the job has ended (a denial, or the runner's failure),
    /// worked out once and repeated on every read after that, as the reference does.
    sandbox_notices: std::sync::OnceLock<Vec<String>>,
    /// Bytes of stdout and stderr already read.
    cursors: Mutex<(u64, u64)>,
    /// The model has seen how it ended (or ended it); no notice is due.
    reported: AtomicBool,
    noticed: AtomicBool,
}

impl Job {
    pub fn status(&self) -> JobStatus {
        match self.process.exit() {
            None if self.process.stopping() => JobStatus::Stopping,
            None => JobStatus::Running,
            Some(exit) => settle(exit, self.process.stopping()),
        }
    }

    /// What is new on its streams: stdout, then `[stderr]` and stderr; then, each on its own
    /// line, a notice when some of it is no longer in memory, and, when `ended` (the status the
    /// caller shows with this read says the job has ended), the sandbox's notices, on every
    /// such read.
    pub fn read(&self, ended: bool) -> String {
        let mut cursors = self
            .cursors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (out, err, lossy, spills) = {
            let stdout = self
                .process
                .stdout
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let stderr = self
                .process
                .stderr
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (out, lossy_out) = stdout.since(cursors.0);
            let (err, lossy_err) = stderr.since(cursors.1);
            *cursors = (stdout.total(), stderr.total());
            let spills: Vec<String> = [stdout.spill_file(), stderr.spill_file()]
                .into_iter()
                .flatten()
                .collect();
            (out, err, lossy_out || lossy_err, spills)
        };
        let mut text = out;
        if !err.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("[stderr]\n");
            text.push_str(&err);
        }
        let mut notices = Vec::new();
        if lossy {
            let paths = if spills.is_empty() {
                "(unavailable)".to_owned()
            } else {
                spills.join(", ")
            };
            notices.push(format!(
                "[some output was dropped from memory; full output: {paths}]"
            ));
        }
        if ended {
            notices.extend(self.sandbox_notices());
        }
        if !notices.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&notices.join("\n"));
        }
        text
    }

    /// Once the job has ended: the denial marker (and the escalation hint, when offered) or
    /// the runner's failure; nothing while it runs.
    fn sandbox_notices(&self) -> Vec<String> {
        let Some(exit) = self.process.exit() else {
            return Vec::new();
        };
        self.sandbox_notices
            .get_or_init(|| {
                let text = |capture: &Mutex<super::capture::StreamCapture>| {
                    capture
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .text()
                };
                let (stdout, stderr) = (text(&self.process.stdout), text(&self.process.stderr));
                self.sandbox
                    .markers(exit, &stdout, &stderr)
                    .unwrap_or_else(|failure| {
                        vec![format!(
                            "[sandbox: the sandbox runner itself failed under {} mode — the \
                             command did not run; this is a sandbox problem, not a command \
                             failure]",
                            failure.mode
                        )]
                    })
            })
            .clone()
    }

    /// Waits until it ends or `limit` passes.
    pub async fn wait(&self, limit: Duration) {
        let _ = tokio::time::timeout(limit, self.process.settled()).await;
    }

    pub fn mark_reported(&self) {
        self.reported.store(true, Ordering::SeqCst);
    }

    pub fn kill(&self) {
        self.process.terminate();
    }
}

fn settle(exit: Exit, stopped: bool) -> JobStatus {
    match (exit.signal, stopped) {
        (Some(signal), _) => JobStatus::Killed {
            signal: Some(signal_name(signal)),
        },
        (None, true) => JobStatus::Killed { signal: None },
        (None, false) => JobStatus::Completed {
            exit_code: exit.code.unwrap_or(0),
        },
    }
}

/// A job could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitReached;

impl std::fmt::Display for LimitReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "background job limit reached for this owner (limit: {MAX_RUNNING}); use job_kill to \
             stop an unneeded job, wait for it to finish, then retry"
        )
    }
}

/// The jobs of a session.
#[derive(Debug, Default)]
pub struct JobRegistry {
    jobs: Mutex<Vec<Arc<Job>>>,
    next: AtomicU64,
}

impl JobRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether another job may start.
    pub fn has_room(&self) -> bool {
        self.running() < MAX_RUNNING
    }

    /// Live jobs (running or stopping).
    pub fn running(&self) -> usize {
        self.list().iter().filter(|j| j.status().is_live()).count()
    }

    /// Makes `process` a job; refused, allocating no id, when the limit is reached.
    pub fn adopt(
        &self,
        label: &str,
        process: Arc<ShellProcess>,
        sandbox: Arc<SandboxFacts>,
    ) -> Result<Arc<Job>, LimitReached> {
        let mut jobs = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if jobs.iter().filter(|j| j.status().is_live()).count() >= MAX_RUNNING {
            return Err(LimitReached);
        }
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        // What a job creates at protected paths is set aside when it ends, whether or not
        // anyone reads it then.
        let (ended, facts) = (process.clone(), sandbox.clone());
        tokio::spawn(async move {
            ended.settled().await;
            facts.set_created_aside();
        });
        let job = Arc::new(Job {
            id: format!("bash-{n}"),
            label: label.to_owned(),
            process,
            sandbox,
            sandbox_notices: std::sync::OnceLock::new(),
            cursors: Mutex::new((0, 0)),
            reported: AtomicBool::new(false),
            noticed: AtomicBool::new(false),
        });
        jobs.push(job.clone());
        Ok(job)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Job>> {
        self.list().into_iter().find(|j| j.id == id)
    }

    /// Every job, in start order.
    pub fn list(&self) -> Vec<Arc<Job>> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Notices for jobs that ended since the last call, unseen by the model.
    pub fn take_notices(&self) -> Vec<String> {
        self.list()
            .iter()
            .filter(|job| {
                !job.status().is_live()
                    && !job.reported.load(Ordering::SeqCst)
                    && !job.noticed.swap(true, Ordering::SeqCst)
            })
            .map(|job| {
                format!(
                    "background job {} (bash: {}) finished [status: {}]. Read its output with job_output.",
                    job.id,
                    job.label,
                    job.status().describe()
                )
            })
            .collect()
    }

    /// Waits until some live job ends, or `limit` passes; false when none was live.
    pub async fn wait_any(&self, limit: Duration) -> bool {
        let live: Vec<Arc<Job>> = self
            .list()
            .into_iter()
            .filter(|j| j.status().is_live())
            .collect();
        if live.is_empty() {
            return false;
        }
        let waits = live.iter().map(|j| Box::pin(j.process.settled()));
        let _ = tokio::time::timeout(limit, futures_util::future::select_all(waits)).await;
        true
    }

    /// Stops every job and every process the session's commands left behind (`tag_prefix`
    /// marks them), and waits for the jobs to end.
    pub async fn shutdown(&self, tag_prefix: &str) {
        let jobs = self.kill_live();
        let entry = format!("{}={tag_prefix}*", super::process::TAG_VARIABLE);
        super::process::sweep(&entry, libc::SIGTERM);
        for job in &jobs {
            job.wait(super::process::GRACE + Duration::from_secs(1))
                .await;
        }
        // One pass can miss a process: one caught in an `execve` shows no environment for
        // that instant, and a daemon that forks as it dies leaves a child the pass did not see.
        // So passes go on, a moment apart, until one finds nothing of ours and nothing it
        // could not read (bounded: a process that will not die does not hold the run).
        for _ in 0..SWEEP_PASSES {
            let swept = super::process::sweep(&entry, libc::SIGKILL);
            if swept == super::process::Swept::default() {
                break;
            }
            tokio::time::sleep(SWEEP_PAUSE).await;
        }
    }

    /// Stops this registry's live jobs and waits for them to end.
    pub async fn stop_all(&self) {
        for job in self.kill_live() {
            job.wait(super::process::GRACE + Duration::from_secs(1))
                .await;
        }
    }

    /// Kills every live job (marked told: its end is not news to anyone); returns them all.
    fn kill_live(&self) -> Vec<Arc<Job>> {
        let jobs = self.list();
        for job in &jobs {
            if job.status().is_live() {
                job.mark_reported();
                job.kill();
            }
        }
        jobs
    }
}
