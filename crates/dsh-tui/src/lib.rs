//! dsh's terminal UI: `dsh` on a terminal opens a conversation with the agent.
//!
//! It renders inline, below the shell prompt, and keeps the terminal's own scrollback:
//! finished messages, tool calls and results are written above a small live area, which holds
//! what is streaming, the calls running, the composer and a status line. Approvals and the
//! model's questions open in the composer's place.
//!
//! The agent is the same one the headless mode runs: `host` builds each session with
//! `dsh_core::AgentBuilder` and runs its turns; the UI only reads the events and answers what
//! the agent asks ([`dsh_core::ask`]).

mod app;
mod clipboard;
mod composer;
mod dialog;
mod diff;
mod editor;
mod form;
mod highlight;
mod history;
mod host;
mod markdown;
mod notify;
mod rewind;
mod slash;
mod terminal;
mod transcript;
mod wrap;

use std::io::Write as _;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use dsh_core::ask::{Asking, Grants, Request, Requests};
use dsh_core::{AgentEvent, Environment, Flags, ManualCompaction, Opening, Settings, Stop, User};
use futures_util::StreamExt;
use ratatui::text::Line;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use app::{Action, App};
use dialog::{ApprovalDialog, Dialog, QuestionsDialog};
use dsh_core::checkpoints::RewindRequest;
use host::{Before, Done, Work};
use rewind::RewindView;
use slash::Slash;

/// How the UI starts.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The settings from the command line (a `--session-id` resumes that session).
    pub flags: Flags,
    /// A first message, sent as soon as the session is open.
    pub task: Option<String>,
    /// Start with the list of this folder's sessions (`dsh resume`).
    pub pick_session: bool,
    /// The settings already loaded for `flags` as the UI loads them (`interactive`), so they
    /// are not read twice; `None`: loaded here.
    pub settings: Option<Box<Settings>>,
}

/// What is read off the UI's thread: the `@` index, the workspace's prompts for Ctrl-R.
enum Loaded {
    Files(dsh_core::mentions::FileIndex),
    Prompts(Vec<String>),
}

/// Why the UI could not start; the terminal is left as it was.
#[derive(Debug)]
pub struct StartError(pub String);

/// Runs the UI until the person quits. The settings are checked before the terminal is
/// touched, so a bad flag or config file is reported as in a headless run.
pub fn run(options: Options) -> Result<(), StartError> {
    let cwd = std::env::current_dir()
        .map_err(|e| StartError(format!("cannot read the current directory: {e}")))?;
    let mut options = options;
    options.flags.interactive = true;
    let settings = match options.settings.take() {
        Some(settings) => *settings,
        None => Settings::load(cwd.clone(), &Environment::from_process(), &options.flags)
            .map_err(|e| StartError(e.message))?,
    };
    let home = settings.home().value.clone();
    let runtime = dsh_core::runtime().map_err(StartError)?;
    let outcome = runtime.block_on(main_loop(options, settings, home, cwd));
    runtime.shutdown_background();
    let session = outcome?;
    if let Some(id) = session {
        let _ = writeln!(
            std::io::stdout(),
            "dsh: session {id} is saved\n  resume: dsh --session-id {id}"
        );
    }
    Ok(())
}

/// The UI and the host, side by side; returns the id of the session open at the end.
async fn main_loop(
    options: Options,
    settings: Settings,
    home: std::path::PathBuf,
    cwd: std::path::PathBuf,
) -> Result<Option<String>, StartError> {
    let (user, requests) = User::asking(Asking {
        forms: true,
        watches_output: true,
        editor: None,
    });
    let grants = requests.grants();
    let (work_tx, work_rx) = mpsc::unbounded_channel();
    let (done_tx, done_rx) = mpsc::unbounded_channel();
    let (notice_tx, notice_rx) = mpsc::unbounded_channel();
    let host = host::serve(work_rx, done_tx, user, notice_tx);
    let ui = async move {
        let ui = Ui {
            work: work_tx,
            grants,
            home,
            cwd,
            base_flags: options.flags.clone(),
        };
        // `work` goes when this returns, and with it the host's open session.
        ui.run(options, settings, requests, done_rx, notice_rx)
            .await
    };
    let (outcome, ()) = tokio::join!(ui, host);
    outcome
}

