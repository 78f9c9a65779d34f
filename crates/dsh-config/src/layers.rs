//! Configuration files: TOML layers merged key by key, later layers winning.
//!
//! The layers, lowest first: `$DSH_HOME/config.toml`, `.dsh/config.toml` in the workspace, then
//! each `--patch FILE` in the order given. A missing home or workspace file is simply absent; a
//! missing patch file, a syntax error or an unknown key is an error naming the file, so a typo
//! never silently does nothing. The environment and flags go over them in
//! [`Settings`](super::Settings).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::files::Config;

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("config file {}: {message}", path.display())]
pub struct ConfigError {
    pub path: PathBuf,
    pub message: String,
}

/// One configuration layer: a file, what it sets (`None` when an optional file is absent),
/// and notes on what it asked for that dsh has no part for (reference row lists only).
#[derive(Debug, Clone)]
pub struct Layer {
    pub path: PathBuf,
    pub table: Option<toml::Table>,
    /// Whether it was a reference row list (else TOML).
    pub rows: bool,
    pub notes: Vec<String>,
    /// Keys whose values from earlier layers it discards before its own apply (a reference
    /// row's `config` replaces the row's whole configuration).
    pub replaces: Vec<Vec<String>>,
}

/// The config files of a run, read and merged.
#[derive(Debug, Clone)]
pub struct ConfigFiles {
    cwd: PathBuf,
    layers: Vec<Layer>,
    merged: Config,
    /// `(dotted key, value as TOML, file)` of every value set, from the last layer that set it.
    provenance: Vec<(String, String, PathBuf)>,
}

impl ConfigFiles {
    /// Reads and merges the layers for a run in `cwd`; `headless` adds the headless profile's
    /// patch file.
    pub fn load(
        home: &Path,
        cwd: &Path,
        patches: &[PathBuf],
        headless: bool,
    ) -> Result<ConfigFiles, ConfigError> {
        Self::load_keys(home, cwd, patches, headless, None)
    }

    /// As [`ConfigFiles::load`], reading only the top-level table `only` of each file
    /// (`sandbox` for `dsh sandbox check`): whatever else a file says, right or wrong, is left
    /// out. A file that cannot be read as TOML (or as rows) at all is still an error.
    pub fn load_only(
        home: &Path,
        cwd: &Path,
        patches: &[PathBuf],
        headless: bool,
        only: &str,
    ) -> Result<ConfigFiles, ConfigError> {
        Self::load_keys(home, cwd, patches, headless, Some(only))
    }

    fn load_keys(
        home: &Path,
        cwd: &Path,
        patches: &[PathBuf],
        headless: bool,
        only: Option<&str>,
    ) -> Result<ConfigFiles, ConfigError> {
        let layers = layers(home, cwd, patches, headless, only)?;
        let merged = merged(&layers, home, patches)?;
        let provenance = provenance(&layers);
        Ok(ConfigFiles {
            cwd: cwd.to_path_buf(),
            layers,
            merged,
            provenance,
        })
    }

    /// What the files say, merged.
    pub fn config(&self) -> &Config {
        &self.merged
    }

    /// The files read (or looked for), lowest first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Every value the files set, as `(dotted key, value as TOML, file)`.
    pub fn provenance(&self) -> Vec<(String, String, PathBuf)> {
        self.provenance.clone()
    }

    /// The strings of the list at `path` in each layer that has one, with its file: for lists
    /// that add up across layers rather than replace.
    pub(super) fn every_layer_list(&self, path: &[&str]) -> Vec<(String, PathBuf)> {
        let mut found = Vec::new();
        for layer in &self.layers {
            let mut value = layer.table.as_ref().map(|t| t as &toml::Table);
            let Some((last, parents)) = path.split_last() else {
                return found;
            };
            for key in parents {
                value = value
                    .and_then(|t| t.get(*key))
                    .and_then(toml::Value::as_table);
            }
            let items = value
                .and_then(|t| t.get(*last))
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str);
            found.extend(items.map(|item| (item.to_owned(), layer.path.clone())));
        }
        found
    }

    /// The file that set `key` (or, for a table, a key under it) last.
    pub(super) fn source_of(&self, key: &str) -> PathBuf {
        let below = format!("{key}.");
        self.provenance
            .iter()
            .find(|(k, _, _)| k == key || k.starts_with(&below))
            .map(|(_, _, path)| path.clone())
            .or_else(|| self.layers.last().map(|l| l.path.clone()))
            .unwrap_or_default()
    }
}

