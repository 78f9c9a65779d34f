use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::SandboxMode;
use crate::git_view::GitView;
use crate::secrets::{Hidden, HomeSecrets};
use dsh_fence::{WriteSite, write_site};

/// The sandbox policy of one call: its mode and, under `workspace-write`, the directories it
/// may write below.
///
/// Each root is pinned when the policy is made: its device and inode, and an `O_PATH` handle
/// on the directory. A command may rename a root whose parent it can write (a workspace under
/// `/tmp`) and put a symlink to somewhere else in its place; grants and checks follow the
/// directory that was granted, never what the path names later.
#[derive(Debug, Clone)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    workspace: PathBuf,
    extra_roots: Vec<PathBuf>,
    roots: Vec<PathBuf>,
    pinned: Arc<Vec<PinnedRoot>>,
    /// dsh's own home (`DSH_HOME`): its config, hooks and sessions, which dsh trusts.
    dsh_home: Option<PathBuf>,
    /// The secrets in it, as this process has seen them.
    secrets: Option<HomeSecrets>,
    /// What Git runs for the workspace, as Git reported it before the first command (the
    /// snapshot), and as it was last asked.
    git: Arc<GitWatch>,
}

/// Git's view of the workspace: the snapshot, taken once, and the latest.
#[derive(Debug, Default)]
struct GitWatch {
    snapshot: OnceLock<Option<GitView>>,
    latest: Mutex<Option<GitView>>,
}

/// A writable root as it was when the policy was made.
#[derive(Debug)]
pub(crate) struct PinnedRoot {
    pub(crate) path: PathBuf,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// The directory itself.
    pub(crate) handle: OwnedFd,
}

impl PartialEq for SandboxPolicy {
    fn eq(&self, other: &Self) -> bool {
        self.mode == other.mode
            && self.workspace == other.workspace
            && self.extra_roots == other.extra_roots
            && self.roots == other.roots
    }
}

