//! A snapshot's entries: what one path holds ([`Entry`]), and one sorted array of paths and
//! what is at each, as Git's index keeps them. A workspace of 50,000 files is taken, stored and
//! compared in path order; a tree map would hold the same entries in half-full nodes, twice the
//! memory, for lookups that come in order anyway.

use serde::{Deserialize, Serialize};

/// One covered thing of the workspace, by its path relative to the workspace (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    File {
        /// The content's Git blob id: its name in the store (and in Git's, where Git holds it).
        hash: crate::BlobId,
        size: u64,
        /// The permission bits (`0o644`, `0o755`).
        mode: u32,
        /// For the next snapshot's shortcut only: a file whose size, modification time and
        /// inode are unchanged is not read again.
        #[serde(default)]
        mtime_ns: i64,
        /// The inode's change time: a command that rewrites a file and puts its old
        /// modification time back (`touch -r`, `rsync -t`) still changes it.
        #[serde(default)]
        ctime_ns: i64,
        #[serde(default)]
        ino: u64,
    },
    Symlink {
        target: String,
    },
    Dir {
        mode: u32,
    },
}

impl Entry {
    /// Whether `other` is the same thing with the same content and mode (the shortcut's
    /// stat fields aside).
    pub fn same_as(&self, other: &Entry) -> bool {
        match (self, other) {
            (
                Entry::File {
                    hash: a, mode: ma, ..
                },
                Entry::File {
                    hash: b, mode: mb, ..
                },
            ) => a == b && ma == mb,
            (Entry::Symlink { target: a }, Entry::Symlink { target: b }) => a == b,
            (Entry::Dir { mode: a }, Entry::Dir { mode: b }) => a == b,
            _ => false,
        }
    }
}

/// Entries by path (`/`-separated, relative to the workspace), in byte order of their paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    sorted: Vec<(String, Entry)>,
}

/// Past this many insertions at once, they are appended and the whole sorted again, rather
/// than each moving every entry after it.
const INSERT_ONE_BY_ONE: usize = 64;

impl Entries {
    /// Entries already in path order with no path twice (as a walk's sorted output is).
    pub(crate) fn from_sorted(sorted: Vec<(String, Entry)>) -> Entries {
        debug_assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        Entries { sorted }
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.sorted
            .binary_search_by(|(path, _)| path.as_str().cmp(key))
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.find(key).ok().map(|at| &self.sorted[at].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key`'s entry; the one it had, if any. Adding past the last path (the order a
    /// walk or a stored snapshot gives) moves nothing.
    pub fn insert(&mut self, key: String, entry: Entry) -> Option<Entry> {
        if self.sorted.last().is_none_or(|(last, _)| *last < key) {
            self.sorted.push((key, entry));
            return None;
        }
        match self.find(&key) {
            Ok(at) => Some(std::mem::replace(&mut self.sorted[at].1, entry)),
            Err(at) => {
                self.sorted.insert(at, (key, entry));
                None
            }
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Entry> {
        self.find(key).ok().map(|at| self.sorted.remove(at).1)
    }

    /// Applies `changes` (a path's new entry, or `None` where it is gone) in one pass over
    /// the entries, however many there are: a branch switch changes thousands.
    pub(crate) fn apply(&mut self, changes: impl IntoIterator<Item = (String, Option<Entry>)>) {
        let mut gone: Vec<String> = Vec::new();
        let mut added: Vec<(String, Entry)> = Vec::new();
        for (key, entry) in changes {
            match (entry, self.find(&key)) {
                (Some(entry), Ok(at)) => self.sorted[at].1 = entry,
                (Some(entry), Err(_)) => added.push((key, entry)),
                (None, Ok(_)) => gone.push(key),
                (None, Err(_)) => {}
            }
        }
        self.remove_all(gone);
        self.add_all(added);
    }

    /// Removes the entries of `keys` (none of which need be there), in one pass.
    pub(crate) fn remove_all(&mut self, mut keys: Vec<String>) {
        if keys.is_empty() {
            return;
        }
        keys.sort_unstable();
        let mut next = keys.iter().peekable();
        self.sorted.retain(|(path, _)| {
            while next.next_if(|key| key.as_str() < path.as_str()).is_some() {}
            next.next_if(|key| *key == path).is_none()
        });
    }

    /// Keeps only the entries `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str, &Entry) -> bool) {
        self.sorted.retain(|(path, entry)| keep(path, entry));
    }

