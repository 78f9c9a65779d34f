//! Workspace instructions wired into an agent: what it is given after its next task, and how
//! it finds the files below the working directory as its tools reach them.

use std::sync::Arc;

use crate::install::{Draft, Role, Seat, Wiring};

/// A new session gets the workspace instructions after its first task; a resumed one (the top
/// agent's, or a background child's taken up again) has them in its history and gets only
/// what changed since. A fork has them in the history it begins with.
pub(crate) fn install(wiring: &Arc<Wiring>, seat: &mut Seat<'_>, draft: &mut Draft) {
    let settings = &wiring.settings;
    let resumed = match &seat.role {
        Role::Top(_) => settings.session().is_some(),
        Role::Child { resumed, .. } => *resumed,
    };
    let forked = matches!(&seat.role, Role::Child { spec, .. } if spec.fork);
    if resumed || !forked {
        draft.config.instructions = super::for_next_turn(
            settings.cwd(),
            &settings.home().value,
            settings.home_shown(),
            settings.instructions(),
            if resumed {
                seat.session.instructions_given()
            } else {
                super::Given::Nothing
            },
        );
    }
    draft.config.nested_instructions = Some(settings.instructions().clone());
    draft.config.instructions_home = Some((
        settings.home().value.clone(),
        settings.home_shown().to_owned(),
    ));
}
