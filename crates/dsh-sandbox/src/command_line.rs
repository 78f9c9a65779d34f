//! Reading a shell command line as the commands it runs, for the command rules
//! ([`crate::rules`]): every command of a pipeline, of a `;`, `&&` or `||` list, of a subshell,
//! of a `$(...)`, backquote or `<(...)` substitution, and of a script handed to `bash -c` or
//! `eval`, each as its words with the quotes taken off.
//!
//! It is a reader for judging, not a shell: a word whose text is only known when the line runs
//! (a `$VAR`, a substitution, a glob, a `{a,b}` brace) is kept but marked dynamic, so no rule
//! can allow by it, and what it cannot follow (a substitution inside a here-document or an
//! arithmetic expansion, `env -S`) is an error, which the rules treat as undecidable rather
//! than as harmless. Wrappers that run the rest of their words as a command (`env X=1`,
//! `command`, `nohup`, `timeout 5`, `xargs`, `sudo`...) are looked through: the command they
//! run is judged, and each wrapper's own words are kept for deny rules that name it.

mod words;
mod wrappers;

use words::MAX_DEPTH;
pub use words::{ParseError, SimpleCommand, Word};
pub(crate) use wrappers::base_name;

/// The commands `line` runs, in the order they appear (a substitution's before the command it
/// is part of ends).
pub fn commands(line: &str) -> Result<Vec<SimpleCommand>, ParseError> {
    parse_at(line, 0)
}

fn parse_at(line: &str, depth: usize) -> Result<Vec<SimpleCommand>, ParseError> {
    if depth > MAX_DEPTH {
        return Err(ParseError::TooDeep);
    }
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
        depth,
        raw: Vec::new(),
        heredocs: Vec::new(),
    };
    parser.list(false)?;
    let mut out = Vec::new();
    for words in parser.raw {
        wrappers::resolve(words, depth, &mut out, parse_at)?;
    }
    Ok(out)
}

/// A here-document waiting for its body after the line's next newline.
struct Heredoc {
    delimiter: String,
    strip_tabs: bool,
    /// Its delimiter was unquoted: the body is expanded, so a substitution in it runs.
    expands: bool,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
    /// Every command found so far, as words, before wrappers are looked through.
    raw: Vec<Vec<Word>>,
    heredocs: Vec<Heredoc>,
}

