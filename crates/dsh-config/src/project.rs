//! The project a run works in: its root, and where its workspace instructions are looked for.
//! Core reads the instructions themselves; configuration only says where and how much.

use std::path::{Path, PathBuf};

/// Instruction files looked for in each folder, in order.
pub const CANDIDATES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Personal overlays, after the shared files of the same folder.
pub const LOCAL_CANDIDATES: &[&str] = &["AGENTS.local.md", "CLAUDE.local.md"];

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
            max_bytes: 65_536,
            root_markers: vec![".git".into()],
        }
    }
}

/// The nearest folder at or above `cwd` holding one of `markers`; `cwd` itself when none does
/// (or there are no markers).
pub fn project_root(cwd: &Path, markers: &[String]) -> PathBuf {
    if markers.is_empty() {
        return cwd.to_path_buf();
    }
    cwd.ancestors()
        .find(|dir| markers.iter().any(|m| dir.join(m).exists()))
        .unwrap_or(cwd)
        .to_path_buf()
}
