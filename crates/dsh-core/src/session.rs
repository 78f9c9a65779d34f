use std::path::{Path, PathBuf};

use dsh_protocol::{
    Block, GoalChangeRecord, Message, PermissionRecord, Record, RecordEnvelope, SessionHeader,
    SubagentRunRecord, TodoItem, TurnEndReason,
};

use crate::CoreError;
use crate::lock::SessionLock;
use crate::log::{LOG_FILE, LOG_FILE_ZSTD, LogOptions, SessionLog, now_ms, read_log, session_dir};

mod reading;
mod recent;

use recent::RecentTurns;
pub use recent::SHOWN_TURNS;

/// One conversation: its identity, the history the model sees, and the log it is kept in.
pub struct Session {
    id: String,
    cwd: PathBuf,
    history: Vec<Message>,
    log: SessionLog,
    last_turn: u32,
    /// The instruction files delivered so far.
    loaded: crate::instructions::Loaded,
    /// Whether instructions were delivered without a record of the files (a session logged
    /// before dsh kept one): what was sent then cannot be compared with the files now.
    untracked_instructions: bool,
    /// The model's task list, as its last `todo_write` left it.
    todos: Vec<TodoItem>,
    /// The session's goal, as its last `goal/change` left it.
    goal: Option<GoalChangeRecord>,
    /// The permission mode and approval policy, as its last `permission/mode` left them.
    permission: Option<PermissionRecord>,
    /// How much of the history the last completed turn left: what a fork starts from.
    completed: usize,
    /// The subagents it started, each as its latest `subagent/run` left it.
    children: Vec<SubagentRunRecord>,
    /// What its logged steps billed, in tokens.
    logged_tokens: u64,
    /// The snapshot of the workspace's files the session last knew (its latest checkpoint,
    /// or what a rewind restored): what a rewind judges changes made outside dsh from.
    last_known_files: Option<String>,
    /// How many records it has absorbed: the log position of the next one.
    absorbed: usize,
    /// Where its turns started and where its rewinds are: what a rewind goes back to.
    rewind_index: RewindIndex,
    /// The log positions some rewind of the log goes back to (found before the log is
    /// absorbed), and the conversation as it was at each, kept as absorbing passes them.
    rewind_targets: std::collections::HashSet<usize>,
    saved: std::collections::HashMap<usize, Conversation>,
    /// The secrets taken out of failure messages before they are logged (a provider's
    /// error can quote the key it was sent); tool results are redacted where they are made.
    redactor: Option<dsh_tools::Redactor>,
    /// Where its last turns start in the log, as it was resumed: what a front end shows.
    recent: RecentTurns,
    /// The title the model wrote for it (`session/title`), if any.
    written_title: Option<String>,
}

impl Session {
    /// A new session with a fresh `session-<uuid>` id, logged under `home`.
    pub fn create(home: &Path, cwd: PathBuf, options: LogOptions) -> Self {
        Session::create_with(home, cwd, options, None)
    }

    /// A subagent's session: its header names the session that started it and its depth.
    pub(crate) fn create_child(
        home: &Path,
        cwd: PathBuf,
        options: LogOptions,
        parent: &str,
        depth: u32,
    ) -> Self {
        Session::create_with(home, cwd, options, Some((parent, depth)))
    }

    fn create_with(
        home: &Path,
        cwd: PathBuf,
        options: LogOptions,
        parent: Option<(&str, u32)>,
    ) -> Self {
        let id = format!("session-{}", uuid::Uuid::new_v4());
        let mut header =
            SessionHeader::new(id.clone(), now_ms(), cwd.to_string_lossy().into_owned());
        if let Some((parent, depth)) = parent {
            header.parent_session = Some(parent.to_owned());
            header.delegation_depth = Some(depth);
        }
        Session::with_header(home, cwd, options, id, header)
    }

