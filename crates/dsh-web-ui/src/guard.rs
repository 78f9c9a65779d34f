//! Who may talk to the server. A local web server is reachable by every page the user's
//! browser opens, so each request must show three things:
//!
//! - a `Host` this server answers to (the address it printed), so a page on another site whose
//!   name was re-pointed at 127.0.0.1 (DNS rebinding) is refused;
//! - for anything but a plain `GET`, an `Origin` that is this server's own (there is no CORS:
//!   no other origin is ever allowed);
//! - the secret token made at start, as a bearer token (`Authorization: Bearer`), or for the
//!   event stream, which a browser cannot give a header, as `?token=`. There is no cookie: the
//!   browser holds nothing it would send on its own, so no other page can borrow it (another
//!   site, or another server on another port of this machine, which would be sent every
//!   cookie of this host). The printed address carries the token in its fragment (`#token=`),
//!   which never leaves the browser; the page keeps it in its storage, which is this origin's
//!   alone.

use hyper::header::{AUTHORIZATION, HOST, ORIGIN};
use hyper::{HeaderMap, Method};

/// Why a request was refused: the status and what to tell its sender.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub status: u16,
    pub message: &'static str,
}

pub(crate) struct Guard {
    token: String,
    /// `host:port` spellings this server answers to.
    hosts: Vec<String>,
    /// `http://host:port` spellings of its own origin.
    origins: Vec<String>,
    /// Served on every address of the machine: any Host that is an IP address at its port is
    /// taken (a rebinding attack needs a name).
    any_ip: bool,
    port: u16,
}

impl Guard {
    /// A guard for a server on `host` (as given: `127.0.0.1`, `localhost`, `[::1]`, or the
    /// address `--host` named) at `port`, with a new token.
    pub(crate) fn new(host: &str, port: u16) -> Guard {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        Guard::with_token(host, port, token)
    }

    pub(crate) fn with_token(host: &str, port: u16, token: String) -> Guard {
        let mut names = vec![host.to_ascii_lowercase()];
        if dsh_protocol::address::is_loopback_host(host) {
            for name in ["127.0.0.1", "localhost", "[::1]"] {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
        }
        // A browser leaves the default port out of Host and Origin.
        let spellings = |name: &String| {
            if port == 80 {
                vec![name.clone(), format!("{name}:80")]
            } else {
                vec![format!("{name}:{port}")]
            }
        };
        let hosts: Vec<String> = names.iter().flat_map(spellings).collect();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        Guard {
            token,
            origins: hosts.iter().map(|h| format!("http://{h}")).collect(),
            hosts,
            any_ip: bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_unspecified()),
            port,
        }
    }

    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Whether `given` is the token, compared in time that does not depend on where they
    /// differ.
    pub(crate) fn is_token(&self, given: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), given.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    /// The checks every request passes, the token aside: its `Host`, and its `Origin`.
    pub(crate) fn check_origin(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refused> {
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !host.is_some_and(|h| self.is_own_host(&h)) {
            return Err(Refused {
                status: 421,
                message: "this server answers only to the address dsh printed",
            });
        }
        let origin = headers
            .get(ORIGIN)
            .and_then(|o| o.to_str().ok())
            .map(str::to_ascii_lowercase);
        let own_origin = |origin: &String| {
            self.origins.contains(origin)
                || origin
                    .strip_prefix("http://")
                    .is_some_and(|h| self.any_ip && self.is_ip_host(h))
        };
        match origin {
            Some(origin) if !own_origin(&origin) => Err(Refused {
                status: 403,
                message: "requests from other sites are refused",
            }),
            None if method != Method::GET && method != Method::HEAD => Err(Refused {
                status: 403,
                message: "a request that changes something must come from dsh's own page",
            }),
            _ => Ok(()),
        }
    }

    fn is_own_host(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h == host) || (self.any_ip && self.is_ip_host(host))
    }

    /// Whether `host` (`ip:port`, `[ip6]:port`) is an IP address at this server's port.
    fn is_ip_host(&self, host: &str) -> bool {
        host.rsplit_once(':')
            .filter(|(_, port)| port.parse::<u16>() == Ok(self.port))
            .map(|(ip, _)| ip.trim_start_matches('[').trim_end_matches(']'))
            .is_some_and(|ip| ip.parse::<std::net::IpAddr>().is_ok())
    }

