//! Checkpoints of the workspace at each turn's start and end, and rewinds to them: the files
//! (through `dsh-checkpoint`'s store, `<home>/checkpoints/<workspace>/`), the conversation
//! (a `rewind` record the session replays its log by), or both. Every front end rewinds
//! through [`rewind`]: `dsh rewind`, the terminal UI's `/rewind` ([`crate::Run::rewind`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub use dsh_checkpoint::{Change, ChangeKind, RestorePlan};
use dsh_checkpoint::{CheckpointStore, Coverage, Snapshot, Taken, Watch};

use crate::CoreError;
use dsh_config::Settings;
use dsh_protocol::{CheckpointAt, CheckpointRecord, Record, RewindRecord};

use crate::Session;

pub(crate) mod install;
mod prune;
mod store;

pub(crate) use prune::{Pruning, prune_beside};
pub(crate) use store::{coverage, store_for};

/// The config files the run read (or looked for) that lie in the workspace, relative to it:
/// they may hold keys, so no checkpoint copies them.
fn settings_files_inside(settings: &Settings) -> Vec<String> {
    let workspace = settings.cwd();
    (settings.files().layers().iter())
        .filter_map(|layer| {
            let path = std::path::absolute(&layer.path).ok()?;
            let inside = path.strip_prefix(workspace).ok()?;
            let names: Option<Vec<&str>> = inside.iter().map(|n| n.to_str()).collect();
            Some(names?.join("/"))
        })
        .filter(|key| !key.is_empty())
        .collect()
}

/// Takes a session's checkpoints (the top agent's, at each turn's start and end) and
/// rewinds to them.
pub struct Checkpointer {
    store: CheckpointStore,
    coverage: Coverage,
    workspace: PathBuf,
    /// The workspace's folder as it was when this checkpointer was made: every snapshot is
    /// refused once its path names another (a command may move the workspace and link
    /// another folder in its place), and every restore writes beneath this descriptor.
    pinned: Option<Arc<dsh_fence::Root>>,
    /// The last snapshot taken and its id, so that the next reads only the files that changed
    /// and is kept as the changes from it.
    last: Option<(String, Arc<Snapshot>)>,
    /// The workspace's folders watched since the last snapshot: the next one looks only at
    /// what changed, rather than walk the tree (the end of a turn; in a front end that stays
    /// open, the start of the next).
    watch: Option<Arc<Watch>>,
}

impl Checkpointer {
    /// The run's checkpointer, unless `[checkpoints]` turns them off.
    pub(crate) fn for_run(settings: &Settings) -> Option<Self> {
        settings
            .checkpoints()
            .enabled
            .then(|| Checkpointer::new(settings))
    }

    /// The checkpointer of a session under `settings`, whether or not new checkpoints are
    /// taken: a rewind to the ones it has. Until it takes one, the store's record of the
    /// files it last read saves reading them again (a snapshot loaded back has no file
    /// times to compare).
    pub fn new(settings: &Settings) -> Self {
        let home = &settings.home().value;
        Checkpointer {
            store: store_for(home, settings.cwd()),
            coverage: Coverage {
                secret_files: settings_files_inside(settings),
                ..coverage(settings.checkpoints(), home)
            },
            workspace: settings.cwd().clone(),
            pinned: dsh_fence::Root::open(settings.cwd()).ok().map(Arc::new),
            last: None,
            watch: None,
        }
    }

    /// The workspace as it is now, for a rewind to `target`: taken while its path names the
    /// pinned folder, before and after the walk (a rewind never reads another folder as the
    /// workspace, nor writes into one), and covering what the restore will overwrite although
    /// it is not covered now (grown too large, ignored since), so that the snapshot that undoes
    /// the rewind keeps it all the same.
    fn current_for(
        &self,
        store: &CheckpointStore,
        target: &Snapshot,
    ) -> Result<Snapshot, dsh_checkpoint::CheckpointError> {
        let pinned = self.pinned()?;
        let last = self.last.as_ref().map(|(_, last)| last.as_ref());
        let mut current = store.take(&self.workspace, &self.coverage, last)?;
        dsh_checkpoint::still_at_its_path(&pinned)?;
        for (path, entry) in &target.entries {
            if !matches!(entry, dsh_checkpoint::Entry::Dir { .. })
                && !current.entries.contains_key(path)
            {
                store.cover_path(&self.workspace, path, &mut current)?;
            }
        }
        Ok(current)
    }

