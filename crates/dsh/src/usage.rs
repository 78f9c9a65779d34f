//! The command line, described once: its commands, options, environment, examples and exit
//! statuses. `--help`, the shell completions (`dsh completions bash|zsh|fish`) and the man
//! page (`dsh man`) are all drawn from this, and the parser takes its list of options that
//! need a value from it, so none of them can name an option the others do not know.

use std::fmt::Write as _;

/// An option of a run (`dsh [OPTIONS] [TASK...]`).
pub struct Opt {
    pub short: Option<char>,
    pub long: &'static str,
    /// What its value is called (`<name>`); `None` for a flag.
    pub value: Option<&'static str>,
    pub about: &'static str,
    /// What a shell offers for its value.
    pub complete: Complete,
}

/// What a shell completes an option's value with.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Complete {
    Nothing,
    File,
    Dir,
    /// One of these words.
    Words(&'static [&'static str]),
}

/// A command other than a run: its words, and what it does.
pub struct Cmd {
    /// The command line as `--help` shows it.
    pub usage: &'static str,
    pub about: &'static str,
}

const fn flag(long: &'static str, about: &'static str) -> Opt {
    Opt {
        short: None,
        long,
        value: None,
        about,
        complete: Complete::Nothing,
    }
}

const fn valued(
    long: &'static str,
    value: &'static str,
    complete: Complete,
    about: &'static str,
) -> Opt {
    Opt {
        short: None,
        long,
        value: Some(value),
        about,
        complete,
    }
}

pub const SUMMARY: &str = "a coding agent for the command line";

pub const INTRO: &str = "On a terminal, opens a conversation (the terminal UI; the task words, \
if any, are the first message). Otherwise (stdin or stdout not a terminal, or --json, -o, `-`, \
headless) it answers one task and exits: the answer goes to stdout, the model's reasoning and \
diagnostics to stderr; the exit status is 0 only when the task completed.";

pub const TASK: &str = "The task is the words given, or stdin when there are none or a lone `-`.";

pub const COMMANDS: &[Cmd] = &[
    Cmd {
        usage: "dsh [OPTIONS] [TASK...]",
        about: "",
    },
    Cmd {
        usage: "dsh resume [OPTIONS]",
        about: "the terminal UI, from a session picked in a list",
    },
    Cmd {
        usage: "dsh login [--model <name>]",
        about: "save the provider's API key, checked; asked without echo",
    },
    Cmd {
        usage: "dsh logout [--model <name>]",
        about: "remove the saved key",
    },
    Cmd {
        usage: "dsh sessions list [--json]",
        about: "this directory's sessions, newest first",
    },
    Cmd {
        usage: "dsh sessions show <id> [--json]",
        about: "one session's transcript",
    },
    Cmd {
        usage: "dsh sessions rename <id> <title>",
        about: "the name lists show for it; empty: none",
    },
    Cmd {
        usage: "dsh rewind <session> [...]",
        about: "a session's turns; going back to one",
    },
    Cmd {
        usage: "dsh workflow <name> [--args <json>] [OPTIONS]",
        about: "run a saved workflow, .dsh/workflows/<name>.js",
    },
    Cmd {
        usage: "dsh workflow list",
        about: "the saved workflows",
    },
    Cmd {
        usage: "dsh web [--port <n>] [--host <addr>] [--open] [OPTIONS]",
        about: "the browser app, on 127.0.0.1:8976",
    },
    Cmd {
        usage: "dsh acp [OPTIONS]",
        about: "an Agent Client Protocol agent on stdio, for editors",
    },
    Cmd {
        usage: "dsh mcp-server [OPTIONS]",
        about: "an MCP server on stdio: tools dsh, dsh-reply",
    },
    Cmd {
        usage: "dsh mcp login|logout <server>, dsh mcp list",
        about: "MCP servers' sign-ins",
    },
    Cmd {
        usage: "dsh sandbox check [--patch <file>]...",
        about: "which sandbox would confine commands",
    },
    Cmd {
        usage: "dsh completions bash|zsh|fish",
        about: "a completion script for the shell",
    },
    Cmd {
        usage: "dsh man",
        about: "this help as a man page, in roff",
    },
    Cmd {
        usage: "dsh --profile headless [OPTIONS] [TASK...]",
        about: "always headless; as DeepSeek Harness takes it",
    },
    Cmd {
        usage: "dsh headless [OPTIONS] [TASK...]",
        about: "the same",
    },
];

