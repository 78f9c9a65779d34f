//! Protected-path watches not yet settled, so that no way a run ends leaves a command's
//! creations in place.
//!
//! A command's watch ([`dsh_sandbox::CreationWatch`]) is settled when its result is made (or,
//! for a job, when it ends). A run stopped by `--timeout`, SIGTERM or SIGINT abandons its
//! foreground command's result, so the run's shell keeps every watch until it is settled and
//! settles what is left once its processes are stopped ([`PendingWatches::settle_all`]). A run
//! that dies outright (SIGKILL, a crash) cannot: each watch is also written down in a folder
//! of dsh's home while its command may run, and the next run settles the records whose run is
//! gone ([`settle_left_over`]).

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use dsh_sandbox::CreationWatch;

use super::jobs::SandboxFacts;

/// The watches of a run's commands that are not settled yet.
#[derive(Debug, Default)]
pub struct PendingWatches {
    entries: Mutex<Vec<(u64, Arc<SandboxFacts>)>>,
    /// Where each is written down while pending (`None`: nowhere, as in tests of the tools).
    journal: Option<PathBuf>,
}

/// What registered a command's facts: removed from there when they are settled.
#[derive(Debug)]
pub(crate) struct Registration {
    pending: Weak<PendingWatches>,
    key: u64,
}

impl PendingWatches {
    /// Watches written down in `journal` (made when first needed).
    pub fn with_journal(journal: PathBuf) -> Self {
        PendingWatches {
            entries: Mutex::new(Vec::new()),
            journal: Some(journal),
        }
    }

    /// Writes down the watch of the command numbered `key` in this run, before the command
    /// starts: a run killed at any moment after it has started leaves the record.
    pub(crate) fn note(&self, key: u64, watch: Option<&CreationWatch>) {
        let (Some(watch), Some(path)) = (watch, self.record_path(key)) else {
            return;
        };
        // Best effort: a home that cannot be written loses only the crash case. A new file
        // only, never through a symlink: where commands can write the home (Landlock, a home
        // in a writable root) a name may have been planted.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path);
        if let Ok(mut file) = created {
            let _ = std::io::Write::write_all(&mut file, &watch.to_record());
        }
    }

    /// Keeps `facts` (of the command [`PendingWatches::note`]d as `key`) until they are
    /// settled. A command with nothing to watch is not kept.
    pub(crate) fn keep(self: &Arc<Self>, key: u64, facts: &Arc<SandboxFacts>) {
        if facts.confined.watch().is_none() {
            return;
        }
        facts.register(Registration {
            pending: Arc::downgrade(self),
            key,
        });
        self.lock().push((key, facts.clone()));
    }

    /// Settles every watch still pending (the run is ending, its commands stopped): what
    /// their commands created at protected paths is set aside. The lines the model would have
    /// read, for the user.
    pub fn settle_all(&self) -> Vec<String> {
        let pending = std::mem::take(&mut *self.lock());
        let mut lines: Vec<String> = (pending.into_iter())
            .flat_map(|(_, facts)| facts.set_created_aside().to_vec())
            .collect();
        // A command stopped while it was being started was written down but never kept.
        if let (Some(journal), Some(prefix)) = (&self.journal, own_prefix()) {
            lines.extend(settle_records(journal, |name| name.starts_with(prefix)));
        }
        lines
    }

    /// Forgets a settled watch, and its record.
    pub(crate) fn remove(&self, key: u64) {
        self.lock().retain(|(k, _)| *k != key);
        if let Some(path) = self.record_path(key) {
            let _ = std::fs::remove_file(path);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<SandboxFacts>)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `<journal>/<pid>.<start time>.<key>`: the process and its start, so that the next run
    /// can tell a record of a live run (left alone) from one whose run is gone.
    fn record_path(&self, key: u64) -> Option<PathBuf> {
        Some(
            self.journal
                .as_ref()?
                .join(format!("{}{key}", own_prefix()?)),
        )
    }
}

impl Registration {
    /// The facts were settled: drop them from the pending ones.
    pub(crate) fn settled(&self) {
        if let Some(pending) = self.pending.upgrade() {
            pending.remove(self.key);
        }
    }
}

/// Settles the watches that runs which died left in `journal`: for each record whose run is
/// gone, what is at its protected paths and was not when its command started is set aside.
/// Records of runs still alive are left to them. The lines to tell the user.
pub fn settle_left_over(journal: &Path) -> Vec<String> {
    settle_records(journal, |name| {
        let mut parts = name.split('.');
        match (
            parts.next().and_then(|p| p.parse::<u32>().ok()),
            parts.next().and_then(|s| s.parse::<u64>().ok()),
        ) {
            (Some(pid), Some(started)) => process_start(pid) != Some(started),
            _ => false,
        }
    })
}

/// Settles the records in `journal` whose names `chosen` picks, and removes them.
fn settle_records(journal: &Path, chosen: impl Fn(&str) -> bool) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(journal) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        if !chosen(&entry.file_name().to_string_lossy()) {
            continue;
        }
        let path = entry.path();
        if let Some(watch) = read_record(&path).and_then(|bytes| CreationWatch::from_record(&bytes))
        {
            lines.extend(settle(&watch));
        }
        let _ = std::fs::remove_file(&path);
    }
    lines
}

