//! `/diff`: the workspace's uncommitted changes, as `git diff HEAD` prints them, for the front
//! ends to show. dsh runs Git unconfined here, on a repository a command (or whoever made the
//! clone) may have written, so Git is asked to run no program the repository can name: no
//! external diff and no text conversion, no file system monitor (`core.fsmonitor`), and every
//! filter its config declares (`filter.<name>.clean`, `.smudge`, `.process`: what attributes
//! run on a file's bytes) set to nothing; no pager, no prompt, no optional lock.

use std::time::Duration;

/// How long Git may take to answer: a config that includes a FIFO, or a huge repository on a
/// slow disk, must not hold the front end.
const GIT_TIMEOUT: Duration = Duration::from_secs(20);

/// The workspace's uncommitted changes as a unified diff (empty when there are none); else
/// why git could not say.
pub async fn workspace_diff(cwd: &std::path::Path) -> Result<String, String> {
    let declared = git(cwd, &[], &["config", "--get-regexp", r"^filter\."])
        .await
        .map(|listed| filters_declared(&listed))
        .unwrap_or_default();
    let unset: Vec<String> = (declared.iter())
        .flat_map(|name| {
            ["clean", "smudge", "process"]
                .map(|key| format!("filter.{name}.{key}="))
                .into_iter()
                .chain([format!("filter.{name}.required=false")])
        })
        .collect();
    git(
        cwd,
        &unset,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "HEAD",
        ],
    )
    .await
}

/// The names of the filters a `git config --get-regexp '^filter\.'` listing declares.
fn filters_declared(listed: &str) -> std::collections::BTreeSet<String> {
    (listed.lines())
        .filter_map(|line| {
            let key = line.split_whitespace().next()?;
            let rest = key.strip_prefix("filter.")?;
            // The name may itself hold dots: the key is its last part.
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_owned())
        })
        .collect()
}

/// Runs `git -c SETTING... ARGS` in `cwd` as the module's doc says; its standard output.
async fn git(cwd: &std::path::Path, settings: &[String], args: &[&str]) -> Result<String, String> {
    let mut command = tokio::process::Command::new("git");
    command.args(["-c", "core.fsmonitor=false", "--no-pager"]);
    for setting in settings {
        command.args(["-c", setting]);
    }
    let running = command
        .args(args)
        .current_dir(cwd)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(GIT_TIMEOUT, running)
        .await
        .map_err(|_| format!("git took more than {} s to answer", GIT_TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_declared_filter_is_named_once() {
        let listed = "filter.lfs.clean git-lfs clean -- %f\nfilter.lfs.process x\n\
                      filter.a.b.smudge cat\nfilter.odd\n";
        assert_eq!(
            super::filters_declared(listed)
                .into_iter()
                .collect::<Vec<_>>(),
            ["a.b", "lfs"]
        );
    }
}
