//! The command line, described once: its commands, each form's own flags, and the environment,
//! examples and exit statuses. The parser reads each command's flags from here, and `--help`,
//! the man page and the completions are drawn from it; a run's flags are in
//! [`super::run_flags`].

use super::flag::{Complete, Flag, Stop};
use super::run_flags::parse_duration;

/// A form of the command line: its words, what it does, and the flags it takes.
pub struct Form {
    /// The first word, which `dsh <word> --help` answers for; "" for a run itself.
    pub word: &'static str,
    /// The command line as `--help` shows it.
    pub usage: &'static str,
    pub about: &'static str,
    /// The flags of its own.
    pub flags: &'static [Flag],
    /// Whether it takes a run's flags ([`super::run_flags::RUN_FLAGS`]) too, and how.
    pub run_options: RunOptions,
}

/// How a command takes the flags of a run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RunOptions {
    None,
    /// All of them: it is a run.
    All,
    /// As the defaults of every session it serves; those about one run are refused.
    Defaults,
}

const fn form(word: &'static str, usage: &'static str, about: &'static str) -> Form {
    Form {
        word,
        usage,
        about,
        flags: &[],
        run_options: RunOptions::None,
    }
}

const fn with(
    word: &'static str,
    usage: &'static str,
    about: &'static str,
    flags: &'static [Flag],
    run_options: RunOptions,
) -> Form {
    Form {
        word,
        usage,
        about,
        flags,
        run_options,
    }
}

pub const SUMMARY: &str = "a coding agent for the command line";

pub const INTRO: &str = "On a terminal, opens a conversation (the terminal UI; the task words, \
if any, are the first message). Otherwise (stdin or stdout not a terminal, or --json, -o, `-`, \
headless) it answers one task and exits: the answer goes to stdout, the model's reasoning and \
diagnostics to stderr; the exit status is 0 only when the task completed.";

pub const TASK: &str = "The task is the words given, or stdin when there are none or a lone `-`.";