/// The first words of the commands, for completing the first word.
pub const COMMAND_WORDS: &[&str] = &[
    "resume",
    "login",
    "logout",
    "sessions",
    "rewind",
    "workflow",
    "web",
    "acp",
    "mcp-server",
    "mcp",
    "sandbox",
    "completions",
    "man",
    "headless",
];

const EFFORTS: &[&str] = &["off", "low", "high", "max"];
const MODES: &[&str] = &[
    "read-only",
    "workspace-write",
    "danger-full-access",
    "plan",
    "auto",
];

pub const OPTIONS: &[Opt] = &[
    flag(
        "--json",
        "Write a JSON event stream to stdout, one object per line",
    ),
    valued(
        "--model",
        "<name>",
        Complete::Nothing,
        "Model to use (default: deepseek-v4-flash)",
    ),
    valued(
        "--effort",
        "<level>",
        Complete::Words(EFFORTS),
        "Reasoning effort: off, low, high or max (default: high)",
    ),
    valued(
        "--preset",
        "<name>",
        Complete::Words(&["standard", "minimal"]),
        "The tool set: standard (default), or minimal (bash and str_replace_editor only, the smallest prompt)",
    ),
    valued(
        "--max-steps",
        "<n>",
        Complete::Nothing,
        "Stop a turn after this many model requests (default: 500)",
    ),
    valued(
        "--input-format",
        "<format>",
        Complete::Words(&["text", "stream-json"]),
        "text (default), or stream-json: with --json, user messages are read from stdin as JSON lines, a turn each, until EOF",
    ),
    valued(
        "--output-schema",
        "<file>",
        Complete::File,
        "The final answer must be JSON valid against this JSON Schema; an invalid one is sent back twice, then the run fails (exit status 6)",
    ),
    valued(
        "--system-prompt-append",
        "<text>",
        Complete::Nothing,
        "Add this text at the end of the system prompt",
    ),
    flag(
        "--continue",
        "Continue the latest session of this directory",
    ),
    flag(
        "--fork",
        "With --session-id or --continue: a new session that starts from a copy of that one's history (the old one is left as it was)",
    ),
    valued(
        "--max-turns",
        "<n>",
        Complete::Nothing,
        "Stop the run after this many model requests in all (exit status 3)",
    ),
    valued(
        "--max-budget-usd",
        "<usd>",
        Complete::Nothing,
        "Stop the run once it has cost this much at the model's prices (exit status 4; refused for a model without prices)",
    ),
    valued(
        "--timeout",
        "<duration>",
        Complete::Nothing,
        "Stop the run after this long: 90s, 500ms, 10m, 1h (exit status 5)",
    ),
    valued(
        "--patch",
        "<file>",
        Complete::File,
        "Apply a config file (TOML or YAML rows) over the others (repeatable)",
    ),
    valued(
        "--permission-mode",
        "<mode>",
        Complete::Words(MODES),
        "read-only, workspace-write (default), danger-full-access, plan (explore and submit a plan; nothing is changed), or auto (full access, a reviewer model allowing or denying each call that could change something)",
    ),
    valued(
        "--approval-policy",
        "<policy>",
        Complete::Words(&["ask", "never"]),
        "ask or never: whether a call may ask for a wider sandbox (default: never under danger-full-access, else ask; headless has no one to ask either way)",
    ),
    valued(
        "--add-dir",
        "<dir>",
        Complete::Dir,
        "Another writable directory: absolute, existing, its real path (repeatable)",
    ),
    valued(
        "--session-id",
        "<id>",
        Complete::Nothing,
        "Continue that session (from the directory it ran in)",
    ),
    valued(
        "--tools",
        "<names>",
        Complete::Nothing,
        "Offer only these tools (comma-separated; mcp__<server>__* for a server's; repeatable; \"\" for none)",
    ),
    valued(
        "--disallowed-tools",
        "<names>",
        Complete::Nothing,
        "Never offer these tools (comma-separated; repeatable)",
    ),
    Opt {
        short: Some('o'),
        long: "--output-last-message",
        value: Some("<file>"),
        about: "Also write the final answer to this file",
        complete: Complete::File,
    },
    valued(
        "--profile",
        "<name>",
        Complete::Words(&["headless"]),
        "headless: always run headless, as DeepSeek Harness takes it",
    ),
    flag(
        "--dump-config",
        "Print every setting in effect (defaults included, secrets hidden) and where each came from, and exit",
    ),
    Opt {
        short: Some('h'),
        long: "--help",
        value: None,
        about: "Print this help",
        complete: Complete::Nothing,
    },
    Opt {
        short: Some('V'),
        long: "--version",
        value: None,
        about: "Print the version and the commit it was built from",
        complete: Complete::Nothing,
    },
];

pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "DEEPSEEK_API_KEY",
        "The API key (else a .env file's, else the one `dsh login` saved)",
    ),
    (
        "DEEPSEEK_BASE_URL",
        "The API root (default: https://api.deepseek.com)",
    ),
    (
        "DSH_HOME",
        "Where sessions and saved keys are kept (default: ~/.dsh)",
    ),
    (
        "DSH_PERMISSION_MODE",
        "The permission mode when --permission-mode is not given",
    ),
];

pub const EXAMPLES: &[&str] = &[
    "dsh \"run the tests and fix what fails\"",
    "git diff --stat | dsh --json - > run.jsonl",
];

pub const EXIT_STATUS: &str = "0 completed; 1 failed or incomplete; 3 --max-turns, 4 \
--max-budget-usd and 5 --timeout reached; 6 no answer matched --output-schema; 130 stopped by \
SIGINT; 143 by SIGTERM.";

/// The option named `name` (`--model`, `-o`).
pub fn option(name: &str) -> Option<&'static Opt> {
    OPTIONS
        .iter()
        .find(|o| o.long == name || o.short.is_some_and(|s| name == format!("-{s}")))
}

/// Whether `name` takes a value (the next argument, unless given as `--name=value`).
pub fn takes_value(name: &str) -> bool {
    option(name).is_some_and(|o| o.value.is_some())
}

/// Where an option's description starts in `--help`.
const ABOUT_COLUMN: usize = 26;
/// How wide `--help` is.
const WIDTH: usize = 92;

/// `--help`.
pub fn help() -> String {
    let mut out = format!("dsh: {SUMMARY}.\n\n{}\n\nUsage:\n", wrap(INTRO, WIDTH, ""));
    for cmd in COMMANDS {
        if cmd.about.is_empty() {
            let _ = writeln!(out, "  {}", cmd.usage);
        } else {
            let _ = writeln!(out, "  {:<43} ({})", cmd.usage, cmd.about);
        }
    }
    let _ = write!(out, "\n{TASK}\n\nOptions:\n");
    for opt in OPTIONS {
        let head = format!("  {}", option_words(opt));
        let indent = " ".repeat(ABOUT_COLUMN);
        let about = wrap(opt.about, WIDTH, &indent);
        if head.len() + 2 <= ABOUT_COLUMN {
            let _ = writeln!(out, "{head:<ABOUT_COLUMN$}{}", about.trim_start());
        } else {
            let _ = writeln!(out, "{head}\n{about}");
        }
    }
    out.push_str("\nEnvironment:\n");
    for (name, about) in ENVIRONMENT {
        let _ = writeln!(out, "  {name:<23} {about}");
    }
    out.push_str("\nExamples:\n");
    for example in EXAMPLES {
        let _ = writeln!(out, "  {example}");
    }
    let _ = writeln!(
        out,
        "\n{}",
        wrap(&format!("Exit status: {EXIT_STATUS}"), WIDTH, "")
    );
    out
}

/// `-o, --output-last-message <file>` / `      --json`.
fn option_words(opt: &Opt) -> String {
    let short = opt.short.map_or("    ".to_owned(), |s| format!("-{s}, "));
    match opt.value {
        Some(value) => format!("{short}{} {value}", opt.long),
        None => format!("{short}{}", opt.long),
    }
}

/// `text` filled to `width` columns, each line after `indent`.
fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            lines.push(format!("{indent}{line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(format!("{indent}{line}"));
    }
    lines.join("\n")
}

/// A shell `dsh completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub fn parse(name: &str) -> Option<Shell> {
        match name {
            "bash" => Some(Shell::Bash),
            "zsh" => Some(Shell::Zsh),
            "fish" => Some(Shell::Fish),
            _ => None,
        }
    }
}

