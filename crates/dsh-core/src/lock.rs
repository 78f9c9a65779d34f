//! One writer per session: `session.lock` in the session's folder, held with `flock` while a
//! process appends to the log. The kernel drops the lock when the holder exits, however it
//! dies, so a crash never leaves a session locked. The file holds the holder's pid, for the
//! error a second process gets.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use crate::CoreError;

/// The lock file's name.
pub const LOCK_FILE: &str = "session.lock";

/// A held session lock; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Takes the lock of the session in `dir`, or says who holds it.
    pub fn acquire(dir: &Path, id: &str) -> Result<SessionLock, CoreError> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| CoreError::Log {
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(CoreError::Log { path, source });
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(CoreError::Locked {
                    id: id.to_owned(),
                    pid: text.trim().parse().ok(),
                });
            }
        }
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| write!(file, "{}", std::process::id()));
        written.map_err(|source| CoreError::Log { path, source })?;
        Ok(SessionLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid() {
        let dir = tempfile::tempdir().unwrap();
        let held = SessionLock::acquire(dir.path(), "session-x").unwrap();
        // flock locks belong to the open file, so a second open in this process conflicts too.
        let error = SessionLock::acquire(dir.path(), "session-x").unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "session \"session-x\" is in use by another dsh process (pid {}); wait for it to \
                 finish or stop it, then retry",
                std::process::id()
            )
        );
        drop(held);
        assert!(SessionLock::acquire(dir.path(), "session-x").is_ok());
    }
}
