//! Taking a snapshot: one walk of the workspace that reads each entry's metadata, then each
//! file's name in the store, found without reading it wherever that can be known (unchanged
//! since the snapshot before, or just as the workspace's Git index recorded it) and read
//! through the fence otherwise.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_fence::Root;

use crate::entries::Entry;
use crate::snapshot::{Snapshot, Uncovered};
use crate::stat::Stat;
use crate::store::{CheckpointError, CheckpointStore, Coverage, io};
use crate::walk::{Focus, STOPPED, Walked, left_out};
use crate::watch::Watch;

/// A snapshot of the whole tree, and how it stands to the store's record.
pub(crate) struct Whole {
    pub snapshot: Snapshot,
    /// It differs from what it was taken after (the record, if that was the store's), so a
    /// record of it is worth keeping once it is saved.
    pub stale: bool,
    /// Taken after the store's record: the id of the snapshot recorded and the paths that
    /// differ from it, unless the record could not be read whole.
    pub since_record: Option<(String, BTreeSet<String>)>,
}

/// What a snapshot is taken after, to leave unread the files it knows unchanged: a snapshot
/// this process holds, the store's record of the files it last read (read as needed, in path
/// order, rather than held whole), or nothing.
pub(crate) enum Before<'a> {
    Nothing,
    Snapshot(&'a Snapshot),
    Recorded(Box<crate::record::StatRecord>),
}

impl Before<'_> {
    /// How many entries it holds; `None` for nothing.
    fn len(&self) -> Option<usize> {
        match self {
            Before::Nothing => None,
            Before::Snapshot(snapshot) => Some(snapshot.entries.len()),
            Before::Recorded(record) => Some(record.len()),
        }
    }

    /// The entry `key` had. Keys are asked for in order.
    fn entry(&mut self, key: &str) -> Option<Entry> {
        match self {
            Before::Nothing => None,
            Before::Snapshot(snapshot) => snapshot.entries.get(key).cloned(),
            Before::Recorded(record) => record.find(key),
        }
    }

    /// Notes that `key` is not as it was (a record keeps the list).
    fn differs(&mut self, key: &str) {
        if let Before::Recorded(record) = self {
            record.differs(key);
        }
    }
}

