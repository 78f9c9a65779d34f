//! What a snapshot holds, and how two of them differ.

use serde::{Deserialize, Serialize};

use crate::entries::Entry;

/// A file left out of a snapshot (too large, unreadable, holding secrets, or past the
/// store's budget): a restore cannot bring it back, and leaves it as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uncovered {
    pub path: String,
    pub size: u64,
    /// Left out because its copy would have passed the store's budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
}

impl Uncovered {
    pub fn new(path: String, size: u64) -> Uncovered {
        Uncovered {
            path,
            size,
            over_budget: false,
        }
    }

    pub fn over_budget(path: String, size: u64) -> Uncovered {
        Uncovered {
            path,
            size,
            over_budget: true,
        }
    }
}

/// The covered state of a workspace at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub entries: crate::Entries,
    /// Files over the size limit, by path.
    pub uncovered: Vec<Uncovered>,
}

/// How one path differs between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// `A`, `M` or `D`, as a listing marks it.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
            ChangeKind::Deleted => 'D',
        }
    }
}

/// A path that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
}

impl Snapshot {
    /// The files and links that differ from `before` to `self`, by path. Folders are not
    /// listed: their files say what changed (an empty folder made by a sandbox, as dsh's
    /// `.dsh/`, would only be noise), though a restore puts them back too.
    pub fn changes(&self, before: &Snapshot) -> Vec<Change> {
        let mut changes = Vec::new();
        let shown = |entry: &Entry| !matches!(entry, Entry::Dir { .. });
        for (path, entry) in &self.entries {
            let kind = match before.entries.get(path) {
                None if shown(entry) => ChangeKind::Added,
                Some(old) if !old.same_as(entry) && !matches!(entry, Entry::Dir { .. }) => {
                    ChangeKind::Modified
                }
                _ => continue,
            };
            changes.push(Change {
                path: path.clone(),
                kind,
            });
        }
        for (path, entry) in &before.entries {
            if !self.entries.contains_key(path) && shown(entry) {
                changes.push(Change {
                    path: path.clone(),
                    kind: ChangeKind::Deleted,
                });
            }
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        changes
    }

    /// The number of files and links it covers.
    pub fn file_count(&self) -> usize {
        (self.entries.values())
            .filter(|e| !matches!(e, Entry::Dir { .. }))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn file(hash: &str, mode: u32) -> Entry {
        Entry::File {
            hash: crate::BlobId::of(hash.as_bytes()),
            size: 1,
            mode,
            mtime_ns: 0,
            ctime_ns: 0,
            ino: 0,
        }
    }

    #[test]
    fn changes_are_listed_by_path_without_folders() {
        let mut before = Snapshot::default();
        before.entries.insert("a.txt".into(), file("1", 0o644));
        before.entries.insert("gone.txt".into(), file("2", 0o644));
        before.entries.insert("run.sh".into(), file("3", 0o644));
        before
            .entries
            .insert("src".into(), Entry::Dir { mode: 0o755 });
        before.entries.insert("src/x.rs".into(), file("4", 0o644));
        let mut after = before.clone();
        after.entries.insert("a.txt".into(), file("9", 0o644));
        after.entries.remove("gone.txt");
        after.entries.insert("run.sh".into(), file("3", 0o755));
        after
            .entries
            .insert("empty".into(), Entry::Dir { mode: 0o755 });
        after
            .entries
            .insert("new".into(), Entry::Dir { mode: 0o755 });
        after.entries.insert("new/y.rs".into(), file("5", 0o644));
        after.entries.insert(
            "ln".into(),
            Entry::Symlink {
                target: "a.txt".into(),
            },
        );
        let listed: Vec<String> = after
            .changes(&before)
            .iter()
            .map(|c| format!("{} {}", c.kind.letter(), c.path))
            .collect();
        assert_eq!(
            listed,
            ["M a.txt", "D gone.txt", "A ln", "A new/y.rs", "M run.sh"]
        );
        assert_eq!(after.file_count(), 5);
    }
}
