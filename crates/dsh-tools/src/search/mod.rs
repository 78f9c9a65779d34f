//! What `glob` and `grep` share: where a search starts, how its paths are shown, its bounds
//! (a 30 s timeout, a cap on collected output) and its errors.
//!
//! Both run in process on ripgrep's own crates, configured as the reference configures its
//! ripgrep binary, so that patterns, ignore rules and binary handling behave as the model has
//! learned from `rg`. The walk is parallel; results are sorted afterwards, so output is stable
//! from run to run (the reference's grep order follows ripgrep's walk and varies).

pub(crate) mod glob;
pub(crate) mod grep;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::{ToolContext, ToolError};

/// How long one search may run.
pub const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The most output bytes a search collects before it gives up.
pub const MAX_COLLECTED_BYTES: usize = 20_000_000;

/// The directories of version-control systems, never listed by `glob`.
const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// Where a search starts and how its paths are spelled back to the model.
#[derive(Debug, Clone)]
pub(crate) struct SearchRoot {
    /// The session workspace, as spelled: absolute paths inside it are shown relative to it.
    cwd: PathBuf,
    /// The `path` argument as the model spelled it, if any.
    raw: Option<PathBuf>,
    /// What is walked: `raw` joined to the workspace, not normalised, so that every entry starts
    /// with it.
    pub walk: PathBuf,
}

impl SearchRoot {
    /// The root for an optional `path` argument; `tool` names the search in errors.
    pub fn new(tool: &str, cwd: &Path, raw: Option<&str>) -> Result<Self, ToolError> {
        if let Some(raw) = raw
            && raw.contains('\0')
        {
            return Err(search_error(
                "SEARCH_FAILED",
                format!("{tool} path contains a NUL byte, which no file name can hold"),
            ));
        }
        let raw = raw.map(PathBuf::from);
        let walk = raw
            .as_ref()
            .map_or_else(|| cwd.to_path_buf(), |r| cwd.join(r));
        if let Err(error) = std::fs::metadata(&walk) {
            // What the reference shows: ripgrep's exit status and its walk error, which names
            // the path as given.
            let shown = raw.as_deref().unwrap_or(cwd).display();
            return Err(search_error(
                "SEARCH_FAILED",
                format!(
                    "{tool} search failed (exit 2): rg: {shown}: IO error for operation on \
                     {shown}: {error}"
                ),
            ));
        }
        Ok(SearchRoot {
            cwd: cwd.to_path_buf(),
            raw,
            walk,
        })
    }

    /// How an entry of the walk is shown: under the spelling of a relative `path` argument (as
    /// `rg` prints it), else relative to the workspace when inside it, else absolute.
    pub fn show(&self, entry: &Path) -> String {
        let rel = entry.strip_prefix(&self.walk).unwrap_or(entry);
        match &self.raw {
            Some(raw) if raw.is_relative() => {
                if rel.as_os_str().is_empty() {
                    raw.display().to_string()
                } else {
                    raw.join(rel).display().to_string()
                }
            }
            _ => match entry.strip_prefix(&self.cwd) {
                Ok(inside) if inside.as_os_str().is_empty() => ".".to_owned(),
                Ok(inside) => inside.display().to_string(),
                Err(_) => entry.display().to_string(),
            },
        }
    }

    /// The base that `--glob`-style patterns are matched relative to: the workspace.
    pub fn glob_base(&self) -> &Path {
        &self.cwd
    }
}

/// A `SearchError` with a reference code.
pub(crate) fn search_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("SearchError", code, message)
}

/// The reference's text for a pattern the engine refuses.
pub(crate) fn rejected(tool: &str, detail: &str) -> ToolError {
    search_error(
        "SEARCH_INVALID_PATTERN",
        format!("{tool} pattern rejected by ripgrep: rg: {detail}"),
    )
}

/// The error of a search that collected more than [`MAX_COLLECTED_BYTES`].
pub(crate) fn overflow(tool: &str, what: &str) -> ToolError {
    search_error(
        "SEARCH_RAW_OUTPUT_OVERFLOW",
        format!(
            "{tool} produced more than {MAX_COLLECTED_BYTES} bytes of output; narrow {what} and retry"
        ),
    )
}

