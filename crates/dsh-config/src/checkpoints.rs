//! `[checkpoints]`: whether each turn's start and end are checkpointed, what a checkpoint
//! covers, and how long checkpoints are kept.

use super::files::CheckpointsConfig;
use super::resolver::Resolver;

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
}

pub(super) fn resolve(r: &mut Resolver<'_>, config: &CheckpointsConfig) -> CheckpointRules {
    let enabled = r.setting(
        "checkpoints.enabled",
        [r.file("checkpoints.enabled", config.enabled)],
        true,
    );
    let max_file_mb = r.setting(
        "checkpoints.max_file_mb",
        [r.file("checkpoints.max_file_mb", config.max_file_mb)],
        16,
    );
    let include_ignored = r.setting(
        "checkpoints.include_ignored",
        [r.file("checkpoints.include_ignored", config.include_ignored)],
        false,
    );
    let keep_days = r.setting(
        "checkpoints.keep_days",
        [r.file("checkpoints.keep_days", config.keep_days)],
        30,
    );
    CheckpointRules {
        enabled: enabled.value,
        max_file_bytes: max_file_mb.value.saturating_mul(1 << 20),
        include_ignored: include_ignored.value,
        keep_days: keep_days.value,
    }
}
