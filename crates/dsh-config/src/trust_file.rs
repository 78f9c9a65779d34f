//! Writing your decision about a folder into `$DSH_HOME/config.toml`, as `dsh trust`, `dsh
//! untrust` and the terminal UI's first-run question do: an entry `[projects."<real path>"]
//! trusted = true|false`. The rest of the file is kept as you wrote it: an entry that names the
//! folder already has its value changed in place, else one is added at the end; the file is
//! written whole by a rename (through a link at its name, to the file it leads to, as a
//! dotfiles checkout keeps it), under a lock (`$DSH_HOME/.config.toml.lock`) so that two
//! decisions written at once are both kept.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::trust::quote_path;

/// Why a decision could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{} cannot be named: {reason}", folder.display())]
    Folder { folder: PathBuf, reason: String },
    #[error("cannot read {}: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
    #[error("{}: {message}", path.display())]
    Edit { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    projects: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
struct Entry {
    trusted: Option<toml::Spanned<bool>>,
}

/// Records in `$DSH_HOME/config.toml` (under `home`) that `folder` is trusted, or not; the
/// folder's real path as written, and the file written.
pub fn set_trust(
    home: &Path,
    folder: &Path,
    trusted: bool,
) -> Result<(PathBuf, PathBuf), TrustError> {
    let folder_error = |reason: String| TrustError::Folder {
        folder: folder.to_path_buf(),
        reason,
    };
    let real = std::fs::canonicalize(folder).map_err(|e| folder_error(e.to_string()))?;
    if !real.is_dir() {
        return Err(folder_error("it is not a folder".into()));
    }
    if real.to_str().is_none() {
        return Err(folder_error(
            "its path is not UTF-8, which a TOML key cannot hold".into(),
        ));
    }
    let named = home.join("config.toml");
    if !home.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(home)
            .map_err(|source| TrustError::Write {
                path: named.clone(),
                source,
            })?;
    }
    // Read, changed and written again under the lock: without it, of two decisions written at
    // once (a `dsh untrust` among them) one was lost.
    let _lock =
        crate::home::hold_lock(home, ".config.toml.lock").map_err(|source| TrustError::Write {
            path: named.clone(),
            source,
        })?;
    // A link at the name is followed: the file it leads to is the one you edit.
    let path = std::fs::canonicalize(&named).unwrap_or(named);
    if std::fs::metadata(&path).is_ok_and(|m| !m.is_file()) {
        return Err(TrustError::Read {
            path,
            reason: "it is not a regular file (a device, a FIFO or a folder, maybe through a \
                     link)"
                .into(),
        });
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(TrustError::Read {
                path,
                reason: e.to_string(),
            });
        }
    };
    let edited = edited(&text, &real, trusted).map_err(|message| TrustError::Edit {
        path: path.clone(),
        message,
    })?;
    write(home, &path, &edited)?;
    Ok((real, path))
}

