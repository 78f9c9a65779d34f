//! `--dump-config`: the settings a run would use, each with the layer it came from: the config
//! files (lowest first), then the environment, then the flags. Keys are never shown: the config
//! holds only the names of the variables that carry them. Values that often carry a secret
//! themselves (an MCP server's `env` and `headers`, a route's `headers`, a URL's query or
//! password) are shown as `[hidden]`; the keys and the layer that set them still show.

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::Config;

use crate::cli::RunArgs;
use crate::surface::Surface;

pub fn run(args: &RunArgs) -> u8 {
    match render(args) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(message) => {
            Surface::new(false).fail(&message, &message, None);
            1
        }
    }
}

fn render(args: &RunArgs) -> Result<String, String> {
    let (home, cwd) = crate::place::home_and_cwd()?;
    let layers = Config::layers(&home, &cwd, &args.patches).map_err(|e| e.to_string())?;
    // The merge is checked as a run would check it.
    Config::load(&home, &cwd, &args.patches).map_err(|e| e.to_string())?;
    let mut out =
        String::from("# dsh settings: files lowest first, then the environment, then flags\n");
    for layer in &layers {
        let state = match (&layer.table, layer.rows) {
            (Some(_), true) => "read: reference rows",
            (Some(_), false) => "read",
            (None, _) => "absent",
        };
        let _ = writeln!(out, "#   {} ({state})", layer.path.display());
        for note in &layer.notes {
            let _ = writeln!(out, "#     note: {note}");
        }
    }
    let mut rows: Vec<(String, String, String)> = Config::provenance(&layers)
        .into_iter()
        .map(|(key, value, path)| {
            let value = shown_value(&key, value);
            (key, value, path.display().to_string())
        })
        .collect();
    let mut set = |key: &str, value: String, source: &str| {
        rows.retain(|(k, _, _)| k != key);
        rows.push((key.to_owned(), value, source.to_owned()));
    };
    if let Some(mode) = std::env::var("DSH_PERMISSION_MODE")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        set(
            "sandbox.mode",
            format!("{:?}", mode.trim()),
            "DSH_PERMISSION_MODE",
        );
    }
    if let Some(mode) = args.permission_mode {
        set(
            "sandbox.mode",
            format!("{:?}", mode.as_str()),
            "--permission-mode",
        );
    }
    if let Some(policy) = args.approval_policy {
        set(
            "approval.policy",
            format!("{:?}", policy.as_str()),
            "--approval-policy",
        );
    }
    if let Some(model) = &args.model {
        set("model", format!("{model:?}"), "--model");
    }
    if let Some(effort) = args.effort {
        set("effort", format!("{:?}", effort.as_str()), "--effort");
    }
    if let Some(steps) = args.max_steps {
        set("max_steps", steps.to_string(), "--max-steps");
    }
    if !args.add_dirs.is_empty() {
        let dirs: Vec<String> = args
            .add_dirs
            .iter()
            .map(|d| format!("{:?}", d.display().to_string()))
            .collect();
        set(
            "sandbox.add_dirs",
            format!("[{}]", dirs.join(", ")),
            "--add-dir",
        );
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let width = rows
        .iter()
        .map(|(k, v, _)| k.len() + v.len() + 3)
        .max()
        .unwrap_or(0);
    for (key, value, source) in rows {
        let assignment = format!("{key} = {value}");
        let _ = writeln!(out, "{assignment:<width$}  # {source}");
    }
    out.push_str("# anything not listed has its default (docs/config.md)\n");
    Ok(out)
}

/// A value as `--dump-config` shows it, secrets taken out.
fn shown_value(key: &str, value: String) -> String {
    let parts = key_parts(key);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let secret_map = matches!(
        parts.as_slice(),
        ["mcp", "servers", _, "env" | "headers", _, ..] | ["providers", _, "headers", _, ..]
    );
    if secret_map {
        return "\"[hidden]\"".into();
    }
    if matches!(parts.last(), Some(&("url" | "base_url")))
        && let Some(url) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"'))
        && let Some(shown) = url_without_secrets(url)
    {
        return format!("{shown:?}");
    }
    value
}

/// The names of a dotted key, where a name with other characters than letters, digits, `_`
/// and `-` is quoted (as `Config::provenance` writes them).
fn key_parts(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut chars = key.chars();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' if quoted => part.extend(chars.next()),
            '.' if !quoted => parts.push(std::mem::take(&mut part)),
            c => part.push(c),
        }
    }
    parts.push(part);
    parts
}

/// `url` with its query and user part replaced by `[hidden]`, when it has either.
fn url_without_secrets(url: &str) -> Option<String> {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) if !query.is_empty() => (head, Some(query)),
        _ => (url, None),
    };
    let (scheme, rest) = head.split_once("://")?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    // A user name alone can be the token (`https://TOKEN@host`): the whole user part goes.
    let authority = authority
        .rsplit_once('@')
        .map(|(_, host)| format!("[hidden]@{host}"));
    if query.is_none() && authority.is_none() {
        return None;
    }
    let authority = authority.unwrap_or_else(|| rest[..rest.len() - path.len()].to_owned());
    let query = if query.is_some() { "?[hidden]" } else { "" };
    Some(format!("{scheme}://{authority}{path}{query}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_values_are_hidden_and_their_keys_kept() {
        for (key, value, shown) in [
            (
                "mcp.servers.gh.env.GITHUB_TOKEN",
                "\"ghp_x\"",
                "\"[hidden]\"",
            ),
            (
                "mcp.servers.gh.headers.Authorization",
                "\"Bearer x\"",
                "\"[hidden]\"",
            ),
            ("providers.p.headers.X-Key", "\"k\"", "\"[hidden]\""),
            (
                "mcp.servers.gh.url",
                "\"https://h/mcp?token=t\"",
                "\"https://h/mcp?[hidden]\"",
            ),
            (
                "providers.p.base_url",
                "\"https://u:pw@h:8/v1\"",
                "\"https://[hidden]@h:8/v1\"",
            ),
            (
                "mcp.servers.gh.url",
                "\"https://ghp_t0ken@h/mcp\"",
                "\"https://[hidden]@h/mcp\"",
            ),
            // A quoted name with a dot in it is still one name.
            ("mcp.servers.\"my.srv\".env.TOKEN", "\"s\"", "\"[hidden]\""),
            (
                "mcp.servers.\"a\\\"b.c\".headers.X",
                "\"s\"",
                "\"[hidden]\"",
            ),
            (
                "mcp.servers.gh.url",
                "\"http://127.0.0.1:9/mcp\"",
                "\"http://127.0.0.1:9/mcp\"",
            ),
            ("mcp.servers.gh.command", "\"npx\"", "\"npx\""),
        ] {
            assert_eq!(shown_value(key, value.into()), shown, "{key}");
        }
    }
}
