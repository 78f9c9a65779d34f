//! The lines of the change a call asks for ([`CallChange`]), signed, as every front end draws
//! a diff: the terminal UI colours them, the web app sends them to its page.

use std::time::{Duration, Instant};

use similar::DiffTag;
use similar::algorithms::{Capture, Compact, Replace, myers};

use crate::CallChange;

/// The largest change diffed line by line; a bigger one is shown as its new text, all added
/// (the model writes these arguments, and a diff of two large unrelated texts takes long).
const MAX_DIFFED_BYTES: usize = 256 * 1024;
/// How long one diff may take before it settles for a coarser answer.
const DIFF_TIME: Duration = Duration::from_millis(200);

/// What a line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffSign {
    Removed,
    Added,
    Kept,
}

impl DiffSign {
    /// `-`, `+` or a space, as a unified diff marks its lines.
    pub fn mark(self) -> char {
        match self {
            DiffSign::Removed => '-',
            DiffSign::Added => '+',
            DiffSign::Kept => ' ',
        }
    }
}

/// A change's first lines (without their line ends), and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeLines {
    pub lines: Vec<(DiffSign, String)>,
    pub more: usize,
}

impl CallChange<'_> {
    /// The change as at most `max` signed lines: the old text against the new line by line,
    /// or the new text all added when there is no old text (or the two are too large to diff).
    pub fn lines(&self, max: usize) -> ChangeLines {
        let old = (self.old).filter(|old| old.len() + self.new.len() <= MAX_DIFFED_BYTES);
        let mut lines: Vec<(DiffSign, String)> = match old {
            Some(old) => line_diff(old, self.new),
            None => (self.new.lines())
                .map(|line| (DiffSign::Added, line.to_owned()))
                .collect(),
        };
        let more = lines.len().saturating_sub(max);
        lines.truncate(max);
        ChangeLines { lines, more }
    }
}

/// `old` against `new` line by line, each line without its line end. Myers' algorithm is
/// called directly, not through `similar::TextDiff`, which compiles six algorithms for each
/// kind of text it could be given: this is the only diff dsh draws.
fn line_diff(old: &str, new: &str) -> Vec<(DiffSign, String)> {
    let (old, new) = (with_line_ends(old), with_line_ends(new));
    let mut ops = Compact::new(Replace::new(Capture::new()), &old, &new);
    let Ok(()) = myers::diff_deadline(
        &mut ops,
        &old,
        0..old.len(),
        &new,
        0..new.len(),
        Some(Instant::now() + DIFF_TIME),
    );
    let line = |sign, text: &str| (sign, text.trim_end_matches(['\n', '\r']).to_owned());
    let mut lines = Vec::new();
    for op in ops.into_inner().into_inner().into_ops() {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            lines.extend(old[old_range].iter().map(|text| line(DiffSign::Kept, text)));
            continue;
        }
        lines.extend(
            old[old_range]
                .iter()
                .map(|text| line(DiffSign::Removed, text)),
        );
        lines.extend(
            new[new_range]
                .iter()
                .map(|text| line(DiffSign::Added, text)),
        );
    }
    lines
}

/// `text`'s lines, each with its line end: `\n`, `\r\n`, or a lone `\r` (old Mac files),
/// so that no line drawn holds a carriage return.
fn with_line_ends(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let lone_cr = byte == b'\r' && bytes.get(i + 1) != Some(&b'\n');
        if byte == b'\n' || lone_cr {
            lines.push(&text[start..=i]);
            start = i + 1;
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change<'a>(old: Option<&'a str>, new: &'a str) -> CallChange<'a> {
        CallChange {
            path: "a.rs",
            old,
            new,
            whole_file: old.is_none(),
        }
    }

    /// The lines as a unified diff marks them.
    fn marked(change: &ChangeLines) -> Vec<(char, &str)> {
        (change.lines.iter())
            .map(|(sign, text)| (sign.mark(), text.as_str()))
            .collect()
    }

    #[test]
    fn an_edit_is_a_line_diff_and_a_write_all_added() {
        let edit = change(Some("a\nb\n"), "a\nc\n").lines(10);
        let marks = marked(&edit);
        assert_eq!(marks, [(' ', "a"), ('-', "b"), ('+', "c")]);
        assert_eq!(edit.more, 0);
        let write = change(None, "x\ny").lines(10);
        assert!(write.lines.iter().all(|(sign, _)| *sign == DiffSign::Added));
    }

    #[test]
    fn every_line_end_splits_lines_and_none_is_drawn() {
        let edit = change(Some("a\r\nb\rc\nd"), "a\r\nB\rc\nd\n").lines(10);
        let marks = marked(&edit);
        // The last line gained its line end: that is a change too.
        assert_eq!(
            marks,
            [
                (' ', "a"),
                ('-', "b"),
                ('+', "B"),
                (' ', "c"),
                ('-', "d"),
                ('+', "d")
            ]
        );
    }

    #[test]
    fn a_long_change_is_cut_and_counted() {
        let long = "l\n".repeat(500);
        let cut = change(None, &long).lines(400);
        assert_eq!((cut.lines.len(), cut.more), (400, 100));
    }

    #[test]
    fn texts_too_large_to_diff_are_shown_as_the_new_text() {
        let old = "a\n".repeat(MAX_DIFFED_BYTES / 2);
        let new = "b\n".repeat(MAX_DIFFED_BYTES / 2);
        let shown = change(Some(&old), &new).lines(5);
        assert!(
            shown
                .lines
                .iter()
                .all(|(sign, text)| *sign == DiffSign::Added && text == "b")
        );
    }
}