/// `text` with the decision in it.
fn edited(text: &str, folder: &Path, trusted: bool) -> Result<String, String> {
    let doc: Doc = toml::from_str(text).map_err(|e| {
        format!("cannot be read as TOML, so the decision was not added: fix it first ({e})")
    })?;
    let value = if trusted { "true" } else { "false" };
    let entry = (doc.projects.iter()).find(|(key, _)| {
        std::fs::canonicalize(key).is_ok_and(|p| p == folder) || Path::new(key) == folder
    });
    let mut out = match entry {
        Some((_, Entry { trusted: Some(old) })) => {
            let span = old.span();
            format!("{}{value}{}", &text[..span.start], &text[span.end..])
        }
        Some((key, Entry { trusted: None })) => {
            return Err(format!(
                "[projects.{}] has no trusted key: add trusted = {value} under it",
                quote_path(Path::new(key))
            ));
        }
        None => {
            let mut out = text.to_owned();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!(
                "[projects.{}]\ntrusted = {value}\n",
                quote_path(folder)
            ));
            out
        }
    };
    if let Err(e) = toml::from_str::<super::sections::Config>(&out) {
        return Err(format!(
            "the entry could not be added as the file is written ({}); add [projects.{}] \
             trusted = {value} to it yourself",
            e.message(),
            quote_path(folder)
        ));
    }
    // Read back as a run reads it: the folder's own entry, and nothing else changed.
    let reads_back = toml::from_str::<Doc>(&out).is_ok_and(|after| {
        let decided = |d: &Doc, key: &str| d.projects.get(key).and_then(|e| e.trusted.clone());
        // The entry changed in place, or the one added.
        let key = entry.map_or_else(|| folder.to_string_lossy().into_owned(), |(k, _)| k.clone());
        decided(&after, &key).map(toml::Spanned::into_inner) == Some(trusted)
            && (doc.projects.keys().chain(after.projects.keys())).all(|other| {
                *other == key
                    || decided(&doc, other).map(toml::Spanned::into_inner)
                        == decided(&after, other).map(toml::Spanned::into_inner)
            })
    });
    if !reads_back {
        return Err(format!(
            "the entry would not read back as written; add [projects.{}] trusted = {value} to \
             it yourself",
            quote_path(folder)
        ));
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// Writes `text` to `path` whole: a new file beside it, renamed over it, with its mode (a new
/// one readable by you alone, as config files can hold headers with keys).
fn write(home: &Path, path: &Path, text: &str) -> Result<(), TrustError> {
    let fail = |source: std::io::Error| TrustError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mode = std::fs::metadata(path).map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let dir = path.parent().unwrap_or(home);
    let temporary = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temporary)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_is_added_or_changed_in_place_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("w s\"x"));
        std::fs::create_dir_all(&ws).unwrap();
        // No home yet: made, with a file readable by you alone.
        let (real, file) = set_trust(&home, &ws, true).unwrap();
        assert_eq!(real, std::fs::canonicalize(&ws).unwrap());
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let text = std::fs::read_to_string(&file).unwrap();
        let doc: Doc = toml::from_str(&text).unwrap();
        let key = real.to_str().unwrap();
        assert_eq!(
            doc.projects[key].trusted.as_ref().map(|t| *t.get_ref()),
            Some(true)
        );

        let mine = format!("# mine\nmodel = \"m\" # kept\n\n{text}[sandbox]\nnetwork = false\n");
        std::fs::write(&file, &mine).unwrap();
        set_trust(&home, &ws, false).unwrap();
        let after = std::fs::read_to_string(&file).unwrap();
        assert_eq!(after, mine.replace("trusted = true", "trusted = false"));
        // Again: nothing added twice.
        set_trust(&home, &ws, false).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
    }

    #[test]
    fn a_file_it_cannot_add_to_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let inline = "projects = { \"/elsewhere\" = { trusted = true } }\n";
        std::fs::write(home.join("config.toml"), inline).unwrap();
        let error = set_trust(&home, dir.path(), true).unwrap_err();
        assert!(error.to_string().contains("yourself"), "{error}");
        assert_eq!(
            std::fs::read_to_string(home.join("config.toml")).unwrap(),
            inline
        );
        std::fs::write(home.join("config.toml"), "model = \n").unwrap();
        let error = set_trust(&home, dir.path(), true).unwrap_err();
        assert!(error.to_string().contains("fix it first"), "{error}");
    }

    /// The attack: decisions written at once (the terminal UI's question and a `dsh untrust`,
    /// two terminals) read the same file and the last rename won: of 30, 8 were kept, so a
    /// folder the user refused could stay trusted. Under the lock each is kept.
    #[test]
    fn decisions_written_at_once_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let folders: Vec<PathBuf> = (0..16).map(|i| dir.path().join(format!("d{i}"))).collect();
        for folder in &folders {
            std::fs::create_dir_all(folder).unwrap();
        }
        std::thread::scope(|scope| {
            for (i, folder) in folders.iter().enumerate() {
                let home = &home;
                scope.spawn(move || set_trust(home, folder, i % 2 == 0).unwrap());
            }
        });
        let text = std::fs::read_to_string(home.join("config.toml")).unwrap();
        let doc: Doc = toml::from_str(&text).unwrap();
        for (i, folder) in folders.iter().enumerate() {
            let key = std::fs::canonicalize(folder).unwrap();
            let entry = &doc.projects[key.to_str().unwrap()];
            assert_eq!(
                entry.trusted.as_ref().map(|t| *t.get_ref()),
                Some(i % 2 == 0)
            );
        }
    }

    /// The attack: a folder named to close the table key and open another
    /// (`x"]` newline `[projects."/"]` newline `trusted = true`), with an escape sequence and a
    /// right-to-left override. The entry names exactly that folder, reads back as written, and
    /// trusts nothing else; a config that is no regular file is refused without reading it.
    #[test]
    fn a_folder_name_cannot_add_another_entry() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let evil = dir
            .path()
            .join("x\"]\n[projects.\"/\"]\ntrusted = true\n#\u{1b}[31m\u{202e}\\");
        std::fs::create_dir_all(&evil).unwrap();
        let (real, file) = set_trust(&home, &evil, true).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text}"
        );
        let doc: Doc = toml::from_str(&text).unwrap();
        assert_eq!(
            doc.projects.keys().collect::<Vec<_>>(),
            [real.to_str().unwrap()]
        );
        let shown = crate::trust::shown_path(&real);
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\n'),
            "{shown}"
        );

        std::fs::remove_file(&file).unwrap();
        let fifo = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let error = set_trust(&home, &evil, true).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }
}