struct Ui {
    work: mpsc::UnboundedSender<Work>,
    /// What was allowed for the session (`/status`), forgotten for another session.
    grants: Grants,
    home: std::path::PathBuf,
    cwd: std::path::PathBuf,
    /// The command line's flags: `/new` starts from them.
    base_flags: Flags,
}

impl Ui {
    async fn run(
        self,
        options: Options,
        settings: Settings,
        mut requests: Requests,
        mut done: mpsc::UnboundedReceiver<Done>,
        mut notices: mpsc::UnboundedReceiver<String>,
    ) -> Result<Option<String>, StartError> {
        let mut term = terminal::Screen::enter().map_err(|e| StartError(e.to_string()))?;
        let mut app = App::new(Some(slash::PromptDirs {
            home: self.home.clone(),
            cwd: self.cwd.clone(),
        }));
        let mut input = EventStream::new();
        let mut agent_events: Option<mpsc::UnboundedReceiver<AgentEvent>> = None;
        let (index_tx, mut index_rx) = mpsc::unbounded_channel::<Loaded>();
        let mut first_task = options.task.clone();
        let mut quitting = false;
        let mut ticker = tokio::time::interval(Duration::from_millis(100));
        // After an idle spell, one frame, not a burst of the ticks missed.
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let (Ok(mut terminate), Ok(mut hangup), Ok(mut interrupt)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            return Err(StartError("cannot watch for signals".into()));
        };

        if options.pick_session {
            self.pick_session(&mut app);
        }
        if app.picker.is_none() {
            // The settings checked before the terminal was touched serve the first session.
            self.open(&mut app, options.flags.clone(), Some(settings));
        }
        // What was in front of the composer at the last frame, and the input read as a new
        // dialog (or list) was about to be drawn: typed before it was on screen, so none of it
        // answers it.
        let mut drawn_front = None;
        let mut typed_before = std::collections::VecDeque::new();
        loop {
            let front = app.front_view();
            if front.is_some() && front != drawn_front {
                // Read before the frame that shows the dialog, never after: a key pressed by
                // someone who has seen it answers it, however soon it comes.
                read_ready(&mut input, &mut typed_before).await;
            }
            if let Err(e) = term.show(&mut app) {
                app.stop_turn();
                return Err(StartError(format!("cannot draw on the terminal: {e}")));
            }
            drawn_front = front;
            if quitting && !app.is_running() && app.busy.is_none() {
                break;
            }
            if let Some(event) = typed_before.pop_front() {
                let action = on_input(&mut app, &mut term, Some(event), true)?;
                self.act(&mut app, action, &mut quitting, &index_tx).await;
                continue;
            }
            let action = tokio::select! {
                event = input.next() => on_input(&mut app, &mut term, event, false)?,
                Some(event) = next_event(&mut agent_events) => {
                    app.event(event);
                    Action::None
                }
                Some(request) = requests.recv() => {
                    app.open_dialog(match request {
                        Request::Approval(asked) => Dialog::Approval(ApprovalDialog::new(asked)),
                        Request::Form(asked) => Dialog::Form(form::FormDialog::new(asked)),
                        Request::Questions(asked) => {
                            Dialog::Questions(QuestionsDialog::new(asked))
                        }
                    });
                    notify::waiting(&app);
                    Action::None
                }
                Some(answer) = done.recv() => {
                    // What the turn reported is all sent before its end: show it first.
                    if let Some(events) = &mut agent_events {
                        while let Ok(event) = events.try_recv() {
                            app.event(event);
                        }
                    }
                    self.done(&mut app, answer, &mut agent_events, &mut first_task, quitting)
                }
                Some(line) = notices.recv() => {
                    app.note(line);
                    Action::None
                }
                Some(loaded) = index_rx.recv() => {
                    match loaded {
                        Loaded::Files(index) => app.files_indexed(index),
                        Loaded::Prompts(prompts) => app.history_loaded(prompts),
                    }
                    Action::None
                }
                _ = ticker.tick(), if app.animating() => {
                    app.tick += 1;
                    Action::None
                }
                _ = terminate.recv() => Action::Quit,
                _ = hangup.recv() => Action::Quit,
                // `kill -INT`: as Ctrl-C on a running turn, else quit.
                _ = interrupt.recv() => if app.is_running() {
                    app.stop_turn();
                    Action::None
                } else {
                    Action::Quit
                },
            };
            if action == Action::Edit {
                input = editor::run(&mut app, &mut term, input).await;
                continue;
            }
            self.act(&mut app, action, &mut quitting, &index_tx).await;
        }
        let session = app.info.as_ref().map(|i| i.id.clone());
        term.show(&mut app).map_err(|e| StartError(e.to_string()))?;
        drop(term);
        Ok(session)
    }

