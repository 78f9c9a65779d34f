//! The lines of the change a call asks for ([`CallChange`]), signed, as every front end draws
//! a diff: the terminal UI colours them, the web app sends them to its page.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

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
            Some(old) => TextDiff::configure()
                .timeout(DIFF_TIME)
                .diff_lines(old, self.new)
                .iter_all_changes()
                .map(|change| {
                    let sign = match change.tag() {
                        ChangeTag::Delete => DiffSign::Removed,
                        ChangeTag::Insert => DiffSign::Added,
                        ChangeTag::Equal => DiffSign::Kept,
                    };
                    (
                        sign,
                        change.value().trim_end_matches(['\n', '\r']).to_owned(),
                    )
                })
                .collect(),
            None => (self.new.lines())
                .map(|line| (DiffSign::Added, line.to_owned()))
                .collect(),
        };
        let more = lines.len().saturating_sub(max);
        lines.truncate(max);
        ChangeLines { lines, more }
    }
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

    #[test]
    fn an_edit_is_a_line_diff_and_a_write_all_added() {
        let edit = change(Some("a\nb\n"), "a\nc\n").lines(10);
        let marks: Vec<(char, &str)> = (edit.lines.iter())
            .map(|(sign, text)| (sign.mark(), text.as_str()))
            .collect();
        assert_eq!(marks, [(' ', "a"), ('-', "b"), ('+', "c")]);
        assert_eq!(edit.more, 0);
        let write = change(None, "x\ny").lines(10);
        assert!(write.lines.iter().all(|(sign, _)| *sign == DiffSign::Added));
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
