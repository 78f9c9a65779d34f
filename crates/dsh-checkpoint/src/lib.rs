//! Checkpoints of a workspace: what its files were at a moment, so that they can be put back.
//!
//! A [`Snapshot`] lists every covered file, symbolic link and folder of a workspace, in path
//! order ([`Entries`]), with its mode and, for a file, its content's Git blob id; the contents
//! themselves go once each into a content-addressed [`CheckpointStore`] outside the workspace
//! (dsh keeps it under its home), so that a hundred snapshots of a mostly unchanged tree cost
//! little more than one. In a Git repository, what Git already holds is borrowed from its
//! objects, not copied. Taking a snapshot reads only the files whose size, modification or
//! change time, or inode changed since the snapshot before it (or since Git's index saw them);
//! a [`Watch`] lets the next one look only where something changed.
//!
//! Nothing here writes the workspace's Git state: the index and objects are only read, and no
//! branch, stash or object of the user's is made. What is covered is set by [`Coverage`]:
//! files ignored by `.gitignore`/`.ignore` and files over a size limit are left out (and the
//! latter listed as uncovered), `.git` is never covered.
//!
//! [`Snapshot::changes`] says what differs between two snapshots; [`CheckpointStore::restore`]
//! makes the workspace match a snapshot again, given a snapshot of it as it is now (which,
//! stored, is what undoes the restore).

mod delta;
mod entries;
mod format;
mod git;
mod id;
mod naming;
mod record;
mod restore;
mod saved;
mod snapshot;
mod stat;
mod store;
mod take;
mod tree;
mod walk;
mod watch;
mod window;

pub use delta::Taken;
pub use entries::{Entries, Entry};
pub use id::BlobId;
pub use restore::{RestorePlan, Restored, plan_restore};
pub use snapshot::{Change, ChangeKind, Snapshot, Uncovered};
pub use store::{CheckpointError, CheckpointStore, Coverage, Pruned, still_at_its_path};
pub use watch::Watch;
