//! `[instructions]`: which workspace instruction files are delivered, and how much of them.

use serde::Deserialize;

use crate::resolver::Resolver;
use crate::trust_look::{Guard, Reason};

/// How each key can widen what a request carries ([`crate::trust_look::Widens`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither(
        "instructions.enabled",
        "the workspace's own instructions, sent or not",
    ),
    Guard::higher("instructions.max_bytes", MAX_BYTES as u64, Reason::Limit),
];

const MAX_BYTES: usize = 65_536;

/// Workspace instructions (AGENTS.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InstructionsConfig {
    /// Send them (default true).
    pub enabled: Option<bool>,
    /// The most bytes the instructions message may take, frame included (default 65536).
    pub max_bytes: Option<usize>,
    /// Names that mark the project root (default [".git"]; [] makes the working directory the
    /// root).
    pub root_markers: Option<Vec<String>>,
}

/// Where instructions are looked for, and how much of them may be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionSettings {
    pub enabled: bool,
    /// The most bytes the message may take, frame included.
    pub max_bytes: usize,
    /// Names whose presence marks the project root (`[]`: the working directory is the root).
    pub root_markers: Vec<String>,
}

impl InstructionSettings {
    /// Whether any instructions are given: switched on, with a budget above nothing.
    pub fn active(&self) -> bool {
        self.enabled && self.max_bytes > 0
    }
}

impl Default for InstructionSettings {
    fn default() -> Self {
        InstructionSettings {
            enabled: true,
            max_bytes: MAX_BYTES,
            root_markers: vec![".git".into()],
        }
    }
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &InstructionsConfig) -> InstructionSettings {
    let defaults = InstructionSettings::default();
    InstructionSettings {
        enabled: (r.file_setting("instructions.enabled", file.enabled, defaults.enabled)).value,
        max_bytes: (r.file_setting("instructions.max_bytes", file.max_bytes, defaults.max_bytes))
            .value,
        root_markers: (r.file_setting(
            "instructions.root_markers",
            file.root_markers.clone(),
            defaults.root_markers,
        ))
        .value,
    }
}
