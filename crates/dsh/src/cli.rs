//! The command line.
//!
//! Compatible with the reference's headless mode: `dsh --profile headless [OPTIONS] [TASK...]`,
//! and `dsh headless ...`, are the same as `dsh [OPTIONS] [TASK...]`. Options may come anywhere
//! before `--`; task words are joined with single spaces. The usage-error texts are the
//! reference's (supervisors match them), without commander's `error: ` prefix.

use std::ffi::OsString;
use std::str::FromStr;

use dsh_core::Flags;
use dsh_core::config::{ApprovalPolicy, Effort, PermissionMode, Usd};

/// The example every "task required" message gives.
pub const TASK_REQUIRED: &str =
    "a task is required, for example: dsh --profile headless \"run the tests\"";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Run(RunArgs),
    /// `dsh sandbox check`: which backend would confine commands, and why the others cannot.
    SandboxCheck {
        patches: Vec<std::path::PathBuf>,
    },
    /// `--dump-config`: every setting in effect and where each came from.
    DumpConfig(RunArgs),
    /// `dsh sessions list [--json]`: this directory's sessions, newest first.
    SessionsList {
        json: bool,
    },
    /// `dsh sessions show ID [--json]`: one session's transcript.
    SessionsShow {
        id: String,
        json: bool,
    },
    /// `dsh completions bash|zsh|fish`: a completion script for the shell.
    Completions(crate::usage::Shell),
    /// `dsh man`: the man page, in roff.
    Man,
    /// `dsh login [--model NAME]` / `dsh logout [--model NAME]`: the provider's API key.
    Key(crate::login_cmd::KeyCommand),
    /// `dsh sessions rename ID TITLE`: the name lists show for a session ("" takes it away).
    SessionsRename {
        id: String,
        title: String,
    },
    /// `dsh workflow list`: the saved workflows this directory can run.
    WorkflowList,
    /// `dsh rewind ID [...]`: a session's turns, or going back to the start of one.
    Rewind(crate::rewind_cmd::RewindArgs),
    /// `dsh web [--host H] [--port N] [--open]`: the browser app; the flags are every
    /// session's defaults.
    Web(WebArgs),
    /// `dsh mcp login|logout|list`: the MCP servers and their OAuth sign-ins.
    Mcp(crate::mcp_cmd::McpCommand),
    /// The terminal UI: `dsh` on a terminal with no headless option, and `dsh resume`.
    Tui(TuiArgs),
    /// `dsh mcp-server` or `dsh acp`: serve a protocol on stdio; the flags are every
    /// session's defaults.
    Serve {
        protocol: Protocol,
        flags: Flags,
    },
}

/// The protocols dsh serves on stdio for other programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `dsh mcp-server`: the Model Context Protocol, as a server of two tools.
    Mcp,
    /// `dsh acp`: the Agent Client Protocol, as an editor's agent.
    Acp,
    /// `dsh web`: the browser app, on loopback.
    Web,
}

impl Protocol {
    fn command(self) -> &'static str {
        match self {
            Protocol::Mcp => "dsh mcp-server",
            Protocol::Acp => "dsh acp",
            Protocol::Web => "dsh web",
        }
    }
}

/// Where `dsh web` serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebArgs {
    pub flags: Flags,
    pub host: String,
    pub port: u16,
    pub open: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuiArgs {
    pub flags: Flags,
    /// The first message, from the task words.
    pub task: Option<String>,
    /// `dsh resume`: start with the list of this folder's sessions.
    pub pick_session: bool,
}

/// Which of the standard streams are terminals: a person at both gets the terminal UI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Terminals {
    pub stdin: bool,
    pub stdout: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunArgs {
    pub json: bool,
    pub task: TaskSource,
    /// `-o`/`--output-last-message`: where the final answer is also written.
    pub output_last_message: Option<std::path::PathBuf>,
    /// `--timeout`: how long the whole run may take.
    pub timeout: Option<std::time::Duration>,
    /// `--input-format stream-json`: user messages are JSON lines on stdin, a turn each.
    pub stream_input: bool,
    /// The settings the command line gives, resolved over the files by core.
    pub flags: Flags,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskSource {
    /// The task words, joined.
    Words(String),
    /// Read the task from stdin (no task words, or a lone `-`).
    Stdin,
    /// `dsh workflow NAME [--args JSON]`: run a saved workflow, the model aside.
    Workflow {
        name: String,
        args: Option<serde_json::Value>,
    },
}

/// A command line that cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    /// Whether `--json` was asked for, so the error is also written as an event.
    pub json: bool,
    /// Whether to point at `--help` (for grammar errors, not for a missing task).
    pub hint: bool,
}

