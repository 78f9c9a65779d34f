//! The names MCP tools are offered under.

/// The longest function name the providers accept.
const MAX_NAME: usize = 64;
/// Hex digits of the identity hash appended to a name that had to change.
const HASH_DIGITS: usize = 12;

/// The model-facing name of `raw` on `server`: `mcp__<server>__<raw>` when that is already a
/// valid function name (at most 64 of `[A-Za-z0-9_-]`); otherwise invalid characters become
/// `_`, the name is cut to 51 characters and `_` plus 12 hex digits of
/// sha256(`server` NUL `raw`) are appended, so two tools never share a name. The same rule as
/// the reference, so a supervisor that knows a tool's name there knows it here.
pub fn public_tool_name(server: &str, raw: &str) -> String {
    let joined = format!("mcp__{server}__{raw}");
    let normalized: String = joined
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if normalized == joined && normalized.len() <= MAX_NAME {
        return normalized;
    }
    let identity = [server.as_bytes(), &[0], raw.as_bytes()].concat();
    let hash = dsh_tools::sha256_hex(&identity);
    // Every character is ASCII now, so byte and character positions agree.
    let keep = MAX_NAME - HASH_DIGITS - 1;
    let head = &normalized[..normalized.len().min(keep)];
    format!("{head}_{}", &hash[..HASH_DIGITS])
}

/// Whether `name` may name a server: 1 to 32 of `[A-Za-z0-9_-]`, with no `__` and no `_` at
/// the end. The first `__` after `mcp__` then always ends the server's name, so two servers
/// can never offer tools under the same name (`a__b` + `c` against `a` + `b__c`, or `a_` +
/// `_b` against `a` + `__b`).
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__")
        && !name.ends_with('_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_names_are_kept() {
        assert_eq!(public_tool_name("tools", "echo"), "mcp__tools__echo");
    }

    #[test]
    fn changed_or_long_names_get_the_identity_hash() {
        // `printf 'tools\0get.weather' | sha256sum` starts with ed08bfda53c8.
        assert_eq!(
            public_tool_name("tools", "get.weather"),
            "mcp__tools__get_weather_ed08bfda53c8"
        );
        let long = public_tool_name("s", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with(&format!("mcp__s__{}", "x".repeat(43))));
        assert_ne!(
            public_tool_name("tools", "a.b"),
            public_tool_name("tools", "a_b")
        );
        // Exactly 64 characters and clean: kept as it is.
        let exact = format!("mcp__s__{}", "y".repeat(56));
        assert_eq!(public_tool_name("s", &"y".repeat(56)), exact);
    }

    #[test]
    fn server_names_are_checked() {
        assert!(valid_server_name("tools-1_a"));
        assert!(!valid_server_name(""));
        assert!(!valid_server_name("a.b"));
        assert!(!valid_server_name(&"a".repeat(33)));
        assert!(valid_server_name("_a_b"));
        assert!(!valid_server_name("a__b"));
        assert!(!valid_server_name("a_"));
    }
}
