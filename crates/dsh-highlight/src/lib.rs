//! Colours for code blocks, as kinds of token: a small lexer (comments, strings, numbers,
//! keywords, type names) for the languages a coding agent shows most. A full grammar engine
//! would add megabytes and start-up time for what is a hint to the eye. The terminal UI and
//! the web app each map the kinds to their own colours.

/// What a piece of a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    Plain,
    Comment,
    Text,
    Number,
    Keyword,
    TypeName,
}

impl Token {
    /// A name for a style sheet's class (`keyword`, `type-name`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Token::Plain => "plain",
            Token::Comment => "comment",
            Token::Text => "string",
            Token::Number => "number",
            Token::Keyword => "keyword",
            Token::TypeName => "type-name",
        }
    }
}

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

/// One line of code in the block's language (the fence's info string), as its pieces in
/// order; an unknown language is one plain piece. Joined, the pieces are the line.
pub fn tokens(info: &str, line: &str) -> Vec<(Token, String)> {
    let Some(lang) = language(info) else {
        return vec![(Token::Plain, line.to_owned())];
    };
    let mut pieces = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let text = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        if lang.line_comment.iter().any(|c| rest.starts_with(c)) {
            pieces.push((Token::Comment, rest));
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
            pieces.push((Token::Text, text(start, i)));
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            pieces.push((Token::Number, text(start, i)));
        } else if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word = text(start, i);
            let kind = if lang.keywords.contains(&word.as_str()) {
                Token::Keyword
            } else if lang.capital_types && c.is_uppercase() {
                Token::TypeName
            } else {
                Token::Plain
            };
            pieces.push((kind, word));
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
            pieces.push((Token::Plain, text(start, i)));
        }
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_strings_numbers_and_comments() {
        let pieces = tokens("rust", r#"let s: String = "a\"b"; // 42"#);
        assert_eq!(pieces[0], (Token::Keyword, "let".into()));
        assert!(pieces.contains(&(Token::TypeName, "String".into())));
        assert!(pieces.contains(&(Token::Text, r#""a\"b""#.into())));
        assert_eq!(pieces.last().unwrap(), &(Token::Comment, "// 42".into()));
        assert!(tokens("py", "x = 10").contains(&(Token::Number, "10".into())));
    }

    #[test]
    fn unknown_languages_are_plain_and_text_is_kept() {
        assert_eq!(
            tokens("brainfuck", "++[>]"),
            [(Token::Plain, "++[>]".into())]
        );
        let line = "echo \"unterminated # not a comment";
        let joined: String = tokens("sh", line).into_iter().map(|(_, t)| t).collect();
        assert_eq!(joined, line);
    }
}
