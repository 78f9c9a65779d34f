//! `dsh blame FILE[:LINE]`: for each line of a workspace's file, the session, turn and call
//! that last wrote it, found from the checkpoints the sessions of the workspace took and what
//! their calls sent, by content.
//!
//! The sessions' checkpoints make a history of the workspace's states: each turn's start, then
//! its end (and any checkpoint between, before an escalated call), one after another in the
//! order they were taken; a rewind goes back to the state it restored (and its undo to the
//! state before it), so what a rewound turn wrote is in no line's history any more. The file as
//! it is now is matched line by line against the latest state, that state against the one
//! before it, and so on: a line first found between a turn's start and a later state of the same
//! turn was written by that turn, a line first found between two turns (or after the last) was
//! written outside dsh, and a line as old as the first checkpoint was there before. Within its
//! turn, a line is the call's whose arguments hold it (the `content` of a `write`, the
//! `new_string` of an `edit`); failing that, the turn's one call that can change files (a
//! `bash` command), or none when there were several.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use dsh_protocol::{CheckpointAt, Record};
use serde::Serialize;

/// What wrote one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    pub session: String,
    pub turn: u32,
    /// The call that wrote it, when the turn's calls say which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The user's message the turn answered.
    pub message: String,
    /// When the turn's change was checkpointed (ms since the epoch).
    pub at: u64,
}

/// One line of the file, and what wrote it (`None`: no dsh session did).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlameLine {
    /// From 1.
    pub line: usize,
    pub text: String,
    pub origin: Option<Origin>,
}

/// Why a file cannot be blamed.
#[derive(Debug, thiserror::Error)]
pub enum BlameError {
    #[error("cannot read {path}: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not inside this directory ({cwd}): blame looks at the sessions recorded \
         here; run dsh blame from the folder the sessions ran in"
    )]
    Outside { path: PathBuf, cwd: PathBuf },
    #[error(
        "{path} is not a plain file (a folder, a pipe or a device): blame reads the files \
         sessions wrote"
    )]
    NotPlain { path: PathBuf },
    #[error("{path} is {size} bytes; blame reads files of up to {MAX_BLAMED} bytes")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{path} has {lines} lines; there is no line {line}")]
    NoLine {
        path: PathBuf,
        line: usize,
        lines: usize,
    },
}

impl BlameError {
    pub fn code(&self) -> &'static str {
        match self {
            BlameError::Unreadable { .. } => "FILE_NOT_FOUND",
            BlameError::Outside { .. } => "BLAME_OUTSIDE",
            BlameError::NoLine { .. } => "BLAME_LINE",
            BlameError::NotPlain { .. } | BlameError::TooLarge { .. } => "BLAME_FILE",
        }
    }
}

/// The largest file blamed: its lines are held, and matched against each state's.
const MAX_BLAMED: u64 = 32 << 20;

/// The bytes of the plain file at `full` (`file` as it was asked for), read from one open
/// descriptor: a pipe or a device put there by a command is refused, not waited on, and a file
/// past [`MAX_BLAMED`] is refused before it is read.
fn read_plain(full: &Path, file: &Path) -> Result<Vec<u8>, BlameError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let unreadable = |source| BlameError::Unreadable {
        path: file.to_path_buf(),
        source,
    };
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(full)
        .map_err(unreadable)?;
    let meta = opened.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(BlameError::NotPlain {
            path: file.to_path_buf(),
        });
    }
    if meta.len() > MAX_BLAMED {
        return Err(BlameError::TooLarge {
            path: file.to_path_buf(),
            size: meta.len(),
        });
    }
    let mut bytes = Vec::new();
    (opened.take(MAX_BLAMED))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    Ok(bytes)
}

/// A turn of a session that a state of the history belongs to.
#[derive(Debug, Clone)]
struct TurnRef {
    session: String,
    turn: u32,
    at: u64,
}

/// A state of the workspace: a checkpoint, what came before it, and whether the difference
/// is a turn's doing (the turn) or not (`None`: outside dsh).
struct State {
    snapshot: String,
    parent: Option<usize>,
    by: Option<TurnRef>,
}

/// A call: its id, its tool's name and its arguments as the model sent them.
type Call = (String, String, String);

/// One session's turns as blame needs them: the user's message and the calls of each.
#[derive(Default)]
struct Turns {
    messages: HashMap<(String, u32), String>,
    calls: HashMap<(String, u32), Vec<Call>>,
}

