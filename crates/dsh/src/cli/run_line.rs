//! A command line that starts a run or serves sessions: its flags ([`super::run_flags`]), then
//! its words, decide between a headless run, the terminal UI, `--dump-config`, a saved
//! workflow and the protocol servers.
//!
//! The terminal UI is for a person: it opens only with a terminal on stdin and stdout and no
//! sign of a supervisor (`headless`, `--profile headless`, `--json`, `-o`, `-` for stdin), so
//! every command line that ran headless before still does.

use super::command::{
    Command, Protocol, RunArgs, TASK_REQUIRED, TaskSource, Terminals, TuiArgs, UsageError, WebArgs,
};
use super::commands::WEB_FLAGS;
use super::flag::{Parsed, Stop, Word, scan};
use super::run_flags::RUN_FLAGS;
use super::subcommands;

/// What the words before a run's flags said.
pub struct Start {
    pub terminals: Terminals,
    /// `headless` came first: always headless, and the headless profile.
    pub headless_word: bool,
    /// `dsh resume` at a terminal: start from the list of sessions.
    pub pick_session: bool,
    /// Whether `--json` was asked for, so an error is also written as an event.
    pub json: bool,
}

/// Reads a run's command line (after `headless` and `resume`).
pub fn parse(mut args: Vec<String>, start: Start) -> Result<Command, UsageError> {
    let Start {
        terminals,
        headless_word,
        mut pick_session,
        json,
    } = start;
    let mut headless = headless_word;
    let refused = |stop: Stop| UsageError::of(stop, json, None);
    let mut parsed = Parsed::default();
    // `dsh workflow NAME [--args JSON] [options]`: always headless; the options are a run's.
    let mut workflow = None;
    if args.first().is_some_and(|a| a == "workflow") {
        let read = match subcommands::workflow(&args[1..], &mut parsed) {
            Ok(read) => read,
            Err(stop) => return UsageError::of(stop, json, Some("dsh workflow --help")),
        };
        match read {
            None => return Ok(Command::WorkflowList),
            Some((name, rest)) => {
                workflow = Some(name);
                args = rest;
                headless = true;
            }
        }
    }
    let serve = match args.first().map(String::as_str) {
        Some("mcp-server") if !headless => Some(Protocol::Mcp),
        Some("acp") if !headless => Some(Protocol::Acp),
        Some("app-server") if !headless => Some(Protocol::App),
        Some("web") if !headless => Some(Protocol::Web),
        _ => None,
    };
    if serve.is_some() {
        args.remove(0);
        pick_session = false;
    }
    // `dsh web`'s own flags, taken out wherever they are before the run's are read.
    if serve == Some(Protocol::Web) {
        args = match scan(args, WEB_FLAGS, &mut parsed, |_| Ok(Word::Keep)) {
            Ok(rest) => rest,
            Err(stop) => return refused(stop),
        };
    }
    let words = match scan(args, RUN_FLAGS, &mut parsed, |arg| {
        if arg == "--" {
            Ok(Word::Rest)
        } else if arg == "-" || !arg.starts_with('-') {
            Ok(Word::Keep)
        } else {
            Err(Stop::refused(format!("unknown option '{arg}'"), true))
        }
    }) {
        Ok(words) => words,
        Err(stop) => return refused(stop),
    };
    let fail = |message: &str, hint: bool| refused(Stop::refused(message, hint));
    headless |= parsed.profile;
    // The headless profile asked for by name, not only a run with no terminal: it ignores
    // stored authentication, as the reference's profile does.
    let profile = headless_word || parsed.profile;
    let dump_config = parsed.dump_config;
    let mut run = RunArgs {
        json: parsed.json,
        task: TaskSource::Stdin,
        output_last_message: parsed.output_last_message,
        timeout: parsed.timeout,
        stream_input: parsed.stream_input,
        flags: parsed.flags,
    };
    run.flags.headless_profile = profile;
    if let Some(protocol) = serve {
        let flags = match serving(protocol, run, &words, dump_config) {
            Ok(flags) => flags,
            Err(message) => return fail(&message, false),
        };
        return Ok(match protocol {
            Protocol::Web => Command::Web(WebArgs {
                flags,
                host: parsed.host.unwrap_or_else(|| "127.0.0.1".into()),
                port: parsed.port.unwrap_or(8976),
                open: parsed.open,
                app: parsed.app,
            }),
            protocol => Command::Serve { protocol, flags },
        });
    }
    let workflow = workflow.map(|name| (name, parsed.workflow_args));
    let how = How {
        terminals,
        headless,
        pick_session,
        dump_config,
        workflow,
    };
    finish(run, words, how).or_else(|(message, hint)| fail(&message, hint))
}

