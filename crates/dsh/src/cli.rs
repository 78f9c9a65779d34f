//! The command line: one description of every command and flag ([`commands`] and
//! [`run_flags`], each flag a [`flag::Flag`] that knows its names, help and what it sets), which
//! parses the arguments and draws `--help` ([`help`]), the man page ([`man`]) and the shell
//! completions ([`completions`]).
//!
//! Compatible with the reference's headless mode: `dsh --profile headless [OPTIONS] [TASK...]`,
//! and `dsh headless ...`, are the same as `dsh [OPTIONS] [TASK...]`. Options may come anywhere
//! before `--`; task words are joined with single spaces. The usage-error texts are the
//! reference's (supervisors match them), without commander's `error: ` prefix.

use std::ffi::OsString;

mod command;
mod commands;
mod completions;
mod flag;
mod help;
mod man;
mod run_flags;
mod run_line;
mod subcommands;

pub use command::{
    Command, Protocol, RunArgs, TASK_REQUIRED, TaskSource, Terminals, UsageError, version,
};
pub use completions::completions;
pub use help::{command_help, help};
pub use man::man_page;

use flag::Stop;
use run_flags::{HELP, JSON, takes_value};

/// A command read by its own parser, by its first word: whether the word is still a command
/// after `headless` (elsewhere it is a task word there), and the parser of what follows it.
type Reader = (&'static str, bool, fn(&[String]) -> Result<Command, Stop>);

/// The commands that are not runs. The others (a run, `resume`, `headless`, `workflow` and the
/// protocol servers) take a run's flags and are read by [`run_line`].
const READERS: &[Reader] = &[
    ("sandbox", true, subcommands::sandbox),
    ("completions", false, subcommands::completions),
    ("man", false, subcommands::man),
    ("login", false, |args| subcommands::key(false, args)),
    ("logout", false, |args| subcommands::key(true, args)),
    ("trust", false, |args| subcommands::trust(false, args)),
    ("untrust", false, |args| subcommands::trust(true, args)),
    ("sessions", true, subcommands::sessions),
    ("mcp", true, subcommands::mcp),
    ("rewind", true, subcommands::rewind),
    ("blame", true, subcommands::blame),
    ("replay", true, subcommands::replay),
];

/// Parses the arguments after the program name. `terminals` decides between the terminal UI
/// and a headless run, and whether a missing task is an error or a task to read from stdin.
pub fn parse(args: Vec<OsString>, terminals: Terminals) -> Result<Command, UsageError> {
    // A protocol server's stdout carries only its protocol: its usage errors, `--json`
    // among them, go to stderr alone.
    let protocol_server = args
        .first()
        .is_some_and(|a| a == "mcp-server" || a == "acp" || a == "app-server");
    let json = wants_json(&args) && !protocol_server;
    let fail = |message: String| UsageError {
        message,
        json,
        hint: None,
    };
    let mut args: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| a.to_string_lossy().into_owned())
        })
        .collect::<Result<_, _>>()
        .map_err(|a| fail(format!("argument \"{a}\" is not valid UTF-8")))?;
    if let Some(word) = asks_help_of(&args) {
        return Ok(Command::HelpOf(word));
    }
    if args.first().is_some_and(|a| a == "exec") {
        return Err(fail(NOT_EXEC.into()));
    }
    let headless = args.first().is_some_and(|a| a == "headless");
    if headless {
        args.remove(0);
    }
    // `resume` is a command only where the UI can open; elsewhere it is a task word, as it
    // always was.
    let interactive = terminals.stdin && terminals.stdout;
    let pick_session = interactive && !headless && args.first().is_some_and(|a| a == "resume");
    if pick_session {
        args.remove(0);
    }
    let reader = args.first().and_then(|first| {
        (READERS.iter())
            .find(|(word, after_headless, _)| first == word && (*after_headless || !headless))
    });
    if let Some((word, _, read)) = reader {
        // A command's own grammar errors point at its own help.
        let help = format!("dsh {word} --help");
        return read(&args[1..]).or_else(|stop| UsageError::of(stop, json, Some(&help)));
    }
    let start = run_line::Start {
        terminals,
        headless_word: headless,
        pick_session,
        json,
    };
    run_line::parse(args, start)
}

