//! Keeping snapshots and reading them back: each a file under `snapshots/`, whole or as the
//! changes from the snapshot saved before it ([`crate::format`]); the record of the files
//! last read; and pruning what no kept snapshot names.

use std::collections::HashSet;
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::entries::Entry;
use crate::format::{self, Stored};
use crate::id::hex;
use crate::snapshot::Snapshot;
use crate::store::{CheckpointError, CheckpointStore, Pruned, io};

/// The most snapshots saved as changes in a row before one is saved whole again: what loading
/// one may have to read.
const CHAIN: usize = 32;

impl CheckpointStore {
    fn snapshot_path(&self, id: &str) -> PathBuf {
        self.root().join("snapshots").join(id)
    }

    /// Keeps `snapshot` whole; returns its id (the SHA-256 of its state: the same state saved
    /// twice is kept once).
    pub fn save(&self, snapshot: &Snapshot) -> Result<String, CheckpointError> {
        self.save_after(snapshot, None)
    }

    /// Keeps `snapshot`, as the changes from `base` (a snapshot saved before, with its id)
    /// where they are few and the chain of changes is short; returns its id.
    pub fn save_after(
        &self,
        snapshot: &Snapshot,
        base: Option<(&str, &Snapshot)>,
    ) -> Result<String, CheckpointError> {
        let id = format::id_of(snapshot);
        let path = self.snapshot_path(&id);
        if self.touch(&path) {
            return Ok(id);
        }
        let as_changes = base.filter(|(base_id, base)| {
            *base_id != id
                && self.chain(base_id).is_some_and(|n| n < CHAIN)
                && format::difference_count(snapshot, base) <= snapshot.entries.len() / 4 + 1
        });
        let bytes = match as_changes {
            Some((base_id, base)) => format::delta(snapshot, base, base_id),
            None => format::full(snapshot),
        };
        self.write_atomically(&path, &bytes)?;
        Ok(id)
    }

    /// Keeps `snapshot`, taken from the snapshot saved as `base_id` and what a watch saw: as
    /// the paths it looked at again (`changes`, from [`crate::Taken::changes`]) while the
    /// chain of changes is short, whole otherwise. Nothing changed: it is `base_id`.
    pub fn save_changes(
        &self,
        snapshot: &Snapshot,
        base_id: &str,
        changes: &std::collections::BTreeSet<String>,
    ) -> Result<String, CheckpointError> {
        if changes.is_empty() && self.snapshot_path(base_id).is_file() {
            return Ok(base_id.to_owned());
        }
        if self.chain(base_id).is_none_or(|n| n >= CHAIN) {
            return self.save(snapshot);
        }
        let (bytes, named) = format::delta_of(snapshot, changes, base_id);
        let id = hex(&Sha256::digest(&named));
        let path = self.snapshot_path(&id);
        if !self.touch(&path) {
            self.write_atomically(&path, &bytes)?;
        }
        Ok(id)
    }

    /// How many snapshots of changes lead from `id` to a whole one; `None` when one of them
    /// is missing or not a snapshot file of this kind (a store from before).
    fn chain(&self, id: &str) -> Option<usize> {
        let mut length = 0;
        let mut at = id.to_owned();
        while let Some(base) = self.base_of(&at)? {
            length += 1;
            if length > CHAIN {
                return Some(length);
            }
            at = base;
        }
        Some(length)
    }

    /// The base a snapshot file names: `Some(None)` for a whole one; `None` when there is no
    /// such file. Only its head is read.
    fn base_of(&self, id: &str) -> Option<Option<String>> {
        self.based_on(&self.snapshot_path(id))
    }

    /// The snapshot the file `path` (inside the store) names in its head: the base of a
    /// snapshot of changes, the snapshot a record lists. Only its head is read, through the
    /// fence, as every file of the store is.
    fn based_on(&self, path: &std::path::Path) -> Option<Option<String>> {
        use std::io::Read;
        let mut head = Vec::new();
        (self.open(path).ok()?.take(7 + 255))
            .read_to_end(&mut head)
            .ok()?;
        format::head(&head).map(|(_, base, _)| base)
    }