/// The layers for a run in `cwd`, lowest first. A `--patch` file is TOML, or the reference's
/// YAML row list ([`super::rows`]), translated onto the same keys.
fn layers(
    home: &Path,
    cwd: &Path,
    patches: &[PathBuf],
    headless: bool,
    only: Option<&str>,
) -> Result<Vec<Layer>, ConfigError> {
    let mut layers = Vec::new();
    for optional in [
        home.join("config.toml"),
        cwd.join(".dsh").join("config.toml"),
    ] {
        let table = read_layer(&optional, false, only)?;
        layers.push(Layer {
            path: optional,
            table,
            rows: false,
            notes: Vec::new(),
            replaces: Vec::new(),
        });
    }
    let context = super::rows::RowContext {
        home: home.to_path_buf(),
        cwd: cwd.to_path_buf(),
    };
    let mut index = super::rows::RowIndex::default();
    // The reference's own patch files, where its documentation tells users to put rows: the
    // user's patch over every surface, then the headless profile's (for headless runs).
    let mut reference = vec![home.join(REFERENCE_PATCH)];
    if headless {
        reference.push(home.join("profiles").join("headless").join(REFERENCE_PATCH));
    }
    for file in reference {
        // Missing, or nothing in it yet (comments only): no layer. Its documentation has
        // users create it, so an empty one is a placeholder, not a mistake.
        let blank = match std::fs::read_to_string(&file) {
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            Ok(text) => text
                .lines()
                .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#')),
        };
        if !blank {
            layers.push(patch_layer(&file, &context, &mut index, only)?);
        }
    }
    for patch in patches {
        layers.push(patch_layer(patch, &context, &mut index, only)?);
    }
    Ok(layers)
}

/// The name of the reference's patch files.
pub const REFERENCE_PATCH: &str = "cordis.patch.yml";

