//! `dsh rewind`: a session's turns with what each changed in the files, and going back to the
//! start of one (files, conversation or both), or undoing the last rewind. Nothing changes
//! without `--yes`: the plan is shown first.

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::checkpoints::{
    RewindError, RewindReport, RewindRequest, TurnFiles, list_turns, rewind_session,
};
use dsh_core::{Flags, SetupError};

use crate::surface::Surface;

/// What `dsh rewind` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindArgs {
    pub id: String,
    /// One JSON object on stdout instead of text (errors as the stream's `error` event).
    pub json: bool,
    /// `None`: list the turns.
    pub action: Option<RewindRequest>,
}

pub fn run(args: &RewindArgs) -> u8 {
    match render(args) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(error) => {
            Surface::new(args.json).failed(&error);
            1
        }
    }
}

fn render(args: &RewindArgs) -> Result<String, SetupError> {
    let settings = crate::place::settings(&Flags::default())?;
    let session_failure =
        |e| crate::sessions_cmd::session_failure(e, settings.cwd(), "rewound", "rewind");
    let Some(request) = &args.action else {
        let turns = list_turns(&settings, &args.id).map_err(session_failure)?;
        return Ok(if args.json {
            serde_json::to_string(&turns).unwrap_or_default() + "\n"
        } else {
            listing(&args.id, &turns)
        });
    };
    let report = rewind_session(&settings, &args.id, request)
        .map_err(session_failure)?
        .map_err(|e: RewindError| SetupError::new(rewind_code(&e), e.to_string()))?;
    Ok(if args.json {
        serde_json::to_string(&report).unwrap_or_default() + "\n"
    } else {
        outcome(request, &report)
    })
}

/// The code of the `error` event for a rewind that cannot be done.
pub(crate) fn rewind_code(error: &RewindError) -> &'static str {
    match error {
        RewindError::ChangedOutside(_) => "CHANGED_OUTSIDE",
        RewindError::Store(_) => "CHECKPOINT_STORE",
        RewindError::Log(_) => "SESSION_LOG",
        _ => "REWIND_TARGET",
    }
}

fn listing(id: &str, turns: &[TurnFiles]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{id}: {} turns", turns.len());
    for turn in turns {
        let files = if !turn.restorable {
            "(files not restorable: no checkpoint of its start)".to_owned()
        } else if turn.changes.is_empty() {
            "(no file changes)".to_owned()
        } else {
            let shown: Vec<String> = (turn.changes.iter())
                .map(|c| format!("{} {}", c.kind.letter(), c.path))
                .collect();
            format!("{} changed: {}", shown.len(), shown.join(", "))
        };
        let _ = writeln!(
            out,
            "turn {:<3} {:<40}  {files}",
            turn.turn,
            clip(&turn.task, 40)
        );
        for call in &turn.escalations {
            let _ = writeln!(
                out,
                "         before the escalated call {call}: --before-call {call} goes back there"
            );
        }
    }
    let _ = writeln!(
        out,
        "`dsh rewind {id} --to TURN` shows what going back to a turn's start would change."
    );
    out
}

fn outcome(request: &RewindRequest, report: &RewindReport) -> String {
    let mut out = String::new();
    let what = match (request.files, request.conversation) {
        (true, true) => "files and conversation",
        (true, false) => "files",
        _ => "conversation",
    };
    let _ = match (&request.before_call, request.to_turn) {
        (Some(call), _) => writeln!(
            out,
            "rewind of the {what} to before the escalated call {call}:"
        ),
        (None, Some(turn)) => writeln!(out, "rewind of the {what} to before turn {turn}:"),
        (None, None) => writeln!(out, "undo of the last rewind:"),
    };
    if request.files {
        if report.plan.is_empty() {
            let _ = writeln!(out, "  the files are as they were then");
        }
        for path in &report.plan.restore {
            let _ = writeln!(out, "  write back  {path}");
        }
        for path in &report.plan.remove {
            let _ = writeln!(out, "  remove      {path}");
        }
        for path in &report.uncovered {
            let _ = writeln!(out, "  left as is  {path} (too large to be checkpointed)");
        }
        if !report.changed_outside.is_empty() {
            let _ = writeln!(out, "changed outside dsh since its last checkpoint:");
            for change in &report.changed_outside {
                let _ = writeln!(out, "  {} {}", change.kind.letter(), change.path);
            }
        }
    }
    match &report.applied {
        None => {
            let force = if report.changed_outside.is_empty() {
                ""
            } else {
                " and --force"
            };
            let _ = writeln!(
                out,
                "nothing was changed: run it again with --yes{force} to rewind"
            );
        }
        Some(record) => {
            let _ = writeln!(out, "done: {}", record.headline());
            for (path, why) in &report.failed {
                let _ = writeln!(out, "  not restored: {path}: {why}");
            }
            if !record.undo {
                let _ = writeln!(out, "`--undo` takes it back.");
            }
        }
    }
    out
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}
