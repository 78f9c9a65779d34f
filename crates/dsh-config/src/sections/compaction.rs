//! `[compaction]`: when the history is compacted on its own (the share of the context window
//! that starts it), or whether it is at all.

use serde::{Deserialize, Deserializer};

use crate::resolver::Resolver;
use crate::trust_look::Guard;

/// How each key can widen a guard ([`crate::trust_look::Widens`]): neither does.
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither(
        "compaction.auto",
        "when the history is condensed changes what the model remembers, not what it may do",
    ),
    Guard::neither(
        "compaction.threshold",
        "when the history is condensed changes what the model remembers, not what it may do",
    ),
];

/// The default of `compaction.threshold`.
pub const DEFAULT_THRESHOLD: f64 = 0.8;

/// Compaction: keeping the history inside the model's context window.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionConfig {
    /// Whether the history is compacted on its own when it reaches `threshold` (default true).
    pub auto: Option<bool>,
    /// The share of the context window at which automatic compaction starts, above 0 and at
    /// most 1 (default 0.8).
    #[serde(deserialize_with = "share_of_window")]
    pub threshold: Option<f64>,
}

/// When the history is compacted on its own (`[compaction]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionRules {
    /// Whether it is compacted on its own at all (a request that overflows still is).
    pub auto: bool,
    /// The share of the window at which it is.
    pub threshold: f64,
}

impl Default for CompactionRules {
    fn default() -> Self {
        CompactionRules {
            auto: true,
            threshold: DEFAULT_THRESHOLD,
        }
    }
}

fn share_of_window<'de, D>(deserializer: D) -> Result<Option<f64>, D::Error>
where
    D: Deserializer<'de>,
{
    match f64::deserialize(deserializer)? {
        share if share > 0.0 && share <= 1.0 => Ok(Some(share)),
        _ => Err(serde::de::Error::custom(
            "give a share of the context window above 0 and at most 1, such as 0.8",
        )),
    }
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &CompactionConfig) -> CompactionRules {
    CompactionRules {
        auto: r.file_setting("compaction.auto", file.auto, true).value,
        threshold: (r.file_setting("compaction.threshold", file.threshold, DEFAULT_THRESHOLD))
            .value,
    }
}
