//! Syntax colours for code blocks: a small lexer (comments, strings, numbers, keywords, type
//! names) for the languages a coding agent shows most. A full grammar engine would add
//! megabytes and start-up time for what is a hint to the eye.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;

/// What the lexer needs to know about a language.
struct Language {
    keywords: &'static [&'static str],
    line_comment: &'static [&'static str],
    /// Capitalised identifiers are types (Rust, TypeScript, Java, Go, C#...).
    capital_types: bool,
}

const RUST: Language = Language {
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait",
        "true", "type", "unsafe", "use", "where", "while",
    ],
    line_comment: &["//"],
    capital_types: true,
};

const PYTHON: Language = Language {
    keywords: &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield", "self",
    ],
    line_comment: &["#"],
    capital_types: false,
};

const SCRIPT: Language = Language {
    keywords: &[
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "from",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "of",
        "return",
        "static",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "type",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "yield",
    ],
    line_comment: &["//"],
    capital_types: true,
};

const GO: Language = Language {
    keywords: &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "false",
        "for",
        "func",
        "go",
        "if",
        "import",
        "interface",
        "map",
        "nil",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "true",
        "type",
        "var",
    ],
    line_comment: &["//"],
    capital_types: true,
};

const C_LIKE: Language = Language {
    keywords: &[
        "auto",
        "bool",
        "break",
        "case",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "false",
        "final",
        "float",
        "for",
        "if",
        "import",
        "include",
        "int",
        "long",
        "new",
        "null",
        "nullptr",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "template",
        "this",
        "throw",
        "true",
        "try",
        "typedef",
        "union",
        "unsigned",
        "void",
        "while",
    ],
    line_comment: &["//"],
    capital_types: true,
};

const SHELL: Language = Language {
    keywords: &[
        "case", "do", "done", "echo", "elif", "else", "esac", "exit", "export", "fi", "for",
        "function", "if", "in", "local", "return", "set", "then", "until", "while",
    ],
    line_comment: &["#"],
    capital_types: false,
};

const DATA: Language = Language {
    keywords: &["true", "false", "null"],
    line_comment: &["#"],
    capital_types: false,
};

fn language(info: &str) -> Option<&'static Language> {
    let name = info
        .split([' ', ',', '{'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    Some(match name.as_str() {
        "rust" | "rs" => &RUST,
        "python" | "py" => &PYTHON,
        "js" | "javascript" | "ts" | "typescript" | "tsx" | "jsx" | "mjs" => &SCRIPT,
        "go" | "golang" => &GO,
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "kotlin" | "cs" | "csharp"
        | "swift" => &C_LIKE,
        "sh" | "bash" | "shell" | "zsh" | "console" => &SHELL,
        "json" | "toml" | "yaml" | "yml" | "ini" => &DATA,
        _ => return None,
    })
}

const CODE: Style = Style::new().fg(Color::Gray);

/// One line of code in the block's language (the fence's info string), as spans; an unknown
/// language is shown plain.
pub fn highlight_line(info: &str, line: &str) -> Vec<Span<'static>> {
    let Some(lang) = language(info) else {
        return vec![Span::styled(line.to_owned(), CODE)];
    };
    let mut spans = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let text = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        if lang.line_comment.iter().any(|c| rest.starts_with(c)) {
            spans.push(Span::styled(
                rest,
                Style::new()
                    .fg(Color::DarkGray)
                    .add_modifier(Modifier::ITALIC),
            ));
            break;
        }
        let c = chars[i];
        let start = i;
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(chars.len());
            spans.push(Span::styled(text(start, i), Style::new().fg(Color::Green)));
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            spans.push(Span::styled(text(start, i), Style::new().fg(Color::Cyan)));
        } else if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word = text(start, i);
            let style = if lang.keywords.contains(&word.as_str()) {
                Style::new().fg(Color::Magenta)
            } else if lang.capital_types && c.is_uppercase() {
                Style::new().fg(Color::Yellow)
            } else {
                CODE
            };
            spans.push(Span::styled(word, style));
        } else {
            while i < chars.len()
                && !(chars[i].is_alphanumeric() || "_\"'`".contains(chars[i]))
                && !lang
                    .line_comment
                    .iter()
                    .any(|m| chars[i..].iter().collect::<String>().starts_with(m))
            {
                i += 1;
            }
            i = i.max(start + 1);
            spans.push(Span::styled(text(start, i), CODE));
        }
    }
    spans
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
    fn keywords_strings_numbers_and_comments() {
        let spans = colours("rust", r#"let s: String = "a\"b"; // 42"#);
        assert_eq!(spans[0], ("let".into(), Some(Color::Magenta)));
        assert!(spans.contains(&("String".into(), Some(Color::Yellow))));
        assert!(spans.contains(&(r#""a\"b""#.into(), Some(Color::Green))));
        assert_eq!(
            spans.last().unwrap(),
            &("// 42".into(), Some(Color::DarkGray))
        );
        assert!(colours("py", "x = 10").contains(&("10".into(), Some(Color::Cyan))));
    }

    #[test]
    fn unknown_languages_are_plain_and_text_is_kept() {
        assert_eq!(
            colours("brainfuck", "++[>]"),
            [("++[>]".into(), Some(Color::Gray))]
        );
        let line = "echo \"unterminated # not a comment";
        let joined: String = highlight_line("sh", line)
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(joined, line);
    }
}
