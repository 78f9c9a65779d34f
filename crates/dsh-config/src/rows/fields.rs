//! A row's config fields, read one by one with their types checked.

use serde_json::{Map, Value};

/// A row's config fields, taken one by one; what is left at the end is unsupported.
pub(super) struct Fields {
    pub(super) kind: &'static str,
    pub(super) map: Map<String, Value>,
}

impl Fields {
    pub(super) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    pub(super) fn ignore(&mut self, key: &str) {
        self.map.remove(key);
    }

    pub(super) fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("{key} must be a string, got {other}")),
        }
    }

    pub(super) fn required_string(&mut self, key: &str) -> Result<String, String> {
        self.string(key)?
            .ok_or_else(|| format!("row {} needs {key}", self.kind))
    }

    pub(super) fn bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(format!("{key} must be true or false, got {other}")),
        }
    }

    pub(super) fn integer(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.integer_signed(key)? {
            Some(n) if n <= 0 => Err(format!("{key} must be more than 0")),
            n => Ok(n),
        }
    }

    pub(super) fn integer_signed(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .map(Some)
                .ok_or_else(|| format!("{key} must be a whole number, got {n}")),
            Some(other) => Err(format!("{key} must be a number, got {other}")),
        }
    }

    pub(super) fn string_list(&mut self, key: &str) -> Result<Option<Vec<String>>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(format!("{key} must be a list of strings, got {other}")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(format!("{key} must be a list, got {other}")),
        }
    }

    /// A mapping of names to strings (a server's `env` or `headers`). Its values often carry
    /// secrets, so an error names what kind of value was wrong, never the value.
    pub(super) fn string_map(&mut self, key: &str) -> Result<Option<toml::Value>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Object(map)) => {
                let mut table = toml::Table::new();
                for (name, value) in map {
                    let value = match value {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(format!(
                                "{key}.{name} must be a string, got {}",
                                value_kind(&other)
                            ));
                        }
                    };
                    table.insert(name, value.into());
                }
                Ok(Some(toml::Value::Table(table)))
            }
            Some(other) => Err(format!(
                "{key} must be a mapping of names to strings, got {}",
                value_kind(&other)
            )),
        }
    }

    /// An effort level; YAML 1.1's bare `off` (a boolean false) is `off`.
    pub(super) fn effort(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(false)) => Ok(Some("off".into())),
            Some(Value::String(level))
                if matches!(level.as_str(), "off" | "low" | "high" | "max") =>
            {
                Ok(Some(level))
            }
            Some(other) => Err(format!(
                "{key} {other} is not an effort dsh has (off, low, high, max)"
            )),
        }
    }

    /// Fails on any field not taken.
    pub(super) fn done(self) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(format!(
                "the field {key} of row {} has no translation onto dsh's keys; remove it, or \
                 see docs/config.md for what dsh reads",
                self.kind
            )),
        }
    }
}

/// What kind of YAML value `value` is, for an error that must not quote it.
fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}