impl Eq for SandboxPolicy {}

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
        let pinned = roots.iter().filter_map(|root| pin(root)).collect();
        SandboxPolicy {
            mode,
            workspace,
            extra_roots,
            roots,
            pinned: Arc::new(pinned),
            dsh_home: None,
            secrets: None,
            git: Arc::default(),
        }
    }

    /// The same policy, with dsh's home protected like the workspace's `.dsh/`: its config can
    /// widen the next run's sandbox and its hooks run commands, and it may well lie in a
    /// writable root (a `DSH_HOME` under `/tmp`, or inside the workspace). Its secrets are
    /// found now, if this process has not found them yet ([`crate::secrets`]).
    pub fn with_dsh_home(mut self, home: &Path) -> Self {
        let home = canonical(home);
        self.secrets = Some(HomeSecrets::of(&home));
        self.dsh_home = Some(home);
        self
    }

    /// What commands may not read at all, in any sandboxed mode: the secrets dsh keeps in
    /// its home (the keys `dsh login` saved, its `.env`, the MCP servers' sign-ins, its config
    /// files, the page holding `dsh web`'s token), under the names they have now, and where a
    /// symlinked one leads. The run's redactor hides their
    /// values in what comes back, but a command that could read them could also send them
    /// somewhere before anything comes back. Where a backend cannot hide one, it says so
    /// ([`crate::Enforcement`]).
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        self.hidden().paths
    }

    /// The secrets to hide now, by path and by identity.
    pub(crate) fn hidden(&self) -> Hidden {
        match &self.secrets {
            Some(secrets) if self.mode != SandboxMode::DangerFullAccess => secrets.hidden(),
            _ => Hidden::default(),
        }
    }

    /// A folder holding secrets that a command moved or replaced since dsh found it: commands
    /// are refused then, since what it holds is no longer where the sandbox hides it.
    pub(crate) fn moved_secrets(&self) -> Option<PathBuf> {
        match &self.secrets {
            Some(secrets) if self.mode != SandboxMode::DangerFullAccess => secrets.moved(),
            _ => None,
        }
    }

    /// The roots as they were pinned (those that existed as directories then).
    pub(crate) fn pinned_roots(&self) -> &[PinnedRoot] {
        &self.pinned
    }

    /// A pinned root whose path now names another directory (or nothing), if any.
    pub(crate) fn moved_root(&self) -> Option<&Path> {
        self.pinned
            .iter()
            .find(|root| {
                std::fs::symlink_metadata(&root.path)
                    .map(|m| !m.is_dir() || (m.dev(), m.ino()) != (root.dev, root.ino))
                    .unwrap_or(true)
            })
            .map(|root| root.path.as_path())
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
                (self.roots.iter().any(|root| real_path.starts_with(root))
                    || self.is_aliased_under_a_root(real_path))
                    && self.protection_of(real_path).is_none()
            }
        }
    }

    /// Under `workspace-write`, the paths inside the workspace that stay read-only unless an
    /// escalation is approved, because writing them changes what runs or what dsh trusts
    /// later: Git's hooks and config (a hook runs at the user's next commit), dsh's own
    /// `.dsh/` (its config can widen the sandbox, its hooks run commands) and the `.env`
    /// files of the workspace's top folder (where dsh reads keys). `.dsh/` is listed even
    /// when absent, so that it cannot be created; the Git paths when `.git` is the
    /// workspace's own folder, with the hooks folder its config names (`core.hooksPath`) and
    /// the files it includes, when they are in the workspace; `.git` itself when it is a file
    /// (a worktree's or a submodule's pointer); dsh's home when it is in the workspace or an
    /// added folder.
    pub fn protected_paths(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let ws = &self.workspace;
        let git = ws.join(".git");
        let mut paths = git_paths(&git, ws);
        // A `.git` file (a linked worktree, a submodule's checkout) says where the repository
        // is: a command that repoints it has the user's next `git status` run a repository of
        // its making, hooks and `core.fsmonitor` included.
        if std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_file()) {
            paths.push(git);
        }
        // Every config file Git reads for the workspace and its hooks folder, as Git itself
        // names them (an included file, a hooks path set anywhere), where a command could
        // write them.
        if let Some(view) = self.git_snapshot() {
            let programs = view.hook_files.iter().map(|(path, _)| path);
            for path in view.files.iter().chain(&view.hooks).chain(programs) {
                if self.in_granted_folder(path) && !paths.iter().any(|p| path.starts_with(p)) {
                    paths.push(path.clone());
                }
            }
        }
        paths.push(ws.join(".dsh"));
        paths.extend(top_level_env_files(ws));
        // dsh's home, where a command could reach it.
        if let Some(home) = &self.dsh_home
            && self.in_granted_folder(home)
            && !paths.contains(home)
        {
            paths.push(home.clone());
        }
        paths
    }

    /// The protected path ([`SandboxPolicy::protected_paths`]) `real_path` is, or is under,
    /// for the file tools. A protected path that is a symlink (a `.git/hooks` shared from a
    /// committed folder, an `.env` kept elsewhere in the workspace) protects where it leads too,
    /// since the tools write real paths; so does a `.git` that is a symlink. Any `.dsh/` in
    /// the workspace and dsh's home, wherever it is, are protected.
    pub fn protection_of(&self, real_path: &Path) -> Option<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return None;
        }
        let ws = &self.workspace;
        let mut listed = self.protected_paths();
        let git = ws.join(".git");
        if std::fs::symlink_metadata(&git).is_ok_and(|m| m.file_type().is_symlink()) {
            listed.push(git);
        }
        listed.extend(self.dsh_home.clone());
        for path in listed {
            if real_path.starts_with(&path) {
                return Some(path);
            }
            if let Ok(real) = std::fs::canonicalize(&path)
                && real != path
                && real_path.starts_with(&real)
            {
                return Some(path);
            }
        }
        // Any `.dsh/` in the workspace, not only the top one: dsh reads the one of the folder
        // it is started in, which may be a subfolder next time.
        if let Ok(inside) = real_path.strip_prefix(ws) {
            let mut dsh = ws.clone();
            for part in inside.components() {
                dsh.push(part);
                if part.as_os_str() == ".dsh" {
                    return Some(dsh);
                }
            }
        }
        let top_level_env = real_path.parent() == Some(ws.as_path())
            && real_path.file_name().is_some_and(is_env_file);
        top_level_env.then(|| real_path.to_path_buf())
    }

    /// Git's view of the workspace as it was before the run's first command (taken on first
    /// use); `None` outside `workspace-write` and outside a repository.
    fn git_snapshot(&self) -> Option<&GitView> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return None;
        }
        self.git
            .snapshot
            .get_or_init(|| GitView::read(&self.workspace))
            .as_ref()
    }

    /// After a command (and when the run stops): what Git would now run that it did not
    /// before the run's first command, set aside, a line each for the model and the user. A
    /// setting that appeared or changed has the file it came from renamed beside itself (so
    /// Git no longer reads it); a hook that appeared or changed is renamed itself. Git is asked
    /// only when a file it reads, the hooks folder, the index or `.git/modules` changed.
    pub fn git_changes(&self) -> Vec<String> {
        let Some(snapshot) = self.git_snapshot() else {
            return Vec::new();
        };
        let latest = || {
            self.git
                .latest
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        // Git runs without the lock held: a slow query holds up no other command's end.
        let changed = latest().as_ref().unwrap_or(snapshot).may_have_changed();
        if !changed {
            return Vec::new();
        }
        let Some(now) = GitView::read(&self.workspace) else {
            return Vec::new();
        };
        let (settings, hooks) = snapshot.new_in(&now);
        let ws = &self.workspace;
        let shown = |path: &Path| path.strip_prefix(ws).unwrap_or(path).display().to_string();
        let mut lines = Vec::new();
        let set_aside = |path: &Path, what: String| match crate::set_aside(path, ws) {
            Ok(to) => format!(
                "[sandbox: {what} appeared or changed during the command; Git would run it \
                 outside the sandbox, so {} was renamed to {}, where Git does not read it]",
                shown(path),
                shown(&to)
            ),
            Err(error) => format!(
                "[sandbox: {what} appeared or changed during the command, and {} could not be \
                 set aside ({error}): remove it before running Git there]",
                shown(path)
            ),
        };
        let mut done: Vec<PathBuf> = Vec::new();
        for setting in settings {
            let what = format!("Git setting {} = {:?}", setting.key, setting.value);
            match setting.origin {
                Some(origin) if origin.starts_with(ws) && !done.contains(&origin) => {
                    lines.push(set_aside(&origin, what));
                    done.push(origin);
                }
                Some(origin) if done.contains(&origin) => {}
                origin => lines.push(format!(
                    "[sandbox: {what} appeared or changed during the command, from {}, outside \
                     the workspace: check it before running Git]",
                    origin.map_or("no file".to_owned(), |o| o.display().to_string())
                )),
            }
        }
        for hook in hooks {
            if hook.starts_with(ws) {
                lines.push(set_aside(
                    &hook,
                    format!("{}, which Git runs,", shown(&hook)),
                ));
            }
        }
        // The view compared, not a fresh one: whatever changed since (a job planting again
        // while this set aside) changes its stamps, and the next check compares it.
        *latest() = Some(now);
        lines
    }

    /// The folder of `real_path` (a real path [`SandboxPolicy::allows_write`] allowed), opened
    /// beneath the handle pinned on the root that grants it, following no symlink, with missing
    /// folders made when `make_missing`: the one place every later step of the write is
    /// relative to ([`dsh_fence`]). Under `danger-full-access` nothing grants anything,
    /// and the folder is opened beneath `/` in the same way.
    pub fn write_site(&self, real_path: &Path, make_missing: bool) -> io::Result<WriteSite> {
        if self.mode == SandboxMode::DangerFullAccess {
            let slash = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
                .open("/")?;
            return write_site(slash.as_fd(), Path::new("/"), real_path, make_missing);
        }
        // A root itself is a folder, written in no folder of a root.
        if self.pinned.iter().any(|root| root.path == real_path) {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        }
        let parent = real_path.parent().unwrap_or(real_path);
        // The deepest root the path is under by name, else one it reaches under another name.
        let by_name = self
            .pinned
            .iter()
            .filter(|root| parent.starts_with(&root.path))
            .max_by_key(|root| root.path.components().count());
        if let Some(root) = by_name {
            return write_site(root.handle.as_fd(), &root.path, real_path, make_missing);
        }
        let Some((root, ancestor)) = self.aliased_root(parent) else {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        };
        let inside = real_path.strip_prefix(ancestor).unwrap_or(real_path);
        write_site(
            root.handle.as_fd(),
            &root.path,
            &root.path.join(inside),
            make_missing,
        )
    }

    /// A root reached under another name (a bind mount): an existing ancestor of the path that
    /// is the same directory, by device and inode, as a root was when the policy was made.
    fn is_aliased_under_a_root(&self, path: &Path) -> bool {
        self.aliased_root(path).is_some()
    }

    /// The pinned root `path` lies under by another name, and the ancestor of `path` that is
    /// that root's directory (by device and inode).
    fn aliased_root<'p>(&self, path: &'p Path) -> Option<(&PinnedRoot, &'p Path)> {
        path.ancestors().find_map(|ancestor| {
            let meta = std::fs::metadata(ancestor)
                .ok()
                .filter(std::fs::Metadata::is_dir)?;
            let root = (self.pinned.iter())
                .find(|root| (root.dev, root.ino) == (meta.dev(), meta.ino()))?;
            Some((root, ancestor))
        })
    }

    /// Whether `path` is in the workspace or a folder added with `--add-dir`: where a command
    /// can write under either backend (the temporary areas are private to each command under
    /// bubblewrap).
    fn in_granted_folder(&self, path: &Path) -> bool {
        std::iter::once(&self.workspace)
            .chain(&self.extra_roots)
            .any(|root| path.starts_with(root))
    }
}

