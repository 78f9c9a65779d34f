//! `/diff`: the workspace's uncommitted changes, as `git diff HEAD` prints them, for the front
//! ends to show. Git is told to run no external diff program and no text conversion filter,
//! so what the repository's attributes name is not executed to show a diff.

/// The workspace's uncommitted changes as a unified diff (empty when there are none); else
/// why git could not say.
pub async fn workspace_diff(cwd: &std::path::Path) -> Result<String, String> {
    let output = tokio::process::Command::new("git")
        .args([
            "--no-pager",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "HEAD",
        ])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git diff failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