    /// Whether the request carries the token: as a bearer token, or as `?token=` in `query`,
    /// which the caller gives for the event stream only.
    pub(crate) fn check_token(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<(), Refused> {
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::to_owned);
        let given = bearer.or_else(|| crate::http::query_value(query, "token"));
        if given.is_some_and(|t| self.is_token(&t)) {
            Ok(())
        } else {
            Err(Refused {
                status: 401,
                message: "open the address dsh web printed (it carries the token) to sign in",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn status(outcome: Result<(), Refused>) -> u16 {
        outcome.err().map_or(200, |refused| refused.status)
    }

    #[test]
    fn a_rebound_host_or_a_foreign_origin_is_refused() {
        let guard = Guard::with_token("127.0.0.1", 8080, "t0ken".into());
        let ok = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(status(guard.check_origin(&Method::POST, &ok)), 200);
        let rebound = headers(&[("host", "evil.example:8080")]);
        assert_eq!(status(guard.check_origin(&Method::GET, &rebound)), 421);
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert_eq!(status(guard.check_origin(&Method::GET, &foreign)), 403);
        let no_origin = headers(&[("host", "127.0.0.1:8080")]);
        assert_eq!(status(guard.check_origin(&Method::POST, &no_origin)), 403);
        assert_eq!(status(guard.check_origin(&Method::GET, &no_origin)), 200);
    }

    #[test]
    fn names_that_only_look_like_loopback_are_other_hosts() {
        let guard = Guard::with_token("127.0.0.1", 8080, "t".into());
        for host in [
            "127.0.0.1.evil.example:8080",
            "localhost.evil.example:8080",
            "127.0.0.1:1@evil.example:8080",
            "[::1]:1@evil.example:8080",
        ] {
            let rebound = headers(&[("host", host)]);
            assert_eq!(
                status(guard.check_origin(&Method::GET, &rebound)),
                421,
                "{host}"
            );
            let origin = format!("http://{host}");
            let foreign = headers(&[("host", "127.0.0.1:8080"), ("origin", &origin)]);
            assert_eq!(
                status(guard.check_origin(&Method::GET, &foreign)),
                403,
                "{host}"
            );
        }
        // Served on such a name, the guard does not take the loopback spellings for it.
        let named = Guard::with_token("127.0.0.1.evil.example", 8080, "t".into());
        let loopback = headers(&[("host", "127.0.0.1:8080")]);
        assert_eq!(status(named.check_origin(&Method::GET, &loopback)), 421);
    }

    #[test]
    fn the_token_comes_as_a_bearer_or_in_the_stream_s_query_never_in_a_cookie() {
        let guard = Guard::with_token("127.0.0.1", 1, "t0ken".into());
        let bearer = headers(&[("authorization", "Bearer t0ken")]);
        assert_eq!(status(guard.check_token(&bearer, None)), 200);
        assert_eq!(
            status(guard.check_token(&HeaderMap::new(), Some("a=1&token=t0ken"))),
            200
        );
        let cookie = headers(&[("cookie", "dsh_token=t0ken")]);
        assert_eq!(status(guard.check_token(&cookie, None)), 401);
        let wrong = headers(&[("authorization", "Bearer t0keN")]);
        assert_eq!(status(guard.check_token(&wrong, None)), 401);
        assert!(Guard::new("127.0.0.1", 1).token().len() >= 64);
    }

    #[test]
    fn every_address_takes_ip_hosts_only_and_port_80_goes_without_its_number() {
        let guard = Guard::with_token("0.0.0.0", 8976, "t".into());
        let lan = headers(&[
            ("host", "192.168.1.20:8976"),
            ("origin", "http://192.168.1.20:8976"),
        ]);
        assert_eq!(status(guard.check_origin(&Method::POST, &lan)), 200);
        let named = headers(&[("host", "evil.example:8976")]);
        assert_eq!(status(guard.check_origin(&Method::GET, &named)), 421);
        let eighty = Guard::with_token("127.0.0.1", 80, "t".into());
        let bare = headers(&[("host", "localhost"), ("origin", "http://127.0.0.1")]);
        assert_eq!(status(eighty.check_origin(&Method::POST, &bare)), 200);
    }
}
