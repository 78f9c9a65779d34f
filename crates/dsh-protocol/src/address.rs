//! Addresses as the whole program judges and shows them. A key or a token may go over plain
//! HTTP only to this machine, and that is decided here, once, from the parsed URL: a string
//! prefix (`http://127.0.0.1`) also takes `http://127.0.0.1.evil.example` and
//! `http://127.0.0.1:1@evil.example`. And a URL shown to a person (a row, a reason, an error, a
//! notice) goes through [`shown_url`], so a password or a token in it is never printed.

/// Whether `host` names this machine's loopback: exactly `localhost` (in any case), an IPv4
/// address in 127.0.0.0/8, or `::1` (bracketed or not). A name that only starts like one
/// (`127.0.0.1.evil.example`, `localhost.evil.example`) is another host.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(std::net::IpAddr::V6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        Err(_) => false,
    }
}

/// Whether `url` points at this machine: it parses, its host is one [`is_loopback_host`]
/// takes, and it carries no user part. A user part is refused outright: `127.0.0.1:80@` in
/// front of another host is the usual way to make an address read as local to a person or a
/// pattern, and a local server needs none.
pub fn is_this_machine(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url.trim()) else {
        return false;
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return false;
    }
    match parsed.host() {
        Some(url::Host::Domain(name)) => is_loopback_host(name),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        None => false,
    }
}

/// Why a secret may not be sent to an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Insecure {
    /// It is not a URL with a host.
    Unparsable,
    /// Its scheme is neither `https` nor `http`.
    Scheme(String),
    /// Plain `http` to a host that is not this machine (or given with a user part).
    PlainHttp,
}

/// Whether a key or a token may be sent to `url`: over `https`, or over plain `http` to this
/// machine only ([`is_this_machine`]).
pub fn check_secret_destination(url: &str) -> Result<(), Insecure> {
    let parsed = url::Url::parse(url.trim()).map_err(|_| Insecure::Unparsable)?;
    if !parsed.has_host() {
        return Err(Insecure::Unparsable);
    }
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_this_machine(url) => Ok(()),
        "http" => Err(Insecure::PlainHttp),
        other => Err(Insecure::Scheme(other.to_owned())),
    }
}

/// What [`shown_url`] shows for text that the URL parser does not take whole: nothing of it, as
/// a password may be anywhere in it (`http://u:P?W@host` is no URL, and its `?` is no query).
pub const NOT_A_URL: &str = "[hidden: not a valid URL]";

/// `url` as it may be shown to a person: as the URL parser reads it (so `http:/u:PW@host`,
/// `http:\\u:PW@host` and `http:///u:PW@host`, which it takes as `http://u:PW@host/`, show
/// the host they reach), with its user part (a password, or a token given as the user name)
/// shown as `[hidden]@`, and its query (where tokens and signatures travel) and fragment as
/// `?[hidden]` and `#[hidden]`. Text the parser does not take is not shown at all
/// ([`NOT_A_URL`]), nor is the rest of an address without a host (`mailto:`, `data:`).
pub fn shown_url(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url.trim()) else {
        return NOT_A_URL.to_owned();
    };
    if parsed.cannot_be_a_base() {
        return format!("{}:[hidden]", parsed.scheme());
    }
    let had_user = !parsed.username().is_empty() || parsed.password().is_some();
    let mut bare = parsed.clone();
    // Only an address with a host can have a user part; without one these change nothing.
    let _ = bare.set_password(None);
    let _ = bare.set_username("");
    bare.set_query(None);
    bare.set_fragment(None);
    let mut shown = bare.to_string();
    // The root the parser adds to `https://host` was not written: not shown either.
    let written_path = url.trim().split(['?', '#']).next().unwrap_or_default();
    if bare.path() == "/" && !written_path.ends_with(['/', '\\']) {
        shown.pop();
    }
    if had_user {
        let after_scheme = bare.scheme().len() + "://".len();
        shown.insert_str(after_scheme.min(shown.len()), "[hidden]@");
    }
    if parsed.query().is_some() {
        shown.push_str("?[hidden]");
    }
    if parsed.fragment().is_some() {
        shown.push_str("#[hidden]");
    }
    shown
}

/// The user name and password `url` carries, each as the URL parser reads it, decoded, and as
/// written (where the text gives one after its scheme, even when the parser does not take the
/// whole): what must never be printed. A password is the secret; a user name alone is taken
/// for a token.
pub fn user_part(url: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut add = |value: &str| {
        for value in [value.to_owned(), percent_decoded(value)] {
            if !value.is_empty() && !found.contains(&value) {
                found.push(value);
            }
        }
    };
    if let Ok(parsed) = url::Url::parse(url.trim()) {
        match parsed.password() {
            Some(password) => {
                add(password);
                // What an HTTP client sends as Basic credentials, base64 of `user:password`,
                // and what an echo of that header shows once decoded.
                add(&format!("{}:{password}", parsed.username()));
            }
            None => add(parsed.username()),
        }
    }
    // As written: after `scheme:` and any slashes, up to where a path begins.
    let written = url
        .trim()
        .split_once(':')
        .map(|(_, rest)| rest.trim_start_matches(['/', '\\']))
        .unwrap_or_default();
    let authority = written.split(['/', '\\']).next().unwrap_or_default();
    if let Some((user, _)) = authority.rsplit_once('@') {
        add(user.split_once(':').map_or(user, |(_, password)| password));
    }
    found
}

