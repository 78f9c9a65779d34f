//! Goals wired into the run: the board over the session's goal and the goal tools, the top
//! agent's only (a subagent works for it, not toward a goal).

use std::sync::Arc;

use super::{GoalBoard, TOOL_NAMES, tools::goal_tools};
use crate::install::{Draft, Role, Seat, Wiring};

/// Gives the top agent the goal tools over the session's goal, and, when its tool list lets
/// it have one of them, the board it works toward.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let Role::Top(_) = seat.role else {
        return;
    };
    let goals = Arc::new(GoalBoard::new(
        seat.session.goal_change().map(|change| change.goal.clone()),
        wiring.settings.goals(),
    ));
    for tool in goal_tools(&goals) {
        draft.tools.register(tool);
    }
    if TOOL_NAMES
        .iter()
        .any(|name| draft.tools.names().any(|offered| offered == *name))
    {
        draft.config.goals = Some(goals);
    }
}
