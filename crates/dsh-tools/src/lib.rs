//! The tools dsh offers a model.
//!
//! A [`Tool`] declares its argument schema ([`Parameters`]) and runs with validated
//! [`Arguments`]; the [`ToolRegistry`] is what the agent loop talks to: it lists the schemas sent
//! to the model, decides which calls may run in parallel, and turns every call, however
//! malformed, into a [`ToolOutcome`] the model can read. A tool error is text for the model
//! (`Error: ...`) plus, where the reference gives one, a structured [`ErrorInfo`]; it is never a
//! crash.
//!
//! Model-facing texts (envelopes, footers, error messages) match the reference harness byte for
//! byte; descriptions are our own.

mod ask_user;
mod atomic;
mod attachments;
mod change_lines;
mod describe;
mod edit;
mod edit_hint;
mod editor;
pub mod elicit;
mod error;
mod filter;
mod mutate;
mod observe;
mod path;
mod plan;
mod present;
mod read;
mod read_image;
mod redact;
mod registry;
mod schema;
mod search;
mod shell;
pub mod skill;
mod spill;
mod str_replace_editor;
mod todo;
mod write;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use dsh_protocol::ToolOutputPart;
use dsh_sandbox::SandboxPolicy;
use dsh_sandbox::escalation::{ApprovalPolicy, Approver};
use tokio_util::sync::CancellationToken;

pub use ask_user::{Answer, AskOutcome, AskUserQuestion, Question, QuestionOption, UserQuestions};
pub use attachments::{
    AttachmentStore, ImageError, MAX_SIDE as MAX_IMAGE_SIDE,
    MAX_SOURCE_BYTES as MAX_IMAGE_SOURCE_BYTES, StoredImage, sha256_hex,
};
pub use change_lines::{ChangeLines, DiffSign};
pub use describe::{
    CallChange, CallView, ToolCatalog, ToolFacts, ToolKind, description_problems, text_arg,
};
pub use edit::Edit;
pub use editor::{EditorFiles, EditorFuture, EditorRefused};
pub use elicit::{Elicitation, ElicitationAnswer, Form, FormField};
pub use error::{ToolError, fs_code};
pub use filter::ToolFilter;
pub use observe::{Observation, ObservationMap, Version};
pub use path::{Target, resolve};
pub use plan::ExitPlanMode;
pub use present::Present;
pub use read::Read;
pub use read_image::ReadImage;
pub use redact::{MIN_SECRET_CHARS, REDACTED, Redactor, is_secret_name, redacted, without_pieces};
pub use registry::{PreparedCall, ToolGroup, ToolOutcome, ToolRegistry};
pub use schema::{Arguments, Param, ParamType, Parameters, Shape};
pub use search::glob::Glob;
pub use search::grep::{Grep, MAX_HELD_LINE_BYTES};
pub use shell::bash::Bash;
pub use shell::job_tools::{JobKill, JobList, JobOutput};
pub use shell::{
    DEFAULT_SCRUB, JobRegistry, MAX_RUNNING, PendingWatches, Script, ScriptError, ScriptRun, Shell,
    ShellEnv, settle_left_over,
};
pub use spill::{MAX_INLINE_BYTES, SpillStore};
pub use str_replace_editor::StrReplaceEditor;
pub use todo::TodoWrite;
pub use write::Write;

pub use dsh_protocol::ErrorInfo;

/// Receives a running call's output as it arrives: the call's id and the new text.
pub type ToolProgress = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// What one call runs against.
#[derive(Clone)]
pub struct ToolContext {
    /// The model's id of this call.
    pub call_id: String,
    /// The session workspace: relative paths of reads resolve against it.
    pub cwd: PathBuf,
    /// Fired when the run is stopped; long tools stop early and report it.
    pub cancel: CancellationToken,
    /// What the tools of the session share.
    pub session: Arc<ToolSession>,
}

impl ToolContext {
    /// A call's context in a workspace at `dir` under `workspace-write`, with a model that
    /// takes no images and results spilling into `dir/.spill`: for tests of the tools and of
    /// what offers them.
    pub fn in_workspace(dir: &std::path::Path) -> ToolContext {
        ToolContext {
            call_id: "call-1".into(),
            cwd: dir.to_path_buf(),
            cancel: CancellationToken::new(),
            session: Arc::new(ToolSession::new(
                dsh_sandbox::SandboxPolicy::new(
                    dsh_sandbox::SandboxMode::WorkspaceWrite,
                    dir,
                    Vec::new(),
                ),
                SpillStore::new(dir.join(".spill")),
                ModelCaps {
                    name: "m".into(),
                    image_input: false,
                },
            )),
        }
    }
}

