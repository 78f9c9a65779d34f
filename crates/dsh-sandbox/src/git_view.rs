//! What Git will run for the workspace, as Git itself reports it, and the check that nothing a
//! command did changed it.
//!
//! Git runs code from many places: hooks, and settings such as `core.fsmonitor`,
//! `core.sshCommand`, `core.pager`, `diff.external`, filters, `!` aliases and credential helpers,
//! read from config files that include others, across worktrees and submodules. Listing those
//! paths by hand misses some (a `core.hooksPath` set in an included file, or with a trailing
//! comment, or in the global config). So dsh asks Git: `git config --list --show-origin
//! --includes` for every setting and the file it came from, `git rev-parse --git-path hooks`
//! for the hooks folder, and the index for the repositories embedded as gitlinks (submodules,
//! and a repository a command made and added), whose own config Git reads when the user's
//! `git status` looks into them: read from the index file (`git_view/gitlinks.rs`), or where
//! that reader does not know it, from `git ls-files --stage`.
//!
//! The view taken before a run's first command is the snapshot. Every config file Git named, and
//! the hooks folder, are protected paths (bound read-only for commands under bubblewrap, refused
//! to the file tools). After each command, and when the run stops, the settings that run code
//! are compared with the snapshot (Git is asked again only when one of the files it reads, the
//! hooks folder, the index or `.git/modules` changed): a setting that appeared or changed has
//! the file that holds it set aside, and a hook that appeared or changed is set aside itself.
//! Git is run with no optional locks and no fsmonitor, so asking runs nothing a command planted.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod gitlinks;

/// One setting: the file it came from (a real path; `None` for the command line and other
/// sources that are not files), its key (as Git prints it: section and name in lower case) and
/// value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GitSetting {
    pub origin: Option<PathBuf>,
    pub key: String,
    pub value: String,
}

/// What Git reads and runs for one workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitView {
    /// Every config file Git read, as real paths.
    pub files: Vec<PathBuf>,
    /// The hooks folder Git uses (`core.hooksPath`, or the repository's `hooks`).
    pub hooks: Option<PathBuf>,
    /// The settings that make Git run something, of the repository and of each embedded one.
    pub code_running: BTreeSet<GitSetting>,
    /// Each hook, and each file in the workspace that a code-running setting names as its
    /// program (`core.fsmonitor = ./tools/monitor.sh`): its path and identity (device, inode,
    /// size, modification time).
    pub hook_files: BTreeSet<(PathBuf, Stamp)>,
    /// What to look at to tell whether Git needs to be asked again.
    stamps: Vec<(PathBuf, Option<Stamp>)>,
}

/// A file's identity and version, as cheap as a `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    /// The inode's change time, which no one can set: a command that puts the modification
    /// time back (`touch -d`) after a change still changes this.
    ctime_ns: i128,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        })
    }
}

