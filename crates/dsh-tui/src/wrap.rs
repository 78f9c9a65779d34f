//! Wrapping styled lines to the terminal's width ourselves, so that a cell's height is known
//! before it is written to the scrollback.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// `lines` wrapped to `width` columns: at the last space that fits, else mid-word. Styles are
/// kept; a wrapped line's continuation starts where the text resumes.
pub fn wrap_lines(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out = Vec::new();
    for line in lines {
        let cells: Vec<(char, Style)> = line
            .spans
            .iter()
            .flat_map(|span| {
                let style = line.style.patch(span.style);
                span.content.chars().map(move |c| (c, style))
            })
            .filter(|(c, _)| *c != '\n' && *c != '\r')
            .collect();
        // Rows after the first line up under the text, past the line's marker ("  │ ",
        // "› ", "• ", "1. "), so a wrapped result still reads as one.
        let indent = hanging_indent(&cells).min(width / 2);
        let pad: Vec<(char, Style)> = vec![(' ', Style::default()); indent];
        let mut start = 0;
        let mut room = width;
        loop {
            let (end, next) = break_at(&cells[start..], room);
            let row = &cells[start..start + end];
            if start == 0 {
                out.push(to_line(row));
            } else {
                out.push(to_line(&[pad.as_slice(), row].concat()));
            }
            if start + next >= cells.len() {
                break;
            }
            start += next;
            room = width - indent;
        }
    }
    out
}

/// The columns of a line's leading marker: spaces, at most one marker (a bullet, a box
/// character, a number and a dot, a diff sign), then spaces.
fn hanging_indent(cells: &[(char, Style)]) -> usize {
    let chars: Vec<char> = cells.iter().map(|(c, _)| *c).collect();
    let mut i = chars.iter().take_while(|c| **c == ' ').count();
    let marker_start = i;
    if chars.get(i).is_some_and(|c| "│›•✗└⏺■·◐☐☑+-".contains(*c)) {
        i += 1;
    } else {
        let digits = chars[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 && chars.get(i + digits) == Some(&'.') {
            i += digits + 1;
        }
    }
    let spaces = chars[i..].iter().take_while(|c| **c == ' ').count();
    if i > marker_start && spaces == 0 {
        // A marker not followed by a space is text ("-1", "+x").
        return marker_start;
    }
    chars[..i + spaces]
        .iter()
        .map(|c| c.width().unwrap_or(0))
        .sum()
}

/// Where the row starting at `cells` ends, and where the next row starts (past a space
/// broken at).
fn break_at(cells: &[(char, Style)], width: usize) -> (usize, usize) {
    let mut used = 0;
    let mut last_space = None;
    for (i, (c, _)) in cells.iter().enumerate() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            if *c == ' ' && i > 0 {
                return (i, i + 1);
            }
            return match last_space {
                Some(space) if space > 0 => (space, space + 1),
                _ => (i.max(1), i.max(1)),
            };
        }
        if *c == ' ' {
            last_space = Some(i);
        }
        used += w;
    }
    (cells.len(), cells.len())
}

fn to_line(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, s) in cells {
        if style.is_some_and(|st| st != *s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(*s);
        text.push(*c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans)
}

/// The plain text of lines, one per row: what tests read.
#[cfg(test)]
pub fn plain(lines: &[Line<'_>]) -> String {
    lines
        .iter()
        .map(|line| {
            line.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        let lines = [Line::from("the quick brown fox"), Line::from("abcdefghij")];
        assert_eq!(
            plain(&wrap_lines(&lines, 9)),
            "the quick\nbrown fox\nabcdefghi\nj"
        );
        assert_eq!(plain(&wrap_lines(&[Line::from("")], 5)), "");
        assert_eq!(wrap_lines(&[Line::from("")], 5).len(), 1);
    }

    #[test]
    fn wrapped_rows_line_up_under_the_text() {
        let lines = [
            Line::from("  │ one two three four"),
            Line::from("1. alpha beta gamma"),
        ];
        assert_eq!(
            plain(&wrap_lines(&lines, 12)),
            "  │ one two\n    three\n    four\n1. alpha\n   beta\n   gamma"
        );
        assert_eq!(
            plain(&wrap_lines(&[Line::from("-1 is a number")], 6)),
            "-1 is\na\nnumber"
        );
    }

    #[test]
    fn wide_characters_count_twice() {
        assert_eq!(
            plain(&wrap_lines(&[Line::from("日本語です")], 4)),
            "日本\n語で\nす"
        );
    }
}
