//! Host tools wired into the run: the top agent is offered the client's tools (a subagent has
//! no client to call).

use std::sync::Arc;

use crate::install::{Draft, Role, Seat, Wiring};

pub(crate) fn install(_wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let Role::Top(top) = &seat.role else {
        return;
    };
    let Some(host) = &top.host_tools else {
        return;
    };
    for tool in host.offered() {
        draft.tools.register(tool);
    }
}