    /// What the host's answer does: a session opened (or not), a turn, a compaction or a
    /// rewind step ended; and the message to send next, unless the UI is quitting.
    fn done(
        &self,
        app: &mut App,
        answer: Done,
        agent_events: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>,
        first_task: &mut Option<String>,
        quitting: bool,
    ) -> Action {
        match answer {
            Done::Opened(Ok(opened)) => {
                let opened = *opened;
                // Another session forgets what was allowed for the last; the same
                // one on another model (`/model`) keeps it.
                if app.info.as_ref().is_none_or(|i| i.id != opened.info.id) {
                    self.grants.forget();
                }
                app.opened(&opened);
                *agent_events = Some(opened.events);
                match first_task.take().or_else(|| app.next_queued()) {
                    Some(task) if !quitting => Action::Send(task),
                    _ => Action::None,
                }
            }
            Done::Opened(Err(failed)) => {
                match failed.before {
                    Before::Gone => {
                        app.open_failed(&failed.message);
                        *agent_events = None;
                    }
                    Before::Kept => app.open_refused(&failed.message, None),
                    Before::Reopened(opened) => {
                        let opened = *opened;
                        app.open_refused(&failed.message, Some(opened.info));
                        *agent_events = Some(opened.events);
                    }
                }
                Action::None
            }
            Done::Turn(result) => {
                notify::turn_ended(app, app.turn_took());
                app.turn_ended(result);
                match app.next_queued() {
                    Some(task) if !quitting => Action::Send(task),
                    _ => Action::None,
                }
            }
            Done::Turns(result) => {
                app.end_busy();
                match result {
                    Ok(turns) if turns.is_empty() => {
                        app.note("no turn to rewind to yet");
                    }
                    Ok(turns) => app.open_rewind(RewindView::pick(turns)),
                    Err(message) => app.error(message),
                }
                Action::None
            }
            Done::Exported(result) => {
                app.end_busy();
                match result {
                    Ok(path) => app.note(format!("the session is exported to {}", path.display())),
                    Err(message) => app.error(message),
                }
                Action::None
            }
            Done::Rewound(result) => {
                app.end_busy();
                match *result {
                    Ok((request, report)) => app.rewound(request, report),
                    Err(message) => app.error(message),
                }
                Action::None
            }
            Done::Compacted(result) => {
                app.end_busy();
                match result {
                    Ok((outcome, _)) => compacted_note(app, &outcome),
                    Err(message) => app.error(message),
                }
                match app.next_queued() {
                    Some(task) if !quitting => Action::Send(task),
                    _ => Action::None,
                }
            }
        }
    }

    /// Does what a key, an event or an answer asked for.
    async fn act(
        &self,
        app: &mut App,
        action: Action,
        quitting: &mut bool,
        index_tx: &mpsc::UnboundedSender<Loaded>,
    ) {
        match action {
            // The editor is run by the loop, which has the terminal.
            Action::None | Action::Interrupt | Action::Edit => {}
            Action::Quit => {
                *quitting = true;
                app.queued.clear();
                app.stop_turn();
            }
            Action::Send(task) => self.send(app, task),
            Action::Rewind(request) => {
                app.begin_busy("rewinding", None);
                let _ = self.work.send(Work::Rewind(request));
            }
            Action::IndexFiles => {
                let tx = index_tx.clone();
                let root = self.cwd.clone();
                tokio::task::spawn_blocking(move || {
                    let _ = tx.send(Loaded::Files(dsh_core::mentions::FileIndex::build(&root)));
                });
            }
            Action::LoadHistory => {
                let (tx, home, cwd) = (index_tx.clone(), self.home.clone(), self.cwd.clone());
                tokio::task::spawn_blocking(move || {
                    let prompts = history::workspace_prompts(&home, &cwd);
                    let _ = tx.send(Loaded::Prompts(prompts));
                });
            }
            Action::Slash(command) => {
                if self.slash(app, command).await {
                    *quitting = true;
                    app.stop_turn();
                }
            }
        }
    }