    fn with_header(
        home: &Path,
        cwd: PathBuf,
        options: LogOptions,
        id: String,
        header: SessionHeader,
    ) -> Self {
        let log = SessionLog::create(home, header, options)
            .at_each_turn_end(crate::search_index::keep_up);
        Session::empty(id, cwd, log)
    }

    /// A session with nothing absorbed yet, kept in `log`.
    fn empty(id: String, cwd: PathBuf, log: SessionLog) -> Self {
        Session {
            log,
            id,
            cwd,
            history: Vec::new(),
            last_turn: 0,
            loaded: Default::default(),
            untracked_instructions: false,
            todos: Vec::new(),
            goal: None,
            permission: None,
            completed: 0,
            children: Vec::new(),
            logged_tokens: 0,
            last_known_files: None,
            absorbed: 0,
            rewind_index: RewindIndex::default(),
            rewind_targets: Default::default(),
            saved: Default::default(),
            redactor: None,
            recent: RecentTurns::default(),
            written_title: None,
        }
    }

    /// A new session that begins with a copy of session `from`'s history up to its last
    /// completed turn, its task list and what it knows of the workspace instructions
    /// (`--fork`). The old session is only read: not locked, repaired or changed.
    pub fn fork(
        home: &Path,
        cwd: PathBuf,
        from: &str,
        options: LogOptions,
    ) -> Result<Session, CoreError> {
        let (_, path) = find_log(home, &cwd, from)?;
        let loaded = read_log(&path)?;
        let here = cwd.to_string_lossy().into_owned();
        if loaded.header.id != from || loaded.header.cwd != here {
            return Err(CoreError::OtherDirectory {
                id: from.to_owned(),
                recorded: loaded.header.cwd,
                here,
            });
        }
        // Replayed in memory only (this one is never written; it reads its own log for a
        // rewind), and only up to its last ended turn or rewind: what an unfinished turn did
        // (instructions delivered, a task list) is not in the history the fork begins with,
        // so it is not copied either.
        let mut old = Session::empty(
            from.to_owned(),
            cwd.clone(),
            SessionLog::read_only(path, loaded.header.clone()),
        );
        old.rewind_targets = rewind_targets_of(&loaded.records);
        let ended = (loaded.records.iter())
            .rposition(|e| matches!(e.record, Record::TurnEnd { .. } | Record::Rewind(_)))
            .map_or(0, |last| last + 1);
        for envelope in loaded.records.into_iter().take(ended) {
            old.absorb(envelope.record);
        }
        let id = format!("session-{}", uuid::Uuid::new_v4());
        let mut header =
            SessionHeader::new(id.clone(), now_ms(), cwd.to_string_lossy().into_owned());
        header.forked_from = Some(from.to_owned());
        let mut session = Session::with_header(home, cwd, options, id, header);
        let messages = old.completed_history().to_vec();
        session.commit(Record::SessionSeed { messages })?;
        session.completed = session.history.len();
        if !old.todos.is_empty() {
            session.commit(Record::TodoWrite {
                turn: 0,
                todos: old.todos,
            })?;
        }
        // The goal comes along as it was, and like any resumed goal it waits to be resumed.
        if let Some(mut change) = old.goal {
            change.turn = 0;
            session.commit(Record::GoalChange(change))?;
        }
        session.loaded = old.loaded;
        session.untracked_instructions = old.untracked_instructions;
        Ok(session)
    }

    /// The session `id`, recorded in `cwd`, to go on with: locked against other writers, its
    /// torn last line cut off, an open turn closed as interrupted (the closing records are
    /// appended to the log), and the history rebuilt from what was committed.
    pub fn resume(
        home: &Path,
        cwd: PathBuf,
        id: &str,
        options: LogOptions,
    ) -> Result<Session, CoreError> {
        Session::resume_checked(home, cwd, id, options, false)
    }

    /// [`Session::resume`] for a front end that drives the session itself (`--session-id`, a
    /// session picked in a list): a subagent's session is refused before anything is written
    /// to it, since the agent that started it owns it.
    pub fn adopt(
        home: &Path,
        cwd: PathBuf,
        id: &str,
        options: LogOptions,
    ) -> Result<Session, CoreError> {
        Session::resume_checked(home, cwd, id, options, true)
    }

