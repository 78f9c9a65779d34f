//! `[subagents]`: how deep subagents nest, how many run at once and in all, and how many tokens
//! one may bill; hitting a bound is a tool error naming its key.

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::trust_look::{Guard, Reason};

/// The default of `subagents.max_total`.
pub(crate) const MAX_TOTAL: u32 = 16;
/// The default of `subagents.max_tokens`.
pub(crate) const MAX_TOKENS: u64 = 2_000_000;
const MAX_DEPTH: u32 = 2;
const MAX_CONCURRENT: u32 = 4;

/// How each key can widen what a run spends ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher("subagents.max_depth", MAX_DEPTH as u64, Reason::Cost),
    Guard::higher(
        "subagents.max_concurrent",
        MAX_CONCURRENT as u64,
        Reason::Cost,
    ),
    Guard::higher("subagents.max_total", MAX_TOTAL as u64, Reason::Cost),
    Guard::higher("subagents.max_tokens", MAX_TOKENS, Reason::Cost),
];

/// Subagents: how many, how deep, how costly.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// How deep subagents may nest: 1 lets only the top agent start them (default 2).
    pub max_depth: Option<u32>,
    /// How many may run at once in a run (default 4).
    pub max_concurrent: Option<u32>,
    /// How many a run may start in all (default 16).
    pub max_total: Option<u32>,
    /// The most tokens one subagent's run may bill (default 2000000).
    pub max_tokens: Option<u64>,
}

/// The bounds on subagents (`[subagents]`); hitting one is a tool error naming its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// How deep they nest (the top agent's children are depth 1).
    pub max_depth: u32,
    /// How many run at once.
    pub max_concurrent: u32,
    /// How many a run starts in all.
    pub max_total: u32,
    /// The most tokens one subagent may bill, over all its turns.
    pub max_tokens: u64,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &SubagentsConfig) -> SubagentLimits {
    SubagentLimits {
        max_depth: r
            .file_setting("subagents.max_depth", file.max_depth, MAX_DEPTH)
            .value,
        max_concurrent: r
            .file_setting(
                "subagents.max_concurrent",
                file.max_concurrent,
                MAX_CONCURRENT,
            )
            .value,
        max_total: r
            .file_setting("subagents.max_total", file.max_total, MAX_TOTAL)
            .value,
        max_tokens: r
            .file_setting("subagents.max_tokens", file.max_tokens, MAX_TOKENS)
            .value,
    }
}
