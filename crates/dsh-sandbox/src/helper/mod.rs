//! The sandbox helper: one bubblewrap sandbox per run instead of one per command.
//!
//! Starting `bwrap` costs about 3 ms a command, nearly all of it making the namespaces and
//! mounts (`docs/performance.md`). The helper is dsh's own executable, started once under the
//! very profile a command would get (`<exe> __sandbox-helper`); it then starts each command
//! inside that sandbox in a fresh PID and mount namespace of its own, with a private `/proc`,
//! under a small init whose exit takes the command's leftovers down, and with every
//! capability dropped: the same guarantees as a `bwrap` of its own, for a fork and a mount.
//!
//! A helper serves one profile, and only while its binds still cover what they were made over
//! (`crate::bwrap::bind_identity`). When a command's differ (another mode, a protected file
//! that appeared or was replaced, a new `--add-dir`), a new helper is started for it; the old
//! one lives until its commands end. A helper that cannot start or cannot make namespaces is
//! not tried again in the run, and commands go back to a `bwrap` each: never unconfined.

mod client;
mod server;
mod wire;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

pub use client::{HelperChild, HelperExit, HelperWaiter};

/// The argument that makes dsh's executable serve as a helper.
pub const HELPER_ARG: &str = "__sandbox-helper";

/// The executable that serves as the helper: set by a program that calls
/// [`serve_if_asked`] first thing in `main`.
static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Serves as a sandbox helper and exits, when this process was started as one (by
/// [`HelperLaunch`], with [`HELPER_ARG`]); otherwise offers the current executable as the
/// helper for this process's sandboxes and returns. Call it first thing in `main`, before any
/// thread starts: the helper forks, and must be single-threaded.
pub fn serve_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(HELPER_ARG)) {
        // Descriptor 3 is the socket dsh handed over; the commands must not inherit it.
        // SAFETY: fcntl on descriptor 3, then taking ownership of it.
        let socket = unsafe {
            if libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
                std::process::exit(2);
            }
            <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3)
        };
        std::process::exit(server::serve(socket));
    }
    if let Ok(exe) = std::env::current_exe() {
        offer(exe);
    }
}

/// Offers `exe` as the executable that serves as a helper (one whose `main` calls
/// [`serve_if_asked`]). The first offer stands. Only on x86_64 and aarch64, where the
/// helper's `clone` call is written for the kernel's argument order; elsewhere every command
/// gets a `bwrap` of its own.
pub fn offer(exe: PathBuf) {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        // As a real path: each command's launch checks that no command can write it.
        let _ = EXECUTABLE.set(std::fs::canonicalize(&exe).unwrap_or(exe));
    }
}

/// The helper executable on offer, if any, as a real path.
pub(crate) fn executable() -> Option<&'static PathBuf> {
    EXECUTABLE.get()
}

/// The helpers of one [`crate::Sandbox`].
#[derive(Debug, Default)]
pub(crate) struct HelperPool {
    slot: tokio::sync::Mutex<Slot>,
}

#[derive(Debug, Default)]
struct Slot {
    /// The key it serves ([`HelperLaunch::key`]), and the helper.
    current: Option<(Vec<OsString>, Arc<client::Helper>)>,
    /// Why helpers are not used any more in this run.
    broken: Option<String>,
}

/// How to run one command through a helper: the pool, the profile the command would get from
/// its own `bwrap`, and the argv that starts a helper under it.
#[derive(Debug, Clone)]
pub struct HelperLaunch {
    pub(crate) pool: Arc<HelperPool>,
    /// What a helper must have been started with, and its binds must still cover, to serve
    /// this command: the profile and `crate::bwrap::bind_identity`.
    pub(crate) key: Vec<OsString>,
    /// `bwrap <helper profile> -- <exe> __sandbox-helper`.
    pub(crate) start: Vec<OsString>,
    /// The command itself, without `bwrap`.
    pub(crate) argv: Vec<OsString>,
}

/// Why a command did not run through a helper.
#[derive(Debug)]
pub enum HelperRefusal {
    /// No helper can run it: run it with a `bwrap` of its own.
    FallBack(String),
    /// It cannot run at all (a missing program, a folder that cannot be entered).
    Failed(std::io::Error),
}

impl HelperLaunch {
    /// Runs the command with exactly `env` in `cwd`, its stdin, stdout and stderr the three
    /// descriptors given, through the run's helper for its profile (started if need be).
    pub async fn spawn(
        &self,
        env: &[(OsString, OsString)],
        cwd: &std::path::Path,
        stdio: [std::os::fd::BorrowedFd<'_>; 3],
    ) -> Result<HelperChild, HelperRefusal> {
        let helper = self.helper().await?;
        match helper.spawn(&self.argv, env, cwd, stdio).await {
            Ok(child) => Ok(child),
            Err(client::NotStarted::Failed(error)) => Err(HelperRefusal::Failed(error)),
            Err(client::NotStarted::Elsewhere(why)) => Err(HelperRefusal::FallBack(why)),
            Err(client::NotStarted::Broken(why)) => {
                let mut slot = self.pool.slot.lock().await;
                // Gone or unable to make namespaces: no later command tries it either.
                slot.broken.get_or_insert_with(|| why.clone());
                slot.current = None;
                Err(HelperRefusal::FallBack(why))
            }
        }
    }

    /// Starts the helper for this profile now, if it is not running yet, so that the first
    /// command does not wait for it.
    pub async fn warm(&self) {
        let _ = self.helper().await;
    }

    async fn helper(&self) -> Result<Arc<client::Helper>, HelperRefusal> {
        let mut slot = self.pool.slot.lock().await;
        if let Some(why) = &slot.broken {
            return Err(HelperRefusal::FallBack(why.clone()));
        }
        if let Some((key, helper)) = &slot.current
            && *key == self.key
            && helper.alive()
        {
            return Ok(helper.clone());
        }
        match client::Helper::start(&self.start).await {
            Ok(helper) => {
                let helper = Arc::new(helper);
                slot.current = Some((self.key.clone(), helper.clone()));
                Ok(helper)
            }
            Err(why) => {
                slot.broken = Some(why.clone());
                slot.current = None;
                Err(HelperRefusal::FallBack(why))
            }
        }
    }
}