/// Every form, in the order `--help` and the man page list them.
pub const COMMANDS: &[Form] = &[
    with("", "dsh [OPTIONS] [TASK...]", "", &[], RunOptions::All),
    with(
        "resume",
        "dsh resume [OPTIONS]",
        "the terminal UI, from a session picked in a list",
        &[],
        RunOptions::All,
    ),
    with(
        "login",
        "dsh login [--model <name>]",
        "save the provider's API key, checked; asked without echo",
        KEY_FLAGS,
        RunOptions::None,
    ),
    with(
        "logout",
        "dsh logout [--model <name>]",
        "remove the saved key",
        KEY_FLAGS,
        RunOptions::None,
    ),
    form(
        "trust",
        "dsh trust [<folder>]",
        "let a folder's own .dsh/config.toml apply in full",
    ),
    form(
        "untrust",
        "dsh untrust [<folder>]",
        "keep what only a trusted project may set aside",
    ),
    with(
        "sessions",
        "dsh sessions list [--json]",
        "this directory's sessions, newest first",
        SESSIONS_LIST_FLAGS,
        RunOptions::None,
    ),
    with(
        "sessions",
        "dsh sessions show <id> [--json]",
        "one session's transcript",
        SESSIONS_SHOW_FLAGS,
        RunOptions::None,
    ),
    form(
        "sessions",
        "dsh sessions rename <id> <title>",
        "the name lists show for it; empty: none",
    ),
    with(
        "sessions",
        "dsh sessions search <text> [--limit <n>] [--json]",
        "every workspace's sessions, best match first",
        SESSIONS_SEARCH_FLAGS,
        RunOptions::None,
    ),
    with(
        "sessions",
        "dsh sessions export <id> [--format markdown|html]",
        "one session as a readable document, secrets redacted",
        SESSIONS_EXPORT_FLAGS,
        RunOptions::None,
    ),
    with(
        "sessions",
        "dsh sessions diff <a> <b> [--json]",
        "where two sessions went separate ways",
        SESSIONS_DIFF_FLAGS,
        RunOptions::None,
    ),
    with(
        "rewind",
        "dsh rewind <session> [--to <turn> | --before-call <call> | --undo] [OPTIONS]",
        "a session's turns; going back to one",
        REWIND_FLAGS,
        RunOptions::None,
    ),
    with(
        "blame",
        "dsh blame <file>[:<line>] [--json]",
        "the session, turn and call that wrote each line",
        BLAME_FLAGS,
        RunOptions::None,
    ),
    with(
        "replay",
        "dsh replay <session> --model <route> [--to <turn>] [--keep] [--json]",
        "a session's turns again on another model, side by side",
        REPLAY_FLAGS,
        RunOptions::None,
    ),
    with(
        "workflow",
        "dsh workflow <name> [--args <json>] [OPTIONS]",
        "run a saved workflow, .dsh/workflows/<name>.js",
        WORKFLOW_FLAGS,
        RunOptions::All,
    ),
    form("workflow", "dsh workflow list", "the saved workflows"),
    with(
        "web",
        "dsh web [--port <n>] [--host <addr>] [--open] [--app] [OPTIONS]",
        "the browser app, on 127.0.0.1:8976",
        WEB_FLAGS,
        RunOptions::Defaults,
    ),
    with(
        "acp",
        "dsh acp [OPTIONS]",
        "an Agent Client Protocol agent on stdio, for editors",
        &[],
        RunOptions::Defaults,
    ),
    with(
        "app-server",
        "dsh app-server [OPTIONS]",
        "the SDKs' protocol on stdio (docs/sdk.md)",
        &[],
        RunOptions::Defaults,
    ),
    with(
        "mcp-server",
        "dsh mcp-server [OPTIONS]",
        "an MCP server on stdio: tools dsh, dsh-reply",
        &[],
        RunOptions::Defaults,
    ),
    with(
        "mcp",
        "dsh mcp login <server> [--timeout <duration>] [--no-browser]",
        "sign in to an MCP server, in the browser",
        MCP_LOGIN_FLAGS,
        RunOptions::None,
    ),
    form(
        "mcp",
        "dsh mcp logout <server>",
        "forget an MCP server's sign-in",
    ),
    with(
        "mcp",
        "dsh mcp list [--json]",
        "the MCP servers and their sign-ins",
        MCP_LIST_FLAGS,
        RunOptions::None,
    ),
    with(
        "sandbox",
        "dsh sandbox check [--patch <file>]...",
        "which sandbox would confine commands",
        SANDBOX_FLAGS,
        RunOptions::None,
    ),
    form(
        "completions",
        "dsh completions bash|zsh|fish",
        "a completion script for the shell",
    ),
    form("man", "dsh man", "this help as a man page, in roff"),
    with(
        "",
        "dsh --profile headless [OPTIONS] [TASK...]",
        "always headless; as DeepSeek Harness takes it",
        &[],
        RunOptions::All,
    ),
    with(
        "headless",
        "dsh headless [OPTIONS] [TASK...]",
        "always headless, as --profile headless",
        &[],
        RunOptions::All,
    ),
];

/// `dsh login` and `dsh logout`.
pub const KEY_FLAGS: &[Flag] = &[Flag::valued(
    "--model",
    "<name>",
    Complete::Nothing,
    "The model whose provider the key is for (default: the configured model)",
    |p, given| {
        p.flags.model = Some(given.required()?.to_owned());
        Ok(())
    },
)
.whole()];

pub const SESSIONS_LIST_FLAGS: &[Flag] = &[json(
    "With list: one JSON object a session, a line each (docs/events.schema.json, \
     sessionSummary)",
)];

pub const SESSIONS_SHOW_FLAGS: &[Flag] = &[json(
    "With show: the decoded log as JSON lines, its header and then a record a line \
     (docs/events.schema.json, logLine)",
)];

pub const SESSIONS_SEARCH_FLAGS: &[Flag] = &[
    Flag::valued(
        "--limit",
        "<n>",
        Complete::Nothing,
        "With search: at most this many sessions (default 20)",
        |p, given| {
            let value = given.required()?;
            let n = value.parse::<usize>().ok().filter(|n| *n > 0);
            p.limit = Some(n.ok_or_else(|| {
                let message =
                    format!("--limit takes a number of sessions, 1 or more, not \"{value}\"");
                Stop::refused(message, true)
            })?);
            Ok(())
        },
    )
    .whole(),
    json(
        "With search: one JSON object a session found, best first (docs/events.schema.json, \
         searchHit)",
    ),
];

