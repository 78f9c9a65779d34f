//! Path resolution for the file tools.
//!
//! A path has two faces: the *display* path, the absolute, lexically normalised spelling the
//! model gave (shown in every message), and the *key*, its real path with symlinks resolved,
//! which identifies the file. For a path that does not exist yet the key is the real path of the
//! nearest existing ancestor with the missing components appended, so it stays the same before
//! and after the file is created. There is no `~` expansion: `~/x` is a relative path.

use std::io;
use std::path::{Path, PathBuf};

use crate::{ToolError, fs_code};

/// A resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub display: PathBuf,
    pub key: PathBuf,
}

impl Target {
    pub fn shown(&self) -> std::path::Display<'_> {
        self.display.display()
    }
}

/// Resolves `raw` against `base`.
pub fn resolve(base: &Path, raw: &str) -> Result<Target, ToolError> {
    if raw.contains('\0') {
        return Err(ToolError::plain(
            "the path contains a NUL byte, which no file name can hold",
        ));
    }
    // A `..` steps out of the physical directory, not out of a symlink's spelling of it.
    let base = if has_parent_segment(raw) || has_parent_segment(&base.to_string_lossy()) {
        std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf())
    } else {
        base.to_path_buf()
    };
    let display = dsh_sandbox::normalise(&base.join(raw));
    let key = real_key(&display)?;
    Ok(Target { display, key })
}

fn has_parent_segment(path: &str) -> bool {
    path.split(['/', '\\']).any(|segment| segment == "..")
}

fn real_key(display: &Path) -> Result<PathBuf, ToolError> {
    match std::fs::canonicalize(display) {
        Ok(real) => Ok(real),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // The nearest existing ancestor's real path, with the missing rest appended.
            let mut suffix = Vec::new();
            let mut current = display;
            while let Some(parent) = current.parent() {
                if let Some(name) = current.file_name() {
                    suffix.push(name.to_owned());
                }
                match std::fs::canonicalize(parent) {
                    Ok(mut real) => {
                        for name in suffix.iter().rev() {
                            real.push(name);
                        }
                        return Ok(real);
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => current = parent,
                    Err(e) => return Err(resolve_error(display, &e)),
                }
            }
            Ok(display.to_path_buf())
        }
        Err(e) => Err(resolve_error(display, &e)),
    }
}

fn resolve_error(display: &Path, error: &io::Error) -> ToolError {
    let shown = display.display();
    match error.kind() {
        io::ErrorKind::NotADirectory => ToolError::fs(
            fs_code::NOT_FOUND,
            format!("cannot resolve \"{shown}\": a parent path segment is not a directory"),
        ),
        io::ErrorKind::PermissionDenied => ToolError::fs(
            fs_code::PERMISSION_DENIED,
            format!("cannot resolve \"{shown}\": permission denied"),
        ),
        _ => ToolError::fs(
            fs_code::IO_ERROR,
            format!("cannot resolve \"{shown}\": {}", io_reason(error)),
        ),
    }
}

/// An I/O error as a short reason ("file name too long"), without the errno.
pub(crate) fn io_reason(error: &io::Error) -> String {
    if error.raw_os_error() == Some(libc::ELOOP) {
        return "too many levels of symbolic links (a symlink loop?)".to_owned();
    }
    let text = error.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) => &text[..at],
        None => &text,
    };
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |c| c.to_lowercase().chain(chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_missing_paths_by_their_existing_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let target = resolve(dir.path(), "no/such/x.txt").unwrap();
        assert_eq!(target.display, dir.path().join("no/such/x.txt"));
        assert_eq!(target.key, real.join("no/such/x.txt"));
    }

    #[test]
    fn a_file_used_as_a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let error = resolve(dir.path(), "a.txt/child").unwrap_err();
        assert_eq!(
            error.message,
            format!(
                "cannot resolve \"{}\": a parent path segment is not a directory",
                dir.path().join("a.txt/child").display()
            )
        );
    }

    #[test]
    fn symlinks_share_one_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.txt"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("link.txt"))
            .unwrap();
        let a = resolve(dir.path(), "real.txt").unwrap();
        let b = resolve(dir.path(), "link.txt").unwrap();
        assert_eq!(a.key, b.key);
        assert_ne!(a.display, b.display);
    }

    #[test]
    fn tilde_is_not_expanded() {
        let target = resolve(Path::new("/w"), "~/f.txt").unwrap();
        assert_eq!(target.display, PathBuf::from("/w/~/f.txt"));
    }
}
