//! `dsh sessions diff A B`: where two sessions of the same task went separate ways. Their
//! calls (those of the turns each conversation still holds) are compared in order, by tool
//! and arguments: the first pair that differs, or the first call one made and the other did
//! not, is where they diverged. Beside it, what each billed and the files each changed.
//!
//! The sessions may be of different workspaces (a session and its replay, `dsh replay`): that
//! is said, not refused.

use std::path::Path;

use dsh_protocol::Usage;
use serde::Serialize;

use crate::CoreError;
use crate::checkpoints::Change;
use crate::session_facts::{CallFacts, SessionFacts, session_facts};

/// Two sessions compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDiff {
    pub a: DiffSide,
    pub b: DiffSide,
    /// Whether both were recorded in the same folder.
    pub same_workspace: bool,
    /// Whether their first turns answered the same message.
    pub same_task: bool,
    /// How many calls both made alike, in order, before they differ.
    pub common_calls: usize,
    /// Where they went separate ways; `None` when they made the same calls.
    pub divergence: Option<Divergence>,
}

/// One of the two sessions, summed up.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffSide {
    pub id: String,
    pub cwd: String,
    /// The models that answered, in the order they first did.
    pub models: Vec<String>,
    /// Turns the conversation holds (rewound ones aside).
    pub turns: usize,
    pub calls: usize,
    /// What every step billed, rewound turns included.
    pub usage: Usage,
    /// What the kept turns changed in the files, each path once.
    pub files: Vec<Change>,
}

/// The first call in which the two differ: each side's (none for a session that made no more
/// calls), with the user's message its turn answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    /// The call's place in each session's calls, from 1.
    pub call: usize,
    pub a: Option<DivergedCall>,
    pub b: Option<DivergedCall>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DivergedCall {
    #[serde(flatten)]
    pub call: CallFacts,
    pub message: String,
}

/// Compares the sessions `a` and `b`, each found among every workspace's sessions.
pub fn diff_sessions(home: &Path, a: &str, b: &str) -> Result<SessionDiff, CoreError> {
    let (a, b) = (session_facts(home, a)?, session_facts(home, b)?);
    Ok(compare(&a, &b))
}

/// The calls of the kept turns, each with its turn's message.
fn calls(facts: &SessionFacts) -> Vec<(&CallFacts, &str)> {
    (facts.kept_turns())
        .flat_map(|t| t.calls.iter().map(|c| (c, t.message.as_str())))
        .collect()
}

pub(crate) fn compare(a: &SessionFacts, b: &SessionFacts) -> SessionDiff {
    let (calls_a, calls_b) = (calls(a), calls(b));
    let alike = |x: &CallFacts, y: &CallFacts| x.tool == y.tool && x.arguments == y.arguments;
    let common_calls = (calls_a.iter().zip(&calls_b))
        .take_while(|((x, _), (y, _))| alike(x, y))
        .count();
    let diverged = |calls: &[(&CallFacts, &str)]| {
        calls.get(common_calls).map(|(call, message)| DivergedCall {
            call: (*call).clone(),
            message: (*message).to_owned(),
        })
    };
    let divergence = (common_calls < calls_a.len().max(calls_b.len())).then(|| Divergence {
        call: common_calls + 1,
        a: diverged(&calls_a),
        b: diverged(&calls_b),
    });
    let first_task = |f: &SessionFacts| f.kept_turns().next().map(|t| t.message.clone());
    SessionDiff {
        a: side(a, calls_a.len()),
        b: side(b, calls_b.len()),
        same_workspace: a.header.cwd == b.header.cwd,
        same_task: first_task(a) == first_task(b),
        common_calls,
        divergence,
    }
}

fn side(facts: &SessionFacts, calls: usize) -> DiffSide {
    let mut models: Vec<String> = Vec::new();
    for model in facts.turns.iter().filter_map(|t| t.model.as_ref()) {
        if !models.contains(model) {
            models.push(model.clone());
        }
    }
    DiffSide {
        id: facts.header.id.clone(),
        cwd: facts.header.cwd.clone(),
        models,
        turns: facts.kept_turns().count(),
        calls,
        usage: facts.usage(),
        files: facts.files(),
    }
}
