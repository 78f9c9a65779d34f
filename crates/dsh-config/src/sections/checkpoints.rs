//! `[checkpoints]`: whether each turn's start and end are checkpointed, what a checkpoint
//! covers, and how long checkpoints are kept.

use serde::Deserialize;

use crate::files::at_least_one;
use crate::resolver::Resolver;
use crate::trust_look::{Guard, Reason};

const MAX_FILE_MB: u64 = 16;
const KEEP_DAYS: u64 = 30;
const MAX_STORE_MB: u64 = 1024;

/// How each key can widen what the store under `$DSH_HOME` takes
/// ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither(
        "checkpoints.enabled",
        "off, the workspace's rewinds have nothing to go back to; nothing of yours is exposed",
    ),
    Guard::higher("checkpoints.max_file_mb", MAX_FILE_MB, Reason::Limit),
    Guard::switch("checkpoints.include_ignored", true, false, Reason::Limit),
    Guard::higher("checkpoints.keep_days", KEEP_DAYS, Reason::Limit),
    Guard::higher("checkpoints.max_store_mb", MAX_STORE_MB, Reason::Limit),
];

/// Checkpoints of the workspace's files at each turn's start and end, for rewinds.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Whether turns are checkpointed (default true).
    pub enabled: Option<bool>,
    /// Files larger than this many MiB are left out (default 16).
    #[serde(deserialize_with = "at_least_one")]
    pub max_file_mb: Option<u64>,
    /// Whether files .gitignore and .ignore leave out are covered too (default false).
    pub include_ignored: Option<bool>,
    /// Checkpoints of sessions not used for this many days are pruned (default 30).
    #[serde(deserialize_with = "at_least_one")]
    pub keep_days: Option<u64>,
    /// The most MiB of copies of the workspace's files a store keeps (default 1024).
    #[serde(deserialize_with = "at_least_one")]
    pub max_store_mb: Option<u64>,
}

/// How a run checkpoints the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointRules {
    pub enabled: bool,
    /// Files larger than this are left out, and listed as uncovered.
    pub max_file_bytes: u64,
    /// Whether ignored files are covered too.
    pub include_ignored: bool,
    /// Checkpoints only sessions unused for longer than this name are pruned.
    pub keep_days: u64,
    /// The most the store keeps of copies of the workspace's files (what Git holds is not
    /// copied); a file past it is left out, and listed as uncovered.
    pub max_store_bytes: u64,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, config: &CheckpointsConfig) -> CheckpointRules {
    let enabled = r.file_setting("checkpoints.enabled", config.enabled, true);
    let max_file_mb = r.file_setting("checkpoints.max_file_mb", config.max_file_mb, MAX_FILE_MB);
    let include_ignored =
        r.file_setting("checkpoints.include_ignored", config.include_ignored, false);
    let keep_days = r.file_setting("checkpoints.keep_days", config.keep_days, KEEP_DAYS);
    let max_store_mb = r.file_setting(
        "checkpoints.max_store_mb",
        config.max_store_mb,
        MAX_STORE_MB,
    );
    CheckpointRules {
        enabled: enabled.value,
        max_file_bytes: max_file_mb.value.saturating_mul(1 << 20),
        include_ignored: include_ignored.value,
        keep_days: keep_days.value,
        max_store_bytes: max_store_mb.value.saturating_mul(1 << 20),
    }
}