impl GitView {
    /// Git's view of the repository `workspace` is in, or `None` when it is in none (or Git
    /// is not installed, or refuses the repository).
    pub fn read(workspace: &Path) -> Option<GitView> {
        // No `.git` in the workspace or above it, and no `GIT_DIR`: no repository, and no Git
        // to start (a few milliseconds, and memory, that most non-repository runs need not pay).
        let in_repository = workspace
            .ancestors()
            .any(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
        if !in_repository && std::env::var_os("GIT_DIR").is_none() {
            return None;
        }
        let paths = git(
            workspace,
            &[
                "rev-parse",
                "--git-dir",
                "--git-path",
                "hooks",
                "--show-prefix",
            ],
        )?;
        let mut lines = paths.lines();
        let git_dir = real(workspace, lines.next()?);
        let hooks = lines.next().map(|hooks| real(workspace, hooks));
        // Where the workspace is below the repository's top (`sub/dir/`, or nothing).
        let prefix = lines.next().unwrap_or_default();
        let mut view = GitView {
            hooks: hooks.clone(),
            ..GitView::default()
        };
        // The workspace's repository with every scope Git reads; an embedded one's own
        // config only (its `config` and, with `extensions.worktreeConfig`, `config.worktree`),
        // since the global and system files are the same for both.
        let mut repositories = vec![(workspace.to_path_buf(), false)];
        // Each repository embedded as a gitlink below the workspace, and each submodule's own
        // Git folder.
        if !workspace.starts_with(&git_dir) {
            for path in gitlinks(workspace, &git_dir, prefix) {
                let embedded = workspace.join(path);
                if embedded.join(".git").exists() {
                    repositories.push((embedded, true));
                }
            }
        }
        if let Ok(modules) = std::fs::read_dir(git_dir.join("modules")) {
            for module in modules.filter_map(Result::ok) {
                if module.path().join("config").is_file() {
                    repositories.push((module.path(), true));
                }
            }
        }
        for (repository, own_only) in &repositories {
            let args = [
                "config",
                "--list",
                "--show-scope",
                "--show-origin",
                "--includes",
                "-z",
            ];
            // A submodule's Git folder is not a worktree: it is named as the Git folder.
            let listing = if repository.starts_with(&git_dir) {
                git_in(repository, &args)
            } else {
                git(repository, &args)
            };
            for (scope, setting) in parse_settings(repository, &listing.unwrap_or_default()) {
                if *own_only && !matches!(scope.as_str(), "local" | "worktree") {
                    continue;
                }
                if let Some(origin) = &setting.origin
                    && !view.files.contains(origin)
                {
                    view.files.push(origin.clone());
                }
                if runs_code(&setting.key, &setting.value) {
                    view.code_running.insert(setting);
                }
            }
        }
        if let Some(hooks) = &hooks
            && let Ok(entries) = std::fs::read_dir(hooks)
        {
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name();
                // Git's own samples never run.
                if name.to_string_lossy().ends_with(".sample") {
                    continue;
                }
                if let Some(stamp) = Stamp::of(&entry.path()) {
                    view.hook_files.insert((entry.path(), stamp));
                }
            }
        }
        // A program a setting names by path in the workspace runs whatever the file holds.
        let programs: Vec<PathBuf> = (view.code_running.iter())
            .filter_map(|setting| named_program(workspace, &setting.value))
            .collect();
        for program in programs {
            if let Some(stamp) = Stamp::of(&program) {
                view.hook_files.insert((program, stamp));
            }
        }
        let mut watched = view.files.clone();
        watched.extend(view.hook_files.iter().map(|(path, _)| path.clone()));
        watched.extend(hooks);
        watched.push(git_dir.join("index"));
        watched.push(git_dir.join("modules"));
        watched.push(git_dir.join("config"));
        view.stamps = (watched.into_iter())
            .map(|path| {
                let stamp = Stamp::of(&path);
                (path, stamp)
            })
            .collect();
        Some(view)
    }

    /// Whether anything Git reads may have changed since this view was taken: one `stat` per
    /// file, no Git.
    pub fn may_have_changed(&self) -> bool {
        self.stamps
            .iter()
            .any(|(path, stamp)| Stamp::of(path) != *stamp)
    }

    /// What `now` runs that this view did not: settings that appeared or changed, and hooks
    /// that appeared or were replaced.
    pub fn new_in(&self, now: &GitView) -> (Vec<GitSetting>, Vec<PathBuf>) {
        let known: BTreeSet<(&str, &str)> = (self.code_running.iter())
            .map(|s| (s.key.as_str(), s.value.as_str()))
            .collect();
        let settings = (now.code_running.iter())
            .filter(|s| !known.contains(&(s.key.as_str(), s.value.as_str())))
            .cloned()
            .collect();
        let hooks = (now.hook_files.iter())
            .filter(|hook| !self.hook_files.contains(hook))
            .map(|(path, _)| path.clone())
            .collect();
        (settings, hooks)
    }
}

/// Whether a setting makes Git (or a program it starts) run a command: what a command could
/// plant to run code outside the sandbox at the user's next `git` command.
pub fn runs_code(key: &str, value: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let (Some((section, _)), Some((_, name))) = (key.split_once('.'), key.rsplit_once('.')) else {
        return false;
    };
    match section {
        "core" => matches!(
            name,
            "fsmonitor"
                | "hookspath"
                | "sshcommand"
                | "pager"
                | "editor"
                | "askpass"
                | "gitproxy"
                | "alternaterefscommand"
                | "worktree"
        ),
        "include" | "includeif" => name == "path",
        "alias" => value.trim_start().starts_with('!'),
        "credential" => name == "helper",
        "diff" => matches!(name, "external" | "command" | "textconv"),
        "difftool" | "mergetool" => matches!(name, "cmd" | "path"),
        "merge" => name == "driver",
        "filter" => matches!(name, "clean" | "smudge" | "process"),
        "gpg" => matches!(name, "program" | "defaultkeycommand"),
        "sequence" => name == "editor",
        "pager" | "browser" | "man" => true,
        "uploadpack" => name == "packobjectshook",
        "interactive" => name == "difffilter",
        "trailer" => matches!(name, "command" | "cmd"),
        "sendemail" => name.ends_with("cmd"),
        "init" => name == "templatedir",
        "hook" => name == "command",
        "remote" => matches!(name, "uploadpack" | "receivepack"),
        "submodule" => name == "update" && value.trim_start().starts_with('!'),
        "protocol" => name == "allow",
        _ => false,
    }
}

