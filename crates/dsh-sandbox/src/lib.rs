//! The sandbox of dsh: what a tool call may change, and the kernel confinement of commands.
//!
//! The permission [`SandboxMode`] and the [`SandboxPolicy`] that turns it into writable roots;
//! the [`Sandbox`] that probes the backends once (bubblewrap, then Landlock) and turns a command
//! into a [`ConfinedCommand`] or refuses it ([`SandboxUnavailable`]); the [`Verdict`] on a
//! finished command (denied, runner failure, or its own result); the markers the model reads
//! when the sandbox refuses something; and the [`escalation`] rules by which one call may ask
//! for a wider mode. The file tools use the same policy as an in-process fence, checked on real
//! paths just before a write.

mod aside;
mod backend;
mod bwrap;
#[cfg(target_os = "linux")]
mod caps;
mod classify;
pub mod command_line;
mod confine;
pub mod escalation;
pub mod git_view;
pub mod helper;
#[cfg(target_os = "linux")]
mod kinds;
mod landlock_backend;
mod mode;
pub mod network;
mod network_use;
mod policy;
mod report;
pub mod rules;
mod secrets;
mod unusable;
mod watch;

pub use aside::set_aside;
pub use backend::{Probe, Sandbox};
pub use classify::{Verdict, normalise};
pub use confine::{ChildSetup, ConfinedCommand, SandboxUnavailable};
pub use escalation::Subject;
pub use helper::{HelperChild, HelperExit, HelperLaunch, HelperRefusal, HelperWaiter};
pub use kinds::{
    Backend, BackendChoice, CommandLimits, Enforcement, SandboxSettings, UnknownBackend,
};
pub use mode::{SandboxMode, UnknownMode};
pub use policy::{SandboxPolicy, is_env_file};
pub use unusable::Unusable;
pub use watch::CreationWatch;

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

/// What the model is told about the sandbox for the whole run: the mode, the folders it may
/// write, the network, and whether it may ask for more. Our words; the facts are the
/// reference's runtime context (`sandbox:policy`, `approval:policy`) plus the roots and the
/// network, which it leaves out.
pub fn runtime_context(
    policy: &SandboxPolicy,
    confinement: &SandboxSettings,
    approval: escalation::ApprovalPolicy,
) -> String {
    let mut text = format!("Sandbox: {}.", policy.mode());
    match policy.mode() {
        SandboxMode::ReadOnly => text.push_str(
            " Commands and file tools cannot change any file. Do not give up on a needed \
             change because of this: try it, and follow what the refusal says.",
        ),
        SandboxMode::WorkspaceWrite => {
            let roots: Vec<String> = policy
                .writable_roots()
                .iter()
                .map(|r| format!("{:?}", r.display().to_string()))
                .collect();
            text.push_str(&format!(
                " Commands and file tools may change files only under {}; a write anywhere \
                 else is refused with a `[sandbox: ...]` marker.",
                roots.join(", ")
            ));
        }
        SandboxMode::DangerFullAccess => {
            text.push_str(" Nothing restricts what commands and file tools change.");
        }
    }
    if policy.mode() != SandboxMode::DangerFullAccess {
        if let Some(allowlist) = &confinement.allowed_domains {
            text.push_str(&format!(
                " Commands reach the network only through dsh's HTTP proxy (HTTP_PROXY and \
                 HTTPS_PROXY are set), which lets through these domains only: {}; any other \
                 host is refused and named in the result.",
                allowlist.entries().join(", ")
            ));
        } else if !confinement.network {
            text.push_str(" Commands have no network access.");
        }
    }
    match approval {
        escalation::ApprovalPolicy::Ask if policy.mode() != SandboxMode::DangerFullAccess => text
            .push_str(
                " Approval policy: ask. After a refusal, the same call may be retried once with \
                 sandbox_permissions and a justification; it runs only if the user approves, \
                 and fails when no one can answer.",
            ),
        escalation::ApprovalPolicy::Ask => text.push_str(" Approval policy: ask."),
        escalation::ApprovalPolicy::Never => text.push_str(
            " Approval policy: never. Requests for a wider sandbox are refused automatically: \
             do not set sandbox_permissions.",
        ),
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_context_names_the_mode_roots_network_and_policy() {
        let ws = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), Vec::new());
        let off = SandboxSettings {
            network: false,
            ..SandboxSettings::default()
        };
        let text = runtime_context(&policy, &off, escalation::ApprovalPolicy::Never);
        let real = std::fs::canonicalize(ws.path()).unwrap();
        assert!(text.starts_with("Sandbox: workspace-write."), "{text}");
        assert!(text.contains(&format!("{:?}", real.display().to_string())));
        assert!(text.contains("\"/tmp\""));
        assert!(text.contains("no network access"));
        assert!(text.contains("do not set sandbox_permissions"));
        let ro = runtime_context(
            &policy.with_mode(SandboxMode::ReadOnly),
            &SandboxSettings::default(),
            escalation::ApprovalPolicy::Ask,
        );
        assert!(ro.contains("cannot change any file") && ro.contains("retried once"));
        assert!(!ro.contains("network"), "{ro}");
        let allowlist = SandboxSettings {
            network: false,
            allowed_domains: Some(network::DomainAllowlist::parse(&["*.crates.io"]).unwrap()),
            ..SandboxSettings::default()
        };
        let listed = runtime_context(&policy, &allowlist, escalation::ApprovalPolicy::Ask);
        assert!(
            listed.contains("through dsh's HTTP proxy") && listed.contains("only: *.crates.io;"),
            "{listed}"
        );
    }

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
