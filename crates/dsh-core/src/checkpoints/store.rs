//! Where a workspace's checkpoints are kept, and what of it they cover.

use std::path::Path;

use dsh_checkpoint::{CheckpointStore, Coverage};
use dsh_config::CheckpointRules;

/// The checkpoint store of the workspace `cwd`.
pub(crate) fn store_for(home: &Path, cwd: &Path) -> CheckpointStore {
    let slug = crate::log::cwd_slug(&cwd.to_string_lossy());
    CheckpointStore::new(home.join("checkpoints").join(slug))
}

pub(crate) fn coverage(rules: CheckpointRules, home: &Path) -> Coverage {
    Coverage {
        max_file_bytes: rules.max_file_bytes,
        include_ignored: rules.include_ignored,
        // dsh's home inside the workspace holds the checkpoints themselves.
        exclude: vec![home.to_path_buf()],
        // The files the redactor reads secrets from are never copied into the store.
        holds_secrets: dsh_sandbox::is_env_file,
        // Added where the run's settings are known (`Checkpointer::new`).
        secret_files: Vec::new(),
        budget_bytes: Some(rules.max_store_bytes),
    }
}
