//! The shell: the `bash` tool, background jobs and the job tools, and the process machinery
//! under them.

pub(crate) mod bash;
pub(crate) mod capture;
pub(crate) mod env;
pub(crate) mod job_tools;
pub(crate) mod jobs;
pub(crate) mod process;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use dsh_sandbox::Sandbox;

pub use env::{DEFAULT_SCRUB, ShellEnv};
pub use jobs::{JobRegistry, MAX_RUNNING};

/// What the shell tools of a session share.
#[derive(Debug)]
pub struct Shell {
    pub env: ShellEnv,
    pub jobs: JobRegistry,
    /// Confines every command (probed once, on the first command that needs it).
    pub sandbox: Arc<Sandbox>,
    /// Starts every process tag of this session, so the end of the run finds them all.
    tag_prefix: String,
    commands: AtomicU64,
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
            commands: AtomicU64::new(0),
        }
    }

    /// A fresh tag for one command.
    fn next_tag(&self) -> (u64, String) {
        let n = self.commands.fetch_add(1, Ordering::SeqCst) + 1;
        (n, format!("{}{n}", self.tag_prefix))
    }

    /// Stops every job and everything the session's commands left running.
    pub async fn shutdown(&self) {
        self.jobs.shutdown(&self.tag_prefix).await;
    }
}
