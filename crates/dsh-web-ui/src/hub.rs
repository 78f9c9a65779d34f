//! The sessions the server has open, each a run built by `AgentBuilder` as every front end
//! builds one, driven by a task of its own. What a session reports (its log's records, the
//! answer as it streams, notices, questions for the user) is kept in order as JSON lines: a
//! page that connects (a reload, a second tab) is sent them all, then what follows.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dsh_core::ask::{Asking, Reply};
use dsh_core::checkpoints::RewindRequest;
use dsh_core::config::PermissionMode;
use dsh_core::mentions::FileIndex;
use dsh_core::{AgentBuilder, Environment, Flags, Opening, Settings, Stop, User};
use dsh_core::{AttachmentStore, ImageError};
use dsh_protocol::ImageRef;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

mod requests;
mod view;

/// Why a request that waits for the end of a turn was refused.
const WAIT_FOR_THE_TURN: &str = "a turn is running; wait for it to end or stop it";

/// How long a listing of the workspace's files serves mentions before it is made again.
const FILES_FRESH: std::time::Duration = std::time::Duration::from_secs(10);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every session the server has open, by id.
pub(crate) struct Hub {
    flags: Flags,
    /// dsh's home, where the sessions are.
    home: PathBuf,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    /// One opening at a time: two tabs resuming one session get the same run.
    opening: tokio::sync::Mutex<()>,
}

/// One open session.
pub(crate) struct Live {
    /// Known once the run is open (the asker is made before it).
    id: std::sync::OnceLock<String>,
    pub cwd: PathBuf,
    commands: mpsc::UnboundedSender<Command>,
    stream: Mutex<Stream>,
    busy: AtomicBool,
    stop: Mutex<Option<Stop>>,
    asks: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    next_ask: AtomicU64,
    /// The run's tools, for how their calls are shown (titles, diffs).
    catalog: Mutex<Option<dsh_core::ToolCatalog>>,
    /// Each call as shown, by id: an approval shows the call it is about.
    calls: Mutex<HashMap<String, Value>>,
    /// The workspace's files for `@` mentions, and when they were listed.
    files: Mutex<Option<(std::time::Instant, Arc<FileIndex>)>>,
    /// Whether the session's model takes images (its route's `image_input`).
    image_input: AtomicBool,
    /// The images this session may show and send, by attachment id: attached in this page,
    /// or in its messages. Only these are served, so the page reads nothing else of the store.
    images: Mutex<HashMap<String, ImageRef>>,
}

/// What the session has reported, and where new reports go. Each report is numbered, so a
/// page that reconnects (`Last-Event-ID`) is sent only what it missed. The backlog keeps what
/// a page needs to draw the session: a streamed answer's pieces only until the answer's
/// record comes, and a command's live output not at all (its result has it).
struct Stream {
    backlog: Vec<Report>,
    next: u64,
    live: broadcast::Sender<Report>,
    /// The numbers of the notices in the backlog, oldest first: only the last
    /// [`NOTICES_KEPT`] are kept for pages that connect later (what servers and retries say
    /// can go on for as long as the session runs).
    notices: std::collections::VecDeque<u64>,
}

/// How many notices the backlog keeps.
const NOTICES_KEPT: usize = 200;

impl Stream {
    fn new() -> Stream {
        Stream {
            backlog: Vec::new(),
            next: 1,
            live: broadcast::channel(4096).0,
            notices: std::collections::VecDeque::new(),
        }
    }

