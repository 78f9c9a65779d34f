//! An edit's or a write's change as diff lines for the page: `[sign, text]` pairs (`-`, `+`,
//! or a space for context), at most [`MAX_LINES`], then how many more there were; and, where
//! it can be told, the line of the file the change starts at (`start`), from which the page
//! numbers the old and the new lines as a code review does.

use std::path::Path;

use dsh_core::CallChange;
use serde_json::{Value, json};

/// The most lines a diff shows.
const MAX_LINES: usize = 400;
/// The largest file read to find where a change starts: past it the lines go unnumbered.
const MAX_LOOKED_AT: u64 = 4 * 1024 * 1024;

/// The lines of the change, as the page draws them; `cwd` is what a relative path is under.
pub(crate) fn lines(change: &CallChange<'_>, cwd: &Path) -> Value {
    let shown = change.lines(MAX_LINES);
    let mut lines = json!({
        "lines": (shown.lines.iter())
            .map(|(sign, text)| json!([sign.mark().to_string(), text]))
            .collect::<Vec<_>>(),
        "more": shown.more,
    });
    if let Some(start) = start_line(change, cwd) {
        lines["start"] = json!(start);
    }
    lines
}

/// The line of the file the change starts at: 1 for a whole file; for a piece of one, where
/// the text it replaces is in the file (before the call ran), or else where the text it wrote
/// is (after). `None` when the file no longer holds either, or cannot be read.
fn start_line(change: &CallChange<'_>, cwd: &Path) -> Option<usize> {
    if change.whole_file {
        return Some(1);
    }
    let path = cwd.join(change.path);
    let size = std::fs::metadata(&path).ok()?.len();
    if size > MAX_LOOKED_AT {
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let at = [change.old, Some(change.new)]
        .into_iter()
        .flatten()
        .filter(|piece| !piece.is_empty())
        .find_map(|piece| text.find(piece))?;
    Some(text[..at].matches('\n').count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_lines_with_their_signs() {
        let change = CallChange {
            path: "a",
            old: Some("a\nb\n"),
            new: "a\nc\n",
            whole_file: false,
        };
        assert_eq!(
            lines(&change, Path::new("/nonexistent")),
            json!({"lines": [[" ", "a"], ["-", "b"], ["+", "c"]], "more": 0})
        );
    }

    #[test]
    fn a_change_starts_where_its_text_is_in_the_file() {
        // No temp-dir crate here: a folder of this test's own, removed at the end.
        let dir = std::env::temp_dir().join(format!("dsh-web-diff-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.rs"), "one\ntwo\nthree\nfour\n").unwrap();
        let piece = |old, new| CallChange {
            path: "f.rs",
            old,
            new,
            whole_file: false,
        };
        // Before the call ran: the text it replaces; after: the text it wrote.
        let before = lines(&piece(Some("three\n"), "3\n"), &dir);
        assert_eq!(before["start"], 3);
        let after = lines(&piece(Some("gone\n"), "two\nthree"), &dir);
        assert_eq!(after["start"], 2);
        let lost = lines(&piece(Some("gone\n"), "also gone"), &dir);
        assert!(lost.get("start").is_none(), "{lost}");
        let whole = CallChange {
            whole_file: true,
            ..piece(None, "new file\n")
        };
        assert_eq!(lines(&whole, &dir)["start"], 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
