//! Reading a finished confined command: did the sandbox refuse a write, did the runner itself
//! fail, or did the command simply run?
//!
//! A denial needs a non-zero exit (a signal death never counts) and the backend's error text on
//! a line of stdout or stderr: both are searched, so `2>&1` does not hide a denial as it does in
//! the reference. Under bubblewrap the text is `Read-only file system` (EROFS), which only the
//! read-only bind produces for ordinary paths. Under Landlock it is `Permission denied`
//! (EACCES), which ordinary failures print too (a `chmod 000` file, an ssh key refused), so a
//! line counts only when it names a path the policy does not let the command write: a path
//! inside the writable roots, or no path at all (`Permission denied (publickey)`), is the
//! command's own failure.

use std::path::{Component, Path, PathBuf};

use crate::SandboxPolicy;

/// What a finished confined command amounted to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It ran; the result is its own.
    Ran,
    /// It ran and the sandbox refused a write it tried.
    Denied,
    /// The runner failed before the command started; the line says why.
    RunnerFailed(String),
}

const EROFS_TEXT: &str = "read-only file system";
const EACCES_TEXT: &str = "permission denied";
const EBUSY_TEXT: &str = "device or resource busy";

/// Lines showing a bubblewrap denial: EROFS, unless every path the line names is absolute and
/// inside the writable roots (a relative one may be relative to wherever the command `cd`-ed).
pub(crate) fn erofs_denied(output: &[&str], policy: &SandboxPolicy, cwd: &Path) -> bool {
    output.iter().flat_map(|text| text.lines()).any(|line| {
        let lower = line.to_lowercase();
        // Replacing or removing a protected path, which is bound read-only over the
        // workspace, fails with EBUSY (it is a mount point), not EROFS: in the workspace, the
        // only mount points are the sandbox's.
        if lower.contains(EBUSY_TEXT) {
            let paths = mentioned_paths(line, true);
            return paths.is_empty()
                || paths.iter().any(|p| {
                    let path = Path::new(p);
                    !path.is_absolute() || path.starts_with(policy.workspace())
                });
        }
        if !lower.contains(EROFS_TEXT) {
            return false;
        }
        let paths = mentioned_paths(line, true);
        paths.is_empty()
            || paths
                .iter()
                .any(|p| !Path::new(p).is_absolute() || !writable(policy, cwd, p))
    })
}

/// Lines showing a Landlock denial: EACCES for a path (the quoted one, or the field before
/// `: Permission denied`) that the policy does not let the command write but dsh itself could:
/// a path nobody could write, or one inside the roots, is the command's own failure. A program
/// name at the head of the line (`/bin/sh: 1: ./configure: Permission denied`) is not the path.
pub(crate) fn eacces_denied(output: &[&str], policy: &SandboxPolicy, cwd: &Path) -> bool {
    output.iter().flat_map(|text| text.lines()).any(|line| {
        line.to_lowercase().contains(EACCES_TEXT)
            && mentioned_paths(line, false)
                .iter()
                .any(|p| !writable(policy, cwd, p) && writable_by_us(&cwd.join(p)))
    })
}

/// Whether dsh's own process could write `path` (or create it in its nearest existing folder).
fn writable_by_us(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let path = normalise(path);
    let existing = path.ancestors().find(|a| a.symlink_metadata().is_ok());
    let Some(existing) = existing else {
        return false;
    };
    let Ok(c_path) = std::ffi::CString::new(existing.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads the NUL-terminated path and nothing else.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Whether `raw` (absolute, or relative to `cwd`) is writable under `policy`.
fn writable(policy: &SandboxPolicy, cwd: &Path, raw: &str) -> bool {
    let joined = cwd.join(raw);
    policy.allows_write(&real_path(&normalise(&joined)))
}

/// `.`, `..` and repeated separators taken out without touching the file system (`..` at the
/// root stays at the root); what the sandbox judges and the file tools resolve from.
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from("/")
    } else {
        out
    }
}

