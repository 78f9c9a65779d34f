//! Hooks wired into the run: the user's and the trusted project's `hooks.json`, read as the run
//! starts, run for the top agent (its approvals too) and, marked as a subagent's, for every
//! child's tool calls and answers.

use std::sync::Arc;

use dsh_config::{Settings, SetupError};
use dsh_sandbox::SandboxPolicy;
use dsh_tools::Shell;
use tokio::sync::mpsc::UnboundedSender;

use super::{HookRunner, HookSet};
use crate::agent::events::AgentEvent;
use crate::install::{Draft, Role, Seat, Wiring};

/// The hooks of a run with `settings`; each hook left out, and why, is told in `notices`.
pub(crate) fn load(
    settings: &Settings,
    notices: &UnboundedSender<String>,
) -> Result<HookSet, SetupError> {
    let project_hooks = settings.files().project_hooks();
    let hooks = HookSet::load(&settings.home().value, project_hooks.as_deref())?;
    for skipped in &hooks.skipped {
        let _ = notices.send(skipped.clone());
    }
    Ok(hooks)
}

/// The top agent's runner of `hooks`, when there are any: they run in its shell, under its
/// sandbox, and name its session.
pub(crate) fn top_runner(
    hooks: HookSet,
    settings: &Settings,
    shell: &Arc<Shell>,
    policy: SandboxPolicy,
    session: &crate::Session,
    events: &UnboundedSender<AgentEvent>,
) -> Option<Arc<HookRunner>> {
    (!hooks.is_empty()).then(|| {
        Arc::new(HookRunner {
            hooks,
            redactor: settings.redactor(),
            subagent: false,
            shell: shell.clone(),
            policy,
            cwd: settings.cwd().clone(),
            session_id: session.id().to_owned(),
            transcript: session.log_path().to_path_buf(),
            events: events.clone(),
        })
    })
}

/// Gives the agent the run's hooks. A subagent's tool calls have the same hooks, so a blocked
/// call cannot be routed through one.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    // What the top agent puts to the user passes through PermissionRequest and Notification
    // hooks (a child asks nobody).
    if let (Role::Top(_), Some(hooks)) = (&seat.role, &wiring.hooks) {
        let catalog = draft.tools.catalog();
        let session = &mut draft.tool_session;
        session.approver = (session.approver.take()).map(|inner| {
            Arc::new(super::approvals::HookedApprover {
                inner,
                hooks: hooks.clone(),
                catalog,
            }) as Arc<dyn dsh_sandbox::escalation::Approver>
        });
    }
    draft.config.hooks = match seat.role {
        Role::Top(_) => wiring.hooks.clone(),
        Role::Child { .. } => (wiring.hooks.as_deref()).map(|top| {
            Arc::new(HookRunner {
                subagent: true,
                ..top.clone()
            })
        }),
    };
}
