//! Keys saved by `dsh login`: `$DSH_HOME/credentials`, `NAME=value` lines as a `.env` file has
//! them, readable by the user alone. It is the last place [`Credentials`](crate::Credentials)
//! looks, after the launch environment and the `.env` files: a key exported or written in a
//! project's `.env` is a choice made for that run or that project, and wins over the one saved
//! for every run (as `gh`, `aws` and `codex` treat their stored credentials).

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::home::saved_keys_path;

/// Why a key could not be saved or forgotten.
#[derive(Debug, thiserror::Error)]
pub enum SavedKeyError {
    #[error(
        "the key cannot be saved as it is: a key is one line of printable characters without \
         spaces or quotes (check what was pasted)"
    )]
    NotAKey,
    #[error(
        "\"{0}\" cannot name a saved key: a name is letters, digits and _, and not one that \
         only the launching environment may set (check the provider's api_key_env)"
    )]
    BadName(String),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Unreadable(#[from] crate::DotenvError),
    #[error(
        "{} is a symbolic link or not a regular file: dsh keeps the keys it saves in a file of \
         its own and never reads or writes them through a link (that would copy the other \
         file's contents here). Remove it and sign in again",
        path.display()
    )]
    NotAFile { path: PathBuf },
}

/// Saves `value` as the key `name` (replacing one saved before), in a file only the user can
/// read, written whole by a rename so no reader sees half of it.
pub fn save_key(home: &Path, name: &str, value: &str) -> Result<(), SavedKeyError> {
    let valid_name = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !crate::dotenv::is_reserved(name);
    if !valid_name {
        return Err(SavedKeyError::BadName(name.to_owned()));
    }
    let odd = |c: char| c.is_whitespace() || c.is_control() || c == '\'' || c == '"';
    if value.is_empty() || value.chars().any(odd) {
        return Err(SavedKeyError::NotAKey);
    }
    let _lock = lock(home)?;
    let mut keys = saved(home)?;
    keys.retain(|(saved, _)| saved != name);
    keys.push((name.to_owned(), value.to_owned()));
    write(home, &keys)
}

/// Forgets the key `name`; whether one was saved.
pub fn forget_key(home: &Path, name: &str) -> Result<bool, SavedKeyError> {
    let _lock = lock(home)?;
    let mut keys = saved(home)?;
    let before = keys.len();
    keys.retain(|(saved, _)| saved != name);
    if keys.len() == before {
        return Ok(false);
    }
    write(home, &keys)?;
    Ok(true)
}

/// The saved keys, in file order, read to be changed: from the file itself, never through a
/// link put at its name (whose target's lines would be copied into the file written back),
/// and never from something other than a file (a FIFO would hang the read).
pub(crate) fn saved(home: &Path) -> Result<Vec<(String, String)>, SavedKeyError> {
    use std::io::Read as _;
    let path = saved_keys_path(home);
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path);
    let unreadable = |e: std::io::Error| crate::DotenvError::Unreadable {
        path: path.clone(),
        reason: e.to_string(),
    };
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(SavedKeyError::NotAFile { path });
        }
        Err(e) => return Err(unreadable(e).into()),
    };
    if !file.metadata().map_err(unreadable)?.is_file() {
        return Err(SavedKeyError::NotAFile { path });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(unreadable)?;
    Ok(crate::dotenv::parse(&text, &path)?)
}

/// Holds `$DSH_HOME/.credentials.lock` (an advisory lock) while the file is read and written
/// again, so two sign-ins at once cannot lose one of the keys. `None` when there is no home yet
/// (nothing to race with until it is made).
fn lock(home: &Path) -> Result<Option<std::fs::File>, SavedKeyError> {
    crate::home::hold_lock(home, ".credentials.lock").map_err(|source| SavedKeyError::Write {
        path: home.join(".credentials.lock"),
        source,
    })
}

fn write(home: &Path, keys: &[(String, String)]) -> Result<(), SavedKeyError> {
    let path = saved_keys_path(home);
    let failed = |source| SavedKeyError::Write {
        path: path.clone(),
        source,
    };
    if keys.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(failed(e)),
            _ => Ok(()),
        };
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)
        .map_err(failed)?;
    let mut text = String::from("# API keys saved by `dsh login` (`dsh logout` removes one).\n");
    for (name, value) in keys {
        // Single quotes keep the value as it is.
        text.push_str(&format!("{name}='{value}'\n"));
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let staged = home.join(format!(".credentials.{}.{nanos}", std::process::id()));
    // A new file, never one planted at the name (and never through a link), private from its
    // first byte.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&staged)
        .and_then(|mut file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&staged, &path))
        .and_then(|()| std::fs::File::open(home)?.sync_all());
    written.map_err(|e| {
        let _ = std::fs::remove_file(&staged);
        failed(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_saved_private_replaced_and_forgotten() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().join("dsh");
        save_key(&home, "DEEPSEEK_API_KEY", "sk-one").unwrap();
        save_key(&home, "OTHER_KEY", "o'ne\"").unwrap_err();
        save_key(&home, "OTHER_KEY", "other").unwrap();
        save_key(&home, "DEEPSEEK_API_KEY", "sk-two").unwrap();
        let path = saved_keys_path(&home);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            saved(&home).unwrap(),
            [
                ("OTHER_KEY".to_owned(), "other".to_owned()),
                ("DEEPSEEK_API_KEY".to_owned(), "sk-two".to_owned())
            ]
        );
        assert!(forget_key(&home, "DEEPSEEK_API_KEY").unwrap());
        assert!(!forget_key(&home, "DEEPSEEK_API_KEY").unwrap());
        assert!(forget_key(&home, "OTHER_KEY").unwrap());
        assert!(!path.exists(), "no keys, no file");
        assert!(matches!(
            save_key(&home, "K", "two words"),
            Err(SavedKeyError::NotAKey)
        ));
        // A name from a provider's config is checked too: no line of its own, no name only
        // the launching environment may set.
        for name in ["A\nLD_PRELOAD", "LD_PRELOAD", "DSH_KEY", "1KEY", ""] {
            assert!(matches!(
                save_key(&home, name, "v"),
                Err(SavedKeyError::BadName(_))
            ));
        }
    }
}