/// The files of a workspace's own Git folder that make Git run something or look elsewhere
/// for what it runs: the hooks and config, a worktree's config and the common-folder pointer,
/// the linked worktrees' folders, and each submodule's hooks and config (nested submodules
/// too). Listed whether or not they exist; none when `.git` is not a folder. Then what the
/// config points at inside the workspace `ws` ([`config_targets`]).
fn git_paths(git: &Path, ws: &Path) -> Vec<PathBuf> {
    if !std::fs::symlink_metadata(git).is_ok_and(|m| m.is_dir()) {
        return Vec::new();
    }
    let mut paths = vec![
        git.join("hooks"),
        git.join("config"),
        git.join("config.worktree"),
        git.join("commondir"),
        git.join("worktrees"),
    ];
    for target in config_targets(git, ws) {
        if !paths.iter().any(|path| target.starts_with(path)) {
            paths.push(target);
        }
    }
    let mut modules = vec![(git.join("modules"), 0)];
    while let Some((dir, depth)) = modules.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let module = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if module.join("HEAD").is_file() {
                paths.push(module.join("hooks"));
                paths.push(module.join("config"));
                if depth < 4 {
                    modules.push((module.join("modules"), depth + 1));
                }
            } else if depth < 4 {
                // A submodule named with a slash (`libs/a`) is a folder of folders.
                modules.push((module, depth + 1));
            }
        }
    }
    paths
}