    /// The workspace as it was pinned, while its path still names it.
    fn pinned(&self) -> Result<Arc<dsh_fence::Root>, dsh_checkpoint::CheckpointError> {
        let pinned =
            self.pinned
                .clone()
                .ok_or_else(|| dsh_checkpoint::CheckpointError::Replaced {
                    path: self.workspace.clone(),
                })?;
        dsh_checkpoint::still_at_its_path(&pinned)?;
        Ok(pinned)
    }

    /// Snapshots the workspace now, off the async threads; the record to commit, or why
    /// no checkpoint could be taken. The last snapshot is handed over to be the next one's
    /// starting point, not copied (a snapshot of a large tree is megabytes).
    pub(crate) async fn take(
        &mut self,
        turn: u32,
        at: CheckpointAt,
        call_id: Option<String>,
    ) -> Result<Record, String> {
        let last = self.last.take();
        let pending = self.start(last, turn, at, call_id);
        self.finish(pending).await
    }

    /// Starts a snapshot of the workspace as it is now, on a thread of its own: the turn's
    /// first request goes out meanwhile, and [`Checkpointer::finish`] is awaited before any
    /// call can change a file. It may be given up ([`PendingCheckpoint`] dropped), so the
    /// last snapshot stays this checkpointer's too.
    pub(crate) fn begin(
        &self,
        turn: u32,
        at: CheckpointAt,
        call_id: Option<String>,
    ) -> PendingCheckpoint {
        self.start(self.last.clone(), turn, at, call_id)
    }

    fn start(
        &self,
        last: Option<(String, Arc<Snapshot>)>,
        turn: u32,
        at: CheckpointAt,
        call_id: Option<String>,
    ) -> PendingCheckpoint {
        let (store, coverage, workspace) = (
            self.store.clone(),
            self.coverage.clone(),
            self.workspace.clone(),
        );
        let watch = self.watch.clone();
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let pinned = self.pinned();
        let handle = tokio::task::spawn_blocking(move || {
            let (base_id, base) = last.unzip();
            // The walk goes by the workspace's path: it must name the folder the run started
            // in before the walk, and still after it.
            let pinned = pinned?;
            // The last snapshot goes in whole (not kept here as well), so that one taken from
            // the watch changes it in place rather than copy it.
            let mut taken =
                store.take_watched(&workspace, &coverage, base.zip(watch.as_ref()), &stopped)?;
            dsh_checkpoint::still_at_its_path(&pinned)?;
            let id = store.save_taken(&mut taken, base_id.as_deref())?;
            Ok((id, taken))
        });
        PendingCheckpoint {
            handle,
            _stop: StopOnDrop(stop),
            turn,
            at,
            call_id,
            started,
        }
    }

