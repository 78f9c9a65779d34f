//! The `grep` tool: lines that match a regular expression, grouped by file.
//!
//! Semantics are those of `rg --regexp=<pattern> [--glob=<include>]` with no other flags:
//! `.gitignore`, `.ignore` and `.rgignore` are respected, hidden files are skipped, matching is
//! case-sensitive Rust regex syntax, a file with a NUL byte is binary and its search stops there,
//! and several hits on one line are one match. Files are listed in path order.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};
use ignore::{WalkBuilder, WalkState};

use super::{
    MAX_COLLECTED_BYTES, SEARCH_TIMEOUT, SearchRoot, StopFlag, aborted, bounded, overflow,
    rejected, save_full, walk_threads,
};
use crate::schema::{Param, ParamType, Parameters};
use crate::spill::floor_boundary;
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// The most matches one result shows.
pub const MAX_MATCHES: usize = 250;
/// The longest line shown, in bytes.
pub const MAX_LINE_BYTES: usize = 2000;
/// The most a searcher may hold of one file at once: it keeps a whole line in memory, so a
/// file with a longer line (a 300 MB one-line dump) is skipped and named in the result rather
/// than taking dsh's memory with it.
pub const MAX_HELD_LINE_BYTES: usize = 16 << 20;

/// The `grep` tool.
pub struct Grep {
    parameters: Parameters,
}

impl Default for Grep {
    fn default() -> Self {
        Grep {
            parameters: Parameters::new(vec![
                Param::required(
                    "pattern",
                    ParamType::String,
                    "Regular expression, in ripgrep's (Rust regex) syntax.",
                ),
                Param::optional(
                    "path",
                    ParamType::String,
                    "File or folder to search instead of the workspace; a relative path is taken \
                     from the workspace.",
                ),
                Param::optional(
                    "include",
                    ParamType::String,
                    "A single glob limiting which files are searched, such as \"*.rs\" or \
                     \"*.{ts,tsx}\". One pattern, not a list; it cannot exclude.",
                ),
            ]),
        }
    }
}

impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Search, "Search")
            .subject("pattern")
            .folder("path")
            .hook_names(&["Grep"])
            .read_only()
    }

    fn description(&self) -> &str {
        "Search file contents for a regular expression and get the matching lines with their \
         numbers, grouped by file. Git-ignored and hidden files are skipped unless named by path. \
         The first 250 matches come back; a larger result says where the complete list was saved."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Search file contents with `grep` rather than `grep` or `rg` in the shell, then `read` \
             the matched file around the line you need.",
        )
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let pattern = args.str("pattern").unwrap_or_default().to_owned();
            if pattern.is_empty() {
                return Err(ToolError::plain("pattern must be a non-empty string"));
            }
            let raw = args.str("path");
            if raw.is_some_and(|p| p.trim().is_empty()) {
                return Err(ToolError::plain(
                    "path must be a non-empty string when given",
                ));
            }
            let include = args.str("include");
            if let Some(include) = include {
                check_include(include)?;
            }
            let root = SearchRoot::new("grep", &ctx.cwd, raw)?;
            let filter = include_filter(&root, include)?;
            let matcher = RegexMatcherBuilder::new()
                .line_terminator(Some(b'\n'))
                .build(&pattern)
                .map_err(|error| rejected("grep", &suggest_pcre2(error.to_string())))?;
            let files = {
                let root = root.clone();
                let redactor = ctx.session.redactor.clone();
                bounded("grep", SEARCH_TIMEOUT, move |stop| {
                    search(&root, filter, &matcher, &stop, redactor.as_ref())
                })
                .await?
            };
            Ok(ToolOutput::text(render(ctx, files)))
        })
    }
}

