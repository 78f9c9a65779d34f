//! What the command line asks for: the commands, with the arguments each runs with, and the
//! usage error for one that cannot run.

use dsh_core::Flags;

use super::flag::Stop;

/// The example every "task required" message gives.
pub const TASK_REQUIRED: &str =
    "a task is required, for example: dsh --profile headless \"run the tests\"";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    /// `dsh <command> --help`: that command's forms and options.
    HelpOf(String),
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
    Completions(super::completions::Shell),
    /// `dsh man`: the man page, in roff.
    Man,
    /// `dsh login [--model NAME]` / `dsh logout [--model NAME]`: the provider's API key.
    Key(crate::login_cmd::KeyCommand),
    /// `dsh trust [FOLDER]` / `dsh untrust [FOLDER]`: whether a folder's own config applies in
    /// full.
    Trust(crate::trust_cmd::TrustCommand),
    /// `dsh sessions search TEXT [--limit N] [--json]`: every workspace's sessions, ranked.
    SessionsSearch {
        text: String,
        limit: usize,
        json: bool,
    },
    /// `dsh sessions export ID [--format markdown|html]`: a session as a document.
    SessionsExport {
        id: String,
        format: dsh_core::export::ExportFormat,
    },
    /// `dsh sessions diff A B [--json]`: where two sessions went separate ways.
    SessionsDiff {
        a: String,
        b: String,
        json: bool,
    },
    /// `dsh sessions rename ID TITLE`: the name lists show for a session ("" takes it away).
    SessionsRename {
        id: String,
        title: String,
    },
    /// `dsh workflow list`: the saved workflows this directory can run.
    WorkflowList,
    /// `dsh blame FILE[:LINE] [--json]`: what wrote each line of a file (or the one asked).
    Blame {
        file: std::path::PathBuf,
        line: Option<usize>,
        json: bool,
    },
    /// `dsh replay ID --model ROUTE [--to TURN] [--keep] [--json]`: a session's turns again on
    /// another route, in a scratch copy of its workspace.
    Replay(crate::replay_cmd::ReplayArgs),
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
    /// `dsh app-server`: dsh's own protocol, for the SDKs (docs/sdk.md).
    App,
    /// `dsh web`: the browser app, on loopback.
    Web,
}

impl Protocol {
    pub fn command(self) -> &'static str {
        match self {
            Protocol::Mcp => "dsh mcp-server",
            Protocol::Acp => "dsh acp",
            Protocol::App => "dsh app-server",
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
    /// `--app`: the app in a window of its own.
    pub app: bool,
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
    /// The help to point at, for grammar errors (`dsh --help`, or the command's own: `dsh
    /// rewind --help`); none for a missing task.
    pub hint: Option<String>,
}

impl UsageError {
    /// A refusal read from the flags, as a usage error: pointing at `dsh --help` when it says
    /// so, or always at `help` (a command's own: `dsh rewind --help`) when given. `--help` and
    /// `--version` are answers, not errors.
    pub fn of(stop: Stop, json: bool, help: Option<&str>) -> Result<Command, UsageError> {
        match stop {
            Stop::Help => Ok(Command::Help),
            Stop::Version => Ok(Command::Version),
            Stop::Refused { message, hint } => Err(UsageError {
                message,
                json,
                hint: match help {
                    Some(help) => Some(help.to_owned()),
                    None => hint.then(|| "dsh --help".to_owned()),
                },
            }),
        }
    }
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