    /// The record of a snapshot [`Checkpointer::begin`] started, once it is taken.
    pub(crate) async fn finish(&mut self, pending: PendingCheckpoint) -> Result<Record, String> {
        let (id, taken) = pending
            .handle
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        // What the watch saw until now is in this snapshot, which the next is taken from.
        if let Some(watch) = &taken.watch {
            watch.rebase();
        }
        self.watch = taken.watch;
        let snapshot = taken.snapshot;
        let record = Record::Checkpoint(CheckpointRecord {
            turn: pending.turn,
            at: pending.at,
            snapshot: id.clone(),
            files: u32::try_from(snapshot.file_count()).unwrap_or(u32::MAX),
            uncovered: snapshot.uncovered.iter().map(|u| u.path.clone()).collect(),
            ms: u64::try_from(pending.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            call_id: pending.call_id,
        });
        self.last = Some((id, snapshot));
        Ok(record)
    }
}

/// A snapshot being taken. Dropped before it is finished (a turn that ran no call that could
/// change a file), it stops the walk at its next step, so neither the turn nor the process
/// waits for it.
pub(crate) struct PendingCheckpoint {
    handle: tokio::task::JoinHandle<Result<(String, Taken), dsh_checkpoint::CheckpointError>>,
    _stop: StopOnDrop,
    turn: u32,
    at: CheckpointAt,
    call_id: Option<String>,
    started: Instant,
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// One turn of a session as a rewind lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnFiles {
    pub turn: u32,
    /// The first line of the turn's task.
    pub task: String,
    /// Whether the files can be taken back to its start (its start was checkpointed and
    /// the checkpoint is still kept).
    pub restorable: bool,
    /// What it changed in the files, from its start to its end (or to the next checkpoint).
    pub changes: Vec<Change>,
    /// Its escalated calls checkpointed just before they ran, by call id: points the files
    /// can go back to within the turn.
    pub escalations: Vec<String>,
}

/// The turns of a session (its `records`), with what each changed in the files.
pub fn session_turns(records: &[Record], checkpointer: &Checkpointer) -> Vec<TurnFiles> {
    turns_in(records, &checkpointer.store)
}

/// The turns of a session (its `records`) whose checkpoints are in `store`, with what each
/// changed in the files: for a session read from anywhere, not one opened with its settings
/// (`dsh sessions diff`, `dsh replay`).
pub(crate) fn turns_in(records: &[Record], store: &CheckpointStore) -> Vec<TurnFiles> {
    let mut turns: Vec<(TurnFiles, Option<String>)> = Vec::new();
    let mut checkpoints: Vec<(u32, String)> = Vec::new();
    for record in records {
        match record {
            Record::TurnStart { turn } => turns.push((
                TurnFiles {
                    turn: *turn,
                    task: String::new(),
                    restorable: false,
                    changes: Vec::new(),
                    escalations: Vec::new(),
                },
                None,
            )),
            Record::UserMessage {
                message,
                instructions: None,
                ..
            } => {
                if let Some((turn, _)) = turns.last_mut().filter(|(t, _)| t.task.is_empty()) {
                    turn.task = message.text().lines().next().unwrap_or_default().to_owned();
                }
            }
            Record::Checkpoint(checkpoint) => {
                if let (CheckpointAt::BeforeEscalation, Some(call), Some((turn, _))) =
                    (checkpoint.at, &checkpoint.call_id, turns.last_mut())
                {
                    turn.escalations.push(call.clone());
                    continue;
                }
                if checkpoint.at == CheckpointAt::Start
                    && let Some((turn, start)) = turns.last_mut()
                    && turn.turn == checkpoint.turn
                {
                    *start = Some(checkpoint.snapshot.clone());
                }
                checkpoints.push((checkpoint.turn, checkpoint.snapshot.clone()));
            }
            _ => {}
        }
    }
    turns
        .into_iter()
        .map(|(mut turn, start)| {
            // A turn without a start checkpoint of its own changed no file: its files are
            // those of the next checkpoint, and it lists no changes.
            turn.restorable = (start.as_ref())
                .or(files_at_start(records, turn.turn).as_ref())
                .is_some_and(|id| store.load(id).is_ok());
            let start = start.and_then(|id| store.load(&id).ok());
            // The first checkpoint after the start: the turn's end, or the next one's start.
            let after = (checkpoints.iter())
                .filter(|(t, _)| *t >= turn.turn)
                .map(|(_, id)| id)
                .nth(1)
                .and_then(|id| store.load(id).ok());
            if let (Some(start), Some(after)) = (start, after) {
                turn.changes = after.changes(&start);
            }
            turn
        })
        .collect()
}

/// What to rewind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindRequest {
    /// Back to the start of this turn; `None` (and no `before_call`) undoes the last rewind.
    pub to_turn: Option<u32>,
    /// The files back to the checkpoint taken just before this escalated call ran (the
    /// conversation cannot go back to the middle of a turn).
    pub before_call: Option<String>,
    pub files: bool,
    pub conversation: bool,
    /// Go on although files changed outside dsh since its last checkpoint (they are in the
    /// snapshot taken before the rewind, so the rewind's undo brings them back).
    pub force: bool,
    /// Go on although these files changed outside dsh (the ones a preview showed), but not
    /// if others did since.
    pub accepted_outside: Vec<String>,
    /// Do it; otherwise only say what it would do.
    pub apply: bool,
}

