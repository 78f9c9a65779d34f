//! `dsh replay SESSION --model ROUTE`: a session's user turns run again on another route, in
//! a scratch copy of the workspace as it was when the session began, as a new session; then
//! both side by side, turn by turn.
//!
//! The original session and its workspace are only read: the files come from the checkpoint
//! taken at the start of the session's first turn (or, for a turn that changed no file, the
//! first one after it), restored by the checkpoint store into a folder of its own. In a Git
//! workspace that folder is first made a clone sharing the repository's objects (`git clone
//! --shared --no-checkout`, which writes nothing into the user's repository), so the replay's
//! commands see the same history; the files are then the checkpoint's, whatever commit the
//! repository is on now. The front end runs the turns through a run it builds as any other
//! ([`crate::AgentBuilder`]); this module plans, prepares the folder and compares.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dsh_checkpoint::{CheckpointStore, Snapshot};
use dsh_protocol::{CheckpointAt, Record, Usage};
use serde::Serialize;

use crate::CoreError;
use crate::checkpoints::Change;
use crate::session_facts::{SessionFacts, TurnFacts, session_facts};

/// Why a replay cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Session(#[from] CoreError),
    #[error(
        "session \"{id}\" has no turn {to}: its turns are 1 to {last}\nhint: leave --to out to \
         replay every turn"
    )]
    NoTurn { id: String, to: u32, last: u32 },
    #[error("session \"{id}\" has no turn to replay\nhint: replay a session that ran a task")]
    NoTurns { id: String },
    #[error(
        "session \"{id}\" took no checkpoint of its files (no turn changed a file through dsh, \
         checkpoints were off, or they were pruned), so the files it began with are not known\n\
         hint: a replay starts from those files and never from the workspace as it is now"
    )]
    NoCheckpoint { id: String },
    #[error("cannot make the scratch folder {}: {source}\nhint: {hint}", path.display())]
    Scratch {
        path: PathBuf,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("cannot restore the files of checkpoint {snapshot}: {why}\nhint: {hint}")]
    Restore {
        snapshot: String,
        why: String,
        hint: &'static str,
    },
}

impl ReplayError {
    pub fn code(&self) -> &'static str {
        match self {
            ReplayError::Session(error) => error.code(),
            ReplayError::NoTurn { .. } | ReplayError::NoTurns { .. } => "REPLAY_TURN",
            ReplayError::NoCheckpoint { .. } => "REPLAY_NO_CHECKPOINT",
            ReplayError::Scratch { .. } | ReplayError::Restore { .. } => "REPLAY_SCRATCH",
        }
    }
}

/// What a replay will run, and where its files come from.
#[derive(Debug)]
pub struct ReplayPlan {
    original: SessionFacts,
    /// The turns to run again: those the conversation holds, up to `--to`.
    turns: Vec<TurnFacts>,
    /// The snapshot the files start from, in `store`.
    start: String,
    store: CheckpointStore,
}

/// The scratch folder a replay runs in.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// The folder the replay's run works in (the workspace's place in the clone, in Git).
    pub workspace: PathBuf,
    /// The folder made for it, removed whole at the end unless kept.
    pub root: PathBuf,
    /// Whether it is a clone of the workspace's repository.
    pub git: bool,
    /// Files the checkpoint left out (too large, holding secrets): not in the scratch folder.
    pub not_restored: Vec<String>,
}

impl Scratch {
    /// Removes the folder made for the replay.
    pub fn remove(&self) -> std::io::Result<()> {
        std::fs::remove_dir_all(&self.root)
    }
}

/// One side of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSide {
    /// Its number in its own session.
    pub turn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub usage: Usage,
    pub calls: usize,
    pub files: Vec<Change>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl TurnSide {
    fn of(turn: &TurnFacts) -> TurnSide {
        TurnSide {
            turn: turn.turn,
            model: turn.model.clone(),
            usage: turn.usage,
            calls: turn.calls.len(),
            files: turn.files.clone(),
            ended: turn.ended.clone(),
        }
    }
}

/// A turn replayed: the user's message, and what each session did with it (`replay` none for a
/// turn the replay did not reach).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayTurn {
    pub message: String,
    pub original: TurnSide,
    pub replay: Option<TurnSide>,
}

/// Both sessions' totals over the turns replayed.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayTotals {
    pub usage: Usage,
    pub calls: usize,
    pub files: Vec<Change>,
}

