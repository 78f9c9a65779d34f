//! How snapshots and the record of read files are kept on disk: compact and compressed, so
//! that the first checkpoint of a 50,000-file repository adds a few MB, not one small file per
//! folder (each a whole disk block), and a later one adds what changed.
//!
//! A snapshot file is either whole (`full`) or the changes from another snapshot (`delta`,
//! naming its base), zstd-compressed; paths are sorted and each shares a prefix with the one
//! before, as Git's index version 4 keeps them. The record of read files (the stat cache) is
//! one such list of files with their sizes, times and inodes.

use std::collections::BTreeMap;

use crate::entries::Entry;
use crate::snapshot::{Snapshot, Uncovered};

const MAGIC: &[u8; 4] = b"DSHS";
const VERSION: u8 = 2;
const FULL: u8 = 0;
const DELTA: u8 = 1;
pub(crate) const STAT_CACHE: u8 = 2;
/// Set in the kind byte when the body is not compressed.
pub(crate) const RAW: u8 = 0x80;

const REMOVED: u8 = 0;
const DIR: u8 = 1;
const FILE: u8 = 2;
const LINK: u8 = 3;

/// A snapshot as stored: whole, or changes from `base`.
pub(crate) enum Stored {
    Full(Snapshot),
    Delta {
        base: String,
        /// What differs from the base: an entry set, or `None` where it was removed.
        changes: BTreeMap<String, Option<Entry>>,
        uncovered: Vec<Uncovered>,
    },
}

/// The bytes that name a snapshot's state: every entry (without the times and inodes that
/// only save reads) and what was left out, in order. The same state gives the same bytes.
#[cfg(test)]
pub(crate) fn canonical(snapshot: &Snapshot) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ = std::io::Read::read_to_end(&mut Canonical::new(snapshot), &mut bytes);
    bytes
}

/// A snapshot's [`canonical`] bytes, made a window at a time as they are read: a 50,000-file
/// snapshot's are megabytes, and naming it or keeping it whole reads them once each.
pub(crate) struct Canonical<'a> {
    entries: <&'a crate::Entries as IntoIterator>::IntoIter,
    out: Writer,
    read: usize,
}

/// How many bytes of entries [`Canonical`] makes at once.
const WINDOW: usize = 64 * 1024;

impl<'a> Canonical<'a> {
    pub(crate) fn new(snapshot: &'a Snapshot) -> Canonical<'a> {
        let mut out = Writer::default();
        out.uncovered(&snapshot.uncovered);
        out.varint(snapshot.entries.len() as u64);
        Canonical {
            entries: snapshot.entries.into_iter(),
            out,
            read: 0,
        }
    }
}

impl std::io::Read for Canonical<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.read == self.out.bytes.len() {
            // The path before stays in the writer: the next one is written as what differs.
            self.out.bytes.clear();
            self.read = 0;
            while self.out.bytes.len() < WINDOW {
                let Some((path, entry)) = self.entries.next() else {
                    break;
                };
                self.out.path(path);
                self.out.entry(Some(entry), false);
            }
        }
        let unread = self.out.bytes.get(self.read..).unwrap_or_default();
        let length = unread.len().min(buf.len());
        buf.get_mut(..length)
            .unwrap_or_default()
            .copy_from_slice(unread.get(..length).unwrap_or_default());
        self.read += length;
        Ok(length)
    }
}

/// A snapshot's id: the SHA-256 of its [`canonical`] bytes, in hex.
pub(crate) fn id_of(snapshot: &Snapshot) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    // Neither side of the copy can fail: the bytes are made in memory and hashed there.
    let _ = std::io::copy(&mut Canonical::new(snapshot), &mut hasher);
    crate::id::hex(&hasher.finalize())
}

/// A whole snapshot's file.
pub(crate) fn full(snapshot: &Snapshot) -> Vec<u8> {
    let mut out = sealed_head(FULL, None, true);
    compress_into(Canonical::new(snapshot), &mut out);
    out
}

/// A snapshot's file as the changes from `base` (whose id is `base_id`).
pub(crate) fn delta(snapshot: &Snapshot, base: &Snapshot, base_id: &str) -> Vec<u8> {
    let changes = differences(snapshot, base);
    let mut out = Writer::default();
    out.uncovered(&snapshot.uncovered);
    out.varint(changes.len() as u64);
    for (path, entry) in changes {
        out.path(path);
        out.entry(entry, false);
    }
    seal(DELTA, Some(base_id), out.bytes)
}