/// What a repository's config (`.git/config`, `.git/config.worktree`) points at inside the
/// workspace that Git runs or reads more config from: the `core.hooksPath` folder (a
/// committed `.githooks/` or `.husky/`), and the files `include.path` and `includeIf.*.path`
/// name, which could set one. A command that could write either could have the user's next
/// commit run its code outside the sandbox. Read with a small scanner of Git's config syntax
/// (sections, `key = value`, quotes, `~/`); a value it cannot place is passed over.
fn config_targets(git: &Path, ws: &Path) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    for file in [git.join("config"), git.join("config.worktree")] {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let mut section = String::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(header) = line.strip_prefix('[') {
                let name = header
                    .split([']', ' ', '"', '.'])
                    .next()
                    .unwrap_or_default();
                section = name.to_ascii_lowercase();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            let value = value.trim().trim_matches('"');
            let wanted = (section == "core" && key == "hookspath")
                || ((section == "include" || section == "includeif") && key == "path");
            if !wanted || value.is_empty() {
                continue;
            }
            let path = if let Some(rest) = value.strip_prefix("~/") {
                match std::env::var_os("HOME") {
                    Some(home) => Path::new(&home).join(rest),
                    None => continue,
                }
            } else if section == "core" {
                // A relative hooks path is taken from where hooks run: the worktree's top.
                ws.join(value)
            } else {
                // A relative include is taken from the including file's folder.
                git.join(value)
            };
            let path = lexically_normal(&path);
            if path.starts_with(ws) && path != ws {
                targets.push(path);
            }
        }
    }
    targets
}

/// `path` with `.` and `..` taken out by name (the path need not exist).
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The `.env` files of the workspace's top folder, sorted.
fn top_level_env_files(ws: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(ws) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.file_name().is_some_and(is_env_file))
        .collect();
    files.sort();
    files
}

/// `.env`, and `.env.<anything>` (`.env.local`, `.env.production`), but not the templates
/// projects commit beside them (`.env.example`, `.env.sample`, `.env.template`, `.env.dist`),
/// which hold no secrets.
pub fn is_env_file(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    let template = [".example", ".sample", ".template", ".dist"]
        .iter()
        .any(|suffix| name.ends_with(suffix));
    name == ".env" || (name.starts_with(".env.") && !template)
}

