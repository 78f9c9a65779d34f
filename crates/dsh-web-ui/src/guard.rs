//! Who may talk to the server. A local web server is reachable by every page the user's
//! browser opens, so each request must show three things:
//!
//! - a `Host` this server answers to (the address it printed), so a page on another site whose
//!   name was re-pointed at 127.0.0.1 (DNS rebinding) is refused;
//! - for anything but a plain `GET`, an `Origin` that is this server's own, so another site
//!   cannot send requests with the user's cookie (there is no CORS: no other origin is ever
//!   allowed);
//! - the secret token made at start: in the printed URL once, then in a cookie the server sets
//!   (HttpOnly, SameSite=Strict), or as a bearer token for scripts.

use hyper::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN};
use hyper::{HeaderMap, Method};

/// The cookie that carries the token.
pub(crate) const COOKIE_NAME: &str = "dsh_token";

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
        if is_loopback(host) {
            for name in ["127.0.0.1", "localhost", "[::1]"] {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
        }
        Guard {
            token,
            hosts: names.iter().map(|n| format!("{n}:{port}")).collect(),
            origins: names.iter().map(|n| format!("http://{n}:{port}")).collect(),
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
        if !host.is_some_and(|h| self.hosts.contains(&h)) {
            return Err(Refused {
                status: 421,
                message: "this server answers only to the address dsh printed",
            });
        }
        let origin = headers
            .get(ORIGIN)
            .and_then(|o| o.to_str().ok())
            .map(str::to_ascii_lowercase);
        match origin {
            Some(origin) if !self.origins.contains(&origin) => Err(Refused {
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

    /// Whether the request carries the token, in the cookie or as a bearer token.
    pub(crate) fn check_token(&self, headers: &HeaderMap) -> Result<(), Refused> {
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        let cookie = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|h| h.to_str().ok())
            .flat_map(|h| h.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == COOKIE_NAME)
            .map(|(_, value)| value);
        if bearer.or(cookie).is_some_and(|t| self.is_token(t)) {
            Ok(())
        } else {
            Err(Refused {
                status: 401,
                message: "open the address dsh web printed (it carries the token) to sign in",
            })
        }
    }

    /// The cookie that keeps the token after the first load.
    pub(crate) fn cookie(&self) -> String {
        format!(
            "{COOKIE_NAME}={}; HttpOnly; SameSite=Strict; Path=/",
            self.token
        )
    }
}

/// Whether `host` names this machine's loopback.
pub(crate) fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
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

    #[test]
    fn a_rebound_host_or_a_foreign_origin_is_refused() {
        let guard = Guard::with_token("127.0.0.1", 8080, "t0ken".into());
        let ok = headers(&[
            ("host", "localhost:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert_eq!(guard.check_origin(&Method::POST, &ok), Ok(()));
        let rebound = headers(&[("host", "evil.example:8080")]);
        assert_eq!(
            guard
                .check_origin(&Method::GET, &rebound)
                .unwrap_err()
                .status,
            421
        );
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://evil.example"),
        ]);
        assert_eq!(
            guard
                .check_origin(&Method::GET, &foreign)
                .unwrap_err()
                .status,
            403
        );
        let no_origin = headers(&[("host", "127.0.0.1:8080")]);
        assert_eq!(
            guard
                .check_origin(&Method::POST, &no_origin)
                .unwrap_err()
                .status,
            403
        );
        assert_eq!(guard.check_origin(&Method::GET, &no_origin), Ok(()));
    }

    #[test]
    fn the_token_comes_in_the_cookie_or_as_a_bearer() {
        let guard = Guard::with_token("127.0.0.1", 1, "t0ken".into());
        let cookie = headers(&[("cookie", "a=b; dsh_token=t0ken")]);
        assert_eq!(guard.check_token(&cookie), Ok(()));
        let bearer = headers(&[("authorization", "Bearer t0ken")]);
        assert_eq!(guard.check_token(&bearer), Ok(()));
        let wrong = headers(&[("cookie", "dsh_token=t0keN")]);
        assert_eq!(guard.check_token(&wrong).unwrap_err().status, 401);
        assert_eq!(
            guard.check_token(&HeaderMap::new()).unwrap_err().status,
            401
        );
        assert!(Guard::new("127.0.0.1", 1).token().len() >= 64);
    }
}
