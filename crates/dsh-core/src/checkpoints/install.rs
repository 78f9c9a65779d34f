//! Checkpoints wired into the run: the top agent checkpoints the workspace at its turns, and
//! the run prunes the store beside it.

use std::sync::Arc;

use super::{Checkpointer, prune_beside};
use crate::install::{Draft, Role, Seat, Wiring};

/// Gives the top agent its checkpointer when checkpoints are on, and starts the day's prune of
/// the checkpoints nobody names any more (at most once a day, beside the run).
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let Role::Top(top) = &mut seat.role else {
        return;
    };
    let settings = &wiring.settings;
    top.pruning = (settings.checkpoints().enabled).then(|| prune_beside(settings));
    draft.checkpointer = Checkpointer::for_run(settings);
}
