//! The UI's state and what each event and answer does to it: the session opened, what its
//! turns report, the dialogs and lists in front of the composer. What a key does is `keys.rs`,
//! how the state is drawn `draw.rs`, and the cells that commands print `cells.rs`. Nothing here
//! touches the terminal: the loop in `lib.rs` feeds it and draws it, and tests do the same with
//! ratatui's test backend.

pub mod cells;
mod draw;
mod history;
mod keys;
mod steer;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use dsh_core::{AgentEvent, Stop, StreamDelta};
use dsh_protocol::{AbortReason, Record, SessionSummary, View};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::composer::Composer;
use crate::dialog::Dialog;
use crate::host::{Opened, SessionInfo};
use crate::slash::{PromptDirs, Slash};
use crate::transcript::Transcript;
use dsh_core::SavedPrompt;
use dsh_core::mentions::FileIndex;

/// What the loop must do after a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    None,
    /// Send a message: a new turn.
    Send(String),
    Slash(Slash),
    /// Stop the running turn.
    Interrupt,
    Quit,
    /// Build the `@` index (the first `@` typed).
    IndexFiles,
    /// Read the workspace's prompts for the Ctrl-R search.
    LoadHistory,
    /// Write the message in `$EDITOR` (Ctrl-G, `/edit`).
    Edit,
    /// Rewind the session as the `/rewind` view was told.
    Rewind(dsh_core::checkpoints::RewindRequest),
}

/// A turn in progress.
struct Running {
    started: Instant,
    stop: Stop,
    interrupted: bool,
    /// A model turn, which takes messages at its step boundaries (a `!` command does not).
    steerable: bool,
}

/// A tool call still running.
struct ActiveCall {
    id: String,
    name: String,
    summary: String,
    /// The end of its output so far, as it arrives.
    output: String,
}

/// The start of the call id the user's own `!` command reports its output with.
const SHELL_CALL: &str = "shell-";

/// How much of a running call's output is kept for the live area.
const LIVE_OUTPUT_BYTES: usize = 4096;
/// The lines of it shown.
const LIVE_OUTPUT_LINES: usize = 4;

/// The `@` popup.
struct MentionPopup {
    start: usize,
    matches: Vec<String>,
    selected: usize,
}

/// The `/resume` list, filtered by what is typed.
pub struct SessionPicker {
    sessions: Vec<SessionSummary>,
    /// The sessions shown (indexes into `sessions`): all of them, or those the search finds,
    /// best first.
    shown: Vec<usize>,
    /// What is typed: a search, as `dsh sessions search` makes it.
    query: String,
    /// Where the sessions are, for the search.
    home: std::path::PathBuf,
    selected: usize,
}

impl SessionPicker {
    /// Shows the sessions `query` finds ([`dsh_core::search_sessions`], the search `dsh
    /// sessions search` makes, of every workspace: this folder's are kept, in its order), or
    /// every one for no query.
    fn filter(&mut self) {
        self.selected = 0;
        if self.query.trim().is_empty() {
            self.shown = (0..self.sessions.len()).collect();
            return;
        }
        let found = dsh_core::search_sessions(&self.home, &self.query, usize::MAX);
        self.shown = (found.iter())
            .filter_map(|hit| self.sessions.iter().position(|s| s.id == hit.id))
            .collect();
    }
}

/// Until when a notice in the footer holds: each clears when what it announced is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lasts {
    /// The turn or the work under way (interrupting, stopping, "wait for the turn").
    Idle,
    /// The next key (a second Ctrl-C quits, reasoning shown or folded).
    Key,
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const DIM: Style = Style::new().fg(Color::DarkGray);