/// The most a record may hold: a few hundred paths.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A record's bytes: a regular file of a sane size, opened without following a symlink or
/// waiting on a FIFO (a name a command may have planted where it can write the home).
fn read_record(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_RECORD_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// Sets aside what a written-down watch finds created, with the workspace named (the user may
/// be told in another run, from another folder). Only what is a protected path of that
/// workspace now: a forged record cannot have any other file renamed.
fn settle(watch: &CreationWatch) -> Vec<String> {
    let workspace = watch.workspace();
    let policy = dsh_sandbox::SandboxPolicy::new(
        dsh_sandbox::SandboxMode::WorkspaceWrite,
        workspace,
        Vec::new(),
    );
    let created = (watch.created().into_iter())
        .filter(|path| policy.protection_of(path).is_some())
        .collect();
    super::jobs::set_aside_lines(created, workspace)
        .into_iter()
        .map(|line| format!("in {}: {line}", workspace.display()))
        .collect()
}

/// `<pid>.<start time>.`: how this process's records begin.
/// Read from `/proc` once: neither changes while the process lives, and every command's
/// record is named with them.
fn own_prefix() -> Option<&'static str> {
    static PREFIX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let pid = std::process::id();
            Some(format!("{pid}.{}.", process_start(pid)?))
        })
        .as_deref()
}

/// When process `pid` started (clock ticks after boot, `/proc/<pid>/stat`'s 22nd field), if
/// it is alive: a PID reused by another process has another start.
fn process_start(pid: u32) -> Option<u64> {
    // The 22nd field is the 20th after the command name.
    let fields = super::process::stat_fields(pid)?;
    fields.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record a command forged where it could write dsh's home (Landlock, a home in a
    /// writable root) has only protected paths set aside, and a FIFO or a symlink in the
    /// journal is passed over without waiting or following it.
    #[test]
    fn forged_records_rename_nothing_but_protected_paths() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        let journal = home.path().join("pending-set-aside");
        std::fs::create_dir_all(&journal).unwrap();
        std::fs::write(ws.join("keys.txt"), "mine").unwrap();
        std::fs::write(ws.join(".env.local"), "A=1").unwrap();
        let mut record = Vec::new();
        for field in [
            "top".as_bytes(),
            ws.as_os_str().as_encoded_bytes(),
            b"absent",
            ws.join("keys.txt").as_os_str().as_encoded_bytes(),
            b"absent",
            ws.join(".env.local").as_os_str().as_encoded_bytes(),
        ] {
            record.extend_from_slice(field);
            record.push(0);
        }
        // A dead run's record (PID 1 with a start that is not its own).
        std::fs::write(journal.join("1.999999999.1"), &record).unwrap();
        let fifo =
            std::ffi::CString::new(journal.join("1.999999999.2").as_os_str().as_encoded_bytes())
                .unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink(ws.join("keys.txt"), journal.join("1.999999999.3")).unwrap();
        let lines = settle_left_over(&journal);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(".env.local"), "{lines:?}");
        assert_eq!(
            std::fs::read_to_string(ws.join("keys.txt")).unwrap(),
            "mine"
        );
        assert!(ws.join(".env.local.dsh-set-aside").exists());
        assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 0);
    }

    #[test]
    fn this_process_has_a_start_time() {
        let own = process_start(std::process::id()).unwrap();
        assert!(own > 0);
        assert_eq!(process_start(std::process::id()), Some(own));
        assert_eq!(process_start(u32::MAX), None);
    }
}
