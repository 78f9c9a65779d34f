//! Settings as `--dump-config` shows them: `key = value`, the value written as TOML would write
//! it, each with its source. Keys are never shown (the config holds only the names of the
//! variables that carry them); values that often carry a secret themselves (an MCP server's
//! `env` and `headers`, a route's `headers`, a URL's query or user part) are `[hidden]`, while
//! their keys and the layer that set them still show.

use std::path::PathBuf;

use super::sourced::Source;

/// One value in effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingRow {
    /// The dotted key (`sandbox.mode`, `mcp.servers.gh.url`).
    pub key: String,
    /// The value as TOML writes it, secrets hidden.
    pub value: String,
    /// Where it came from: `default`, a file's path, a variable or a flag.
    pub source: String,
}

impl SettingRow {
    pub(super) fn new(key: String, value: String, source: &Source) -> Self {
        let value = shown_value(&key, value);
        SettingRow {
            key,
            value,
            source: source.to_string(),
        }
    }

    pub(crate) fn described(key: String, value: String, source: String) -> Self {
        SettingRow { key, value, source }
    }
}

/// A value written as TOML writes it.
pub trait Shown {
    fn shown(&self) -> String;
}

impl Shown for String {
    fn shown(&self) -> String {
        format!("{self:?}")
    }
}

impl Shown for PathBuf {
    fn shown(&self) -> String {
        self.display().to_string().shown()
    }
}

macro_rules! shown_plain {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
shown_plain!(bool, u32, u64, usize, f64);

macro_rules! shown_named {
    ($($t:ty),*) => {$(
        impl Shown for $t {
            fn shown(&self) -> String {
                format!("{:?}", self.as_str())
            }
        }
    )*};
}
shown_named!(
    dsh_llm::Effort,
    super::files::PermissionMode,
    dsh_sandbox::escalation::ApprovalPolicy,
    super::files::ProviderKind,
    super::files::Compression,
    super::files::AgentPreset,
    super::files::SystemRole,
    super::files::SearchProvider,
    super::files::Notify
);

impl Shown for dsh_sandbox::BackendChoice {
    fn shown(&self) -> String {
        let name = match self {
            dsh_sandbox::BackendChoice::Auto => "auto",
            dsh_sandbox::BackendChoice::Bubblewrap => "bubblewrap",
            dsh_sandbox::BackendChoice::Landlock => "landlock",
        };
        format!("{name:?}")
    }
}

impl<T: Shown> Shown for Vec<T> {
    fn shown(&self) -> String {
        format!(
            "[{}]",
            self.iter().map(Shown::shown).collect::<Vec<_>>().join(", ")
        )
    }
}

/// `None` is shown as what it means where it is used, by the caller's row; alone it is "none".
impl<T: Shown> Shown for Option<T> {
    fn shown(&self) -> String {
        match self {
            Some(value) => value.shown(),
            None => "\"none\"".to_owned(),
        }
    }
}

impl Shown for dsh_protocol::Prices {
    fn shown(&self) -> String {
        let off_peak = self.off_peak.map_or_else(String::new, |off| {
            format!(
                ", off_peak = {{ peak_hours = \"{}\", input = {}, output = {}, cache_read = {}, \
                 cache_write = {} }}",
                off.peak_hours.name(),
                off.input,
                off.output,
                off.cache_read,
                off.cache_write
            )
        });
        format!(
            "{{ input = {}, output = {}, cache_read = {}, cache_write = {}{off_peak} }}",
            self.input, self.output, self.cache_read, self.cache_write
        )
    }
}

/// A value as `--dump-config` shows it, secrets taken out.
pub(crate) fn shown_value(key: &str, value: String) -> String {
    let parts = key_parts(key);
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let secret_map = matches!(
        parts.as_slice(),
        ["mcp", "servers", _, "env" | "headers", ..]
            | ["mcp", "servers", _, "oauth", "client_secret"]
            | ["providers", _, "headers", ..]
    );
    if secret_map {
        return "\"[hidden]\"".into();
    }
    if matches!(
        parts.last(),
        Some(&("url" | "base_url" | "client_metadata_url"))
    ) && let Some(url) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"'))
        && dsh_protocol::shown_url(url) != url
    {
        return format!("{:?}", dsh_protocol::shown_url(url));
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

/// The credentials a URL carries: its user part and password (as the URL parser reads them,
/// and as written), and its query's values named like credentials.
pub(crate) fn url_credentials(url: &str) -> Vec<String> {
    let mut found = dsh_protocol::address::user_part(url);
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let query = query.split('#').next().unwrap_or_default();
    // Only parameters named like credentials (`token`, `api_key`, `sig`): a `format=json`
    // is no secret.
    found.extend(
        (query.split('&'))
            .filter_map(|pair| pair.split_once('='))
            .filter(|(name, _)| {
                let upper = name.to_uppercase();
                dsh_tools::is_secret_name(name)
                    || ["AUTH", "SIG", "APIKEY"]
                        .iter()
                        .any(|part| upper.contains(part))
            })
            .map(|(_, value)| value.to_owned()),
    );
    found
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_urls_credentials_are_its_user_part_and_query_values() {
        assert_eq!(
            url_credentials("https://bot:s3cr3t-pass@mcp.example.com/x?token=abc123456&v=1"),
            ["s3cr3t-pass", "bot:s3cr3t-pass", "abc123456"]
        );
        assert_eq!(
            url_credentials("https://ghp_token123@h/x?format=json&sig=zzz"),
            ["ghp_token123", "zzz"]
        );
        assert!(url_credentials("https://mcp.example.com/x").is_empty());
    }
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
                "mcp.servers.docs.oauth.client_secret",
                "\"s3cret\"",
                "\"[hidden]\"",
            ),
            ("mcp.servers.docs.oauth.client_id", "\"dsh\"", "\"dsh\""),
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
            // A whole table of them, as a value set aside is shown.
            ("providers.p.headers", "{ X = \"k\" }", "\"[hidden]\""),
            ("mcp.servers.gh.env", "{ T = \"s\" }", "\"[hidden]\""),
        ] {
            assert_eq!(shown_value(key, value.into()), shown, "{key}");
        }
    }
}