    /// Numbers `event` and keeps what a page that connects later needs of it; the report.
    fn keep(&mut self, event: &Value) -> Report {
        let kind = event["kind"].as_str().unwrap_or_default();
        let line: Arc<str> = Arc::from(event.to_string());
        let number = self.next;
        self.next += 1;
        if event["view"]["view"] == "answer" {
            // The answer is whole now: its streamed pieces are no longer needed to draw it.
            while (self.backlog.last()).is_some_and(|(_, l)| l.starts_with(r#"{"kind":"delta""#)) {
                self.backlog.pop();
            }
        }
        if kind != "output" {
            self.backlog.push((number, line.clone()));
        }
        if kind == "notice" {
            self.notices.push_back(number);
            if self.notices.len() > NOTICES_KEPT
                && let Some(oldest) = self.notices.pop_front()
                && let Ok(at) = self.backlog.binary_search_by_key(&oldest, |(n, _)| *n)
            {
                self.backlog.remove(at);
            }
        }
        (number, line)
    }
}

/// One numbered report, as JSON.
pub(crate) type Report = (u64, Arc<str>);

enum Command {
    /// A task, with the images attached to it.
    Prompt(String, Vec<ImageRef>),
    /// Reopen the session with another permission mode or model (between turns).
    Reconfigure {
        mode: Option<PermissionMode>,
        model: Option<String>,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// The session's turns with what each changed in the files.
    Turns(oneshot::Sender<Value>),
    /// Summarise the older part of the conversation now.
    Compact,
    /// Show or do a rewind.
    Rewind(RewindRequest, oneshot::Sender<Result<Value, String>>),
    /// Close the run (its log whole, its processes stopped), then say so.
    Close(oneshot::Sender<()>),
}

/// Why a request about a session could not be done.
pub(crate) enum HubError {
    NotFound(String),
    Busy(String),
    Failed(String),
}

impl Hub {
    pub(crate) fn new(flags: Flags, home: PathBuf) -> Hub {
        Hub {
            flags,
            home,
            sessions: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// Stops every session's turn and closes its run, waiting for each.
    pub(crate) async fn close_all(&self) {
        let open: Vec<Arc<Live>> = lock(&self.sessions).drain().map(|(_, live)| live).collect();
        let mut closing = Vec::new();
        for live in open {
            live.stop();
            let (done, closed) = oneshot::channel();
            if live.commands.send(Command::Close(done)).is_ok() {
                closing.push(closed);
            }
        }
        for closed in closing {
            let _ = closed.await;
        }
    }

    /// Deletes a session on disk; refused while it is open here or anywhere else.
    pub(crate) fn delete(&self, cwd: &std::path::Path, id: &str) -> Result<(), HubError> {
        if lock(&self.sessions).contains_key(id) {
            return Err(HubError::Busy(format!(
                "session {id} is open in this dsh web, which keeps it open until it stops; stop \
                 dsh web to delete it"
            )));
        }
        dsh_core::delete_session(&self.home, cwd, id).map_err(|e| HubError::Failed(e.to_string()))
    }

    /// The settings a new session in `cwd` would start from.
    pub(crate) fn settings(&self, cwd: &std::path::Path) -> Result<Settings, String> {
        Settings::load(cwd.to_path_buf(), &Environment::from_process(), &self.flags)
            .map_err(|e| e.message)
    }

    pub(crate) fn get(&self, id: &str) -> Result<Arc<Live>, HubError> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| HubError::NotFound(format!("session {id} is not open here")))
    }

    /// Opens a session in `cwd`: a new one, or `resume` (already open: that one). Its task
    /// runs on the current `LocalSet`.
    pub(crate) async fn open(
        self: &Arc<Self>,
        cwd: PathBuf,
        resume: Option<String>,
        fork: bool,
    ) -> Result<Arc<Live>, HubError> {
        let _one_at_a_time = self.opening.lock().await;
        if let Some(id) = resume.as_ref().filter(|_| !fork)
            && let Ok(live) = self.get(id)
        {
            return Ok(live);
        }
        let opening = match resume {
            Some(id) if fork => Opening::Fork(id),
            Some(id) => Opening::Resume(id),
            None => Opening::New,
        };
        let mut flags = opening.flags(&self.flags);
        flags.interactive = true;
        let (commands, received) = mpsc::unbounded_channel();
        let live = Arc::new(Live {
            id: std::sync::OnceLock::new(),
            cwd,
            commands,
            stream: Mutex::new(Stream::new()),
            calls: Mutex::new(HashMap::new()),
            files: Mutex::new(None),
            image_input: AtomicBool::new(false),
            images: Mutex::new(HashMap::new()),
            busy: AtomicBool::new(false),
            stop: Mutex::new(None),
            asks: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            catalog: Mutex::new(None),
        });
        let (user, asked) = User::asking(Asking {
            forms: true,
            watches_output: true,
            editor: None,
        });
        tokio::task::spawn_local(Live::answer_requests(Arc::downgrade(&live), asked));
        let (notices, mut noticed) = mpsc::unbounded_channel();
        let (run, settings) = open_run(&live.cwd, &flags, &user, notices.clone())
            .await
            .map_err(HubError::Failed)?;
        let id = run.agent.session().id().to_owned();
        let _ = live.id.set(id.clone());
        live.adopt(&run, &settings);
        // A long session shows its last turns: its whole log would be more than a page draws.
        let (shown, not_shown) = run.agent.session().shown_records();
        if not_shown > 0 {
            live.push(json!({"kind": "notice", "text": format!(
                "{not_shown} earlier turns are not shown here (dsh sessions show {id} prints them all)"
            )}));
        }
        for record in shown {
            live.push(live.view_json(&record));
        }
        live.push(json!({"kind": "ready", "id": id, "cwd": live.cwd}));
        live.push(settings);
        lock(&self.sessions).insert(id.clone(), live.clone());
        let flags = Opening::Resume(id).flags(&flags);
        let driven = live.clone();
        let reopening = Reopening {
            flags,
            user,
            notices,
            hub: Arc::downgrade(self),
        };
        tokio::task::spawn_local(async move { driven.drive(run, received, reopening).await });
        let told = Arc::downgrade(&live);
        tokio::task::spawn_local(async move {
            while let Some(line) = noticed.recv().await {
                let Some(live) = told.upgrade() else { break };
                live.push(json!({"kind": "notice", "text": line}));
            }
        });
        Ok(live)
    }
}

impl Live {
    pub(crate) fn id(&self) -> &str {
        self.id.get().map_or("", String::as_str)
    }

