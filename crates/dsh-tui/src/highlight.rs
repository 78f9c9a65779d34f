//! Colours for code blocks in the terminal: the shared lexer's kinds of token
//! ([`dsh_highlight`]) as terminal styles.

use dsh_highlight::Token;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

const CODE: Style = Style::new().fg(Color::Gray);

/// One line of code in the block's language (the fence's info string), as spans; an unknown
/// language is shown plain.
pub fn highlight_line(info: &str, line: &str) -> Vec<Span<'static>> {
    dsh_highlight::tokens(info, line)
        .into_iter()
        .map(|(kind, text)| {
            let style = match kind {
                Token::Plain => CODE,
                Token::Comment => Style::new()
                    .fg(Color::DarkGray)
                    .add_modifier(Modifier::ITALIC),
                Token::Text => Style::new().fg(Color::Green),
                Token::Number => Style::new().fg(Color::Cyan),
                Token::Keyword => Style::new().fg(Color::Magenta),
                Token::TypeName => Style::new().fg(Color::Yellow),
            };
            Span::styled(text, style)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn colours(info: &str, line: &str) -> Vec<(String, Option<Color>)> {
        highlight_line(info, line)
            .into_iter()
            .map(|s| (s.content.into_owned(), s.style.fg))
            .collect()
    }

    #[test]
    fn the_kinds_get_the_terminal_s_colours() {
        let spans = colours("rust", r#"let s: String = "a"; // 42"#);
        assert_eq!(spans[0], ("let".into(), Some(Color::Magenta)));
        assert!(spans.contains(&("String".into(), Some(Color::Yellow))));
        assert!(spans.contains(&(r#""a""#.into(), Some(Color::Green))));
        assert_eq!(
            spans.last().unwrap(),
            &("// 42".into(), Some(Color::DarkGray))
        );
        assert_eq!(
            colours("brainfuck", "++"),
            [("++".into(), Some(Color::Gray))]
        );
    }
}
