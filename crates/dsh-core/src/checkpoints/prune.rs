//! Removing the checkpoints nobody names any more, at most once a day, beside the run rather
//! than before it: in a home of a thousand sessions and a store of a 50,000-file repository it
//! reads every session log of the workspace and every kept snapshot, which is seconds.

use std::collections::HashSet;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use dsh_config::Settings;
use dsh_protocol::Record;

use super::store::store_for;

/// A prune going on beside the run. The run waits for it when it ends (so that a short run
/// does not cut it short and leave the rest for tomorrow); a run killed before is safe: the
/// store never names what a prune removed.
pub(crate) struct Pruning(Option<std::thread::JoinHandle<()>>);

impl Drop for Pruning {
    fn drop(&mut self) {
        if let Some(pruning) = self.0.take() {
            let _ = pruning.join();
        }
    }
}

/// What a prune needs of the run's settings.
struct Prune {
    store: dsh_checkpoint::CheckpointStore,
    sessions: PathBuf,
    keep_days: u64,
}

/// Starts removing the checkpoints no session of the workspace used within `[checkpoints]
/// keep_days` names, on a thread of its own, if none was removed in the last day. Contents
/// and snapshots written in the last hour are kept whatever names them: another run may be
/// taking a checkpoint right now.
pub(crate) fn prune_beside(settings: &Settings) -> Pruning {
    let home = &settings.home().value;
    let prune = Prune {
        store: store_for(home, settings.cwd()),
        sessions: (home.join("sessions"))
            .join(crate::log::cwd_slug(&settings.cwd().to_string_lossy())),
        keep_days: settings.checkpoints().keep_days,
    };
    let marker = prune.store.root().join("last-prune");
    if !prune.store.root().exists() || recent(&marker, DAY) {
        return Pruning(None);
    }
    // Written first, owner-only as all of the store is: a run started meanwhile does not
    // prune as well.
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&marker);
    let thread = std::thread::Builder::new().name("dsh-checkpoint-prune".to_owned());
    Pruning(thread.spawn(move || prune.run()).ok())
}

const DAY: Duration = Duration::from_secs(86_400);

fn recent(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() < age)
}

impl Prune {
    fn run(self) {
        if let Some(keep) = self.named() {
            let _ = self.store.prune(&keep, Duration::from_secs(3600));
        }
    }

    /// Every snapshot a session used within `keep_days` names, each log read a record at a
    /// time; `None` when a session cannot be read (damaged, or written by a newer dsh): it
    /// might name any checkpoint, so nothing is pruned this time.
    fn named(&self) -> Option<HashSet<String>> {
        let keep_for = DAY * u32::try_from(self.keep_days).unwrap_or(u32::MAX);
        let mut keep = HashSet::new();
        for entry in std::fs::read_dir(&self.sessions).ok()? {
            let Some(log) = crate::session::log_file_in(&entry.ok()?.path()) else {
                continue;
            };
            if !recent(&log, keep_for) {
                continue;
            }
            let read = crate::log::read_each(&log, None, |item, _| {
                let crate::log::Item::Record(envelope) = item else {
                    return;
                };
                match envelope.record {
                    Record::Checkpoint(c) => {
                        keep.insert(c.snapshot);
                    }
                    Record::Rewind(r) => keep.extend(r.backup.into_iter().chain(r.restored)),
                    _ => {}
                }
            });
            read.ok()?;
        }
        Some(keep)
    }
}