fn check_include(include: &str) -> Result<(), ToolError> {
    if include.trim().is_empty() {
        return Err(ToolError::plain(
            "include must be a non-empty glob when given",
        ));
    }
    if include.starts_with('!') {
        return Err(ToolError::plain(
            "include must be a positive glob filter; negated patterns (\"!…\") are not supported",
        ));
    }
    let mut depth = 0usize;
    for c in include.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                return Err(ToolError::plain(
                    "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn include_filter(root: &SearchRoot, include: Option<&str>) -> Result<Override, ToolError> {
    let mut builder = OverrideBuilder::new(root.glob_base());
    if let Some(include) = include {
        builder
            .add(include)
            .map_err(|error| rejected("grep", &error.to_string()))?;
    }
    builder
        .build()
        .map_err(|error| rejected("grep", &error.to_string()))
}

/// ripgrep's advice for the constructs its default engine lacks.
fn suggest_pcre2(message: String) -> String {
    if message.contains("backreferences") || message.contains("look-around") {
        format!(
            "{message}\n\nConsider enabling PCRE2 with the --pcre2 flag, which can handle \
             backreferences\nand look-around."
        )
    } else {
        message
    }
}

/// The matches of one file.
#[derive(Debug)]
struct FileMatches {
    shown: String,
    /// Line number and the line as shown (cut, terminator removed).
    lines: Vec<(u64, String)>,
}

/// Shared by the walker threads.
struct Progress<'a> {
    found: &'a Mutex<Vec<FileMatches>>,
    collected: AtomicUsize,
    over_cap: AtomicBool,
    stop: &'a StopFlag,
    /// A line cut in the middle of a secret must not show its start.
    redactor: Option<&'a crate::Redactor>,
    /// Files left (partly) unsearched for a line over [`MAX_HELD_LINE_BYTES`], as shown.
    skipped: Mutex<Vec<String>>,
}

fn search(
    root: &SearchRoot,
    filter: Override,
    matcher: &RegexMatcher,
    stop: &StopFlag,
    redactor: Option<&crate::Redactor>,
) -> Result<Found, ToolError> {
    let found = Mutex::new(Vec::new());
    let progress = Progress {
        found: &found,
        collected: AtomicUsize::new(0),
        over_cap: AtomicBool::new(false),
        stop,
        redactor,
        skipped: Mutex::new(Vec::new()),
    };
    WalkBuilder::new(&root.walk)
        .add_custom_ignore_filename(".rgignore")
        .overrides(filter)
        .threads(walk_threads())
        .build_parallel()
        .run(|| {
            let progress = &progress;
            // A folder walk treats a NUL byte as the end of a binary file's text; a file named
            // by `path` is searched whole, NULs read as line ends (ripgrep's two modes).
            let mut walked = searcher(BinaryDetection::quit(b'\0'));
            let mut explicit = searcher(BinaryDetection::convert(b'\0'));
            let matcher = matcher.clone();
            Box::new(move |entry| {
                if progress.stop.is_set() || progress.over_cap.load(Ordering::Relaxed) {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let explicit_file = entry.depth() == 0;
                let regular = entry.file_type().is_some_and(|t| t.is_file());
                if !(regular || explicit_file && entry.path().is_file()) {
                    return WalkState::Continue;
                }
                let searcher = if explicit_file {
                    &mut explicit
                } else {
                    &mut walked
                };
                let mut sink = Collect {
                    lines: Vec::new(),
                    progress,
                };
                // An unreadable file is skipped, as `rg` skips it (the rest is still searched);
                // one with a line too long to hold is named in the result.
                if let Err(error) = searcher.search_path(&matcher, entry.path(), &mut sink)
                    && error.to_string().contains("allocation limit")
                {
                    progress
                        .skipped
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(root.show(entry.path()));
                }
                if !sink.lines.is_empty() {
                    let shown = root.show(entry.path());
                    let mut found = progress
                        .found
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    found.push(FileMatches {
                        shown,
                        lines: std::mem::take(&mut sink.lines),
                    });
                }
                WalkState::Continue
            })
        });
    if progress.over_cap.load(Ordering::Relaxed) {
        return Err(overflow("grep", "pattern, path, or include"));
    }
    if stop.is_set() {
        return Err(aborted("grep"));
    }
    let mut skipped =
        (progress.skipped.into_inner()).unwrap_or_else(std::sync::PoisonError::into_inner);
    skipped.sort_unstable();
    let mut files = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    files.sort_unstable_by(|a, b| a.shown.cmp(&b.shown));
    Ok(Found { files, skipped })
}

/// What a search found: the matches of each file, and the files it could not search whole.
#[derive(Debug)]
struct Found {
    files: Vec<FileMatches>,
    skipped: Vec<String>,
}

fn searcher(binary: BinaryDetection) -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(binary)
        .heap_limit(Some(MAX_HELD_LINE_BYTES))
        .build()
}

/// Collects one file's matching lines.
struct Collect<'p, 'a> {
    lines: Vec<(u64, String)>,
    progress: &'p Progress<'a>,
}

impl Sink for Collect<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.progress.stop.is_set() {
            return Ok(false);
        }
        let first = mat.line_number().unwrap_or(0);
        for (n, line) in (first..).zip(mat.lines()) {
            let shown = preview(line, self.progress.redactor);
            let bytes = shown.len() + 16;
            let total = self.progress.collected.fetch_add(bytes, Ordering::Relaxed);
            if total + bytes > MAX_COLLECTED_BYTES {
                self.progress.over_cap.store(true, Ordering::Relaxed);
                return Ok(false);
            }
            self.lines.push((n, shown));
        }
        Ok(true)
    }
}

