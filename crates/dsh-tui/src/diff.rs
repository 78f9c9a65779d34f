//! Edits and writes as coloured diffs, from the call's own arguments: what the model asked
//! to replace and with what.

use dsh_core::{CallChange, DiffSign};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// The most diff lines a cell shows; the rest is counted.
pub const MAX_DIFF_LINES: usize = 40;

/// The diff of the change a call asks for ([`dsh_core::CallView::change`]), coloured.
pub fn change_diff(change: &CallChange<'_>) -> Vec<Line<'static>> {
    let shown = change.lines(MAX_DIFF_LINES);
    let mut lines: Vec<Line<'static>> = (shown.lines.into_iter())
        .map(|(sign, text)| {
            let style = Style::new().fg(match sign {
                DiffSign::Removed => Color::Red,
                DiffSign::Added => Color::Green,
                DiffSign::Kept => Color::DarkGray,
            });
            Line::from(vec![
                Span::styled(format!("    {} ", sign.mark()), style),
                Span::styled(text, style),
            ])
        })
        .collect();
    if shown.more > 0 {
        lines.push(Line::styled(
            format!("    … {} more lines", shown.more),
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