/// The file in `workspace` a setting's command starts with, if it names one by path
/// (`./tools/monitor.sh`, `tools/fsmon --fast`, `!scripts/alias.sh`): a bare name is looked up
/// on `PATH`, outside the workspace.
fn named_program(workspace: &Path, value: &str) -> Option<PathBuf> {
    let command = value.trim_start().trim_start_matches('!').trim_start();
    let first = command.split_whitespace().next()?;
    let first = first.trim_matches(|c| c == '"' || c == '\'');
    if !first.contains('/') {
        return None;
    }
    let path = std::fs::canonicalize(workspace.join(first)).ok()?;
    (path.starts_with(workspace) && path.is_file()).then_some(path)
}

/// The gitlinks of the workspace's index below the workspace (`prefix` below the top), as
/// paths relative to it: read from the index file, or where this reader does not know it,
/// from `git ls-files --stage`.
fn gitlinks(workspace: &Path, git_dir: &Path, prefix: &str) -> Vec<String> {
    let index = (std::env::var_os("GIT_INDEX_FILE").is_none()).then(|| git_dir.join("index"));
    if let Some(found) = index.as_deref().and_then(gitlinks::read) {
        return (found.iter())
            .filter_map(|path| path.strip_prefix(prefix))
            .map(str::to_owned)
            .collect();
    }
    let staged = git(workspace, &["ls-files", "--stage", "-z"]).unwrap_or_default();
    (staged.split('\0'))
        .filter_map(|entry| entry.split_once('\t'))
        .filter(|(meta, _)| meta.starts_with("160000 "))
        .map(|(_, path)| path.to_owned())
        .collect()
}

/// `git config --list --show-scope --show-origin -z` as settings, each with its scope
/// (`system`, `global`, `local`, `worktree`, `command`): `scope NUL origin NUL key NEWLINE value
/// NUL`.
fn parse_settings(repository: &Path, listing: &str) -> Vec<(String, GitSetting)> {
    let mut settings = Vec::new();
    let mut fields = listing.split('\0');
    while let (Some(scope), Some(origin), Some(entry)) =
        (fields.next(), fields.next(), fields.next())
    {
        let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
        let origin = origin
            .strip_prefix("file:")
            .map(|file| real(repository, file));
        settings.push((
            scope.to_owned(),
            GitSetting {
                origin,
                key: key.to_owned(),
                value: value.to_owned(),
            },
        ));
    }
    settings
}

/// `path` as Git printed it (relative to where it ran), made absolute and real where it
/// exists.
fn real(base: &Path, path: &str) -> PathBuf {
    let joined = base.join(path);
    std::fs::canonicalize(&joined).unwrap_or(joined)
}

/// Runs Git in the worktree `dir`; its standard output, when it succeeded.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    run_git(Command::new("git").arg("-C").arg(dir), args)
}

/// Runs Git on the Git folder `dir` (a submodule's, under `.git/modules`).
fn git_in(dir: &Path, args: &[&str]) -> Option<String> {
    run_git(Command::new("git").arg("--git-dir").arg(dir), args)
}

/// How long one Git query may take: a config that includes a FIFO, or a huge repository on a
/// slow disk, must not hold up the run.
const GIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