    /// Adds a report: kept for pages that connect later, sent to those connected.
    fn push(&self, event: Value) {
        let mut stream = lock(&self.stream);
        let report = stream.keep(&event);
        let _ = stream.live.send(report);
    }

    /// What was reported after report `after` (0: everything), and the reports to come, with
    /// nothing lost between them.
    pub(crate) fn follow(&self, after: u64) -> (Vec<Report>, broadcast::Receiver<Report>) {
        let stream = lock(&self.stream);
        let missed = (stream.backlog.iter())
            .filter(|(number, _)| *number > after)
            .cloned()
            .collect();
        (missed, stream.live.subscribe())
    }

    pub(crate) fn prompt(&self, text: String, images: &[String]) -> Result<(), HubError> {
        let images = self.attached(images)?;
        if self.busy.swap(true, Ordering::SeqCst) {
            return Err(HubError::Busy(
                "a turn is running; stop it or wait for it to end".into(),
            ));
        }
        self.commands
            .send(Command::Prompt(text, images))
            .map_err(|_| {
                self.busy.store(false, Ordering::SeqCst);
                HubError::Failed("the session has closed".into())
            })
    }

    /// Takes what pages are shown of a run just opened: its tools (for titles and diffs), and
    /// whether its model takes images.
    fn adopt(&self, run: &dsh_core::Run, settings: &Value) {
        *lock(&self.catalog) = Some(run.catalog.clone());
        (self.image_input).store(settings["imageInput"] == true, Ordering::SeqCst);
    }

    /// Whether the session's model takes images; what to do when not.
    fn takes_images(&self) -> Result<(), HubError> {
        if self.image_input.load(Ordering::SeqCst) {
            return Ok(());
        }
        Err(HubError::Failed(
            "this session's model does not take images: switch to one that does, or set \
             image_input = true for it in its [models.NAME] table if it does (docs/config.md)"
                .into(),
        ))
    }

    /// The images `ids` names, each attached here before; refused for a model that takes none.
    fn attached(&self, ids: &[String]) -> Result<Vec<ImageRef>, HubError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.takes_images()?;
        let known = lock(&self.images);
        ids.iter()
            .map(|id| {
                known.get(id).cloned().ok_or_else(|| {
                    HubError::NotFound(format!(
                        "no image {id} was attached to this session; attach it again"
                    ))
                })
            })
            .collect()
    }

    /// Stores an image the user attached (normalised as every image a model is shown), off
    /// the sessions' thread; what the page shows of it.
    pub(crate) async fn attach(
        &self,
        store: AttachmentStore,
        data: bytes::Bytes,
    ) -> Result<Value, HubError> {
        self.takes_images()?;
        // One decode at a time, whatever the number of uploads: each may take a few hundred
        // megabytes while it is decoded.
        let _one_at_a_time = DECODING.acquire().await;
        let stored = tokio::task::spawn_blocking(move || store.save_image(&data))
            .await
            .map_err(|_| HubError::Failed("storing the image failed".into()))?
            .map_err(|error| HubError::Failed(image_refusal(error)))?;
        let image = stored.image;
        let shown = image_json(&image);
        lock(&self.images).insert(image.attachment_id.clone(), image);
        Ok(shown)
    }

    /// The stored copy of an image this session knows, with its media type.
    pub(crate) fn image(&self, id: &str) -> Option<ImageRef> {
        lock(&self.images).get(id).cloned()
    }