    fn resume_checked(
        home: &Path,
        cwd: PathBuf,
        id: &str,
        options: LogOptions,
        refuse_child: bool,
    ) -> Result<Session, CoreError> {
        let (dir, path) = find_log(home, &cwd, id)?;
        let here = cwd.to_string_lossy().into_owned();
        let lock = SessionLock::acquire(&dir, id)?;
        let header = crate::log::read_header(&path)?;
        if header.id != id || header.cwd != here {
            return Err(CoreError::OtherDirectory {
                id: id.to_owned(),
                recorded: header.cwd,
                here,
            });
        }
        if let Some(parent) = (header.parent_session.clone()).filter(|_| refuse_child) {
            return Err(CoreError::Child {
                id: id.to_owned(),
                parent,
            });
        }
        let mut session = Session::empty(
            id.to_owned(),
            cwd,
            SessionLog::read_only(path.clone(), header.clone()),
        );
        let read = session.absorb_log(&path)?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| CoreError::Log {
                path: path.clone(),
                source,
            })?;
        if read.end.torn {
            file.set_len(read.end.whole_len)
                .map_err(|source| CoreError::Log {
                    path: path.clone(),
                    source,
                })?;
        }
        session.log = SessionLog::resume(path, header, file, lock, options, read.listing)
            .at_each_turn_end(crate::search_index::keep_up);
        for record in read.closing {
            session.commit(record)?;
        }
        Ok(session)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The model's task list, as its last `todo_write` left it (a resumed session's too).
    pub fn todos(&self) -> &[TodoItem] {
        &self.todos
    }

    /// The permission mode and approval policy the session last ran under, if it recorded them.
    pub fn permission(&self) -> Option<&PermissionRecord> {
        self.permission.as_ref()
    }

    /// The last change of the session's goal, which holds the goal as it is now (a resumed
    /// session's too).
    pub fn goal_change(&self) -> Option<&GoalChangeRecord> {
        self.goal.as_ref()
    }

    /// The snapshot of the workspace's files the session last knew, if it took any.
    pub fn last_known_files(&self) -> Option<&str> {
        self.last_known_files.as_deref()
    }

    /// Makes the conversation what it was where `rewind` (absorbed at log position `at`)
    /// goes back to: before its turn started, or for an undo just before the rewind it
    /// undoes. The log keeps everything. The state there was kept as the log was absorbed
    /// when the rewind was known beforehand (a resume); else (a rewind just made) the log is
    /// replayed once up to there, each earlier rewind in it taken from states that replay
    /// keeps, so no rewind ever replays another. The turn count, the permissions, the
    /// subagents and the billing are not taken back.
    fn take_back_conversation(&mut self, at: usize, rewind: &dsh_protocol::RewindRecord) {
        let Some(target) = self.rewind_index.target(rewind) else {
            return;
        };
        let conversation = match self.saved.get(&target) {
            Some(saved) => saved.clone(),
            None => {
                let records = crate::log::logged_records(self.log.path());
                // A log that cannot be read back (the rewind itself is in it) must not
                // leave an empty conversation: nothing is taken back then.
                if records.len() <= at {
                    return;
                }
                let mut replay = Session::empty(
                    self.id.clone(),
                    self.cwd.clone(),
                    SessionLog::read_only(self.log.path().to_path_buf(), self.log.header().clone()),
                );
                replay.rewind_targets = rewind_targets(&records);
                for record in records.into_iter().take(target) {
                    replay.absorb(record);
                }
                replay.conversation()
            }
        };
        self.restore_conversation(conversation);
    }

    /// What a conversation rewind takes back.
    fn conversation(&self) -> Conversation {
        Conversation {
            history: self.history.clone(),
            completed: self.completed,
            todos: self.todos.clone(),
            goal: self.goal.clone(),
            loaded: self.loaded.clone(),
            untracked_instructions: self.untracked_instructions,
        }
    }

    fn restore_conversation(&mut self, conversation: Conversation) {
        self.history = conversation.history;
        self.completed = conversation.completed.min(self.history.len());
        self.todos = conversation.todos;
        self.goal = conversation.goal;
        self.loaded = conversation.loaded;
        self.untracked_instructions = conversation.untracked_instructions;
    }

    /// The tokens its logged steps billed.
    pub(crate) fn logged_tokens(&self) -> u64 {
        self.logged_tokens
    }

    /// The subagents this session started, each as its latest `subagent/run` record left it.
    pub(crate) fn children(&self) -> &[SubagentRunRecord] {
        &self.children
    }

    /// The history up to the end of the last completed turn: what a fork starts from.
    pub(crate) fn completed_history(&self) -> &[Message] {
        &self.history[..self.completed.min(self.history.len())]
    }

    /// The title the model wrote for the session (`session/title`), if any; the one the user
    /// gives it is a file beside the log (`session_list`).
    pub fn written_title(&self) -> Option<&str> {
        self.written_title.as_deref()
    }

    pub fn history(&self) -> &[Message] {
        &self.history
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// Every record logged so far, in order ([`crate::logged_records`]).
    pub fn logged_records(&self) -> Vec<Record> {
        crate::log::logged_records(self.log.path())
    }

    /// The session's folder: its log and its spill files.
    pub fn dir(&self) -> &Path {
        self.log.path().parent().unwrap_or_else(|| Path::new("."))
    }

    /// The instruction files the session was given, each with the digest last sent.
    pub fn loaded_instructions(&self) -> &crate::instructions::Loaded {
        &self.loaded
    }

    /// Whether every instruction message of the session says which files it delivered; not
    /// so for a session logged before dsh recorded them.
    pub fn instructions_tracked(&self) -> bool {
        !self.untracked_instructions
    }

    /// What the session was given of the workspace instructions, for the next delivery.
    pub(crate) fn instructions_given(&self) -> crate::instructions::Given<'_> {
        if self.untracked_instructions {
            crate::instructions::Given::Untracked
        } else {
            crate::instructions::Given::Files(&self.loaded)
        }
    }

    /// The number of the last turn started (0 before the first).
    pub fn last_turn(&self) -> u32 {
        self.last_turn
    }

    pub(crate) fn next_turn(&mut self) -> u32 {
        self.last_turn += 1;
        self.last_turn
    }

    /// Commits a record: the log first, then the history the model will see.
    /// Takes `redactor`'s secrets out of the failure messages it logs from now on.
    pub(crate) fn redact_failures(&mut self, redactor: Option<dsh_tools::Redactor>) {
        self.redactor = redactor;
    }

    /// What takes the secrets out of what the session logs and tells.
    pub(crate) fn redactor(&self) -> Option<&dsh_tools::Redactor> {
        self.redactor.as_ref()
    }

    /// Takes the secrets out of a failure's message, as it will be logged.
    pub(crate) fn redact_reason(&self, reason: &mut TurnEndReason) {
        // A provider's message may quote the key it was sent, whole or in part.
        if let (Some(redactor), TurnEndReason::Error { error }) = (&self.redactor, reason) {
            error.message = redactor.redact_pieces(&error.message);
        }
    }

    pub(crate) fn commit(&mut self, mut record: Record) -> Result<RecordEnvelope, CoreError> {
        match &mut record {
            Record::TurnEnd { reason, .. } => self.redact_reason(reason),
            Record::SubagentRun(run) => self.redact_reason(&mut run.reason),
            // A reviewer may quote the call it read, secrets and all.
            Record::AutoReview(review) => {
                if let Some(redactor) = &self.redactor
                    && let std::borrow::Cow::Owned(redacted) = redactor.redact(&review.reason)
                {
                    review.reason = redacted;
                }
            }
            _ => {}
        }
        let envelope = self.log.append(record)?;
        self.absorb(envelope.record.clone());
        Ok(envelope)
    }

    /// What a committed record adds to the history and the turn count.
    fn absorb(&mut self, record: Record) {
        let position = self.absorbed;
        self.absorbed += 1;
        if self.rewind_targets.contains(&position) {
            self.saved.insert(position, self.conversation());
        }
        self.rewind_index.note(position, &record);
        match record {
            Record::UserMessage {
                message,
                instructions,
                ..
            } => {
                match instructions {
                    Some(files) => {
                        for file in files {
                            self.loaded.insert(file.path, file.digest);
                        }
                    }
                    None => {
                        use crate::instructions::{DIGEST_UNKNOWN, UntrackedDelivery};
                        let texts = message.content.iter().filter_map(|block| match block {
                            Block::Text { text } => Some(text),
                            _ => None,
                        });
                        for delivery in texts.filter_map(|t| UntrackedDelivery::read(t)) {
                            self.untracked_instructions = true;
                            if let UntrackedDelivery::Nested(file) = delivery {
                                // Delivered: not to be sent again when the tools reach it.
                                let path = self.cwd.join(file).display().to_string();
                                self.loaded
                                    .entry(path)
                                    .or_insert_with(|| Some(DIGEST_UNKNOWN.into()));
                            }
                        }
                    }
                }
                self.history.push(message);
            }
            Record::AssistantMessage(data) => self.history.push(data.message),
            Record::ToolResult(data) => self.history.push(data.message),
            Record::TurnStart { turn } => self.last_turn = self.last_turn.max(turn),
            Record::CompactionPrune(data) => {
                // By position: call ids are not unique for servers that send none.
                let index = data.index as usize;
                let answers = self.history.get(index).is_some_and(|m| {
                    m.content.iter().any(|b| {
                        matches!(b, Block::ToolResult { tool_call_id, .. } if *tool_call_id == data.call_id)
                    })
                });
                if answers {
                    self.history[index] = data.message;
                }
            }
            Record::CompactionSummary(data) => {
                let replaced = (data.replaced as usize).min(self.history.len());
                self.history.splice(..replaced, [data.message]);
                // The summary stands for what it replaced, completed turns included.
                if self.completed >= replaced {
                    self.completed = self.completed - replaced + 1;
                }
            }
            Record::TodoWrite { todos, .. } => self.todos = todos,
            Record::GoalChange(change) => self.goal = Some(change),
            Record::PermissionMode(permission) => self.permission = Some(permission),
            // A fork's seed is completed turns: what a fork of it starts from.
            Record::SessionSeed { messages } => {
                self.history.extend(messages);
                self.completed = self.history.len();
            }
            Record::TurnEnd { .. } => self.completed = self.history.len(),
            Record::StepEnd { usage, .. } => self.logged_tokens += usage.total_tokens,
            Record::StepStart { .. }
            | Record::ToolCall(_)
            | Record::Presentation(_)
            | Record::AutoReview(_) => {}
            Record::Checkpoint(checkpoint) => self.last_known_files = Some(checkpoint.snapshot),
            Record::Rewind(rewind) => {
                if let Some(restored) = &rewind.restored {
                    self.last_known_files = Some(restored.clone());
                }
                if rewind.conversation {
                    self.take_back_conversation(position, &rewind);
                }
            }
            Record::SubagentRun(run) => {
                self.children.retain(|known| known.agent_id != run.agent_id);
                self.children.push(*run);
            }
            Record::SessionTitle(titled) => self.written_title = Some(titled.title),
        }
    }
}