pub const SESSIONS_EXPORT_FLAGS: &[Flag] = &[Flag::valued(
    "--format",
    "<markdown|html>",
    Complete::Words(&["markdown", "html"]),
    "With export: markdown (the default) or html, one self-contained page",
    |p, given| {
        let value = given.required()?;
        let format = value
            .parse()
            .map_err(|e: dsh_core::export::UnknownFormat| Stop::refused(e.to_string(), true))?;
        p.export_format = Some(format);
        Ok(())
    },
)
.whole()];

pub const SESSIONS_DIFF_FLAGS: &[Flag] = &[json(
    "With diff: one JSON object, both sessions and where they diverged (docs/events.schema.json, \
     sessionDiff)",
)];

pub const BLAME_FLAGS: &[Flag] = &[json(
    "With blame: one JSON object a line of the file (docs/events.schema.json, blameLine)",
)];

pub const REPLAY_FLAGS: &[Flag] = &[
    Flag::valued(
        "--model",
        "<route>",
        Complete::Nothing,
        "The model to replay on, as --model names it for a run (provider/model)",
        |p, given| {
            let model = given.value.filter(|m| !m.is_empty() && !m.starts_with('-'));
            let model = model.ok_or_else(|| {
                Stop::refused(
                    format!("--model needs a model to replay on: {}", synopsis("replay")),
                    true,
                )
            })?;
            p.flags.model = Some(model.to_owned());
            Ok(())
        },
    )
    .whole(),
    Flag::valued(
        "--to",
        "<turn>",
        Complete::Nothing,
        "Replay the turns up to this one (its number in the session), not all of them",
        |p, given| {
            let value = given.value.unwrap_or_default();
            p.to_turn = Some(turn_number(value)?);
            Ok(())
        },
    )
    .whole(),
    Flag::switch(
        "--keep",
        "Keep the scratch folder the replay ran in (removed at the end without it)",
        |p, _| {
            p.keep = true;
            Ok(())
        },
    )
    .whole(),
    json(
        "One JSON object: each turn side by side, the totals and whether the final files match \
         (docs/events.schema.json, replayReport)",
    ),
];

pub const MCP_LIST_FLAGS: &[Flag] = &[json(
    "With list: one JSON array of the servers (docs/events.schema.json, mcpServers)",
)];

/// A turn's number as `--to` takes it: 1, 2, ...
fn turn_number(value: &str) -> Result<u32, Stop> {
    let turn = value.parse::<u32>().ok().filter(|n| *n > 0);
    turn.ok_or_else(|| {
        let message = format!("--to takes a turn number (1, 2, ...), got \"{value}\"");
        Stop::refused(message, true)
    })
}

/// A command's `--json`, described as `about`.
const fn json(about: &'static str) -> Flag {
    Flag::switch("--json", about, |p, _| {
        p.json = true;
        Ok(())
    })
    .whole()
}

pub const REWIND_FLAGS: &[Flag] = &[
    Flag::valued(
        "--to",
        "<turn>",
        Complete::Nothing,
        "Go back to the start of this turn (1, 2, ...): its files and conversation",
        |p, given| {
            let Some(value) = given.value else {
                let message = format!("--to needs a turn number: {}", synopsis("rewind"));
                return Err(Stop::refused(message, true));
            };
            p.to_turn = Some(turn_number(value)?);
            Ok(())
        },
    )
    .whole(),
    Flag::switch("--files", "With --to: the files only", |p, _| {
        p.files_only = true;
        Ok(())
    })
    .whole(),
    Flag::switch(
        "--conversation",
        "With --to: the conversation only",
        |p, _| {
            p.conversation_only = true;
            Ok(())
        },
    )
    .whole(),
    Flag::valued(
        "--before-call",
        "<call>",
        Complete::Nothing,
        "Take the files back to just before this escalated call (the listing names them)",
        |p, given| {
            let call = given.value.filter(|call| !call.starts_with('-'));
            let call = call.ok_or_else(|| {
                let message = format!("--before-call needs a call id: {}", synopsis("rewind"));
                Stop::refused(message, true)
            })?;
            p.before_call = Some(call.to_owned());
            Ok(())
        },
    )
    .whole(),
    Flag::switch("--undo", "Undo the last rewind", |p, _| {
        p.undo = true;
        Ok(())
    })
    .whole(),
    Flag::switch(
        "--yes",
        "Do it; without it only the plan is shown",
        |p, _| {
            p.yes = true;
            Ok(())
        },
    )
    .short('y')
    .whole(),
    Flag::switch(
        "--force",
        "Rewind even though files changed outside dsh since the last checkpoint (kept for --undo)",
        |p, _| {
            p.force = true;
            Ok(())
        },
    )
    .whole(),
    json(
        "One JSON value: the listing, or the plan and what was done (docs/events.schema.json, \
         rewindTurns and rewindReport); an error is the stream's error event",
    ),
];

