//! Reading the head of a request a client sends its proxy: where it wants to go, and what to
//! send on for a plain HTTP request.

/// Where a request wants to go, and what to forward once connected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The host as the client named it (not yet normalised).
    pub host: String,
    pub port: u16,
    /// `CONNECT`: answer `200` and relay bytes; otherwise the rewritten head to send first.
    pub forward: Option<Vec<u8>>,
}

/// Why a request was refused before any host was judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRequest {
    /// The host named, when one was, for the result's marker.
    pub host: Option<String>,
    pub why: String,
}

fn bad(host: Option<&str>, why: impl Into<String>) -> BadRequest {
    BadRequest {
        host: host.map(str::to_owned),
        why: why.into(),
    }
}

/// Splits `host[:port]` (an IPv6 literal in brackets keeps them in the host).
fn authority(text: &str, default_port: Option<u16>) -> Result<(String, u16), BadRequest> {
    if text.contains('@') {
        return Err(bad(
            None,
            format!("\"{text}\" carries credentials before the host, which the proxy refuses"),
        ));
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest
            .split_once(']')
            .ok_or_else(|| bad(None, format!("\"{text}\" is not host:port")))?;
        (format!("[{inside}]"), after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host.to_owned(), Some(port)),
            Some(_) => (text.to_owned(), None),
            None => (text.to_owned(), None),
        }
    };
    let port = match (port, default_port) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad(Some(&host), format!("\"{text}\" has no valid port")))?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad(Some(&host), format!("\"{text}\" names no port"))),
    };
    if host.is_empty() {
        return Err(bad(None, format!("\"{text}\" names no host")));
    }
    Ok((host, port))
}

/// Reads a request head (everything up to the blank line, without it).
pub(crate) fn target(head: &[u8]) -> Result<Target, BadRequest> {
    let text = std::str::from_utf8(head).map_err(|_| bad(None, "the request is not text"))?;
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some(method), Some(uri), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(None, "the request line is not METHOD TARGET VERSION"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad(None, format!("{version} is not HTTP/1.x")));
    }
    let headers: Vec<(&str, &str)> = lines
        .map(|l| l.split_once(':').map(|(k, v)| (k.trim(), v.trim())))
        .collect::<Option<_>>()
        .ok_or_else(|| bad(None, "a header line has no ':'"))?;
    let hosts: Vec<&str> = (headers.iter())
        .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| *v)
        .collect();
    if hosts.len() > 1 {
        return Err(bad(None, "the request has more than one Host header"));
    }
    if method == "CONNECT" {
        let (host, port) = authority(uri, None)?;
        return Ok(Target {
            host,
            port,
            forward: None,
        });
    }
    // A plain HTTP request: absolute-form from a client that knows it talks to a proxy, or
    // origin-form with a Host header.
    let (host, port, path) = match uri.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("http://") => {
            let rest = &uri[7..];
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (host, port) = authority(&rest[..end], Some(80))?;
            let path = match &rest[end..] {
                "" => "/".to_owned(),
                p if p.starts_with('/') => p.to_owned(),
                p => format!("/{p}"),
            };
            (host, port, path)
        }
        _ if uri.starts_with('/') => {
            let host = hosts
                .first()
                .ok_or_else(|| bad(None, "the request names no host (no URL, no Host header)"))?;
            let (host, port) = authority(host, Some(80))?;
            (host, port, uri.to_owned())
        }
        _ => {
            return Err(bad(
                None,
                format!(
                    "\"{uri}\" is not an http:// URL; for https, the client must ask for a \
                     tunnel (CONNECT)"
                ),
            ));
        }
    };
    // The Host header is what the server reads: it must name the host the proxy judged.
    if let Some(named) = hosts.first() {
        let (named_host, named_port) = authority(named, Some(80))?;
        if !named_host.eq_ignore_ascii_case(&host) || named_port != port {
            return Err(bad(
                Some(&host),
                format!(
                    "its Host header names \"{named}\", another host than the URL's; the proxy \
                     refuses the mismatch"
                ),
            ));
        }
    }
    let mut forward = format!("{method} {path} {version}\r\n");
    if hosts.is_empty() {
        forward.push_str(&format!("Host: {host}:{port}\r\n"));
    }
    for (k, v) in &headers {
        // For the proxy only; a proxy's credentials are not the server's to see.
        if k.eq_ignore_ascii_case("proxy-connection")
            || k.eq_ignore_ascii_case("proxy-authorization")
        {
            continue;
        }
        forward.push_str(&format!("{k}: {v}\r\n"));
    }
    forward.push_str("\r\n");
    Ok(Target {
        host,
        port,
        forward: Some(forward.into_bytes()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_names_host_and_port() {
        let t = target(b"CONNECT example.com:443 HTTP/1.1\r\nHost: other.net:443").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.forward),
            ("example.com", 443, None)
        );
        let t = target(b"CONNECT [::1]:80 HTTP/1.1").unwrap();
        assert_eq!(t.host, "[::1]");
        assert!(target(b"CONNECT example.com HTTP/1.1").is_err());
        assert!(target(b"CONNECT user@example.com:443 HTTP/1.1").is_err());
    }

    #[test]
    fn a_plain_request_is_rewritten_to_the_server_s_form() {
        let t = target(
            b"GET http://Example.com:8080/a?b HTTP/1.1\r\nHost: example.com:8080\r\n\
              Proxy-Connection: keep-alive\r\nAccept: */*",
        )
        .unwrap();
        assert_eq!((t.host.as_str(), t.port), ("Example.com", 8080));
        assert_eq!(
            String::from_utf8(t.forward.unwrap()).unwrap(),
            "GET /a?b HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n"
        );
        let t = target(b"GET / HTTP/1.1\r\nHost: example.com").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("example.com", 80));
    }

    #[test]
    fn a_host_header_that_differs_from_the_url_is_refused() {
        let e = target(b"GET http://allowed.com/ HTTP/1.1\r\nHost: evil.net").unwrap_err();
        assert!(e.why.contains("another host"), "{e:?}");
        let e = target(b"GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: b.com").unwrap_err();
        assert!(e.why.contains("more than one Host"), "{e:?}");
        let e = target(b"GET http://a.com@evil.net/ HTTP/1.1").unwrap_err();
        assert!(e.why.contains("credentials"), "{e:?}");
        assert!(target(b"GET https://a.com/ HTTP/1.1").is_err());
    }
}