/// The error of a search stopped by its timeout or by the caller.
pub(crate) fn aborted(tool: &str) -> ToolError {
    search_error(
        "SEARCH_ABORTED",
        format!("{tool} was aborted before completion (tool timeout or caller cancellation)"),
    )
}

/// Set when a search should stop: its call timed out or was aborted.
#[derive(Debug, Clone, Default)]
pub(crate) struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Sets the flag when dropped, so a search whose call was abandoned stops walking.
struct StopOnDrop(StopFlag);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Runs `work` on a blocking thread, bounded by `timeout`. The work is told to stop (through the
/// flag it is given) when the timeout passes or the call is dropped.
pub(crate) async fn bounded<T: Send + 'static>(
    tool: &str,
    timeout: Duration,
    work: impl FnOnce(StopFlag) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let stop = StopFlag::default();
    let _guard = StopOnDrop(stop.clone());
    let run = crate::registry::blocking(tool, move || work(stop));
    match tokio::time::timeout(timeout, run).await {
        Ok(result) => result,
        Err(_) => Err(ToolError::coded(
            "ToolTimeoutError",
            "TOOL_TIMEOUT",
            format!("tool call timed out after {}ms", timeout.as_millis()),
        )),
    }
}

/// The threads a parallel walk uses: as many as ripgrep would, at most 12.
pub(crate) fn walk_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(12))
}

/// Saves a search's full result for the model to read; `None` when that fails (the capped
/// result then says it could not be saved, as in the reference).
pub(crate) fn save_full(ctx: &ToolContext, name: &str, content: &str) -> Option<PathBuf> {
    ctx.session.spill.save(name, content).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_as_the_model_spelled_the_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let ws = dir.path();
        let entry = ws.join("src/main.rs");

        let root = SearchRoot::new("glob", ws, None).unwrap();
        assert_eq!(root.show(&entry), "src/main.rs");

        let root = SearchRoot::new("glob", ws, Some("src")).unwrap();
        assert_eq!(root.show(&ws.join("src/main.rs")), "src/main.rs");
        assert_eq!(root.show(&ws.join("src")), "src");

        let root = SearchRoot::new("glob", ws, Some("./src/")).unwrap();
        assert_eq!(
            root.show(&ws.join("./src/").join("main.rs")),
            "./src/main.rs"
        );

        let abs = ws.join("src");
        let root = SearchRoot::new("glob", ws, abs.to_str()).unwrap();
        assert_eq!(root.show(&abs.join("main.rs")), "src/main.rs");
        let root = SearchRoot::new("glob", &ws.join("src"), ws.to_str()).unwrap();
        assert_eq!(
            root.show(&ws.join("other.rs")),
            ws.join("other.rs").display().to_string()
        );
    }

    #[test]
    fn a_missing_root_is_reported_as_ripgrep_reports_it() {
        let dir = tempfile::tempdir().unwrap();
        let error = SearchRoot::new("grep", dir.path(), Some("nope")).unwrap_err();
        assert_eq!(
            error.message,
            "grep search failed (exit 2): rg: nope: IO error for operation on nope: No such \
             file or directory (os error 2)"
        );
        assert_eq!(error.code(), Some("SEARCH_FAILED"));
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let error = SearchRoot::new("glob", dir.path(), Some("a.txt/x")).unwrap_err();
        assert_eq!(
            error.message,
            "glob search failed (exit 2): rg: a.txt/x: IO error for operation on a.txt/x: Not a \
             directory (os error 20)"
        );
    }

    #[tokio::test]
    async fn a_search_past_its_timeout_is_told_to_stop() {
        let (told_tx, told_rx) = std::sync::mpsc::channel();
        let error = bounded("grep", Duration::from_millis(1), move |stop| {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while !stop.is_set() {
                assert!(std::time::Instant::now() < deadline, "never told to stop");
                std::thread::sleep(Duration::from_millis(1));
            }
            told_tx.send(()).unwrap();
            Ok(())
        })
        .await
        .unwrap_err();
        assert_eq!(error.model_text(), "Error: tool call timed out after 1ms");
        assert_eq!(error.code(), Some("TOOL_TIMEOUT"));
        told_rx.recv().unwrap();
    }
}
