//! What names a sandbox backend and its settings: which mechanism confines a command, how fully,
//! the limits every command runs under, and the `[sandbox]` settings a run chooses by.

use std::path::PathBuf;
use std::str::FromStr;

/// The Landlock ABI whose protections we ask for (6: file access rights through ABI 5, plus
/// signal and abstract-socket scoping); an older kernel confines `partial`ly.
pub(crate) const LANDLOCK_TARGET_ABI: i32 = 6;

/// The kernel mechanism that confines a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// No confinement: `danger-full-access`.
    None,
    /// `bwrap`: mount and PID namespaces.
    Bubblewrap,
    /// Landlock rules applied to the command itself, plus seccomp when the network is off.
    Landlock,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::None => "none",
            Backend::Bubblewrap => "bubblewrap",
            Backend::Landlock => "landlock",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which backends a run may use (`sandbox.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// bubblewrap when it can start, else Landlock.
    #[default]
    Auto,
    Bubblewrap,
    Landlock,
}

impl BackendChoice {
    pub(crate) fn candidates(self) -> &'static [Backend] {
        match self {
            BackendChoice::Auto => &[Backend::Bubblewrap, Backend::Landlock],
            BackendChoice::Bubblewrap => &[Backend::Bubblewrap],
            BackendChoice::Landlock => &[Backend::Landlock],
        }
    }
}

/// A `sandbox.backend` value that is not one of the choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox backend \"{0}\": use auto, bubblewrap or landlock")]
pub struct UnknownBackend(pub String);

impl FromStr for BackendChoice {
    type Err = UnknownBackend;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "bubblewrap" | "bwrap" => Ok(BackendChoice::Bubblewrap),
            "landlock" => Ok(BackendChoice::Landlock),
            other => Err(UnknownBackend(other.to_owned())),
        }
    }
}

/// How completely a backend enforces the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    /// Some protections are missing (an older Landlock ABI); the rest hold.
    Partial,
}

impl Enforcement {
    pub fn as_str(self) -> &'static str {
        match self {
            Enforcement::Full => "full",
            Enforcement::Partial => "partial",
        }
    }
}

/// What a run's sandbox is asked to do, from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub backend: BackendChoice,
    /// Whether confined commands may use the network (default: yes, as the reference).
    pub network: bool,
    /// `sandbox.network = "allowlist"`: the domains commands may reach, through dsh's proxy
    /// only ([`crate::network`]); `network` is then off for everything else.
    pub allowed_domains: Option<crate::network::DomainAllowlist>,
    /// The `bwrap` to use (`sandbox.bwrap`), instead of looking in the system folders and on
    /// `PATH`.
    pub bwrap: Option<PathBuf>,
    /// Whether bubblewrap's commands run through one sandbox helper per run
    /// (`sandbox.helper`, default on) rather than a `bwrap` each; see [`crate::helper`].
    pub helper: bool,
    /// What each process of a command may take.
    pub limits: CommandLimits,
}

/// Resource limits on every process of a command (`setrlimit`, inherited by what it starts), so
/// that one runaway test cannot take the machine, and dsh with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandLimits {
    /// Bytes of data (heap and private writable mappings, `RLIMIT_DATA`) one process may hold
    /// (`sandbox.max_memory_mb`); `None`: no limit. Reserved address space that is never
    /// written (a JVM's or V8's heap reservation) does not count.
    pub memory_bytes: Option<u64>,
    /// Processes the command's user may have at once (`sandbox.max_processes`,
    /// `RLIMIT_NPROC`); the kernel counts all of that user's processes on the machine, not only
    /// the command's. `None`: no limit.
    pub processes: Option<u64>,
}

impl CommandLimits {
    /// Sets the limits on the calling process.
    ///
    /// # Safety
    /// Raw system calls only: for a child between fork and exec.
    pub(crate) unsafe fn apply(&self) -> std::io::Result<()> {
        for (resource, limit) in [
            (libc::RLIMIT_DATA, self.memory_bytes),
            (libc::RLIMIT_NPROC, self.processes),
        ] {
            let Some(limit) = limit else { continue };
            // A limit only ever lowers: one above what the process may have already (its hard
            // limit) leaves that in place, as raising it would need CAP_SYS_RESOURCE.
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: a valid rlimit to fill in.
            if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let limit = limit as libc::rlim_t;
            let value = libc::rlimit {
                rlim_cur: limit.min(current.rlim_cur),
                rlim_max: limit.min(current.rlim_max),
            };
            // SAFETY: a valid rlimit for this process.
            if unsafe { libc::setrlimit(resource, &value) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl SandboxSettings {
    /// Whether commands get the host's network as it is (neither off nor the allowlist).
    pub fn open_network(&self) -> bool {
        self.network && self.allowed_domains.is_none()
    }
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            backend: BackendChoice::Auto,
            network: true,
            allowed_domains: None,
            bwrap: None,
            helper: true,
            limits: CommandLimits::default(),
        }
    }
}
