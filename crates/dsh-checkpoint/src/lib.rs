//! Checkpoints of a workspace: what its files were at a moment, so that they can be put back.
//!
//! A [`Snapshot`] lists every covered file, symbolic link and folder of a workspace with its
//! mode and, for a file, the SHA-256 of its content; the contents themselves go once each into
//! a content-addressed [`CheckpointStore`] outside the workspace (dsh keeps it under its home),
//! so that a hundred snapshots of a mostly unchanged tree cost little more than one. Taking a
//! snapshot reads only the files whose size, modification or change time, or inode changed
//! since the snapshot before it.
//!
//! Nothing here touches the workspace's Git state: no branch, index, stash or object of the
//! user's is read or written. What is covered is set by [`Coverage`]: files ignored by
//! `.gitignore`/`.ignore` and files over a size limit are left out (and the latter listed as
//! uncovered), `.git` is never covered.
//!
//! [`Snapshot::changes`] says what differs between two snapshots; [`CheckpointStore::restore`]
//! makes the workspace match a snapshot again, given a snapshot of it as it is now (which,
//! stored, is what undoes the restore).

mod restore;
mod snapshot;
mod store;
mod tree;

pub use restore::{RestorePlan, Restored, plan_restore};
pub use snapshot::{Change, ChangeKind, Entry, Snapshot, Uncovered};
pub use store::{CheckpointError, CheckpointStore, Coverage, Pruned};