/// The working directory a session `id` was recorded in, when it is under another one.
fn recorded_elsewhere(home: &Path, id: &str) -> Option<String> {
    let folders = std::fs::read_dir(home.join("sessions")).ok()?;
    folders
        .filter_map(Result::ok)
        .filter_map(|entry| log_file_in(&entry.path().join(id)))
        .find_map(|path| crate::log::read_header(&path).ok().map(|header| header.cwd))
}

/// The log of the session folder `dir`, plain or compressed.
/// The folder and log of session `id` recorded in `cwd`, or why there is none.
pub(crate) fn find_log(home: &Path, cwd: &Path, id: &str) -> Result<(PathBuf, PathBuf), CoreError> {
    check_id(id)?;
    let here = cwd.to_string_lossy().into_owned();
    let dir = session_dir(home, &here, id);
    match log_file_in(&dir) {
        Some(path) => Ok((dir, path)),
        None => Err(match recorded_elsewhere(home, id) {
            Some(recorded) => CoreError::OtherDirectory {
                id: id.to_owned(),
                recorded,
                here,
            },
            None => CoreError::UnknownSession {
                id: id.to_owned(),
                root: home.join("sessions"),
            },
        }),
    }
}

pub(crate) fn log_file_in(dir: &Path) -> Option<PathBuf> {
    [LOG_FILE, LOG_FILE_ZSTD]
        .into_iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
}