/// Parses the arguments after the program name. `terminals` decides between the terminal UI
/// and a headless run, and whether a missing task is an error or a task to read from stdin.
///
/// The terminal UI is for a person: it opens only with a terminal on stdin and stdout and no
/// sign of a supervisor (`headless`, `--profile headless`, `--json`, `-o`, `-` for stdin), so
/// every command line that ran headless before still does.
pub fn parse(args: Vec<OsString>, terminals: Terminals) -> Result<Command, UsageError> {
    // A protocol server's stdout carries only its protocol: its usage errors, `--json`
    // among them, go to stderr alone.
    let protocol_server = args
        .first()
        .is_some_and(|a| a == "mcp-server" || a == "acp");
    let json = wants_json(&args) && !protocol_server;
    let fail = |message: String, hint: bool| UsageError {
        message,
        json,
        hint,
    };
    let mut args: Vec<String> = args
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| a.to_string_lossy().into_owned())
        })
        .collect::<Result<_, _>>()
        .map_err(|a| fail(format!("argument \"{a}\" is not valid UTF-8"), false))?;
    let mut headless = false;
    if args.first().is_some_and(|a| a == "headless") {
        args.remove(0);
        headless = true;
    }
    // `resume` is a command only where the UI can open; elsewhere it is a task word, as it
    // always was.
    let interactive = terminals.stdin && terminals.stdout;
    let mut pick_session = interactive && !headless && args.first().is_some_and(|a| a == "resume");
    if pick_session {
        args.remove(0);
    }
    if args.first().is_some_and(|a| a == "sandbox") {
        return parse_sandbox(&args[1..]).map_err(|m| fail(m, true));
    }
    if args.first().is_some_and(|a| a == "completions") && !headless {
        return match &args[1..] {
            [shell] => crate::usage::Shell::parse(shell)
                .map(Command::Completions)
                .ok_or_else(|| {
                    fail(
                        format!("dsh completions takes bash, zsh or fish, not \"{shell}\""),
                        true,
                    )
                }),
            _ => Err(fail(
                "dsh completions takes one shell: bash, zsh or fish".into(),
                true,
            )),
        };
    }
    if args.first().is_some_and(|a| a == "man") && args.len() == 1 && !headless {
        return Ok(Command::Man);
    }
    if let Some(verb @ ("login" | "logout")) = args.first().map(String::as_str)
        && !headless
    {
        return crate::login_cmd::parse(verb == "logout", &args[1..])
            .map(Command::Key)
            .map_err(|m| fail(m, true));
    }
    if args.first().is_some_and(|a| a == "sessions") {
        return parse_sessions(&args[1..]).map_err(|m| fail(m, true));
    }
    if args.first().is_some_and(|a| a == "mcp") {
        return crate::mcp_cmd::parse(&args[1..])
            .map(Command::Mcp)
            .map_err(|m| fail(m, true));
    }
    if args.first().is_some_and(|a| a == "rewind") {
        return crate::rewind_cmd::parse(&args[1..])
            .map(Command::Rewind)
            .map_err(|m| fail(m, true));
    }
    // `dsh workflow NAME [--args JSON] [options]`: always headless; the options are a run's.
    let mut workflow = None;
    if args.first().is_some_and(|a| a == "workflow") {
        match parse_workflow(&args[1..]).map_err(|m| fail(m, true))? {
            None => return Ok(Command::WorkflowList),
            Some((name, workflow_args, rest)) => {
                workflow = Some((name, workflow_args));
                args = rest;
                headless = true;
            }
        }
    }
    let serve = match args.first().map(String::as_str) {
        Some("mcp-server") if !headless => Some(Protocol::Mcp),
        Some("acp") if !headless => Some(Protocol::Acp),
        Some("web") if !headless => Some(Protocol::Web),
        _ => None,
    };
    if serve.is_some() {
        args.remove(0);
        pick_session = false;
    }
    // `dsh web`'s own options, taken out before the run's flags are read.
    let mut web = WebArgs {
        flags: Flags::default(),
        host: "127.0.0.1".into(),
        port: 8976,
        open: false,
    };
    if serve == Some(Protocol::Web) {
        let mut kept = Vec::new();
        let mut words = std::mem::take(&mut args).into_iter();
        while let Some(word) = words.next() {
            match word.as_str() {
                "--open" => web.open = true,
                "--host" => {
                    web.host = words.next().filter(|h| !h.is_empty()).ok_or_else(|| {
                        fail("--host needs an address, such as 127.0.0.1".into(), true)
                    })?;
                }
                "--port" => {
                    let value = words.next().unwrap_or_default();
                    web.port = value.parse().map_err(|_| {
                        fail(
                            format!(
                                "--port takes a port number (0 for any free one), got \"{value}\""
                            ),
                            true,
                        )
                    })?;
                }
                _ => kept.push(word),
            }
        }
        args = kept;
    }

    let mut run = RunArgs {
        json: false,
        task: TaskSource::Stdin,
        output_last_message: None,
        timeout: None,
        stream_input: false,
        flags: Flags::default(),
    };
    let mut words: Vec<String> = Vec::new();
    let mut dump_config = false;
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            words.extend(iter.by_ref());
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            words.push(arg);
            continue;
        }
        let (name, mut inline): (String, Option<String>) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let has_inline = inline.is_some();
        let mut value = |shown: &str| match inline.take() {
            Some(value) => Ok(value),
            None => iter
                .next()
                .ok_or_else(|| fail(format!("option '{shown}' argument missing"), true)),
        };
        match name.as_str() {
            "--profile" => {
                check_profile(&value("--profile <name>")?).map_err(|m| fail(m, false))?;
                headless = true;
            }
            "--model" => {
                let model = value("--model <name>")?;
                if model.trim().is_empty() {
                    return Err(fail("--model needs a model name".into(), true));
                }
                run.flags.model = Some(model);
            }
            "--effort" => {
                let level = value("--effort <level>")?;
                run.flags.effort =
                    Some(Effort::from_str(&level).map_err(|e| fail(e.to_string(), false))?);
            }
            "--preset" => {
                let name = value("--preset <name>")?;
                run.flags.preset = Some(
                    dsh_core::config::AgentPreset::from_str(&name).map_err(|e| fail(e, false))?,
                );
            }
            "--max-steps" => {
                let n = value("--max-steps <n>")?;
                run.flags.max_steps = Some(parse_positive(&n).ok_or_else(|| {
                    fail(
                        format!("--max-steps needs a positive whole number, got \"{n}\""),
                        false,
                    )
                })?);
            }
            "--max-turns" => {
                let n = value("--max-turns <n>")?;
                run.flags.max_turns = Some(parse_positive(&n).ok_or_else(|| {
                    fail(
                        format!("--max-turns needs a positive whole number, got \"{n}\""),
                        false,
                    )
                })?);
            }
            "--max-budget-usd" => {
                let amount = value("--max-budget-usd <usd>")?;
                run.flags.max_budget_usd = Some(Usd::parse(&amount).ok_or_else(|| {
                    fail(
                        format!(
                            "--max-budget-usd needs a positive amount of US dollars, like 0.50, \
                             got \"{amount}\""
                        ),
                        false,
                    )
                })?);
            }
            "--timeout" => {
                let text = value("--timeout <duration>")?;
                run.timeout = Some(parse_duration(&text).ok_or_else(|| {
                    fail(
                        format!(
                            "--timeout needs a duration like 90s, 500ms, 10m or 1h (a bare \
                             number is seconds), got \"{text}\""
                        ),
                        false,
                    )
                })?);
            }
            "--permission-mode" => {
                let mode = value("--permission-mode <mode>")?;
                run.flags.permission_mode = Some(mode.parse::<PermissionMode>().map_err(|_| {
                    fail(
                        format!(
                            "--permission-mode must be {}, got \"{mode}\"",
                            PermissionMode::CHOICES
                        ),
                        false,
                    )
                })?);
            }
            "--approval-policy" => {
                let policy = value("--approval-policy <policy>")?;
                run.flags.approval_policy =
                    Some(policy.parse::<ApprovalPolicy>().map_err(|_| {
                        fail(
                            format!("--approval-policy must be ask or never, got \"{policy}\""),
                            false,
                        )
                    })?);
            }
            "--session-id" => {
                // The id is opaque: used exactly as given, whitespace included (as the
                // reference does); an empty one is an error.
                let id = value("--session-id <id>")?;
                if id.is_empty() {
                    return Err(fail("--session-id needs a session id".into(), true));
                }
                run.flags.session_id = Some(id);
            }
            "--tools" => {
                // Repeatable; an empty list offers no tools at all.
                let names = value("--tools <names>")?;
                run.flags
                    .tools
                    .get_or_insert_with(Vec::new)
                    .extend(tool_names(&names));
            }
            "--disallowed-tools" => {
                let names = value("--disallowed-tools <names>")?;
                run.flags.disallowed_tools.extend(tool_names(&names));
            }
            "--add-dir" => {
                let dir = value("--add-dir <dir>")?;
                if dir.trim().is_empty() {
                    return Err(fail("--add-dir needs a directory".into(), true));
                }
                run.flags.add_dirs.push(dir.into());
            }
            "-o" | "--output-last-message" => {
                let file = value("--output-last-message <file>")?;
                if file.trim().is_empty() {
                    return Err(fail("--output-last-message needs a file name".into(), true));
                }
                run.output_last_message = Some(file.into());
            }
            "--patch" => {
                let file = value("--patch <file>")?;
                if file.trim().is_empty() {
                    return Err(fail("--patch needs a file name".into(), true));
                }
                run.flags.patches.push(file.into());
            }
            "--json" | "-h" | "--help" | "-V" | "--version" if has_inline => {
                return Err(fail(format!("option '{name}' takes no value"), true));
            }
            "--input-format" => {
                let format = value("--input-format <format>")?;
                run.stream_input = match format.as_str() {
                    "text" => false,
                    "stream-json" => true,
                    other => {
                        return Err(fail(
                            format!("--input-format must be text or stream-json, got \"{other}\""),
                            false,
                        ));
                    }
                };
            }
            "--output-schema" => {
                let file = value("--output-schema <file>")?;
                if file.trim().is_empty() {
                    return Err(fail("--output-schema needs a file name".into(), true));
                }
                run.flags.output_schema = Some(file.into());
            }
            "--system-prompt-append" => {
                let text = value("--system-prompt-append <text>")?;
                if text.trim().is_empty() {
                    return Err(fail("--system-prompt-append needs text".into(), true));
                }
                run.flags.system_prompt_append = Some(text);
            }
            "--continue" | "--fork" if has_inline => {
                return Err(fail(format!("option '{name}' takes no value"), true));
            }
            "--continue" => run.flags.continue_latest = true,
            "--fork" => run.flags.fork = true,
            "--json" => run.json = true,
            "--dump-config" if !has_inline => dump_config = true,
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            _ => return Err(fail(format!("unknown option '{arg}'"), true)),
        }
    }

    if let Some(protocol) = serve {
        let command = serving(protocol, run, &words, dump_config).map_err(|m| fail(m, false))?;
        return Ok(match command {
            Command::Serve {
                protocol: Protocol::Web,
                flags,
            } => Command::Web(WebArgs { flags, ..web }),
            other => other,
        });
    }
    if let Some((name, args)) = workflow {
        if !words.is_empty() || run.stream_input {
            return Err(fail(
                format!(
                    "`dsh workflow {name}` runs the saved workflow and takes no task: give its \
                     values with --args '{{\"key\": ...}}'"
                ),
                true,
            ));
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
            return Err(fail(
                "--input-format stream-json answers in the --json stream: add --json".into(),
                false,
            ));
        }
        if !words.is_empty() || run.output_last_message.is_some() {
            return Err(fail(
                "--input-format stream-json reads every message from stdin: give no task words \
                 and no -o"
                    .into(),
                false,
            ));
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
        return Err(fail(
            "dsh resume takes no task: pick the session, then type".into(),
            false,
        ));
    }
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
            return Err(fail(TASK_REQUIRED.into(), false));
        }
        TaskSource::Stdin
    } else if words.iter().any(|w| w == "-") {
        if words.len() > 1 {
            return Err(fail("`-` must be the only task argument".into(), false));
        }
        TaskSource::Stdin
    } else {
        let task = words.join(" ");
        if task.trim().is_empty() {
            return Err(fail(TASK_REQUIRED.into(), false));
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
) -> Result<Command, String> {
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
    Ok(Command::Serve {
        protocol,
        flags: run.flags,
    })
}

/// Tool names given as `a,b` or `a b`.
fn tool_names(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split([',', ' '])
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
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
        if arg == "--json" {
            return true;
        }
        if crate::usage::takes_value(arg) {
            iter.next();
        }
    }
    false
}

