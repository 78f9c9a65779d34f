//! Atomic file publication: a file is either its old content or its new content, never half
//! of either, whatever kills the process.
//!
//! The new content is written to a temporary file inside a private staging directory (0700) in
//! the destination's directory, synced, and then moved into place: renamed over the old file
//! when replacing, or hard-linked when creating, so that a file someone else created meanwhile
//! is never overwritten (the link fails and the other writer wins). The directory is synced
//! after the move so the new name survives a power loss.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::{ToolError, fs_code};

/// How the destination is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Publish {
    /// The destination must not exist.
    Create,
    /// The destination is replaced; its permission bits are kept.
    Replace { mode: u32 },
}

/// Writes `content` to `dest` atomically. `shown` is the path as the model spelled it.
pub(crate) fn publish(
    dest: &Path,
    content: &[u8],
    how: Publish,
    shown: &str,
) -> Result<(), ToolError> {
    let parent = dest.parent().unwrap_or_else(|| Path::new("/"));
    std::fs::create_dir_all(parent).map_err(|e| write_error(shown, &e))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let token = uuid::Uuid::new_v4().simple().to_string();
    let staging = parent.join(format!(
        ".{name}.{}.{}.tmpdir",
        std::process::id(),
        &token[..12]
    ));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(|e| write_error(shown, &e))?;
    let result = publish_from(&staging, dest, content, how, shown);
    // The staging directory holds at most the temporary file; a failed cleanup leaves an
    // owner-only directory behind and nothing else.
    let _ = std::fs::remove_dir_all(&staging);
    result?;
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn publish_from(
    staging: &Path,
    dest: &Path,
    content: &[u8],
    how: Publish,
    shown: &str,
) -> Result<(), ToolError> {
    let temp: PathBuf = staging.join("content.tmp");
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(|e| write_error(shown, &e))?;
    file.write_all(content)
        .map_err(|e| write_error(shown, &e))?;
    if let Publish::Replace { mode } = how {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
            .map_err(|e| write_error(shown, &e))?;
    }
    file.sync_all().map_err(|e| write_error(shown, &e))?;
    drop(file);
    match how {
        Publish::Replace { .. } => std::fs::rename(&temp, dest).map_err(|e| write_error(shown, &e)),
        Publish::Create => match std::fs::hard_link(&temp, dest) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(existing(dest, shown)),
            // Some file systems have no hard links; an exclusive rename is just as safe.
            Err(_) => rename_no_replace(&temp, dest).map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    existing(dest, shown)
                } else {
                    write_error(shown, &e)
                }
            }),
        },
    }
}

/// What a create found in its way: another writer's file, or something that is not a file.
fn existing(dest: &Path, shown: &str) -> ToolError {
    match std::fs::symlink_metadata(dest) {
        Ok(meta) if !meta.is_file() => ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot write \"{shown}\": not a regular file"),
        ),
        _ => ToolError::fs(
            fs_code::NOT_OBSERVED,
            format!("cannot overwrite existing \"{shown}\" without reading it first"),
        ),
    }
}

fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(from.as_os_str().as_bytes())?;
    let to = CString::new(to.as_os_str().as_bytes())?;
    // The system call itself rather than libc's wrapper, which musl (the static build) does
    // not have.
    // SAFETY: both paths are NUL-terminated C strings that outlive the call; the other
    // arguments are plain integers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An I/O failure while writing, with the path the model gave.
pub(crate) fn write_error(shown: &str, error: &io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::PermissionDenied => ToolError::fs(
            fs_code::PERMISSION_DENIED,
            format!("cannot write \"{shown}\": permission denied"),
        ),
        io::ErrorKind::ReadOnlyFilesystem => ToolError::fs(
            fs_code::PERMISSION_DENIED,
            format!("cannot write \"{shown}\": read-only file system"),
        ),
        io::ErrorKind::StorageFull => ToolError::fs(
            fs_code::IO_ERROR,
            format!("cannot write \"{shown}\": no space left on the device"),
        ),
        _ => ToolError::fs(
            fs_code::IO_ERROR,
            format!(
                "cannot write \"{shown}\": {}",
                crate::path::io_reason(error)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_owner_only_files_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a/b/new.txt");
        publish(&dest, b"hello", Publish::Create, "new.txt").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"hello");
        assert_eq!(
            std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::read_dir(dest.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_create_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x");
        std::fs::write(&dest, "theirs").unwrap();
        let error = publish(&dest, b"mine", Publish::Create, "x").unwrap_err();
        assert_eq!(
            error.message,
            "cannot overwrite existing \"x\" without reading it first"
        );
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "theirs");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let error = publish(&dir.path().join("d"), b"x", Publish::Create, "d").unwrap_err();
        assert_eq!(error.info.unwrap().code, "FS_NOT_REGULAR_FILE");
    }

    #[test]
    fn a_replace_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x");
        std::fs::write(&dest, "old").unwrap();
        publish(&dest, b"new", Publish::Replace { mode: 0o640 }, "x").unwrap();
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "new");
        assert_eq!(
            std::fs::metadata(&dest).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }

    #[test]
    fn of_two_concurrent_creators_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("race.txt");
        for _ in 0..20 {
            let _ = std::fs::remove_file(&dest);
            let results: Vec<_> = std::thread::scope(|s| {
                let a = s.spawn(|| publish(&dest, b"a", Publish::Create, "race.txt"));
                let b = s.spawn(|| publish(&dest, b"b", Publish::Create, "race.txt"));
                vec![a.join().unwrap(), b.join().unwrap()]
            });
            let wins: Vec<_> = results.iter().filter(|r| r.is_ok()).collect();
            assert_eq!(wins.len(), 1, "{results:?}");
            let content = std::fs::read_to_string(&dest).unwrap();
            let winner = if results[0].is_ok() { "a" } else { "b" };
            assert_eq!(content, winner);
        }
    }
}
