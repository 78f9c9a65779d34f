//! dsh's filtering proxy: a Unix socket on the host, in a folder only dsh's user can enter,
//! served by a thread per connection (a command opens few, and each is mostly waiting).

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::allowlist::{DomainAllowlist, normalize_host};
use super::http;

/// Looks a host name up: the system's resolver in a run; a table in tests, so that a name can
/// lead to a server on loopback.
pub type Resolver = Arc<dyn Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>> + Send + Sync>;

/// A request the proxy refused, for the command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkDenial {
    /// The host as the client named it.
    pub host: String,
    pub reason: String,
}

/// The largest request head read before the proxy gives up on a client.
const MAX_HEAD: usize = 64 * 1024;
/// How long a client may take to send its request's head, and an upstream to accept.
const PATIENCE: Duration = Duration::from_secs(30);
/// Connections served at once: each is a thread of dsh's, and a command must not be able to
/// take dsh's memory or threads by opening connections without end.
const MAX_CLIENTS: usize = 256;

struct Shared {
    allowlist: DomainAllowlist,
    resolver: Resolver,
    denials: Mutex<Vec<NetworkDenial>>,
    stopping: AtomicBool,
    /// Connections being served, and how many may be.
    active: AtomicUsize,
    max_clients: usize,
}

/// The run's proxy; it stops, and its socket goes, when dropped.
pub struct NetworkProxy {
    dir: PathBuf,
    socket: PathBuf,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for NetworkProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkProxy")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

fn system_resolver() -> Resolver {
    Arc::new(|host, port| Ok((host, port).to_socket_addrs()?.collect()))
}

impl NetworkProxy {
    /// Starts the proxy for `allowlist`, with the system's resolver.
    pub fn start(allowlist: DomainAllowlist) -> std::io::Result<Self> {
        Self::start_with(allowlist, system_resolver())
    }

    /// Starts the proxy with a resolver of the caller's.
    pub fn start_with(allowlist: DomainAllowlist, resolver: Resolver) -> std::io::Result<Self> {
        Self::start_limited(allowlist, resolver, MAX_CLIENTS)
    }

