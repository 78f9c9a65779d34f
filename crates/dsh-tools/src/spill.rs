//! Spill: results too long to send whole are saved to a private file, and the model gets a
//! head and a tail with a note saying where the rest is.
//!
//! Spill files live in the session's folder (`<session>/spill/`), where `read` and `grep` can
//! reach them; the folder is owner-only (0700) and each file 0600.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most bytes a tool result is sent with; longer ones are spilled.
pub const MAX_INLINE_BYTES: usize = 50_000;
/// Told to the model with every spill location.
pub const RETRIEVAL_HINT: &str =
    "Use read with offset/limit, or grep this path to search within it.";

/// Where a session's spill files go.
#[derive(Debug, Clone)]
pub struct SpillStore {
    dir: PathBuf,
}

impl SpillStore {
    pub fn new(dir: PathBuf) -> Self {
        SpillStore { dir }
    }

    /// The folder spill files go in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves `content` under a fresh name ending in `name`; returns the file's path.
    pub fn save(&self, name: &str, content: &str) -> std::io::Result<PathBuf> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let path = self
            .dir
            .join(format!("{}-{}", &token[..12], safe_name(name)));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        file.write_all(content.as_bytes())?;
        Ok(path)
    }
}

fn safe_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() || cleaned.chars().all(|c| c == '.') {
        "result".into()
    } else {
        cleaned
    }
}

/// A result over [`MAX_INLINE_BYTES`] as the model gets it: head, a marker, tail, and the note
/// (`Omitted N bytes. Full formatted result stored at: <path>. ...`). `None` when it fits or
/// could not be saved (the full result is then sent as it is).
pub fn spill_preview(store: &SpillStore, tool: &str, text: &str) -> Option<String> {
    if text.len() <= MAX_INLINE_BYTES {
        return None;
    }
    let path = store.save(&format!("{tool}.txt"), text).ok()?;
    Some(preview_with_notice(text, &path))
}

fn preview_with_notice(text: &str, path: &Path) -> String {
    let notice = |omitted: usize| {
        format!(
            "(Omitted {omitted} bytes. Full formatted result stored at: {}. {RETRIEVAL_HINT})",
            path.display()
        )
    };
    let marker = "\n[... middle of the result omitted ...]\n";
    // Priced with the largest count the notice can show, plus the blank line before it.
    let reserve = notice(text.len()).len() + 2 + marker.len();
    let budget = MAX_INLINE_BYTES.saturating_sub(reserve);
    let head = floor_boundary(text, budget.div_ceil(2));
    let tail = ceil_boundary(text, text.len() - budget / 2);
    let omitted = tail - head;
    format!(
        "{}{marker}{}\n\n{}",
        &text[..head],
        &text[tail..],
        notice(omitted)
    )
}

/// The largest char boundary at or below `at`.
pub(crate) fn floor_boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary at or above `at`.
pub(crate) fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while at < text.len() && !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_are_not_spilled() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            spill_preview(&SpillStore::new(dir.path().join("s")), "t", "short"),
            None
        );
    }

    #[test]
    fn large_results_keep_head_and_tail_within_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let store = SpillStore::new(dir.path().join("spill"));
        let text: String = (0..20_000).map(|i| format!("{i}é\n")).collect();
        let out = spill_preview(&store, "bash", &text).unwrap();
        assert!(out.len() <= MAX_INLINE_BYTES);
        assert!(out.starts_with("0é\n1é\n"));
        let (body, note) = out.rsplit_once("\n\n").unwrap();
        assert!(body.ends_with("19999é\n"));
        assert!(note.starts_with("(Omitted "));
        let path = note
            .split("stored at: ")
            .nth(1)
            .unwrap()
            .split(". Use read")
            .next()
            .unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(path.ends_with("-bash.txt"));
    }
}