pub struct App {
    pub transcript: Transcript,
    pub composer: Composer,
    /// Cells finished and waiting to be written above the live area.
    pending: Vec<Line<'static>>,
    pub info: Option<SessionInfo>,
    live_text: String,
    live_reasoning: String,
    running: Option<Running>,
    /// A compaction or a session being opened: no new turn until it is done.
    pub busy: Option<String>,
    /// Stops the compaction in progress.
    busy_stop: Option<Stop>,
    active: Vec<ActiveCall>,
    pub queued: VecDeque<String>,
    /// The run's inbox for messages sent while the model works ([`dsh_core::Steering`]).
    steer: Option<dsh_core::Steering>,
    /// Messages left in it whose delivery the transcript has not shown yet, oldest first.
    steering: VecDeque<String>,
    dialogs: VecDeque<Dialog>,
    pub picker: Option<SessionPicker>,
    /// `/rewind`'s list of turns, or the rewind it asks to confirm.
    pub rewind: Option<crate::rewind::RewindView>,
    mention: Option<MentionPopup>,
    pub files: Option<Arc<FileIndex>>,
    indexing: bool,
    /// Files may have changed since the index was made (a turn or a rewind ended): the next
    /// `@` makes it again in the background, and the one there serves until then.
    files_stale: bool,
    /// Where the saved prompts are kept (none in tests that need none).
    prompt_dirs: Option<PromptDirs>,
    /// The saved prompts as last read: when a command line was started or entered.
    prompts: Vec<SavedPrompt>,
    /// A line for the footer ("interrupting…", "Ctrl-C again to quit"), and until when it
    /// holds.
    notice: Option<(String, Lasts)>,
    /// Ctrl-C once more quits.
    quit_armed: bool,
    /// Counts what took the composer's place (a dialog come to the front, the session
    /// picker, a rewind view), so the loop knows one is new on screen.
    views: u64,
    pub tick: usize,
    /// The text of the model's last answer, for `/copy`.
    pub last_answer: String,
    /// The tokens of context the conversation fills: what the last request sent and got back,
    /// or a compaction's summary once it replaced the older part (the footer's share).
    context_used: u64,
    /// The Ctrl-R search of the workspace's prompts, when open.
    history: Option<crate::history::HistorySearch>,
    /// Whether the terminal has the focus (as far as it reports it): notifications are for
    /// when it has not.
    pub focused: bool,
}

impl App {
    pub fn new(prompt_dirs: Option<PromptDirs>) -> App {
        let prompts = prompt_dirs
            .as_ref()
            .map(PromptDirs::load)
            .unwrap_or_default();
        App {
            transcript: Transcript::default(),
            composer: Composer::default(),
            pending: Vec::new(),
            info: None,
            live_text: String::new(),
            live_reasoning: String::new(),
            running: None,
            busy: None,
            busy_stop: None,
            active: Vec::new(),
            queued: VecDeque::new(),
            steer: None,
            steering: VecDeque::new(),
            dialogs: VecDeque::new(),
            picker: None,
            rewind: None,
            mention: None,
            files: None,
            indexing: false,
            files_stale: false,
            prompt_dirs,
            prompts,
            notice: None,
            quit_armed: false,
            views: 0,
            tick: 0,
            last_answer: String::new(),
            history: None,
            focused: true,
            context_used: 0,
        }
    }