/// The tools' side of a session: what they remember and what bounds them.
pub struct ToolSession {
    /// Which file versions the session has seen (read-before-mutate); shared with the
    /// session it was switched from ([`ToolSession::with_permissions`]).
    pub observations: Arc<ObservationMap>,
    /// What calls may change.
    pub policy: SandboxPolicy,
    /// Who answers escalation requests; none in a headless run.
    pub approver: Option<Arc<dyn Approver>>,
    /// Whether escalation requests are put to the approver at all.
    pub approval: ApprovalPolicy,
    /// Who answers `ask_user_question`; none in a headless run.
    pub questions: Option<Arc<dyn UserQuestions>>,
    /// Where a running command's output goes as it arrives (a front end that shows it live);
    /// none: only the result carries it.
    pub progress: Option<ToolProgress>,
    /// Where over-long results are kept.
    pub spill: SpillStore,
    /// The model the session talks to, for tools that depend on what it accepts.
    pub model: ModelCaps,
    /// Where images shown to the model are kept; without one, `read_image` cannot work.
    pub attachments: Option<AttachmentStore>,
    /// The shell and its jobs; without one, `bash` and the job tools cannot work.
    pub shell: Option<Arc<Shell>>,
    /// Plan mode: only tools that change nothing run ([`Tool::plan_safe`]).
    pub plan_mode: bool,
    /// Whether commands may become background jobs: not when the job tools that read them are
    /// withheld.
    pub background_jobs: bool,
    /// The editor the file tools read and write through (ACP); none: the disk.
    pub editor: Option<Arc<dyn EditorFiles>>,
    /// The secrets taken out of every result; none: results are kept as the tools wrote them.
    pub redactor: Option<Redactor>,
}

impl ToolSession {
    pub fn new(policy: SandboxPolicy, spill: SpillStore, model: ModelCaps) -> Self {
        ToolSession {
            observations: Arc::new(ObservationMap::new()),
            policy,
            approver: None,
            approval: ApprovalPolicy::Ask,
            questions: None,
            progress: None,
            spill,
            model,
            attachments: None,
            shell: None,
            plan_mode: false,
            background_jobs: true,
            editor: None,
            redactor: None,
        }
    }

    /// The same session under other permissions (a plan approved to run in the mode the user
    /// picked): what it has seen, its shell, its user and its stores are the same.
    pub fn with_permissions(
        &self,
        policy: SandboxPolicy,
        approval: ApprovalPolicy,
        plan_mode: bool,
    ) -> ToolSession {
        ToolSession {
            observations: self.observations.clone(),
            policy,
            approver: self.approver.clone(),
            approval,
            questions: self.questions.clone(),
            progress: self.progress.clone(),
            spill: self.spill.clone(),
            model: self.model.clone(),
            attachments: self.attachments.clone(),
            shell: self.shell.clone(),
            plan_mode,
            background_jobs: self.background_jobs,
            editor: self.editor.clone(),
            redactor: self.redactor.clone(),
        }
    }

    /// The session with the secrets to take out of every result.
    pub fn with_redactor(mut self, redactor: Option<Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The session with an editor the file tools read and write through.
    pub fn with_editor(mut self, editor: Option<Arc<dyn EditorFiles>>) -> Self {
        self.editor = editor;
        self
    }

    /// The editor, when it takes reads.
    pub(crate) fn reading_editor(&self) -> Option<Arc<dyn EditorFiles>> {
        self.editor.clone().filter(|editor| editor.reads())
    }

    /// Records the version a write of the session left, so the next change needs no new
    /// read.
    pub(crate) fn observe_written(&self, key: &std::path::Path) {
        if let Ok(meta) = std::fs::metadata(key) {
            self.observations.present(key, Version::of(&meta));
        }
    }

    /// The editor, when it takes writes.
    pub(crate) fn writing_editor(&self) -> Option<Arc<dyn EditorFiles>> {
        self.editor.clone().filter(|editor| editor.writes())
    }

    /// The session without background jobs (the job tools are withheld).
    pub fn with_background_jobs(mut self, background_jobs: bool) -> Self {
        self.background_jobs = background_jobs;
        self
    }

    /// The session in plan mode.
    pub fn with_plan_mode(mut self, plan_mode: bool) -> Self {
        self.plan_mode = plan_mode;
        self
    }

    /// The session with a shell for `bash` and the job tools.
    pub fn with_shell(mut self, shell: Arc<Shell>) -> Self {
        self.shell = Some(shell);
        self
    }

    /// The session under an approval policy.
    pub fn with_approval(mut self, approval: ApprovalPolicy) -> Self {
        self.approval = approval;
        self
    }

    /// The session with someone to approve escalations and answer questions.
    pub fn with_user(
        mut self,
        approver: Option<Arc<dyn Approver>>,
        questions: Option<Arc<dyn UserQuestions>>,
    ) -> Self {
        self.approver = approver;
        self.questions = questions;
        self
    }

    /// The session with a receiver for live output.
    pub fn with_progress(mut self, progress: Option<ToolProgress>) -> Self {
        self.progress = progress;
        self
    }

    /// Whether a denial may tell the model to retry with `sandbox_permissions`: not when the
    /// policy refuses every escalation anyway.
    pub fn offers_escalation(&self) -> bool {
        self.approval == ApprovalPolicy::Ask
    }

    /// The session with images kept in `store`.
    pub fn with_attachments(mut self, store: AttachmentStore) -> Self {
        self.attachments = Some(store);
        self
    }
}

/// What the session's model takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCaps {
    pub name: String,
    /// Whether it accepts images.
    pub image_input: bool,
}