/// What `exec` as the first word is told: other agents' habit (`codex exec "task"`) would
/// otherwise become the task "exec task".
const NOT_EXEC: &str = "`exec` is not a dsh command: dsh runs the task words as they are \
    (dsh \"fix the tests\"; with --profile headless, --json or -o it runs without the terminal \
    UI, answers once and exits). A task that starts with the word exec goes after -- \
    (dsh -- exec ...) or in quotes with the rest";

/// The command whose `--help` the arguments ask for: a command word first, then `--help` or
/// `-h` anywhere before `--`.
fn asks_help_of(args: &[String]) -> Option<String> {
    let (word, rest) = args.split_first()?;
    let wants = (rest.iter()).take_while(|a| *a != "--").any(|a| HELP.is(a));
    (wants && commands::forms(word).next().is_some()).then(|| word.clone())
}

/// Whether `--json` appears before `--`, not as the value of another option: decides how a
/// usage error found before it is reported.
fn wants_json(args: &[OsString]) -> bool {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            return false;
        }
        if JSON.is(arg) {
            return true;
        }
        if takes_value(arg) {
            iter.next();
        }
    }
    false
}

#[cfg(test)]
mod doc_examples;

#[cfg(test)]
mod tests {
    use super::*;
    use command::TuiArgs;
    use dsh_core::Flags;
    use dsh_core::config::{ApprovalPolicy, Effort, Usd};
    use pretty_assertions::assert_eq;
    use run_flags::parse_duration;

    fn parse_args(args: &[&str]) -> Result<Command, UsageError> {
        parse(
            args.iter().map(OsString::from).collect(),
            Terminals::default(),
        )
    }

    fn words(task: &str) -> Command {
        Command::Run(RunArgs {
            json: false,
            task: TaskSource::Words(task.into()),
            output_last_message: None,
            timeout: None,
            stream_input: false,
            flags: Flags::default(),
        })
    }

    #[test]
    fn run_caps_are_parsed_and_bad_ones_named() {
        let Ok(Command::Run(run)) = parse_args(&[
            "--max-turns",
            "3",
            "--max-budget-usd",
            "$0.25",
            "--timeout=90s",
            "go",
        ]) else {
            panic!("a run");
        };
        assert_eq!(run.flags.max_turns, Some(3));
        assert_eq!(run.flags.max_budget_usd.map(Usd::value), Some(0.25));
        assert_eq!(run.timeout, Some(std::time::Duration::from_secs(90)));
        assert_eq!(
            parse_duration("500ms"),
            Some(std::time::Duration::from_millis(500))
        );
        assert_eq!(
            parse_duration("2m"),
            Some(std::time::Duration::from_secs(120))
        );
        assert_eq!(
            parse_duration("1.5"),
            Some(std::time::Duration::from_millis(1500))
        );
        for bad in ["0", "-1s", "10x", "", "s"] {
            assert_eq!(parse_duration(bad), None, "{bad:?}");
        }
        for (args, needle) in [
            (
                &["--max-turns", "0", "go"][..],
                "--max-turns needs a positive whole number",
            ),
            (
                &["--max-budget-usd", "free", "go"],
                "--max-budget-usd needs a positive amount",
            ),
            (&["--timeout", "soon", "go"], "--timeout needs a duration"),
        ] {
            let error = parse_args(args).unwrap_err();
            assert!(error.message.starts_with(needle), "{}", error.message);
        }
    }

    /// Parsed as from a person's terminal.
    fn at_a_terminal(args: &[&str]) -> Result<Command, UsageError> {
        let both = Terminals {
            stdin: true,
            stdout: true,
        };
        parse(args.iter().map(OsString::from).collect(), both)
    }