    /// Reopens the session with `mode` and `model` (each kept when `None`), between turns.
    pub(crate) async fn reconfigure(
        &self,
        mode: Option<PermissionMode>,
        model: Option<String>,
    ) -> Result<(), HubError> {
        let busy = "a turn is running; change the settings once it has ended";
        self.answered_between_turns(busy, |done| Command::Reconfigure { mode, model, done })
            .await?
            .map_err(HubError::Failed)
    }

    /// The session's turns, with what each changed ([`dsh_core::Run::turns`]).
    pub(crate) async fn turns(&self) -> Result<Value, HubError> {
        self.answered_between_turns(WAIT_FOR_THE_TURN, Command::Turns)
            .await
    }

    /// Shows what a rewind would do, or does it (`request.apply`).
    pub(crate) async fn rewind(&self, request: RewindRequest) -> Result<Value, HubError> {
        self.answered_between_turns(WAIT_FOR_THE_TURN, |done| Command::Rewind(request, done))
            .await?
            .map_err(HubError::Failed)
    }

    /// Closes the session's run here (its log whole, its lock let go, its processes stopped),
    /// waiting for it; a turn running is stopped first.
    pub(crate) async fn close(&self) {
        self.stop();
        let (done, closed) = oneshot::channel();
        if self.commands.send(Command::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }

    /// Compacts the conversation now, as a turn of its own: stopped by *Stop*, reported as
    /// events (`busy`, a notice).
    pub(crate) fn compact(&self) -> Result<(), HubError> {
        self.between_turns(Command::Compact, WAIT_FOR_THE_TURN)
    }

    /// The workspace's files that best match `query`, for an `@` mention: the index the
    /// terminal UI uses, listed off the sessions' thread and again when older than
    /// [`FILES_FRESH`].
    pub(crate) async fn mentions(&self, query: &str) -> Value {
        let cached = lock(&self.files)
            .as_ref()
            .filter(|(listed, _)| listed.elapsed() < FILES_FRESH)
            .map(|(_, index)| index.clone());
        let index = match cached {
            Some(index) => index,
            None => {
                let root = self.cwd.clone();
                let Ok(built) = tokio::task::spawn_blocking(move || FileIndex::build(&root)).await
                else {
                    return json!({"matches": [], "truncated": false});
                };
                let built = Arc::new(built);
                *lock(&self.files) = Some((std::time::Instant::now(), built.clone()));
                built
            }
        };
        json!({"matches": index.matches(query), "truncated": index.truncated})
    }

    /// Sends `command` unless a turn is running (then `busy` is the error's words); the
    /// session stays busy until whoever waits for the answer, or the command itself, is done.
    fn between_turns(&self, command: Command, busy: &str) -> Result<(), HubError> {
        if self.busy.swap(true, Ordering::SeqCst) {
            return Err(HubError::Busy(busy.to_owned()));
        }
        self.commands.send(command).map_err(|_| {
            self.busy.store(false, Ordering::SeqCst);
            HubError::Failed("the session has closed".into())
        })
    }

    /// Sends the command `command` makes of an answer channel, between turns, and waits for
    /// its answer; the session is not busy any more once it has come.
    async fn answered_between_turns<T>(
        &self,
        busy: &str,
        command: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, HubError> {
        let (done, answered) = oneshot::channel();
        self.between_turns(command(done), busy)?;
        let answer = answered.await;
        self.busy.store(false, Ordering::SeqCst);
        answer.map_err(|_| HubError::Failed("the session has closed".into()))
    }

    pub(crate) fn stop(&self) {
        if let Some(stop) = lock(&self.stop).as_ref() {
            stop.request(dsh_protocol::AbortReason::User);
        }
    }

    /// Answers question `id`; whether one was waiting.
    pub(crate) fn answer(&self, id: u64, answer: Value) -> bool {
        let Some(waiting) = lock(&self.asks).remove(&id) else {
            return false;
        };
        self.push(json!({"kind": "answered", "id": id}));
        waiting.send(answer).is_ok()
    }

    async fn drive(
        self: Arc<Self>,
        mut run: dsh_core::Run,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut opening: Reopening,
    ) {
        let mut closed = None;
        while let Some(command) = commands.recv().await {
            let (text, images) = match command {
                Command::Prompt(text, images) => (text, images),
                Command::Close(done) => {
                    closed = Some(done);
                    break;
                }
                Command::Turns(done) => {
                    let _ = done.send(serde_json::to_value(run.turns()).unwrap_or_default());
                    continue;
                }
                Command::Compact => {
                    let stop = Stop::new();
                    *lock(&self.stop) = Some(stop.clone());
                    self.push(json!({"kind": "busy", "busy": true}));
                    let said = match run.agent.compact(&stop).await {
                        Ok((dsh_core::ManualCompaction::Summarised, _)) => {
                            "The older part of the conversation is now a summary.".to_owned()
                        }
                        Ok((dsh_core::ManualCompaction::TooShort { tokens, .. }, _)) => format!(
                            "The conversation is too short to compact (about {tokens} tokens)."
                        ),
                        Ok((dsh_core::ManualCompaction::NotSummarised { .. }, _)) => {
                            "The summary could not be made; the conversation is as it was."
                                .to_owned()
                        }
                        Err(error) => format!("Compacting failed: {error}"),
                    };
                    *lock(&self.stop) = None;
                    self.push(json!({"kind": "notice", "text": said}));
                    self.busy.store(false, Ordering::SeqCst);
                    self.push(json!({"kind": "busy", "busy": false}));
                    continue;
                }
                Command::Rewind(request, done) => {
                    let outcome = run
                        .rewind(&request)
                        .map(|report| {
                            let report = serde_json::to_value(&report).unwrap_or_default();
                            if !report["applied"].is_null() {
                                self.push(json!({"kind": "rewound", "report": report}));
                            }
                            report
                        })
                        .map_err(|e| e.to_string());
                    let _ = done.send(outcome);
                    continue;
                }
                Command::Reconfigure { mode, model, done } => {
                    let mut flags = opening.flags.clone();
                    if mode.is_some() {
                        flags.permission_mode = mode;
                    }
                    if model.is_some() {
                        flags.model = model;
                    }
                    // The session's log takes one run at a time: the old one goes first, and
                    // comes back if the new settings cannot open it.
                    run.close().await;
                    let reopened =
                        open_run(&self.cwd, &flags, &opening.user, opening.notices.clone()).await;
                    let outcome = match reopened {
                        Ok((fresh, settings)) => {
                            run = fresh;
                            self.adopt(&run, &settings);
                            opening.flags = flags;
                            self.push(settings);
                            Ok(())
                        }
                        Err(message) => {
                            match open_run(
                                &self.cwd,
                                &opening.flags,
                                &opening.user,
                                opening.notices.clone(),
                            )
                            .await
                            {
                                Ok((old, _)) => run = old,
                                Err(again) => {
                                    let _ = done.send(Err(format!(
                                        "{message}; and reopening it as it was failed: {again}"
                                    )));
                                    self.forget(&opening.hub);
                                    return;
                                }
                            }
                            Err(message)
                        }
                    };
                    let _ = done.send(outcome);
                    continue;
                }
            };
            let stop = Stop::new();
            *lock(&self.stop) = Some(stop.clone());
            self.push(json!({"kind": "busy", "busy": true}));
            let mut running = run.start_task_with_images(text, images, &stop);
            while let Some(event) = running.next_event().await {
                if let Some(line) = self.event_json(&event) {
                    self.push(line);
                }
            }
            let outcome = running.outcome().await;
            *lock(&self.stop) = None;
            self.push(match outcome {
                Ok(summary) => json!({
                    "kind": "turn_end",
                    "reason": summary.reason,
                    "usage": summary.usage,
                }),
                Err(error) => json!({"kind": "error", "message": error.to_string()}),
            });
            self.busy.store(false, Ordering::SeqCst);
            self.push(json!({"kind": "busy", "busy": false}));
        }
        run.close().await;
        self.forget(&opening.hub);
        if let Some(done) = closed {
            let _ = done.send(());
        }
    }

    /// Takes the session out of the server's list: its run is gone, and a resume opens it
    /// afresh.
    fn forget(&self, hub: &std::sync::Weak<Hub>) {
        if let Some(hub) = hub.upgrade() {
            lock(&hub.sessions).remove(self.id());
        }
        self.push(json!({"kind": "closed"}));
    }

    /// Puts a question to the pages and waits for one of them to answer it; `None` when the
    /// run stops waiting for `reply` first.
    async fn ask<T>(&self, mut question: Value, reply: &mut Reply<T>) -> Option<Value> {
        /// Withdraws the question when the one who asked stops waiting (a stopped turn, a
        /// cancelled call): the pages close it instead of showing it forever.
        struct Withdraw<'a>(&'a Live, u64);
        impl Drop for Withdraw<'_> {
            fn drop(&mut self) {
                if lock(&self.0.asks).remove(&self.1).is_some() {
                    self.0
                        .push(json!({"kind": "answered", "id": self.1, "withdrawn": true}));
                }
            }
        }
        let id = self.next_ask.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        lock(&self.asks).insert(id, tx);
        let _withdraw = Withdraw(self, id);
        question["kind"] = json!("ask");
        question["id"] = json!(id);
        self.push(question);
        tokio::select! {
            answer = rx => answer.ok(),
            () = reply.withdrawn() => None,
        }
    }

