//! The world outside this machine, as the attack tests stand it in: an HTTP proxy on loopback
//! that dsh is pointed at (`HTTP_PROXY`), which writes down every request it is sent and
//! answers each with a 502. A request for `http://127.0.0.1.evil.example/...` that dsh lets
//! go reaches it, with whatever key went along, so a test can show that none was sent. Only
//! loopback is left out of the proxy, as it would be reached directly.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::process::Command;
use std::sync::{Arc, Mutex};

pub struct Outside {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Outside {
    pub fn start() -> Outside {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let written = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                written.lock().unwrap().push(head);
                let mut out = stream;
                let _ = out.write_all(
                    b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Outside { port, seen }
    }

    /// Points `command`'s HTTP clients at this proxy for every host but loopback.
    pub fn route(&self, command: &mut Command) {
        let proxy = format!("http://127.0.0.1:{}", self.port);
        for name in [
            "HTTP_PROXY",
            "http_proxy",
            "HTTPS_PROXY",
            "https_proxy",
            "ALL_PROXY",
        ] {
            command.env(name, &proxy);
        }
        command
            .env_remove("all_proxy")
            .env("NO_PROXY", "127.0.0.1,localhost,::1")
            .env("no_proxy", "127.0.0.1,localhost,::1");
    }

    /// Every request head sent out so far.
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Addresses that read as this machine to a string prefix or a shell pattern, and name
/// another host (`evil.example`).
pub const LOOKALIKES: [&str; 4] = [
    "http://127.0.0.1.evil.example",
    "http://127.0.0.1:1@evil.example",
    "http://localhost.evil.example",
    "http://[::1]:1@evil.example",
];

/// A host of the attacker's, standing in on loopback: it writes down every connection made to
/// it (the request head of a plain HTTP one, with whatever key or header came with it; `TLS`
/// for one that starts a TLS handshake) and answers 502, so a test can show nothing reached
/// it.
pub struct Attacker {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Attacker {
    pub fn start() -> Attacker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let written = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let written = written.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    if reader.fill_buf().ok().and_then(|b| b.first().copied()) == Some(0x16) {
                        written.lock().unwrap().push("TLS".to_owned());
                        return;
                    }
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    written.lock().unwrap().push(head);
                    let mut out = stream;
                    let _ = out.write_all(
                        b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                });
            }
        });
        Attacker { port, seen }
    }

    /// Its address, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What reached it so far.
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}
