//! How a store from before kept a snapshot, read back: one object per folder (its entries, each
//! subfolder by its own object's name), as Git keeps trees, and a small root record
//! (`manifests/<id>.json`: the top folder's object and what was uncovered). New snapshots are
//! kept as [`crate::format`] says.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::entries::Entry;
use crate::snapshot::{Snapshot, Uncovered};
use crate::store::{CheckpointError, CheckpointStore};

/// One entry of a folder's object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Kept {
    File { hash: String, size: u64, mode: u32 },
    Symlink { target: String },
    Dir { mode: u32, tree: String },
}

/// A folder's object: its entries by name.
type Tree = BTreeMap<String, Kept>;

/// What a snapshot id names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Root {
    tree: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    uncovered: Vec<Uncovered>,
}

fn corrupt(store: &CheckpointStore, why: impl ToString) -> CheckpointError {
    CheckpointError::Corrupt {
        path: store.root().to_path_buf(),
        why: why.to_string(),
    }
}

/// The snapshot whose root record is `root`, its folder objects read back.
pub(crate) fn load_trees(store: &CheckpointStore, root: Root) -> Result<Snapshot, CheckpointError> {
    // Folder by folder, which is not path order (`a/b` comes before `a.txt`): sorted once.
    let mut entries = Vec::new();
    let mut pending = vec![(String::new(), root.tree)];
    while let Some((folder, name)) = pending.pop() {
        let tree: Tree =
            serde_json::from_slice(&store.content_named(&name)?).map_err(|e| corrupt(store, e))?;
        for (entry_name, kept) in tree {
            if entry_name.is_empty() || entry_name.contains('/') || entry_name == ".." {
                return Err(corrupt(
                    store,
                    format!("a folder object names \"{entry_name}\""),
                ));
            }
            let path = if folder.is_empty() {
                entry_name
            } else {
                format!("{folder}/{entry_name}")
            };
            let entry = match kept {
                Kept::File { hash, size, mode } => Entry::File {
                    hash: store.current_name(hash)?,
                    size,
                    mode,
                    mtime_ns: 0,
                    ctime_ns: 0,
                    ino: 0,
                },
                Kept::Symlink { target } => Entry::Symlink { target },
                Kept::Dir { mode, tree } => {
                    pending.push((path.clone(), tree));
                    Entry::Dir { mode }
                }
            };
            entries.push((path, entry));
        }
    }
    Ok(Snapshot {
        entries: entries.into_iter().collect(),
        uncovered: root.uncovered,
    })
}

/// Every object the root record names: its folders' objects and its files' contents.
pub(crate) fn named_objects(
    store: &CheckpointStore,
    root: &Root,
    into: &mut HashSet<String>,
) -> Result<(), CheckpointError> {
    let mut pending = vec![root.tree.clone()];
    while let Some(name) = pending.pop() {
        if !into.insert(name.clone()) {
            continue;
        }
        let tree: Tree =
            serde_json::from_slice(&store.content_named(&name)?).map_err(|e| corrupt(store, e))?;
        for kept in tree.into_values() {
            match kept {
                Kept::File { hash, .. } => {
                    into.insert(hash);
                }
                Kept::Dir { tree, .. } => pending.push(tree),
                Kept::Symlink { .. } => {}
            }
        }
    }
    Ok(())
}