/// What a rewind will do, or did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindReport {
    pub plan: RestorePlan,
    /// Files changed since the session's last checkpoint by something other than its turns.
    pub changed_outside: Vec<Change>,
    /// Files the target checkpoint left out for their size: they stay as they are.
    pub uncovered: Vec<String>,
    /// The record committed, once applied.
    pub applied: Option<RewindRecord>,
    /// Paths that could not be put back, with why.
    pub failed: Vec<(String, String)>,
}

/// Why a rewind cannot be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    #[error("the session has no turn {0}: `dsh rewind <session>` lists its turns")]
    NoTurn(u32),
    #[error(
        "turn {0}'s files cannot be restored: no checkpoint was taken at or after its start \
         (no turn since changed a file through dsh, or checkpoints were off) or it was pruned; \
         rewind the conversation only (--conversation)"
    )]
    NoCheckpoint(u32),
    #[error(
        "no checkpoint was taken before a call {0}: `dsh rewind <session>` lists the escalated \
         calls each turn has one for"
    )]
    NoCallCheckpoint(String),
    #[error(
        "the call id {call} names escalated calls of turns {turns}: the model's server repeats \
         call ids, so rewind to one of those turns' start instead",
        call = .0,
        turns = .1.join(", ")
    )]
    AmbiguousCall(String, Vec<String>),
    #[error(
        "a rewind to before a call takes the files back only (the conversation cannot stop in \
         the middle of a turn): give --files, or rewind to the turn's start"
    )]
    MidTurnConversation,
    #[error("there is no rewind to undo")]
    NothingToUndo,
    #[error("turns ran since the last rewind, so it cannot be undone; rewind to a turn instead")]
    TurnsSinceRewind,
    #[error(
        "files changed outside dsh since its last checkpoint: {}; keep them by leaving the \
         rewind, or give --force (they are kept in the snapshot taken before the rewind, \
         which `--undo` restores)",
        .0.join(", ")
    )]
    ChangedOutside(Vec<String>),
    #[error("checkpoint store: {0}")]
    Store(String),
    #[error("session log: {0}")]
    Log(String),
}

/// What a rewind takes back: the snapshot the files go back to (none: files stay), whether
/// files and conversation are taken back, and the turn whose start (or escalated call) the
/// files go back to (none for an undo).
struct RewindTarget {
    snapshot: Option<String>,
    files: bool,
    conversation: bool,
    turn: Option<u32>,
}

/// Finds what `request` takes back in the session's `records`.
fn rewind_target(records: &[Record], request: &RewindRequest) -> Result<RewindTarget, RewindError> {
    let mut target_turn = request.to_turn;
    let (snapshot, files, conversation) = match (&request.before_call, request.to_turn) {
        (Some(call), _) => {
            if request.conversation {
                return Err(RewindError::MidTurnConversation);
            }
            let found: Vec<(u32, String)> = (records.iter())
                .filter_map(|r| match r {
                    Record::Checkpoint(c)
                        if c.at == CheckpointAt::BeforeEscalation
                            && c.call_id.as_deref() == Some(call.as_str()) =>
                    {
                        Some((c.turn, c.snapshot.clone()))
                    }
                    _ => None,
                })
                .collect();
            let target = match found.as_slice() {
                [] => return Err(RewindError::NoCallCheckpoint(call.clone())),
                [(turn, snapshot)] => {
                    target_turn = Some(*turn);
                    snapshot.clone()
                }
                // A server that numbers its calls afresh in every answer repeats ids.
                several => {
                    return Err(RewindError::AmbiguousCall(
                        call.clone(),
                        several.iter().map(|(turn, _)| turn.to_string()).collect(),
                    ));
                }
            };
            (Some(target), true, false)
        }
        (None, Some(turn)) => {
            if !records
                .iter()
                .any(|r| matches!(r, Record::TurnStart { turn: t } if *t == turn))
            {
                return Err(RewindError::NoTurn(turn));
            }
            let start = files_at_start(records, turn);
            let target = match (request.files, start) {
                (false, _) => None,
                (true, Some(id)) => Some(id),
                (true, None) => return Err(RewindError::NoCheckpoint(turn)),
            };
            (target, request.files, request.conversation)
        }
        (None, None) => {
            let last = records
                .iter()
                .rposition(|r| matches!(r, Record::Rewind(_)))
                .ok_or(RewindError::NothingToUndo)?;
            let Record::Rewind(undone) = &records[last] else {
                return Err(RewindError::NothingToUndo);
            };
            if undone.undo {
                return Err(RewindError::NothingToUndo);
            }
            if records[last..]
                .iter()
                .any(|r| matches!(r, Record::TurnStart { .. }))
            {
                return Err(RewindError::TurnsSinceRewind);
            }
            let target = undone.backup.clone().filter(|_| undone.files);
            (target, undone.files, undone.conversation)
        }
    };
    Ok(RewindTarget {
        snapshot,
        files,
        conversation,
        turn: target_turn,
    })
}