/// A matched line as shown: without its line end, cut to [`MAX_LINE_BYTES`] at a character
/// boundary.
fn preview(line: &[u8], redactor: Option<&crate::Redactor>) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        return "(line is not valid UTF-8)".to_owned();
    };
    if text.len() <= MAX_LINE_BYTES {
        return text.to_owned();
    }
    let kept = &text[..floor_boundary(text, MAX_LINE_BYTES)];
    let kept = redactor.map_or(kept, |redactor| redactor.before_cut(kept));
    format!("{kept} (line truncated)")
}

fn render(ctx: &ToolContext, found: Found) -> String {
    let mut text = matches_text(ctx, &found.files);
    if !found.skipped.is_empty() {
        text.push_str(&format!(
            "\n\n(Not searched past a line longer than {} MiB, which grep does not hold in \
             memory: {}. Search such a file with bash, for example grep -o with a bounded \
             context around the pattern.)",
            MAX_HELD_LINE_BYTES >> 20,
            found.skipped.join(", ")
        ));
    }
    text
}

fn matches_text(ctx: &ToolContext, files: &[FileMatches]) -> String {
    let total: usize = files.iter().map(|f| f.lines.len()).sum();
    if total == 0 {
        return "No matches found".to_owned();
    }
    if total <= MAX_MATCHES {
        let noun = if total == 1 { "match" } else { "matches" };
        return format!("Found {total} {noun}\n\n{}", groups(files, usize::MAX));
    }
    let full = format!("Found {total} matches\n\n{}", groups(files, usize::MAX));
    let recovery = match save_full(ctx, "grep-results.txt", &full) {
        Some(path) => format!(
            "Full grep result stored at: {}. {}",
            path.display(),
            crate::spill::RETRIEVAL_HINT
        ),
        None => "The complete result could not be saved; narrow pattern, path, or include to \
                 see more."
            .to_owned(),
    };
    format!(
        "Found {MAX_MATCHES} of {total} matches\n\n{}\n\n({recovery})",
        groups(files, MAX_MATCHES)
    )
}

/// The first `limit` matches, a block per file: the path, then `Line n: text` rows.
fn groups(files: &[FileMatches], limit: usize) -> String {
    let mut out = String::new();
    let mut left = limit;
    for file in files {
        if left == 0 {
            break;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&file.shown);
        for (n, text) in file.lines.iter().take(left) {
            out.push_str(&format!("\nLine {n}: {text}"));
        }
        left = left.saturating_sub(file.lines.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_foreign_lines_are_previewed() {
        assert_eq!(preview(b"abc\r\n", None), "abc");
        assert_eq!(preview(b"\xff\xfe\n", None), "(line is not valid UTF-8)");
        let long = "é".repeat(1500);
        let shown = preview(long.as_bytes(), None);
        assert_eq!(shown, format!("{} (line truncated)", "é".repeat(1000)));
    }

    #[test]
    fn include_must_be_one_positive_glob() {
        assert!(check_include("*.{ts,tsx}").is_ok());
        for (bad, text) in [
            ("  ", "include must be a non-empty glob when given"),
            (
                "!*.rs",
                "include must be a positive glob filter; negated patterns (\"!…\") are not supported",
            ),
            (
                "*.ts,*.js",
                "include must be one glob, not a comma-separated list (use {a,b} alternation instead)",
            ),
        ] {
            assert_eq!(check_include(bad).unwrap_err().message, text);
        }
    }

    #[test]
    fn look_around_errors_carry_ripgreps_advice() {
        let text = suggest_pcre2("error: look-around is not supported".into());
        assert!(text.ends_with("backreferences\nand look-around."));
        assert_eq!(
            suggest_pcre2("error: unclosed group".into()),
            "error: unclosed group"
        );
    }
}
