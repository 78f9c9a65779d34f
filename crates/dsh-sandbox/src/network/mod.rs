//! The network allowlist (`sandbox.network = "allowlist"`): commands reach the network only
//! through dsh's filtering proxy, and only the hosts `sandbox.allowed_domains` names.
//!
//! Under bubblewrap the sandbox has a network namespace of its own (loopback only). The proxy
//! ([`NetworkProxy`]) listens on a Unix socket on the host, which is bound read-only into the
//! sandbox; the sandbox helper, which lives in that namespace, relays a loopback port there
//! ([`RELAY_PORT`]) to the socket, and commands are given `HTTP_PROXY` and `HTTPS_PROXY` naming
//! that port. The proxy reads each request's head (HTTP `CONNECT host:port`, or a plain HTTP
//! request by its URL or `Host`), checks the host name against the list, resolves it itself
//! and connects; a denied request is answered `403` naming the host and the setting, and the
//! host is named in the command's result. A command that ignores the proxy variables has no
//! route anywhere: its namespace has no interface but loopback and no name server.

mod allowlist;
mod http;
mod proxy;

pub use allowlist::{DomainAllowlist, DomainPatternError};
pub use proxy::{NetworkDenial, NetworkProxy, Resolver};

/// The loopback port inside a command's network namespace where the proxy is reached.
pub const RELAY_PORT: u16 = 3128;

/// The variable that tells the sandbox helper which socket to relay [`RELAY_PORT`] to (set by
/// bwrap on the helper only; the commands' environment is dsh's to give).
pub(crate) const RELAY_SOCKET_VARIABLE: &str = "DSH_NETWORK_RELAY_SOCKET";

/// What a command under the allowlist is given, so that ordinary clients (curl, pip, cargo,
/// git over HTTPS, npm) go through the proxy. `NO_PROXY` is emptied: a host it listed would
/// be tried directly, where there is no route.
pub fn proxy_environment() -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let url = format!("http://127.0.0.1:{RELAY_PORT}");
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        env.push((name.into(), url.clone().into()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.push((name.into(), "".into()));
    }
    env
}

/// The marker a command's result gets for each host the proxy refused while it ran.
pub fn denial_marker(denial: &NetworkDenial) -> String {
    format!(
        "[sandbox: network access to {} denied: {}]",
        denial.host, denial.reason
    )
}