pub const WORKFLOW_FLAGS: &[Flag] = &[Flag::valued(
    "--args",
    "<json>",
    Complete::Nothing,
    "The script's args: a JSON object, as '{\"n\": 3}'",
    |p, given| {
        let text = given.required()?;
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            Stop::refused(
                format!("--args is not JSON ({e}): give an object, as '{{\"n\": 3}}'"),
                true,
            )
        })?;
        if !value.is_object() {
            return Err(Stop::refused(
                "--args must be a JSON object, as '{\"n\": 3}'",
                true,
            ));
        }
        p.workflow_args = Some(value);
        Ok(())
    },
)
.whole()];

pub const WEB_FLAGS: &[Flag] = &[
    Flag::valued(
        "--port",
        "<n>",
        Complete::Nothing,
        "The port (default: 8976; 0 for any free one)",
        |p, given| {
            let value = given.value.unwrap_or_default();
            p.port = Some(value.parse().map_err(|_| {
                Stop::refused(
                    format!("--port takes a port number (0 for any free one), got \"{value}\""),
                    true,
                )
            })?);
            Ok(())
        },
    )
    .whole(),
    Flag::valued(
        "--host",
        "<addr>",
        Complete::Nothing,
        "The address to listen on (default: 127.0.0.1)",
        |p, given| {
            let host = given.value.filter(|host| !host.is_empty());
            let host = host
                .ok_or_else(|| Stop::refused("--host needs an address, such as 127.0.0.1", true))?;
            p.host = Some(host.to_owned());
            Ok(())
        },
    )
    .whole(),
    Flag::switch("--open", "Open the app in the browser", |p, _| {
        p.open = true;
        Ok(())
    })
    .whole(),
    Flag::switch(
        "--app",
        "Open the app in a window of its own: a Chromium-family browser's app mode (chromium, \
         google-chrome, brave, microsoft-edge) where one is on PATH, else the default browser",
        |p, _| {
            p.app = true;
            Ok(())
        },
    )
    .whole(),
];

pub const MCP_LOGIN_FLAGS: &[Flag] = &[
    Flag::valued(
        "--timeout",
        "<duration>",
        Complete::Nothing,
        "With login: how long to wait for the browser, as 90s or 10m (default: 5 minutes)",
        |p, given| {
            let value = given.value.ok_or_else(|| {
                Stop::refused("--timeout needs a duration, such as 90s or 5m", true)
            })?;
            p.timeout = Some(parse_duration(value).ok_or_else(|| {
                Stop::refused(
                    format!("--timeout takes a duration such as 90s or 5m, got \"{value}\""),
                    true,
                )
            })?);
            Ok(())
        },
    )
    .whole(),
    Flag::switch(
        "--no-browser",
        "With login: only print the address to sign in at; open no browser",
        |p, _| {
            p.no_browser = true;
            Ok(())
        },
    )
    .whole(),
];

pub const SANDBOX_FLAGS: &[Flag] = &[Flag::valued(
    "--patch",
    "<file>",
    Complete::File,
    "Apply a config file over the others, as a run does (repeatable)",
    |p, given| {
        p.flags.patches.push(given.required()?.into());
        Ok(())
    },
)];