/// `%XX` escapes decoded (as UTF-8, lossily); anything else kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Addresses that read as local to a prefix or a shell pattern, and are not.
    const LOOKALIKES: [&str; 6] = [
        "http://127.0.0.1.evil.example",
        "http://127.0.0.1:1@evil.example",
        "http://localhost.evil.example",
        "http://[::1]:1@evil.example",
        "http://127.0.0.1:80@evil.example/path",
        "http://localhost:x@evil.example",
    ];

    #[test]
    fn only_loopback_hosts_are_this_machine() {
        for url in [
            "http://127.0.0.1:8000/v1",
            "http://127.9.8.7",
            "http://localhost:1",
            "http://LOCALHOST/",
            "http://[::1]:9/mcp",
            "https://127.0.0.1",
        ] {
            assert!(is_this_machine(url), "{url}");
            assert_eq!(check_secret_destination(url), Ok(()), "{url}");
        }
        for url in LOOKALIKES.iter().chain(&[
            "http://u:pw@127.0.0.1:1",
            "http://user@localhost/",
            "http://[::ffff:127.0.0.1]/",
            "http://10.0.0.1/",
            "not a url",
            "file:///etc/passwd",
        ]) {
            assert!(!is_this_machine(url), "{url}");
        }
        for url in LOOKALIKES {
            assert_eq!(
                check_secret_destination(url),
                Err(Insecure::PlainHttp),
                "{url}"
            );
        }
        assert_eq!(check_secret_destination("https://api.example.com"), Ok(()));
        assert_eq!(
            check_secret_destination("ftp://127.0.0.1/"),
            Err(Insecure::Scheme("ftp".into()))
        );
        assert_eq!(check_secret_destination("nope"), Err(Insecure::Unparsable));
        for host in ["127.0.0.1", "[::1]", "::1", "localhost", "127.0.0.2"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "0.0.0.0",
            "::",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_shown_url_keeps_no_password_token_or_query() {
        let mut wrong = Vec::new();
        for (url, shown) in [
            ("http://u:PW@127.0.0.1:1", "http://[hidden]@127.0.0.1:1"),
            ("https://ghp_t0ken@h/mcp", "https://[hidden]@h/mcp"),
            ("https://h/mcp?token=t", "https://h/mcp?[hidden]"),
            ("https://h/p#token=t", "https://h/p#[hidden]"),
            ("https://u:p@h:8/v1?k=v", "https://[hidden]@h:8/v1?[hidden]"),
            ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"),
            ("https://h/npm/@scope/x", "https://h/npm/@scope/x"),
            ("https://api.example.com", "https://api.example.com"),
            ("https://api.example.com/", "https://api.example.com/"),
            // Spellings the parser takes as `http://u:PW@host/`: shown as it reads them.
            ("http:/u:PW@host", "http://[hidden]@host"),
            ("http:\\\\u:PW@host", "http://[hidden]@host"),
            ("http:///u:PW@host", "http://[hidden]@host"),
            ("HTTP://u:PW@Host:80/a/../b", "http://[hidden]@host/b"),
            // What reads as local to a person, as the parser reads it.
            (
                "http://127.0.0.1:80@evil.example/x",
                "http://[hidden]@evil.example/x",
            ),
            // Not URLs, or not ones the parser takes whole: nothing of them.
            ("http://u:P?W@127.0.0.1/", NOT_A_URL),
            ("http://u:pa/ss@h/", NOT_A_URL),
            ("not a url", NOT_A_URL),
            // No host: nothing after the scheme (`u:` reads as one).
            ("mailto:u:PW@h", "mailto:[hidden]"),
            ("u:PW@h", "u:[hidden]"),
        ] {
            if shown_url(url) != shown {
                wrong.push(format!("{url}: {} (not {shown})", shown_url(url)));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn the_user_part_is_found_however_it_is_spelled() {
        for (url, secrets) in [
            // The password, and `user:password`, which Basic credentials encode.
            ("http://u:PW@h", &["PW", "u:PW"][..]),
            ("http:/u:PW@h", &["PW", "u:PW"]),
            ("http:\\\\u:PW@h", &["PW", "u:PW"]),
            ("http:///u:PW@h", &["PW", "u:PW"]),
            ("https://tok3n@h/x", &["tok3n"]),
            (
                "http://u:p%40ss@h",
                &["p%40ss", "p@ss", "u:p%40ss", "u:p@ss"],
            ),
            // Not a URL to the parser: what is written after the scheme still counts.
            ("http://u:P?W@127.0.0.1/", &["P?W"]),
            ("https://h/x", &[]),
        ] {
            assert_eq!(user_part(url), secrets, "{url}");
        }
    }
}
