//! The sandbox helper: one bubblewrap sandbox per run instead of one per command.
//!
//! Starting `bwrap` costs about 3 ms a command, nearly all of it making the namespaces and
//! mounts (`docs/performance.md`). The helper is dsh's own executable, started once under the
//! very profile a command would get (`<exe> __sandbox-helper`); it then starts each command
//! inside that sandbox in a fresh PID and mount namespace of its own, with a private `/proc`,
//! under a small init whose exit takes the command's leftovers down, and with every
//! capability dropped: the same guarantees as a `bwrap` of its own, for a fork and a mount.
//!
//! The helper keeps CAP_SYS_ADMIN inside the sandbox, so no command may ever be able to replace
//! the file a helper is started from. When dsh's executable lies where a command could write it
//! (a checkout under `/tmp` used as its own workspace, a `cargo install` into a home folder that
//! is the workspace), or where the sandbox would not show it (the host's `/tmp`, which each
//! sandbox replaces with its own), the helper is started from a sealed in-memory copy of it
//! instead (`sealed_executable`): no path leads to that copy, and its seals refuse every write.
//!
//! A helper serves one profile, and only while its binds still cover what they were made over
//! (`crate::bwrap::bind_identity`). When a command's differ (another mode, a protected file
//! that appeared or was replaced, a new `--add-dir`), a new helper is started for it; the old
//! one lives until its commands end. A helper that cannot start or cannot make namespaces is
//! not tried again in the run, and commands go back to a `bwrap` each: never unconfined.

mod client;
mod relay;
mod server;
mod wire;

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

pub use client::{HelperChild, HelperExit, HelperWaiter};
pub use wire::HELPER_ARG;
pub(crate) use wire::SEALED_FD;

/// The executable that serves as the helper: set by a program that calls
/// [`serve_if_asked`] first thing in `main`.
static EXECUTABLE: OnceLock<Offered> = OnceLock::new();

/// The executable on offer: its real path, and the file opened when it was offered (the copy
/// is made from that, not from whatever the path names later).
#[derive(Debug)]
struct Offered {
    path: PathBuf,
    file: Option<std::fs::File>,
    /// Its sealed copy, made the first time one is needed.
    sealed: OnceLock<Option<OwnedFd>>,
}

/// Serves as a sandbox helper when this process was started as one (by [`HelperLaunch`], with
/// [`HELPER_ARG`]), and returns the status the process must exit with at once; otherwise offers
/// the current executable as the helper for this process's sandboxes and returns `None`. Call
/// it first thing in `main`, before any thread starts: the helper forks, and must be
/// single-threaded.
#[must_use = "a helper that served must exit with the status at once"]
pub fn serve_if_asked() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(std::ffi::OsStr::new(HELPER_ARG)) {
        return Some(serve_handed_socket());
    }
    if let Ok(exe) = std::env::current_exe() {
        offer(exe);
    }
    None
}

/// Serves on the socket dsh handed over as descriptor 3; the status to exit with.
fn serve_handed_socket() -> i32 {
    // Descriptor 3 is the socket dsh handed over; the commands must not inherit it.
    // SAFETY: fcntl on descriptor 3, then taking ownership of it.
    let socket = unsafe {
        if libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC) != 0 {
            return 2;
        }
        <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3)
    };
    // The sealed copy it was started from, when it was: not for the commands either. Its
    // name is dsh's, however it was started (from a copy it would be the descriptor's).
    // SAFETY: fcntl on a descriptor number (one that is not open fails harmlessly), and
    // prctl with a NUL-terminated name.
    unsafe {
        libc::fcntl(SEALED_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::prctl(libc::PR_SET_NAME, c"dsh".as_ptr(), 0, 0, 0);
    }
    server::serve(socket)
}

/// Offers `exe` as the executable that serves as a helper (one whose `main` calls
/// [`serve_if_asked`]). The first offer stands. Only on x86_64 and aarch64, where the
/// helper's `clone` call is written for the kernel's argument order; elsewhere every command
/// gets a `bwrap` of its own.
pub fn offer(exe: PathBuf) {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        // As a real path: each command's launch checks whether a command could write it.
        let path = std::fs::canonicalize(&exe).unwrap_or(exe);
        // Opened now, before any command runs: dsh's own running executable cannot be
        // written while it runs (ETXTBSY), so what is copied later is what runs now.
        let file = std::fs::File::open(&path).ok();
        let _ = EXECUTABLE.set(Offered {
            path,
            file,
            sealed: OnceLock::new(),
        });
    }
}

/// The helper executable on offer, if any, as a real path.
pub(crate) fn executable() -> Option<&'static PathBuf> {
    EXECUTABLE.get().map(|offered| &offered.path)
}

/// A sealed in-memory copy of the executable on offer, made once (the first time a helper
/// needs it): a `memfd` with the file's bytes, sealed against writing, growing, shrinking and
/// further sealing. `None` where it cannot be made (no memfd, a kernel that forbids executing
/// one: `vm.memfd_noexec = 2`); then such a helper is not started.
pub(crate) fn sealed_executable() -> Option<BorrowedFd<'static>> {
    let offered = EXECUTABLE.get()?;
    offered
        .sealed
        .get_or_init(|| {
            let file = offered.file.as_ref()?;
            seal_copy(file).ok()
        })
        .as_ref()
        .map(|fd| fd.as_fd())
}

