//! The dsh agent.
//!
//! An [`Agent`] drives one [`Session`] through turns: each turn is a series of steps, and each
//! step sends the system prompt, the history and the tool schemas to the model, commits the
//! answer, runs the tool calls it made (parallel-safe ones together, the rest one at a time,
//! results always in call order) and goes on until the model answers without calling a tool.
//!
//! The core never prints. Everything that happens is a [`Record`](dsh_protocol::Record),
//! appended to the session log first and then sent as an [`AgentEvent`] to whoever renders the
//! run; live reasoning and text arrive as deltas that are shown but never stored.

mod agent;
mod auto_review;
mod blame;
mod builder;
mod builtins;
pub mod checkpoints;
mod client;
mod compaction;
mod error;
pub mod export;
mod goals;
mod hooks;
mod host_tools;
mod install;
mod instructions;
mod listing;
mod lock;
mod log;
#[cfg(test)]
mod log_props;
mod login;
mod mcp;
pub mod mentions;
mod opening;
mod output_schema;
mod plan_approval;
mod prompt;
mod repair;
pub mod replay;
mod requests;
mod run;
mod saved_prompt;
mod saved_workflow;
mod search_index;
mod session;
mod session_diff;
mod session_facts;
mod session_list;
mod session_search;
mod subagents;
pub mod user_shell;
mod workspace_diff;

pub use agent::{Agent, AgentEvent, Steering, Stop, TurnSummary};
pub use blame::{BlameError, BlameLine, Origin, blame_file};
pub use builder::{AgentBuilder, StartedRun, User, setting_rows};
pub use compaction::{GOAL_RESTATED, ManualCompaction};
/// The settings a run is built from (`dsh-config`), for the front ends that load them.
pub use dsh_config as config;
pub use dsh_config::{
    Config, ConfigError, ConfigFiles, Environment, Flags, Settings, SetupError, SetupKind,
};
/// Live pieces of an answer, as [`AgentEvent::Delta`] carries them.
pub use dsh_llm::StreamDelta;
/// The handle of a run's MCP servers, for a front end that stops them itself
/// ([`AgentBuilder::open`]; [`AgentBuilder::open_run`] makes one of its own).
pub use dsh_mcp::McpServers;
/// The attachment store, for a front end that takes images from the user (the web app).
pub use dsh_tools::{AttachmentStore, ImageError, MAX_IMAGE_SIDE, MAX_IMAGE_SOURCE_BYTES};
pub use dsh_tools::{
    CallChange, CallView, ChangeLines, DiffSign, ToolCatalog, ToolFacts, ToolKind,
};
pub use error::CoreError;
pub use hooks::{HookEvent, HookRunner, HookSet, HookVerdict};
pub use host_tools::{HostCall, HostTool, HostToolError};
pub use log::{LoadedLog, LogOptions, SessionLog, logged_records, read_log};
pub use login::{
    KeyTarget, LoginError, check_and_save_key, check_key_destination, forget_saved_key, key_target,
};
pub use opening::Opening;
pub use output_schema::{OUTPUT_RETRIES, OutputSchema};
pub use run::{Processes, Run, RunningTask};
pub use saved_prompt::{BUILT_IN_COMMANDS, SavedPrompt, SavedPromptError, saved_prompts};
pub use saved_workflow::{SavedWorkflow, load_workflow, saved_workflows};
pub use session::{SHOWN_TURNS, Session};
pub use session_diff::{DiffSide, DivergedCall, Divergence, SessionDiff, diff_sessions};
pub use session_facts::{CallFacts, SessionFacts, TurnFacts, find_session_anywhere, session_facts};
pub use session_list::{
    MAX_TITLE_CHARS, all_sessions, delete_session, list_sessions, rename_session, session_log_path,
    utc_date_time,
};
pub use session_search::{SEARCH_LIMIT, SearchHit, search_sessions};
pub use workspace_diff::workspace_diff;

/// What `dsh sandbox check` prints for the sandbox settings of a run in `cwd` (only the config
/// files' `[sandbox]` is read), and whether any backend can confine commands here.
pub fn sandbox_report(
    cwd: std::path::PathBuf,
    env: &Environment,
    patches: &[std::path::PathBuf],
) -> Result<(String, bool), SetupError> {
    let settings = config::sandbox_only(cwd, env, patches)?;
    Ok(dsh_sandbox::Sandbox::new(settings).report())
}

/// The runtime every front end runs its runs on: one thread (a run waits on the model and on
/// commands, and one thread keeps start-up and memory small) with I/O and timers. The error
/// says what failed, for the front end to report.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// The sandbox helper, for the binary that runs agents: bubblewrap starts that binary again as
/// the helper inside each run's sandbox, so it must call `serve_if_asked` first thing in `main`
/// and exit with the status it returns, when it returns one.
pub mod sandbox_helper {
    pub use dsh_sandbox::helper::serve_if_asked;
}

/// What a run asks of the person at a front end ([`crate::User::asking`]), and, for an editor,
/// the files it hands the file tools.
pub mod ask {
    pub use crate::requests::{
        Approval, Asking, Choice, FormRequest, Grants, Questions, Reply, Request, Requests,
    };
    pub use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalRequest};
    pub use dsh_tools::elicit::{ChoiceOption, FieldKind, shown_value, typed_value};
    pub use dsh_tools::{
        Answer, AskOutcome, EditorFiles, EditorFuture, EditorRefused, Elicitation,
        ElicitationAnswer, Form, FormField, Question, QuestionOption,
    };
}
