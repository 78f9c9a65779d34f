//! A flag of the command line, and the reading of arguments by a list of flags.
//!
//! Each flag is one value that knows its names, its value, its help and how it changes what was
//! parsed; a command's parser hands its list to [`scan`] and reads the [`Parsed`] it fills. So
//! `--help`, the man page and the completions, drawn from the same lists, cannot name a flag the
//! parser does not take, nor miss one it does.

use std::path::PathBuf;
use std::time::Duration;

use dsh_core::Flags;

/// One flag: `-o, --output-last-message <file>`.
pub struct Flag {
    pub short: Option<char>,
    pub long: &'static str,
    /// What its value is called (`<name>`); `None` for a switch.
    pub value: Option<&'static str>,
    /// Whether `--long=value` is read as this flag too (a switch given a value so is refused);
    /// otherwise only the words as given are.
    pub inline: bool,
    pub about: &'static str,
    /// What a shell offers for its value.
    pub complete: Complete,
    /// What the flag does to what was parsed.
    pub update: fn(&mut Parsed, Given<'_>) -> Result<(), Stop>,
}

/// What a shell completes a flag's value with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Complete {
    Nothing,
    File,
    Dir,
    /// One of these words.
    Words(&'static [&'static str]),
}

impl Flag {
    /// A flag without a value.
    pub const fn switch(
        long: &'static str,
        about: &'static str,
        update: fn(&mut Parsed, Given<'_>) -> Result<(), Stop>,
    ) -> Flag {
        Flag {
            short: None,
            long,
            value: None,
            inline: true,
            about,
            complete: Complete::Nothing,
            update,
        }
    }

    /// A flag that takes a value, the next argument or after `=`.
    pub const fn valued(
        long: &'static str,
        value: &'static str,
        complete: Complete,
        about: &'static str,
        update: fn(&mut Parsed, Given<'_>) -> Result<(), Stop>,
    ) -> Flag {
        Flag {
            short: None,
            long,
            value: Some(value),
            inline: true,
            about,
            complete,
            update,
        }
    }

    /// The same flag, also spelled `-c`.
    pub const fn short(self, c: char) -> Flag {
        Flag {
            short: Some(c),
            ..self
        }
    }

    /// The same flag, read only as the words given: `--long=value` is not it.
    pub const fn whole(self) -> Flag {
        Flag {
            inline: false,
            ..self
        }
    }

    /// Whether `word` is this flag's long or short name.
    pub fn is(&self, word: &str) -> bool {
        let mut chars = word.chars();
        word == self.long
            || (self.short.is_some()
                && chars.next() == Some('-')
                && chars.next() == self.short
                && chars.next().is_none())
    }
}

/// The flag named `name` (`--model`, `-o`) in `flags`.
pub fn find<'a>(flags: &'a [Flag], name: &str) -> Option<&'a Flag> {
    flags.iter().find(|flag| flag.is(name))
}

/// A flag as the command line gave it: the flag, and its value (`None` when the command line
/// ended first; always `None` for a switch).
pub struct Given<'a> {
    pub flag: &'a Flag,
    pub value: Option<&'a str>,
}

impl<'a> Given<'a> {
    /// The value, or the error naming the flag that lacks it.
    pub fn required(&self) -> Result<&'a str, Stop> {
        self.value.ok_or_else(|| {
            let value = self.flag.value.unwrap_or_default();
            Stop::refused(
                format!("option '{} {value}' argument missing", self.flag.long),
                true,
            )
        })
    }
}

/// Why reading the flags stopped before the end.
#[derive(Debug)]
pub enum Stop {
    /// The command line cannot run: the message, and whether to point at the help.
    Refused { message: String, hint: bool },
    /// `--help`: nothing more is read.
    Help,
    /// `--version`.
    Version,
}

impl Stop {
    pub fn refused(message: impl Into<String>, hint: bool) -> Stop {
        Stop::Refused {
            message: message.into(),
            hint,
        }
    }
}

/// Everything a flag can set; each command reads its part.
#[derive(Debug, Default)]
pub struct Parsed {
    /// A run's settings, resolved over the files by core (and `dsh login`'s `--model`, `dsh
    /// sandbox check`'s `--patch`).
    pub flags: Flags,
    /// `--json`: a run's event stream, or a command's output as JSON.
    pub json: bool,
    /// `-o`: where a run's final answer is also written.
    pub output_last_message: Option<PathBuf>,
    /// `--timeout`: how long a run may take (`dsh mcp login`: how long it waits).
    pub timeout: Option<Duration>,
    /// `--input-format stream-json`.
    pub stream_input: bool,
    pub dump_config: bool,
    /// `--profile headless`.
    pub profile: bool,
    /// `dsh web --host`.
    pub host: Option<String>,
    /// `dsh web --port`.
    pub port: Option<u16>,
    /// `dsh web --open`.
    pub open: bool,
    /// `dsh web --app`.
    pub app: bool,
    /// `dsh workflow NAME --args`.
    pub workflow_args: Option<serde_json::Value>,
    /// `dsh rewind --to`.
    pub to_turn: Option<u32>,
    /// `dsh rewind --before-call`.
    pub before_call: Option<String>,
    /// `dsh rewind --undo`.
    pub undo: bool,
    /// `dsh rewind --yes`.
    pub yes: bool,
    /// `dsh rewind --force`.
    pub force: bool,
    /// `dsh rewind --files`.
    pub files_only: bool,
    /// `dsh rewind --conversation`.
    pub conversation_only: bool,
    /// `dsh mcp login --no-browser`.
    pub no_browser: bool,
    /// `dsh sessions search --limit`.
    pub limit: Option<usize>,
    /// `dsh sessions export --format`.
    pub export_format: Option<dsh_core::export::ExportFormat>,
    /// `dsh replay --keep`.
    pub keep: bool,
}

/// What a command makes of an argument that is none of its flags.
pub enum Word {
    /// A word of its own (a task word, an id), kept in order.
    Keep,
    /// `--`: this and every argument after it are words, not flags; this one is dropped.
    Rest,
}

/// Reads `args` by `flags` into `parsed`, in order: each flag's value is the next argument (or,
/// for a flag that takes `--long=value`, what follows `=`). Every other argument is put to
/// `other`, which keeps it as a word or refuses it. Returns the words kept.
pub fn scan(
    args: impl IntoIterator<Item = String>,
    flags: &[Flag],
    parsed: &mut Parsed,
    mut other: impl FnMut(&str) -> Result<Word, Stop>,
) -> Result<Vec<String>, Stop> {
    let mut words = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let found = match find(flags, &arg) {
            Some(flag) => Some((flag, None)),
            None => (arg.split_once('='))
                .filter(|(name, _)| name.starts_with("--"))
                .and_then(|(name, value)| {
                    let flag = find(flags, name).filter(|flag| flag.inline)?;
                    Some((flag, Some(value.to_owned())))
                }),
        };
        let Some((flag, inline)) = found else {
            match other(&arg)? {
                Word::Keep => words.push(arg),
                Word::Rest => {
                    words.extend(args.by_ref());
                    break;
                }
            }
            continue;
        };
        let value = match (flag.value, inline) {
            (None, Some(_)) => {
                let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
                return Err(Stop::refused(
                    format!("option '{name}' takes no value"),
                    true,
                ));
            }
            (None, None) => None,
            (Some(_), Some(value)) => Some(value),
            (Some(_), None) => args.next(),
        };
        (flag.update)(
            parsed,
            Given {
                flag,
                value: value.as_deref(),
            },
        )?;
    }
    Ok(words)
}