    /// Starts the proxy serving at most `max_clients` connections at once.
    pub(crate) fn start_limited(
        allowlist: DomainAllowlist,
        resolver: Resolver,
        max_clients: usize,
    ) -> std::io::Result<Self> {
        let dir = private_dir()?;
        let socket = dir.join("proxy.sock");
        let listener = match UnixListener::bind(&socket) {
            Ok(listener) => listener,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let shared = Arc::new(Shared {
            allowlist,
            resolver,
            denials: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            active: AtomicUsize::new(0),
            max_clients,
        });
        let serving = shared.clone();
        std::thread::Builder::new()
            .name("dsh-network-proxy".into())
            .spawn(move || accept_loop(listener, serving))?;
        Ok(NetworkProxy {
            dir,
            socket,
            shared,
        })
    }

    /// The socket clients connect to.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// A mark in the log of denials, to ask later what was denied since.
    pub fn mark(&self) -> usize {
        self.denials().len()
    }

    /// What was denied since `mark`, each host once.
    pub fn denials_since(&self, mark: usize) -> Vec<NetworkDenial> {
        let all = self.denials();
        let mut seen: Vec<NetworkDenial> = Vec::new();
        for denial in all.iter().skip(mark) {
            if !seen.iter().any(|d| d.host == denial.host) {
                seen.push(denial.clone());
            }
        }
        seen
    }

    fn denials(&self) -> std::sync::MutexGuard<'_, Vec<NetworkDenial>> {
        (self.shared.denials.lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for NetworkProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees it is stopping.
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A new folder for the socket that only this user can enter.
fn private_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last = None;
    for attempt in 0..16u32 {
        let dir = base.join(format!(
            "dsh-network-{}-{:x}",
            std::process::id(),
            nanos.wrapping_add(attempt.wrapping_mul(7919))
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no folder for the network proxy")))
}

fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        if shared.active.load(Ordering::SeqCst) >= shared.max_clients {
            respond(
                &mut stream,
                "503 Service Unavailable",
                &format!(
                    "dsh: the proxy serves at most {} connections at once; close some and \
                     try again\n",
                    shared.max_clients
                ),
            );
            continue;
        }
        shared.active.fetch_add(1, Ordering::SeqCst);
        let serving = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("dsh-network-client".into())
            .spawn(move || {
                serve(stream, &serving);
                serving.active.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            shared.active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Reads up to the end of the head; the head and what came after it.
fn read_head(stream: &mut UnixStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            return Some((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn respond(stream: &mut UnixStream, status: &str, body: &str) {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(text.as_bytes());
}

impl Shared {
    fn deny(&self, stream: &mut UnixStream, status: &str, host: &str, reason: String) {
        let body = format!("dsh: network access to {host} denied: {reason}\n");
        (self
            .denials
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
        .push(NetworkDenial {
            host: host.to_owned(),
            reason,
        });
        respond(stream, status, &body);
    }

    /// Where an allowed request may connect, or why not.
    fn judge(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, (&'static str, String)> {
        let Some(name) = normalize_host(host) else {
            return Err((
                "403 Forbidden",
                "it is an IP address or not a host name, and sandbox.allowed_domains names \
                 domains only"
                    .into(),
            ));
        };
        if !self.allowlist.allows(&name) {
            return Err((
                "403 Forbidden",
                format!(
                    "not in sandbox.allowed_domains; to allow it, add \"{name}\" to \
                     sandbox.allowed_domains in the config"
                ),
            ));
        }
        let addrs = (self.resolver)(&name, port).map_err(|e| {
            (
                "502 Bad Gateway",
                format!("dsh's proxy could not resolve it: {e}"),
            )
        })?;
        // A public name that leads back to this machine or to a link-local service (a cloud's
        // metadata address) is a way around the list; a name of the machine's own may.
        let local_name = name == "localhost" || name.ends_with(".localhost");
        if let Some(inside) = addrs.iter().find(|a| !local_name && inward(a.ip())) {
            return Err((
                "403 Forbidden",
                format!(
                    "it resolves to {}, an address of this machine or its link, which an \
                     allowed domain may not lead to",
                    inside.ip()
                ),
            ));
        }
        if addrs.is_empty() {
            return Err(("502 Bad Gateway", "it has no address".into()));
        }
        Ok(addrs)
    }
}

/// Loopback, unspecified, link-local and multicast addresses (IPv4-mapped ones too).
fn inward(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            v4.is_loopback() || v4.is_unspecified() || v4.is_link_local() || v4.is_multicast()
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

fn serve(mut client: UnixStream, shared: &Shared) {
    let _ = client.set_read_timeout(Some(PATIENCE));
    let Some((head, rest)) = read_head(&mut client) else {
        return;
    };
    let target = match http::target(&head) {
        Ok(target) => target,
        Err(bad) => {
            let host = bad.host.unwrap_or_else(|| "(no host)".into());
            shared.deny(&mut client, "400 Bad Request", &host, bad.why);
            return;
        }
    };
    let addrs = match shared.judge(&target.host, target.port) {
        Ok(addrs) => addrs,
        Err((status, reason)) => {
            shared.deny(&mut client, status, &target.host, reason);
            return;
        }
    };
    let Some(mut upstream) = addrs
        .iter()
        .find_map(|a| TcpStream::connect_timeout(a, PATIENCE).ok())
    else {
        respond(
            &mut client,
            "502 Bad Gateway",
            &format!(
                "dsh: {}:{} did not accept a connection\n",
                target.host, target.port
            ),
        );
        return;
    };
    let started = match &target.forward {
        None => client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n"),
        Some(head) => upstream.write_all(head),
    };
    if started.and_then(|()| upstream.write_all(&rest)).is_err() {
        return;
    }
    let _ = client.set_read_timeout(None);
    splice(client, upstream);
}

/// Copies both ways until each side has finished sending.
fn splice(client: UnixStream, upstream: TcpStream) {
    let (Ok(mut client_out), Ok(mut upstream_in)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let up = std::thread::spawn(move || {
        let mut client_in = client;
        let _ = std::io::copy(&mut client_in, &mut upstream_in);
        let _ = upstream_in.shutdown(Shutdown::Write);
    });
    let mut upstream_out = upstream;
    let _ = std::io::copy(&mut upstream_out, &mut client_out);
    let _ = client_out.shutdown(Shutdown::Write);
    let _ = up.join();
}

#[cfg(test)]
mod tests;
