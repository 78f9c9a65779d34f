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
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::{Backend, SandboxMode, SandboxPolicy};

/// The protected paths as they were when a command started: those absent, and the identity of
/// those present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreationWatch {
    absent: Vec<PathBuf>,
    /// Each protected path present, with its device and inode: one that is another file when
    /// the command ends was replaced (a command in a sandbox whose read-only bind moved with
    /// the file it covered can make the name again).
    present: Vec<(PathBuf, u64, u64)>,
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
        let mut absent = Vec::new();
        let mut present = Vec::new();
        for path in protected {
            match std::fs::symlink_metadata(path) {
                // Under bubblewrap each is bound read-only, so a new file at its name means a
                // bind moved (dsh set the file aside) and the name was made again. Under
                // Landlock nothing binds them, and Git replaces its config by renaming a new
                // one over it: what Git would run is checked by `git_changes` there instead.
                Ok(meta) if backend == Backend::Bubblewrap => {
                    present.push((path.clone(), meta.dev(), meta.ino()));
                }
                Ok(_) => {}
                // Under bubblewrap an absent `.dsh/` is made empty and bound read-only before
                // the command starts (`crate::bwrap`): that one is dsh's own.
                Err(_) if backend == Backend::Bubblewrap && *path == top.join(".dsh") => {}
                Err(_) => absent.push(path.clone()),
            }
        }
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
            present,
            env_files,
            top,
        })
    }

    /// The workspace whose protected paths are watched.
    pub fn workspace(&self) -> &Path {
        &self.top
    }

    /// The protected paths that exist now and did not when the command started, or that are
    /// now another file than they were.
    pub fn created(&self) -> Vec<PathBuf> {
        let mut created: Vec<PathBuf> = (self.absent.iter())
            .filter(|path| std::fs::symlink_metadata(path).is_ok())
            .cloned()
            .collect();
        for (path, dev, ino) in &self.present {
            if std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) != (*dev, *ino)) {
                created.push(path.clone());
            }
        }
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

/// A watch written down, so that a run that dies before its command's end (SIGKILL, a crash)
/// leaves what the next run needs to settle it: NUL-separated fields, `top`, then `absent`,
/// `present` (path, device, inode) and `env` entries, each a tag and its values.
impl CreationWatch {
    pub fn to_record(&self) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt as _;
        let mut out = Vec::new();
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(bytes);
            out.push(0);
        };
        field(b"top");
        field(self.top.as_os_str().as_bytes());
        for path in &self.absent {
            field(b"absent");
            field(path.as_os_str().as_bytes());
        }
        for (path, dev, ino) in &self.present {
            field(b"present");
            field(path.as_os_str().as_bytes());
            field(dev.to_string().as_bytes());
            field(ino.to_string().as_bytes());
        }
        for name in &self.env_files {
            field(b"env");
            field(name.as_bytes());
        }
        out
    }

    /// The watch [`CreationWatch::to_record`] wrote; `None` for anything else (a record cut
    /// short by the crash it outlived).
    pub fn from_record(bytes: &[u8]) -> Option<CreationWatch> {
        use std::os::unix::ffi::OsStrExt as _;
        let body = bytes.strip_suffix(&[0])?;
        let mut fields = body.split(|b| *b == 0);
        let path = |bytes: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
        let number = |bytes: &[u8]| std::str::from_utf8(bytes).ok()?.parse::<u64>().ok();
        if fields.next()? != b"top" {
            return None;
        }
        let mut watch = CreationWatch {
            top: path(fields.next()?),
            absent: Vec::new(),
            present: Vec::new(),
            env_files: Vec::new(),
        };
        while let Some(tag) = fields.next() {
            match tag {
                b"absent" => watch.absent.push(path(fields.next()?)),
                b"present" => {
                    let at = path(fields.next()?);
                    let dev = number(fields.next()?)?;
                    let ino = number(fields.next()?)?;
                    watch.present.push((at, dev, ino));
                }
                b"env" => watch
                    .env_files
                    .push(std::ffi::OsStr::from_bytes(fields.next()?).to_os_string()),
                _ => return None,
            }
        }
        watch.top.is_absolute().then_some(watch)
    }
}

fn env_files(top: &Path) -> Vec<OsString> {
    let Ok(entries) = std::fs::read_dir(top) else {
        return Vec::new();
    };
    // What dsh itself set aside (`.env.local.dsh-set-aside`) is not a new `.env` file.
    (entries.filter_map(Result::ok))
        .map(|entry| entry.file_name())
        .filter(|name| {
            crate::is_env_file(name) && !name.to_string_lossy().contains(crate::aside::SET_ASIDE)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::set_aside;

    #[test]
    fn a_protected_path_replaced_while_the_command_ran_counts_as_created() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(real.join(".env"), "A=1\n").unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        let watch =
            CreationWatch::new(&policy, Backend::Bubblewrap, &policy.protected_paths()).unwrap();
        // Written in place: the same file.
        std::fs::write(real.join(".env"), "A=2\n").unwrap();
        assert!(watch.created().is_empty());
        // Set aside (by dsh, after an earlier command), then made again.
        std::fs::rename(real.join(".env"), real.join(".env.dsh-set-aside")).unwrap();
        std::fs::write(real.join(".env"), "A=evil\n").unwrap();
        assert_eq!(watch.created(), [real.join(".env")]);
        // Under Landlock nothing binds it, and a file renamed over its name (as Git writes its
        // config) is an edit, not a creation.
        let landlock =
            CreationWatch::new(&policy, Backend::Landlock, &policy.protected_paths()).unwrap();
        std::fs::write(real.join(".env.new"), "A=3\n").unwrap();
        std::fs::rename(real.join(".env.new"), real.join(".env")).unwrap();
        assert!(landlock.created().is_empty(), "{:?}", landlock.created());
    }

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
        // Written down and read back, as a run that died leaves it for the next.
        assert_eq!(
            CreationWatch::from_record(&landlock.to_record()).as_ref(),
            Some(&landlock)
        );
        let record = landlock.to_record();
        assert!(CreationWatch::from_record(&record[..record.len() - 3]).is_none());
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
