//! The proxy against a server on loopback that only the test resolver's names lead to.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use super::*;

/// A server on loopback that answers each request with its request line.
fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&buf).into_owned();
                let body = format!("served {}", text.lines().next().unwrap_or(""));
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    addr
}

/// A proxy allowing `entries`, whose resolver knows `names` (each leading to `to`).
fn proxy(entries: &[&str], names: &[&str], to: SocketAddr) -> NetworkProxy {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let resolver: Resolver = Arc::new(move |host, port| {
        if names.iter().any(|n| n == host) {
            Ok(vec![SocketAddr::new(to.ip(), port)])
        } else {
            Err(std::io::Error::other(format!("no such test name {host}")))
        }
    });
    NetworkProxy::start_with(DomainAllowlist::parse(entries).unwrap(), resolver).unwrap()
}

/// Sends `request` to the proxy and reads everything it answers until it closes.
fn ask(proxy: &NetworkProxy, request: &str) -> String {
    let mut stream = UnixStream::connect(proxy.socket_path()).unwrap();
    // A refusal before the request was read may close the connection before it is all
    // written (a broken pipe) or end in a reset after the answer (unread bytes at the
    // close): the answer, already in our queue, is what counts.
    let _ = stream.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("{e}"),
        }
    }
    String::from_utf8(answer).unwrap()
}

#[test]
fn an_allowed_host_is_reached_by_connect_and_by_plain_http() {
    let addr = server();
    let port = addr.port();
    let p = proxy(&["api.localhost"], &["api.localhost"], addr);
    let tunnel = ask(
        &p,
        &format!(
            "CONNECT api.localhost:{port} HTTP/1.1\r\nHost: api.localhost:{port}\r\n\r\n\
             GET /inside HTTP/1.1\r\nHost: api.localhost\r\n\r\n"
        ),
    );
    assert!(
        tunnel.starts_with("HTTP/1.1 200 Connection established"),
        "{tunnel}"
    );
    assert!(tunnel.contains("served GET /inside HTTP/1.1"), "{tunnel}");
    let plain = ask(
        &p,
        &format!("GET http://API.localhost.:{port}/x?y HTTP/1.1\r\nAccept: */*\r\n\r\n"),
    );
    assert!(plain.contains("served GET /x?y HTTP/1.1"), "{plain}");
    assert!(p.denials_since(0).is_empty());
}

#[test]
fn a_host_not_on_the_list_is_refused_by_name_with_the_setting_to_change() {
    let addr = server();
    let p = proxy(
        &["api.localhost"],
        &["api.localhost", "other.localhost"],
        addr,
    );
    let mark = p.mark();
    let answer = ask(
        &p,
        &format!("CONNECT other.localhost:{} HTTP/1.1\r\n\r\n", addr.port()),
    );
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden"), "{answer}");
    assert!(
        answer.contains(
            "network access to other.localhost denied: not in sandbox.allowed_domains; to allow \
             it, add \"other.localhost\" to sandbox.allowed_domains"
        ),
        "{answer}"
    );
    let denials = p.denials_since(mark);
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].host, "other.localhost");
    assert_eq!(p.denials_since(p.mark()), Vec::new());
}

/// The ways an outsider would try around a name check, each refused before any connection.
#[test]
fn addresses_look_alike_names_and_a_host_header_of_another_host_are_refused() {
    let addr = server();
    let port = addr.port();
    let p = proxy(
        &["api.localhost"],
        &[
            "api.localhost",
            "api.localhost.evil.test",
            "evilapi.localhost",
        ],
        addr,
    );
    for (request, status, why) in [
        // An IP literal, in every spelling a resolver accepts.
        (
            format!("CONNECT 127.0.0.1:{port} HTTP/1.1"),
            "403",
            "IP address",
        ),
        (
            format!("CONNECT 2130706433:{port} HTTP/1.1"),
            "403",
            "IP address",
        ),
        (
            format!("CONNECT 127.1:{port} HTTP/1.1"),
            "403",
            "IP address",
        ),
        (
            format!("CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1"),
            "403",
            "IP address",
        ),
        (
            format!("GET http://127.0.0.1:{port}/ HTTP/1.1"),
            "403",
            "IP address",
        ),
        // Names that only look like the allowed one.
        (
            format!("CONNECT api.localhost.evil.test:{port} HTTP/1.1"),
            "403",
            "not in",
        ),
        (
            format!("CONNECT evilapi.localhost:{port} HTTP/1.1"),
            "403",
            "not in",
        ),
        (
            format!("CONNECT api.localhost%2e:{port} HTTP/1.1"),
            "403",
            "IP address or not",
        ),
        // CONNECT judges the tunnel's host whatever Host says; a plain request's Host must be
        // the URL's, or the server would serve another site than the one judged.
        (
            format!("CONNECT evilapi.localhost:{port} HTTP/1.1\r\nHost: api.localhost:{port}"),
            "403",
            "not in",
        ),
        (
            format!("GET http://api.localhost:{port}/ HTTP/1.1\r\nHost: evil.test"),
            "400",
            "another host",
        ),
        (
            format!("GET / HTTP/1.1\r\nHost: evil.test:{port}"),
            "403",
            "not in",
        ),
        (
            format!("GET http://api.localhost@evil.test:{port}/ HTTP/1.1"),
            "400",
            "credentials",
        ),
    ] {
        let answer = ask(&p, &format!("{request}\r\n\r\n"));
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")) && answer.contains(why),
            "{request}: {answer}"
        );
        assert!(!answer.contains("served"), "{request}: {answer}");
    }
}

/// An allowed name whose address is this machine's (DNS rebinding, a wildcard DNS service
/// naming 127.0.0.1) does not reach local services.
#[test]
fn an_allowed_name_that_resolves_to_loopback_is_refused() {
    let addr = server();
    let p = proxy(&["*.example.com"], &["rebind.example.com"], addr);
    let answer = ask(
        &p,
        &format!(
            "CONNECT rebind.example.com:{} HTTP/1.1\r\n\r\n",
            addr.port()
        ),
    );
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("resolves to 127.0.0.1"), "{answer}");
}

/// A command opening connections without end gets a refusal past the limit, not a thread of
/// dsh's each; once some close, new ones are served again.
#[test]
fn connections_past_the_limit_are_refused_until_some_close() {
    let addr = server();
    let resolver: Resolver = Arc::new(move |_, port| Ok(vec![SocketAddr::new(addr.ip(), port)]));
    let p = NetworkProxy::start_limited(
        DomainAllowlist::parse(&["api.localhost"]).unwrap(),
        resolver,
        2,
    )
    .unwrap();
    // Two connections that never finish their request hold both places.
    let held: Vec<UnixStream> = (0..2)
        .map(|_| UnixStream::connect(p.socket_path()).unwrap())
        .collect();
    let refused = ask(&p, "CONNECT api.localhost:1 HTTP/1.1\r\n\r\n");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("at most 2 connections"), "{refused}");
    drop(held);
    // Their threads end once they read the closed connections; wait for a place, however long
    // that takes on a loaded machine.
    let request = format!(
        "GET http://api.localhost:{}/again HTTP/1.1\r\n\r\n",
        addr.port()
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let answer = ask(&p, &request);
        if answer.contains("served GET /again") {
            break;
        }
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(
            std::time::Instant::now() < deadline,
            "no place freed: {answer}"
        );
        std::thread::yield_now();
    }
}