    /// Opens a session (the one open goes on until another is open).
    /// The `/resume` list of this folder's sessions, filtered by a search as it is typed.
    fn pick_session(&self, app: &mut App) {
        app.open_picker(dsh_core::list_sessions(&self.home, &self.cwd), &self.home);
    }

    fn open(&self, app: &mut App, flags: Flags, settings: Option<Settings>) {
        app.begin_busy("opening the session", None);
        let _ = (self.work).send(Work::Open(Box::new(flags), settings.map(Box::new)));
    }

    fn send(&self, app: &mut App, task: String) {
        if app.info.is_none() {
            app.error("no session is open: /new starts one, /resume picks one");
            return;
        }
        if !app.is_idle() {
            app.queued.push_back(task);
            return;
        }
        let stop = Stop::new();
        // `!cmd`: the user's own command, run by the session's bash tool (no model request).
        if let Some(command) = task.strip_prefix('!') {
            let command = command.trim().to_owned();
            if command.is_empty() {
                app.error("type a command after ! (for example !git status)");
                return;
            }
            app.shell_started(&command, stop.clone());
            let _ = self.work.send(Work::Shell { command, stop });
            return;
        }
        app.turn_started(&task, stop.clone());
        let _ = self.work.send(Work::Turn { task, stop });
    }

    /// `/export [FILE]`: the session written as markdown, or HTML for a `.html` file name
    /// (default `dsh-SESSION.md` in the workspace), by the host, which has the run's tools and
    /// secrets.
    fn export(&self, app: &mut App, file: Option<String>) {
        use dsh_core::export::ExportFormat;
        let Some(info) = &app.info else {
            app.error("no session is open yet");
            return;
        };
        let name = file.unwrap_or_else(|| format!("dsh-{}.md", info.id));
        let html = [".html", ".htm"].iter().any(|e| name.ends_with(e));
        let format = if html {
            ExportFormat::Html
        } else {
            ExportFormat::Markdown
        };
        let path = self.cwd.join(name);
        app.begin_busy("exporting the session", None);
        let _ = self.work.send(Work::Export { format, path });
    }

