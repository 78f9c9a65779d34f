//! Sandbox policy for dsh.
//!
//! What a tool call may change: the permission [`SandboxMode`], the [`SandboxPolicy`] that turns
//! a mode into writable roots, the markers the model reads when the sandbox refuses something,
//! and the [`escalation`] rules by which one call may ask for a wider mode. The file tools use
//! the policy as an in-process fence (checked on real paths just before a write); the shell's
//! kernel confinement is built on the same roots.

mod confine;
pub mod escalation;
mod mode;
mod policy;

pub use confine::{Backend, ConfinedCommand, SandboxUnavailable, confine};
pub use mode::{SandboxMode, UnknownMode};
pub use policy::SandboxPolicy;

/// The noun a denial or hint uses for what was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A shell command (`bash`).
    Command,
    /// A file mutation (`write`, `edit`).
    Operation,
}

impl Subject {
    fn noun(self) -> &'static str {
        match self {
            Subject::Command => "command",
            Subject::Operation => "operation",
        }
    }
}

/// The line the model reads when the sandbox refused a file access; the same for every tool, so
/// the model learns one vocabulary.
pub fn denial_marker(mode: SandboxMode) -> String {
    format!("[sandbox: file access denied under {mode} mode]")
}

/// The line after a denial that tells the model it may retry once with a wider mode.
pub fn escalation_hint(subject: Subject) -> String {
    format!(
        "[sandbox: escalation available — retry this exact {} once with sandbox_permissions (the \
         narrowest wider mode that suffices) + justification; the approval prompt asks the user]",
        subject.noun()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_the_reference_texts() {
        assert_eq!(
            denial_marker(SandboxMode::WorkspaceWrite),
            "[sandbox: file access denied under workspace-write mode]"
        );
        assert_eq!(
            escalation_hint(Subject::Operation),
            "[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
        );
    }
}
