//! What a session did, turn by turn, read from its log and its workspace's checkpoints: the
//! user's message, the model, the calls, what the turn billed and the files it changed. What
//! `dsh sessions diff` compares and `dsh replay` reports beside a replay's own.
//!
//! A session is found by its id among every workspace's sessions, so that two sessions of
//! different folders (a session and its replay) can be read side by side.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dsh_protocol::{Record, SessionHeader, Usage};
use serde::Serialize;

use crate::CoreError;
use crate::checkpoints::{Change, ChangeKind};

/// One call of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFacts {
    pub turn: u32,
    pub call_id: String,
    pub tool: String,
    /// The arguments as the model sent them: JSON when they parse, else the text.
    pub arguments: serde_json::Value,
}

/// One turn of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnFacts {
    pub turn: u32,
    /// The user's message the turn answered.
    pub message: String,
    /// The model that answered (its last answer's), when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub calls: Vec<CallFacts>,
    /// What it billed: its steps (a subagent's requests included, as the steps count them)
    /// and the title request made after it.
    pub usage: Usage,
    /// What it changed in the files, from its start checkpoint to the next one; empty for a
    /// turn that took none (it ran no call that could change a file).
    pub files: Vec<Change>,
    /// Taken back by a rewind of the conversation (and not brought back by its undo): the
    /// conversation the session goes on with does not hold it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rewound: bool,
    /// How it ended (`completed`, `interrupted`, ...); none for a turn cut off by a crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

/// A session as read: its header, its turns, and where its log is.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub header: SessionHeader,
    pub path: PathBuf,
    pub turns: Vec<TurnFacts>,
    /// The records, for what else a reader needs of them (checkpoints, permissions).
    pub(crate) records: Vec<Record>,
}

impl SessionFacts {
    /// The turns the conversation still holds, in order.
    pub fn kept_turns(&self) -> impl Iterator<Item = &TurnFacts> {
        self.turns.iter().filter(|t| !t.rewound)
    }

    /// What every step of the session billed, rewound turns included.
    pub fn usage(&self) -> Usage {
        Usage::sum(self.turns.iter().map(|t| &t.usage))
    }

    /// The files the kept turns changed, each once, with what they came to: a file a turn
    /// added and a later one deleted is no change.
    pub fn files(&self) -> Vec<Change> {
        net_changes(self.kept_turns().map(|t| t.files.as_slice()))
    }
}

/// Folds the changes of several turns, in order, into one per path.
pub(crate) fn net_changes<'a>(turns: impl Iterator<Item = &'a [Change]>) -> Vec<Change> {
    let mut net: BTreeMap<String, ChangeKind> = BTreeMap::new();
    for changes in turns {
        for change in changes {
            let folded = match (net.get(&change.path), change.kind) {
                (Some(ChangeKind::Added), ChangeKind::Deleted) => None,
                (Some(ChangeKind::Added), _) => Some(ChangeKind::Added),
                (Some(ChangeKind::Deleted), ChangeKind::Added) => Some(ChangeKind::Modified),
                (_, kind) => Some(kind),
            };
            match folded {
                Some(kind) => net.insert(change.path.clone(), kind),
                None => net.remove(&change.path),
            };
        }
    }
    (net.into_iter())
        .map(|(path, kind)| Change { path, kind })
        .collect()
}

/// The log of session `id`, whichever workspace recorded it.
pub fn find_session_anywhere(home: &Path, id: &str) -> Result<PathBuf, CoreError> {
    crate::session::check_id(id)?;
    let unknown = || CoreError::UnknownSession {
        id: id.to_owned(),
        root: home.join("sessions"),
    };
    let folders = std::fs::read_dir(home.join("sessions")).map_err(|_| unknown())?;
    (folders.filter_map(Result::ok))
        .find_map(|folder| crate::session::log_file_in(&folder.path().join(id)))
        .ok_or_else(unknown)
}

/// Reads session `id` (from any workspace) with what each of its turns did.
pub fn session_facts(home: &Path, id: &str) -> Result<SessionFacts, CoreError> {
    let path = find_session_anywhere(home, id)?;
    facts_of(home, &path)
}

