//! `[goals]`: the round limit of a goal set without one, and the rounds before one may be
//! reported blocked.

use serde::Deserialize;

use crate::files::at_least_one;
use crate::resolver::Resolver;
use crate::trust_look::{Guard, Reason};

/// The default of `goals.default_max_rounds`.
pub(crate) const DEFAULT_MAX_ROUNDS: u64 = 256;
const BLOCKED_AFTER_ROUNDS: u64 = 3;

/// How each key can widen what a run spends ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher("goals.default_max_rounds", DEFAULT_MAX_ROUNDS, Reason::Cost),
    Guard::higher(
        "goals.blocked_after_rounds",
        BLOCKED_AFTER_ROUNDS,
        Reason::Cost,
    ),
];

/// Goals: the automatic rounds toward a session's goal.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GoalsConfig {
    /// The round limit of a goal the model sets without one (default 256).
    #[serde(deserialize_with = "at_least_one")]
    pub default_max_rounds: Option<u64>,
    /// The rounds a goal must have had before a round may report it blocked (default 3).
    #[serde(deserialize_with = "at_least_one")]
    pub blocked_after_rounds: Option<u64>,
}

/// What a session's goal defaults to and requires (`[goals]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoalRules {
    /// The round limit of a goal set without one.
    pub default_max_rounds: u64,
    /// The automatic rounds a goal must have had before a round may report it blocked.
    pub blocked_after_rounds: u64,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &GoalsConfig) -> GoalRules {
    GoalRules {
        default_max_rounds: (r.file_setting(
            "goals.default_max_rounds",
            file.default_max_rounds,
            DEFAULT_MAX_ROUNDS,
        ))
        .value,
        blocked_after_rounds: (r.file_setting(
            "goals.blocked_after_rounds",
            file.blocked_after_rounds,
            BLOCKED_AFTER_ROUNDS,
        ))
        .value,
    }
}
