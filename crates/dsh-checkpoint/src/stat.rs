//! A file's metadata as a snapshot compares it: with the snapshot before, with Git's index, and
//! as the entry it becomes.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::entries::Entry;
use crate::git::Tracked;
use crate::id::BlobId;

/// A file's metadata, as far as a snapshot compares it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub size: u64,
    pub mode: u32,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

impl Stat {
    pub(crate) fn of(meta: &std::fs::Metadata) -> Stat {
        let nanos = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
        Stat {
            size: meta.len(),
            mode: meta.permissions().mode() & 0o7777,
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }

    /// Whether the Git index saw this very file (its fields as Git keeps them: seconds and
    /// nanoseconds, cut to 32 bits).
    pub(crate) fn as_tracked(&self, tracked: &Tracked) -> bool {
        let split = |ns: i64| {
            (
                ns.div_euclid(1_000_000_000) as u32,
                ns.rem_euclid(1_000_000_000) as u32,
            )
        };
        tracked.matches(
            split(self.mtime_ns),
            split(self.ctime_ns),
            self.ino as u32,
            self.size as u32,
            self.mode & 0o111 != 0,
        )
    }

    /// The entry of a file with this metadata, stored as `hash`.
    pub(crate) fn entry(&self, hash: BlobId) -> Entry {
        Entry::File {
            hash,
            size: self.size,
            mode: self.mode,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
            ino: self.ino,
        }
    }

    /// The metadata of a file's entry as the walk made it, not named yet.
    pub(crate) fn of_unnamed(entry: &Entry) -> Option<Stat> {
        match *entry {
            Entry::File {
                hash,
                size,
                mode,
                mtime_ns,
                ctime_ns,
                ino,
            } if hash == BlobId::UNNAMED => Some(Stat {
                size,
                mode,
                mtime_ns,
                ctime_ns,
                ino,
            }),
            _ => None,
        }
    }

    /// Whether `before` was taken of this file unchanged.
    pub(crate) fn same_as(&self, before: &Entry) -> Option<BlobId> {
        match before {
            Entry::File {
                hash,
                size,
                mtime_ns,
                ctime_ns,
                ino,
                ..
            } if *size == self.size
                && *mtime_ns == self.mtime_ns
                && *ctime_ns == self.ctime_ns
                && *ino == self.ino =>
            {
                Some(*hash)
            }
            _ => None,
        }
    }
}