/// A replay, side by side with its original.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReport {
    pub original: String,
    pub replay: String,
    /// The route it ran on, as given.
    pub model: String,
    pub turns: Vec<ReplayTurn>,
    pub totals: SideBySide,
    /// Whether the files the replay ended with are the original's after the same turns; null
    /// when the original's are not known (no checkpoint after them).
    pub final_tree_matches: Option<bool>,
    /// Where they differ: how the replay's files differ from the original's.
    pub final_tree_differs: Vec<Change>,
    /// The scratch folder, and whether it was kept.
    pub scratch: String,
    pub kept: bool,
    pub git: bool,
    pub not_restored: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideBySide {
    pub original: ReplayTotals,
    pub replay: ReplayTotals,
}

/// Plans the replay of session `id` (any workspace's), up to its turn `to`.
pub fn plan_replay(home: &Path, id: &str, to: Option<u32>) -> Result<ReplayPlan, ReplayError> {
    let original = session_facts(home, id)?;
    let id = original.header.id.clone();
    let kept: Vec<TurnFacts> = original.kept_turns().cloned().collect();
    let last = kept
        .last()
        .map(|t| t.turn)
        .ok_or(ReplayError::NoTurns { id: id.clone() })?;
    let turns: Vec<TurnFacts> = match to {
        Some(to) if !kept.iter().any(|t| t.turn == to) => {
            return Err(ReplayError::NoTurn { id, to, last });
        }
        Some(to) => kept.into_iter().filter(|t| t.turn <= to).collect(),
        None => kept,
    };
    let start = crate::checkpoints::files_at_start(&original.records, turns[0].turn)
        .ok_or(ReplayError::NoCheckpoint { id })?;
    let store = crate::checkpoints::store_for(home, Path::new(&original.header.cwd));
    Ok(ReplayPlan {
        original,
        turns,
        start,
        store,
    })
}

impl ReplayPlan {
    pub fn original(&self) -> &SessionFacts {
        &self.original
    }

    /// The turns to run again, in order.
    pub fn turns(&self) -> &[TurnFacts] {
        &self.turns
    }

    /// The permission mode and approval policy the original session last ran under.
    pub fn permissions(&self) -> Option<(String, String)> {
        (self.original.records.iter().rev()).find_map(|record| match record {
            Record::PermissionMode(p) => Some((p.mode.clone(), p.approval.clone())),
            _ => None,
        })
    }