/// Plans the rewind `request` asks of `session` and, when it says so and nothing stands in
/// the way, does it: the files put back, a `rewind` record committed (which takes the
/// conversation back when asked), the snapshot before it kept so that it can be undone.
pub fn rewind(
    session: &mut Session,
    checkpointer: &mut Checkpointer,
    request: &RewindRequest,
) -> Result<RewindReport, RewindError> {
    let store = checkpointer.store.clone();
    let records = session.logged_records();
    let store_error = |e: dsh_checkpoint::CheckpointError| RewindError::Store(e.to_string());
    let RewindTarget {
        snapshot: target,
        files,
        conversation,
        turn: target_turn,
    } = rewind_target(&records, request)?;
    let mut report = RewindReport {
        plan: RestorePlan::default(),
        changed_outside: Vec::new(),
        uncovered: Vec::new(),
        applied: None,
        failed: Vec::new(),
    };
    let mut backup = None;
    let mut snapshots = None;
    if let Some(target_id) = &target {
        let target = store.load(target_id).map_err(store_error)?;
        let known = session
            .last_known_files()
            .and_then(|id| store.load(id).ok());
        let current = checkpointer
            .current_for(&store, &target)
            .map_err(store_error)?;
        if let Some(known) = &known {
            report.changed_outside = current.changes(known);
        }
        // Changes made between the turns since the target (a file edited by hand after a
        // turn ended, before the next began) are in no turn either: they count as outside.
        let mut changed: std::collections::BTreeMap<String, Change> = (report.changed_outside)
            .drain(..)
            .map(|c| (c.path.clone(), c))
            .collect();
        for change in between_turns(&records, &store, target_turn) {
            changed.entry(change.path.clone()).or_insert(change);
        }
        report.changed_outside = changed.into_values().collect();
        report.plan = dsh_checkpoint::plan_restore(&target, &current);
        report.uncovered = target.uncovered.iter().map(|u| u.path.clone()).collect();
        backup = Some(store.save(&current).map_err(store_error)?);
        snapshots = Some((target, current));
    }
    if !request.apply {
        return Ok(report);
    }
    let unseen: Vec<&Change> = (report.changed_outside.iter())
        .filter(|c| !request.accepted_outside.contains(&c.path))
        .collect();
    if !unseen.is_empty() && !request.force {
        return Err(RewindError::ChangedOutside(
            (unseen.iter())
                .map(|c| format!("{} {}", c.kind.letter(), c.path))
                .collect(),
        ));
    }
    let (mut written, mut removed) = (0, 0);
    if let Some((target, current)) = &snapshots {
        let pinned = checkpointer.pinned().map_err(store_error)?;
        let done = store
            .restore_in(&pinned, target, current)
            .map_err(store_error)?;
        written = u32::try_from(done.written.len()).unwrap_or(u32::MAX);
        removed = u32::try_from(done.removed.len()).unwrap_or(u32::MAX);
        report.failed = done.failed;
    }
    let record = RewindRecord {
        to_turn: request.to_turn,
        before_call: request.before_call.clone(),
        undo: request.to_turn.is_none() && request.before_call.is_none(),
        files,
        conversation,
        backup,
        restored: target,
        written,
        removed,
    };
    session
        .commit(Record::Rewind(record.clone()))
        .map_err(|e| RewindError::Log(e.to_string()))?;
    report.applied = Some(record);
    // The next checkpoint starts from the files as the rewind left them: walked again.
    checkpointer.last = None;
    checkpointer.watch = None;
    Ok(report)
}

