//! Why a backend cannot confine commands here: what a probe found, said in `dsh sandbox check`
//! and in the refusal of a command no backend can confine.

use std::path::PathBuf;
use std::time::Duration;

/// Why a backend cannot confine commands here. The words of a program or the kernel (bwrap's
/// error line, an errno's text) are kept as they were said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unusable {
    /// `sandbox.bwrap` names this path.
    #[error("sandbox.bwrap names {}, which is not an executable file", .0.display())]
    NotExecutable(PathBuf),
    #[error("bwrap is not installed (not found in the system folders or on PATH)")]
    NotInstalled,
    #[error("cannot start {}: {reason}", program.display())]
    CannotStart { program: PathBuf, reason: String },
    #[error("the probe `bwrap ... -- true` did not finish within {} s", .0.as_secs())]
    ProbeTimedOut(Duration),
    #[error("cannot wait for the probe: {0}")]
    CannotWait(String),
    /// The probe failed with this status and nothing on stderr.
    #[error("the probe `bwrap ... -- true` failed ({0})")]
    ProbeFailed(String),
    /// bwrap's first line on stderr.
    #[error("{0}")]
    BwrapSaid(String),
    #[error(
        "Landlock is built into this kernel but not enabled (it is missing from the lsm= boot \
         parameter)"
    )]
    LandlockDisabled,
    #[error(
        "this kernel has no Landlock (it needs Linux 5.13 or later built with \
         CONFIG_SECURITY_LANDLOCK), or a seccomp policy around dsh hides the Landlock system \
         calls"
    )]
    NoLandlock,
    #[error("the Landlock version query failed: {0}")]
    VersionQuery(String),
    /// The kernel's ABI, below the one dsh needs.
    #[error(
        "this kernel's Landlock ABI is {abi}, which cannot stop a command from truncating files \
         outside the workspace; dsh needs ABI {needed} (Linux 6.2) or later"
    )]
    OldAbi { abi: i32, needed: i32 },
    /// This build's architecture.
    #[error(
        "turning the network off needs a seccomp filter, which dsh has for x86_64 and aarch64 \
         only (this is {0})"
    )]
    NoNetworkFilter(&'static str),
    #[error("seccomp is not available, so the network cannot be turned off: {0}")]
    NoSeccomp(String),
    #[error("a confined `true` could not start: {0}")]
    ConfinedStart(String),
    #[error("a confined `true` failed ({0})")]
    ConfinedFailed(String),
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(String),
    #[error("Landlock is not enforced by this kernel (ABI unsupported or disabled)")]
    NotEnforced,
    #[error("no seccomp network filter for {0}")]
    NoFilterFor(&'static str),
    #[error("Landlock is a Linux feature")]
    NotLinux,
}
