//! What a repository's own config may decide: the one provenance rule.
//!
//! `.dsh/config.toml` comes with the workspace, so a cloned repository writes it. Most of what
//! it says (the model, the effort, tool lists that narrow, instructions, limits) is the
//! project's business and applies. But a value of that layer that decides where a credential
//! goes, which variable a key is read from, a program dsh starts outside the sandbox, or that
//! widens what commands may do is applied only when you trust the folder: an entry
//! `[projects."<path>"] trusted = true` in your own `$DSH_HOME/config.toml` (what `dsh trust`
//! writes), for that folder or one above it. Until then such values are set aside before the
//! layers merge, so nothing below this module can see them, and every front end says which
//! were set aside and how to trust the folder.
//!
//! A value that narrows (a stricter mode, the network off, a lower limit, more names
//! scrubbed) applies either way: a project may always ask for less.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::layer::{ConfigError, Layer, quote_key, render_value};
use super::trust_look::Look;
pub use super::trust_look::{Reason, SetAside};
use crate::Environment;

/// What you decided about one folder's own config (`[projects."<path>"]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    /// true: its `.dsh/config.toml`, and those of the folders under it, apply in full; false:
    /// what only a trusted project may set stays set aside, and nobody asks again.
    pub trusted: Option<bool>,
}

/// Whether the workspace's own config is trusted, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// `[projects."<entry>"] trusted = true`: the folder or one above it.
    Trusted { entry: PathBuf },
    /// `[projects."<entry>"] trusted = false`: set aside, and nobody asks.
    Refused { entry: PathBuf },
    /// No entry names the folder or one above it.
    Undecided,
    /// The workspace's `.dsh` is `$DSH_HOME` itself, a real folder (a run in the folder that
    /// holds dsh's home): your own config and hooks.
    Own,
}

/// The workspace's trust: its real path (what an entry names) and the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectTrust {
    /// The workspace's real path.
    pub folder: PathBuf,
    pub trust: Trust,
    /// The file entries are read from: `$DSH_HOME/config.toml`.
    pub home_config: PathBuf,
}

impl ProjectTrust {
    /// What to do to trust the folder, said the same way everywhere.
    pub fn how_to_trust(&self) -> String {
        format!(
            "run `dsh trust` in {} (it adds [projects.{}] trusted = true to {})",
            shown_path(&self.folder),
            quote_path(&self.folder),
            shown_path(&self.home_config)
        )
    }

    /// The notice for a run whose workspace had values set aside (of its config, its hooks
    /// file, its `.env`); `None` when nothing was.
    pub fn notice(&self, set_aside: &[SetAside]) -> Option<String> {
        if set_aside.is_empty() {
            return None;
        }
        // Grouped by file, in the order first set aside.
        let mut files: Vec<&Path> = Vec::new();
        for s in set_aside {
            if !files.contains(&s.file.as_path()) {
                files.push(&s.file);
            }
        }
        let groups = files
            .iter()
            .map(|file| {
                let of_file: Vec<&SetAside> =
                    set_aside.iter().filter(|s| s.file == *file).collect();
                let listed = of_file
                    .iter()
                    .map(|s| format!("{} ({})", s.key, s.reason.says()))
                    .collect::<Vec<_>>()
                    .join("; ");
                let count = match of_file.len() {
                    1 => "1 value".to_owned(),
                    n => format!("{n} values"),
                };
                format!("{count} of {}: {listed}", shown_path(file))
            })
            .collect::<Vec<_>>()
            .join(", and ");
        Some(match &self.trust {
            Trust::Refused { entry } => format!(
                "you chose not to trust this folder ([projects.{}] trusted = false in {}), so \
                 these were set aside: {groups}. `dsh trust` there changes that",
                quote_path(entry),
                shown_path(&self.home_config)
            ),
            _ => format!(
                "this folder is not trusted, so these were set aside: {groups}. To apply them, {}",
                self.how_to_trust()
            ),
        })
    }

    /// How the decision reads in `--dump-config`.
    pub fn shown(&self) -> String {
        match &self.trust {
            Trust::Trusted { entry } => format!(
                "trusted: [projects.{}] in {}",
                quote_path(entry),
                self.home_config.display()
            ),
            Trust::Refused { entry } => format!(
                "not trusted: [projects.{}] trusted = false in {}",
                quote_path(entry),
                self.home_config.display()
            ),
            Trust::Undecided => "not trusted: dsh trust trusts it".to_owned(),
            Trust::Own => "your own config".to_owned(),
        }
    }