/// The real path of the deepest existing ancestor, with the rest appended.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.file_name().map(ToOwned::to_owned), current.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The paths an error line names: quoted text (`'x'`, `"x"`, `‘x’`), the field before
/// `: Permission denied` or `: Read-only file system` (how bash and most tools print
/// `<path>: <strerror>`), and with `words`, any word that starts with `/`.
fn mentioned_paths(line: &str, words: bool) -> Vec<String> {
    let mut found = Vec::new();
    let mut push = |candidate: &str| {
        let candidate = candidate.trim();
        if !candidate.is_empty() && !found.iter().any(|f| f == candidate) {
            found.push(candidate.to_owned());
        }
    };
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\'')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            push(&after[..end]);
            rest = &after[end + close.len_utf8()..];
        }
    }
    for word in line.split(|c: char| c.is_whitespace() || "'\"‘’`,()[]".contains(c)) {
        if words && word.starts_with('/') {
            push(word.trim_end_matches(':'));
        }
    }
    let lower = line.to_lowercase();
    for marker in [": permission denied", ": read-only file system"] {
        if let Some(at) = lower.find(marker) {
            // Lower-casing can change byte lengths only outside ASCII; fall back when it did.
            let head = line.get(..at).unwrap_or("");
            let field = head.rsplit(": ").next().unwrap_or(head);
            if !field.contains(' ') || field.starts_with('/') {
                push(field);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SandboxMode;

    #[test]
    fn normalises_lexically() {
        assert_eq!(
            normalise(Path::new("/w/sub/../sub/./f.txt")),
            PathBuf::from("/w/sub/f.txt")
        );
        assert_eq!(normalise(Path::new("/w//a")), PathBuf::from("/w/a"));
        assert_eq!(normalise(Path::new("/..")), PathBuf::from("/"));
    }

    fn policy(ws: &Path) -> SandboxPolicy {
        SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws, Vec::new())
    }

    #[test]
    fn paths_are_found_in_the_usual_error_shapes() {
        let paths = |line| mentioned_paths(line, false);
        assert_eq!(
            paths("bash: line 1: /etc/x: Permission denied"),
            vec!["/etc/x"]
        );
        assert_eq!(
            paths("touch: cannot touch '/etc/x': Permission denied"),
            vec!["/etc/x"]
        );
        assert_eq!(
            paths("mkdir: cannot create directory ‘../up’: Permission denied"),
            vec!["../up"]
        );
        assert_eq!(
            paths("PermissionError: [Errno 13] Permission denied: '/usr/z'"),
            vec!["/usr/z"]
        );
        assert_eq!(
            paths("bash: line 1: out.txt: Permission denied"),
            vec!["out.txt"]
        );
        // The program at the head of the line is not the path.
        assert_eq!(
            paths("/bin/sh: 1: ./configure: Permission denied"),
            vec!["./configure"]
        );
        assert!(paths("/usr/bin/ld: cannot open output file a.out: Permission denied").is_empty());
    }

    #[test]
    fn eacces_counts_only_outside_the_writable_roots() {
        let ws = tempfile::tempdir().unwrap();
        let p = policy(ws.path());
        let cwd = std::fs::canonicalize(ws.path()).unwrap();
        let denied = |line: &str| eacces_denied(&["", line], &p, &cwd);
        assert!(denied("bash: line 1: /etc/x: Permission denied"));
        assert!(denied(
            "touch: cannot touch '../../../etc/y': Permission denied"
        ));
        // The command's own failures: a file inside the workspace, or no path at all.
        assert!(!denied("bash: line 1: ./locked.txt: Permission denied"));
        assert!(!denied("git@github.com: Permission denied (publickey)."));
        assert!(!denied("fatal: Could not read from remote repository."));
        assert!(!denied("/bin/sh: 1: ./configure: Permission denied"));
    }

    #[test]
    fn erofs_counts_in_either_stream() {
        let ws = tempfile::tempdir().unwrap();
        let p = policy(ws.path());
        let line = "bash: line 1: /etc/x: Read-only file system";
        assert!(erofs_denied(&[line, ""], &p, ws.path()));
        assert!(erofs_denied(&["", line], &p, ws.path()));
        assert!(!erofs_denied(
            &["ls: cannot access 'x': No such file"],
            &p,
            ws.path()
        ));
    }
}