    /// Does a slash command; true when it asks to quit.
    async fn slash(&self, app: &mut App, command: Slash) -> bool {
        let needs_idle = matches!(
            command,
            Slash::Model(Some(_))
                | Slash::Permissions(Some(_))
                | Slash::Compact(_)
                | Slash::Export(_)
                | Slash::New
                | Slash::Resume(_)
        );
        if needs_idle && (app.is_running() || app.busy.is_some()) {
            app.notice_until_idle("wait for the turn to end (or interrupt it with Esc) first");
            return false;
        }
        match command {
            Slash::Quit => return true,
            // Handed to the loop as Ctrl-G's action, which has the terminal (keys.rs).
            Slash::Edit => {}
            Slash::Help => {
                let cell = app::cells::help_cell(app.reload_prompts());
                app.push_cell(cell);
            }
            Slash::Status => {
                let cell = app::cells::status_cell(app, &self.grants.granted());
                app.push_cell(cell);
            }
            Slash::Rename(title) => match app.info.as_ref().map(|i| i.id.clone()) {
                None => app.error("no session is open yet"),
                Some(id) => match dsh_core::rename_session(&self.home, &self.cwd, &id, &title) {
                    Ok(()) if title.is_empty() => app.note("the session's title is taken away"),
                    Ok(()) => app.note(format!("the session is titled \"{}\"", title.trim())),
                    Err(e) => app.error(e.to_string()),
                },
            },
            Slash::Model(None) => {
                let model = app
                    .info
                    .as_ref()
                    .map_or("none", |i| i.model.as_str())
                    .to_owned();
                app.note(format!(
                    "model: {model} (/model NAME switches; the session goes on)"
                ));
            }
            Slash::Model(Some(name)) => {
                let mut flags = app
                    .info
                    .as_ref()
                    .map_or_else(|| self.base_flags.clone(), |i| i.flags.clone());
                flags.model = Some(name);
                self.open(app, flags, None);
            }
            Slash::Permissions(None) => {
                let sandbox = app.info.as_ref().map_or("none", |i| i.sandbox.as_str());
                app.note(format!(
                    "permission mode: {sandbox} (/permissions MODE switches between turns: \
                     read-only, workspace-write, danger-full-access, plan or auto; the session \
                     keeps it)"
                ));
            }
            Slash::Permissions(Some(name)) => {
                match name.parse::<dsh_core::config::PermissionMode>() {
                    Ok(mode) => {
                        let mut flags = app
                            .info
                            .as_ref()
                            .map_or_else(|| self.base_flags.clone(), |i| i.flags.clone());
                        flags.permission_mode = Some(mode);
                        self.open(app, flags, None);
                    }
                    Err(why) => app.note(why),
                }
            }
            Slash::Compact(focus) => {
                if app.info.is_some() {
                    let stop = Stop::new();
                    app.begin_busy("compacting the history (Esc stops)", Some(stop.clone()));
                    let _ = self.work.send(Work::Compact { focus, stop });
                }
            }
            Slash::New => self.open(app, Opening::New.flags(&self.base_flags), None),
            Slash::Resume(None) => self.pick_session(app),
            Slash::Resume(Some(id)) => {
                self.open(app, Opening::Resume(id).flags(&self.base_flags), None);
            }
            Slash::Rewind(_) if app.is_running() => {
                app.note("/rewind waits for the turn to end (Esc stops it)");
            }
            Slash::Rewind(None) => {
                app.begin_busy("reading the session's turns", None);
                let _ = self.work.send(Work::Turns);
            }
            Slash::Rewind(Some(turn)) => match turn.parse::<u32>() {
                Ok(turn) if turn > 0 => {
                    app.begin_busy("comparing the files with the checkpoint", None);
                    let _ = self.work.send(Work::Rewind(RewindRequest {
                        to_turn: Some(turn),
                        before_call: None,
                        files: true,
                        conversation: true,
                        force: false,
                        accepted_outside: Vec::new(),
                        apply: false,
                    }));
                }
                _ => app.error(format!(
                    "/rewind takes a turn number (1, 2, ...), got \"{turn}\"; /rewind alone \
                     lists the turns"
                )),
            },
            Slash::Diff => app.push_cell(git_diff(&self.cwd).await),
            Slash::Copy => copy_answer(app),
            Slash::Export(file) => self.export(app, file),
            Slash::Blame(given) => app.push_cell(blame(&self.home, &self.cwd, given).await),
            Slash::Skills => {
                let skills = app
                    .info
                    .as_ref()
                    .map(|i| i.skills.clone())
                    .unwrap_or_default();
                let items = if skills.is_empty() {
                    vec![Line::from("  none found (see docs/config.md, skills)")]
                } else {
                    skills
                        .into_iter()
                        .map(|(n, d)| Line::from(format!("  {n}  {d}")))
                        .collect()
                };
                app.push_cell(app::cells::list_cell("Skills", items));
            }
            Slash::Prompts => {
                let prompts = app.reload_prompts().to_vec();
                let items = if prompts.is_empty() {
                    vec![Line::from(format!(
                        "  none: put NAME.md in {} or .dsh/prompts/",
                        self.home.join("prompts").display()
                    ))]
                } else {
                    prompts
                        .iter()
                        .map(|p| Line::from(format!("  /{}  {}", p.name, p.path.display())))
                        .collect()
                };
                app.push_cell(app::cells::list_cell("Saved prompts", items));
            }
            Slash::Prompt(text) => self.send(app, text),
            Slash::Unknown(message) => app.error(message),
        }
        false
    }
}

/// Moves the input that is ready now, and no more, to `into` (polled here, so that the
/// stream wakes this task when more comes).
async fn read_ready(
    input: &mut EventStream,
    into: &mut std::collections::VecDeque<std::io::Result<Event>>,
) {
    loop {
        tokio::select! {
            biased;
            Some(event) = input.next() => into.push_back(event),
            () = std::future::ready(()) => break,
        }
    }
}

