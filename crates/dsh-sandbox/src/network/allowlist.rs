//! `sandbox.allowed_domains`: host names, each exact (`crates.io`) or every name below one
//! (`*.github.com`, which does not match `github.com` itself). Names only: an IP address is
//! never matched, since the point is to say which services a command may reach, and an
//! address says nothing about who answers there.

/// A pattern of `sandbox.allowed_domains` that is not a host name or `*.` and one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox.allowed_domains: \"{entry}\" {why}; hint: {hint}")]
pub struct DomainPatternError {
    pub entry: String,
    pub why: String,
    pub hint: String,
}

/// One entry of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    /// Any name that ends with `.` and this (not this name itself).
    Below(String),
}

/// The domains commands may reach through the proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainAllowlist {
    patterns: Vec<Pattern>,
}

impl DomainAllowlist {
    /// Reads the list, refusing the first entry that is not a pattern, named with what is wrong
    /// and how to write what was probably meant.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, DomainPatternError> {
        let patterns = entries
            .iter()
            .map(|entry| pattern(entry.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(DomainAllowlist { patterns })
    }

    /// The entries as written in the config (lower case).
    pub fn entries(&self) -> Vec<String> {
        self.patterns
            .iter()
            .map(|p| match p {
                Pattern::Exact(name) => name.clone(),
                Pattern::Below(name) => format!("*.{name}"),
            })
            .collect()
    }

    /// Whether `host` (as a client named it, normalised by [`normalize_host`]) is allowed.
    pub fn allows(&self, host: &str) -> bool {
        self.patterns.iter().any(|p| match p {
            Pattern::Exact(name) => host == name,
            Pattern::Below(name) => host
                .strip_suffix(name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        })
    }
}

fn error(entry: &str, why: &str, hint: String) -> DomainPatternError {
    DomainPatternError {
        entry: entry.to_owned(),
        why: why.to_owned(),
        hint,
    }
}

fn pattern(entry: &str) -> Result<Pattern, DomainPatternError> {
    let lower = entry.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(error(entry, "is empty", "remove it".into()));
    }
    if lower.contains("://") || lower.contains('/') {
        let host = lower.split("://").last().unwrap_or("").split('/').next();
        return Err(error(
            entry,
            "is a URL, not a domain",
            format!("write the host name alone, as \"{}\"", host.unwrap_or("")),
        ));
    }
    let (wild, name) = match lower.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, lower.as_str()),
    };
    if name.contains('*') {
        let bare = lower.trim_start_matches(['*', '.']);
        let bare = bare.replace('*', "");
        return Err(error(
            entry,
            "has a wildcard that is not a whole first label",
            format!(
                "a wildcard may only stand for the labels before a name: write \"*.{}\" for the \
                 names below it, or \"{}\" for that name alone",
                bare.trim_matches('.'),
                bare.trim_matches('.')
            ),
        ));
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.parse::<std::net::IpAddr>().is_ok() || name.starts_with('[') {
        return Err(error(
            entry,
            "is an IP address",
            "the allowlist names domains; give the host name the service is reached by".into(),
        ));
    }
    if name.contains(':') {
        return Err(error(
            entry,
            "has a port",
            "every port of an allowed domain is allowed; give the name without one".into(),
        ));
    }
    if !is_host_name(name) {
        return Err(error(
            entry,
            "is not a host name",
            "use letters, digits, '-' and '.' (labels of 1 to 63 characters, the last not all \
             digits), optionally after \"*.\""
                .into(),
        ));
    }
    Ok(if wild {
        Pattern::Below(name.to_owned())
    } else {
        Pattern::Exact(name.to_owned())
    })
}

/// Whether `name` (lower case, no trailing dot) is a DNS host name: labels of letters, digits
/// and `-` (not at either end), and a last label that is not all digits, which resolvers
/// would read as part of an address (`127.1`, `0x7f.1`).
pub(crate) fn is_host_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    let last = labels.last().copied().unwrap_or("");
    let numeric_last = last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    labels.iter().all(label_ok) && !numeric_last
}

/// A host as a client named it, made comparable: lower case, one trailing dot dropped. `None`
/// for what is not a host name (an IP literal, a percent-encoded or otherwise odd name): the
/// proxy refuses those, since no pattern can allow them.
pub(crate) fn normalize_host(host: &str) -> Option<String> {
    let lower = host.to_ascii_lowercase();
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    is_host_name(name).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> DomainAllowlist {
        DomainAllowlist::parse(entries).unwrap()
    }

    #[test]
    fn an_exact_name_and_the_names_below_a_wildcard_are_allowed() {
        let l = list(&["crates.io", "*.github.com", "Example.ORG."]);
        assert!(l.allows("crates.io"));
        assert!(!l.allows("static.crates.io"));
        assert!(l.allows("api.github.com"));
        assert!(l.allows("a.b.github.com"));
        assert!(!l.allows("github.com"));
        assert!(!l.allows("evilgithub.com"));
        assert!(!l.allows("github.com.evil.net"));
        assert!(l.allows("example.org"));
        assert_eq!(l.entries(), ["crates.io", "*.github.com", "example.org"]);
    }

    #[test]
    fn a_wildcard_typo_is_refused_naming_the_entry_and_the_fix() {
        for (entry, fix) in [
            ("*example.com", "\"*.example.com\""),
            ("**.x.org", "\"*.x.org\""),
            ("example.*", "\"*.example\""),
            ("a.*.example.com", "\"*.a..example.com\""),
        ] {
            let e = DomainAllowlist::parse(&[entry]).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("\"{entry}\"")), "{text}");
            assert!(text.contains("wildcard"), "{text}");
            if entry != "a.*.example.com" {
                assert!(text.contains(fix), "{text}");
            }
        }
    }

    #[test]
    fn urls_addresses_ports_and_odd_names_are_refused() {
        for (entry, why) in [
            ("https://example.com/x", "is a URL"),
            ("127.0.0.1", "IP address"),
            ("::1", "IP address"),
            ("[::1]", "IP address"),
            ("example.com:443", "has a port"),
            ("exa mple.com", "not a host name"),
            ("ex%61mple.com", "not a host name"),
            ("127.1", "not a host name"),
            ("", "is empty"),
        ] {
            let e = DomainAllowlist::parse(&[entry]).unwrap_err();
            assert!(e.to_string().contains(why), "{entry}: {e}");
        }
    }

    #[test]
    fn hosts_are_compared_in_one_spelling_and_addresses_are_never_names() {
        assert_eq!(
            normalize_host("API.GitHub.com.").as_deref(),
            Some("api.github.com")
        );
        for odd in [
            "127.0.0.1",
            "2130706433",
            "0x7f.1",
            "127.1",
            "[::1]",
            "::1",
            "a..b",
            "evil.com%2f.github.com",
            "evil.com\0.github.com",
            "",
        ] {
            assert_eq!(normalize_host(odd), None, "{odd:?}");
        }
    }
}
