use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::SandboxMode;

/// The sandbox policy of one call: its mode and, under `workspace-write`, the directories it
/// may write below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    workspace: PathBuf,
    extra_roots: Vec<PathBuf>,
    roots: Vec<PathBuf>,
}

impl SandboxPolicy {
    /// A policy for `workspace` (canonicalised) and granted `extra_roots` (already real paths).
    /// The temporary areas, `/tmp` and the OS temporary directory (`TMPDIR`), are writable too.
    pub fn new(mode: SandboxMode, workspace: &Path, extra_roots: Vec<PathBuf>) -> Self {
        let workspace = canonical(workspace);
        let mut roots = Vec::new();
        for root in [
            workspace.clone(),
            PathBuf::from("/tmp"),
            std::env::temp_dir(),
        ]
        .into_iter()
        .map(|p| canonical(&p))
        .chain(extra_roots.iter().cloned())
        {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        SandboxPolicy {
            mode,
            workspace,
            extra_roots,
            roots,
        }
    }

    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The workspace, as a real path: relative paths of mutations resolve against it.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The same policy under another mode (an approved escalation of one call).
    pub fn with_mode(&self, mode: SandboxMode) -> Self {
        SandboxPolicy {
            mode,
            ..self.clone()
        }
    }

    /// The directories writes may land under: empty under `read-only`; under
    /// `danger-full-access` nothing is checked.
    pub fn writable_roots(&self) -> &[PathBuf] {
        match self.mode {
            SandboxMode::ReadOnly => &[],
            SandboxMode::WorkspaceWrite | SandboxMode::DangerFullAccess => &self.roots,
        }
    }

    /// The directories granted beyond the workspace and the temporary areas.
    pub fn extra_roots(&self) -> &[PathBuf] {
        &self.extra_roots
    }

    /// Whether a write to `real_path` (symlinks already resolved) is allowed.
    pub fn allows_write(&self, real_path: &Path) -> bool {
        match self.mode {
            SandboxMode::DangerFullAccess => true,
            SandboxMode::ReadOnly => false,
            SandboxMode::WorkspaceWrite => {
                self.roots.iter().any(|root| real_path.starts_with(root))
                    || self.is_aliased_under_a_root(real_path)
            }
        }
    }

    /// A root reached under another name (a bind mount): an existing ancestor of the path that
    /// is the same directory, by device and inode, as a root.
    fn is_aliased_under_a_root(&self, path: &Path) -> bool {
        let roots: Vec<(u64, u64)> = self
            .roots
            .iter()
            .filter_map(|r| std::fs::metadata(r).ok().map(|m| (m.dev(), m.ino())))
            .collect();
        path.ancestors()
            .filter_map(|a| std::fs::metadata(a).ok())
            .any(|m| m.is_dir() && roots.contains(&(m.dev(), m.ino())))
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_write_allows_the_workspace_and_temp_only() {
        let ws = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), Vec::new());
        let real = std::fs::canonicalize(ws.path()).unwrap();
        assert!(policy.allows_write(&real.join("a/b.txt")));
        assert!(policy.allows_write(&real));
        assert!(policy.allows_write(Path::new("/tmp/x")));
        assert!(!policy.allows_write(Path::new("/etc/passwd")));
        // A sibling whose name starts like the workspace is not inside it.
        let sibling = PathBuf::from(format!("{}-other/x", real.display()));
        assert!(!policy.allows_write(&sibling) || sibling.starts_with("/tmp"));
    }

    #[test]
    fn extra_roots_are_writable_and_modes_bound_everything() {
        let ws = tempfile::tempdir().unwrap();
        let extra = PathBuf::from("/srv/granted");
        let policy =
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), vec![extra.clone()]);
        assert!(policy.allows_write(&extra.join("f")));
        assert!(
            !policy
                .with_mode(SandboxMode::ReadOnly)
                .allows_write(&extra.join("f"))
        );
        assert!(
            policy
                .with_mode(SandboxMode::DangerFullAccess)
                .allows_write(Path::new("/etc/x"))
        );
        assert!(
            policy
                .with_mode(SandboxMode::ReadOnly)
                .writable_roots()
                .is_empty()
        );
    }
}
