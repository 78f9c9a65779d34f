//! Which tools a run offers, by name: an allow list (only these) and a deny list (never these),
//! so that a supervisor can run, say, a reviewer that cannot change files. A name ending in `*`
//! covers every tool it starts (`mcp__github__*`).

/// The names a run may offer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// When set, only tools these names cover are offered.
    pub allow: Option<Vec<String>>,
    /// Tools these names cover are never offered, whatever `allow` says.
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether a tool of this name is offered.
    pub fn allows(&self, name: &str) -> bool {
        let covers = |pattern: &String| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == pattern,
        };
        !self.deny.iter().any(covers)
            && self
                .allow
                .as_ref()
                .is_none_or(|allow| allow.iter().any(covers))
    }

    /// Whether some tool whose name starts with `prefix` may be offered (for tools not known
    /// yet, such as an MCP server's before it starts).
    pub fn may_allow_some(&self, prefix: &str) -> bool {
        let denied_whole = self.deny.iter().any(|pattern| {
            pattern
                .strip_suffix('*')
                .is_some_and(|covered| prefix.starts_with(covered))
        });
        let allowed_some = self.allow.as_ref().is_none_or(|allow| {
            allow.iter().any(|pattern| {
                let stem = pattern.strip_suffix('*').unwrap_or(pattern);
                stem.starts_with(prefix) || prefix.starts_with(stem) && pattern.ends_with('*')
            })
        });
        !denied_whole && allowed_some
    }

    /// Every name the filter gives, allowed then denied.
    fn names(&self) -> impl Iterator<Item = &str> {
        self.allow
            .iter()
            .flatten()
            .chain(&self.deny)
            .map(String::as_str)
    }

    /// The first name that covers none of the `known` tools (an MCP pattern covers tools that
    /// arrive later, so any `mcp__` name passes).
    pub fn unknown_name(&self, known: &[&str]) -> Option<&str> {
        self.names().find(|name| {
            !name.starts_with("mcp__")
                && match name.strip_suffix('*') {
                    Some(prefix) => !known.iter().any(|t| t.starts_with(prefix)),
                    None => !known.contains(name),
                }
        })
    }

    /// The first `mcp__` name that covers no tool of these MCP servers because it names no
    /// server among them (`mcp__github__*` without a server `github`). Which tools a server
    /// has is known only once it starts, so a name of a server that is there passes.
    pub fn unknown_server_name(&self, servers: &[&str]) -> Option<&str> {
        self.names().find(|name| {
            let Some(rest) = name.strip_prefix("mcp__") else {
                return false;
            };
            match rest.strip_suffix('*') {
                // `mcp__*`, `mcp__git*`: a prefix of server names.
                Some(prefix) if !prefix.contains("__") => !servers
                    .iter()
                    .any(|server| format!("{server}__").starts_with(prefix)),
                _ => {
                    let server = rest.split("__").next().unwrap_or_default();
                    !servers.contains(&server)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_wins_over_allow_and_patterns_cover_prefixes() {
        let filter = ToolFilter {
            allow: Some(vec!["read".into(), "grep".into(), "mcp__gh__*".into()]),
            deny: vec!["grep".into()],
        };
        assert!(filter.allows("read"));
        assert!(!filter.allows("grep"));
        assert!(!filter.allows("bash"));
        assert!(filter.allows("mcp__gh__issues"));
        assert!(!filter.allows("mcp__other__x"));
        assert!(ToolFilter::default().allows("bash"));
        let deny = ToolFilter {
            allow: None,
            deny: vec!["job_*".into()],
        };
        assert!(!deny.allows("job_kill"));
        assert!(deny.allows("bash"));
        assert!(filter.may_allow_some("mcp__gh__"));
        assert!(!filter.may_allow_some("mcp__other__"));
    }

    #[test]
    fn names_that_cover_no_tool_are_found() {
        let filter = ToolFilter {
            allow: Some(vec!["read".into(), "mcp__x__*".into()]),
            deny: vec!["job_*".into(), "wirte".into()],
        };
        let known = ["read", "write", "job_output", "job_kill"];
        assert_eq!(filter.unknown_name(&known), Some("wirte"));
        assert_eq!(
            ToolFilter {
                allow: None,
                deny: vec!["nope*".into()]
            }
            .unknown_name(&known),
            Some("nope*")
        );
    }

    #[test]
    fn mcp_names_must_name_a_server_of_the_run() {
        let filter = |names: &[&str]| ToolFilter {
            allow: Some(names.iter().map(|&n| n.to_owned()).collect()),
            deny: Vec::new(),
        };
        let servers = ["github", "fs"];
        for covered in [
            "mcp__github__*",
            "mcp__fs__read",
            "mcp__git*",
            "mcp__*",
            "read",
        ] {
            assert_eq!(filter(&[covered]).unknown_server_name(&servers), None);
        }
        for uncovered in ["mcp__gitlab__*", "mcp__web__fetch", "mcp__x*"] {
            assert_eq!(
                filter(&["read", uncovered]).unknown_server_name(&servers),
                Some(uncovered)
            );
        }
        assert_eq!(filter(&["mcp__*"]).unknown_server_name(&[]), Some("mcp__*"));
        let deny = ToolFilter {
            allow: None,
            deny: vec!["mcp__gone__*".into()],
        };
        assert_eq!(deny.unknown_server_name(&servers), Some("mcp__gone__*"));
    }
}