    fn ui(task: Option<&str>, pick_session: bool) -> Command {
        Command::Tui(TuiArgs {
            flags: Flags::default(),
            task: task.map(str::to_owned),
            pick_session,
        })
    }

    #[test]
    fn a_terminal_opens_the_ui_unless_a_supervisor_is_asking() {
        assert_eq!(at_a_terminal(&[]).unwrap(), ui(None, false));
        assert_eq!(
            at_a_terminal(&["fix", "it"]).unwrap(),
            ui(Some("fix it"), false)
        );
        assert_eq!(at_a_terminal(&["resume"]).unwrap(), ui(None, true));
        assert!(
            at_a_terminal(&["resume", "now"])
                .unwrap_err()
                .message
                .contains("takes no task")
        );
        // Each sign of a supervisor keeps the run headless, `resume` a task word.
        for args in [
            &["headless", "resume"][..],
            &["--profile", "headless", "resume"],
            &["--json", "resume"],
            &["-o", "answer.txt", "resume"],
        ] {
            let Ok(Command::Run(run)) = at_a_terminal(args) else {
                panic!("{args:?} should run headless");
            };
            assert_eq!(run.task, TaskSource::Words("resume".into()), "{args:?}");
        }
        let Ok(Command::Run(run)) = at_a_terminal(&["-"]) else {
            panic!("`-` reads the task from stdin, headless");
        };
        assert_eq!(run.task, TaskSource::Stdin);
        // Only stdout a terminal, or only stdin: headless as before.
        let stdout_only = Terminals {
            stdin: false,
            stdout: true,
        };
        assert_eq!(
            parse(vec!["resume".into()], stdout_only).unwrap(),
            words("resume")
        );
        assert!(matches!(
            at_a_terminal(&["--dump-config"]).unwrap(),
            Command::DumpConfig(_)
        ));
    }

    #[test]
    fn the_protocol_servers_take_session_defaults_and_refuse_one_run_options() {
        let Ok(Command::Serve { protocol, flags }) =
            parse_args(&["acp", "--model", "deepseek-reasoner"])
        else {
            panic!("dsh acp is not a server")
        };
        assert_eq!(protocol, Protocol::Acp);
        assert_eq!(flags.model.as_deref(), Some("deepseek-reasoner"));
        assert!(matches!(
            parse_args(&["mcp-server"]),
            Ok(Command::Serve {
                protocol: Protocol::Mcp,
                ..
            })
        ));
        assert!(matches!(
            parse_args(&["app-server", "--permission-mode", "plan"]),
            Ok(Command::Serve {
                protocol: Protocol::App,
                ..
            })
        ));
        let task = parse_args(&["acp", "fix", "it"]).unwrap_err();
        assert_eq!(
            task.message,
            "dsh acp takes no task (got \"fix\"): tasks come over the protocol on stdin"
        );
        let json = parse_args(&["mcp-server", "--json"]).unwrap_err();
        assert!(
            json.message
                .starts_with("dsh mcp-server does not take --json"),
            "{}",
            json.message
        );
        // After `headless`, the word is a task, as the reference reads it.
        let Ok(Command::Run(run)) = parse_args(&["headless", "acp"]) else {
            panic!("a run")
        };
        assert_eq!(run.task, TaskSource::Words("acp".into()));
    }

    #[test]
    fn joins_task_words_and_accepts_the_reference_forms() {
        assert_eq!(
            parse_args(&["run", "the", "tests"]).unwrap(),
            words("run the tests")
        );
        // The profile by name: a run that ignores stored authentication (Flags says so).
        let Command::Run(mut profiled) = words("go") else {
            panic!()
        };
        profiled.flags.headless_profile = true;
        let profiled = Command::Run(profiled);
        assert_eq!(
            parse_args(&["--profile", "headless", "go"]).unwrap(),
            profiled
        );
        assert_eq!(parse_args(&["headless", "go"]).unwrap(), profiled);
        assert_eq!(parse_args(&["--", "--json"]).unwrap(), words("--json"));
        // A run with no terminal is headless but not the profile.
        assert_eq!(parse_args(&["go"]).unwrap(), words("go"));
    }

