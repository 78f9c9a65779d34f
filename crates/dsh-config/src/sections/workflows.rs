//! `[workflows]`: how long a workflow run may take, its script's heap, and its agents.

use std::time::Duration;

use serde::Deserialize;

use crate::files::at_least_one;
use crate::resolver::Resolver;
use crate::trust_look::{Guard, Reason};

/// The default of `workflows.max_agents`.
pub(crate) const MAX_AGENTS: u64 = 1000;
/// The default of `workflows.timeout_ms`.
const TIMEOUT_MS: u64 = 3_600_000;
/// The default of `workflows.max_memory_mb`.
const MAX_MEMORY_MB: u64 = 64;

/// How each key can widen what a run may take ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher("workflows.timeout_ms", TIMEOUT_MS, Reason::Limit),
    Guard::higher("workflows.max_memory_mb", MAX_MEMORY_MB, Reason::Limit),
    Guard::higher("workflows.max_agents", MAX_AGENTS, Reason::Cost),
];

/// Workflows: the bounds of one `workflow` run (its script and its agents).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkflowsConfig {
    /// How long one run may take, agents included, in milliseconds (default 3600000).
    #[serde(deserialize_with = "at_least_one")]
    pub timeout_ms: Option<u64>,
    /// MiB the script's heap may take (default 64).
    #[serde(deserialize_with = "at_least_one")]
    pub max_memory_mb: Option<u64>,
    /// `agent()` calls one run may make (default 1000).
    #[serde(deserialize_with = "at_least_one")]
    pub max_agents: Option<u64>,
}

/// The bounds of one workflow run (`[workflows]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkflowBounds {
    /// How long the run may take, its agents included.
    pub time: Duration,
    /// MiB its script's heap may take.
    pub max_memory_mb: u64,
    /// `agent()` calls it may make.
    pub max_agents: u64,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &WorkflowsConfig) -> WorkflowBounds {
    WorkflowBounds {
        time: (r.millis(
            "workflows.timeout_ms",
            file.timeout_ms,
            Duration::from_millis(TIMEOUT_MS),
        ))
        .value,
        max_memory_mb: (r.file_setting(
            "workflows.max_memory_mb",
            file.max_memory_mb,
            MAX_MEMORY_MB,
        ))
        .value,
        max_agents: (r.file_setting("workflows.max_agents", file.max_agents, MAX_AGENTS)).value,
    }
}