/// A patch file: the reference's YAML rows (translated) or a TOML config file.
fn patch_layer(
    patch: &Path,
    context: &super::rows::RowContext,
    index: &mut super::rows::RowIndex,
    only: Option<&str>,
) -> Result<Layer, ConfigError> {
    let fail = |message: String| ConfigError {
        path: patch.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(patch).map_err(|e| fail(format!("cannot be read: {e}")))?;
    if super::rows::is_row_list(patch, &text) {
        let mut rows = super::rows::translate(&text, context, index).map_err(fail)?;
        if let Some(only) = only {
            rows.table.retain(|key, _| key == only);
        }
        // What the rows became is checked as a TOML file would be.
        Config::deserialize(rows.table.clone())
            .map_err(|e| fail(format!("translates to a bad setting: {}", e.message())))?;
        Ok(Layer {
            path: patch.to_path_buf(),
            table: Some(rows.table),
            rows: true,
            notes: rows.notes,
            replaces: rows.replaces,
        })
    } else {
        Ok(Layer {
            path: patch.to_path_buf(),
            table: read_layer(patch, true, only)?,
            rows: false,
            notes: Vec::new(),
            replaces: Vec::new(),
        })
    }
}

/// Every value the layers set, as `(dotted key, TOML value, file)`, each from the last layer
/// that set it.
fn provenance(layers: &[Layer]) -> Vec<(String, String, PathBuf)> {
    fn leaves(prefix: &str, table: &toml::Table, out: &mut Vec<(String, toml::Value)>) {
        for (key, value) in table {
            let path = if prefix.is_empty() {
                quote_key(key)
            } else {
                format!("{prefix}.{}", quote_key(key))
            };
            match value {
                toml::Value::Table(inner) => leaves(&path, inner, out),
                other => out.push((path, other.clone())),
            }
        }
    }
    let mut set: Vec<(String, String, PathBuf)> = Vec::new();
    for Layer {
        path,
        table,
        replaces,
        ..
    } in layers
    {
        for replaced in replaces {
            let key = replaced
                .iter()
                .map(|k| quote_key(k))
                .collect::<Vec<_>>()
                .join(".");
            let below = format!("{key}.");
            set.retain(|(k, _, _)| *k != key && !k.starts_with(&below));
        }
        let Some(table) = table else { continue };
        let mut found = Vec::new();
        leaves("", table, &mut found);
        for (key, value) in found {
            set.retain(|(k, _, _)| *k != key);
            set.push((key, render_value(&value), path.clone()));
        }
    }
    set.sort_by(|a, b| a.0.cmp(&b.0));
    set
}

/// The layers merged, and checked as a whole.
fn merged(layers: &[Layer], home: &Path, patches: &[PathBuf]) -> Result<Config, ConfigError> {
    let mut merged = toml::Table::new();
    for Layer {
        table, replaces, ..
    } in layers.iter().cloned()
    {
        for replaced in &replaces {
            super::rows::remove_path(&mut merged, replaced);
        }
        if let Some(table) = table {
            merge(&mut merged, table);
        }
    }
    Config::deserialize(merged).map_err(|e| ConfigError {
        // The last layer is where a bad key most likely came from; name every layer read.
        path: patches
            .last()
            .cloned()
            .unwrap_or_else(|| home.join("config.toml")),
        message: format!(
            "{}; check the key names and types in docs/config.md",
            e.message()
        ),
    })
}

/// A value as TOML writes it (strings quoted, arrays and tables inline).
fn render_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(text) => format!("{text:?}"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(render_value)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        toml::Value::Table(table) => format!(
            "{{ {} }}",
            table
                .iter()
                .map(|(k, v)| format!("{} = {}", quote_key(k), render_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A key as TOML writes it in a dotted path: bare when it can be.
pub(super) fn quote_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

fn read_layer(
    path: &Path,
    required: bool,
    only: Option<&str>,
) -> Result<Option<toml::Table>, ConfigError> {
    let fail = |message: String| ConfigError {
        path: path.to_path_buf(),
        message,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) => return Err(fail(format!("cannot be read: {e}"))),
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
    if let Some(only) = only {
        table.retain(|key, _| key == only);
        Config::deserialize(table.clone())
            .map_err(|e| fail(format!("[{only}]: {}", e.message())))?;
        return Ok(Some(table));
    }
    // Checked per layer too, from the text, so the error names the file, the line and the key.
    if let Err(e) = toml::from_str::<Config>(&text) {
        let at = e
            .span()
            .map(|span| {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: ")
            })
            .unwrap_or_default();
        return Err(fail(format!("{at}{}", e.message())));
    }
    Ok(Some(table))
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over)) => merge(inner, over),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "model = \"a\"\n[models.v]\nimage_input = true\n",
        )
        .unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), "model = \"b\"\n").unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_editor = true\n").unwrap();
        let files = ConfigFiles::load(&home, &ws, &[patch], true).unwrap();
        let config = files.config();
        assert_eq!(config.model.as_deref(), Some("b"));
        assert_eq!(config.tools.str_replace_editor, Some(true));
        assert_eq!(config.models["v"].image_input, Some(true));
    }

    #[test]
    fn no_files_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            *ConfigFiles::load(dir.path(), dir.path(), &[], true)
                .unwrap()
                .config(),
            Config::default()
        );
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_edtor = true\n").unwrap();
        let error = ConfigFiles::load(dir.path(), dir.path(), std::slice::from_ref(&patch), true)
            .unwrap_err();
        assert_eq!(error.path, patch);
        assert!(
            error
                .to_string()
                .contains("line 2: unknown field `str_replace_edtor`"),
            "{error}"
        );
        let missing = dir.path().join("missing.toml");
        let error = ConfigFiles::load(dir.path(), dir.path(), &[missing], true).unwrap_err();
        assert!(error.to_string().contains("cannot be read"), "{error}");
    }
}