    pub fn is_trusted(&self) -> bool {
        matches!(self.trust, Trust::Trusted { .. } | Trust::Own)
    }
}

/// A path as a notice shows it: as it is, unless it holds a character a terminal would not
/// show as itself (an escape sequence, a right-to-left override, a zero-width space in a
/// folder's name), then quoted and escaped as a TOML key.
pub fn shown_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text.chars().any(hidden) {
        quote_path(path)
    } else {
        text.into_owned()
    }
}

/// Whether `c` is not shown as itself: a control character, or one Rust's `Debug` escapes
/// (format characters such as bidirectional overrides, separators, combining marks alone).
fn hidden(c: char) -> bool {
    c.is_control() || (!matches!(c, '"' | '\'' | '\\') && c.escape_debug().next() == Some('\\'))
}

/// A path as a TOML key: a basic string, escaped (what a terminal would not show as itself as
/// `\uXXXX`, which TOML reads back as the same character).
pub fn quote_path(path: &Path) -> String {
    let mut out = String::from("\"");
    for c in path.to_string_lossy().chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if hidden(c) && u32::from(c) <= 0xFFFF => {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c if hidden(c) => out.push_str(&format!("\\U{:08X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The workspace's trust, from the `projects` table of `$DSH_HOME/config.toml`: the entry
/// naming the folder or the nearest folder above it decides (so a `trusted = false` below a
/// trusted folder wins); of two spellings of one folder, `false` wins. A `trusted = true` above
/// the folder covers it only inside the same Git repository: a repository cloned or unpacked
/// into a trusted folder (the folder that holds your clones, a submodule, a vendored copy) is
/// someone else's code, and is decided on its own.
pub(crate) fn trust_of(
    home_table: Option<&toml::Table>,
    home_config: &Path,
    cwd: &Path,
) -> Result<ProjectTrust, ConfigError> {
    let folder = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    // The repository the folder is in: the nearest folder holding `.git` (a folder, or the
    // file of a worktree or submodule).
    let repository =
        (folder.ancestors()).find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    let entries = home_table
        .and_then(|t| t.get("projects"))
        .and_then(toml::Value::as_table);
    let mut best: Option<(usize, PathBuf, bool)> = None;
    for (key, value) in entries.into_iter().flatten() {
        let Some(trusted) = value.get("trusted").and_then(toml::Value::as_bool) else {
            continue;
        };
        let named = Path::new(key);
        if !named.is_absolute() {
            return Err(ConfigError {
                path: home_config.to_path_buf(),
                message: format!(
                    "projects.{}: name the folder by its absolute path",
                    quote_key(key)
                ),
            });
        }
        let real = std::fs::canonicalize(named).unwrap_or_else(|_| named.to_path_buf());
        let covers = real == folder
            || (folder.starts_with(&real)
                && (!trusted || repository.is_some_and(|repo| real.starts_with(repo))));
        if !covers {
            continue;
        }
        let depth = real.components().count();
        let better = match &best {
            None => true,
            Some((best_depth, _, best_trusted)) => {
                depth > *best_depth || (depth == *best_depth && *best_trusted && !trusted)
            }
        };
        if better {
            best = Some((depth, named.to_path_buf(), trusted));
        }
    }
    let trust = match best {
        Some((_, entry, true)) => Trust::Trusted { entry },
        Some((_, entry, false)) => Trust::Refused { entry },
        None => Trust::Undecided,
    };
    Ok(ProjectTrust {
        folder,
        trust,
        home_config: home_config.to_path_buf(),
    })
}

/// Takes out of the workspace's layer (`layers[1]`) every value that needs trust, unless the
/// folder is trusted, and lists what the workspace's other files hold that needs it (its hooks,
/// the keys of its `.env`, [`super::trust_rules::workspace_files`]); the workspace's trust and
/// what was set aside. A `projects` table in a `--patch` file is refused: only
/// `$DSH_HOME/config.toml` says which folders you trust.
pub(crate) fn gate(
    layers: &mut [Layer],
    cwd: &Path,
    env: &Environment,
) -> Result<(ProjectTrust, Vec<SetAside>), ConfigError> {
    let home_config = layers.first().map(|l| l.path.clone()).unwrap_or_default();
    for layer in layers.iter().skip(2) {
        if layer
            .table
            .as_ref()
            .is_some_and(|t| t.contains_key("projects"))
        {
            return Err(ConfigError {
                path: layer.path.clone(),
                message: format!(
                    "[projects] (which folders you trust) is read from {} only; remove it here",
                    home_config.display()
                ),
            });
        }
    }
    let mut trust = trust_of(
        layers.first().and_then(|l| l.table.as_ref()),
        &home_config,
        cwd,
    )?;
    if is_home_folder(cwd, &home_config) {
        trust.trust = Trust::Own;
    }
    if trust.is_trusted() {
        return Ok((trust, Vec::new()));
    }
    let mut set_aside = Vec::new();
    let (home_layers, rest) = layers.split_at_mut(1.min(layers.len()));
    let empty = toml::Table::new();
    let below = home_layers
        .first()
        .and_then(|l| l.table.as_ref())
        .unwrap_or(&empty);
    if let Some((project, above)) = rest.split_first_mut()
        && let Some(table) = project.table.as_mut()
    {
        let above: Vec<&toml::Table> = above.iter().filter_map(|l| l.table.as_ref()).collect();
        let mut look = Look {
            project: table,
            below,
            above: &above,
            found: Vec::new(),
        };
        super::trust_rules::mark(&mut look);
        for (path, reason, shown) in look.found {
            let Some(value) = remove(table, &path) else {
                continue;
            };
            let key = path
                .iter()
                .map(|k| quote_key(k))
                .collect::<Vec<_>>()
                .join(".");
            let value =
                shown.unwrap_or_else(|| super::shown::shown_value(&key, render_value(&value)));
            set_aside.push(SetAside {
                file: project.path.clone(),
                key,
                value,
                reason,
            });
        }
    }
    let tables: Vec<&toml::Table> = layers.iter().filter_map(|l| l.table.as_ref()).collect();
    let home = home_config.parent().unwrap_or(Path::new(""));
    set_aside.extend(super::trust_rules::workspace_files(cwd, home, &tables, env));
    Ok((trust, set_aside))
}

/// The trust of the workspace `cwd` as your `$DSH_HOME/config.toml` (in `home`) decides it,
/// for what reads the workspace's files without resolving the whole configuration: its saved
/// workflows and prompts. A config that cannot be read trusts nothing.
pub fn workspace_trust(home: &Path, cwd: &Path) -> ProjectTrust {
    let home_config = home.join("config.toml");
    let table = (std::fs::read_to_string(&home_config).ok())
        .and_then(|text| text.parse::<toml::Table>().ok());
    let mut trust = trust_of(table.as_ref(), &home_config, cwd).unwrap_or_else(|_| ProjectTrust {
        folder: std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf()),
        trust: Trust::Undecided,
        home_config: home_config.clone(),
    });
    if is_home_folder(cwd, &home_config) {
        trust.trust = Trust::Own;
    }
    trust
}

/// Whether the workspace's `.dsh` is dsh's home itself, as a real folder (a run in the folder
/// that holds `~/.dsh`): then its config and hooks are yours. A `.dsh` that is a link to the
/// home does not count: a repository can ship one, and what is beside it is still its own.
fn is_home_folder(cwd: &Path, home_config: &Path) -> bool {
    let dot = cwd.join(".dsh");
    let real_folder = std::fs::symlink_metadata(&dot).is_ok_and(|m| m.is_dir());
    let Some(home) = home_config.parent() else {
        return false;
    };
    real_folder
        && matches!(
            (std::fs::canonicalize(&dot), std::fs::canonicalize(home)),
            (Ok(a), Ok(b)) if a == b
        )
}

/// Removes the value at `path`, and the tables it leaves empty.
fn remove(table: &mut toml::Table, path: &[String]) -> Option<toml::Value> {
    let (first, rest) = path.split_first()?;
    if rest.is_empty() {
        return table.remove(first);
    }
    let inner = table.get_mut(first)?.as_table_mut()?;
    let removed = remove(inner, rest);
    if inner.is_empty() {
        table.remove(first);
    }
    removed
}
