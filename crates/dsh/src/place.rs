//! Where a command runs: dsh's home (`$DSH_HOME`, else `~/.dsh`) and the working directory.

use std::path::PathBuf;

/// `(home, working directory)`, or what keeps either from being used.
pub(crate) fn home_and_cwd() -> Result<(PathBuf, PathBuf), String> {
    let home = dsh_core::dsh_home(
        std::env::var("DSH_HOME").ok().as_deref(),
        std::env::var_os("HOME").map(PathBuf::from).as_deref(),
    )
    .map_err(|e| e.to_string())?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot use the working directory: {e}"))?;
    Ok((home, cwd))
}
