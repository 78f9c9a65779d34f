//! The UI's state and what each key, event and answer does to it. Nothing here touches the
//! terminal: the loop in `lib.rs` feeds it and draws it, and tests do the same with ratatui's
//! test backend.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use dsh_core::{AgentEvent, Stop, StreamDelta};
use dsh_protocol::{AbortReason, Record, SessionSummary};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::composer::Composer;
use crate::dialog::{Dialog, Handled};
use crate::host::{Opened, SessionInfo};
use crate::slash::{self, PromptDirs, Slash};
use crate::transcript::{Transcript, tokens};
use crate::wrap::wrap_lines;
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
    /// Rewind the session as the `/rewind` view was told.
    Rewind(dsh_core::checkpoints::RewindRequest),
}

/// A turn in progress.
struct Running {
    started: Instant,
    stop: Stop,
    interrupted: bool,
}

/// A tool call still running.
struct ActiveCall {
    id: String,
    name: String,
    summary: String,
    /// The end of its output so far, as it arrives.
    output: String,
}

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

/// The `/resume` list.
pub struct SessionPicker {
    sessions: Vec<SessionSummary>,
    selected: usize,
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
    dialogs: VecDeque<Dialog>,
    pub picker: Option<SessionPicker>,
    /// `/rewind`'s list of turns, or the rewind it asks to confirm.
    pub rewind: Option<crate::rewind::RewindView>,
    mention: Option<MentionPopup>,
    pub files: Option<Arc<FileIndex>>,
    indexing: bool,
    /// Where the saved prompts are kept (none in tests that need none).
    prompt_dirs: Option<PromptDirs>,
    /// The saved prompts as last read: when a command line was started or entered.
    prompts: Vec<SavedPrompt>,
    /// A line for the footer ("interrupting…", "Ctrl-C again to quit"), and until when it
    /// holds.
    notice: Option<(String, Lasts)>,
    /// Ctrl-C once more quits.
    quit_armed: bool,
    pub tick: usize,
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
            dialogs: VecDeque::new(),
            picker: None,
            rewind: None,
            mention: None,
            files: None,
            indexing: false,
            prompt_dirs,
            prompts,
            notice: None,
            quit_armed: false,
            tick: 0,
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
        for record in &opened.earlier {
            if let Record::UserMessage {
                message,
                instructions: None,
                ..
            } = record
            {
                self.composer.remember(message.text());
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
        self.end_busy();
    }

    pub fn turn_started(&mut self, task: &str, stop: Stop) {
        self.running = Some(Running {
            started: Instant::now(),
            stop,
            interrupted: false,
        });
        self.quit_armed = false;
        self.notice = None;
        // The user's message shows once the log has it (the `user/message` record).
        let _ = task;
    }

    pub fn turn_ended(&mut self, result: Result<dsh_core::TurnSummary, String>) {
        self.running = None;
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
                if let Some(call) = self.active.iter_mut().find(|c| c.id == call_id) {
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
                if let AgentEvent::Record(Record::ToolCall(call)) = *event {
                    let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                    let view = self.transcript.catalog.describe(&call.name, &args);
                    self.note(format!("{agent_id}: {} {}", call.name, view.summary));
                }
            }
        }
    }

