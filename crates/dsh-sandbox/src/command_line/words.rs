//! What a command line is read into: words, commands, and why a line could not be read.

/// One word of a command, its quotes and escapes taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Its text is only known when the line runs (an expansion, a substitution, a glob).
    pub dynamic: bool,
}

impl Word {
    /// A word with no expansion in it.
    pub fn plain(text: &str) -> Word {
        Word {
            text: text.to_owned(),
            dynamic: false,
        }
    }
}

/// One command the line runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// The command itself: its program and arguments, without the assignments, redirections
    /// and wrappers before it.
    pub words: Vec<Word>,
    /// The words from each wrapper it was found inside (`sudo -u x git push`, then its inner
    /// ones), outermost first.
    pub wrappers: Vec<Vec<Word>>,
    /// A wrapper changes who runs it (`sudo`, `doas`): no rule about the command alone allows
    /// it.
    pub privileged: bool,
    /// A shell that runs the commands of its input (`curl x | sh`, `bash <<EOF`, `source
    /// /dev/stdin`), which the line does not show.
    pub reads_input: bool,
}

/// A command line the rules cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("{what} opened at byte {at} is never closed")]
    Unclosed { what: &'static str, at: usize },
    #[error("a `)` at byte {0} closes nothing")]
    Unbalanced(usize),
    #[error("{0} is not read by the command rules")]
    Unsupported(&'static str),
    #[error("it is nested more than {MAX_DEPTH} levels deep")]
    TooDeep,
}

/// How deep substitutions and `bash -c` scripts may nest before the line is refused.
pub(super) const MAX_DEPTH: usize = 16;