/// Reads the session whose log is `path`.
pub(crate) fn facts_of(home: &Path, path: &Path) -> Result<SessionFacts, CoreError> {
    let log = crate::log::read_log(path)?;
    let records: Vec<Record> = log.records.into_iter().map(|e| e.record).collect();
    let store = crate::checkpoints::store_for(home, Path::new(&log.header.cwd));
    let files: BTreeMap<u32, Vec<Change>> = (crate::checkpoints::turns_in(&records, &store))
        .into_iter()
        .map(|t| (t.turn, t.changes))
        .collect();
    let mut turns: Vec<TurnFacts> = Vec::new();
    // The turns each conversation rewind took back, so that its undo brings them back.
    let mut taken_back: Vec<Vec<u32>> = Vec::new();
    for record in &records {
        match record {
            Record::TurnStart { turn } => turns.push(TurnFacts {
                turn: *turn,
                message: String::new(),
                model: None,
                calls: Vec::new(),
                usage: Usage::default(),
                files: files.get(turn).cloned().unwrap_or_default(),
                rewound: false,
                ended: None,
            }),
            Record::TurnEnd { turn, reason } => {
                if let Some(t) = turn_of(&mut turns, *turn) {
                    t.ended = Some(dsh_protocol::view::reason_kind(reason));
                }
            }
            Record::UserMessage {
                turn,
                message,
                instructions: None,
            } => {
                if let Some(t) = turn_of(&mut turns, *turn).filter(|t| t.message.is_empty()) {
                    t.message = message.text();
                }
            }
            Record::AssistantMessage(answer) => {
                if let Some(t) = turn_of(&mut turns, answer.turn) {
                    t.model = Some(answer.model.clone());
                }
            }
            Record::ToolCall(call) => {
                if let Some(t) = turn_of(&mut turns, call.turn) {
                    t.calls.push(CallFacts {
                        turn: call.turn,
                        call_id: call.call_id.clone(),
                        tool: call.name.clone(),
                        arguments: serde_json::from_str(&call.arguments)
                            .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone())),
                    });
                }
            }
            Record::StepEnd { turn, usage, .. } => {
                if let Some(t) = turn_of(&mut turns, *turn) {
                    t.usage.add(usage);
                }
            }
            // The title request after the turn is billed as the session's, in no step.
            Record::SessionTitle(titled) => {
                if let Some(t) = turn_of(&mut turns, titled.turn) {
                    t.usage.add(&titled.usage);
                }
            }
            Record::Rewind(rewind) if rewind.conversation => {
                if rewind.undo {
                    for turn in taken_back.pop().unwrap_or_default() {
                        if let Some(t) = turn_of(&mut turns, turn) {
                            t.rewound = false;
                        }
                    }
                } else if let Some(to) = rewind.to_turn {
                    let mut now = Vec::new();
                    for t in turns.iter_mut().filter(|t| t.turn >= to && !t.rewound) {
                        t.rewound = true;
                        now.push(t.turn);
                    }
                    taken_back.push(now);
                }
            }
            _ => {}
        }
    }
    Ok(SessionFacts {
        header: log.header,
        path: path.to_path_buf(),
        turns,
        records,
    })
}

/// The latest turn numbered `turn` (turn numbers go on after a rewind, so there is one).
fn turn_of(turns: &mut [TurnFacts], turn: u32) -> Option<&mut TurnFacts> {
    turns.iter_mut().rev().find(|t| t.turn == turn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, kind: ChangeKind) -> Change {
        Change {
            path: path.into(),
            kind,
        }
    }

    #[test]
    fn changes_fold_into_what_they_came_to() {
        let first = [
            change("a", ChangeKind::Added),
            change("b", ChangeKind::Deleted),
            change("c", ChangeKind::Modified),
        ];
        let second = [
            change("a", ChangeKind::Modified),
            change("b", ChangeKind::Added),
            change("d", ChangeKind::Added),
        ];
        let third = [change("d", ChangeKind::Deleted)];
        let net = net_changes([&first[..], &second, &third].into_iter());
        assert_eq!(
            net,
            [
                change("a", ChangeKind::Added),
                change("b", ChangeKind::Modified),
                change("c", ChangeKind::Modified),
            ]
        );
    }
}
