//! Edits and writes as coloured diffs, from the call's own arguments: what the model asked
//! to replace and with what.

use dsh_core::CallChange;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

/// The most diff lines a cell shows; the rest is counted.
pub const MAX_DIFF_LINES: usize = 40;

/// The diff of the change a call asks for ([`dsh_core::CallView::change`]).
pub fn change_diff(change: &CallChange<'_>) -> Vec<Line<'static>> {
    match change.old {
        Some(old) => diff(old, change.new),
        None => added(change.new),
    }
}

fn styled(tag: ChangeTag, text: &str) -> Line<'static> {
    let (sign, style) = match tag {
        ChangeTag::Delete => ("-", Style::new().fg(Color::Red)),
        ChangeTag::Insert => ("+", Style::new().fg(Color::Green)),
        ChangeTag::Equal => (" ", Style::new().fg(Color::DarkGray)),
    };
    Line::from(vec![
        Span::styled(format!("    {sign} "), style),
        Span::styled(text.trim_end_matches(['\n', '\r']).to_owned(), style),
    ])
}

/// A line diff of `old` against `new`.
pub fn diff(old: &str, new: &str) -> Vec<Line<'static>> {
    let changes = TextDiff::from_lines(old, new);
    let lines: Vec<Line<'static>> = changes
        .iter_all_changes()
        .map(|change| styled(change.tag(), change.value()))
        .collect();
    bounded(lines)
}

/// A new file's (or inserted text's) lines, all added.
fn added(content: &str) -> Vec<Line<'static>> {
    bounded(
        content
            .lines()
            .map(|line| styled(ChangeTag::Insert, line))
            .collect(),
    )
}

fn bounded(mut lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    if lines.len() > MAX_DIFF_LINES {
        let more = lines.len() - MAX_DIFF_LINES;
        lines.truncate(MAX_DIFF_LINES);
        lines.push(Line::styled(
            format!("    … {more} more lines"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::plain;

    #[test]
    fn an_edit_is_a_line_diff() {
        let lines = change_diff(&CallChange {
            path: "a.rs",
            old: Some("a\nb\nc\n"),
            new: "a\nB\nc\n",
            whole_file: false,
        });
        assert_eq!(plain(&lines), "      a\n    - b\n    + B\n      c");
        assert_eq!(lines[1].spans[0].style.fg, Some(Color::Red));
        assert_eq!(lines[2].spans[0].style.fg, Some(Color::Green));
    }

    #[test]
    fn a_long_write_is_cut_and_counted() {
        let content: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let lines = change_diff(&CallChange {
            path: "x",
            old: None,
            new: &content,
            whole_file: true,
        });
        assert_eq!(lines.len(), MAX_DIFF_LINES + 1);
        assert_eq!(plain(&lines[MAX_DIFF_LINES..]), "    … 10 more lines");
    }
}
