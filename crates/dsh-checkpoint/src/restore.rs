//! Making a workspace match a snapshot again.

use std::ffi::{CStr, CString};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};

use dsh_fence::{Folder, Root};

use crate::entries::Entry;
use crate::snapshot::Snapshot;
use crate::store::{CheckpointError, CheckpointStore};

/// What a restore will do, path by path, so that it can be shown before it is done.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RestorePlan {
    /// Written back: missing now, or different (content, mode, kind).
    pub restore: Vec<String>,
    /// Removed: covered now and absent from the snapshot (or a different kind there).
    pub remove: Vec<String>,
}

impl RestorePlan {
    pub fn is_empty(&self) -> bool {
        self.restore.is_empty() && self.remove.is_empty()
    }
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    /// Folders left in place because something not covered (ignored, too large) is in them.
    pub kept: Vec<String>,
    /// Paths that could not be put back, with why.
    pub failed: Vec<(String, String)>,
}

/// The workspace's `.dsh/` when empty: under bubblewrap the sandbox makes it before a command
/// runs (to bind it read-only, so that no command can create it), so a rewind to before it
/// existed would only list dsh's own folder and have the next command make it again.
fn is_sandbox_made(path: &str, now: &Entry, current: &Snapshot) -> bool {
    path == ".dsh"
        && matches!(now, Entry::Dir { .. })
        && !(current.entries.keys()).any(|p| p.starts_with(".dsh/"))
}

/// What restoring `target` over the workspace as `current` shows it would change.
pub fn plan_restore(target: &Snapshot, current: &Snapshot) -> RestorePlan {
    let mut plan = RestorePlan::default();
    for (path, now) in &current.entries {
        match target.entries.get(path) {
            Some(then) if std::mem::discriminant(then) == std::mem::discriminant(now) => {}
            // A file too large to be covered then, or anything in a folder that could not be
            // read then, existed then: it is left as it is.
            None if target.uncovered.iter().any(|u| {
                path == &u.path
                    || path
                        .strip_prefix(&u.path)
                        .is_some_and(|r| r.starts_with('/'))
            }) => {}
            None if is_sandbox_made(path, now, current) => {}
            _ => plan.remove.push(path.clone()),
        }
    }
    for (path, then) in &target.entries {
        match current.entries.get(path) {
            Some(now) if now.same_as(then) => {}
            _ => plan.restore.push(path.clone()),
        }
    }
    plan
}

impl CheckpointStore {
    /// Makes the covered files of `workspace` what `target` says, given `current`, a
    /// snapshot of it taken just before (and stored: it is what undoes this). A path that
    /// cannot be put back is reported and the others are still restored.
    ///
    /// dsh runs this unconfined while other processes may work in the workspace, so the
    /// workspace is opened once and every step goes through [`dsh_fence`]: each folder is
    /// reached beneath it as a descriptor, following no symlink, and each file, link, removal
    /// and mode is a call relative to that descriptor. A folder swapped for a link meanwhile
    /// makes that path fail; it never carries a write elsewhere.
    pub fn restore(
        &self,
        workspace: &Path,
        target: &Snapshot,
        current: &Snapshot,
    ) -> Result<Restored, CheckpointError> {
        let root = Root::open(workspace).map_err(crate::store::io(workspace))?;
        self.restore_in(&root, target, current)
    }

    /// As [`CheckpointStore::restore`], into the workspace `root` a run opened when it
    /// started: what the workspace's path names now (the folder moved, or replaced by a
    /// link to another) does not matter, and is refused when it is no longer that folder.
    pub fn restore_in(
        &self,
        root: &Root,
        target: &Snapshot,
        current: &Snapshot,
    ) -> Result<Restored, CheckpointError> {
        crate::store::still_at_its_path(root)?;
        let plan = plan_restore(target, current);
        let mut done = Restored::default();
        // Deepest first, so that a folder is emptied before it is removed.
        let mut remove = plan.remove.clone();
        remove.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for path in remove {
            let is_dir = matches!(current.entries.get(&path), Some(Entry::Dir { .. }));
            match remove_one(root, &path, is_dir) {
                Ok(Removal::Removed) => done.removed.push(path),
                Ok(Removal::Kept) => done.kept.push(path),
                Err(why) => done.failed.push((path, why)),
            }
        }
        // Shallowest first (a folder sorts before what is in it), so that a folder exists
        // before what goes in it.
        for path in &plan.restore {
            let Some(entry) = target.entries.get(path) else {
                continue;
            };
            match self.put_back(root, path, entry) {
                Ok(()) => done.written.push(path.clone()),
                Err(why) => done.failed.push((path.clone(), why)),
            }
        }
        // Folder modes last, deepest first: a read-only folder must not keep its own files
        // from being written back.
        for path in plan.restore.iter().rev() {
            if let Some(Entry::Dir { mode }) = target.entries.get(path)
                && let Ok(relative) = plain(path)
                && let Ok(folder) = root.folder(relative, false)
            {
                let _ = folder.set_mode(*mode);
            }
        }
        Ok(done)
    }

