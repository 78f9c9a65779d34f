//! `[skills]`: whether skills are found, in the default folders, and in which others.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::Sourced;

/// No key here widens anything ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[crate::trust_look::Guard] = &[
    crate::trust_look::Guard::neither("skills.enabled", "skills offered or not"),
    crate::trust_look::Guard::neither(
        "skills.default_roots",
        "which folders' skills are offered; each is read as text",
    ),
];

/// Skills.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// More folders of skills, after the project's and before the user's.
    pub dirs: Vec<PathBuf>,
    /// Whether the project's and the user's folders are read around `dirs` (default true).
    pub default_roots: Option<bool>,
    /// Whether skills are offered at all (default true).
    pub enabled: Option<bool>,
}

/// Where skills are found.
#[derive(Debug, Clone)]
pub struct Skills {
    pub enabled: Sourced<bool>,
    /// Whether the project's and the user's folders are read around `dirs`.
    pub default_roots: Sourced<bool>,
    /// More folders, relative to the working directory.
    pub dirs: Sourced<Vec<PathBuf>>,
}

impl Skills {
    /// Where skills are looked for, in rank order: the project's `.dsh/skills` and
    /// `.agents/skills` (the project root being the nearest folder with `.git`, else the
    /// working directory `cwd`), `skills.dirs`, `home`'s `skills`, the user's
    /// `~/.agents/skills`; only `skills.dirs` when `skills.default_roots` is false; none when
    /// `skills.enabled` is false.
    pub(crate) fn roots(&self, cwd: &Path, home: &Path, user_home: Option<&Path>) -> Vec<PathBuf> {
        if !self.enabled.value {
            return Vec::new();
        }
        let dirs = self.dirs.value.iter().map(|d| cwd.join(d));
        if !self.default_roots.value {
            return dirs.collect();
        }
        let root = crate::project::project_root(cwd, &[".git".to_owned()]);
        let mut roots = vec![root.join(".dsh/skills"), root.join(".agents/skills")];
        roots.extend(dirs);
        roots.push(home.join("skills"));
        if let Some(user) = user_home {
            roots.push(user.join(".agents/skills"));
        }
        roots
    }
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &SkillsConfig) -> Skills {
    Skills {
        enabled: r.file_setting("skills.enabled", file.enabled, true),
        default_roots: r.file_setting("skills.default_roots", file.default_roots, true),
        dirs: r.file_setting(
            "skills.dirs",
            (!file.dirs.is_empty()).then(|| file.dirs.clone()),
            Vec::new(),
        ),
    }
}
