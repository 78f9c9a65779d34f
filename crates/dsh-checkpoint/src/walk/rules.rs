//! What ignore files leave out of a walk, as the `ignore` crate's walker decides it (which is
//! what the walk used before it read folders through descriptors): each folder's `.ignore`,
//! `.gitignore` and, in a folder that holds a `.git`, Git's `info/exclude`, and the user's
//! global excludes (`core.excludesFile`, else `git/ignore` under the XDG config folder).
//!
//! Each kind of file is asked from the deepest folder up, and the first that says anything of
//! a path decides for its kind; `.ignore` files come first, then `.gitignore`, then the
//! excludes, then the global file. A rule in a folder matches paths relative to that folder.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Which ignore files a folder's listing names.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Found {
    ignore: bool,
    gitignore: bool,
    git: bool,
}

impl Found {
    pub(super) fn note(&mut self, name: &[u8]) {
        match name {
            b".ignore" => self.ignore = true,
            b".gitignore" => self.gitignore = true,
            b".git" => self.git = true,
            _ => {}
        }
    }

    fn any(self) -> bool {
        self.ignore || self.gitignore || self.git
    }
}

/// One folder's own rules.
struct Frame {
    /// How many bytes of a key beneath the folder name the folder (and its `/`).
    cut: usize,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

/// A folder's rules, and those of the folders above it.
struct Link {
    frame: Frame,
    up: Option<Arc<Link>>,
}

/// The rules that apply in one folder: its own and those of every folder from the workspace
/// down to it (shared with the folders beside it, so a folder costs only its own files).
#[derive(Clone)]
pub(super) struct Rules {
    on: bool,
    /// The deepest folder that has rules; only such folders are linked.
    chain: Option<Arc<Link>>,
    global: Option<Arc<Gitignore>>,
}

impl Rules {
    /// No rules when `on` is false (everything is covered); else the user's global excludes,
    /// matched relative to the workspace as Git matches them relative to its work tree.
    pub(super) fn new(workspace: &Path, on: bool) -> Rules {
        let global = on
            .then(|| GitignoreBuilder::new(workspace).build_global().0)
            .filter(|rules| !rules.is_empty())
            .map(Arc::new);
        Rules {
            on,
            chain: None,
            global,
        }
    }

    /// The rules in the folder `key` (`full` on disk), whose listing named `found`: these
    /// and the folder's own.
    pub(super) fn below(&self, full: impl FnOnce() -> PathBuf, key: &str, found: Found) -> Rules {
        if !self.on || !found.any() {
            return self.clone();
        }
        let full = full();
        let read = |file: Option<PathBuf>| {
            let file = file?;
            // As the `ignore` crate: a file that cannot be read, or a line that is not a
            // pattern, is passed over.
            if !file.exists() {
                return None;
            }
            let mut builder = GitignoreBuilder::new(&full);
            let _ = builder.add(&file);
            builder.build().ok().filter(|rules| !rules.is_empty())
        };
        let frame = Frame {
            cut: if key.is_empty() { 0 } else { key.len() + 1 },
            ignore: read(found.ignore.then(|| full.join(".ignore"))),
            gitignore: read(found.gitignore.then(|| full.join(".gitignore"))),
            exclude: read(found.git.then(|| excludes(&full)).flatten()),
        };
        if frame.ignore.is_none() && frame.gitignore.is_none() && frame.exclude.is_none() {
            return self.clone();
        }
        Rules {
            chain: Some(Arc::new(Link {
                frame,
                up: self.chain.clone(),
            })),
            ..self.clone()
        }
    }

    /// Whether the rules leave out `key` (a folder when `folder`).
    pub(super) fn ignore(&self, key: &str, folder: bool) -> bool {
        if !self.on {
            return false;
        }
        let kinds: [fn(&Frame) -> Option<&Gitignore>; 3] = [
            |frame| frame.ignore.as_ref(),
            |frame| frame.gitignore.as_ref(),
            |frame| frame.exclude.as_ref(),
        ];
        for kind in kinds {
            let frames = std::iter::successors(self.chain.as_deref(), |link| link.up.as_deref());
            for frame in frames.map(|link| &link.frame) {
                let (Some(rules), Some(relative)) = (kind(frame), key.get(frame.cut..)) else {
                    continue;
                };
                match rules.matched(Path::new(relative), folder) {
                    Match::None => {}
                    said => return said.is_ignore(),
                }
            }
        }
        (self.global.as_ref()).is_some_and(|rules| rules.matched(key, folder).is_ignore())
    }
}

/// The `info/exclude` file of the repository whose `.git` is in `folder`: in `.git` itself,
/// or for a linked worktree (a `.git` file naming its Git folder), in the common folder that
/// folder's `commondir` names; `None` when a `.git` file says nothing readable.
fn excludes(folder: &Path) -> Option<PathBuf> {
    let dot_git = folder.join(".git");
    let is_file = std::fs::metadata(&dot_git).is_ok_and(|meta| meta.is_file());
    if !is_file {
        return Some(dot_git.join("info/exclude"));
    }
    let first_line = |path: &Path| {
        let file = std::fs::File::open(path).ok()?;
        std::io::BufReader::new(file).lines().next()?.ok()
    };
    let git_dir = PathBuf::from(first_line(&dot_git)?.strip_prefix("gitdir: ")?);
    let common = first_line(&git_dir.join("commondir"))?;
    let common = if common.starts_with('.') {
        git_dir.join(common)
    } else {
        PathBuf::from(common)
    };
    Some(common.join("info/exclude"))
}
