//! Making a workspace match a snapshot again.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::snapshot::{Entry, Snapshot};
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
    pub fn restore(
        &self,
        workspace: &Path,
        target: &Snapshot,
        current: &Snapshot,
    ) -> Result<Restored, CheckpointError> {
        let plan = plan_restore(target, current);
        let mut done = Restored::default();
        // Deepest first, so that a folder is emptied before it is removed.
        let mut remove = plan.remove.clone();
        remove.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
        for path in remove {
            let full = match inside(workspace, &path) {
                Ok(full) => full,
                Err(why) => {
                    done.failed.push((path, why));
                    continue;
                }
            };
            let removed = match current.entries.get(&path) {
                Some(Entry::Dir { .. }) => match std::fs::remove_dir(&full) {
                    Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                        done.kept.push(path.clone());
                        continue;
                    }
                    other => other,
                },
                _ => with_writable_parent(&full, || std::fs::remove_file(&full)),
            };
            match removed {
                Ok(()) => done.removed.push(path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => done.removed.push(path),
                Err(e) => done.failed.push((path, e.to_string())),
            }
        }
        // Shallowest first, so that a folder exists before what goes in it.
        for path in &plan.restore {
            let Some(entry) = target.entries.get(path) else {
                continue;
            };
            match self.put_back(workspace, path, entry) {
                Ok(()) => done.written.push(path.clone()),
                Err(why) => done.failed.push((path.clone(), why)),
            }
        }
        // Folder modes last, deepest first: a read-only folder must not keep its own files
        // from being written back.
        for path in plan.restore.iter().rev() {
            if let Some(Entry::Dir { mode }) = target.entries.get(path)
                && let Ok(full) = inside(workspace, path)
            {
                let _ = std::fs::set_permissions(&full, std::fs::Permissions::from_mode(*mode));
            }
        }
        Ok(done)
    }

    fn put_back(&self, workspace: &Path, path: &str, entry: &Entry) -> Result<(), String> {
        let full = inside(workspace, path)?;
        match entry {
            // Writable for now; its own mode is set once what goes in it is back.
            Entry::Dir { .. } => match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => Ok(()),
                Ok(_) => Err("something that is not a folder is in the way".into()),
                Err(_) => std::fs::create_dir(&full).map_err(|e| e.to_string()),
            },
            Entry::File { hash, mode, .. } => {
                let content = self.content(hash).map_err(|e| e.to_string())?;
                replace(&full, |temp| {
                    let mut file = std::fs::File::create(temp)?;
                    file.write_all(&content)?;
                    file.set_permissions(std::fs::Permissions::from_mode(*mode))
                })
            }
            Entry::Symlink { target } => {
                replace(&full, |temp| std::os::unix::fs::symlink(target, temp))
            }
        }
    }
}

/// Makes `make` build the new thing at a temporary name beside `full`, then renames it over
/// `full`: a rename replaces a file or a link itself, never what a link points at.
fn replace(full: &Path, make: impl FnOnce(&Path) -> std::io::Result<()>) -> Result<(), String> {
    if std::fs::symlink_metadata(full).is_ok_and(|m| m.is_dir()) {
        return Err("a folder is in the way".into());
    }
    let name = full
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let temp = full.with_file_name(format!(".{name}.dsh-restore-{}", std::process::id()));
    with_writable_parent(full, || {
        let _ = std::fs::remove_file(&temp);
        let made = make(&temp).and_then(|()| std::fs::rename(&temp, full));
        if made.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        made
    })
    .map_err(|e| e.to_string())
}

/// Runs `work` (which makes or removes an entry of `full`'s folder) with that folder writable
/// by its owner, its mode put back after: a folder a turn made read-only must not keep its
/// files from being restored. (A folder of the snapshot gets its own mode afterwards.)
fn with_writable_parent<T>(
    full: &Path,
    work: impl FnOnce() -> std::io::Result<T>,
) -> std::io::Result<T> {
    let parent = full.parent().filter(|p| !p.as_os_str().is_empty());
    let locked = parent.and_then(|p| {
        let mode = std::fs::symlink_metadata(p).ok()?.permissions().mode() & 0o7777;
        (mode & 0o300 != 0o300).then_some((p, mode))
    });
    if let Some((p, mode)) = locked {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode | 0o700))?;
    }
    let done = work();
    if let Some((p, mode)) = locked {
        let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
    }
    done
}

/// `path` (relative, from a snapshot) under `workspace`, each folder on the way a real
/// folder: a link put where a folder was must not carry a restore outside the workspace.
pub(crate) fn inside(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    let relative = Path::new(path);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err("not a plain relative path".into());
    }
    let mut full = workspace.to_path_buf();
    let mut parts = relative.components().peekable();
    while let Some(part) = parts.next() {
        full.push(part);
        if parts.peek().is_some() {
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(format!(
                        "{} is not a folder now (a link or a file is in its place)",
                        full.strip_prefix(workspace).unwrap_or(&full).display()
                    ));
                }
                Err(_) => {
                    return Err(format!(
                        "its folder {} is missing",
                        full.strip_prefix(workspace).unwrap_or(&full).display()
                    ));
                }
            }
        }
    }
    Ok(full)
}