/// What a piece of input does: a key or a paste (`typed_before`: typed before the dialog in
/// front was drawn, so it goes where it would have gone without it), a resize, or the terminal
/// gone.
fn on_input(
    app: &mut App,
    term: &mut terminal::Screen,
    event: Option<std::io::Result<Event>>,
    typed_before: bool,
) -> Result<Action, StartError> {
    Ok(match event {
        Some(Ok(event @ (Event::Key(_) | Event::Paste(_)))) if typed_before => {
            app.typed_before(event)
        }
        Some(Ok(Event::Key(key))) => app.key(key),
        Some(Ok(Event::Paste(text))) => {
            app.paste(&text);
            Action::None
        }
        Some(Ok(Event::Resize(..))) => {
            if let Err(e) = term.resized() {
                app.stop_turn();
                return Err(StartError(format!("cannot redraw after a resize: {e}")));
            }
            Action::None
        }
        Some(Ok(Event::FocusGained)) => {
            app.focused = true;
            Action::None
        }
        Some(Ok(Event::FocusLost)) => {
            app.focused = false;
            Action::None
        }
        Some(Ok(_)) => Action::None,
        // The terminal is gone: nobody is left to answer.
        None | Some(Err(_)) => Action::Quit,
    })
}

/// What `/compact` did, when the transcript does not show it (a summary shows as its record).
fn compacted_note(app: &mut App, outcome: &ManualCompaction) {
    let pruned = |yes: bool| {
        if yes {
            "long tool results were cut; "
        } else {
            ""
        }
    };
    match outcome {
        ManualCompaction::Summarised => {}
        ManualCompaction::TooShort {
            tokens,
            pruned: cut,
        } => app.note(format!(
            "{}nothing to compact yet (about {} tokens of history); no request sent",
            pruned(*cut),
            transcript::tokens(*tokens)
        )),
        ManualCompaction::NotSummarised { pruned: cut } => app.note(format!(
            "{}the summary was stopped, failed, or was no shorter: the rest of the history \
             is unchanged",
            pruned(*cut)
        )),
    }
}

/// The next event of the open session, or never when none is open.
async fn next_event(
    events: &mut Option<mpsc::UnboundedReceiver<AgentEvent>>,
) -> Option<AgentEvent> {
    match events {
        Some(events) => events.recv().await,
        None => std::future::pending().await,
    }
}

/// `/copy`: the last answer on the clipboard (OSC 52).
fn copy_answer(app: &mut App) {
    let answer = app.last_answer.clone();
    if answer.trim().is_empty() {
        app.note("no answer to copy yet");
        return;
    }
    match clipboard::copy(&answer) {
        Ok(sent) if sent < answer.len() => app.note(format!(
            "copied the first {sent} bytes of the last answer (of {}; terminals take no more)",
            answer.len()
        )),
        Ok(_) => app.note(format!(
            "copied the last answer ({} characters) to the clipboard",
            answer.chars().count()
        )),
        Err(e) => app.error(format!("cannot write to the terminal: {e}")),
    }
}

/// `/diff`: the workspace's uncommitted changes, coloured.
/// `/blame FILE[:LINE]`'s cell, read off the UI's thread (it reads checkpoints).
async fn blame(
    home: &std::path::Path,
    cwd: &std::path::Path,
    given: Option<String>,
) -> Vec<Line<'static>> {
    let (home, cwd) = (home.to_path_buf(), cwd.to_path_buf());
    let found =
        tokio::task::spawn_blocking(move || app::cells::blame(&home, &cwd, given.as_deref()));
    found.await.unwrap_or_default()
}

async fn git_diff(cwd: &std::path::Path) -> Vec<Line<'static>> {
    use ratatui::style::{Color, Style};
    let text = match dsh_core::workspace_diff(cwd).await {
        Ok(text) => text,
        Err(message) => {
            return vec![Line::styled(
                format!("✗ {message}"),
                Style::new().fg(Color::Red),
            )];
        }
    };
    if text.trim().is_empty() {
        return vec![Line::styled(
            "· no uncommitted changes",
            Style::new().fg(Color::DarkGray),
        )];
    }
    const MAX: usize = 2_000;
    let all: Vec<&str> = text.lines().collect();
    let mut lines: Vec<Line<'static>> = all
        .iter()
        .take(MAX)
        .map(|l| {
            let colour = if l.starts_with("+++") || l.starts_with("---") || l.starts_with("diff ") {
                Color::White
            } else if l.starts_with('+') {
                Color::Green
            } else if l.starts_with('-') {
                Color::Red
            } else if l.starts_with("@@") {
                Color::Cyan
            } else {
                Color::DarkGray
            };
            Line::styled((*l).to_owned(), Style::new().fg(colour))
        })
        .collect();
    if all.len() > MAX {
        lines.push(Line::from(format!(
            "… {} more lines (git diff shows them all)",
            all.len() - MAX
        )));
    }
    lines.insert(0, Line::default());
    lines
}