/// Blames `file` (in `cwd`, whose sessions and checkpoints are under `home`), every line or the
/// one asked.
pub fn blame_file(
    home: &Path,
    cwd: &Path,
    file: &Path,
    only: Option<usize>,
) -> Result<Vec<BlameLine>, BlameError> {
    let full = cwd.join(file);
    let unreadable = |source| BlameError::Unreadable {
        path: file.to_path_buf(),
        source,
    };
    let full = std::fs::canonicalize(&full).map_err(unreadable)?;
    let relative = full
        .strip_prefix(cwd)
        .map_err(|_| BlameError::Outside {
            path: file.to_path_buf(),
            cwd: cwd.to_path_buf(),
        })?
        .to_string_lossy()
        .into_owned();
    let bytes = read_plain(&full, file)?;
    let now: Vec<String> = lines_of(&bytes);
    if let Some(line) = only.filter(|line| *line == 0 || *line > now.len()) {
        return Err(BlameError::NoLine {
            path: file.to_path_buf(),
            line,
            lines: now.len(),
        });
    }
    let (states, head, turns) = history(home, cwd);
    let store = crate::checkpoints::store_for(home, cwd);
    let mut contents: HashMap<String, Vec<String>> = HashMap::new();
    let mut content = |snapshot: &str| -> Vec<String> {
        (contents.entry(snapshot.to_owned()))
            .or_insert_with(|| {
                let Ok(loaded) = store.load(snapshot) else {
                    return Vec::new();
                };
                match loaded.entries.get(&relative) {
                    Some(dsh_checkpoint::Entry::File { hash, .. }) => store
                        .content(hash)
                        .map(|b| lines_of(&b))
                        .unwrap_or_default(),
                    _ => Vec::new(),
                }
            })
            .clone()
    };
    let mut origins: Vec<Option<Origin>> = vec![None; now.len()];
    // Lines still followed back: (line of the file now, its index in the state looked at).
    if let Some(head) = head {
        let latest = content(&states[head].snapshot);
        let matched = match_lines(&now, &latest);
        let mut pending: Vec<(usize, usize)> = (0..now.len())
            .filter_map(|i| matched[i].map(|j| (i, j)))
            .collect();
        let mut at = head;
        let mut version = latest;
        while !pending.is_empty() {
            let Some(parent) = states[at].parent else {
                break;
            };
            let older = content(&states[parent].snapshot);
            let matched = match_lines(&version, &older);
            let mut still = Vec::new();
            for (line, index) in pending {
                match matched[index] {
                    Some(before) => still.push((line, before)),
                    None => {
                        origins[line] = states[at]
                            .by
                            .as_ref()
                            .map(|by| origin(by, &now[line], &turns));
                    }
                }
            }
            pending = still;
            at = parent;
            version = older;
        }
    }
    Ok((now.into_iter().zip(origins).enumerate())
        .filter(|(i, _)| only.is_none_or(|line| line == i + 1))
        .map(|(i, (text, origin))| BlameLine {
            line: i + 1,
            text,
            origin,
        })
        .collect())
}