    /// The lines to write above the live area now.
    pub fn take_pending(&mut self) -> Vec<Line<'static>> {
        std::mem::take(&mut self.pending)
    }

    pub fn push_cell(&mut self, lines: Vec<Line<'static>>) {
        self.pending.extend(lines);
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.push_cell(vec![Line::styled(format!("· {}", text.into()), DIM)]);
    }

    pub fn error(&mut self, text: impl Into<String>) {
        self.push_cell(vec![Line::styled(
            format!("✗ {}", text.into()),
            Style::new().fg(Color::Red),
        )]);
    }

    /// The saved prompts, read again: one saved since is a command at once.
    pub fn reload_prompts(&mut self) -> &[SavedPrompt] {
        if let Some(dirs) = &self.prompt_dirs {
            self.prompts = dirs.load();
        }
        &self.prompts
    }

    /// The command being typed: the composer's text when it is a `/` and a name, no more.
    fn command_typed(&self) -> Option<String> {
        let text = self.composer.text();
        (text.starts_with('/') && !text.contains(char::is_whitespace)).then_some(text)
    }

    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// Whether a new turn may start now.
    pub fn is_idle(&self) -> bool {
        self.running.is_none() && self.busy.is_none() && self.info.is_some()
    }

    /// The spinner needs frames.
    pub fn animating(&self) -> bool {
        self.running.is_some() || self.busy.is_some()
    }

    /// Something other than a turn is under way (`label` says what), stopped by `stop`.
    pub fn begin_busy(&mut self, label: &str, stop: Option<Stop>) {
        self.busy = Some(label.to_owned());
        self.busy_stop = stop;
    }

    pub fn end_busy(&mut self) {
        self.busy = None;
        self.busy_stop = None;
        self.clear_notice(Lasts::Idle);
    }

    /// A session could not be opened: none is open now (the host closed the last).
    pub fn open_failed(&mut self, message: &str) {
        self.end_busy();
        self.info = None;
        self.error(format!(
            "{message}\n  /new starts a new session, /resume picks another"
        ));
    }

    /// A session could not be opened, and the one open before goes on: as it was, or
    /// `reopened` as it was (the same session, opened again after other settings failed).
    pub fn open_refused(&mut self, message: &str, reopened: Option<SessionInfo>) {
        self.end_busy();
        if reopened.is_some() {
            self.info = reopened;
        }
        self.error(message);
        self.note("the session open goes on as it was");
    }

    fn notify(&mut self, text: impl Into<String>, lasts: Lasts) {
        self.notice = Some((text.into(), lasts));
    }

    fn clear_notice(&mut self, lasts: Lasts) {
        if self.notice.as_ref().is_some_and(|(_, l)| *l == lasts) {
            self.notice = None;
        }
    }

    pub fn opened(&mut self, opened: &Opened) {
        let info = &opened.info;
        // The same session on another model (`/model`): its transcript is already above.
        if self.info.as_ref().is_some_and(|open| open.id == info.id) {
            self.note(format!("now on {}; the session goes on", info.model));
            self.transcript.catalog = info.catalog.clone();
            self.info = Some(info.clone());
            self.end_busy();
            return;
        }
        let show_reasoning = self.transcript.show_reasoning;
        self.transcript = Transcript::default();
        self.transcript.show_reasoning = show_reasoning;
        self.transcript.catalog = info.catalog.clone();
        let mut header = vec![
            Line::default(),
            Line::from(vec![
                Span::styled(
                    "dsh ",
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                ),
                Span::styled(env!("CARGO_PKG_VERSION"), DIM),
                Span::styled(
                    format!(
                        "  {} · {} · {}",
                        info.model,
                        info.sandbox,
                        info.cwd.display()
                    ),
                    DIM,
                ),
            ]),
        ];
        let resumed = !opened.earlier.is_empty();
        header.push(Line::styled(
            format!(
                "{} session {}",
                if resumed { "resumed" } else { "new" },
                info.id
            ),
            DIM,
        ));
        self.push_cell(header);
        if opened.not_shown > 0 {
            self.push_cell(vec![Line::styled(
                format!(
                    "… {} earlier turns are not shown here (dsh sessions show {} prints them all)",
                    opened.not_shown, info.id
                ),
                DIM,
            )]);
        }
        self.context_used = 0;
        for record in &opened.earlier {
            self.track_context(record);
            match record.view() {
                View::User { message } => self.composer.remember(message.text()),
                View::Answer(answer) if !answer.message.text().trim().is_empty() => {
                    self.last_answer = answer.message.text();
                }
                _ => {}
            }
            if let Some(cell) = self.transcript.cell(record) {
                self.push_cell(cell);
            }
        }
        if !resumed {
            self.push_cell(vec![Line::styled(
                "Type a message and press Enter. /help lists the commands; @ mentions a file.",
                DIM,
            )]);
        }
        self.info = Some(info.clone());
        self.steer = Some(opened.steering.clone());
        self.steering.clear();
        self.end_busy();
    }

    pub fn turn_started(&mut self, task: &str, stop: Stop) {
        self.running = Some(Running {
            started: Instant::now(),
            stop,
            interrupted: false,
            steerable: true,
        });
        self.quit_armed = false;
        self.notice = None;
        // The user's message shows once the log has it (the `user/message` record).
        let _ = task;
    }

    /// A command the user typed after `!` runs: shown as a running call, its output as it
    /// comes, until its turn ends and the transcript shows the command and what it printed.
    pub fn shell_started(&mut self, command: &str, stop: Stop) {
        self.turn_started(command, stop);
        if let Some(running) = &mut self.running {
            running.steerable = false;
        }
        self.active.push(ActiveCall {
            id: SHELL_CALL.to_owned(),
            name: "!".to_owned(),
            summary: command.to_owned(),
            output: String::new(),
        });
    }

    pub fn turn_ended(&mut self, result: Result<dsh_core::TurnSummary, String>) {
        self.running = None;
        self.steering_left();
        self.files_stale = true;
        self.clear_notice(Lasts::Idle);
        if self.quit_armed {
            // The turn a Ctrl-C interrupted is over; another still quits.
            self.notify("press Ctrl-C again (or Ctrl-D) to quit", Lasts::Key);
        }
        self.active.clear();
        self.live_text.clear();
        self.live_reasoning.clear();
        if let Err(message) = result {
            self.error(message);
        }
        // A dialog left open belongs to the turn that ended.
        while let Some(dialog) = self.dialogs.pop_front() {
            dialog.cancel();
        }
    }

    pub fn event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Record(record) => self.record(&record),
            AgentEvent::Delta(StreamDelta::Text(text)) => self.live_text.push_str(&text),
            AgentEvent::Delta(StreamDelta::Reasoning(text)) => self.live_reasoning.push_str(&text),
            AgentEvent::Delta(StreamDelta::ToolCall) => {}
            AgentEvent::Notice(line) => self.note(line),
            AgentEvent::ToolOutput { call_id, text } => {
                // The user's own command reports as `shell-TURN` (`Agent::run_shell`).
                let shell = call_id.starts_with(SHELL_CALL);
                if let Some(call) = (self.active.iter_mut())
                    .find(|c| c.id == call_id || (shell && c.id == SHELL_CALL))
                {
                    call.output.push_str(&text);
                    if call.output.len() > LIVE_OUTPUT_BYTES {
                        let mut cut = call.output.len() - LIVE_OUTPUT_BYTES;
                        while !call.output.is_char_boundary(cut) {
                            cut += 1;
                        }
                        call.output.drain(..cut);
                    }
                }
            }
            AgentEvent::Delta(StreamDelta::Retry(notice)) => {
                self.live_text.clear();
                self.live_reasoning.clear();
                self.push_cell(vec![Line::styled(
                    format!(
                        "· retrying (attempt {} of {}) in {:.1} s after {}: {}",
                        notice.attempt,
                        notice.attempts,
                        notice.delay.as_secs_f64(),
                        notice.code,
                        notice.message
                    ),
                    Style::new().fg(Color::Yellow),
                )]);
            }
            AgentEvent::Child { agent_id, event } => {
                if let AgentEvent::Record(record) = *event
                    && let View::Call(call) = record.view()
                {
                    let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                    let view = self.transcript.catalog.describe(&call.name, &args);
                    self.note(format!("{agent_id}: {} {}", call.name, view.summary));
                }
            }
        }
    }

    /// What a record says of the context in use: a step's last size, a summary's.
    fn track_context(&mut self, record: &Record) {
        match record {
            Record::StepEnd { usage, .. } => self.context_used = usage.total_tokens,
            Record::CompactionSummary(summary) => self.context_used = summary.tokens_after,
            _ => {}
        }
    }

    fn record(&mut self, record: &Record) {
        self.track_context(record);
        self.steered(record);
        match record.view() {
            View::Answer(answer) => {
                let text = answer.message.text();
                if !text.trim().is_empty() {
                    self.last_answer = text;
                }
                self.live_text.clear();
                self.live_reasoning.clear();
            }
            View::Call(call) => {
                let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                self.active.push(ActiveCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    summary: self.transcript.catalog.describe(&call.name, &args).summary,
                    output: String::new(),
                });
            }
            View::Result(result) => {
                let done: Vec<(&str, bool)> = result
                    .message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        dsh_protocol::Block::ToolResult {
                            tool_call_id,
                            is_error,
                            ..
                        } => Some((tool_call_id.as_str(), *is_error)),
                        _ => None,
                    })
                    .collect();
                for (id, failed) in &done {
                    let Some(at) = self.active.iter().position(|c| c.id == *id) else {
                        continue;
                    };
                    let call = self.active.remove(at);
                    // A call stopped or failed has no output in its result: what was shown
                    // of it while it ran stays above its error.
                    if *failed {
                        self.push_cell(crate::transcript::watched_output(&call.output));
                    }
                }
            }
            // The session's mode changed within the turn (a plan approved to run in the mode
            // picked): the status line follows, and so does a reopen (`/model`).
            View::Mode(permission) => {
                if let Some(info) = &mut self.info {
                    info.sandbox.clone_from(&permission.mode);
                    info.approval.clone_from(&permission.approval);
                    info.flags.permission_mode = permission.mode.parse().ok();
                }
            }
            _ => {}
        }
        if let Some(cell) = self.transcript.cell(record) {
            self.push_cell(cell);
        }
    }

    pub fn open_dialog(&mut self, dialog: Dialog) {
        // A question whose call was stopped before it got here is not shown.
        if !dialog.is_stale() {
            self.dialogs.push_back(dialog);
            if self.dialogs.len() == 1 {
                self.views += 1;
            }
        }
    }

    /// Takes the dialog in front away; the next one, if any, is new on screen.
    fn close_dialog(&mut self) -> Option<Dialog> {
        let closed = self.dialogs.pop_front();
        if !self.dialogs.is_empty() {
            self.views += 1;
        }
        closed
    }

    /// Shows `/rewind`'s list of turns.
    pub fn open_rewind(&mut self, view: crate::rewind::RewindView) {
        self.rewind = Some(view);
        self.views += 1;
    }

    /// What takes the keys in the composer's place now, as a number that changes whenever
    /// another takes it; `None`: the composer has them. Keys typed before a dialog was on
    /// screen go to [`App::typed_before`], never to it.
    pub fn front_view(&self) -> Option<u64> {
        let shown = !self.dialogs.is_empty() || self.picker.is_some() || self.rewind.is_some();
        shown.then_some(self.views)
    }

    /// What a `/rewind` step came back with: the plan to confirm, or what was done.
    pub fn rewound(
        &mut self,
        request: dsh_core::checkpoints::RewindRequest,
        report: dsh_core::checkpoints::RewindReport,
    ) {
        self.files_stale = true;
        let Some(record) = &report.applied else {
            if let Some(turn) = request.to_turn {
                self.open_rewind(crate::rewind::RewindView::confirm(turn, report));
            }
            return;
        };
        self.push_cell(vec![Line::styled(
            format!("↶ {}", record.headline()),
            Style::new().fg(Color::Yellow),
        )]);
        for (path, why) in &report.failed {
            self.error(format!("not restored: {path}: {why}"));
        }
        if record.conversation {
            self.note(
                "the model now sees the conversation as it was then; the transcript above \
                 stays as it happened (`dsh rewind <session> --undo --yes` takes it back)",
            );
        }
    }

    pub fn open_picker(&mut self, sessions: Vec<SessionSummary>, home: &std::path::Path) {
        if sessions.is_empty() {
            self.note("no earlier sessions in this folder");
            return;
        }
        self.picker = Some(SessionPicker {
            shown: (0..sessions.len()).collect(),
            sessions,
            query: String::new(),
            home: home.to_path_buf(),
            selected: 0,
        });
        self.views += 1;
    }

    pub fn files_indexed(&mut self, index: FileIndex) {
        self.indexing = false;
        // Said once, not at each index made again.
        if index.truncated && self.files.is_none() {
            self.note(format!(
                "@ mentions: the workspace has more than {} files; only the first are offered",
                dsh_core::mentions::MAX_FILES
            ));
        }
        self.files = Some(Arc::new(index));
        self.refresh_mention();
    }

    /// Stops the running turn, if any (the UI is closing).
    pub fn stop_turn(&mut self) {
        if let Some(dialog) = self.close_dialog() {
            dialog.cancel();
        }
        if self.running.is_some() {
            self.interrupt();
        }
        if let Some(stop) = &self.busy_stop {
            stop.request(AbortReason::User);
        }
    }

    /// How long the turn under way has run, if one is.
    pub fn turn_took(&self) -> Option<std::time::Duration> {
        self.running.as_ref().map(|r| r.started.elapsed())
    }

    /// The next queued message, once the turn that held it ended.
    pub fn next_queued(&mut self) -> Option<String> {
        if self.is_idle() {
            self.queued.pop_front()
        } else {
            None
        }
    }

    /// A notice that holds while the turn or the work under way goes on.
    pub fn notice_until_idle(&mut self, notice: impl Into<String>) {
        self.notify(notice, Lasts::Idle);
    }
}
