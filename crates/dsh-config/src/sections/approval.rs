//! `[approval]`: whether a command the sandbox stops may be put to the user.

use dsh_sandbox::escalation::ApprovalPolicy;
use serde::Deserialize;

use crate::files::{PermissionMode, parsed};
use crate::flags::Flags;
use crate::resolver::{Resolver, flag};
use crate::sourced::Sourced;

/// Escalation approvals.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalConfig {
    /// ask or never.
    #[serde(deserialize_with = "parsed")]
    pub policy: Option<ApprovalPolicy>,
}

/// The approval policy (`--approval-policy`, `approval.policy`), whose default goes with the
/// permission mode `mode`.
pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &ApprovalConfig,
    flags: &Flags,
    mode: &Sourced<PermissionMode>,
) -> Sourced<ApprovalPolicy> {
    let approval = r.setting(
        "approval.policy",
        [
            flag(flags.approval_policy, "--approval-policy"),
            r.file("approval.policy", config.policy),
        ],
        // Auto review has nothing wider to ask for either, but a denial is put to the user
        // where there is one to ask (the terminal UI, an editor).
        if mode.value.is_auto() {
            ApprovalPolicy::Ask
        } else {
            ApprovalPolicy::default_for(mode.value.sandbox())
        },
    );
    // Plan mode changes nothing, so there is nothing wider to ask for.
    if mode.value.is_plan() {
        r.explain_last("never: plan mode asks for nothing wider");
        Sourced::new(ApprovalPolicy::Never, mode.source.clone())
    } else {
        approval
    }
}