/// The completion script for `shell`: the commands' first words, the options, and the values
/// of those whose values are a few words, files or folders.
pub fn completions(shell: Shell) -> String {
    match shell {
        Shell::Bash => bash(),
        Shell::Zsh => zsh(),
        Shell::Fish => fish(),
    }
}

fn bash() -> String {
    let mut names: Vec<String> = Vec::new();
    for opt in OPTIONS {
        names.extend(opt.short.map(|s| format!("-{s}")));
        names.push(opt.long.to_owned());
    }
    let mut cases = String::new();
    for opt in OPTIONS {
        let pattern = match opt.short {
            Some(s) => format!("-{s}|{}", opt.long),
            None => opt.long.to_owned(),
        };
        let action = match opt.complete {
            Complete::Nothing if opt.value.is_some() => "return 0".to_owned(),
            Complete::Nothing => continue,
            // One name a line, kept whole (spaces and all), and marked as file names.
            Complete::File | Complete::Dir => format!(
                "compopt -o filenames 2>/dev/null; \
                 mapfile -t COMPREPLY < <(compgen {} -- \"$cur\"); return 0",
                if opt.complete == Complete::Dir {
                    "-d"
                } else {
                    "-f"
                }
            ),
            Complete::Words(words) => format!(
                "COMPREPLY=($(compgen -W '{}' -- \"$cur\")); return 0",
                words.join(" ")
            ),
        };
        let _ = writeln!(cases, "        {pattern}) {action} ;;");
    }
    format!(
        "# bash completion for dsh (dsh completions bash)\n\
         _dsh() {{\n\
         \x20   local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         \x20   case \"$prev\" in\n\
         {cases}\
         \x20   esac\n\
         \x20   if [[ \"$cur\" == -* ]]; then\n\
         \x20       COMPREPLY=($(compgen -W '{options}' -- \"$cur\"))\n\
         \x20   elif [[ $COMP_CWORD -eq 1 ]]; then\n\
         \x20       COMPREPLY=($(compgen -W '{commands}' -- \"$cur\"))\n\
         \x20   fi\n\
         }}\n\
         complete -o default -F _dsh dsh\n",
        options = names.join(" "),
        commands = COMMAND_WORDS.join(" "),
    )
}

/// An option's description as a completion menu shows it: up to its first clause, with any
/// parenthesis it opened closed.
fn short_about(about: &str) -> String {
    let cut = about
        .find("; ")
        .or_else(|| about.find(": "))
        .unwrap_or(about.len());
    let mut short = about[..cut].to_owned();
    if short.matches('(').count() > short.matches(')').count() {
        short.push(')');
    }
    short
}

fn zsh() -> String {
    let quote = |text: &str| {
        text.replace('\'', "'\\''")
            .replace('[', "\\[")
            .replace(']', "\\]")
    };
    let mut specs = String::new();
    for opt in OPTIONS {
        let about = quote(&short_about(opt.about));
        let value = match (opt.value, opt.complete) {
            (None, _) => String::new(),
            (Some(v), Complete::File) => format!(":{}:_files", quote(v)),
            (Some(v), Complete::Dir) => format!(":{}:_files -/", quote(v)),
            (Some(v), Complete::Words(words)) => format!(":{}:({})", quote(v), words.join(" ")),
            (Some(v), Complete::Nothing) => format!(":{}: ", quote(v)),
        };
        let names = match opt.short {
            Some(s) => format!("'(-{s} {long})'{{-{s},{long}}}", long = opt.long),
            None => opt.long.to_owned(),
        };
        let _ = writeln!(specs, "    {names}'[{about}]{value}' \\");
    }
    format!(
        "#compdef dsh\n# zsh completion for dsh (dsh completions zsh)\n\n\
         _dsh() {{\n\
         \x20 _arguments -s \\\n\
         {specs}\
         \x20   '1:command or task:({commands})' \\\n\
         \x20   '*:task:_default'\n\
         }}\n\n\
         _dsh \"$@\"\n",
        commands = COMMAND_WORDS.join(" "),
    )
}

