//! What `write` and `edit` share: the escalation arguments, the write fence, and the remedies
//! appended to stale and unread errors.

use std::path::Path;

use dsh_fence::WriteSite;
use dsh_sandbox::escalation::{self, EscalationRequest};
use dsh_sandbox::{SandboxMode, SandboxPolicy, Subject};

use crate::schema::{Param, ParamType};
use crate::{Arguments, Target, ToolContext, ToolError, fs_code, resolve};

/// The argument a call asks for a wider sandbox with.
pub(crate) const ESCALATION_ARG: &str = "sandbox_permissions";

/// The schema of the two escalation arguments.
pub(crate) fn escalation_params() -> [Param; 2] {
    let targets: Vec<&'static str> = SandboxMode::ESCALATION_TARGETS
        .iter()
        .map(|m| m.as_str())
        .collect();
    [
        Param::optional(
            ESCALATION_ARG,
            ParamType::String,
            "Only to retry an operation the sandbox just refused: the wider mode it needs. \
             Requires a justification, and the user's approval.",
        )
        .one_of(&targets),
        Param::optional(
            "justification",
            ParamType::String,
            "With sandbox_permissions: one sentence telling the user why this operation needs it.",
        ),
    ]
}

/// The policy this call runs under: the session's, or a wider one the user approved for it.
pub(crate) async fn call_policy(
    args: &Arguments,
    ctx: &ToolContext,
    tool: &str,
    subject: Subject,
) -> Result<SandboxPolicy, ToolError> {
    let wanted = args
        .str(ESCALATION_ARG)
        .and_then(|m| m.parse::<SandboxMode>().ok());
    let request: Option<EscalationRequest> =
        escalation::parse(wanted, args.str("justification")).map_err(plain)?;
    let policy = &ctx.session.policy;
    let Some(request) = request else {
        return Ok(policy.clone());
    };
    let granted = escalation::approve(
        &request,
        policy.mode(),
        escalation::Approval {
            policy: ctx.session.approval,
            approver: ctx.session.approver.as_deref(),
        },
        tool,
        &ctx.call_id,
        subject,
    )
    .await
    .map_err(plain)?;
    Ok(policy.with_mode(granted))
}

fn plain(error: impl std::fmt::Display) -> ToolError {
    ToolError::plain(error.to_string())
}

/// Resolves a mutation's path: relative paths against the workspace's real path.
pub(crate) fn resolve_for_write(policy: &SandboxPolicy, raw: &str) -> Result<Target, ToolError> {
    resolve(policy.workspace(), raw)
}

/// A write the fence let through: the path, and its folder opened beneath the root that
/// grants it, which every later step of the write is relative to.
pub(crate) struct Fenced {
    pub(crate) target: Target,
    pub(crate) site: WriteSite,
}

/// The fence: re-resolves the path now (a symlink swapped since the call began is caught),
/// refuses a real path outside the writable roots, and opens the file's folder beneath its root
/// without following a symlink ([`SandboxPolicy::write_site`]; missing folders are made when
/// `make_missing`), so that nothing swapped after the check can move the write elsewhere.
/// `offers_escalation`: whether the denial may point at escalation (not under `never`).
pub(crate) fn fence(
    target: &Target,
    policy: &SandboxPolicy,
    offers_escalation: bool,
    make_missing: bool,
) -> Result<Fenced, ToolError> {
    let shown = target.shown().to_string();
    let fresh = resolve(Path::new("/"), &shown)?;
    let denial = |why: Option<String>| {
        let mut message = dsh_sandbox::denial_marker(policy.mode());
        if let Some(why) = why {
            message.push('\n');
            message.push_str(&why);
        }
        if offers_escalation {
            message.push('\n');
            message.push_str(&dsh_sandbox::escalation_hint(Subject::Operation));
        }
        ToolError::fs(fs_code::SANDBOX_DENIED, message)
    };
    if !policy.allows_write(&fresh.key) {
        return Err(denial(policy.protection_of(&fresh.key).map(|protected| {
            format!(
                "{} is protected under workspace-write: Git's hooks and config, dsh's .dsh/ \
                 folder and the workspace's .env files change what runs or what dsh trusts later",
                protected.display()
            )
        })));
    }
    let site = policy
        .write_site(&fresh.key, make_missing)
        .map_err(|e| match e.raw_os_error() {
            // A folder on the way became a symlink, or the path left its root, after the
            // check: the write would have gone elsewhere.
            Some(libc::ELOOP | libc::EXDEV) => denial(Some(format!(
                "a folder on the path of \"{shown}\" was replaced by a symlink while it was \
                 being written, so nothing was written; check what changed it before retrying"
            ))),
            Some(libc::EISDIR) => ToolError::fs(
                fs_code::NOT_REGULAR_FILE,
                format!("cannot write \"{shown}\": not a regular file"),
            ),
            // The folder went away since the file was read (a write makes it instead).
            Some(libc::ENOENT) => ToolError::fs(
                fs_code::STALE_VERSION,
                format!("cannot write \"{shown}\": file no longer exists"),
            ),
            _ => crate::atomic::write_error(&shown, &e),
        })?;
    Ok(Fenced {
        target: Target {
            display: target.display.clone(),
            key: fresh.key,
        },
        site,
    })
}

/// Adds the reference's remedy to stale and unread errors, which the model can act on.
pub(crate) fn with_remedy(mut error: ToolError) -> ToolError {
    match error.code() {
        Some(fs_code::STALE_VERSION) => error.message.push_str(" — re-read the file, then retry"),
        Some(fs_code::NOT_OBSERVED) => error.message.push_str(" — read the file, then retry"),
        _ => {}
    }
    error
}