/// Opens and identifies a root directory, without following a symlink in its place.
fn pin(root: &Path) -> Option<PinnedRoot> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(root)
        .ok()?;
    let meta = file.metadata().ok()?;
    Some(PinnedRoot {
        path: root.to_path_buf(),
        dev: meta.dev(),
        ino: meta.ino(),
        handle: OwnedFd::from(file),
    })
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_hooks_and_config_dsh_and_env_files_are_protected_under_workspace_write() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(real.join(".git/hooks")).unwrap();
        std::fs::write(real.join(".git/config"), "").unwrap();
        for file in [".env", ".env.local", ".env.example"] {
            std::fs::write(real.join(file), "").unwrap();
        }
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        assert_eq!(
            policy.protected_paths(),
            [
                real.join(".git/hooks"),
                real.join(".git/config"),
                real.join(".git/config.worktree"),
                real.join(".git/commondir"),
                real.join(".git/worktrees"),
                real.join(".dsh"),
                real.join(".env"),
                real.join(".env.local"),
            ]
        );
        std::fs::create_dir_all(real.join(".git/modules/lib/a")).unwrap();
        std::fs::write(
            real.join(".git/modules/lib/a/HEAD"),
            "ref: refs/heads/main\n",
        )
        .unwrap();
        for refused in [
            ".git/hooks/pre-commit",
            ".git/config",
            ".git/commondir",
            ".git/modules/lib/a/hooks/post-checkout",
            ".git/modules/lib/a/config",
            ".dsh/config.toml",
            ".dsh",
            ".env",
            ".env.local",
        ] {
            assert!(!policy.allows_write(&real.join(refused)), "{refused}");
        }
        for allowed in [".git/objects/ab", ".env.example", "src/.env", "a.txt"] {
            assert!(policy.allows_write(&real.join(allowed)), "{allowed}");
        }
        assert_eq!(
            policy.protection_of(&real.join(".git/hooks/pre-push")),
            Some(real.join(".git/hooks"))
        );
        let full = policy.with_mode(SandboxMode::DangerFullAccess);
        assert!(full.protected_paths().is_empty());
        assert!(full.allows_write(&real.join(".git/hooks/pre-commit")));
    }

    #[test]
    fn git_files_symlinked_protected_paths_and_dsh_home_are_protected() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(real.join(".git"), "gitdir: /elsewhere\n").unwrap();
        std::fs::create_dir_all(real.join("shared/hooks")).unwrap();
        std::os::unix::fs::symlink("shared/hooks", real.join(".dsh")).unwrap();
        let home = real.join("state/dsh-home");
        std::fs::create_dir_all(&home).unwrap();
        let policy =
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new()).with_dsh_home(&home);
        // Commands: the `.git` file and the home are bound read-only.
        let protected = policy.protected_paths();
        assert!(protected.contains(&real.join(".git")), "{protected:?}");
        assert!(protected.contains(&home), "{protected:?}");
        // The file tools: where a protected symlink leads is protected too.
        assert_eq!(
            policy.protection_of(&real.join("shared/hooks/config.toml")),
            Some(real.join(".dsh"))
        );
        assert!(!policy.allows_write(&real.join(".git")));
        assert!(!policy.allows_write(&home.join("config.toml")));
        assert!(policy.allows_write(&real.join("shared/other.txt")));
        // A home outside the workspace is refused to the tools but not bound.
        let elsewhere = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new())
            .with_dsh_home(elsewhere.path());
        assert!(!policy.allows_write(&elsewhere.path().join("hooks.json")));
        assert!(
            !policy
                .protected_paths()
                .iter()
                .any(|p| p.starts_with(elsewhere.path()))
        );
    }

    #[test]
    fn hooks_paths_includes_and_nested_dsh_folders_are_protected() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(real.join(".git")).unwrap();
        std::fs::write(
            real.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = .husky\n[include]\n\tpath = \
             ../shared.gitconfig\n[includeIf \"gitdir:~/w/\"]\n\tpath = /etc/elsewhere\n",
        )
        .unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        let protected = policy.protected_paths();
        assert!(protected.contains(&real.join(".husky")), "{protected:?}");
        assert!(
            protected.contains(&real.join("shared.gitconfig")),
            "{protected:?}"
        );
        assert!(!protected.iter().any(|p| p.starts_with("/etc")));
        for refused in [
            ".husky/pre-commit",
            "shared.gitconfig",
            "sub/.dsh/config.toml",
        ] {
            assert!(!policy.allows_write(&real.join(refused)), "{refused}");
        }
        assert_eq!(
            policy.protection_of(&real.join("a/b/.dsh/hooks.toml")),
            Some(real.join("a/b/.dsh"))
        );
        assert!(policy.allows_write(&real.join("a/b/dsh.toml")));
    }

    #[test]
    fn a_git_file_is_protected_itself_and_names_no_git_paths() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(real.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        assert_eq!(
            policy.protected_paths(),
            [real.join(".git"), real.join(".dsh")]
        );
    }

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