    fn record(&mut self, record: &Record) {
        match record {
            Record::AssistantMessage(_) => {
                self.live_text.clear();
                self.live_reasoning.clear();
            }
            Record::ToolCall(call) => {
                let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                self.active.push(ActiveCall {
                    id: call.call_id.clone(),
                    name: call.name.clone(),
                    summary: self.transcript.catalog.describe(&call.name, &args).summary,
                    output: String::new(),
                });
            }
            Record::ToolResult(result) => {
                let done: Vec<&str> = result
                    .message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        dsh_protocol::Block::ToolResult { tool_call_id, .. } => {
                            Some(tool_call_id.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                self.active.retain(|c| !done.contains(&c.id.as_str()));
            }
            // The session's mode changed within the turn (a plan approved to run in the mode
            // picked): the status line follows, and so does a reopen (`/model`).
            Record::PermissionMode(permission) => {
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
        }
    }

    /// What a `/rewind` step came back with: the plan to confirm, or what was done.
    pub fn rewound(
        &mut self,
        request: dsh_core::checkpoints::RewindRequest,
        report: dsh_core::checkpoints::RewindReport,
    ) {
        let Some(record) = &report.applied else {
            if let Some(turn) = request.to_turn {
                self.rewind = Some(crate::rewind::RewindView::Confirm { turn, report });
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

    pub fn open_picker(&mut self, sessions: Vec<SessionSummary>) {
        if sessions.is_empty() {
            self.note("no earlier sessions in this folder");
            return;
        }
        self.picker = Some(SessionPicker {
            sessions,
            selected: 0,
        });
    }

    pub fn files_indexed(&mut self, index: FileIndex) {
        self.indexing = false;
        if index.truncated {
            self.note(format!(
                "@ mentions: the workspace has more than {} files; only the first are offered",
                dsh_core::mentions::MAX_FILES
            ));
        }
        self.files = Some(Arc::new(index));
        self.refresh_mention();
    }

    pub fn paste(&mut self, text: &str) {
        if let Some(dialog) = self.dialogs.front_mut() {
            dialog.paste(text);
            return;
        }
        self.composer.insert(text);
        self.refresh_mention();
    }

    pub fn key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if key.code != KeyCode::Esc {
            self.quit_armed = false;
        }
        self.clear_notice(Lasts::Key);
        if let Some(dialog) = self.dialogs.front_mut() {
            if key.code == KeyCode::Esc {
                if let Some(dialog) = self.dialogs.pop_front() {
                    dialog.cancel();
                }
            } else if dialog.key(key) == Handled::Closed {
                self.dialogs.pop_front();
            }
            return Action::None;
        }
        if self.picker.is_some() {
            return self.picker_key(key);
        }
        if let Some(view) = &mut self.rewind {
            use crate::rewind::RewindKey;
            return match view.key(key) {
                RewindKey::None => Action::None,
                RewindKey::Close => {
                    self.rewind = None;
                    Action::None
                }
                RewindKey::Preview(turn) => {
                    self.rewind = None;
                    Action::Slash(Slash::Rewind(Some(turn.to_string())))
                }
                RewindKey::Apply(request) => {
                    self.rewind = None;
                    Action::Rewind(request)
                }
            };
        }
        if self.mention.is_some() {
            match key.code {
                KeyCode::Up => {
                    if let Some(m) = &mut self.mention {
                        m.selected = m.selected.saturating_sub(1);
                    }
                    return Action::None;
                }
                KeyCode::Down => {
                    if let Some(m) = &mut self.mention {
                        m.selected = (m.selected + 1).min(m.matches.len().saturating_sub(1));
                    }
                    return Action::None;
                }
                KeyCode::Enter | KeyCode::Tab => {
                    if let Some(m) = self.mention.take()
                        && let Some(path) = m.matches.get(m.selected)
                    {
                        self.composer.complete_mention(m.start, path);
                        return Action::None;
                    }
                }
                KeyCode::Esc => {
                    self.mention = None;
                    return Action::None;
                }
                _ => {}
            }
        }
        let action = match key.code {
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() {
                    Action::Quit
                } else {
                    self.composer.delete();
                    Action::None
                }
            }
            KeyCode::Char('t') if ctrl => {
                self.transcript.show_reasoning ^= true;
                let shown = if self.transcript.show_reasoning {
                    "shown in full"
                } else {
                    "folded"
                };
                self.notify(
                    format!("reasoning is now {shown} in the transcript"),
                    Lasts::Key,
                );
                Action::None
            }
            KeyCode::Char('j') if ctrl => {
                self.composer.insert("\n");
                Action::None
            }
            KeyCode::Char('u') if ctrl => {
                self.composer.delete_to_line_start();
                Action::None
            }
            KeyCode::Char('w') if ctrl => {
                self.composer.delete_word();
                Action::None
            }
            KeyCode::Char('a') if ctrl => {
                self.composer.home();
                Action::None
            }
            KeyCode::Char('e') if ctrl => {
                self.composer.end();
                Action::None
            }
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.composer.insert("\n");
                Action::None
            }
            KeyCode::Enter => self.enter(),
            KeyCode::Tab => {
                if let Some(typed) = self.command_typed()
                    && let Some(completed) = slash::complete(&typed, &self.prompts)
                {
                    self.composer.set_text(&completed);
                }
                Action::None
            }
            KeyCode::Esc => {
                if self.is_running() {
                    self.interrupt()
                } else {
                    if let Some(stop) = &self.busy_stop {
                        stop.request(AbortReason::User);
                    }
                    Action::None
                }
            }
            KeyCode::Char(c) if !ctrl => {
                self.composer.insert(&c.to_string());
                if c == '/' && self.composer.text() == "/" {
                    // A command line starts: the hint offers the prompts saved by now.
                    self.reload_prompts();
                }
                if c == '@' && self.files.is_none() && !self.indexing {
                    self.indexing = true;
                    self.refresh_mention();
                    return Action::IndexFiles;
                }
                Action::None
            }
            KeyCode::Backspace => {
                self.composer.backspace();
                Action::None
            }
            KeyCode::Delete => {
                self.composer.delete();
                Action::None
            }
            KeyCode::Left => {
                self.composer.left();
                Action::None
            }
            KeyCode::Right => {
                self.composer.right();
                Action::None
            }
            KeyCode::Home => {
                self.composer.home();
                Action::None
            }
            KeyCode::End => {
                self.composer.end();
                Action::None
            }
            KeyCode::Up => {
                self.composer.up();
                Action::None
            }
            KeyCode::Down => {
                self.composer.down();
                Action::None
            }
            _ => Action::None,
        };
        self.refresh_mention();
        action
    }

    fn picker_key(&mut self, key: KeyEvent) -> Action {
        let Some(picker) = &mut self.picker else {
            return Action::None;
        };
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected = (picker.selected + 1).min(picker.sessions.len() - 1);
            }
            KeyCode::Enter => {
                let id = picker.sessions[picker.selected].id.clone();
                self.picker = None;
                return Action::Slash(Slash::Resume(Some(id)));
            }
            KeyCode::Esc => {
                self.picker = None;
                if self.info.is_none() {
                    return Action::Slash(Slash::New);
                }
            }
            _ => {}
        }
        Action::None
    }

    fn ctrl_c(&mut self) -> Action {
        if let Some(dialog) = self.dialogs.pop_front() {
            dialog.cancel();
        }
        if let Some(running) = &self.running {
            if running.interrupted {
                return Action::Quit;
            }
            // A second Ctrl-C quits even when the turn has ended by the time it comes.
            self.quit_armed = true;
            return self.interrupt();
        }
        if let Some(stop) = &self.busy_stop
            && !stop.is_requested()
        {
            stop.request(AbortReason::User);
            self.notify("stopping… (Ctrl-C again quits)", Lasts::Idle);
            return Action::None;
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.mention = None;
            return Action::None;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        self.notify("press Ctrl-C again (or Ctrl-D) to quit", Lasts::Key);
        Action::None
    }

    /// Stops the running turn, if any (the UI is closing).
    pub fn stop_turn(&mut self) {
        if let Some(dialog) = self.dialogs.pop_front() {
            dialog.cancel();
        }
        if self.running.is_some() {
            self.interrupt();
        }
        if let Some(stop) = &self.busy_stop {
            stop.request(AbortReason::User);
        }
    }

    fn interrupt(&mut self) -> Action {
        if let Some(running) = &mut self.running {
            running.interrupted = true;
            running.stop.request(AbortReason::User);
            self.notify("interrupting… (Ctrl-C again quits)", Lasts::Idle);
        }
        Action::Interrupt
    }

    fn enter(&mut self) -> Action {
        // A line ending in `\` continues on the next.
        let text = self.composer.text();
        if text.ends_with('\\') {
            self.composer.backspace();
            self.composer.insert("\n");
            return Action::None;
        }
        if text.trim().is_empty() {
            return Action::None;
        }
        if text.starts_with('/') {
            // Read where prompts are kept now: one saved a moment ago is a command.
            self.reload_prompts();
            // A start that names one command only (the hint shows it) runs that command.
            if let Some(typed) = self.command_typed()
                && let [only] = slash::completions(&typed, &self.prompts).as_slice()
            {
                self.composer.set_text(only);
            }
            let line = self.composer.take();
            return Action::Slash(slash::parse(&line, &self.prompts));
        }
        let text = self.composer.take();
        if self.running.is_some() || self.busy.is_some() {
            self.queued.push_back(text);
            Action::None
        } else {
            // With no session open, sending says so.
            Action::Send(text)
        }
    }

    /// The next queued message, once the turn that held it ended.
    pub fn next_queued(&mut self) -> Option<String> {
        if self.is_idle() {
            self.queued.pop_front()
        } else {
            None
        }
    }

    fn refresh_mention(&mut self) {
        self.mention = match (self.composer.mention(), &self.files) {
            (Some((start, query)), Some(files)) => {
                let matches = files.matches(&query);
                let selected = self
                    .mention
                    .as_ref()
                    .filter(|m| m.start == start)
                    .map_or(0, |m| m.selected.min(matches.len().saturating_sub(1)));
                (!matches.is_empty()).then_some(MentionPopup {
                    start,
                    matches,
                    selected,
                })
            }
            _ => None,
        };
    }

    /// A notice that holds while the turn or the work under way goes on.
    pub fn notice_until_idle(&mut self, notice: impl Into<String>) {
        self.notify(notice, Lasts::Idle);
    }

    /// The live area: what is streaming, the calls running, the queue, the composer (or the
    /// dialog in its place) and the footer.
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let width = area.width;
        let mut bottom: Vec<Line<'static>> = Vec::new();
        let mut cursor = None;
        if let Some(dialog) = self.dialogs.front() {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(wrap_lines(&dialog.lines(), width));
        } else if let Some(picker) = &self.picker {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(picker.lines(width, area.height.saturating_sub(4)));
        } else if let Some(view) = &self.rewind {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(wrap_lines(
                &view.lines(width, area.height.saturating_sub(4)),
                width,
            ));
        } else {
            if let Some(m) = &self.mention {
                for (i, path) in m.matches.iter().enumerate() {
                    let style = if i == m.selected {
                        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                    } else {
                        DIM
                    };
                    bottom.push(Line::styled(format!("  @{path}"), style));
                }
            } else if self.indexing {
                bottom.push(Line::styled(
                    "  indexing the workspace for @ mentions…",
                    DIM,
                ));
            } else if self.composer.text().starts_with('/') && !self.composer.text().contains(' ') {
                let typed = self.composer.text();
                let found = slash::completions(&typed, &self.prompts);
                for name in found.iter().take(5) {
                    let about = slash::COMMANDS
                        .iter()
                        .find(|(c, _)| c == name)
                        .map_or("saved prompt", |(_, a)| a);
                    bottom.push(Line::styled(format!("  {name}  {about}"), DIM));
                }
            }
            for queued in &self.queued {
                let first = queued.lines().next().unwrap_or("");
                bottom.push(Line::styled(format!("  queued: {first}"), DIM));
            }
            bottom.push(rule(width, Color::DarkGray));
            let (rows, (col, row)) = self.composer.layout(width.saturating_sub(2));
            let shown = rows.len().min(6);
            let first = rows.len() - shown;
            let first = if usize::from(row) < first {
                usize::from(row)
            } else {
                first
            };
            for (i, text) in rows.iter().enumerate().skip(first).take(shown) {
                let prefix = if i == 0 { "› " } else { "  " };
                bottom.push(Line::from(vec![
                    Span::styled(prefix, Style::new().fg(Color::Cyan)),
                    Span::raw(text.clone()),
                ]));
            }
            let composer_top = bottom.len() - shown.min(rows.len() - first);
            cursor = Some((col + 2, composer_top + usize::from(row) - first));
        }
        bottom.push(self.footer(width));

        let height = usize::from(area.height);
        let bottom_len = bottom.len().min(height);
        let live_rows = height - bottom_len;
        let live = self.live_lines(width);
        let live: Vec<Line<'static>> = live[live.len().saturating_sub(live_rows)..].to_vec();
        let top = Rect::new(area.x, area.y, width, u16::try_from(live_rows).unwrap_or(0));
        frame.render_widget(Paragraph::new(live), top);
        let skip = bottom.len() - bottom_len;
        let y = area.y + u16::try_from(live_rows).unwrap_or(0);
        let rect = Rect::new(area.x, y, width, u16::try_from(bottom_len).unwrap_or(0));
        frame.render_widget(Paragraph::new(bottom[skip..].to_vec()), rect);
        if let Some((col, row)) = cursor
            && row >= skip
        {
            let row = u16::try_from(row - skip).unwrap_or(0);
            frame.set_cursor_position((area.x + col.min(width.saturating_sub(1)), y + row));
        }
    }

    /// What is streaming, and the calls running.
    fn live_lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if !self.live_reasoning.is_empty() && self.live_text.is_empty() {
            let tail: Vec<Line<'static>> = self
                .live_reasoning
                .lines()
                .map(|l| Line::styled(l.to_owned(), DIM.add_modifier(Modifier::ITALIC)))
                .collect();
            lines.extend(wrap_lines(&tail, width));
        }
        if !self.live_text.is_empty() {
            lines.extend(wrap_lines(&crate::markdown::render(&self.live_text), width));
        }
        let spin = SPINNER[self.tick % SPINNER.len()];
        for call in &self.active {
            lines.extend(wrap_lines(
                &[Line::from(vec![
                    Span::styled(format!("{spin} "), Style::new().fg(Color::Cyan)),
                    Span::styled(call.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
                    Span::styled(format!(" {}", call.summary), DIM),
                ])],
                width,
            ));
            // What a progress meter shows last (after its last `\r`), one row a line.
            let output: Vec<&str> = (call.output.lines())
                .map(|l| l.rsplit('\r').next().unwrap_or(l))
                .filter(|l| !l.trim().is_empty())
                .collect();
            let room = usize::from(width.saturating_sub(4));
            lines.extend(
                output[output.len().saturating_sub(LIVE_OUTPUT_LINES)..]
                    .iter()
                    .map(|l| Line::styled(format!("  │ {}", cut_to(l, room)), DIM)),
            );
        }
        if let Some(running) = &self.running {
            let what = if running.interrupted {
                "interrupting"
            } else if !self.active.is_empty() {
                "running tools"
            } else if !self.live_text.is_empty() {
                "answering"
            } else {
                "thinking"
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{spin} {what}"), Style::new().fg(Color::Cyan)),
                Span::styled(
                    format!(
                        " · {}s · Esc or Ctrl-C interrupts",
                        running.started.elapsed().as_secs()
                    ),
                    DIM,
                ),
            ]));
        } else if let Some(busy) = &self.busy {
            lines.push(Line::styled(
                format!("{spin} {busy}"),
                Style::new().fg(Color::Cyan),
            ));
        }
        lines
    }

    fn footer(&self, width: u16) -> Line<'static> {
        if let Some((notice, _)) = &self.notice {
            return Line::styled(notice.clone(), Style::new().fg(Color::Yellow));
        }
        let Some(info) = &self.info else {
            let text = if self.busy.is_some() {
                "opening the session…"
            } else {
                "no session is open: /new starts one, /resume picks one"
            };
            return Line::styled(text, DIM);
        };
        let usage = &self.transcript.session_usage;
        let mut text = format!(
            "{} · {} · {} tokens",
            info.model,
            info.sandbox,
            tokens(usage.total_tokens)
        );
        if info.priced {
            text.push_str(&format!(" · ${:.4}", usage.cost_usd.unwrap_or(0.0)));
        }
        if let Some(todo) = self
            .transcript
            .todos
            .iter()
            .find(|t| t.status == dsh_protocol::TodoStatus::InProgress)
        {
            let done = self
                .transcript
                .todos
                .iter()
                .filter(|t| t.status == dsh_protocol::TodoStatus::Completed)
                .count();
            text.push_str(&format!(
                " · todo {done}/{}: {}",
                self.transcript.todos.len(),
                todo.content
            ));
        }
        let text: String = text.chars().take(usize::from(width)).collect();
        Line::styled(text, DIM)
    }
}