/// The checkpoint the files go back to for the start of `turn`: its own start checkpoint, or,
/// for a turn that ran no call that could change a file (and so took none), the first one
/// taken after it began: no turn changed a file in between.
pub(crate) fn files_at_start(records: &[Record], turn: u32) -> Option<String> {
    let began = records
        .iter()
        .position(|r| matches!(r, Record::TurnStart { turn: t } if *t == turn))?;
    records[began..].iter().find_map(|r| match r {
        Record::Checkpoint(c) if c.at != CheckpointAt::BeforeEscalation => Some(c.snapshot.clone()),
        _ => None,
    })
}

/// The files that changed between one turn's end and the next one's start, for the turns
/// from `from` on: changes no turn made.
fn between_turns(records: &[Record], store: &CheckpointStore, from: Option<u32>) -> Vec<Change> {
    let Some(from) = from else {
        return Vec::new();
    };
    let mut changes = Vec::new();
    // The files as the last turn (from `from` on) left them, and that turn.
    let mut ended: Option<(&str, u32)> = None;
    for record in records {
        match record {
            Record::Checkpoint(checkpoint) => match checkpoint.at {
                CheckpointAt::End if checkpoint.turn >= from => {
                    ended = Some((&checkpoint.snapshot, checkpoint.turn));
                }
                CheckpointAt::Start => {
                    // Only the very next turn's start: a turn whose start was not
                    // checkpointed must not have its own changes counted.
                    if let Some((end, turn)) = ended.take()
                        && checkpoint.turn == turn + 1
                        && end != checkpoint.snapshot
                        && let (Ok(end), Ok(start)) =
                            (store.load(end), store.load(&checkpoint.snapshot))
                    {
                        changes.extend(start.changes(&end));
                    }
                }
                CheckpointAt::BeforeEscalation => {}
                CheckpointAt::End => {}
            },
            // A rewind's restore is dsh's own change: the files it left are what the next
            // turn starts from.
            Record::Rewind(rewind) => {
                if let (Some(restored), Some((_, turn))) = (&rewind.restored, ended) {
                    ended = Some((restored, turn));
                }
            }
            _ => {}
        }
    }
    changes
}

/// The turns of the session `id` of the settings' working directory, read without opening
/// it (`dsh rewind <session>`).
pub fn list_turns(settings: &Settings, id: &str) -> Result<Vec<TurnFiles>, CoreError> {
    let path = crate::session_log_path(&settings.home().value, settings.cwd(), id)?;
    let records: Vec<Record> = (crate::log::read_log(&path)?.records.into_iter())
        .map(|envelope| envelope.record)
        .collect();
    Ok(session_turns(&records, &Checkpointer::new(settings)))
}

/// Opens the session `id` (locked against a run going on in it, its open turn closed as
/// any resume closes it) and rewinds it as `request` asks (`dsh rewind`).
pub fn rewind_session(
    settings: &Settings,
    id: &str,
    request: &RewindRequest,
) -> Result<Result<RewindReport, RewindError>, CoreError> {
    let options = crate::LogOptions {
        fsync: settings.fsync().value,
        zstd: settings.compression().value == dsh_config::Compression::Zstd,
    };
    let mut session = Session::resume(&settings.home().value, settings.cwd().clone(), id, options)?;
    let mut checkpointer = Checkpointer::new(settings);
    Ok(rewind(&mut session, &mut checkpointer, request))
}
