//! Where dsh keeps its sessions and settings.

use std::path::{Path, PathBuf};

use crate::SetupError;

/// The file of saved keys under dsh's home.
pub fn saved_keys_path(home: &Path) -> PathBuf {
    home.join("credentials")
}

/// Where dsh keeps its sessions and settings: `$DSH_HOME`, else `~/.dsh`. A blank `DSH_HOME`
/// counts as unset, and a leading `~` is expanded (a quoted `"~/x"` in a shell script arrives
/// unexpanded).
pub fn dsh_home(dsh_home: Option<&str>, user_home: Option<&Path>) -> Result<PathBuf, SetupError> {
    let no_home = || {
        SetupError::new(
            "NO_HOME",
            "no home directory to keep sessions in: set DSH_HOME (or HOME)".to_owned(),
        )
    };
    match dsh_home.map(str::trim).filter(|v| !v.is_empty()) {
        Some(value) => {
            if value == "~" {
                return user_home.map(Path::to_path_buf).ok_or_else(no_home);
            }
            match value.strip_prefix("~/") {
                Some(rest) => Ok(user_home.ok_or_else(no_home)?.join(rest)),
                None => Ok(PathBuf::from(value)),
            }
        }
        None => Ok(user_home.ok_or_else(no_home)?.join(".dsh")),
    }
}

/// Holds `$DSH_HOME/<name>` as an advisory lock (`flock`) until the file returned is dropped,
/// so two processes rewriting one of the home's files cannot lose each other's change. `None`
/// when there is no home yet (nothing to race with until it is made). The lock file is opened
/// without following a link.
pub(crate) fn hold_lock(home: &Path, name: &str) -> std::io::Result<Option<std::fs::File>> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if !home.is_dir() {
        return Ok(None);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(home.join(name))?;
    // SAFETY: flock on a descriptor this function owns; it is let go when the file closes.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_dsh_home() {
        let user = Path::new("/home/u");
        assert_eq!(
            dsh_home(None, Some(user)).unwrap(),
            PathBuf::from("/home/u/.dsh")
        );
        assert_eq!(
            dsh_home(Some("  "), Some(user)).unwrap(),
            PathBuf::from("/home/u/.dsh")
        );
        assert_eq!(
            dsh_home(Some("~/x"), Some(user)).unwrap(),
            PathBuf::from("/home/u/x")
        );
        assert_eq!(
            dsh_home(Some("/srv/d"), None).unwrap(),
            PathBuf::from("/srv/d")
        );
        assert!(dsh_home(None, None).is_err());
    }
}