impl SessionPicker {
    fn lines(&self, width: u16, rows: u16) -> Vec<Line<'static>> {
        let mut lines = vec![Line::styled(
            "Resume a session (↑↓ choose · Enter opens · Esc cancels)",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )];
        let rows = usize::from(rows.max(1));
        let first = self.selected.saturating_sub(rows - 1);
        for (i, s) in self.sessions.iter().enumerate().skip(first).take(rows) {
            let style = if i == self.selected {
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let marker = if i == self.selected { "› " } else { "  " };
            let short: String =
                s.id.trim_start_matches("session-")
                    .chars()
                    .take(8)
                    .collect();
            let text = format!(
                "{marker}{short}  {} turns · {} tokens · {}",
                s.turns,
                tokens(s.total_tokens),
                s.name()
            );
            lines.push(Line::styled(
                text.chars().take(usize::from(width)).collect::<String>(),
                style,
            ));
        }
        lines
    }
}

/// `text` cut to `columns` display columns.
fn cut_to(text: &str, columns: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    text.chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= columns
        })
        .collect()
}

fn rule(width: u16, colour: Color) -> Line<'static> {
    Line::styled("─".repeat(usize::from(width)), Style::new().fg(colour))
}

/// A cell for `/status`.
pub fn status_cell(app: &App, grants: &[String]) -> Vec<Line<'static>> {
    let Some(info) = &app.info else {
        return vec![Line::styled("no session is open", DIM)];
    };
    let usage = &app.transcript.session_usage;
    let cost = if info.priced {
        format!("${:.4}", usage.cost_usd.unwrap_or(0.0))
    } else {
        "unknown (no prices declared for this model)".to_owned()
    };
    let rows = [
        ("session", info.id.clone()),
        ("log", info.log.display().to_string()),
        ("model", info.model.clone()),
        (
            "sandbox",
            format!("{} · approvals: {}", info.sandbox, info.approval),
        ),
        (
            "tokens",
            format!(
                "{} (input {}, cached {}, output {}, reasoning {})",
                tokens(usage.total_tokens),
                tokens(usage.input_tokens),
                tokens(usage.cache_read_tokens),
                tokens(usage.output_tokens),
                tokens(usage.reasoning_tokens)
            ),
        ),
        ("cost", cost),
        (
            "allowed for the session",
            if grants.is_empty() {
                "nothing".to_owned()
            } else {
                grants.join(", ")
            },
        ),
    ];
    let mut lines = vec![Line::default()];
    lines.extend(rows.into_iter().map(|(k, v)| {
        Line::from(vec![
            Span::styled(
                format!("  {k:<24}"),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(v),
        ])
    }));
    lines
}