/// `sandbox check [--patch FILE]...`.
fn parse_sandbox(args: &[String]) -> Result<Command, String> {
    let Some((verb, rest)) = args.split_first() else {
        return Err("`dsh sandbox` needs a subcommand: check".into());
    };
    if verb != "check" {
        return Err(format!(
            "unknown sandbox subcommand \"{verb}\": the one there is is check"
        ));
    }
    let mut patches = Vec::new();
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        match arg.split_once('=') {
            Some(("--patch", file)) => patches.push(file.into()),
            _ if arg == "--patch" => patches.push(
                iter.next()
                    .ok_or("option '--patch <file>' argument missing")?
                    .into(),
            ),
            _ => return Err(format!("unknown option '{arg}' for dsh sandbox check")),
        }
    }
    Ok(Command::SandboxCheck { patches })
}

/// `workflow list`, or `workflow NAME [--args JSON]` and the run's options: `None` for the list,
/// else the name, the args, and the options left for the run's parser.
#[allow(clippy::type_complexity)]
fn parse_workflow(
    args: &[String],
) -> Result<Option<(String, Option<serde_json::Value>, Vec<String>)>, String> {
    let Some((name, rest)) = args
        .split_first()
        .filter(|(name, _)| !name.starts_with('-'))
    else {
        return Err(
            "`dsh workflow` needs a saved workflow's name (`dsh workflow list` lists them)".into(),
        );
    };
    if name == "list" {
        return match rest {
            [] => Ok(None),
            _ => Err("`dsh workflow list` takes no options".into()),
        };
    }
    let mut options = Vec::new();
    let mut workflow_args = None;
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        if arg == "--args" {
            let text = iter
                .next()
                .ok_or("option '--args <json>' argument missing")?;
            let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                format!("--args is not JSON ({e}): give an object, as '{{\"n\": 3}}'")
            })?;
            if !value.is_object() {
                return Err("--args must be a JSON object, as '{\"n\": 3}'".into());
            }
            workflow_args = Some(value);
        } else {
            options.push(arg.clone());
        }
    }
    Ok(Some((name.clone(), workflow_args, options)))
}

