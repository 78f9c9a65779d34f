//! The `glob` tool: files whose paths match a pattern, oldest first.
//!
//! Semantics are those of `rg --files --glob=<pattern> --sort=modified --no-ignore --hidden`
//! with the version-control folders excluded: hidden and ignored files are listed, directories
//! and symlinks never are, a pattern without `/` matches base names at any depth and one with
//! `/` is anchored at the workspace.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};

use super::{
    MAX_COLLECTED_BYTES, SEARCH_TIMEOUT, SearchRoot, StopFlag, VCS_DIRS, aborted, bounded,
    overflow, rejected, save_full, walk_threads,
};
use crate::schema::{Param, ParamType, Parameters};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The most paths one result lists.
pub const MAX_PATHS: usize = 100;

/// The `glob` tool.
pub struct Glob {
    parameters: Parameters,
}

impl Default for Glob {
    fn default() -> Self {
        Glob {
            parameters: Parameters::new(vec![
                Param::required(
                    "pattern",
                    ParamType::String,
                    "Glob to match paths against, such as \"**/*.rs\" or \"src/*.toml\". Without a \
                     \"/\" it matches file names at any depth (\"*.md\" finds every Markdown file); \
                     with one it is anchored at the workspace.",
                ),
                Param::optional(
                    "path",
                    ParamType::String,
                    "Folder to search instead of the workspace; a relative path is taken from the \
                     workspace.",
                ),
            ]),
        }
    }
}

impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Search, "Find")
            .subject("pattern")
            .folder("path")
            .hook_names(&["Glob"])
            .read_only()
    }

    fn description(&self) -> &str {
        "List the files whose paths match a glob pattern, oldest modification first. Hidden and \
         git-ignored files are included, version-control folders are not, and directories are \
         never listed. At most 100 paths come back; past that the result says how many matched \
         and where the full sorted list was saved."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Find files by name with `glob` rather than `find` or `ls -R` in the shell. A pattern \
             without \"/\" matches names anywhere in the tree, so \"*\" lists every file, not the \
             top level.",
        )
    }

    fn parallel_safe(&self) -> bool {
        // It only reads; the reference runs it alone, which buys nothing.
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let pattern = args.str("pattern").unwrap_or_default().to_owned();
            if pattern.trim().is_empty() {
                return Err(ToolError::plain("pattern must be a non-empty string"));
            }
            let raw = args.str("path");
            if raw.is_some_and(|p| p.trim().is_empty()) {
                return Err(ToolError::plain(
                    "path must be a non-empty string when given",
                ));
            }
            let root = SearchRoot::new("glob", &ctx.cwd, raw)?;
            let matcher = overrides(&root, &pattern)?;
            let found = {
                let root = root.clone();
                bounded("glob", SEARCH_TIMEOUT, move |stop| {
                    list_files(&root, matcher, &stop)
                })
                .await?
            };
            Ok(ToolOutput::text(render(ctx, &root, found)))
        })
    }
}

/// The pattern plus the version-control exclusions, matched as `rg --glob` matches them.
fn overrides(root: &SearchRoot, pattern: &str) -> Result<Override, ToolError> {
    let mut builder = OverrideBuilder::new(root.glob_base());
    builder
        .add(pattern)
        .map_err(|error| rejected("glob", &error.to_string()))?;
    for dir in VCS_DIRS {
        for exclusion in [format!("!**/{dir}"), format!("!**/{dir}/**")] {
            builder
                .add(&exclusion)
                .map_err(|error| rejected("glob", &error.to_string()))?;
        }
    }
    builder
        .build()
        .map_err(|error| rejected("glob", &error.to_string()))
}

/// Every matching regular file with its modification time, oldest first (ties by path).
fn list_files(
    root: &SearchRoot,
    matcher: Override,
    stop: &StopFlag,
) -> Result<Vec<PathBuf>, ToolError> {
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    let collected = std::sync::atomic::AtomicUsize::new(0);
    let over_cap = std::sync::atomic::AtomicBool::new(false);
    WalkBuilder::new(&root.walk)
        .standard_filters(false)
        .overrides(matcher)
        .threads(walk_threads())
        .build_parallel()
        .run(|| {
            let mut batch = Batch {
                local: Vec::new(),
                shared: &found,
            };
            let collected = &collected;
            let over_cap = &over_cap;
            Box::new(move |entry| {
                if stop.is_set() {
                    return WalkState::Quit;
                }
                // Unreadable folders are skipped, as they are by `rg` (which still lists the rest).
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                let bytes = entry.path().as_os_str().len() + 1;
                let total = collected.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
                if total + bytes > MAX_COLLECTED_BYTES {
                    over_cap.store(true, std::sync::atomic::Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                batch.local.push((modified, entry.into_path()));
                WalkState::Continue
            })
        });
    if over_cap.into_inner() {
        return Err(overflow("glob", "pattern or path"));
    }
    if stop.is_set() {
        return Err(aborted("glob"));
    }
    let mut found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort_unstable();
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// A walker thread's findings, handed over in one lock when the thread ends.
struct Batch<'s, T> {
    local: Vec<T>,
    shared: &'s Mutex<Vec<T>>,
}

impl<T> Drop for Batch<'_, T> {
    fn drop(&mut self) {
        let mut shared = self
            .shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.append(&mut self.local);
    }
}

fn render(ctx: &ToolContext, root: &SearchRoot, found: Vec<PathBuf>) -> String {
    if found.is_empty() {
        return "No files found".to_owned();
    }
    let shown: Vec<String> = found.iter().map(|path| root.show(path)).collect();
    if shown.len() <= MAX_PATHS {
        return shown.join("\n");
    }
    let recovery = match save_full(ctx, "glob-results.txt", &shown.join("\n")) {
        Some(path) => format!(
            "Full sorted result stored at: {}. {}",
            path.display(),
            crate::spill::RETRIEVAL_HINT
        ),
        None => {
            "The complete result could not be saved; narrow pattern or path to see more.".to_owned()
        }
    };
    format!(
        "{}\n\n(Showing {MAX_PATHS} of {} paths. {recovery})",
        shown[..MAX_PATHS].join("\n"),
        shown.len()
    )
}