    /// The snapshot saved as `id`.
    pub fn load(&self, id: &str) -> Result<Snapshot, CheckpointError> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Corrupt {
                path: self.root().to_path_buf(),
                why: format!("\"{id}\" is not a checkpoint id"),
            });
        }
        let path = self.snapshot_path(id);
        let bytes = match self.read(&path) {
            Ok(bytes) => bytes,
            // A snapshot of a store from before: a root record and one object per folder.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return crate::tree::load_trees(self, self.root_record(id)?);
            }
            Err(e) => return Err(io(&path)(e)),
        };
        let corrupt = || CheckpointError::Corrupt {
            path: path.clone(),
            why: "not a snapshot this dsh can read".to_owned(),
        };
        match format::read(&bytes).ok_or_else(corrupt)? {
            Stored::Full(snapshot) => Ok(snapshot),
            Stored::Delta {
                base,
                changes,
                uncovered,
            } => {
                let mut snapshot = self.load(&base)?;
                snapshot.entries.apply(changes);
                snapshot.uncovered = uncovered;
                Ok(snapshot)
            }
        }
    }

    fn root_record(&self, id: &str) -> Result<crate::tree::Root, CheckpointError> {
        let path = self.manifest_path(id);
        let text = std::fs::read(&path).map_err(io(&path))?;
        serde_json::from_slice(&text).map_err(|e| CheckpointError::Corrupt {
            path,
            why: e.to_string(),
        })
    }

    fn stat_cache_path(&self) -> PathBuf {
        self.root().join("stat-cache")
    }

    /// The files as this store last read them (with their sizes, times and inodes), read as
    /// needed; nothing when it kept no record.
    pub(crate) fn stat_record(&self) -> crate::take::Before<'static> {
        (self.open(&self.stat_cache_path()).ok())
            .and_then(crate::record::StatRecord::new)
            .map_or(crate::take::Before::Nothing, |record| {
                crate::take::Before::Recorded(Box::new(record))
            })
    }

    /// Records the files of `snapshot` as read, for the next process's first snapshot. A
    /// record that cannot be written only costs that snapshot a full read.
    pub(crate) fn keep_record(&self, snapshot: &Snapshot, id: &str) {
        let _ = self.write_atomically_by(&self.stat_cache_path(), |file| {
            crate::record::write_record(snapshot, id, file)
        });
        // The record as stores from before kept it, now stale.
        let _ = self.remove(&self.root().join("stat-cache.json"));
    }

    /// Removes every snapshot but those in `keep` (and the snapshots they are saved as
    /// changes from), then every content none of the kept ones names; what was written less
    /// than `min_age` ago stays whatever names it (a snapshot being taken has stored contents
    /// its file does not name yet).
    pub fn prune(
        &self,
        keep: &HashSet<String>,
        min_age: std::time::Duration,
    ) -> Result<Pruned, CheckpointError> {
        let young = |meta: &std::fs::Metadata| {
            meta.modified()
                .is_ok_and(|t| t.elapsed().unwrap_or_default() < min_age)
        };
        let mut pruned = Pruned::default();
        let mut named = HashSet::new();
        // The record lists a snapshot: kept, so that every content the record names stays
        // too. One that names none (from before) could name any content: it goes first, so
        // that a prune cut short never leaves it naming a content removed.
        let mut keep = keep.clone();
        let recorded = self.based_on(&self.stat_cache_path()).flatten();
        match recorded.filter(|id| self.open(&self.snapshot_path(id)).is_ok()) {
            Some(id) => {
                keep.insert(id);
            }
            None => self.remove(&self.stat_cache_path())?,
        }
        let keep = &keep;
        // The snapshot files kept, and every base they lead to. What is not a plain file or
        // folder (a link planted in the store) is passed over, never followed.
        let mut kept = HashSet::new();
        let files = self.read_dir(&self.root().join("snapshots"))?;
        for (id, _, meta) in &files {
            if meta.is_file() && (keep.contains(id) || young(meta)) {
                let mut at = Some(id.clone());
                while let Some(id) = at.take() {
                    if kept.insert(id.clone()) {
                        at = self.base_of(&id).flatten();
                    }
                }
            }
        }
        for (id, path, meta) in files {
            if !meta.is_file() {
                continue;
            }
            if kept.contains(&id) {
                // A superset of what it names: a snapshot of changes names its own and (kept
                // as well) its base's.
                let bytes = self.read(&path).map_err(io(&path))?;
                let entries = match format::read(&bytes) {
                    Some(Stored::Full(snapshot)) => snapshot.entries.into_values().collect(),
                    Some(Stored::Delta { changes, .. }) => {
                        changes.into_values().flatten().collect()
                    }
                    None => Vec::new(),
                };
                named.extend(entries.into_iter().filter_map(|entry| match entry {
                    Entry::File { hash, .. } => Some(hash.hex()),
                    _ => None,
                }));
            } else {
                pruned.bytes += meta.len();
                self.remove(&path)?;
                pruned.snapshots += 1;
            }
        }
        self.prune_manifests(keep, &young, &mut named, &mut pruned)?;
        for (head, folder, meta) in self.read_dir(&self.root().join("objects"))? {
            if !meta.is_dir() {
                continue;
            }
            for (tail, path, meta) in self.read_dir(&folder)? {
                if !meta.is_file() {
                    continue;
                }
                let hash = format!("{head}{tail}");
                if !named.contains(&hash) && !young(&meta) {
                    pruned.bytes += meta.len();
                    self.remove(&path)?;
                    pruned.contents += 1;
                }
            }
        }
        self.remove(&self.root().join("size"))?;
        Ok(pruned)
    }

    /// The snapshots of a store from before (`manifests/`), pruned as the new ones are.
    fn prune_manifests(
        &self,
        keep: &HashSet<String>,
        young: &dyn Fn(&std::fs::Metadata) -> bool,
        named: &mut HashSet<String>,
        pruned: &mut Pruned,
    ) -> Result<(), CheckpointError> {
        for (name, path, meta) in self.read_dir(&self.root().join("manifests"))? {
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if keep.contains(id) || young(&meta) {
                crate::tree::named_objects(self, &self.root_record(id)?, named)?;
            } else {
                pruned.bytes += meta.len();
                self.remove(&path)?;
                pruned.snapshots += 1;
            }
        }
        Ok(())
    }
}