    /// Makes the scratch folder under `parent` and restores into it the files the session
    /// began with.
    pub fn make_scratch(&self, parent: &Path) -> Result<Scratch, ReplayError> {
        let target = self
            .store
            .load(&self.start)
            .map_err(|e| ReplayError::Restore {
                snapshot: self.start.clone(),
                why: e.to_string(),
                hint: "the checkpoint may have been pruned (checkpoints.keep_days)",
            })?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let tail: String = (self.original.header.id.chars().rev().take(8))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let root = parent.join(format!("dsh-replay-{tail}-{stamp}"));
        let scratch_error = |source| ReplayError::Scratch {
            path: root.clone(),
            source,
            hint: "set TMPDIR to a folder you can write",
        };
        make_private_folder(&root).map_err(scratch_error)?;
        // A folder that could not be filled is not left behind.
        self.fill(root.clone(), &target).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&root);
        })
    }

    /// Restores `target` into the new folder `root` (a clone of the repository first, in Git).
    fn fill(&self, root: PathBuf, target: &Snapshot) -> Result<Scratch, ReplayError> {
        let scratch_error = |source| ReplayError::Scratch {
            path: root.clone(),
            source,
            hint: "set TMPDIR to a folder you can write",
        };
        let cwd = Path::new(&self.original.header.cwd);
        let (workspace, git) = match clone_repository(cwd, &root) {
            Some(prefix) => (root.join(prefix), true),
            None => (root.clone(), false),
        };
        std::fs::create_dir_all(&workspace).map_err(scratch_error)?;
        let restored = (self.store)
            .restore(&workspace, target, &Snapshot::default())
            .map_err(|e| ReplayError::Restore {
                snapshot: self.start.clone(),
                why: e.to_string(),
                hint: "the checkpoint store may be damaged; `dsh rewind SESSION` lists what it holds",
            })?;
        let mut not_restored: Vec<String> =
            (target.uncovered.iter()).map(|u| u.path.clone()).collect();
        not_restored.extend(restored.failed.into_iter().map(|(path, _)| path));
        if git {
            // The index as the repository's commit has it, so `git status` and `git diff` in
            // the replay show the session's uncommitted changes as uncommitted.
            let _ = git_in(&root).args(["reset", "--quiet"]).status();
        }
        Ok(Scratch {
            workspace,
            root,
            git,
            not_restored,
        })
    }

    /// The replay, once run as session `replay` in `scratch` on `model`, beside the original.
    pub fn report(
        &self,
        home: &Path,
        replay: &str,
        model: &str,
        scratch: &Scratch,
        kept: bool,
        settings: &crate::Settings,
    ) -> Result<ReplayReport, ReplayError> {
        let replayed = session_facts(home, replay)?;
        let replayed: Vec<&TurnFacts> = replayed.kept_turns().collect();
        let turns: Vec<ReplayTurn> = (self.turns.iter().enumerate())
            .map(|(i, turn)| ReplayTurn {
                message: turn.message.clone(),
                original: TurnSide::of(turn),
                replay: replayed.get(i).map(|t| TurnSide::of(t)),
            })
            .collect();
        let totals = |turns: &mut dyn Iterator<Item = &TurnFacts>| {
            let turns: Vec<&TurnFacts> = turns.collect();
            ReplayTotals {
                usage: Usage::sum(turns.iter().map(|t| &t.usage)),
                calls: turns.iter().map(|t| t.calls.len()).sum(),
                files: crate::session_facts::net_changes(turns.iter().map(|t| t.files.as_slice())),
            }
        };
        let (matches, differs) = match self.original_final_tree() {
            Some(original) => {
                let home = &settings.home().value;
                let coverage = crate::checkpoints::coverage(settings.checkpoints(), home);
                let store = crate::checkpoints::store_for(home, &scratch.workspace);
                let now = store
                    .take(&scratch.workspace, &coverage, None)
                    .map_err(|e| ReplayError::Restore {
                        snapshot: "the replay's files".into(),
                        why: e.to_string(),
                        hint: "the scratch folder was changed while it was read",
                    })?;
                let differs = now.changes(&original);
                (Some(differs.is_empty()), differs)
            }
            None => (None, Vec::new()),
        };
        Ok(ReplayReport {
            original: self.original.header.id.clone(),
            replay: replay.to_owned(),
            model: model.to_owned(),
            totals: SideBySide {
                original: totals(&mut self.turns.iter()),
                replay: totals(&mut replayed.iter().copied().take(self.turns.len())),
            },
            turns,
            final_tree_matches: matches,
            final_tree_differs: differs,
            scratch: scratch.workspace.display().to_string(),
            kept,
            git: scratch.git,
            not_restored: scratch.not_restored.clone(),
        })
    }

    /// The original's files after the last turn replayed: that turn's end checkpoint, or, for
    /// a turn that changed no file, the next one taken after its start, or the last one before.
    fn original_final_tree(&self) -> Option<Snapshot> {
        let last = self.turns.last()?.turn;
        let records = &self.original.records;
        let began = (records.iter())
            .rposition(|r| matches!(r, Record::TurnStart { turn } if *turn == last))?;
        let file_states = |r: &Record| match r {
            Record::Checkpoint(c) if c.at != CheckpointAt::BeforeEscalation => {
                Some(c.snapshot.clone())
            }
            Record::Rewind(rewind) => rewind.restored.clone(),
            _ => None,
        };
        let id = (records[began..].iter())
            .find_map(|r| match r {
                Record::Checkpoint(c) if c.at == CheckpointAt::End && c.turn == last => {
                    Some(c.snapshot.clone())
                }
                _ => None,
            })
            .or_else(|| {
                (records[began..].iter()).find_map(|r| match r {
                    Record::Checkpoint(c) if c.at == CheckpointAt::Start && c.turn > last => {
                        Some(c.snapshot.clone())
                    }
                    _ => None,
                })
            })
            .or_else(|| records[..began].iter().rev().find_map(file_states))?;
        self.store.load(&id).ok()
    }
}

/// A folder only its owner can enter.
fn make_private_folder(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// `git` with the user's repository variables cleared, working in `dir`.
fn git_in(dir: &Path) -> Command {
    let mut git = Command::new("git");
    git.current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    git
}

/// Clones the repository `cwd` is in (if any) into the empty folder `into`, sharing its
/// objects and checking nothing out; the workspace's place in the clone (`""` at its top).
/// `None` outside Git, or when the clone cannot be made (then the replay is a plain copy).
fn clone_repository(cwd: &Path, into: &Path) -> Option<PathBuf> {
    let top = cwd
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())?;
    let prefix = cwd.strip_prefix(top).ok()?.to_path_buf();
    let cloned = git_in(into)
        .args(["clone", "--quiet", "--shared", "--no-checkout", "--"])
        .arg(top)
        .arg(".")
        .status()
        .is_ok_and(|s| s.success());
    if !cloned {
        // Whatever a failed clone left is cleared, for the plain copy.
        if let Ok(entries) = std::fs::read_dir(into) {
            for entry in entries.filter_map(Result::ok) {
                let _ = std::fs::remove_dir_all(entry.path())
                    .or_else(|_| std::fs::remove_file(entry.path()));
            }
        }
        return None;
    }
    Some(prefix)
}
