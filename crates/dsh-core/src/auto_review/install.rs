//! Auto review wired into the run: the reviewer, over its own route when `auto_review.model`
//! names one, and the agents it reviews.

use std::sync::Arc;

use dsh_config::{Settings, SetupError};
use dsh_llm::{Provider, Retrying};

use super::AutoReviewer;
use crate::install::{Draft, Role, Seat, Wiring};

/// What the model is told of Auto review.
const AUTO_REVIEW_CONTEXT: &str = "Auto review is on: before any call that could change \
something runs (a command, a file change, an MCP tool that is not read-only), a separate \
reviewer model reads the task, the latest messages and the call, and allows or denies it. A \
denied call did not run and fails with AUTO_REVIEW_DENIED and the reviewer's reason: take the \
reason into account and change the approach instead of repeating the call. \
AUTO_REVIEW_FAILED means the review itself failed and the call did not run.";

/// The run's Auto reviewer, over its own route when `auto_review.model` names one, else the
/// session's: in `--permission-mode auto`, and in plan mode when someone can approve the plan
/// (`approves_plans`) and may pick Auto review for it. There a reviewer whose route cannot
/// connect (its key missing) only means Auto review is not offered.
pub(crate) fn reviewer(
    settings: &Settings,
    provider: &Arc<dyn Provider>,
    approves_plans: bool,
) -> Result<Option<Arc<AutoReviewer>>, SetupError> {
    let mode = settings.permission_mode().value;
    let standby = mode.is_plan() && approves_plans;
    if !mode.is_auto() && !standby {
        return Ok(None);
    }
    let own = match &settings.auto_review().route {
        None => None,
        Some(route) => match crate::client::connect(route, settings.idle_timeout().value) {
            Ok(own) => Some(Arc::new(Retrying::new(own, *settings.retry())) as Arc<dyn Provider>),
            Err(_) if standby => return Ok(None),
            Err(error) => return Err(error),
        },
    };
    Ok(Some(Arc::new(AutoReviewer::new(
        settings,
        provider.clone(),
        own,
    ))))
}

/// Has the run's reviewer review the agent's calls under Auto review, and the model told so.
/// In plan mode the top agent keeps it standing by, in case the user picks Auto review for
/// carrying the plan out. A child works as its parent does, so its calls are reviewed as its
/// parent's are: a read-only child too, whose commands keep the network and can read anything.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let reviewed = wiring.mode.get().is_auto();
    let config = &mut draft.config;
    match &seat.role {
        Role::Top(_) if reviewed => config.reviewer.clone_from(&wiring.reviewer),
        Role::Top(_) => {
            config.standby_reviewer.clone_from(&wiring.reviewer);
            return;
        }
        Role::Child { .. } if reviewed && wiring.reviewer.is_some() => {
            config.reviewer.clone_from(&wiring.reviewer);
        }
        Role::Child { .. } => return,
    }
    config.context.push(AUTO_REVIEW_CONTEXT.to_owned());
}
