//! The project a run works in: its root, and where its workspace instructions are looked for.
//! Core reads the instructions themselves; configuration only says where and how much.

use std::path::{Path, PathBuf};

/// Instruction files looked for in each folder, in order.
pub const CANDIDATES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// Personal overlays, after the shared files of the same folder.
pub const LOCAL_CANDIDATES: &[&str] = &["AGENTS.local.md", "CLAUDE.local.md"];

pub use crate::sections::instructions::InstructionSettings;

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

/// The project's saved workflows: `.dsh/workflows` in its root (the nearest folder with
/// `.git`, else the working directory). Only a trusted workspace's are used
/// ([`crate::trust::workspace_trust`]).
pub fn workflows_folder(cwd: &Path) -> PathBuf {
    project_root(cwd, &[".git".to_owned()]).join(".dsh/workflows")
}

/// The workspace's saved prompts: `.dsh/prompts` in the working directory. Only a trusted
/// workspace's are used ([`crate::trust::workspace_trust`]).
pub fn prompts_folder(cwd: &Path) -> PathBuf {
    cwd.join(".dsh").join("prompts")
}