/// A successful tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub parts: Vec<ToolOutputPart>,
    /// What the call asks of the agent beyond its result.
    pub effect: Option<ToolEffect>,
    /// What the call billed (model requests it made: a subagent's), added to the step's usage.
    pub usage: dsh_protocol::Usage,
    /// For a command: how it ended.
    pub command: Option<dsh_protocol::CommandOutcome>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput::parts(vec![ToolOutputPart::Text { text: text.into() }])
    }

    pub fn parts(parts: Vec<ToolOutputPart>) -> Self {
        ToolOutput {
            parts,
            effect: None,
            usage: dsh_protocol::Usage::default(),
            command: None,
        }
    }

    /// The output of a command, with how it ended.
    pub fn command(text: String, outcome: dsh_protocol::CommandOutcome) -> Self {
        let mut output = ToolOutput::text(text);
        output.command = Some(outcome);
        output
    }

    pub fn with_usage(mut self, usage: dsh_protocol::Usage) -> Self {
        self.usage = usage;
        self
    }

    pub fn with_effect(mut self, effect: ToolEffect) -> Self {
        self.effect = Some(effect);
        self
    }
}

/// What a call asks of the agent beyond its result; the agent acts on it without knowing which
/// tool asked.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEffect {
    /// The model's task list is now this: a session record, and an event for whoever watches.
    Todos(Vec<dsh_protocol::TodoItem>),
    /// The turn ends after this step, with `text` as its answer.
    EndTurn {
        reason: dsh_protocol::TurnEndReason,
        text: String,
    },
    /// Subagents ran (one, or a Ralph loop's rounds): the parent's log links each one's
    /// session (the turn is filled in by the agent).
    Subagents(Vec<dsh_protocol::SubagentRunRecord>),
    /// The session's goal changed: a session record, and an event for whoever watches (the
    /// turn is filled in by the agent).
    Goal(dsh_protocol::GoalChangeRecord),
    /// The model hands the user something to look at: a session record, and an event each
    /// front end shows its own way (the turn is filled in by the agent).
    Present(dsh_protocol::Presentation),
}

/// The future a tool call returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What the model is told the tool does.
    fn description(&self) -> &str;

    /// The arguments it takes.
    fn parameters(&self) -> &Parameters;

    /// Advice for the system prompt on when and how to use the tool, if any.
    fn guidance(&self) -> Option<&str> {
        None
    }

    /// What front ends show of it and its calls: its kind, a title's verb, which argument
    /// names the file or the command, its names in hook vocabularies, whether it is read-only.
    fn facts(&self) -> ToolFacts;

    /// What a call is about in a few words, where [`ToolFacts::subject`] alone does not say
    /// it (an editor's command and its path). `None` uses the subject.
    fn summary(&self, args: &serde_json::Value) -> Option<String> {
        let _ = args;
        None
    }

    /// The change a call asks for, when the tool changes a file: front ends show it as a diff.
    fn change<'a>(&self, args: &'a serde_json::Value) -> Option<CallChange<'a>> {
        let _ = args;
        None
    }

    /// Whether calls may run alongside other parallel-safe calls (they neither change state nor
    /// depend on the order of other calls). Exclusive by default.
    fn parallel_safe(&self) -> bool {
        false
    }

    /// The file or folder a call works on, as the model gave it, when the tool works on one:
    /// the agent then looks for instruction files (nested `AGENTS.md`) in its folder.
    /// The file its facts name ([`ToolFacts::file`]).
    fn touched_path<'a>(&self, args: &'a Arguments) -> Option<&'a str> {
        args.str(self.facts().file?)
    }

    /// Whether this call may run in plan mode: it changes no files, or changes them only
    /// through the sandbox, which plan mode makes read-only. A read-only tool may
    /// ([`ToolFacts::read_only`]); any other is kept out of plan mode unless it says so.
    fn plan_safe(&self, args: &Arguments) -> bool {
        let _ = args;
        self.facts().read_only
    }

    /// Whether a call ends on its own, promptly, when the run is stopped (a subagent winds its
    /// child down, closing its log, and reports how far it got): the registry then waits for it
    /// instead of abandoning it with `tool call aborted`.
    fn stops_itself(&self) -> bool {
        false
    }

    /// Whether the tool keeps its results within bounds itself (paging, caps with their own
    /// notes), so the registry must not spill them: a spill would only send the model to read
    /// the spill file.
    fn bounds_own_output(&self) -> bool {
        false
    }

    /// Runs one call with arguments already validated against [`Tool::parameters`].
    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a>;
}

/// Helpers for the unit tests of this crate.
#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use crate::ToolContext;

    /// A context for a workspace at `dir` under `workspace-write`, spilling into `dir/.spill`.
    pub fn context(dir: &Path) -> ToolContext {
        ToolContext::in_workspace(dir)
    }
}