/// The file's lines, without their ends.
fn lines_of(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What the turn `by` wrote `text` with.
fn origin(by: &TurnRef, text: &str, turns: &Turns) -> Origin {
    let key = (by.session.clone(), by.turn);
    let calls = turns.calls.get(&key).map(Vec::as_slice).unwrap_or_default();
    let holds = |arguments: &str| {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(arguments) else {
            return false;
        };
        strings(&value)
            .iter()
            .any(|s| s.lines().any(|line| line == text))
    };
    let found = (calls.iter().rev())
        .find(|(_, _, arguments)| !text.trim().is_empty() && holds(arguments))
        .or_else(|| {
            let changing: Vec<_> = (calls.iter())
                .filter(|(_, name, _)| !READ_ONLY.contains(&name.as_str()))
                .collect();
            (changing.len() == 1).then(|| changing[0])
        });
    Origin {
        session: by.session.clone(),
        turn: by.turn,
        call_id: found.map(|(id, _, _)| id.clone()),
        tool: found.map(|(_, name, _)| name.clone()),
        message: turns.messages.get(&key).cloned().unwrap_or_default(),
        at: by.at,
    }
}

/// The built-in tools that change no file: a turn's other calls are the ones that may have.
const READ_ONLY: &[&str] = &[
    "read",
    "grep",
    "glob",
    "ls",
    "web_fetch",
    "web_search",
    "todo_write",
    "present",
    "ask_user_question",
    "list_agents",
];

/// Every string in a JSON value.
fn strings(value: &serde_json::Value) -> Vec<&str> {
    match value {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Array(items) => items.iter().flat_map(strings).collect(),
        serde_json::Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// The states of the workspace the sessions of `cwd` checkpointed, the latest one, and their
/// turns.
fn history(home: &Path, cwd: &Path) -> (Vec<State>, Option<usize>, Turns) {
    let mut events = Vec::new();
    let mut turns = Turns::default();
    for summary in crate::list_sessions(home, cwd) {
        let Ok(log) = crate::read_log(Path::new(&summary.path)) else {
            continue;
        };
        let session = log.header.id.clone();
        for envelope in log.records {
            match &envelope.record {
                Record::UserMessage {
                    turn,
                    message,
                    instructions: None,
                } => {
                    (turns.messages)
                        .entry((session.clone(), *turn))
                        .or_insert_with(|| message.text());
                }
                Record::ToolCall(call) => {
                    (turns.calls.entry((session.clone(), call.turn)).or_default()).push((
                        call.call_id.clone(),
                        call.name.clone(),
                        call.arguments.clone(),
                    ));
                }
                Record::Checkpoint(_) | Record::Rewind(_) => {
                    events.push((
                        envelope.time,
                        envelope.seq,
                        session.clone(),
                        envelope.record,
                    ));
                }
                _ => {}
            }
        }
    }
    events.sort_by(|a, b| (a.0, &a.2, a.1).cmp(&(b.0, &b.2, b.1)));
    let mut states: Vec<State> = Vec::new();
    let mut head: Option<usize> = None;
    // A rewind's backup snapshot, and the state before that rewind: what its undo goes back to.
    let mut backups: HashMap<String, Option<usize>> = HashMap::new();
    for (time, _, session, record) in events {
        match record {
            Record::Checkpoint(checkpoint) => {
                let by = (checkpoint.at != CheckpointAt::Start).then_some(TurnRef {
                    session,
                    turn: checkpoint.turn,
                    at: time,
                });
                states.push(State {
                    snapshot: checkpoint.snapshot,
                    parent: head,
                    by,
                });
                head = Some(states.len() - 1);
            }
            Record::Rewind(rewind) => {
                let Some(restored) = rewind.restored else {
                    continue;
                };
                let before = head;
                let back = if rewind.undo {
                    backups.get(&restored).copied().flatten()
                } else {
                    states.iter().rposition(|s| s.snapshot == restored)
                };
                head = back.or_else(|| {
                    states.push(State {
                        snapshot: restored,
                        parent: head,
                        by: None,
                    });
                    Some(states.len() - 1)
                });
                if let Some(backup) = rewind.backup {
                    backups.insert(backup, before);
                }
            }
            _ => {}
        }
    }
    (states, head, turns)
}

/// For each line of `new`, the line of `old` it is (a longest common subsequence of the two,
/// after their common start and end), or `None` for a line `old` does not have.
fn match_lines(new: &[String], old: &[String]) -> Vec<Option<usize>> {
    let mut out = vec![None; new.len()];
    let prefix = (new.iter().zip(old)).take_while(|(a, b)| a == b).count();
    let suffix = (new[prefix..].iter().rev())
        .zip(old[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    for (i, slot) in out.iter_mut().enumerate().take(prefix) {
        *slot = Some(i);
    }
    for k in 0..suffix {
        out[new.len() - 1 - k] = Some(old.len() - 1 - k);
    }
    let (a, b) = (
        &new[prefix..new.len() - suffix],
        &old[prefix..old.len() - suffix],
    );
    // The table of a longest common subsequence, up to 4 million cells; past that, each line
    // is matched to the next equal line of `old`, in order.
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        let mut from = 0;
        for (i, line) in a.iter().enumerate() {
            if let Some(j) = b[from..].iter().position(|l| l == line) {
                out[prefix + i] = Some(prefix + from + j);
                from += j + 1;
            }
        }
        return out;
    }
    let width = b.len() + 1;
    let mut table = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i * width + j] = if a[i] == b[j] {
                table[(i + 1) * width + j + 1] + 1
            } else {
                table[(i + 1) * width + j].max(table[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out[prefix + i] = Some(prefix + j);
            i += 1;
            j += 1;
        } else if table[(i + 1) * width + j] >= table[i * width + j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn lines_are_matched_by_a_longest_common_subsequence() {
        let old = lines("a\nb\nc\nd");
        let new = lines("a\nx\nc\nd\ne");
        assert_eq!(
            match_lines(&new, &old),
            vec![Some(0), None, Some(2), Some(3), None]
        );
        assert_eq!(
            match_lines(&lines("b\na"), &lines("a\nb"))
                .iter()
                .flatten()
                .count(),
            1
        );
    }
}