/// The first words of the commands, for completing the first word.
pub const COMMAND_WORDS: &[&str] = &[
    "resume",
    "login",
    "logout",
    "trust",
    "untrust",
    "sessions",
    "rewind",
    "blame",
    "replay",
    "workflow",
    "web",
    "acp",
    "app-server",
    "mcp-server",
    "mcp",
    "sandbox",
    "completions",
    "man",
    "headless",
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
        "dsh's own folder (default: ~/.dsh): config, saved keys and sign-ins, sessions, \
         checkpoints, your skills, prompts, workflows and hooks",
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

/// The forms of the command `word` (`rewind`, `mcp`), none for a word that is not one.
pub fn forms(word: &str) -> impl Iterator<Item = &'static Form> + '_ {
    COMMANDS
        .iter()
        .filter(move |form| !word.is_empty() && form.word == word)
}

/// The usage lines of the command `word`, as errors quote them: `dsh mcp logout <server> |
/// dsh mcp list [--json]`.
pub fn synopsis(word: &str) -> String {
    forms(word)
        .map(|form| form.usage)
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests {
    use super::super::run_flags::RUN_FLAGS;
    use super::super::{Terminals, parse};
    use super::*;

    /// The words of a form's command line up to its options, a sample for each placeholder:
    /// `dsh mcp login <server> [...]` is `mcp login x`.
    fn form_words(usage: &str) -> Vec<String> {
        (usage.split_whitespace().skip(1))
            .take_while(|w| !w.starts_with('[') && !w.contains('|'))
            .map(|w| if w.starts_with('<') { "x" } else { w }.to_owned())
            .collect()
    }

    /// Each flag described for a command is taken by its parser after its words, as `--help`,
    /// the man page and the completions say; and each of a run's flags by a run.
    #[test]
    fn each_command_takes_the_flags_described_for_it() {
        let sample = |flag: &Flag| match flag.long {
            "--to" => "2",
            "--args" => "{}",
            "--timeout" | "--max-steps" | "--max-turns" => "90",
            "--port" => "0",
            "--effort" => "high",
            "--preset" => "minimal",
            "--permission-mode" => "read-only",
            "--approval-policy" => "ask",
            "--input-format" => "text",
            "--profile" => "headless",
            "--max-budget-usd" => "0.5",
            _ => "x",
        };
        let mut lines: Vec<Vec<String>> = Vec::new();
        for form in COMMANDS.iter().filter(|f| !f.word.is_empty()) {
            for flag in form.flags {
                let mut args = form_words(form.usage);
                args.push(flag.long.to_owned());
                args.extend(flag.value.map(|_| sample(flag).to_owned()));
                lines.push(args);
            }
        }
        for flag in RUN_FLAGS
            .iter()
            .filter(|f| f.long != "--help" && f.long != "--version")
        {
            let mut args = vec![flag.long.to_owned()];
            args.extend(flag.value.map(|_| sample(flag).to_owned()));
            args.push("task".into());
            lines.push(args);
        }
        assert!(lines.len() > 40, "{lines:?}");
        for args in lines {
            let parsed = parse(args.iter().map(Into::into).collect(), Terminals::default());
            if let Err(usage) = parsed {
                let refusals = [
                    "unknown option",
                    "takes only",
                    "unexpected",
                    "takes no",
                    "needs",
                ];
                for refusal in refusals {
                    assert!(
                        !usage.message.contains(refusal),
                        "{args:?}: {}",
                        usage.message
                    );
                }
            }
        }
    }

    /// A name is one flag's wherever it is read: among a form's own flags and the run's it
    /// takes too.
    #[test]
    fn no_two_flags_read_together_share_a_name() {
        for form in COMMANDS {
            let run: &[Flag] = if form.run_options == RunOptions::None {
                &[]
            } else {
                RUN_FLAGS
            };
            let mut names: Vec<String> = Vec::new();
            for flag in form.flags.iter().chain(run) {
                for name in
                    std::iter::once(flag.long.to_owned()).chain(flag.short.map(|s| format!("-{s}")))
                {
                    assert!(!names.contains(&name), "{name} twice in {}", form.usage);
                    names.push(name);
                }
            }
        }
    }
}