    #[test]
    fn reads_stdin_without_words_or_with_a_lone_dash() {
        let Command::Run(run) = parse_args(&["--json", "-"]).unwrap() else {
            panic!()
        };
        assert_eq!(run.task, TaskSource::Stdin);
        assert!(run.json);
        let Command::Run(run) = parse_args(&[]).unwrap() else {
            panic!()
        };
        assert_eq!(run.task, TaskSource::Stdin);
    }

    #[test]
    fn refuses_bad_tasks() {
        assert_eq!(parse_args(&["   "]).unwrap_err().message, TASK_REQUIRED);
        let stdin_only = Terminals {
            stdin: true,
            stdout: false,
        };
        assert_eq!(
            parse(vec![], stdin_only).unwrap_err().message,
            TASK_REQUIRED
        );
        assert_eq!(
            parse_args(&["-", "x"]).unwrap_err().message,
            "`-` must be the only task argument"
        );
    }

    #[test]
    fn grammar_errors_use_the_reference_texts() {
        assert_eq!(
            parse_args(&["--bogus"]).unwrap_err().message,
            "unknown option '--bogus'"
        );
        assert_eq!(
            parse_args(&["--model"]).unwrap_err().message,
            "option '--model <name>' argument missing"
        );
        assert_eq!(
            parse_args(&["--profile", "web", "x"])
                .unwrap_err()
                .message
                .split(':')
                .next(),
            Some("profile \"web\" is not available")
        );
    }

    #[test]
    fn json_mode_is_seen_before_the_error_and_not_in_values() {
        assert!(parse_args(&["--bogus", "--json"]).unwrap_err().json);
        assert!(
            !parse_args(&["--model", "--json", "--bogus"])
                .unwrap_err()
                .json
        );
        assert!(!parse_args(&["--bogus", "--", "--json"]).unwrap_err().json);
    }

    #[test]
    fn tool_lists_add_up_and_an_empty_one_allows_nothing() {
        let Command::Run(run) = parse_args(&[
            "--tools",
            "read,grep",
            "--tools=glob",
            "--disallowed-tools",
            "bash, write",
            "x",
        ])
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            run.flags.tools,
            Some(vec!["read".into(), "grep".into(), "glob".into()])
        );
        assert_eq!(run.flags.disallowed_tools, vec!["bash", "write"]);
        let Command::Run(run) = parse_args(&["--tools", "", "x"]).unwrap() else {
            panic!()
        };
        assert_eq!(run.flags.tools, Some(Vec::new()));
    }

    #[test]
    fn the_help_gives_the_approval_default_settings_use() {
        use dsh_core::config::SandboxMode;
        let help = help();
        let help: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
        let (_, approval) = help.split_once("--approval-policy <policy>").unwrap();
        let (approval, _) = approval.split_once(" --add-dir").unwrap();
        for (mode, default) in [
            (SandboxMode::DangerFullAccess, "never"),
            (SandboxMode::WorkspaceWrite, "ask"),
            (SandboxMode::ReadOnly, "ask"),
        ] {
            assert_eq!(ApprovalPolicy::default_for(mode).as_str(), default);
        }
        assert!(
            approval.contains("(default: never under danger-full-access, else ask;"),
            "{approval}"
        );
    }

    #[test]
    fn parses_values_in_both_spellings() {
        let Command::Run(run) =
            parse_args(&["--model=m2", "--effort", "off", "--max-steps", "3", "x"]).unwrap()
        else {
            panic!()
        };
        assert_eq!(run.flags.model.as_deref(), Some("m2"));
        assert_eq!(run.flags.effort, Some(Effort::Off));
        assert_eq!(run.flags.max_steps, Some(3));
        assert!(
            parse_args(&["--effort", "huge", "x"])
                .unwrap_err()
                .message
                .contains("use off, low, high or max")
        );
        assert!(parse_args(&["--max-steps", "0", "x"]).is_err());
    }
}