    /// The call `call_id` as shown, for a question about it.
    fn call(&self, call_id: &str) -> Value {
        lock(&self.calls)
            .get(call_id)
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// What a session was opened with, to open it again (other settings).
struct Reopening {
    flags: Flags,
    user: User,
    notices: mpsc::UnboundedSender<String>,
    /// Where the session is listed, to take it out when its run ends for good.
    hub: std::sync::Weak<Hub>,
}

/// Uploaded images being decoded: one at a time across the server.
static DECODING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// What the page knows of an image: never its path on disk.
fn image_json(image: &ImageRef) -> Value {
    json!({
        "attachmentId": image.attachment_id,
        "mediaType": image.media_type,
        "width": image.width,
        "height": image.height,
        "bytes": image.bytes,
    })
}

/// Why an attached image was refused, for the person who attached it.
fn image_refusal(error: ImageError) -> String {
    match error {
        ImageError::Unreadable(detail) => {
            format!("the file is not an image dsh takes (PNG, JPEG, WebP or GIF): {detail}")
        }
        ImageError::SideTooLong => format!(
            "a side of the image is longer than {} pixels; attach a smaller copy",
            dsh_core::MAX_IMAGE_SIDE
        ),
        ImageError::TooManyPixels => "the image has too many pixels; attach a smaller copy".into(),
        ImageError::TooLarge => "the image cannot be made small enough for a model; attach a \
                                 smaller copy"
            .into(),
        ImageError::Store(detail) => format!("the image could not be stored: {detail}"),
    }
}

/// A run for `flags` in `cwd`, asked through `user`; and the settings it runs with, as the
/// page shows them (`{"kind": "settings", ...}`, with the skills `/skills` lists).
async fn open_run(
    cwd: &std::path::Path,
    flags: &Flags,
    user: &User,
    notices: mpsc::UnboundedSender<String>,
) -> Result<(dsh_core::Run, Value), String> {
    let settings = Settings::load(cwd.to_path_buf(), &Environment::from_process(), flags)
        .map_err(|e| e.message)?;
    let mut shown = json!({
        "kind": "settings",
        "imageInput": settings.route().image_input.value,
        "model": settings.model().value,
        "contextWindow": settings.route().context_window.value,
        "modes": PermissionMode::CHOICES
            .split([',', ' '])
            .filter(|word| !word.is_empty() && *word != "or")
            .collect::<Vec<_>>(),
    });
    let run = AgentBuilder::new(settings)
        .with_user(user.clone())
        .open_run(notices)
        .await
        .map_err(|e| e.message)?;
    // The mode the run works under, from the run: a resumed session keeps its own.
    shown["mode"] = json!(run.agent.permissions().mode);
    shown["skills"] = (run.skills.iter())
        .map(|(name, description)| json!({"name": name, "description": description}))
        .collect();
    Ok((run, shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_keeps_the_last_notices_and_no_live_output() {
        let mut stream = Stream::new();
        stream.keep(&json!({"kind": "view", "view": {"view": "user"}}));
        for n in 0..1000 {
            stream.keep(&json!({"kind": "notice", "text": format!("mcp loud: {n}")}));
            stream.keep(&json!({"kind": "output", "callId": "c", "text": "x".repeat(100)}));
        }
        let notices: Vec<&Report> = (stream.backlog.iter())
            .filter(|(_, l)| l.starts_with(r#"{"kind":"notice""#))
            .collect();
        assert_eq!(notices.len(), NOTICES_KEPT);
        assert!(notices[0].1.contains("mcp loud: 800"), "{}", notices[0].1);
        // The view stays, first; every report keeps its number.
        assert_eq!(stream.backlog[0].0, 1);
        assert_eq!(stream.backlog.len(), NOTICES_KEPT + 1);
        assert_eq!(stream.next, 2002);
    }
}
