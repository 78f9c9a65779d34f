//! Protected paths a command created.
//!
//! Under bubblewrap the protected paths that exist are bound read-only, and under both backends
//! the file tools refuse them; but a path that does not exist yet cannot be bound (`.git` must
//! stay writable for Git's own lock files, and a mount point made for `.git/config.worktree`
//! would be left behind as a folder, which breaks Git), and Landlock cannot single out names
//! inside a writable folder. So each confined command under `workspace-write` notes which
//! protected paths were absent when it started, and when it has ended, what it created there
//! is moved out of the workspace: never deleted, since what is moved may be someone's work.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::{Backend, SandboxMode, SandboxPolicy};

/// The protected paths absent when a command started.
#[derive(Debug, Clone)]
pub struct CreationWatch {
    absent: Vec<PathBuf>,
    /// The workspace's top folder, whose new `.env` files count too.
    top: PathBuf,
    /// The `.env` files it held.
    env_files: Vec<OsString>,
}

impl CreationWatch {
    /// What to watch for a command under `policy` on `backend`; none outside
    /// `workspace-write`, where nothing is protected.
    pub(crate) fn new(policy: &SandboxPolicy, backend: Backend) -> Option<CreationWatch> {
        if policy.mode() != SandboxMode::WorkspaceWrite {
            return None;
        }
        let top = policy.workspace().to_path_buf();
        let absent = (policy.protected_paths().into_iter())
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            // Under bubblewrap an absent `.dsh/` is made empty and bound read-only before
            // the command starts (`crate::bwrap`): that one is dsh's own.
            .filter(|path| !(backend == Backend::Bubblewrap && path == &top.join(".dsh")))
            .collect();
        Some(CreationWatch {
            absent,
            env_files: env_files(&top),
            top,
        })
    }

    /// The protected paths that exist now and did not when the command started.
    pub fn created(&self) -> Vec<PathBuf> {
        let mut created: Vec<PathBuf> = (self.absent.iter())
            .filter(|path| std::fs::symlink_metadata(path).is_ok())
            .cloned()
            .collect();
        for name in env_files(&self.top) {
            if !self.env_files.contains(&name) {
                let path = self.top.join(name);
                if !created.contains(&path) {
                    created.push(path);
                }
            }
        }
        created
    }
}

fn env_files(top: &Path) -> Vec<OsString> {
    let Ok(entries) = std::fs::read_dir(top) else {
        return Vec::new();
    };
    (entries.filter_map(Result::ok))
        .map(|entry| entry.file_name())
        .filter(|name| crate::is_env_file(name))
        .collect()
}

/// Moves `path` (a file or a folder) into the folder `into`, made private if it is new, under
/// a name no earlier move took; returns where it went. Across file systems it is copied, then
/// removed.
pub fn move_aside(path: &Path, into: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(into)?;
    let name = path
        .file_name()
        .map_or_else(|| "moved".into(), |n| n.to_string_lossy().into_owned());
    let mut target = into.join(&name);
    let mut n = 1;
    while std::fs::symlink_metadata(&target).is_ok() {
        n += 1;
        target = into.join(format!("{name}.{n}"));
    }
    match std::fs::rename(path, &target) {
        Ok(()) => Ok(target),
        Err(error) if error.raw_os_error() == Some(libc::EXDEV) => {
            copy_tree(path, &target)?;
            remove_tree(path)?;
            Ok(target)
        }
        Err(error) => Err(error),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        Ok(())
    } else if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

fn remove_tree(path: &Path) -> std::io::Result<()> {
    if std::fs::symlink_metadata(path)?.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_creates_at_protected_paths_is_found_and_moved_aside() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(real.join(".git/hooks")).unwrap();
        std::fs::write(real.join(".env"), "A=1\n").unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        let watch = CreationWatch::new(&policy, Backend::Bubblewrap).unwrap();
        assert!(watch.created().is_empty());
        std::fs::write(real.join(".git/config.worktree"), "[core]\n").unwrap();
        std::fs::write(real.join(".env.local"), "B=2\n").unwrap();
        std::fs::write(real.join(".env.example"), "B=\n").unwrap();
        std::fs::create_dir_all(real.join(".dsh")).unwrap();
        let created = watch.created();
        assert_eq!(
            created,
            [real.join(".git/config.worktree"), real.join(".env.local")]
        );
        let aside = tempfile::tempdir().unwrap();
        let moved = move_aside(&created[1], aside.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "B=2\n");
        assert!(!real.join(".env.local").exists());
        // A second file of the same name does not replace the first.
        std::fs::write(real.join(".env.local"), "C=3\n").unwrap();
        let again = move_aside(&real.join(".env.local"), aside.path()).unwrap();
        assert_ne!(again, moved);
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "B=2\n");
        // Under Landlock nothing holds `.dsh/` open: creating it counts.
        std::fs::remove_dir(real.join(".dsh")).unwrap();
        let landlock = CreationWatch::new(&policy, Backend::Landlock).unwrap();
        std::fs::create_dir_all(real.join(".dsh/hooks")).unwrap();
        assert!(landlock.created().contains(&real.join(".dsh")));
        assert!(
            CreationWatch::new(&policy.with_mode(SandboxMode::ReadOnly), Backend::Landlock)
                .is_none()
        );
    }
}