fn fish() -> String {
    let quote = |text: &str| text.replace('\\', "\\\\").replace('\'', "\\'");
    let mut out = String::from("# fish completion for dsh (dsh completions fish)\n");
    let _ = writeln!(
        out,
        "complete -c dsh -n '__fish_use_subcommand' -f -a '{}'",
        COMMAND_WORDS.join(" ")
    );
    for opt in OPTIONS {
        let mut line = format!("complete -c dsh -l {}", &opt.long[2..]);
        if let Some(s) = opt.short {
            let _ = write!(line, " -s {s}");
        }
        match (opt.value, opt.complete) {
            (None, _) => {}
            (Some(_), Complete::Words(words)) => {
                let _ = write!(line, " -x -a '{}'", words.join(" "));
            }
            (Some(_), Complete::Dir) => line.push_str(" -x -a '(__fish_complete_directories)'"),
            (Some(_), Complete::File) => line.push_str(" -r -F"),
            (Some(_), Complete::Nothing) => line.push_str(" -x"),
        }
        let _ = writeln!(out, "{line} -d '{}'", quote(&short_about(opt.about)));
    }
    out
}

/// The man page, in roff (`man -l` reads it).
pub fn man_page() -> String {
    let roff = |text: &str| {
        let escaped = text.replace('\\', "\\e").replace('-', "\\-");
        // A line starting with `.` or `'` would be read as a request.
        if escaped.starts_with(['.', '\'']) {
            format!("\\&{escaped}")
        } else {
            escaped
        }
    };
    let version = env!("CARGO_PKG_VERSION");
    let mut out = format!(
        ".TH DSH 1 \"\" \"dsh {version}\" \"User Commands\"\n.SH NAME\ndsh \\- {SUMMARY}\n\
         .SH SYNOPSIS\n"
    );
    for cmd in COMMANDS {
        let _ = writeln!(out, ".br\n\\fB{}\\fR", roff(cmd.usage));
    }
    let _ = write!(
        out,
        ".SH DESCRIPTION\n{}\n.PP\n{}\n.SH COMMANDS\n",
        roff(INTRO),
        roff(TASK)
    );
    for cmd in COMMANDS.iter().filter(|c| !c.about.is_empty()) {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", roff(cmd.usage), roff(cmd.about));
    }
    out.push_str(".SH OPTIONS\n");
    for opt in OPTIONS {
        let _ = writeln!(
            out,
            ".TP\n\\fB{}\\fR\n{}",
            roff(option_words(opt).trim()),
            roff(opt.about)
        );
    }
    out.push_str(".SH ENVIRONMENT\n");
    for (name, about) in ENVIRONMENT {
        let _ = writeln!(out, ".TP\n\\fB{}\\fR\n{}", roff(name), roff(about));
    }
    out.push_str(".SH EXAMPLES\n");
    for example in EXAMPLES {
        let _ = writeln!(out, ".PP\n.nf\n{}\n.fi", roff(example));
    }
    let _ = write!(
        out,
        ".SH EXIT STATUS\n{}\n.SH SEE ALSO\nThe documents in the docs/ folder of dsh's \
         repository: cli.md, config.md, tui.md, web.md.\n",
        roff(EXIT_STATUS)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option the parser matches on is described here, and every option described here
    /// is one the parser takes: the help, completions and man page cannot drift from it.
    #[test]
    fn the_definition_and_the_parser_name_the_same_options() {
        let parser = include_str!("cli.rs");
        let (parser, _) = parser.split_once("#[cfg(test)]").unwrap();
        let (_, matches) = parser.split_once("match name.as_str() {").unwrap();
        let (matches, _) = matches.split_once("if let Some(protocol) = serve").unwrap();
        for quoted in matches.split('"').skip(1).step_by(2) {
            if quoted.starts_with('-') && quoted.len() > 1 && !quoted.contains(' ') {
                assert!(
                    option(quoted).is_some(),
                    "{quoted} is parsed but not described"
                );
            }
        }
        for opt in OPTIONS {
            let arg = format!(
                "{}{}",
                opt.long,
                if opt.value.is_some() { "=x" } else { "" }
            );
            let parsed = super::super::cli::parse(
                vec![arg.clone().into(), "task".into()],
                super::super::cli::Terminals::default(),
            );
            if let Err(usage) = parsed {
                assert!(
                    !usage.message.starts_with("unknown option"),
                    "{arg} is described but not parsed"
                );
            }
        }
    }

    #[test]
    fn the_help_fits_its_width() {
        for line in help().lines() {
            assert!(line.chars().count() <= WIDTH + 12, "too wide: {line}");
        }
    }
}