/// A snapshot's file as what `keys` are in it now (an entry, or removed), the changes from
/// `base_id` a watch saw; and the body those changes are named by.
pub(crate) fn delta_of(
    snapshot: &Snapshot,
    keys: &std::collections::BTreeSet<String>,
    base_id: &str,
) -> (Vec<u8>, Vec<u8>) {
    let mut out = Writer::default();
    out.uncovered(&snapshot.uncovered);
    out.varint(keys.len() as u64);
    for key in keys {
        out.path(key);
        out.entry(snapshot.entries.get(key), false);
    }
    let named = [base_id.as_bytes(), &out.bytes].concat();
    (seal(DELTA, Some(base_id), out.bytes), named)
}

/// How many entries `snapshot` would store as changes from `base`.
pub(crate) fn difference_count(snapshot: &Snapshot, base: &Snapshot) -> usize {
    differences(snapshot, base).len()
}

/// The entries that differ from `base` (the times and inodes aside), in path order.
fn differences<'a>(
    snapshot: &'a Snapshot,
    base: &'a Snapshot,
) -> Vec<(&'a String, Option<&'a Entry>)> {
    let mut changes = Vec::new();
    for (path, entry) in &snapshot.entries {
        if !base.entries.get(path).is_some_and(|b| b.same_as(entry)) {
            changes.push((path, Some(entry)));
        }
    }
    for path in base.entries.keys() {
        if !snapshot.entries.contains_key(path) {
            changes.push((path, None));
        }
    }
    changes.sort_by(|a, b| a.0.cmp(b.0));
    changes
}

/// A snapshot file read back; `None` for bytes that are not one (a torn or foreign file).
pub(crate) fn read(bytes: &[u8]) -> Option<Stored> {
    let (kind, base, body) = unseal(bytes)?;
    let mut input = Reader::new(&body);
    let uncovered = input.uncovered()?;
    let count = input.varint()?;
    match kind {
        FULL => {
            let mut snapshot = Snapshot {
                entries: Default::default(),
                uncovered,
            };
            for _ in 0..count {
                let path = input.path()?;
                let entry = input.entry(false)??;
                snapshot.entries.insert(path, entry);
            }
            Some(Stored::Full(snapshot))
        }
        DELTA => {
            let mut changes = BTreeMap::new();
            for _ in 0..count {
                let path = input.path()?;
                changes.insert(path, input.entry(false)?);
            }
            Some(Stored::Delta {
                base: base?,
                changes,
                uncovered,
            })
        }
        _ => None,
    }
}

/// Head and compressed body.
pub(crate) fn seal(kind: u8, base: Option<&str>, body: Vec<u8>) -> Vec<u8> {
    seal_as(kind, base, body, true)
}

/// Head and body, compressed or not (the head says which).
pub(crate) fn seal_as(kind: u8, base: Option<&str>, body: Vec<u8>, compress: bool) -> Vec<u8> {
    let mut out = sealed_head(kind, base, compress);
    if compress {
        compress_into(body.as_slice(), &mut out);
    } else {
        out.extend(body);
    }
    out
}

fn sealed_head(kind: u8, base: Option<&str>, compress: bool) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.push(VERSION);
    out.push(kind | if compress { 0 } else { RAW });
    let base = base.unwrap_or_default().as_bytes();
    out.push(base.len() as u8);
    out.extend_from_slice(base);
    out
}

/// Compresses what `source` reads onto the end of `out`: straight into the file's bytes, so a
/// large body is never held whole beside its compressed form. (Into memory only: the
/// compressor panics where its output fails, as a file's can.)
fn compress_into(source: impl std::io::Read, out: &mut Vec<u8>) {
    ruzstd::encoding::compress(source, out, ruzstd::encoding::CompressionLevel::Fastest);
}

/// A sealed file's kind, the snapshot it is based on, and where its body starts.
pub(crate) fn head(bytes: &[u8]) -> Option<(u8, Option<String>, usize)> {
    if bytes.get(..4)? != MAGIC || *bytes.get(4)? != VERSION {
        return None;
    }
    let kind = *bytes.get(5)?;
    let length = usize::from(*bytes.get(6)?);
    let base = std::str::from_utf8(bytes.get(7..7 + length)?).ok()?;
    let base = (!base.is_empty()).then(|| base.to_owned());
    Some((kind, base, 7 + length))
}

pub(crate) fn decompress(compressed: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    let mut decoder = ruzstd::decoding::StreamingDecoder::new(compressed).ok()?;
    std::io::Read::read_to_end(&mut decoder, &mut body).ok()?;
    Some(body)
}

