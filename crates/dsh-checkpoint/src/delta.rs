//! Taking a snapshot from the one before and what a [`Watch`] saw change since: the folders
//! where something changed are listed again (through a walk from the top that goes only their
//! way, so every ignore rule applies as in a whole walk), new folders are walked whole, and
//! every other entry is the one before's, unread.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::Entries;
use crate::entries::Entry;
use crate::snapshot::Snapshot;
use crate::store::{CheckpointError, CheckpointStore, Coverage};
use crate::take::Before;
use crate::walk::{Focus, within};
use crate::watch::Watch;

/// A snapshot taken by [`CheckpointStore::take_watched`].
#[derive(Debug)]
pub struct Taken {
    pub snapshot: Arc<Snapshot>,
    /// The watch to take the next snapshot from.
    pub watch: Option<Arc<Watch>>,
    /// When it was taken from what a watch saw: the paths looked at again (every other entry
    /// is the one before's), so that it is kept as those changes.
    pub changes: Option<BTreeSet<String>>,
    /// The snapshot it was taken after, handed back when it was walked instead (the watch
    /// gave up), so that it can be kept as the changes from that one.
    pub before: Option<Arc<Snapshot>>,
    /// Walked whole and found different from what the store's record says: once saved, it is
    /// what the record says.
    stale: bool,
    /// Taken after the store's record: the snapshot recorded and the paths that differ.
    since_record: Option<(String, BTreeSet<String>)>,
}

impl CheckpointStore {
    /// The covered state of `workspace` now, and the watch to take the next one from. With
    /// `since` (a snapshot and the watch begun on the tree as it was then), only what the
    /// watch saw change is looked at again (in that snapshot itself where nothing else holds
    /// it, so that a large one is not copied); without one, or when the watch cannot say (it
    /// gave up), the tree is walked and a new watch begun on it.
    pub fn take_watched(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        since: Option<(Arc<Snapshot>, &Arc<Watch>)>,
        stop: &AtomicBool,
    ) -> Result<Taken, CheckpointError> {
        let since = match since {
            Some((before, watch)) => match watch.changed() {
                Some(changed) => {
                    let (snapshot, changes) =
                        self.take_changes(workspace, coverage, before, changed, watch, stop)?;
                    return Ok(Taken {
                        snapshot,
                        watch: Some(watch.clone()),
                        changes: Some(changes),
                        before: None,
                        stale: false,
                        since_record: None,
                    });
                }
                None => Some(before),
            },
            None => None,
        };
        let watch = Watch::new().map(Arc::new);
        let previous = match &since {
            Some(before) => Before::Snapshot(before),
            None => self.stat_record(),
        };
        let whole = self.take_whole(workspace, coverage, previous, stop, watch.as_deref())?;
        Ok(Taken {
            snapshot: Arc::new(whole.snapshot),
            watch: watch.filter(|w| !w.gave_up()),
            changes: None,
            before: since,
            stale: whole.stale,
            since_record: whole.since_record,
        })
    }

    /// Keeps what [`CheckpointStore::take_watched`] took, after the snapshot saved as
    /// `base_id` if there was one: as the changes from it where the watch saw them or they are
    /// few, as the changes from the snapshot the store's record names when this is the
    /// process's first, whole otherwise; the record then says what was walked. Returns its id.
    pub fn save_taken(
        &self,
        taken: &mut Taken,
        base_id: Option<&str>,
    ) -> Result<String, CheckpointError> {
        let id = match (
            &taken.changes,
            base_id,
            taken.before.take(),
            &taken.since_record,
        ) {
            (Some(changes), Some(base_id), _, _) => {
                self.save_changes(&taken.snapshot, base_id, changes)?
            }
            (_, Some(base_id), Some(base), _) => {
                self.save_after(&taken.snapshot, Some((base_id, &base)))?
            }
            (_, None, _, Some((recorded, differ)))
                if differ.len() <= taken.snapshot.entries.len() / 4 + 1 =>
            {
                self.save_changes(&taken.snapshot, recorded, differ)?
            }
            _ => self.save(&taken.snapshot)?,
        };
        // The record names the snapshot it lists, so that a prune keeps that one.
        if taken.stale || taken.since_record.as_ref().is_some_and(|(r, _)| *r != id) {
            self.keep_record(&taken.snapshot, &id);
        }
        taken.since_record = None;
        Ok(id)
    }

