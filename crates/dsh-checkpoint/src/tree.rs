//! How a snapshot is kept: one object per folder (its entries, each subfolder by its own
//! object's name), as Git keeps trees, so that a checkpoint of a tree where ten files changed
//! stores the changed files and their folders' objects, not a list of every file again. The
//! snapshot's id names a small root record (the top folder's object and what was uncovered).

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::snapshot::{Entry, Snapshot, Uncovered};
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

/// Stores `snapshot`'s folder objects (those not stored yet); returns its root record.
pub(crate) fn store_trees(
    store: &CheckpointStore,
    snapshot: &Snapshot,
) -> Result<Root, CheckpointError> {
    // Each folder's entries, the top folder as "".
    let mut folders: BTreeMap<&str, Tree> = BTreeMap::new();
    folders.insert("", Tree::new());
    for (path, entry) in &snapshot.entries {
        if let Entry::Dir { .. } = entry {
            folders.entry(path.as_str()).or_default();
        }
    }
    // Deepest folders first, so that a folder's object is named before its parent's is made.
    let mut order: Vec<&str> = folders.keys().copied().collect();
    order.sort_by_key(|p| {
        std::cmp::Reverse(if p.is_empty() {
            0
        } else {
            p.matches('/').count() + 1
        })
    });
    let mut named: BTreeMap<&str, String> = BTreeMap::new();
    for folder in order {
        let mut tree = Tree::new();
        let prefix = if folder.is_empty() {
            String::new()
        } else {
            format!("{folder}/")
        };
        for (path, entry) in snapshot.entries.range(prefix.clone()..) {
            let Some(name) = path.strip_prefix(&prefix) else {
                break;
            };
            if name.contains('/') {
                continue;
            }
            let kept = match entry {
                Entry::File {
                    hash, size, mode, ..
                } => Kept::File {
                    hash: hash.clone(),
                    size: *size,
                    mode: *mode,
                },
                Entry::Symlink { target } => Kept::Symlink {
                    target: target.clone(),
                },
                Entry::Dir { mode } => Kept::Dir {
                    mode: *mode,
                    tree: named.get(path.as_str()).cloned().unwrap_or_default(),
                },
            };
            tree.insert(name.to_owned(), kept);
        }
        let text = serde_json::to_vec(&tree).map_err(|e| corrupt(store, e))?;
        named.insert(folder, store.put(&text)?);
    }
    Ok(Root {
        tree: named.remove("").unwrap_or_default(),
        uncovered: snapshot.uncovered.clone(),
    })
}

/// The snapshot whose root record is `root`, its folder objects read back.
pub(crate) fn load_trees(store: &CheckpointStore, root: Root) -> Result<Snapshot, CheckpointError> {
    let mut snapshot = Snapshot {
        entries: BTreeMap::new(),
        uncovered: root.uncovered,
    };
    let mut pending = vec![(String::new(), root.tree)];
    while let Some((folder, name)) = pending.pop() {
        let tree: Tree =
            serde_json::from_slice(&store.content(&name)?).map_err(|e| corrupt(store, e))?;
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
                    hash,
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
            snapshot.entries.insert(path, entry);
        }
    }
    Ok(snapshot)
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
            serde_json::from_slice(&store.content(&name)?).map_err(|e| corrupt(store, e))?;
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
