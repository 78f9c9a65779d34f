//! One configuration file as read, and what the files set and where: the vocabulary the
//! layers, the trust gate and the resolver share. A leaf: it names nothing else of the crate.

use std::path::PathBuf;

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

/// The layers read, lowest first, and the file that set each value last: what a value's
/// source is looked up in.
#[derive(Debug, Clone)]
pub(crate) struct Layers {
    read: Vec<Layer>,
    /// `(dotted key, value as TOML, file)` of every value set, from the last layer that set it.
    set: Vec<(String, String, PathBuf)>,
}

impl Layers {
    pub(crate) fn new(read: Vec<Layer>) -> Layers {
        let set = provenance(&read);
        Layers { read, set }
    }

    /// The files read (or looked for), lowest first.
    pub(crate) fn read(&self) -> &[Layer] {
        &self.read
    }

    /// Every value the files set, as `(dotted key, value as TOML, file)`.
    pub(crate) fn set(&self) -> &[(String, String, PathBuf)] {
        &self.set
    }

    /// The strings of the list at `path` in each layer that has one, with its file: for lists
    /// that add up across layers rather than replace.
    pub(crate) fn every_layer_list(&self, path: &[&str]) -> Vec<(String, PathBuf)> {
        let mut found = Vec::new();
        for layer in &self.read {
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
    pub(crate) fn source_of(&self, key: &str) -> PathBuf {
        let below = format!("{key}.");
        self.set
            .iter()
            .find(|(k, _, _)| k == key || k.starts_with(&below))
            .map(|(_, _, path)| path.clone())
            .or_else(|| self.read.last().map(|l| l.path.clone()))
            .unwrap_or_default()
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

/// A value as TOML writes it (strings quoted, arrays and tables inline).
pub(crate) fn render_value(value: &toml::Value) -> String {
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
pub(crate) fn quote_key(key: &str) -> String {
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