/// A cell for `/help`.
pub fn help_cell(prompts: &[SavedPrompt]) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::styled("  Commands", Style::new().add_modifier(Modifier::BOLD)),
    ];
    for (name, about) in slash::COMMANDS {
        lines.push(Line::from(format!("  {name:<10} {about}")));
    }
    for prompt in prompts {
        lines.push(Line::from(format!(
            "  /{:<9} saved prompt ({})",
            prompt.name,
            prompt.path.display()
        )));
    }
    lines.push(Line::styled(
        "  Keys",
        Style::new().add_modifier(Modifier::BOLD),
    ));
    for (keys, about) in [
        ("Enter", "send (while a turn runs: queue it for after)"),
        ("Ctrl-J, Alt-Enter, \\ Enter", "new line"),
        (
            "Up / Down",
            "move between lines; on the first/last line, earlier messages",
        ),
        ("Tab", "complete the /command being typed"),
        ("@", "mention a file (fuzzy; Tab or Enter picks)"),
        ("Esc, Ctrl-C", "interrupt the turn; Ctrl-C twice quits"),
        ("Ctrl-D", "quit on an empty composer"),
        ("Ctrl-T", "show or fold reasoning in the transcript"),
    ] {
        lines.push(Line::from(format!("  {keys:<26} {about}")));
    }
    lines
}

