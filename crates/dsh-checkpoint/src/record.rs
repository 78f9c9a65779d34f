//! The store's record of the snapshot it last walked whole: every entry of it, a file's with
//! its size, times and inode, under the id the snapshot was saved as. The next process reads
//! it forward beside its own walk, in path order: a file whose metadata it records unchanged
//! is not read again, and what differs from it is all that process's first snapshot keeps (as
//! the changes from that id), rather than the whole tree again.

use std::collections::BTreeSet;

use crate::entries::Entry;
use crate::format::{RAW, Reader, STAT_CACHE, Writer, decompress, head, seal_as};
use crate::snapshot::Snapshot;

/// The record of `snapshot`, saved as `id`.
#[cfg(test)]
pub(crate) fn record(snapshot: &Snapshot, id: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = write_record(snapshot, id, &mut bytes);
    bytes
}

/// Writes the record of `snapshot`, saved as `id`, to `sink` a window at a time: the record
/// of 50,000 files is megabytes, never held whole.
pub(crate) fn write_record(
    snapshot: &Snapshot,
    id: &str,
    sink: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    // Not compressed: its times, inodes and ids are most of it and do not compress (a quarter
    // saved, for as long again as the rest of a snapshot takes).
    sink.write_all(&seal_as(STAT_CACHE, Some(id), Vec::new(), false))?;
    let mut out = Writer::default();
    out.varint(snapshot.entries.len() as u64);
    for (path, entry) in &snapshot.entries {
        out.path(path);
        out.entry(Some(entry), true);
        if out.bytes.len() >= 64 * 1024 {
            sink.write_all(&out.bytes)?;
            out.bytes.clear();
        }
    }
    sink.write_all(&out.bytes)
}

/// A record read back as needed from its file, a window at a time (the record of 50,000
/// files is megabytes): each entry is found by a walk forward through it, so the lookups must
/// come in path order (as a snapshot's resolution makes them). What it holds that no lookup
/// asked for is noted as gone, so that once every path now there was asked for, it knows how
/// the tree differs from the snapshot it records.
pub(crate) struct StatRecord {
    source: crate::window::Window,
    left: u64,
    previous: String,
    last: String,
    /// The entry read last and not yet passed.
    pending: Option<(String, Entry)>,
    count: usize,
    /// The id of the snapshot it records (a record from before had none).
    snapshot: Option<String>,
    /// The paths that differ from that snapshot, as far as the lookups went.
    differ: BTreeSet<String>,
    /// Something could not be read (a damaged record, a failing source, paths out of order):
    /// what it holds past that is not known, so it says nothing of what differs.
    broken: bool,
}

/// How much is kept ahead of the entry being read: more than one entry takes (a path is at
/// most 4,096 bytes on Linux; an entry adds less than a hundred). An entry longer than this
/// (a damaged record) ends the record.
const AHEAD: usize = 8 << 10;

impl StatRecord {
    /// The record `source` holds; `None` for one that is not a record.
    pub(crate) fn new(source: impl std::io::Read + Send + 'static) -> Option<StatRecord> {
        let mut source = crate::window::Window::new(source);
        let (kind, snapshot, body) = head(source.ahead(7 + 255))?;
        source.advance(body);
        if kind == STAT_CACHE {
            // Compressed, as an earlier dsh kept it: read whole, once.
            let body = decompress(&source.rest()?)?;
            source = crate::window::Window::new(std::io::Cursor::new(body));
        } else if kind != STAT_CACHE | RAW {
            return None;
        }
        let mut input = Reader::new(source.ahead(16));
        let left = input.varint()?;
        let used = input.at;
        source.advance(used);
        Some(StatRecord {
            source,
            left,
            previous: String::new(),
            last: String::new(),
            pending: None,
            count: usize::try_from(left).unwrap_or(usize::MAX),
            // An id is hex digits (a damaged head names no snapshot, nor any other file).
            snapshot: snapshot.filter(|id| id.bytes().all(|b| b.is_ascii_hexdigit())),
            differ: BTreeSet::new(),
            broken: false,
        })
    }

    /// How many entries it records.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The entry recorded for `key`, if any; every path before it that was not asked for is
    /// noted as gone.
    pub(crate) fn find(&mut self, key: &str) -> Option<Entry> {
        loop {
            if let Some((path, _)) = &self.pending {
                match path.as_str().cmp(key) {
                    std::cmp::Ordering::Less => {
                        if let Some((path, _)) = self.pending.take() {
                            self.differ.insert(path);
                        }
                    }
                    std::cmp::Ordering::Equal => return self.pending.take().map(|(_, e)| e),
                    std::cmp::Ordering::Greater => return None,
                }
            }
            self.pending = self.next_entry();
            self.pending.as_ref()?;
        }
    }