/// An id that can name a session folder: not empty, no `/`, not `.` or `..`.
pub(crate) fn check_id(id: &str) -> Result<(), CoreError> {
    if id.is_empty() || id == "." || id == ".." || id.contains('/') || id.contains('\0') {
        return Err(CoreError::BadSessionId(id.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{InstructionFile, TodoItem, TodoStatus, TurnEndReason};

    use super::*;

    /// A rewind of the conversation only, to the start of `turn`.
    fn conversation_rewind(turn: u32) -> Record {
        Record::Rewind(dsh_protocol::RewindRecord {
            to_turn: Some(turn),
            before_call: None,
            undo: false,
            files: false,
            conversation: true,
            backup: None,
            restored: None,
            written: 0,
            removed: 0,
        })
    }

    fn todo(content: &str) -> TodoItem {
        TodoItem {
            content: content.into(),
            status: TodoStatus::Pending,
        }
    }

    /// Forty turns, every other one rewound away: each rewind's replay holds the ones
    /// before it. Live, on resume and in a fork the conversation is the odd turns', and no
    /// rewind replays another (forty nested replays would not end in a test's time).
    #[test]
    fn many_conversation_rewinds_replay_the_log_once_and_forks_keep_them() {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_path_buf();
        let options = LogOptions::default();
        let mut session = Session::create(home.path(), cwd.clone(), options);
        for turn in 1..=40 {
            session.commit(Record::TurnStart { turn }).unwrap();
            session
                .commit(Record::UserMessage {
                    turn,
                    message: Message::user_text(format!("task {turn}")),
                    instructions: None,
                })
                .unwrap();
            session
                .commit(Record::TurnEnd {
                    turn,
                    reason: TurnEndReason::Completed,
                })
                .unwrap();
            if turn % 2 == 0 {
                session.commit(conversation_rewind(turn)).unwrap();
            }
        }
        let texts =
            |s: &Session| -> Vec<String> { s.history().iter().map(Message::text).collect() };
        let odd: Vec<String> = (1..=40).step_by(2).map(|t| format!("task {t}")).collect();
        assert_eq!(texts(&session), odd);
        let id = session.id().to_owned();
        drop(session);
        let resumed = Session::resume(home.path(), cwd.clone(), &id, options).unwrap();
        assert_eq!(texts(&resumed), odd);
        drop(resumed);
        let fork = Session::fork(home.path(), cwd, &id, options).unwrap();
        assert_eq!(texts(&fork), odd);
    }

    /// A resumed session shows its last turns, read from where the first of them starts in
    /// the log: a line before it, damaged after the resume read it, is not read again.
    #[test]
    fn a_resumed_long_session_shows_its_last_turns_read_from_their_start() {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_path_buf();
        let options = LogOptions::default();
        let mut session = Session::create(home.path(), cwd.clone(), options);
        let turns = SHOWN_TURNS as u32 + 10;
        for turn in 1..=turns {
            session.commit(Record::TurnStart { turn }).unwrap();
            (session.commit(Record::UserMessage {
                turn,
                message: Message::user_text(format!("task {turn}")),
                instructions: None,
            }))
            .unwrap();
            let reason = TurnEndReason::Completed;
            session.commit(Record::TurnEnd { turn, reason }).unwrap();
        }
        let id = session.id().to_owned();
        let path = session.log_path().to_path_buf();
        drop(session);
        assert!(!crate::log::may_rewind(&path));
        let resumed = Session::resume(home.path(), cwd.clone(), &id, options).unwrap();
        assert_eq!(resumed.history().len(), turns as usize);
        let mut bytes = std::fs::read(&path).unwrap();
        let first_record = bytes.iter().position(|b| *b == b'\n').unwrap() + 8;
        bytes[first_record..first_record + 4].copy_from_slice(b"XXXX");
        std::fs::write(&path, &bytes).unwrap();
        let (shown, not_shown) = resumed.shown_records();
        assert_eq!(not_shown, 10);
        assert_eq!(shown.first(), Some(&Record::TurnStart { turn: 11 }));
        let starts = shown
            .iter()
            .filter(|r| matches!(r, Record::TurnStart { .. }));
        assert_eq!(starts.count(), SHOWN_TURNS);
        drop(resumed);
        // A short one shows all of it.
        let mut short = Session::create(home.path(), cwd.clone(), options);
        short.commit(Record::TurnStart { turn: 1 }).unwrap();
        let id = short.id().to_owned();
        drop(short);
        let resumed = Session::resume(home.path(), cwd, &id, options).unwrap();
        let (shown, not_shown) = resumed.shown_records();
        assert_eq!(not_shown, 0);
        assert_eq!(shown.first(), Some(&Record::TurnStart { turn: 1 }));
    }

    /// The turns it wrote after a resume are in its listing, which lists read alone.
    #[test]
    fn a_resumed_session_keeps_its_listing() {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_path_buf();
        let options = LogOptions::default();
        let mut session = Session::create(home.path(), cwd.clone(), options);
        session.commit(Record::TurnStart { turn: 1 }).unwrap();
        let id = session.id().to_owned();
        let dir = session.log_path().parent().unwrap().to_path_buf();
        drop(session);
        // Killed in its first turn: no listing yet. The resume closes the turn.
        assert!(!dir.join(crate::listing::LISTING_FILE).exists());
        let mut resumed = Session::resume(home.path(), cwd.clone(), &id, options).unwrap();
        resumed.commit(Record::TurnStart { turn: 2 }).unwrap();
        let reason = TurnEndReason::Completed;
        resumed.commit(Record::TurnEnd { turn: 2, reason }).unwrap();
        let kept = std::fs::read_to_string(dir.join(crate::listing::LISTING_FILE)).unwrap();
        let len = std::fs::metadata(resumed.log_path()).unwrap().len();
        assert!(kept.contains(&format!(r#""read":{len},"#)), "{kept}");
        assert!(kept.contains(r#""turns":2,"#), "{kept}");
        let listed = crate::list_sessions(home.path(), &cwd);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].turns, 2);
    }

    /// Only a log whose bytes name a rewind is read whole before it is absorbed; a compressed
    /// one is not looked into.
    #[test]
    fn only_a_log_that_may_rewind_is_read_whole_first() {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_path_buf();
        for zstd in [false, true] {
            let options = LogOptions { fsync: false, zstd };
            let mut session = Session::create(home.path(), cwd.clone(), options);
            session.commit(Record::TurnStart { turn: 1 }).unwrap();
            assert_eq!(crate::log::may_rewind(session.log_path()), zstd);
            session.commit(conversation_rewind(1)).unwrap();
            assert!(crate::log::may_rewind(session.log_path()));
        }
    }

    #[test]
    fn a_fork_copies_only_what_ended_turns_did() {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_path_buf();
        let options = LogOptions::default();
        let mut old = Session::create(home.path(), cwd.clone(), options);
        let user = |turn, text: &str| Record::UserMessage {
            turn,
            message: Message::user_text(text),
            instructions: None,
        };
        old.commit(Record::TurnStart { turn: 1 }).unwrap();
        old.commit(user(1, "first task")).unwrap();
        old.commit(Record::TodoWrite {
            turn: 1,
            todos: vec![todo("done in turn one")],
        })
        .unwrap();
        old.commit(Record::TurnEnd {
            turn: 1,
            reason: TurnEndReason::Completed,
        })
        .unwrap();
        // A second turn still running: its instructions and task list are not the fork's.
        old.commit(Record::TurnStart { turn: 2 }).unwrap();
        old.commit(user(2, "second task")).unwrap();
        old.commit(Record::UserMessage {
            turn: 2,
            message: Message::user_text("<instructions>"),
            instructions: Some(vec![InstructionFile {
                path: "/w/AGENTS.md".into(),
                digest: Some("abc".into()),
            }]),
        })
        .unwrap();
        old.commit(Record::TodoWrite {
            turn: 2,
            todos: vec![todo("from the open turn")],
        })
        .unwrap();
        let before = std::fs::read(old.log_path()).unwrap();

        let fork = Session::fork(home.path(), cwd, old.id(), options).unwrap();
        assert_ne!(fork.id(), old.id());
        assert_eq!(fork.history(), [Message::user_text("first task")]);
        assert_eq!(fork.todos(), [todo("done in turn one")]);
        assert!(
            fork.loaded_instructions().is_empty(),
            "the open turn's delivery is not copied"
        );
        assert_eq!(
            std::fs::read(old.log_path()).unwrap(),
            before,
            "the old log is unchanged"
        );
    }
}

/// What a conversation rewind takes back, as it was at one point of the log.
#[derive(Clone)]
struct Conversation {
    history: Vec<Message>,
    completed: usize,
    todos: Vec<TodoItem>,
    goal: Option<GoalChangeRecord>,
    loaded: crate::instructions::Loaded,
    untracked_instructions: bool,
}

/// The log positions the conversation rewinds of `records` go back to: each rewound turn's
/// `turn/start`, and for an undo the rewind it undoes.
fn rewind_targets<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> std::collections::HashSet<usize> {
    let mut targets = std::collections::HashSet::new();
    let mut index = RewindIndex::default();
    for (position, record) in records.into_iter().enumerate() {
        index.note(position, record);
        if let Record::Rewind(rewind) = record
            && rewind.conversation
        {
            targets.extend(index.target(rewind));
        }
    }
    targets
}

/// Where a log's turns started and where its rewinds are (with whether each was an undo),
/// as far as it has been read: what a rewind goes back to.
#[derive(Default)]
struct RewindIndex {
    turn_starts: std::collections::HashMap<u32, usize>,
    rewinds: Vec<(usize, bool)>,
}

impl RewindIndex {
    /// Takes note of the record at log position `position`.
    fn note(&mut self, position: usize, record: &Record) {
        match record {
            Record::TurnStart { turn } => {
                self.turn_starts.insert(*turn, position);
            }
            Record::Rewind(rewind) => self.rewinds.push((position, rewind.undo)),
            _ => {}
        }
    }

    /// The log position `rewind` goes back to: its turn's `turn/start`, or for an undo the
    /// last rewind that was not one (an undo noted already is passed over).
    fn target(&self, rewind: &dsh_protocol::RewindRecord) -> Option<usize> {
        match rewind.to_turn {
            Some(turn) => self.turn_starts.get(&turn).copied(),
            None => (self.rewinds.iter().rev())
                .find(|(_, undo)| !undo)
                .map(|(position, _)| *position),
        }
    }
}

fn rewind_targets_of(records: &[RecordEnvelope]) -> std::collections::HashSet<usize> {
    rewind_targets(records.iter().map(|e| &e.record))
}
