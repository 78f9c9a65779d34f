//! YAML values to JSON, with the `!!js` forms supervisors use evaluated.

use serde_json::{Map, Value};

use std::path::PathBuf;

/// What a translation needs to know of the run.
#[derive(Debug, Clone)]
pub struct RowContext {
    pub home: PathBuf,
    pub cwd: PathBuf,
}

/// YAML to JSON, `!!js` values evaluated.
pub(super) fn to_json(value: yaml_serde::Value, context: &RowContext) -> Result<Value, String> {
    use yaml_serde::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|v| to_json(v, context))
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    other => return Err(format!("has a key that is not a string: {other:?}")),
                };
                out.insert(key, to_json(value, context)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            if !(tag == "!!js" || tag == "!js" || tag.ends_with(":js")) {
                return Err(format!("uses the tag {tag}, which dsh does not know"));
            }
            let Y::String(expression) = tagged.value else {
                return Err("has a !!js value that is not a string".into());
            };
            evaluate(&expression, context)?
        }
    })
}

/// The `!!js` forms supervisors use; anything else is refused rather than guessed.
pub(super) fn evaluate(expression: &str, context: &RowContext) -> Result<Value, String> {
    let expression = expression.trim();
    for operator in ["??", "||"] {
        if let Some((left, right)) = split_top(expression, operator) {
            let left = evaluate(left, context)?;
            let keep = match operator {
                "??" => !left.is_null(),
                _ => !(left.is_null() || left == Value::String(String::new())),
            };
            return if keep {
                Ok(left)
            } else {
                evaluate(right, context)
            };
        }
    }
    if let Some(literal) = string_literal(expression) {
        return Ok(Value::String(literal));
    }
    if let Ok(number) = expression.parse::<i64>() {
        return Ok(Value::from(number));
    }
    match expression {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        "null" | "undefined" => return Ok(Value::Null),
        "process.cwd()" => return Ok(Value::String(context.cwd.display().to_string())),
        _ => {}
    }
    if let Some(name) = expression
        .strip_prefix("process.env.")
        .filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .map(str::to_owned)
        .or_else(|| {
            expression
                .strip_prefix("process.env[")
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(string_literal)
        })
    {
        return Ok(std::env::var(&name).map_or(Value::Null, Value::String));
    }
    if let Some(args) = expression
        .strip_prefix("dshHomePath(")
        .and_then(|rest| rest.strip_suffix(')'))
    {
        let mut path = context.home.clone();
        for part in args.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let part = string_literal(part)
                .ok_or_else(|| format!("!!js {expression}: dshHomePath takes string literals"))?;
            path.push(part);
        }
        return Ok(Value::String(path.display().to_string()));
    }
    Err(format!(
        "has the value !!js {expression}, which dsh cannot evaluate (it runs no JavaScript); \
         write the value itself, or use process.env.NAME, process.cwd() or dshHomePath('...')"
    ))
}

/// `'text'` or `"text"`, without escapes.
fn string_literal(text: &str) -> Option<String> {
    let text = text.trim();
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains(quote) && !inner.contains('\\')).then(|| inner.to_owned())
}

/// Splits at the first `operator` outside quotes.
fn split_top<'a>(text: &'a str, operator: &str) -> Option<(&'a str, &'a str)> {
    let mut quote = None;
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if text[i..].starts_with(operator) => {
                return Some((&text[..i], &text[i + operator.len()..]));
            }
            None => {}
        }
    }
    None
}