    fn next_entry(&mut self) -> Option<(String, Entry)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The path before, kept to check the order (its buffer reused, not made anew).
        self.last.clone_from(&self.previous);
        let mut input = Reader {
            bytes: self.source.ahead(AHEAD),
            at: 0,
            previous: std::mem::take(&mut self.previous),
        };
        let read = input.path().zip(input.entry(true).flatten());
        let used = input.at;
        self.previous = input.previous;
        self.source.advance(used);
        // Paths come in strictly rising order, or the record is not one this can follow.
        let in_order = |path: &String| self.last.is_empty() || *path > self.last;
        if !read.as_ref().is_some_and(|(path, _)| in_order(path)) {
            self.left = 0;
            self.broken = true;
            return None;
        }
        read
    }

    /// Notes `key` as differing from the recorded snapshot.
    pub(crate) fn differs(&mut self, key: &str) {
        self.differ.insert(key.to_owned());
    }

    /// Once every path now there was asked for: the recorded snapshot's id and the paths
    /// that differ from it, unless the record could not be read whole.
    pub(crate) fn finish(mut self) -> Option<(String, BTreeSet<String>)> {
        while let Some((path, _)) = self.pending.take().or_else(|| self.next_entry()) {
            self.differ.insert(path);
        }
        if self.broken || self.source.failed() {
            return None;
        }
        Some((self.snapshot?, self.differ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A source that gives a few bytes a read, as a pipe might.
    struct Trickle(std::io::Cursor<Vec<u8>>);

    impl std::io::Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(7);
            self.0.read(&mut buf[..n])
        }
    }

    fn file(i: u64) -> Entry {
        Entry::File {
            hash: crate::BlobId::of(&i.to_le_bytes()),
            size: i,
            mode: 0o644,
            mtime_ns: i as i64,
            ctime_ns: 1,
            ino: i,
        }
    }

    fn opened(bytes: Vec<u8>) -> StatRecord {
        StatRecord::new(Trickle(std::io::Cursor::new(bytes))).unwrap()
    }

    #[test]
    fn a_record_many_windows_long_is_read_as_asked_and_says_what_differs() {
        let mut snapshot = Snapshot::default();
        // Long paths sharing little, so that the record is several windows long.
        let path = |i: u64| {
            let id = crate::BlobId::of(&i.to_le_bytes()).hex();
            format!("d{}/{}", i % 10, id.repeat(5))
        };
        for i in 0..3000 {
            snapshot.entries.insert(path(i), file(i));
        }
        snapshot
            .entries
            .insert("d1".into(), Entry::Dir { mode: 0o755 });
        let bytes = record(&snapshot, "5ab1");
        assert!(bytes.len() > 4 * (64 << 10), "{} bytes", bytes.len());
        let mut read = opened(bytes.clone());
        assert_eq!(read.len(), 3001);
        // Every other entry asked for, in order, and a path between each that is not there.
        let keys: Vec<&String> = snapshot.entries.keys().collect();
        for (n, key) in keys.iter().enumerate().step_by(2) {
            assert_eq!(read.find(key).as_ref(), snapshot.entries.get(key), "{n}");
            assert_eq!(read.find(&format!("{key}\u{1}")), None);
        }
        read.differs(keys[0]);
        let (id, differ) = read.finish().unwrap();
        assert_eq!(id, "5ab1");
        // The paths never asked for (gone, as far as the record knows) and the one noted.
        let expected: BTreeSet<String> = (keys.iter().skip(1).step_by(2))
            .chain([&keys[0]])
            .map(ToString::to_string)
            .collect();
        assert_eq!(differ, expected);
        // Damaged past its start: it cannot say what differs.
        let mut torn = opened(bytes[..bytes.len() / 2].to_vec());
        assert_eq!(torn.find(keys[0]).as_ref(), snapshot.entries.get(keys[0]));
        assert!(torn.finish().is_none());
    }

    #[test]
    fn a_record_from_before_is_read_but_names_no_snapshot() {
        let mut out = Writer::default();
        out.varint(1);
        out.path("a");
        out.entry(Some(&file(1)), true);
        // Compressed and with no id, as an earlier dsh kept it.
        let old = crate::format::seal(STAT_CACHE, None, out.bytes);
        let mut read = opened(old);
        assert_eq!(read.find("a"), Some(file(1)));
        assert_eq!(read.finish(), None);
        assert!(StatRecord::new(std::io::Cursor::new(b"DSHS".to_vec())).is_none());
    }
}
