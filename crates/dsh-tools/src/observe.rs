//! The observation map: which version of each file this session last saw.
//!
//! A mutation is allowed only against the version the session observed: `write` of a file the
//! session never saw may only create it, `write` of a seen file only replaces that version, and
//! `edit` needs a prior observation. A file's version is its identity and its metadata
//! (`dev:ino:size:mtime_ns:ctime_ns`), so any change by anyone else (an editor, `git checkout`,
//! a shell command, even `touch` or `chmod`) makes the observation stale.

use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file's version token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(String);

impl Version {
    /// The version of a file from its (symlink-following) metadata.
    pub fn of(meta: &Metadata) -> Version {
        let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
        Version(format!(
            "{}:{}:{}:{mtime}:{ctime}",
            meta.dev(),
            meta.ino(),
            meta.size()
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What the session last saw at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observation {
    Present(Version),
    Absent,
}

/// Observations of one session, keyed by real path. In memory only: a resumed session starts
/// with none, so its first mutation of an existing file needs a read.
#[derive(Debug, Default)]
pub struct ObservationMap {
    seen: Mutex<HashMap<PathBuf, Observation>>,
}

impl ObservationMap {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, key: &Path) -> Option<Observation> {
        self.lock().get(key).cloned()
    }

    pub fn present(&self, key: &Path, version: Version) {
        self.lock()
            .insert(key.to_path_buf(), Observation::Present(version));
    }

    pub fn absent(&self, key: &Path) {
        self.lock().insert(key.to_path_buf(), Observation::Absent);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Observation>> {
        // A panic while holding the lock cannot leave the map inconsistent: every update is a
        // single insert.
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_same_size_rewrite_with_another_mtime_is_a_new_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "abc").unwrap();
        let before = Version::of(&std::fs::metadata(&path).unwrap());
        std::fs::write(&path, "xyz").unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
            .unwrap();
        let after = Version::of(&std::fs::metadata(&path).unwrap());
        assert_ne!(before, after);
        let map = ObservationMap::new();
        map.present(&path, before.clone());
        assert_eq!(map.get(&path), Some(Observation::Present(before)));
        map.absent(&path);
        assert_eq!(map.get(&path), Some(Observation::Absent));
    }
}