/// What decides what a run's command line is, beside its flags and words.
struct How {
    terminals: Terminals,
    headless: bool,
    pick_session: bool,
    dump_config: bool,
    /// `dsh workflow NAME`: its name and `--args`.
    workflow: Option<(String, Option<serde_json::Value>)>,
}

/// A run's command line, read, as the command it is: `--dump-config`, a saved workflow, a
/// headless run or the terminal UI; or the refusal and whether it points at the help.
fn finish(mut run: RunArgs, mut words: Vec<String>, how: How) -> Result<Command, (String, bool)> {
    let How {
        terminals,
        headless,
        mut pick_session,
        dump_config,
        workflow,
    } = how;
    let fail = |message: &str, hint: bool| Err((message.to_owned(), hint));
    if dump_config && run.json {
        // Its rows are text for a person; a supervisor asking for JSON lines must not get them
        // unannounced.
        return fail(
            "--dump-config prints text rows, not the --json stream: leave --json out",
            false,
        );
    }
    if let Some((name, args)) = workflow {
        if !words.is_empty() || run.stream_input {
            return fail(
                &format!(
                    "`dsh workflow {name}` runs the saved workflow and takes no task: give its \
                     values with --args '{{\"key\": ...}}'"
                ),
                true,
            );
        }
        run.task = TaskSource::Workflow { name, args };
        if dump_config {
            return Ok(Command::DumpConfig(run));
        }
        return Ok(Command::Run(run));
    }
    if dump_config {
        return Ok(Command::DumpConfig(run));
    }
    if run.stream_input {
        if !run.json {
            return fail(
                "--input-format stream-json answers in the --json stream: add --json",
                false,
            );
        }
        if !words.is_empty() || run.output_last_message.is_some() {
            return fail(
                "--input-format stream-json reads every message from stdin: give no task words \
                 and no -o",
                false,
            );
        }
        return Ok(Command::Run(run));
    }
    let supervised = headless
        || run.json
        || run.output_last_message.is_some()
        || run.timeout.is_some()
        || run.flags.output_schema.is_some()
        || words.iter().any(|w| w == "-");
    if pick_session && supervised {
        words.insert(0, "resume".into());
        pick_session = false;
    }
    if pick_session && !words.is_empty() {
        return fail(
            "dsh resume takes no task: pick the session, then type",
            false,
        );
    }
    let interactive = terminals.stdin && terminals.stdout;
    if interactive && !supervised {
        let task = words.join(" ");
        return Ok(Command::Tui(TuiArgs {
            flags: run.flags,
            task: (!task.trim().is_empty()).then_some(task),
            pick_session,
        }));
    }
    run.task = if words.is_empty() {
        if terminals.stdin {
            return fail(TASK_REQUIRED, false);
        }
        TaskSource::Stdin
    } else if words.iter().any(|w| w == "-") {
        if words.len() > 1 {
            return fail("`-` must be the only task argument", false);
        }
        TaskSource::Stdin
    } else {
        let task = words.join(" ");
        if task.trim().is_empty() {
            return fail(TASK_REQUIRED, false);
        }
        TaskSource::Words(task)
    };
    Ok(Command::Run(run))
}

/// `dsh mcp-server` and `dsh acp` take the settings every session starts from, nothing
/// about one run: each session is asked for over the protocol.
fn serving(
    protocol: Protocol,
    run: RunArgs,
    words: &[String],
    dump_config: bool,
) -> Result<dsh_core::Flags, String> {
    let command = protocol.command();
    if let Some(word) = words.first() {
        return Err(format!(
            "{command} takes no task (got \"{word}\"): tasks come over the protocol on stdin"
        ));
    }
    let flags = &run.flags;
    let one_run = [
        (run.json, "--json"),
        (run.output_last_message.is_some(), "-o"),
        (run.timeout.is_some(), "--timeout"),
        (run.stream_input, "--input-format"),
        (flags.output_schema.is_some(), "--output-schema"),
        (flags.session_id.is_some(), "--session-id"),
        (flags.continue_latest, "--continue"),
        (flags.fork, "--fork"),
        (dump_config, "--dump-config"),
    ];
    if let Some((_, option)) = one_run.iter().find(|(given, _)| *given) {
        return Err(format!(
            "{command} does not take {option}: it is about one run, and the client picks each \
             session"
        ));
    }
    Ok(run.flags)
}