impl CheckpointStore {
    /// The covered state of `workspace` now, its new contents stored. `previous` (the last
    /// snapshot of the same workspace, as this process took it) lets unchanged files go
    /// unread; without one, the store's record of the files it last read does.
    pub fn take(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CheckpointError> {
        self.take_until(workspace, coverage, previous, &AtomicBool::new(false))
    }

    /// As [`CheckpointStore::take`], given up as soon as `stop` is set (a snapshot taken ahead
    /// of need that turned out not to be needed): then the error says so.
    pub fn take_until(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        previous: Option<&Snapshot>,
        stop: &AtomicBool,
    ) -> Result<Snapshot, CheckpointError> {
        let before = match previous {
            Some(previous) => Before::Snapshot(previous),
            None => self.stat_record(),
        };
        Ok(self
            .take_whole(workspace, coverage, before, stop, None)?
            .snapshot)
    }

    /// A snapshot of the whole tree, each covered folder watched by `watch`; files unchanged
    /// since `before` are not read.
    pub(crate) fn take_whole(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        mut before: Before<'_>,
        stop: &AtomicBool,
        watch: Option<&Watch>,
    ) -> Result<Whole, CheckpointError> {
        self.keep_private();
        let Walked {
            mut seen,
            mut uncovered,
            attributes,
        } = self.walk(workspace, coverage, stop, &Focus::Everything, watch)?;
        let stale = self.resolve(
            workspace,
            coverage,
            &mut seen,
            attributes,
            &mut before,
            &mut uncovered,
            stop,
        )?;
        let since_record = match before {
            Before::Recorded(record) => record.finish(),
            _ => None,
        };
        Ok(Whole {
            snapshot: Snapshot {
                entries: crate::Entries::from_sorted(seen),
                uncovered,
            },
            stale,
            since_record,
        })
    }

    /// Names each file a walk saw (`seen`, in place) in the store, unread where `before` (or
    /// the Git index) knows it unchanged; a file that cannot be kept leaves `seen` for
    /// `uncovered`. Whether anything differs from `before`, its files' metadata included (a
    /// record of it would be stale).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn resolve(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        seen: &mut Vec<(String, Entry)>,
        attributes: bool,
        before: &mut Before<'_>,
        uncovered: &mut Vec<Uncovered>,
        stop: &AtomicBool,
    ) -> Result<bool, CheckpointError> {
        let mut naming = crate::naming::Naming {
            root: Root::open(workspace).map_err(io(workspace))?,
            folder: None,
            git: crate::naming::Borrowing::new(workspace, attributes),
            budget: self.budget(coverage),
            misses: 0,
            files_read: 0,
            knew_nothing: matches!(before, Before::Nothing),
        };
        let (mut stale, mut known) = (false, 0usize);
        for (key, entry) in seen.iter_mut() {
            if stop.load(Ordering::Relaxed) {
                return Err(CheckpointError::Corrupt {
                    path: workspace.to_path_buf(),
                    why: STOPPED.to_owned(),
                });
            }
            let was = before.entry(key);
            known += usize::from(was.is_some());
            // Folders and links are whole as walked; a file is named.
            if let Some(stat) = Stat::of_unnamed(entry) {
                match was.as_ref().and_then(|was| stat.same_as(was)) {
                    Some(hash) => *entry = stat.entry(hash),
                    None => {
                        stale = true;
                        if let Some(id) =
                            naming.name(self, workspace, coverage, key, &stat, uncovered)?
                        {
                            *entry = stat.entry(id);
                        }
                    }
                }
            }
            // A file that could not be kept is still unnamed: it leaves the snapshot.
            let now = Some(&*entry).filter(|e| Stat::of_unnamed(e).is_none());
            if !was
                .as_ref()
                .zip(now)
                .is_some_and(|(was, now)| was.same_as(now))
            {
                stale = true;
                before.differs(key);
            }
        }
        seen.retain(|(_, entry)| Stat::of_unnamed(entry).is_none());
        if naming.git.borrowed() {
            self.borrow_from(naming.git.objects())?;
        }
        naming.budget.keep(self);
        // Entries it had that the walk did not find are gone.
        Ok(stale || before.len() != Some(known))
    }

    /// Adds `path` (relative to `workspace`) to `snapshot` whatever the coverage says (too
    /// large, ignored), its content stored: what a restore is about to overwrite must be in
    /// the snapshot that undoes it. Returns whether there was a file or link to add.
    pub fn cover_path(
        &self,
        workspace: &Path,
        path: &str,
        snapshot: &mut Snapshot,
    ) -> Result<bool, CheckpointError> {
        // Through the fence, as a restore writes: a link put where a folder was is not
        // followed.
        let Ok(root) = Root::open(workspace) else {
            return Ok(false);
        };
        let Ok((folder, name)) = crate::restore::site(&root, path) else {
            return Ok(false);
        };
        let full = workspace.join(path);
        let Ok(Some(meta)) = folder.entry(&name) else {
            return Ok(false);
        };
        let entry = if meta.file_type().is_symlink() {
            let target = folder.read_link(&name).map_err(io(&full))?;
            Entry::Symlink {
                target: target.to_string_lossy().into_owned(),
            }
        } else if meta.is_file() {
            let mut content = Vec::new();
            let read = (folder.open_read(&name)).and_then(|mut f| f.read_to_end(&mut content));
            match read {
                Ok(_) => {}
                // It cannot be read: it cannot be kept, and a restore reports it.
                Err(e) if left_out(e.kind()) => return Ok(false),
                Err(e) => return Err(io(&full)(e)),
            }
            let hash = self.put(&content)?;
            Stat::of(&meta).entry(hash)
        } else {
            return Ok(false);
        };
        snapshot.uncovered.retain(|u| u.path != path);
        snapshot.entries.insert(path.to_owned(), entry);
        Ok(true)
    }
}