/// What `--version` prints: `dsh <version>`, then the commit it was built from and that
/// commit's date when known (`dsh 0.1.0 (4f2a9c1e07b3 2026-12-06)`).
pub fn version() -> String {
    let version = env!("CARGO_PKG_VERSION");
    match env!("DSH_COMMIT") {
        "" => format!("dsh {version}"),
        commit => format!("dsh {version} ({commit})"),
    }
}

/// `sessions list`, `sessions show ID [--json]` or `sessions rename ID TITLE`.
fn parse_sessions(args: &[String]) -> Result<Command, String> {
    match args {
        [verb] if verb == "list" => Ok(Command::SessionsList { json: false }),
        [verb, flag] if verb == "list" && flag == "--json" => {
            Ok(Command::SessionsList { json: true })
        }
        [verb, rest @ ..] if verb == "show" => {
            let json = rest.iter().any(|a| a == "--json");
            let ids: Vec<&String> = rest.iter().filter(|a| *a != "--json").collect();
            match ids.as_slice() {
                [id] if !id.starts_with("--") => Ok(Command::SessionsShow {
                    id: (*id).clone(),
                    json,
                }),
                _ => Err("`dsh sessions show` needs one session id, and takes --json".into()),
            }
        }
        [verb, id, title @ ..]
            if verb == "rename" && !id.starts_with("--") && !title.is_empty() =>
        {
            // The title's words may come quoted or not: `rename ID fix the parser`.
            Ok(Command::SessionsRename {
                id: id.clone(),
                title: title.join(" "),
            })
        }
        [verb, ..] if verb == "rename" => Err(
            "`dsh sessions rename` needs a session id and a title (\"\" takes the title away)"
                .into(),
        ),
        [verb, ..] if verb == "list" => Err("`dsh sessions list` takes only --json".into()),
        _ => Err(
            "`dsh sessions` needs a subcommand: list [--json], show <id> [--json], or rename \
             <id> <title>"
                .into(),
        ),
    }
}

