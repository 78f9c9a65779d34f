//! Turning a command into a confined command.
//!
//! [`confine`] takes the argv of a command and the policy of the call and returns what to
//! spawn: the argv (wrapped in the backend's runner when one is needed) and how to read the
//! result afterwards (which stderr texts mean the sandbox refused a write, which mean the runner
//! itself failed). With no usable backend it refuses: a command is never run unconfined unless
//! the mode is `danger-full-access`.

use std::ffi::OsString;

use crate::{SandboxMode, SandboxPolicy};

/// The kernel mechanism that confines a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// No confinement: `danger-full-access`.
    None,
}

/// A command ready to spawn, and how to interpret its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfinedCommand {
    pub argv: Vec<OsString>,
    pub backend: Backend,
    pub mode: SandboxMode,
    /// Lower-case stderr texts that, with a non-zero exit, mean a write was refused.
    pub denial_signatures: &'static [&'static str],
}

impl ConfinedCommand {
    /// Whether a finished run's stderr shows a sandbox denial.
    pub fn denied(&self, exit_ok: bool, stderr: &[u8]) -> bool {
        if exit_ok || self.denial_signatures.is_empty() {
            return false;
        }
        let text = String::from_utf8_lossy(stderr).to_lowercase();
        self.denial_signatures.iter().any(|sig| text.contains(sig))
    }
}

/// No backend can confine the command in the wanted mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sandbox mode \"{mode}\" is requested but no sandbox backend is usable on this host; refusing \
     to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel \
     (Linux), ensure sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner \
     can start (Windows) — otherwise switch the consumer to danger-full-access.{}",
    detail.as_ref().map(|d| format!(" Runner failure: {d}")).unwrap_or_default()
)]
pub struct SandboxUnavailable {
    pub mode: SandboxMode,
    pub detail: Option<String>,
}

impl SandboxUnavailable {
    /// The reference's error code.
    pub const CODE: &'static str = "SANDBOX_UNAVAILABLE";
    /// The reference's error name.
    pub const NAME: &'static str = "SandboxUnavailableError";
}

/// The command to spawn for `argv` under `policy`.
pub fn confine(
    argv: Vec<OsString>,
    policy: &SandboxPolicy,
) -> Result<ConfinedCommand, SandboxUnavailable> {
    match policy.mode() {
        SandboxMode::DangerFullAccess => Ok(ConfinedCommand {
            argv,
            backend: Backend::None,
            mode: SandboxMode::DangerFullAccess,
            denial_signatures: &[],
        }),
        // Kernel backends (bubblewrap, Landlock) come with the sandbox issue; until then nothing
        // confined can run.
        mode => Err(SandboxUnavailable { mode, detail: None }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_access_runs_the_command_as_it_is() {
        let policy = SandboxPolicy::new(
            SandboxMode::DangerFullAccess,
            std::path::Path::new("/w"),
            Vec::new(),
        );
        let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), "true".into()];
        let confined = confine(argv.clone(), &policy).unwrap();
        assert_eq!(confined.argv, argv);
        assert!(!confined.denied(false, b"Read-only file system"));
    }

    #[test]
    fn a_confining_mode_without_a_backend_is_refused_with_the_reference_text() {
        let policy = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            std::path::Path::new("/w"),
            Vec::new(),
        );
        let error = confine(vec!["true".into()], &policy).unwrap_err();
        assert!(error.to_string().starts_with(
            "sandbox mode \"workspace-write\" is requested but no sandbox backend is usable on \
             this host; refusing to run the command unconfined."
        ));
        assert!(
            error
                .to_string()
                .ends_with("switch the consumer to danger-full-access.")
        );
    }
}