/// A cell of lines under a title (skills, prompts, diffs).
pub fn list_cell(title: &str, items: Vec<Line<'static>>) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::styled(
            format!("  {title}"),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ];
    lines.extend(items);
    lines
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{
        AssistantMessageRecord, Block, FinishReason, Message, Role, TodoItem, TodoStatus,
        ToolCallRecord, ToolOutputPart, ToolResultRecord, TurnEndReason, Usage,
    };
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::wrap::plain;

    fn opened_app() -> App {
        open_app(None)
    }

    /// The file and shell tools, as a run with them describes their calls.
    fn file_and_shell_tools() -> dsh_core::ToolCatalog {
        let mut tools = dsh_tools::ToolRegistry::with_file_tools(true);
        tools.add_shell_tools(true);
        tools.catalog()
    }

    fn open_app(prompt_dirs: Option<PromptDirs>) -> App {
        let mut app = App::new(prompt_dirs);
        let opened = Opened {
            info: SessionInfo {
                id: "session-1".into(),
                model: "deepseek-v4-flash".into(),
                cwd: "/work/project".into(),
                sandbox: "workspace-write".into(),
                approval: "ask".into(),
                catalog: file_and_shell_tools(),
                ..SessionInfo::default()
            },
            events: tokio::sync::mpsc::unbounded_channel().1,
            earlier: Vec::new(),
        };
        app.opened(&opened);
        app.take_pending();
        app
    }

    fn type_keys(app: &mut App, text: &str) -> Action {
        let mut last = Action::None;
        for c in text.chars() {
            last = app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        last
    }

    fn press(app: &mut App, code: KeyCode) -> Action {
        app.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn record(app: &mut App, record: Record) {
        app.event(AgentEvent::Record(record));
    }

    fn assistant(text: &str, reasoning: &str) -> Record {
        Record::AssistantMessage(AssistantMessageRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::Assistant,
                content: vec![
                    Block::Reasoning {
                        text: reasoning.into(),
                        signature: None,
                        redacted: false,
                    },
                    Block::Text { text: text.into() },
                ],
            },
            finish: FinishReason::Stop,
            provider: "p".into(),
            model: "m".into(),
            usage: Usage::default(),
        })
    }

    fn call(id: &str, name: &str, args: serde_json::Value) -> Record {
        Record::ToolCall(ToolCallRecord {
            turn: 1,
            step: 1,
            call_id: id.into(),
            name: name.into(),
            arguments: args.to_string(),
        })
    }

    fn result(id: &str, text: &str, is_error: bool) -> Record {
        Record::ToolResult(ToolResultRecord {
            turn: 1,
            step: 1,
            message: Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: id.into(),
                    content: vec![ToolOutputPart::Text { text: text.into() }],
                    is_error,
                }],
            },
            error: None,
            command: None,
        })
    }

    fn screen(app: &App, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| app.draw(frame)).unwrap();
        let buffer = terminal.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_turn_in_the_scrollback() {
        let mut app = opened_app();
        record(&mut app, Record::TurnStart { turn: 1 });
        record(
            &mut app,
            Record::UserMessage {
                turn: 1,
                message: Message::user_text("fix the greeting"),
                instructions: None,
            },
        );
        record(
            &mut app,
            assistant("I will edit it.", "look at the file\nthen edit"),
        );
        record(
            &mut app,
            call(
                "c1",
                "edit",
                serde_json::json!({"file_path": "src/main.rs", "old_string": "println!(\"hi\");\n", "new_string": "println!(\"hello\");\n"}),
            ),
        );
        record(&mut app, result("c1", "edited src/main.rs", false));
        record(
            &mut app,
            call("c2", "bash", serde_json::json!({"command": "cargo test"})),
        );
        record(
            &mut app,
            result(
                "c2",
                "running 3 tests\ntest result: FAILED\n[exit code: 101]",
                false,
            ),
        );
        record(
            &mut app,
            Record::TodoWrite {
                turn: 1,
                todos: vec![
                    TodoItem {
                        content: "edit the greeting".into(),
                        status: TodoStatus::Completed,
                    },
                    TodoItem {
                        content: "make the tests pass".into(),
                        status: TodoStatus::InProgress,
                    },
                ],
            },
        );
        record(
            &mut app,
            call("c3", "read", serde_json::json!({"file_path": "missing.rs"})),
        );
        record(
            &mut app,
            result("c3", "cannot read \"missing.rs\": not found", true),
        );
        record(
            &mut app,
            Record::StepEnd {
                turn: 1,
                step: 1,
                usage: Usage {
                    total_tokens: 1_234,
                    ..Usage::default()
                },
            },
        );
        record(
            &mut app,
            Record::TurnEnd {
                turn: 1,
                reason: TurnEndReason::Aborted {
                    reason: AbortReason::User,
                },
            },
        );
        insta::assert_snapshot!(plain(&app.take_pending()));
        // The footer follows the task in progress.
        assert!(screen(&app, 100, 4).contains("todo 1/2: make the tests pass"));
    }

    #[test]
    fn the_live_area_while_a_turn_runs() {
        let mut app = opened_app();
        app.turn_started("x", Stop::new());
        app.event(AgentEvent::Delta(StreamDelta::Text(
            "## Plan\n\n- read the code\n- fix".into(),
        )));
        record(
            &mut app,
            call("c1", "bash", serde_json::json!({"command": "cargo build"})),
        );
        app.event(AgentEvent::ToolOutput {
            call_id: "c1".into(),
            text:
                "   Compiling a\n   Compiling b\n\n   Compiling c\n   Compiling d\n   Compiling e\n"
                    .into(),
        });
        app.composer.insert("next, also @src");
        app.queued.push_back("a queued message".into());
        let shown = screen(&app, 60, 14).replace(char::is_numeric, "9");
        insta::assert_snapshot!(shown);
    }

    #[test]
    fn a_dialog_takes_the_composers_place_and_esc_cancels_it() {
        let mut app = opened_app();
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(
            dsh_core::ask::ApprovalRequest {
                tool: "bash".into(),
                call_id: "c".into(),
                reason: "escalate sandbox to danger-full-access: install packages".into(),
                grant: Some("sandbox danger-full-access".into()),
            },
            tx,
        )));
        insta::assert_snapshot!(screen(&app, 80, 10));
        app.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert_eq!(
            rx.try_recv().unwrap(),
            dsh_core::ask::ApprovalOutcome::Cancelled
        );
        assert!(
            screen(&app, 80, 10).lines().any(|l| l == "›"),
            "the composer is back"
        );
    }

    #[test]
    fn keys_send_queue_interrupt_and_quit() {
        let mut app = opened_app();
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        let ctrl = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
        for c in "hi\\".chars() {
            app.key(key(KeyCode::Char(c)));
        }
        assert_eq!(
            app.key(key(KeyCode::Enter)),
            Action::None,
            "a trailing \\ continues"
        );
        app.key(key(KeyCode::Char('x')));
        assert_eq!(app.key(key(KeyCode::Enter)), Action::Send("hi\nx".into()));
        let stop = Stop::new();
        app.turn_started("hi", stop.clone());
        app.composer.insert("later");
        assert_eq!(app.key(key(KeyCode::Enter)), Action::None);
        assert_eq!(app.queued.len(), 1, "a message typed during a turn waits");
        assert_eq!(app.key(ctrl('c')), Action::Interrupt);
        assert!(stop.is_requested());
        assert_eq!(app.key(ctrl('c')), Action::Quit, "a second Ctrl-C quits");
        app.turn_ended(Ok(dsh_core::TurnSummary {
            turn: 1,
            reason: TurnEndReason::Completed,
            text: String::new(),
            usage: Usage::default(),
            steps: 0,
        }));
        assert_eq!(app.next_queued().as_deref(), Some("later"));
        assert_eq!(
            app.key(ctrl('d')),
            Action::Quit,
            "Ctrl-D on an empty composer quits"
        );
        app.composer.insert("/status");
        assert_eq!(app.key(key(KeyCode::Enter)), Action::Slash(Slash::Status));
    }

    #[test]
    fn messages_typed_while_busy_wait_and_stale_dialogs_are_dropped() {
        let mut app = opened_app();
        let stop = Stop::new();
        app.begin_busy("compacting", Some(stop.clone()));
        app.composer.insert("after the compaction");
        assert_eq!(
            app.key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
            Action::None
        );
        assert_eq!(app.next_queued(), None, "not while busy");
        app.key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(stop.is_requested(), "Esc stops a compaction");
        app.end_busy();
        assert_eq!(app.next_queued().as_deref(), Some("after the compaction"));

        let (tx, rx) = tokio::sync::oneshot::channel();
        drop(rx);
        app.open_dialog(Dialog::Approval(crate::dialog::ApprovalDialog::new(
            dsh_core::ask::ApprovalRequest {
                tool: "bash".into(),
                call_id: "c".into(),
                reason: "r".into(),
                grant: Some("g".into()),
            },
            tx,
        )));
        assert!(
            !screen(&app, 80, 10).contains("Allow bash?"),
            "nobody waits for it"
        );
    }

    #[test]
    fn the_same_session_reopened_on_another_model_is_not_shown_again() {
        let mut app = opened_app();
        let mut info = app.info.clone().unwrap();
        info.model = "deepseek-v4-pro".into();
        let reopened = Opened {
            info,
            events: tokio::sync::mpsc::unbounded_channel().1,
            earlier: vec![Record::UserMessage {
                turn: 1,
                message: Message::user_text("old"),
                instructions: None,
            }],
        };
        app.opened(&reopened);
        assert_eq!(
            plain(&app.take_pending()),
            "· now on deepseek-v4-pro; the session goes on"
        );
        assert!(screen(&app, 80, 4).contains("deepseek-v4-pro"));
    }

    #[test]
    fn a_prompt_saved_while_the_ui_runs_is_a_command_at_once() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let mut app = open_app(Some(PromptDirs {
            home: home.path().to_path_buf(),
            cwd: cwd.path().to_path_buf(),
        }));
        std::fs::create_dir_all(cwd.path().join(".dsh/prompts")).unwrap();
        std::fs::write(
            cwd.path().join(".dsh/prompts/fresh.md"),
            "Check $ARGUMENTS.",
        )
        .unwrap();
        type_keys(&mut app, "/fr");
        assert!(
            screen(&app, 80, 6).contains("/fresh  saved prompt"),
            "the hint offers it"
        );
        type_keys(&mut app, "esh now");
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::Slash(Slash::Prompt("Check now.".into()))
        );
        // One saved while a command line is already being typed is found when it is entered.
        type_keys(&mut app, "/later");
        std::fs::create_dir_all(home.path().join("prompts")).unwrap();
        std::fs::write(home.path().join("prompts/later.md"), "Later.").unwrap();
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::Slash(Slash::Prompt("Later.".into()))
        );
    }

    #[test]
    fn tab_and_enter_take_the_completion_shown() {
        let mut app = opened_app();
        type_keys(&mut app, "/st");
        assert!(screen(&app, 80, 6).contains("/status  session, model"));
        assert_eq!(press(&mut app, KeyCode::Tab), Action::None);
        assert_eq!(
            app.composer.text(),
            "/status ",
            "Tab accepts the completion"
        );
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::Slash(Slash::Status)
        );
        type_keys(&mut app, "/st");
        assert_eq!(
            press(&mut app, KeyCode::Enter),
            Action::Slash(Slash::Status),
            "Enter runs the one command the hint names"
        );
        // Several matches: Tab goes as far as they agree, Enter runs none of them.
        type_keys(&mut app, "/");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.composer.text(), "/");
        type_keys(&mut app, "m");
        press(&mut app, KeyCode::Tab);
        assert_eq!(app.composer.text(), "/model ");
        app.composer.clear();
        type_keys(&mut app, "/x");
        assert!(matches!(
            press(&mut app, KeyCode::Enter),
            Action::Slash(Slash::Unknown(_))
        ));
    }

    fn footer_of(app: &App) -> String {
        screen(app, 80, 4)
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn notices_clear_when_what_they_announce_is_over() {
        let ended = || {
            Ok(dsh_core::TurnSummary {
                turn: 1,
                reason: TurnEndReason::Aborted {
                    reason: AbortReason::User,
                },
                text: String::new(),
                usage: Usage::default(),
                steps: 0,
            })
        };
        let idle = "deepseek-v4-flash · workspace-write · 0 tokens";
        let mut app = opened_app();
        app.turn_started("x", Stop::new());
        press(&mut app, KeyCode::Esc);
        assert_eq!(footer_of(&app), "interrupting… (Ctrl-C again quits)");
        app.turn_ended(ended());
        assert_eq!(footer_of(&app), idle, "the interrupt is over");

        // After Ctrl-C, the footer says what a second one does, until another key.
        app.turn_started("x", Stop::new());
        app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        app.turn_ended(ended());
        assert_eq!(footer_of(&app), "press Ctrl-C again (or Ctrl-D) to quit");
        type_keys(&mut app, "a");
        assert_eq!(footer_of(&app), idle);

        // "reasoning is now…" goes at the next key.
        app.key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::CONTROL));
        assert!(footer_of(&app).starts_with("reasoning is now"));
        type_keys(&mut app, "b");
        assert_eq!(footer_of(&app), idle);

        // Stopping a compaction, and "wait for the turn", hold until the work is over.
        app.begin_busy("compacting", Some(Stop::new()));
        app.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert!(footer_of(&app).starts_with("stopping…"));
        app.end_busy();
        assert_eq!(footer_of(&app), idle);
        app.turn_started("x", Stop::new());
        app.notice_until_idle("wait for the turn to end");
        type_keys(&mut app, "c");
        assert_eq!(footer_of(&app), "wait for the turn to end");
        app.turn_ended(ended());
        assert_eq!(footer_of(&app), idle);

        // A session that failed to open leaves none open, and the footer says so.
        app.begin_busy("opening the session", None);
        app.open_failed("no session abc in this folder");
        assert_eq!(
            footer_of(&app),
            "no session is open: /new starts one, /resume picks one"
        );
    }
}