fn check_profile(name: &str) -> Result<(), String> {
    match name {
        "" => Err("--profile needs a name".into()),
        "headless" => Ok(()),
        other => Err(format!(
            "profile \"{other}\" is not available: the profiles are headless, and none for \
             the terminal UI (use --profile headless, or leave the option out)"
        )),
    }
}

/// `500ms`, `90s`, `10m`, `1h`, or a bare number of seconds; more than zero.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "" | "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    (seconds.is_finite() && seconds > 0.0 && seconds < 1e9)
        .then(|| std::time::Duration::from_secs_f64(seconds))
}

fn parse_positive(text: &str) -> Option<u32> {
    text.parse::<u32>().ok().filter(|n| *n > 0)
}

#[cfg(test)]
mod doc_examples;

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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
        assert_eq!(parse_args(&["headless", "acp"]).unwrap(), words("acp"));
    }

    #[test]
    fn joins_task_words_and_accepts_the_reference_forms() {
        assert_eq!(
            parse_args(&["run", "the", "tests"]).unwrap(),
            words("run the tests")
        );
        assert_eq!(
            parse_args(&["--profile", "headless", "go"]).unwrap(),
            words("go")
        );
        assert_eq!(parse_args(&["headless", "go"]).unwrap(), words("go"));
        assert_eq!(parse_args(&["--", "--json"]).unwrap(), words("--json"));
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
        let help = crate::usage::help();
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