fn run_git(command: &mut Command, args: &[&str]) -> Option<String> {
    use std::io::Read as _;
    // Asking must run nothing a command planted: no fsmonitor, no optional locks (the index is
    // not refreshed), no pager, no prompt.
    let mut child = command
        .args(["-c", "core.fsmonitor=false", "--no-pager"])
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).map(|_| bytes)
    });
    let deadline = std::time::Instant::now() + GIT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let bytes = reader.join().ok()?.ok()?;
    status
        .filter(std::process::ExitStatus::success)
        .map(|_| String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh repository to test in (the folder, and its real path), or `None` where Git is
    /// not installed, unless `DSH_TEST_REQUIRE_GIT=1` (CI) makes that a failure.
    fn repository() -> Option<(tempfile::TempDir, PathBuf)> {
        if Command::new("git").arg("--version").output().is_err() {
            assert!(
                std::env::var("DSH_TEST_REQUIRE_GIT").as_deref() != Ok("1"),
                "git is required (DSH_TEST_REQUIRE_GIT is set) but cannot be run"
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        git_ok(&ws, &["init", "-q"]);
        Some((dir, ws))
    }

    /// A first commit in `dir`, empty, as a repository added as a gitlink needs.
    fn commit_empty(dir: &Path) {
        let who = ["-c", "user.name=a", "-c", "user.email=a@b"];
        git_ok(
            dir,
            &[&who[..], &["commit", "-q", "--allow-empty", "-m", "x"]].concat(),
        );
    }

    fn git_ok(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn code_running_settings_are_told_from_the_rest() {
        for (key, value) in [
            ("core.fsmonitor", "x"),
            ("core.hooksPath", ".h"),
            ("alias.co", "!sh -c x"),
            ("filter.lfs.smudge", "x"),
            ("diff.pdf.textconv", "x"),
            ("credential.https://example.com.helper", "x"),
            ("include.path", "x"),
            ("includeIf.gitdir:~/w/.path", "x"),
        ] {
            assert!(runs_code(key, value), "{key}");
        }
        for (key, value) in [
            ("alias.co", "checkout"),
            ("user.name", "x"),
            ("core.bare", "false"),
            ("remote.origin.url", "x"),
        ] {
            assert!(!runs_code(key, value), "{key}");
        }
    }

    #[test]
    fn git_names_the_files_it_reads_and_the_hooks_it_runs() {
        let Some((_dir, ws)) = repository() else {
            return;
        };
        // A hooks path with a trailing comment, from an included file: what a hand-written
        // parser of the config missed.
        std::fs::write(
            ws.join("shared.gitconfig"),
            "[core]\n\thooksPath = .githooks # the team's hooks\n",
        )
        .unwrap();
        git_ok(&ws, &["config", "include.path", "../shared.gitconfig"]);
        std::fs::create_dir_all(ws.join(".githooks")).unwrap();
        let view = GitView::read(&ws).unwrap();
        assert_eq!(view.hooks.as_deref(), Some(ws.join(".githooks").as_path()));
        assert!(
            view.files.contains(&ws.join("shared.gitconfig")),
            "{view:?}"
        );
        assert!(view.files.contains(&ws.join(".git/config")), "{view:?}");
        assert!(!view.may_have_changed());

        // A hook and a setting appear: both are new, and the view says it may have changed.
        std::fs::write(ws.join(".githooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            ws.join("shared.gitconfig"),
            "[core]\n\thooksPath = .githooks\n\tfsmonitor = touch /tmp/x\n",
        )
        .unwrap();
        assert!(view.may_have_changed());
        let now = GitView::read(&ws).unwrap();
        let (settings, hooks) = view.new_in(&now);
        assert_eq!(hooks, [ws.join(".githooks/pre-commit")]);
        assert_eq!(settings.len(), 1, "{settings:?}");
        assert_eq!(settings[0].key, "core.fsmonitor");
        assert_eq!(
            settings[0].origin.as_deref(),
            Some(ws.join("shared.gitconfig").as_path())
        );
    }

    #[test]
    fn a_program_a_setting_names_in_the_workspace_is_watched_like_a_hook() {
        let Some((_dir, ws)) = repository() else {
            return;
        };
        std::fs::create_dir_all(ws.join("tools")).unwrap();
        std::fs::write(ws.join("tools/monitor.sh"), "#!/bin/sh\n").unwrap();
        git_ok(
            &ws,
            &["config", "core.fsmonitor", "./tools/monitor.sh --fast"],
        );
        let view = GitView::read(&ws).unwrap();
        std::fs::write(ws.join("tools/monitor.sh"), "#!/bin/sh\ntouch /tmp/pwned\n").unwrap();
        assert!(view.may_have_changed());
        let (settings, programs) = view.new_in(&GitView::read(&ws).unwrap());
        assert!(settings.is_empty());
        assert_eq!(programs, [ws.join("tools/monitor.sh")]);
        assert_eq!(named_program(&ws, "git-lfs filter-process"), None);
    }

    #[test]
    fn an_embedded_repository_s_settings_are_seen() {
        let Some((_dir, ws)) = repository() else {
            return;
        };
        let before = GitView::read(&ws).unwrap();
        // A command makes a repository, gives it an fsmonitor, and adds it as a gitlink.
        let sub = ws.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        git_ok(&sub, &["init", "-q"]);
        git_ok(&sub, &["config", "core.fsmonitor", "touch /tmp/x"]);
        commit_empty(&sub);
        git_ok(&ws, &["add", "sub"]);
        // Another, whose setting is in `config.worktree` (read with extensions.worktreeConfig).
        let other = ws.join("other");
        std::fs::create_dir_all(&other).unwrap();
        git_ok(&other, &["init", "-q"]);
        git_ok(&other, &["config", "core.repositoryformatversion", "1"]);
        git_ok(&other, &["config", "extensions.worktreeConfig", "true"]);
        git_ok(
            &other,
            &["config", "--worktree", "core.fsmonitor", "touch /tmp/y"],
        );
        commit_empty(&other);
        git_ok(&ws, &["add", "other"]);
        assert!(before.may_have_changed());
        let now = GitView::read(&ws).unwrap();
        let (settings, _) = before.new_in(&now);
        let origins: Vec<_> = settings.iter().filter_map(|s| s.origin.clone()).collect();
        assert_eq!(
            origins,
            [other.join(".git/config.worktree"), sub.join(".git/config")],
            "{settings:?}"
        );
    }

    /// The gitlinks are read from the index as Git lists them, in each index version (the
    /// fourth strips each path's start that the one before shares); a split index is left
    /// to Git; a workspace below the top has its own, relative to it.
    #[test]
    fn gitlinks_are_read_from_the_index_as_git_lists_them() {
        let Some((_dir, ws)) = repository() else {
            return;
        };
        for i in 0..40 {
            let file = ws.join(format!("dir{}/a-file-with-a-long-name-{i}.txt", i % 3));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, "x").unwrap();
        }
        for sub in ["deep/er/sub", "other"] {
            std::fs::create_dir_all(ws.join(sub)).unwrap();
            git_ok(&ws.join(sub), &["init", "-q"]);
            commit_empty(&ws.join(sub));
        }
        git_ok(&ws, &["add", "-A"]);
        // An entry with extended flags (index version 3 and up).
        git_ok(
            &ws,
            &[
                "update-index",
                "--skip-worktree",
                "dir0/a-file-with-a-long-name-0.txt",
            ],
        );
        let listed = Command::new("git")
            .args(["-C", ws.to_str().unwrap(), "ls-files", "--stage", "-z"])
            .output()
            .unwrap();
        let listed: Vec<String> = String::from_utf8(listed.stdout)
            .unwrap()
            .split('\0')
            .filter_map(|entry| entry.split_once('\t'))
            .filter(|(meta, _)| meta.starts_with("160000 "))
            .map(|(_, path)| path.to_owned())
            .collect();
        assert_eq!(listed, ["deep/er/sub", "other"]);
        let index = ws.join(".git/index");
        for version in ["3", "4", "2"] {
            git_ok(&ws, &["update-index", "--index-version", version]);
            assert_eq!(
                gitlinks::read(&index).as_ref(),
                Some(&listed),
                "version {version}"
            );
        }
        git_ok(
            &ws,
            &[
                "update-index",
                "--no-skip-worktree",
                "dir0/a-file-with-a-long-name-0.txt",
            ],
        );
        git_ok(&ws, &["update-index", "--index-version", "2"]);
        assert_eq!(gitlinks::read(&index).as_ref(), Some(&listed), "version 2");
        assert_eq!(
            gitlinks(&ws.join("deep"), &ws.join(".git"), "deep/"),
            ["er/sub"]
        );
        git_ok(&ws, &["update-index", "--split-index"]);
        assert_eq!(
            gitlinks::read(&index),
            None,
            "a split index is Git's to read"
        );
        assert_eq!(gitlinks(&ws, &ws.join(".git"), ""), listed);
        assert_eq!(gitlinks::read(&ws.join(".git/no-index")), Some(Vec::new()));
    }

    /// A command that puts the modification times back after planting (`touch -d`) still
    /// changes the inodes' change times, which no one can set.
    #[test]
    fn a_plant_with_its_times_put_back_is_still_seen() {
        let Some((_dir, ws)) = repository() else {
            return;
        };
        let hooks = ws.join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        let view = GitView::read(&ws).unwrap();
        let before = std::fs::metadata(&hooks).unwrap().modified().unwrap();
        std::fs::write(hooks.join("pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::File::open(&hooks)
            .unwrap()
            .set_modified(before)
            .unwrap();
        assert!(view.may_have_changed());
        let (_, hooks_found) = view.new_in(&GitView::read(&ws).unwrap());
        assert_eq!(hooks_found, [hooks.join("pre-commit")]);
    }
}
