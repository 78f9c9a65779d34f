//! Atomic file publication: a file is either its old content or its new content, never half
//! of either, whatever kills the process.
//!
//! The new content is written to a temporary file inside a private staging directory (0700) in
//! the destination's directory, synced, and then moved into place: renamed over the old file
//! when replacing, or hard-linked when creating, so that a file someone else created meanwhile
//! is never overwritten (the link fails and the other writer wins). The directory is synced
//! after the move so the new name survives a power loss.
//!
//! Every step is relative to the destination's folder as the fence opened it
//! ([`dsh_fence::WriteSite`]), never by path: a folder swapped for a symlink meanwhile cannot
//! move any of them elsewhere.

use std::ffi::{CStr, CString};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;

use dsh_fence::{Folder, WriteSite};

use crate::{ToolError, fs_code};

/// How the destination is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Publish {
    /// The destination must not exist.
    Create,
    /// The destination is replaced; its permission bits are kept.
    Replace { mode: u32 },
}

/// The temporary file's name inside the staging folder.
const TEMP: &CStr = c"content.tmp";

/// Writes `content` at `site` atomically. `shown` is the path as the model spelled it.
pub(crate) fn publish(
    site: &WriteSite,
    content: &[u8],
    how: Publish,
    shown: &str,
) -> Result<(), ToolError> {
    let name = String::from_utf8_lossy(site.name().to_bytes()).into_owned();
    let token = uuid::Uuid::new_v4().simple().to_string();
    let staging = CString::new(format!(
        ".{name}.{}.{}.tmpdir",
        std::process::id(),
        &token[..12]
    ))
    .map_err(|_| write_error(shown, &io::Error::from_raw_os_error(libc::EINVAL)))?;
    let dir = site.folder();
    dir.make_folder(&staging, 0o700)
        .map_err(|e| write_error(shown, &e))?;
    let result = dir
        .folder(&staging)
        .map_err(|e| write_error(shown, &e))
        .and_then(|staged| {
            let result = publish_from(&staged, site, content, how, shown);
            // The staging directory holds at most the temporary file; a failed cleanup leaves
            // an owner-only directory behind and nothing else.
            let _ = staged.remove_file(TEMP);
            result
        });
    let _ = dir.remove_folder(&staging);
    result?;
    dir.sync();
    Ok(())
}

fn publish_from(
    staging: &Folder,
    site: &WriteSite,
    content: &[u8],
    how: Publish,
    shown: &str,
) -> Result<(), ToolError> {
    let mut file = staging
        .create_new(TEMP, 0o600)
        .map_err(|e| write_error(shown, &e))?;
    file.write_all(content)
        .map_err(|e| write_error(shown, &e))?;
    if let Publish::Replace { mode } = how {
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
            .map_err(|e| write_error(shown, &e))?;
    }
    file.sync_all().map_err(|e| write_error(shown, &e))?;
    drop(file);
    let (dir, name) = (site.dir(), site.name());
    match how {
        Publish::Replace { .. } => {
            (staging.rename(TEMP, dir, name, 0)).map_err(|e| write_error(shown, &e))
        }
        Publish::Create => match staging.link(TEMP, dir, name) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(existing(site, shown)),
            // Some file systems have no hard links; an exclusive rename is just as safe.
            Err(_) => (staging.rename(TEMP, dir, name, libc::RENAME_NOREPLACE)).map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    existing(site, shown)
                } else {
                    write_error(shown, &e)
                }
            }),
        },
    }
}

/// What a create found in its way: another writer's file, or something that is not a file.
fn existing(site: &WriteSite, shown: &str) -> ToolError {
    match site.metadata() {
        Ok(Some(meta)) if !meta.is_file() => ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot write \"{shown}\": not a regular file"),
        ),
        _ => ToolError::fs(
            fs_code::NOT_OBSERVED,
            format!("cannot overwrite existing \"{shown}\" without reading it first"),
        ),
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
    use dsh_sandbox::{SandboxMode, SandboxPolicy};

    /// The site of `dest` as the fence opens it, beneath the test folder.
    fn site(root: &std::path::Path, dest: &std::path::Path) -> WriteSite {
        SandboxPolicy::new(SandboxMode::WorkspaceWrite, root, Vec::new())
            .write_site(dest, true)
            .unwrap()
    }

    #[test]
    fn creates_owner_only_files_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a/b/new.txt");
        publish(
            &site(dir.path(), &dest),
            b"hello",
            Publish::Create,
            "new.txt",
        )
        .unwrap();
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
        let error = publish(&site(dir.path(), &dest), b"mine", Publish::Create, "x").unwrap_err();
        assert_eq!(
            error.message,
            "cannot overwrite existing \"x\" without reading it first"
        );
        assert_eq!(std::fs::read_to_string(&dest).unwrap(), "theirs");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let error = publish(
            &site(dir.path(), &dir.path().join("d")),
            b"x",
            Publish::Create,
            "d",
        )
        .unwrap_err();
        assert_eq!(error.info.unwrap().code, "FS_NOT_REGULAR_FILE");
    }

    #[test]
    fn a_replace_keeps_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("x");
        std::fs::write(&dest, "old").unwrap();
        publish(
            &site(dir.path(), &dest),
            b"new",
            Publish::Replace { mode: 0o640 },
            "x",
        )
        .unwrap();
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
                let a = s
                    .spawn(|| publish(&site(dir.path(), &dest), b"a", Publish::Create, "race.txt"));
                let b = s
                    .spawn(|| publish(&site(dir.path(), &dest), b"b", Publish::Create, "race.txt"));
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
