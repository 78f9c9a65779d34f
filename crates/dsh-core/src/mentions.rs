//! `@` mentions: the workspace's files (as ripgrep would list them: ignore files respected,
//! hidden files skipped), matched fuzzily against what follows the `@`. The terminal UI and
//! the web app complete mentions from the same index.

use std::path::Path;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// The most files indexed: a bigger tree is cut, and the popup says so.
pub const MAX_FILES: usize = 100_000;
/// The most matches shown.
pub const SHOWN: usize = 6;

/// The workspace's file paths, relative and with `/` separators.
#[derive(Debug, Default)]
pub struct FileIndex {
    paths: Vec<String>,
    pub truncated: bool,
}

impl FileIndex {
    /// Lists the files under `root` (a blocking walk: run it off the UI's thread).
    pub fn build(root: &Path) -> FileIndex {
        let mut index = FileIndex::default();
        let walk = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .git_global(true)
            .git_exclude(true)
            .require_git(false)
            .build();
        for entry in walk.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if index.paths.len() == MAX_FILES {
                index.truncated = true;
                break;
            }
            if let Ok(relative) = entry.path().strip_prefix(root) {
                index
                    .paths
                    .push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
        index.paths.sort();
        index
    }

    /// The best matches for `query`, best first; an empty query lists the first files.
    pub fn matches(&self, query: &str) -> Vec<String> {
        if query.is_empty() {
            return self.paths.iter().take(SHOWN).cloned().collect();
        }
        let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
        let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
        let mut found = pattern.match_list(self.paths.iter(), &mut matcher);
        // Best score first; among equals the shorter path, then the name.
        found.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(a.0.len().cmp(&b.0.len()))
                .then(a.0.cmp(b.0))
        });
        found
            .into_iter()
            .take(SHOWN)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Whether the index holds no file.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// How many files the index holds.
    pub fn len(&self) -> usize {
        self.paths.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_and_hidden_files_are_left_out_and_matches_are_fuzzy() {
        let dir = tempfile::tempdir().unwrap();
        let write = |p: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        };
        write("src/main.rs");
        write("src/lib.rs");
        write("docs/manual.md");
        write("target/debug/main.rs");
        write(".secret/main.rs");
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let index = FileIndex::build(dir.path());
        assert_eq!(index.len(), 3, "{:?}", index.paths);
        assert_eq!(index.matches("smain")[0], "src/main.rs");
        assert_eq!(index.matches("man"), ["docs/manual.md", "src/main.rs"]);
        assert!(index.matches("zzz").is_empty());
    }
}
