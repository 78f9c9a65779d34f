//! Choosing the kernel mechanism that confines commands, once per run.
//!
//! On Linux the candidates are bubblewrap, then Landlock (`sandbox.backend = "auto"`), or one
//! of them alone when the configuration forces it. Each is probed the first time a command
//! needs confining, and the verdict, with the reason for every backend that cannot be used, is
//! kept for the rest of the run: a probe costs a process start, and a changing answer mid-run
//! would be worse than a stale one.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::kinds::{Backend, Enforcement, LANDLOCK_TARGET_ABI, SandboxSettings};
use crate::unusable::Unusable;

/// The outcome of probing one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub backend: Backend,
    /// How well it confines, or why it cannot.
    pub result: Result<Enforcement, Unusable>,
    /// What to do about it, when it cannot.
    pub remedy: Option<String>,
}

#[derive(Debug)]
struct Selection {
    probes: Vec<Probe>,
    chosen: Option<(Backend, Enforcement)>,
    bwrap: Option<PathBuf>,
}

/// The run's sandbox: its settings and, once probed, the backend it confines with.
#[derive(Debug, Default)]
pub struct Sandbox {
    settings: SandboxSettings,
    selection: OnceLock<Selection>,
    helpers: std::sync::Arc<crate::helper::HelperPool>,
    /// The allowlist's proxy, started for the first command that needs it.
    pub(crate) proxy: OnceLock<Result<std::sync::Arc<crate::network::NetworkProxy>, String>>,
}

impl Sandbox {
    pub fn new(settings: SandboxSettings) -> Self {
        Sandbox {
            settings,
            selection: OnceLock::new(),
            helpers: Default::default(),
            proxy: OnceLock::new(),
        }
    }

    /// The run's sandbox helpers.
    pub(crate) fn helpers(&self) -> std::sync::Arc<crate::helper::HelperPool> {
        self.helpers.clone()
    }

    /// Gets the sandbox of commands under `policy` ready in the background, before the first
    /// one is asked for: the backends are probed, and under bubblewrap the run's sandbox
    /// helper is started (about 3 ms, spent while the model is thinking). Without a tokio
    /// runtime, or with nothing to prepare, it does nothing.
    pub fn warm_up(self: &std::sync::Arc<Self>, policy: crate::SandboxPolicy) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if policy.mode() == crate::SandboxMode::DangerFullAccess {
            return;
        }
        let sandbox = self.clone();
        runtime.spawn(async move {
            let probing = sandbox.clone();
            // The probe runs `bwrap` and waits for it: not on the runtime's own thread.
            let probe = tokio::task::spawn_blocking(move || probing.chosen());
            // Meanwhile the helper starts, in case the probe picks bubblewrap (the first
            // choice); commands use it only if it does. Both take a few milliseconds, which
            // a model answering at once would otherwise see added to its first command.
            let settings = sandbox.settings();
            if settings.backend.candidates().first() == Some(&Backend::Bubblewrap)
                && let Some(bwrap) = settings.bwrap.clone().or_else(crate::bwrap::locate)
            {
                // Git's view of the workspace is taken here, running Git: not on the
                // runtime's own thread either, which goes on reading the model's answer.
                let asked = policy.clone();
                let Ok(protected) =
                    tokio::task::spawn_blocking(move || asked.protected_paths()).await
                else {
                    return;
                };
                let Ok(profile) = sandbox.bwrap_profile(policy.mode(), &policy, &protected) else {
                    return;
                };
                if let Some(launch) = sandbox.helper_launch(&policy, &bwrap, &profile, Vec::new()) {
                    launch.warm().await;
                }
            }
            let _ = probe.await;
        });
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.settings
    }

    /// Every candidate's probe, in the order they are tried (probing on first use).
    pub fn probes(&self) -> &[Probe] {
        &self.selection().probes
    }

    /// The backend confined commands run under, if any can.
    pub fn chosen(&self) -> Option<(Backend, Enforcement)> {
        self.selection().chosen
    }

    pub(crate) fn bwrap_path(&self) -> Option<&std::path::Path> {
        self.selection().bwrap.as_deref()
    }

    fn selection(&self) -> &Selection {
        self.selection.get_or_init(|| select(&self.settings))
    }
}

fn select(settings: &SandboxSettings) -> Selection {
    let mut probes = Vec::new();
    let mut chosen = None;
    let mut bwrap = None;
    for &backend in settings.backend.candidates() {
        let probe = match backend {
            Backend::Bubblewrap => {
                let (probe, path) = probe_bwrap(settings.open_network(), settings.bwrap.as_deref());
                if probe.result.is_ok() {
                    bwrap = path;
                }
                probe
            }
            Backend::Landlock => probe_landlock(settings.open_network()),
            Backend::None => continue,
        };
        if chosen.is_none()
            && let Ok(enforcement) = probe.result
        {
            chosen = Some((backend, enforcement));
        }
        probes.push(probe);
        // Later candidates are probed too, so `dsh sandbox check` and the refusal text can say
        // why each is or is not usable; Landlock's probe is one system call.
    }
    Selection {
        probes,
        chosen,
        bwrap,
    }
}

