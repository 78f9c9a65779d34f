//! `[jobs]`: how long a command runs in the foreground before it becomes a background job.

use std::time::Duration;

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// How long a command runs in the foreground before it becomes a background job
/// (`jobs.wait_ms`).
pub const DEFAULT_JOB_WAIT: Duration = Duration::from_secs(60);

/// How each key can widen what a run takes ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[Guard::higher(
    "jobs.wait_ms",
    DEFAULT_JOB_WAIT.as_secs() * 1000,
    Reason::Limit,
)];

/// Background jobs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobsConfig {
    /// After the model's answer, how long to wait for running jobs so it can answer again
    /// with their results (milliseconds; default 60000, 0 to not wait).
    pub wait_ms: Option<u64>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &JobsConfig) -> Sourced<Duration> {
    r.millis("jobs.wait_ms", file.wait_ms, DEFAULT_JOB_WAIT)
}