/// Characters that end an unquoted word.
fn ends_word(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn flush(&mut self, words: &mut Vec<Word>) {
        if !words.is_empty() {
            self.raw.push(std::mem::take(words));
        }
    }

    /// A list of commands, up to the end of the text or (`in_parens`) the `)` that closes a
    /// `$(` or `<(`.
    fn list(&mut self, in_parens: bool) -> Result<(), ParseError> {
        let opened = self.pos;
        let mut words: Vec<Word> = Vec::new();
        let mut subshells = 0usize;
        loop {
            let Some(c) = self.peek() else {
                self.flush(&mut words);
                if in_parens || subshells > 0 {
                    return Err(ParseError::Unclosed {
                        what: "a `(`",
                        at: opened,
                    });
                }
                if let Some(heredoc) = self.heredocs.first() {
                    let _ = heredoc;
                    return Err(ParseError::Unclosed {
                        what: "a here-document",
                        at: self.pos,
                    });
                }
                return Ok(());
            };
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\n' => {
                    self.flush(&mut words);
                    self.pos += 1;
                    self.heredoc_bodies()?;
                }
                '&' if self.peek_at(1) == Some('>') => self.redirect(&mut words)?,
                ';' | '&' | '|' => {
                    self.flush(&mut words);
                    while matches!(self.peek(), Some(';' | '&' | '|')) {
                        self.pos += 1;
                    }
                }
                '(' => {
                    self.flush(&mut words);
                    subshells += 1;
                    self.pos += 1;
                }
                ')' => {
                    self.flush(&mut words);
                    self.pos += 1;
                    if subshells > 0 {
                        subshells -= 1;
                    } else if in_parens {
                        return Ok(());
                    } else {
                        return Err(ParseError::Unbalanced(self.pos - 1));
                    }
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    let word = self.word()?;
                    words.push(word);
                }
                '<' | '>' => self.redirect(&mut words)?,
                _ => {
                    let word = self.word()?;
                    // `2>file`: the number is the redirection's, not an argument.
                    let fd = !word.dynamic
                        && !word.text.is_empty()
                        && word.text.chars().all(|c| c.is_ascii_digit())
                        && matches!(self.peek(), Some('<' | '>'));
                    if fd {
                        self.redirect(&mut words)?;
                    } else {
                        words.push(word);
                    }
                }
            }
        }
    }

    /// A redirection: its operator, then its target word, which is no argument of the
    /// command (a substitution in it still runs, and is recorded).
    fn redirect(&mut self, _words: &mut [Word]) -> Result<(), ParseError> {
        let start = self.pos;
        while matches!(self.peek(), Some('<' | '>' | '&' | '|')) {
            self.pos += 1;
        }
        let op: String = self.chars[start..self.pos].iter().collect();
        let strip_tabs = op == "<<" && self.peek() == Some('-');
        if strip_tabs {
            self.pos += 1;
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        let quoted_before = self.pos;
        let target = self.word()?;
        if op == "<<" {
            let raw: String = self.chars[quoted_before..self.pos].iter().collect();
            self.heredocs.push(Heredoc {
                delimiter: target.text,
                strip_tabs,
                expands: !raw.contains(['\'', '"', '\\']),
            });
        }
        Ok(())
    }

    /// The bodies of the here-documents opened on the line just ended.
    fn heredoc_bodies(&mut self) -> Result<(), ParseError> {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let opened = self.pos;
            loop {
                if self.pos >= self.chars.len() {
                    return Err(ParseError::Unclosed {
                        what: "a here-document",
                        at: opened,
                    });
                }
                let end = (self.pos..self.chars.len())
                    .find(|&i| self.chars[i] == '\n')
                    .unwrap_or(self.chars.len());
                let line: String = self.chars[self.pos..end].iter().collect();
                self.pos = (end + 1).min(self.chars.len());
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if line == heredoc.delimiter {
                    break;
                }
                if heredoc.expands && (line.contains("$(") || line.contains('`')) {
                    return Err(ParseError::Unsupported(
                        "a command substitution inside a here-document",
                    ));
                }
            }
        }
        Ok(())
    }

    /// One word, up to an unquoted blank or operator.
    fn word(&mut self) -> Result<Word, ParseError> {
        let mut text = String::new();
        let mut dynamic = false;
        let mut glob = false;
        let mut brace = false;
        while let Some(c) = self.peek() {
            match c {
                '<' | '>' if self.peek_at(1) == Some('(') && text.is_empty() => {
                    self.pos += 2;
                    self.nested_list()?;
                    dynamic = true;
                }
                c if ends_word(c) => break,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(escaped) => {
                            text.push(escaped);
                            self.pos += 1;
                        }
                        None => {}
                    }
                }
                '\'' => {
                    let at = self.pos;
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => {
                                return Err(ParseError::Unclosed {
                                    what: "a single quote",
                                    at,
                                });
                            }
                            Some('\'') => break,
                            Some(c) => text.push(c),
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                '"' => self.double_quoted(&mut text, &mut dynamic)?,
                '`' => {
                    self.backquoted()?;
                    dynamic = true;
                }
                '$' => self.dollar(&mut text, &mut dynamic, false)?,
                '*' | '?' | '[' => {
                    glob = true;
                    text.push(c);
                    self.pos += 1;
                }
                '{' | '}' => {
                    brace = true;
                    text.push(c);
                    self.pos += 1;
                }
                c => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
        // `[` and `{` alone are a command and a keyword, not a pattern or an expansion.
        if (glob && text != "[") || (brace && text != "{" && text != "}") {
            dynamic = true;
        }
        Ok(Word { text, dynamic })
    }

    fn double_quoted(&mut self, text: &mut String, dynamic: &mut bool) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else {
                return Err(ParseError::Unclosed {
                    what: "a double quote",
                    at,
                });
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(());
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => {}
                        Some(e @ ('"' | '\\' | '$' | '`')) => text.push(e),
                        Some(other) => {
                            text.push('\\');
                            text.push(other);
                        }
                        None => continue,
                    }
                    self.pos += 1;
                }
                '`' => {
                    self.backquoted()?;
                    *dynamic = true;
                }
                '$' => self.dollar(text, dynamic, true)?,
                c => {
                    text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// A `$` and what follows it: a substitution (its commands recorded), a parameter, an
    /// ANSI-C string, or a lone `$`.
    fn dollar(
        &mut self,
        text: &mut String,
        dynamic: &mut bool,
        in_quotes: bool,
    ) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                let inner = self.balanced('(', ')', at, "an arithmetic expansion")?;
                if inner.contains("$(") || inner.contains('`') {
                    return Err(ParseError::Unsupported(
                        "a command substitution inside an arithmetic expansion",
                    ));
                }
                *dynamic = true;
            }
            Some('(') => {
                self.pos += 1;
                self.nested_list()?;
                *dynamic = true;
            }
            Some('{') => {
                self.pos += 1;
                let inner = self.balanced('{', '}', at, "a `${`")?;
                if inner.contains("$(") || inner.contains('`') {
                    return Err(ParseError::Unsupported(
                        "a command substitution inside a `${...}`",
                    ));
                }
                *dynamic = true;
            }
            Some('\'') if !in_quotes => {
                // `$'\x67it'` spells `git`: an escape in it makes the word unknown here.
                self.pos += 1;
                loop {
                    match self.peek() {
                        None => {
                            return Err(ParseError::Unclosed {
                                what: "a `$'` string",
                                at,
                            });
                        }
                        Some('\'') => break,
                        Some('\\') => {
                            *dynamic = true;
                            self.pos += 1;
                        }
                        Some(c) => text.push(c),
                    }
                    self.pos += 1;
                }
                self.pos += 1;
            }
            Some('"') if !in_quotes => self.double_quoted(text, dynamic)?,
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                *dynamic = true;
            }
            Some(c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
                self.pos += 1;
                *dynamic = true;
            }
            _ => text.push('$'),
        }
        Ok(())
    }

    /// The text up to the `close` that balances an `open` already passed, nested pairs
    /// counted and quotes skipped over.
    fn balanced(
        &mut self,
        open: char,
        close: char,
        at: usize,
        what: &'static str,
    ) -> Result<String, ParseError> {
        let start = self.pos;
        let mut depth = 1usize;
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek() {
            self.pos += 1;
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '\'' | '"') => quote = Some(c),
                (None, '\\') => self.pos += 1,
                (None, c) if c == open => depth += 1,
                (None, c) if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(self.chars[start..self.pos - 1].iter().collect());
                    }
                }
                _ => {}
            }
        }
        Err(ParseError::Unclosed { what, at })
    }

    /// The commands of a `$(` or `<(` already passed, up to its `)`.
    fn nested_list(&mut self) -> Result<(), ParseError> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        self.depth += 1;
        let pending = std::mem::take(&mut self.heredocs);
        let result = self.list(true);
        self.heredocs = pending;
        self.depth -= 1;
        result
    }

    /// A backquoted substitution: its text unescaped, then read as a command line of its own.
    fn backquoted(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        self.pos += 1;
        let mut inner = String::new();
        loop {
            match self.peek() {
                None => {
                    return Err(ParseError::Unclosed {
                        what: "a backquote",
                        at,
                    });
                }
                Some('`') => break,
                Some('\\') if matches!(self.peek_at(1), Some('`' | '\\' | '$')) => {
                    self.pos += 1;
                    inner.extend(self.peek());
                }
                Some(c) => inner.push(c),
            }
            self.pos += 1;
        }
        self.pos += 1;
        let mut parser = Parser {
            chars: inner.chars().collect(),
            pos: 0,
            depth: self.depth + 1,
            raw: Vec::new(),
            heredocs: Vec::new(),
        };
        if parser.depth > MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        parser.list(false)?;
        self.raw.extend(parser.raw);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