fn probe_bwrap(network: bool, configured: Option<&std::path::Path>) -> (Probe, Option<PathBuf>) {
    if let Some(path) = configured
        && !crate::bwrap::is_executable(path)
    {
        return (
            Probe {
                backend: Backend::Bubblewrap,
                result: Err(Unusable::NotExecutable(path.to_path_buf())),
                remedy: Some(
                    "point sandbox.bwrap at the bwrap binary, or remove the setting to look in \
                     the system folders and on PATH"
                        .into(),
                ),
            },
            None,
        );
    }
    let Some(path) = configured
        .map(std::path::Path::to_path_buf)
        .or_else(crate::bwrap::locate)
    else {
        return (
            Probe {
                backend: Backend::Bubblewrap,
                result: Err(Unusable::NotInstalled),
                remedy: Some(
                    "install bubblewrap: apt-get install bubblewrap, dnf install bubblewrap, \
                     or pacman -S bubblewrap"
                        .into(),
                ),
            },
            None,
        );
    };
    let result = crate::bwrap::probe(&path, network).map(|()| Enforcement::Full);
    let remedy = result.as_ref().err().map(bwrap_remedy);
    (
        Probe {
            backend: Backend::Bubblewrap,
            result,
            remedy,
        },
        Some(path),
    )
}

/// What to do about bwrap's failure: bwrap's and the system's own words tell a refusal to
/// make namespaces from the rest.
fn bwrap_remedy(reason: &Unusable) -> String {
    let lower = reason.to_string().to_lowercase();
    if lower.contains("uid map")
        || lower.contains("namespace")
        || lower.contains("operation not permitted")
        || lower.contains("permission denied")
    {
        "bwrap cannot create namespaces here. On a host: allow unprivileged user namespaces \
         (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 23.10+ \
         kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap). In a \
         container: the runtime's seccomp or AppArmor profile forbids them; dsh falls back to \
         Landlock, which needs none"
            .into()
    } else {
        "run the probe by hand to see bwrap's full error: bwrap --ro-bind / / --dev /dev \
         --unshare-pid --proc /proc --die-with-parent -- true"
            .into()
    }
}

fn probe_landlock(network: bool) -> Probe {
    #[cfg(target_os = "linux")]
    let result = crate::landlock_backend::probe(network);
    #[cfg(not(target_os = "linux"))]
    let result: Result<Enforcement, Unusable> = {
        let _ = network;
        Err(Unusable::NotLinux)
    };
    let remedy = match &result {
        Err(_) => Some(
            "run a kernel with Landlock ABI 3 or later (Linux 6.2+, landlock in the lsm= boot \
             parameter), or install bubblewrap"
                .into(),
        ),
        Ok(Enforcement::Partial) => Some(format!(
            "this kernel's Landlock ABI is older than {LANDLOCK_TARGET_ABI}: file writes and \
             truncation are confined, but device ioctls (ABI 5) or the scoping of signals and \
             abstract sockets to the sandbox (ABI 6) may be missing, so a command may signal \
             host processes; a newer kernel or bubblewrap confines fully"
        )),
        Ok(Enforcement::Full) => None,
    };
    Probe {
        backend: Backend::Landlock,
        result,
        remedy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `sandbox.bwrap` that names no program is said as such, with the path, whatever the
    /// host has installed.
    #[test]
    fn a_configured_bwrap_that_is_no_program_is_named() {
        let missing = std::path::Path::new("/nonexistent/bwrap");
        let (probe, path) = probe_bwrap(true, Some(missing));
        assert_eq!(path, None);
        assert_eq!(
            probe.result,
            Err(Unusable::NotExecutable(missing.to_path_buf()))
        );
        assert_eq!(
            probe.result.unwrap_err().to_string(),
            "sandbox.bwrap names /nonexistent/bwrap, which is not an executable file"
        );
    }

    #[test]
    fn bwraps_refusal_to_make_namespaces_gets_its_remedy() {
        let refused = Unusable::BwrapSaid("bwrap: setting up uid map: Permission denied".into());
        assert!(bwrap_remedy(&refused).starts_with("bwrap cannot create namespaces here"));
        let slow = Unusable::ProbeTimedOut(std::time::Duration::from_secs(5));
        assert_eq!(
            slow.to_string(),
            "the probe `bwrap ... -- true` did not finish within 5 s"
        );
        assert!(bwrap_remedy(&slow).starts_with("run the probe by hand"));
    }
}