    /// `before` with what `changed` names looked at again, and the paths looked at.
    fn take_changes(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        before: Arc<Snapshot>,
        changed: crate::watch::Changed,
        watch: &Watch,
        stop: &AtomicBool,
    ) -> Result<(Arc<Snapshot>, BTreeSet<String>), CheckpointError> {
        if changed.paths.is_empty() && changed.folders.is_empty() {
            return Ok((before, BTreeSet::new()));
        }
        let mut snapshot = Arc::unwrap_or_clone(before);
        let parent = |key: &str| key.rsplit_once('/').map_or("", |(p, _)| p).to_owned();
        let listed: BTreeSet<String> = changed.paths.iter().map(|p| parent(p)).collect();
        let whole = changed.folders.clone();
        // What was there and is looked at again is taken out first (and kept aside, so that a
        // file found unchanged is not read): what the walk does not find again is gone, or no
        // longer covered.
        let looked_at = |key: &str| changed.paths.contains(key) || within(&whole, key);
        let aside = Snapshot {
            entries: Entries::from_sorted(
                (snapshot.entries.iter())
                    .filter(|(key, _)| looked_at(key))
                    .map(|(key, entry)| (key.clone(), entry.clone()))
                    .collect(),
            ),
            uncovered: Vec::new(),
        };
        snapshot.entries.retain(|key, _| !looked_at(key));
        let mut touched: BTreeSet<String> = aside.entries.keys().cloned().collect();
        snapshot.uncovered.retain(|u| !looked_at(&u.path));
        let focus = Focus::Some {
            listed,
            whole: whole.clone(),
        };
        let walked = self.walk(workspace, coverage, stop, &focus, Some(watch))?;
        // What the folders listed hold that did not change keeps its entry as it was.
        let mut seen: Vec<_> = (walked.seen.into_iter())
            .filter(|(key, _)| looked_at(key))
            .collect();
        // A changed path that is not a folder now (removed, moved away, made a file) takes
        // what was in it along.
        let folders: BTreeSet<&str> = (seen.iter())
            .filter(|(_, entry)| matches!(entry, Entry::Dir { .. }))
            .map(|(key, _)| key.as_str())
            .collect();
        let gone: BTreeSet<String> = (changed.paths.iter())
            .filter(|p| !folders.contains(p.as_str()))
            .cloned()
            .collect();
        let in_gone = |key: &str| within(&gone, key) && !gone.contains(key);
        snapshot.entries.retain(|key, _| {
            let gone = in_gone(key);
            if gone {
                touched.insert(key.to_owned());
            }
            !gone
        });
        snapshot.uncovered.retain(|u| !in_gone(&u.path));
        snapshot
            .uncovered
            .extend((walked.uncovered.into_iter()).filter(|u| looked_at(&u.path)));
        snapshot.uncovered.sort_by(|a, b| a.path.cmp(&b.path));
        snapshot.uncovered.dedup_by(|a, b| a.path == b.path);
        touched.extend(seen.iter().map(|(key, _)| key.clone()));
        let attributes = walked.attributes || has_attributes(&snapshot);
        self.resolve(
            workspace,
            coverage,
            &mut seen,
            attributes,
            &mut Before::Snapshot(&aside),
            &mut snapshot.uncovered,
            stop,
        )?;
        snapshot
            .entries
            .apply(seen.into_iter().map(|(key, entry)| (key, Some(entry))));
        Ok((Arc::new(snapshot), touched))
    }
}

/// Whether a snapshot covers a `.gitattributes` (Git may convert content, so no index entry is
/// taken unread).
fn has_attributes(snapshot: &Snapshot) -> bool {
    (snapshot.entries.keys()).any(|k| k == ".gitattributes" || k.ends_with("/.gitattributes"))
}
