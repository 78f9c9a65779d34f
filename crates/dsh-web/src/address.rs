//! Which addresses `web_fetch` may connect to: by default not this machine, not the private
//! network it sits in, not link-local (cloud metadata services live there). A host name is
//! resolved here and the connection pinned to an address that passed, so a name cannot resolve
//! to something else between the check and the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use dsh_tools::ToolError;

/// An address the web tools should not reach unless allowed: this machine, private and
/// shared networks, link-local, multicast, and addresses that are no place at all.
pub(crate) fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => private_v4(v4),
            None => private_v6(v6),
        },
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Carrier-grade NAT, 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // Benchmarking, 198.18.0.0/15, and reserved, 240.0.0.0/4.
        || (a == 198 && (b == 18 || b == 19))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || a >= 240
}

/// The IPv4 address an IPv6 one carries, by the forms that reach it: mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`, `64:ff9b:1::/48`) and 6to4 (`2002::/16`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Some(mapped);
    }
    match s {
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => Some(v4(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0x64, 0xff9b, 1, ..] => Some(v4(s[6], s[7])),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

fn private_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local, fc00::/7; link-local, fe80::/10; site-local, fec0::/10.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // Teredo, 2001::/32: the IPv4 address it reaches is hidden in it.
        || (first == 0x2001 && ip.segments()[1] == 0)
}

/// The address to connect to for `host:port`: its first address, when every address it
/// resolves to may be reached (a name that also resolves to a private address is refused: which
/// one a connection would use is not ours to choose).
pub(crate) async fn resolve(
    host: &str,
    port: u16,
    allow_private: bool,
) -> Result<SocketAddr, ToolError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| {
                crate::access::web_error(
                    "WEB_PROVIDER_ERROR",
                    format!("web fetch failed: cannot resolve {bare}: {e}"),
                )
            })?
            .collect(),
    };
    let Some(first) = addresses.first().copied() else {
        return Err(crate::access::web_error(
            "WEB_PROVIDER_ERROR",
            format!("web fetch failed: {bare} has no address"),
        ));
    };
    if !allow_private && let Some(private) = addresses.iter().find(|a| is_private(a.ip())) {
        return Err(crate::access::web_error(
            "WEB_BLOCKED_URL",
            format!(
                "{bare} resolves to {}, a private, loopback or link-local address, which \
                 web_fetch does not reach; set web.allow_private_addresses = true in a config \
                 file to allow it",
                private.ip()
            ),
        ));
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_and_link_local_addresses_are_told_apart() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "fec0::1",
            "192.0.0.8",
        ] {
            assert!(is_private(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(!is_private(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn a_private_address_is_refused_unless_allowed() {
        let error = resolve("127.0.0.1", 80, false).await.unwrap_err();
        assert_eq!(error.code(), Some("WEB_BLOCKED_URL"));
        assert!(error.message.contains("web.allow_private_addresses"));
        assert_eq!(
            resolve("127.0.0.1", 80, true).await.unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
    }
}
