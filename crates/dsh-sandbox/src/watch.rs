//! Protected paths a command created.
//!
//! Under bubblewrap the protected paths that exist are bound read-only, and under both backends
//! the file tools refuse them; but a path that does not exist yet cannot be bound (`.git` must
//! stay writable for Git's own lock files, and a mount point made for `.git/config.worktree`
//! would be left behind as a folder, which breaks Git), and Landlock cannot single out names
//! inside a writable folder. So each confined command under `workspace-write` notes which
//! protected paths were absent when it started, and when it has ended, what it created there
//! is renamed where it is to a name nothing reads: never deleted, since it may be someone's
//! work.

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
    /// What to watch for a command under `policy` on `backend`, whose protected paths are
    /// `protected` ([`SandboxPolicy::protected_paths`]); none outside `workspace-write`, where
    /// nothing is protected.
    pub(crate) fn new(
        policy: &SandboxPolicy,
        backend: Backend,
        protected: &[PathBuf],
    ) -> Option<CreationWatch> {
        if policy.mode() != SandboxMode::WorkspaceWrite {
            return None;
        }
        let top = policy.workspace().to_path_buf();
        let absent = (protected.iter())
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            // Under bubblewrap an absent `.dsh/` is made empty and bound read-only before
            // the command starts (`crate::bwrap`): that one is dsh's own.
            .filter(|path| !(backend == Backend::Bubblewrap && **path == top.join(".dsh")))
            .cloned()
            .collect();
        // The top folder's `.env` files are among the protected paths, as its listing found
        // them.
        let env_files = (protected.iter())
            .filter(|path| path.parent() == Some(top.as_path()))
            .filter_map(|path| path.file_name())
            .filter(|name| crate::is_env_file(name))
            .map(std::ffi::OsStr::to_os_string)
            .collect();
        Some(CreationWatch {
            absent,
            env_files,
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

/// Renames `path` (a file or a folder a command created at a protected path) beside itself,
/// to `<name>.dsh-set-aside` (then `.2`, `.3`, ...), where it has no effect: no Git, dsh or
/// `.env` reader looks for that name. Nothing is copied or deleted, and nothing leaves its file
/// system. Its folder must be in `workspace` and reached without a symbolic link (a command
/// could otherwise point the rename at another repository's hooks): the folder is opened
/// once, checked by what the open resolved to, and the rename is made relative to it. Returns
/// the new path.
pub fn set_aside(path: &Path, workspace: &Path) -> std::io::Result<PathBuf> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::os::unix::ffi::OsStrExt as _;
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_owned());
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(invalid("not a path inside the workspace"));
    };
    let c_folder = CString::new(folder.as_os_str().as_bytes()).map_err(|_| invalid("a NUL"))?;
    // SAFETY: open with a valid C string; the descriptor is owned below.
    let fd = unsafe {
        libc::open(
            c_folder.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened, owned here.
    let folder_fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", folder_fd.as_raw_fd()))?;
    if opened != folder || !opened.starts_with(workspace) {
        return Err(invalid(
            "its folder is reached through a symbolic link, or is outside the workspace",
        ));
    }
    let exists = |candidate: &CString| {
        // SAFETY: fstatat relative to our folder, into a zeroed stat.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            libc::fstatat(
                folder_fd.as_raw_fd(),
                candidate.as_ptr(),
                &mut stat,
                libc::AT_SYMLINK_NOFOLLOW,
            ) == 0
        }
    };
    let c_name = CString::new(name.as_bytes()).map_err(|_| invalid("a NUL"))?;
    let base = format!("{}.dsh-set-aside", name.to_string_lossy());
    let mut new_name = base.clone();
    let mut n = 1;
    while exists(&CString::new(new_name.as_bytes()).map_err(|_| invalid("a NUL"))?) {
        n += 1;
        new_name = format!("{base}.{n}");
    }
    let c_new = CString::new(new_name.as_bytes()).map_err(|_| invalid("a NUL"))?;
    // SAFETY: renameat within the folder we opened and checked.
    let renamed = unsafe {
        libc::renameat(
            folder_fd.as_raw_fd(),
            c_name.as_ptr(),
            folder_fd.as_raw_fd(),
            c_new.as_ptr(),
        )
    };
    if renamed != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(folder.join(new_name))
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
        let watch =
            CreationWatch::new(&policy, Backend::Bubblewrap, &policy.protected_paths()).unwrap();
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
        let moved = set_aside(&created[1], &real).unwrap();
        assert_eq!(moved, real.join(".env.local.dsh-set-aside"));
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "B=2\n");
        assert!(!real.join(".env.local").exists());
        // A second one of the same name does not replace the first.
        std::fs::write(real.join(".env.local"), "C=3\n").unwrap();
        let again = set_aside(&real.join(".env.local"), &real).unwrap();
        assert_eq!(again, real.join(".env.local.dsh-set-aside.2"));
        assert_eq!(std::fs::read_to_string(&moved).unwrap(), "B=2\n");
        // A folder reached through a symbolic link (another repository's) is left alone.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(elsewhere.path().join("hooks")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), real.join("linked")).unwrap();
        assert!(set_aside(&real.join("linked/hooks"), &real).is_err());
        assert!(elsewhere.path().join("hooks").is_dir());
        // Under Landlock nothing holds `.dsh/` open: creating it counts.
        std::fs::remove_dir(real.join(".dsh")).unwrap();
        let landlock =
            CreationWatch::new(&policy, Backend::Landlock, &policy.protected_paths()).unwrap();
        std::fs::create_dir_all(real.join(".dsh/hooks")).unwrap();
        assert!(landlock.created().contains(&real.join(".dsh")));
        assert!(
            CreationWatch::new(
                &policy.with_mode(SandboxMode::ReadOnly),
                Backend::Landlock,
                &[]
            )
            .is_none()
        );
    }
}