    fn put_back(&self, root: &Root, path: &str, entry: &Entry) -> Result<(), String> {
        let (folder, name) = site(root, path)?;
        match entry {
            // Owner-only for now; its own mode is set once what goes in it is back.
            Entry::Dir { .. } => match folder.entry(&name) {
                Ok(Some(meta)) if meta.is_dir() => Ok(()),
                Ok(Some(_)) => Err("something that is not a folder is in the way".into()),
                _ => folder
                    .while_writable(|| folder.make_folder(&name, 0o700))
                    .map_err(|e| e.to_string()),
            },
            Entry::File { hash, mode, .. } => {
                let content = self.content(hash).map_err(|e| e.to_string())?;
                replace(&folder, &name, |temp| {
                    let mut file = folder.create_new(temp, 0o600)?;
                    file.write_all(&content)?;
                    file.set_permissions(std::fs::Permissions::from_mode(*mode))
                })
            }
            Entry::Symlink { target } => replace(&folder, &name, |temp| {
                folder.symlink(std::ffi::OsStr::new(target), temp)
            }),
        }
    }
}

/// What removing one path came to.
enum Removal {
    Removed,
    /// A folder left in place: something not covered is in it.
    Kept,
}

fn remove_one(root: &Root, path: &str, is_dir: bool) -> Result<Removal, String> {
    let (folder, name) = site(root, path)?;
    let removed = if is_dir {
        match folder.while_writable(|| folder.remove_folder(&name)) {
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                return Ok(Removal::Kept);
            }
            other => other,
        }
    } else {
        folder.while_writable(|| folder.remove_file(&name))
    };
    match removed {
        Ok(()) => Ok(Removal::Removed),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Removal::Removed),
        Err(e) => Err(e.to_string()),
    }
}

/// Builds the new thing with `make` at a temporary name in `folder`, then renames it over
/// `name`: a rename replaces a file or a link itself, never what a link points at.
fn replace(
    folder: &Folder,
    name: &CStr,
    make: impl FnOnce(&CStr) -> std::io::Result<()>,
) -> Result<(), String> {
    if folder
        .entry(name)
        .ok()
        .flatten()
        .is_some_and(|m| m.is_dir())
    {
        return Err("a folder is in the way".into());
    }
    let temp = CString::new(
        [
            b".",
            name.to_bytes(),
            format!(".dsh-restore-{}", std::process::id()).as_bytes(),
        ]
        .concat(),
    )
    .map_err(|e| e.to_string())?;
    folder
        .while_writable(|| {
            // A leftover of a restore that was killed: removed, never written through.
            let _ = folder.remove_file(&temp);
            let made = make(&temp).and_then(|()| folder.rename(&temp, folder.as_fd(), name, 0));
            if made.is_err() {
                let _ = folder.remove_file(&temp);
            }
            made
        })
        .map_err(|e| e.to_string())
}

/// The folder of `path` (relative, from a snapshot), reached beneath the workspace's root
/// following no symlink, and its last name: a link put where a folder was is refused, never
/// followed.
pub(crate) fn site(root: &Root, path: &str) -> Result<(Folder, CString), String> {
    let relative = plain(path)?;
    let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
        return Err("not a plain relative path".into());
    };
    let folder = root
        .folder(parent, false)
        .map_err(|e| why_unreachable(root.path(), parent, &e))?;
    let name = dsh_fence::c_name(name).map_err(|e| e.to_string())?;
    Ok((folder, name))
}

/// `path` as a relative path of plain names, or why it is not one.
fn plain(path: &str) -> Result<&Path, String> {
    let relative = Path::new(path);
    if path.is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err("not a plain relative path".into());
    }
    Ok(relative)
}

/// Why the folder `parent` could not be reached: which folder on the way is not one now (read
/// for the message only; the write itself never goes by these names).
fn why_unreachable(workspace: &Path, parent: &Path, error: &std::io::Error) -> String {
    let mut full = workspace.to_path_buf();
    for part in parent.components() {
        full.push(part);
        let shown = || {
            full.strip_prefix(workspace)
                .unwrap_or(&full)
                .display()
                .to_string()
        };
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return format!(
                    "{} is not a folder now (a link or a file is in its place)",
                    shown()
                );
            }
            Err(_) => return format!("its folder {} is missing", shown()),
        }
    }
    if dsh_fence::met_a_link(error) {
        return "a folder on its way became a link while it was restored".into();
    }
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> Entry {
        Entry::Dir { mode: 0o755 }
    }

    /// The empty `.dsh/` the sandbox made during the turn is not a change to take back; a
    /// `.dsh/` with something in it, or another new folder, is.
    #[test]
    fn the_sandboxs_empty_dsh_folder_is_not_in_the_plan() {
        let then = Snapshot::default();
        let mut now = Snapshot::default();
        now.entries.insert(".dsh".into(), dir());
        now.entries.insert("made".into(), dir());
        assert_eq!(plan_restore(&then, &now).remove, ["made"]);
        now.entries.insert(".dsh/prompts".into(), dir());
        assert_eq!(
            plan_restore(&then, &now).remove,
            [".dsh", ".dsh/prompts", "made"]
        );
    }
}
