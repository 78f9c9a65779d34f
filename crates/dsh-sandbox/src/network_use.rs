//! What the network allowlist ([`crate::network`]) adds to a run's sandbox: its proxy, the binds that lead to it, and
//! what a command is told and shown.

use std::ffi::OsString;
use std::sync::Arc;

use crate::network::{NetworkDenial, NetworkProxy};
use crate::{Sandbox, SandboxMode, SandboxPolicy};

/// Why the allowlist cannot hold where a command would run; the command is refused.
pub(crate) const NEEDS_HELPER: &str = "the network allowlist (sandbox.network = \"allowlist\") \
    needs bubblewrap's sandbox helper, which relays the command's proxy port to dsh's proxy \
    inside the sandbox's own network namespace, and it is not available in this run (\
    sandbox.helper = false, or the helper cannot start here: `dsh sandbox check`); set \
    sandbox.network = false or true instead, or turn sandbox.helper back on";

/// Under Landlock there is no network namespace of the command's own: a host-name filter
/// could be walked around by connecting to an address directly.
pub(crate) const NOT_UNDER_LANDLOCK: &str = "the network allowlist (sandbox.network = \
    \"allowlist\") needs bubblewrap: Landlock can limit TCP connections by port, not by host, \
    so a command could reach any address directly; install bubblewrap (and allow \
    unprivileged user namespaces), or set sandbox.network = false or true instead";

/// A command's view of the proxy: what it was denied while it ran.
#[derive(Debug, Clone)]
pub(crate) struct NetworkWatch {
    proxy: Arc<NetworkProxy>,
    mark: usize,
}

impl NetworkWatch {
    pub(crate) fn denials(&self) -> Vec<NetworkDenial> {
        self.proxy.denials_since(self.mark)
    }
}

impl Sandbox {
    /// The allowlist commands run under, if any.
    pub fn network_allowlist(&self) -> Option<&crate::network::DomainAllowlist> {
        self.settings().allowed_domains.as_ref()
    }

    /// The run's proxy, started the first time it is needed.
    fn proxy(&self) -> Result<Arc<NetworkProxy>, String> {
        let Some(allowlist) = self.network_allowlist() else {
            return Err("no allowlist".into());
        };
        self.proxy
            .get_or_init(|| {
                NetworkProxy::start(allowlist.clone())
                    .map(Arc::new)
                    .map_err(|e| format!("dsh's network proxy could not start: {e}"))
            })
            .clone()
    }

    /// A watch on the proxy from now on, for a command about to start (allowlist only).
    pub(crate) fn network_watch(&self) -> Option<NetworkWatch> {
        let proxy = self.proxy().ok()?;
        let mark = proxy.mark();
        Some(NetworkWatch { proxy, mark })
    }

    /// bwrap's options for `mode` under `policy`: the profile, and under the allowlist the
    /// proxy's socket bound in and the helper told to relay to it.
    pub(crate) fn bwrap_profile(
        &self,
        mode: SandboxMode,
        policy: &SandboxPolicy,
        protected: &[std::path::PathBuf],
    ) -> Result<Vec<OsString>, String> {
        let open = self.settings().open_network();
        let mut profile = crate::bwrap::profile(mode, Some(policy), protected, open);
        if self.network_allowlist().is_some() {
            let proxy = self.proxy()?;
            let socket = proxy.socket_path().as_os_str().to_owned();
            profile.extend([
                "--ro-bind".into(),
                socket.clone(),
                socket.clone(),
                "--setenv".into(),
                crate::network::RELAY_SOCKET_VARIABLE.into(),
                socket,
            ]);
        }
        Ok(profile)
    }
}