    /// Adds entries whose paths are not here yet.
    fn add_all(&mut self, mut added: Vec<(String, Entry)>) {
        if added.len() <= INSERT_ONE_BY_ONE {
            for (key, entry) in added {
                self.insert(key, entry);
            }
            return;
        }
        added.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let in_order = (self.sorted.last().zip(added.first())).is_none_or(|(a, b)| a.0 < b.0);
        self.sorted.append(&mut added);
        if !in_order {
            // Sorting in place takes no second copy of the entries, as a merge would.
            self.sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.sorted.iter().map(|(path, entry)| (path, entry))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.sorted.iter().map(|(path, _)| path)
    }

    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.sorted.iter().map(|(_, entry)| entry)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Entry> {
        self.sorted.iter_mut().map(|(_, entry)| entry)
    }

    pub fn into_values(self) -> impl Iterator<Item = Entry> {
        self.sorted.into_iter().map(|(_, entry)| entry)
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = (&'a String, &'a Entry);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, Entry)>,
        fn(&'a (String, Entry)) -> (&'a String, &'a Entry),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.sorted.iter().map(|(path, entry)| (path, entry))
    }
}

impl FromIterator<(String, Entry)> for Entries {
    /// In any order; where a path comes twice, the last entry stands.
    fn from_iter<I: IntoIterator<Item = (String, Entry)>>(items: I) -> Entries {
        let mut sorted: Vec<(String, Entry)> = items.into_iter().collect();
        // Stable, so that of a path's entries the last is last.
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(String, Entry)> = Vec::with_capacity(sorted.len());
        for item in sorted {
            match deduped.last_mut() {
                Some(last) if last.0 == item.0 => *last = item,
                _ => deduped.push(item),
            }
        }
        Entries { sorted: deduped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn dir(mode: u32) -> Entry {
        Entry::Dir { mode }
    }

    fn paths(entries: &Entries) -> Vec<String> {
        entries
            .iter()
            .map(|(p, e)| match e {
                Entry::Dir { mode } => format!("{p}:{mode:o}"),
                _ => p.clone(),
            })
            .collect()
    }

    #[test]
    fn lookups_inserts_and_removals_keep_path_order() {
        let mut entries = Entries::default();
        for key in ["b", "d", "a", "c/x", "c", "c.txt"] {
            assert_eq!(entries.insert(key.into(), dir(0o700)), None);
        }
        assert_eq!(entries.insert("d".into(), dir(0o755)), Some(dir(0o700)));
        assert_eq!(entries.remove("b"), Some(dir(0o700)));
        assert_eq!(entries.remove("b"), None);
        assert_eq!(entries.get("c/x"), Some(&dir(0o700)));
        assert!(!entries.contains_key("c/"));
        // Byte order, as every stored snapshot and record is written in: `.` before `/`.
        assert_eq!(
            paths(&entries),
            ["a:700", "c:700", "c.txt:700", "c/x:700", "d:755"]
        );
    }

    #[test]
    fn many_changes_apply_in_one_pass_as_one_by_one() {
        let start: Entries = (0..1000)
            .map(|i| (format!("f{i:04}"), dir(0o700)))
            .collect();
        // Every third changed, every fifth gone, a hundred new ones in between and after,
        // and a removal of what is not there.
        let mut changes: Vec<(String, Option<Entry>)> = Vec::new();
        for i in 0..1000 {
            if i % 5 == 0 {
                changes.push((format!("f{i:04}"), None));
            } else if i % 3 == 0 {
                changes.push((format!("f{i:04}"), Some(dir(0o755))));
            }
        }
        changes.extend((0..100).map(|i| (format!("f{:04}a", i * 7), Some(dir(0o711)))));
        changes.extend((0..100).map(|i| (format!("g{i}"), Some(dir(0o711)))));
        changes.push(("nothing".into(), None));
        let mut each = start.clone();
        for (key, entry) in changes.clone() {
            match entry {
                Some(entry) => each.insert(key, entry),
                None => each.remove(&key),
            };
        }
        let mut once = start;
        once.apply(changes);
        assert_eq!(paths(&once), paths(&each));
        assert_eq!(once.len(), 1000 - 200 + 200);
        assert!(once.keys().zip(once.keys().skip(1)).all(|(a, b)| a < b));
    }

    #[test]
    fn collected_entries_keep_the_last_of_a_path() {
        let entries: Entries = [("b", 0o700), ("a", 0o700), ("b", 0o755)]
            .into_iter()
            .map(|(p, m)| (p.to_owned(), dir(m)))
            .collect();
        assert_eq!(paths(&entries), ["a:700", "b:755"]);
    }
}