fn seal_copy(source: &std::fs::File) -> std::io::Result<OwnedFd> {
    use std::io::{Seek, SeekFrom};
    let name = c"dsh-sandbox-helper";
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // MFD_EXEC says it will be executed, where the kernel asks (6.3 and later); an older one
    // refuses the flag it does not know, and executes memfds anyway.
    // SAFETY: a NUL-terminated name and integer flags.
    let mut fd = unsafe { libc::memfd_create(name.as_ptr(), flags | libc::MFD_EXEC) };
    if fd < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        // SAFETY: as above.
        fd = unsafe { libc::memfd_create(name.as_ptr(), flags) };
    }
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    let copy = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut source = source;
    source.seek(SeekFrom::Start(0))?;
    std::io::copy(&mut source, &mut &copy)?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    if unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(OwnedFd::from(copy))
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
    /// Every helper started in the run that may still run commands, with the profile it was
    /// started with and its binds' identity then.
    started: Vec<(
        Vec<OsString>,
        Vec<OsString>,
        std::sync::Weak<client::Helper>,
    )>,
    /// Why helpers are not used any more in this run.
    broken: Option<String>,
}

/// Ends the helpers of `slot` whose binds moved ([`HelperLaunch::retire_stale`]).
fn retire(mut slot: tokio::sync::MutexGuard<'_, Slot>) {
    let mut stale = Vec::new();
    slot.started.retain(|(profile, identity, helper)| {
        let Some(helper) = helper.upgrade() else {
            return false;
        };
        if crate::bwrap::bind_identity(profile) == *identity {
            return true;
        }
        stale.push(helper);
        false
    });
    if let Some((_, current)) = &slot.current
        && stale.iter().any(|helper| Arc::ptr_eq(helper, current))
    {
        slot.current = None;
    }
    drop(slot);
    for helper in stale {
        helper.kill();
    }
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
    /// The sealed copy the helper is started from (as [`SEALED_FD`], named
    /// `/proc/self/fd/4` in `start`), when it is not started from the file.
    pub(crate) sealed: Option<BorrowedFd<'static>>,
    /// The run's resource limits, set on the helper and so inherited by every command.
    pub(crate) limits: crate::CommandLimits,
    /// The command itself, without `bwrap`.
    pub(crate) argv: Vec<OsString>,
    /// The profile the command would get from its own `bwrap`.
    pub(crate) profile: Vec<OsString>,
}

/// Why a command did not run through a helper.
#[derive(Debug)]
pub enum HelperRefusal {
    /// No helper can run it: run it with a `bwrap` of its own.
    FallBack(String),
    /// It cannot run at all (a missing program, a folder that cannot be entered).
    Failed(std::io::Error),
}

/// The running helper, once started or reused ([`HelperLaunch::helper`]).
type HelperFuture<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Arc<client::Helper>, HelperRefusal>> + Send + 'a>>;

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

    /// Ends every helper of the run whose binds no longer cover what they were made over (a
    /// protected file a set-aside just moved: the read-only bind moved with it, and the name
    /// is free inside that sandbox), and so the commands it runs, which are reported killed.
    /// Later commands get a helper of their own. While the pool is busy (a command getting its
    /// helper), this is done as soon as it is free, never skipped: the stale helper may be
    /// another than the one the pool is busy with.
    pub fn retire_stale(&self) {
        match self.pool.slot.try_lock() {
            Ok(slot) => retire(slot),
            Err(_) => {
                let pool = self.pool.clone();
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { retire(pool.slot.lock().await) });
                }
            }
        }
    }

    /// Starts the helper for this profile now, if it is not running yet, so that the first
    /// command does not wait for it.
    pub async fn warm(&self) {
        let _ = self.helper().await;
    }

    /// Boxed so that it is compiled once, here, and not in every crate whose `async` code
    /// reaches it.
    fn helper(&self) -> HelperFuture<'_> {
        Box::pin(self.start_or_reuse())
    }

    async fn start_or_reuse(&self) -> Result<Arc<client::Helper>, HelperRefusal> {
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
        match client::Helper::start(&self.start, self.sealed, self.limits).await {
            Ok(helper) => {
                let helper = Arc::new(helper);
                slot.current = Some((self.key.clone(), helper.clone()));
                slot.started
                    .retain(|(_, _, helper)| helper.strong_count() > 0);
                slot.started.push((
                    self.profile.clone(),
                    crate::bwrap::bind_identity(&self.profile),
                    Arc::downgrade(&helper),
                ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sealed_copy_holds_the_bytes_and_refuses_every_change() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exe");
        std::fs::write(&path, b"\x7fELF and the rest").unwrap();
        let copy = std::fs::File::from(seal_copy(&std::fs::File::open(&path).unwrap()).unwrap());
        use std::os::unix::fs::FileExt;
        let mut bytes = [0u8; 17];
        copy.read_exact_at(&mut bytes, 0).unwrap();
        assert_eq!(&bytes, b"\x7fELF and the rest");
        // Not through this descriptor, nor another opened for writing, nor by size.
        assert!(copy.write_at(b"X", 0).is_err());
        if let Ok(reopened) = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{}", copy.as_raw_fd()))
        {
            assert!(reopened.write_at(b"X", 0).is_err());
        }
        assert!(copy.set_len(0).is_err() && copy.set_len(1 << 20).is_err());
        // SAFETY: fcntl with integer arguments on a descriptor we own.
        let seals = unsafe { libc::fcntl(copy.as_raw_fd(), libc::F_GET_SEALS) };
        assert_ne!(seals & libc::F_SEAL_SEAL, 0);
    }
}