fn unseal(bytes: &[u8]) -> Option<(u8, Option<String>, std::borrow::Cow<'_, [u8]>)> {
    let (kind, base, body) = head(bytes)?;
    let rest = bytes.get(body..)?;
    if kind & RAW != 0 {
        return Some((kind & !RAW, base, std::borrow::Cow::Borrowed(rest)));
    }
    Some((kind, base, std::borrow::Cow::Owned(decompress(rest)?)))
}

#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
    previous: String,
}

impl Writer {
    pub(crate) fn varint(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.bytes.push(byte);
                return;
            }
            self.bytes.push(byte | 0x80);
        }
    }

    fn text(&mut self, text: &str) {
        self.varint(text.len() as u64);
        self.bytes.extend_from_slice(text.as_bytes());
    }

    /// A path as what it shares with the path before, and the rest.
    pub(crate) fn path(&mut self, path: &str) {
        let shared = (self.previous.bytes().zip(path.bytes()))
            .take_while(|(a, b)| a == b)
            .count();
        // Cut at a character's start, so each part is text.
        let shared = (0..=shared)
            .rev()
            .find(|&i| path.is_char_boundary(i))
            .unwrap_or(0);
        self.varint(shared as u64);
        self.text(&path[shared..]);
        self.previous.clear();
        self.previous.push_str(path);
    }

    fn uncovered(&mut self, uncovered: &[Uncovered]) {
        self.varint(uncovered.len() as u64);
        for item in uncovered {
            self.text(&item.path);
            self.varint(item.size);
            self.bytes.push(u8::from(item.over_budget));
        }
    }

    pub(crate) fn entry(&mut self, entry: Option<&Entry>, with_stat: bool) {
        match entry {
            None => self.bytes.push(REMOVED),
            Some(Entry::Dir { mode }) => {
                self.bytes.push(DIR);
                self.varint(u64::from(*mode));
            }
            Some(Entry::Symlink { target }) => {
                self.bytes.push(LINK);
                self.text(target);
            }
            Some(Entry::File {
                hash,
                size,
                mode,
                mtime_ns,
                ctime_ns,
                ino,
            }) => {
                self.bytes.push(FILE);
                self.varint(u64::from(*mode));
                self.bytes.extend_from_slice(hash.as_bytes());
                self.varint(*size);
                if with_stat {
                    self.bytes.extend_from_slice(&mtime_ns.to_le_bytes());
                    self.bytes.extend_from_slice(&ctime_ns.to_le_bytes());
                    self.varint(*ino);
                }
            }
        }
    }
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
    pub(crate) previous: String,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader {
            bytes,
            at: 0,
            previous: String::new(),
        }
    }

    fn byte(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(byte)
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    fn text(&mut self) -> Option<String> {
        let length = usize::try_from(self.varint()?).ok()?;
        let bytes = self.bytes.get(self.at..self.at.checked_add(length)?)?;
        self.at += length;
        String::from_utf8(bytes.to_vec()).ok()
    }

    pub(crate) fn path(&mut self) -> Option<String> {
        let shared = usize::try_from(self.varint()?).ok()?;
        let rest = self.text()?;
        let mut path = self.previous.get(..shared)?.to_owned();
        path.push_str(&rest);
        self.previous.clone_from(&path);
        Some(path)
    }

    fn i64(&mut self) -> Option<i64> {
        let bytes = self.bytes.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(i64::from_le_bytes(bytes.try_into().ok()?))
    }

    fn uncovered(&mut self) -> Option<Vec<Uncovered>> {
        let count = self.varint()?;
        let mut out = Vec::new();
        for _ in 0..count {
            let path = self.text()?;
            let size = self.varint()?;
            let over_budget = self.byte()? != 0;
            out.push(Uncovered {
                path,
                size,
                over_budget,
            });
        }
        Some(out)
    }

    /// An entry, or `Some(None)` for a removed one.
    pub(crate) fn entry(&mut self, with_stat: bool) -> Option<Option<Entry>> {
        let mode = |r: &mut Self| u32::try_from(r.varint()?).ok();
        Some(match self.byte()? {
            REMOVED => None,
            DIR => Some(Entry::Dir { mode: mode(self)? }),
            LINK => Some(Entry::Symlink {
                target: self.text()?,
            }),
            FILE => {
                let mode = mode(self)?;
                let hash = crate::BlobId::from_bytes(self.bytes.get(self.at..self.at + 20)?)?;
                self.at += 20;
                let size = self.varint()?;
                let (mtime_ns, ctime_ns, ino) = if with_stat {
                    (self.i64()?, self.i64()?, self.varint()?)
                } else {
                    (0, 0, 0)
                };
                Some(Entry::File {
                    hash,
                    size,
                    mode,
                    mtime_ns,
                    ctime_ns,
                    ino,
                })
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn sample() -> Snapshot {
        let mut snapshot = Snapshot::default();
        snapshot
            .entries
            .insert("src".into(), Entry::Dir { mode: 0o755 });
        for (path, hash) in [("src/a.rs", "aa"), ("src/ab.rs", "bb"), ("src/é.rs", "cc")] {
            snapshot.entries.insert(
                path.into(),
                Entry::File {
                    hash: crate::BlobId::of(hash.as_bytes()),
                    size: 3,
                    mode: 0o644,
                    mtime_ns: 7,
                    ctime_ns: 8,
                    ino: 9,
                },
            );
        }
        snapshot.entries.insert(
            "ln".into(),
            Entry::Symlink {
                target: "src/a.rs".into(),
            },
        );
        snapshot
            .uncovered
            .push(Uncovered::over_budget("big".into(), 10));
        snapshot
    }

    fn without_stat(mut snapshot: Snapshot) -> Snapshot {
        for entry in snapshot.entries.values_mut() {
            if let Entry::File {
                mtime_ns,
                ctime_ns,
                ino,
                ..
            } = entry
            {
                (*mtime_ns, *ctime_ns, *ino) = (0, 0, 0);
            }
        }
        snapshot
    }

    #[test]
    fn whole_snapshots_deltas_and_the_record_read_back_as_written() {
        let base = sample();
        let Some(Stored::Full(whole)) = read(&full(&base)) else {
            panic!("not whole");
        };
        assert_eq!(whole, without_stat(base.clone()));
        // The record is read as asked, in order: what it does not hold is not found.
        let bytes = crate::record::record(&base, "id0");
        let mut record = crate::record::StatRecord::new(std::io::Cursor::new(bytes)).unwrap();
        assert_eq!(
            record.find("src/a.rs").as_ref(),
            base.entries.get("src/a.rs")
        );
        assert_eq!(record.find("src/aa.rs"), None);
        assert_eq!(
            record.find("src/é.rs").as_ref(),
            base.entries.get("src/é.rs")
        );
        assert_eq!(record.find("zz"), None);
        let mut next = base.clone();
        next.entries.remove("src/ab.rs");
        next.entries
            .insert("new".into(), Entry::Dir { mode: 0o700 });
        let Some(Stored::Delta {
            base: named,
            changes,
            ..
        }) = read(&delta(&next, &base, "id1"))
        else {
            panic!("not a delta");
        };
        assert_eq!(named, "id1");
        assert_eq!(
            changes,
            BTreeMap::from([
                ("new".to_owned(), Some(Entry::Dir { mode: 0o700 })),
                ("src/ab.rs".to_owned(), None),
            ])
        );
        assert_eq!(canonical(&base), canonical(&without_stat(base.clone())));
        assert!(read(b"DSHS\x01\x00\x00garbage").is_none());
        assert!(read(b"").is_none());
    }

    #[test]
    fn a_snapshot_of_many_windows_is_named_and_kept_as_its_bytes_made_at_once() {
        let mut snapshot = sample();
        for i in 0..20_000 {
            snapshot.entries.insert(
                format!("deep/folder/{}/file-{i}.txt", i % 97),
                Entry::Dir { mode: 0o755 },
            );
        }
        // The bytes as one writer makes them in one go.
        let mut whole = Writer::default();
        whole.uncovered(&snapshot.uncovered);
        whole.varint(snapshot.entries.len() as u64);
        for (path, entry) in &snapshot.entries {
            whole.path(path);
            whole.entry(Some(entry), false);
        }
        assert!(whole.bytes.len() > 3 * WINDOW, "{}", whole.bytes.len());
        // Read seven bytes at a time, across every window's edge.
        let (mut reader, mut got, mut bytes) = (Canonical::new(&snapshot), Vec::new(), [0; 7]);
        loop {
            let n = std::io::Read::read(&mut reader, &mut bytes).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&bytes[..n]);
        }
        assert_eq!(got, whole.bytes);
        use sha2::Digest;
        assert_eq!(
            id_of(&snapshot),
            crate::id::hex(&sha2::Sha256::digest(&whole.bytes))
        );
        let Some(Stored::Full(kept)) = read(&full(&snapshot)) else {
            panic!("not whole");
        };
        assert_eq!(kept, without_stat(snapshot.clone()));
        // Its record, written a window at a time, reads back entry by entry.
        let bytes = crate::record::record(&snapshot, "id2");
        let mut record = crate::record::StatRecord::new(std::io::Cursor::new(bytes)).unwrap();
        for (path, entry) in &snapshot.entries {
            assert_eq!(record.find(path).as_ref(), Some(entry), "{path}");
        }
    }
}
