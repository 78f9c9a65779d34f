//! `dsh rewind`: a session's turns with what each changed in the files, and going back to the
//! start of one (files, conversation or both), or undoing the last rewind. Nothing changes
//! without `--yes`: the plan is shown first.

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::Flags;
use dsh_core::checkpoints::{
    RewindError, RewindReport, RewindRequest, TurnFiles, list_turns, rewind_session,
};

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

/// The usage text, for an error.
pub const USAGE: &str = "dsh rewind <session> [--to TURN [--files | --conversation] | \
                         --before-call CALL | --undo] [--yes] [--force] [--json]";

/// Reads `dsh rewind`'s arguments (after `rewind`).
pub fn parse(args: &[String]) -> Result<RewindArgs, String> {
    let mut id = None;
    let mut to_turn = None;
    let mut before_call = None;
    let (mut undo, mut yes, mut force, mut files_only, mut conversation_only) =
        (false, false, false, false, false);
    let mut json = false;
    let mut words = args.iter();
    while let Some(arg) = words.next() {
        match arg.as_str() {
            "--to" => {
                let value = words
                    .next()
                    .ok_or_else(|| format!("--to needs a turn number: {USAGE}"))?;
                to_turn = Some(
                    value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            format!("--to takes a turn number (1, 2, ...), got \"{value}\"")
                        })?,
                );
            }
            "--before-call" => {
                let call = words
                    .next()
                    .filter(|c| !c.starts_with('-'))
                    .ok_or_else(|| format!("--before-call needs a call id: {USAGE}"))?;
                before_call = Some(call.clone());
            }
            "--undo" => undo = true,
            "--yes" | "-y" => yes = true,
            "--force" => force = true,
            "--json" => json = true,
            "--files" => files_only = true,
            "--conversation" => conversation_only = true,
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option {flag} for dsh rewind: {USAGE}"));
            }
            word if id.is_none() => id = Some(word.to_owned()),
            word => return Err(format!("unexpected \"{word}\": {USAGE}")),
        }
    }
    let id = id.ok_or_else(|| {
        format!("dsh rewind needs a session id (`dsh sessions list` shows them): {USAGE}")
    })?;
    if files_only && conversation_only {
        return Err(
            "--files and --conversation exclude each other: give neither to rewind \
                    both"
                .into(),
        );
    }
    let targets =
        usize::from(undo) + usize::from(to_turn.is_some()) + usize::from(before_call.is_some());
    if targets > 1 {
        return Err(
            "--to, --before-call and --undo exclude each other: give one place to go back to"
                .into(),
        );
    }
    if before_call.is_some() && conversation_only {
        return Err("--before-call takes the files back only: leave --conversation out".into());
    }
    let action = (targets == 1).then_some(RewindRequest {
        to_turn,
        // Mid-turn, only the files can go back.
        conversation: !files_only && before_call.is_none(),
        before_call,
        files: !conversation_only,
        force,
        accepted_outside: Vec::new(),
        apply: yes,
    });
    if action.is_none() && (yes || force || files_only || conversation_only) {
        return Err(format!(
            "say what to rewind to, with --to TURN or --undo: {USAGE}"
        ));
    }
    Ok(RewindArgs { id, json, action })
}

pub fn run(args: &RewindArgs) -> u8 {
    match render(args) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(message) => {
            Surface::new(args.json).fail(&message, &message, None);
            1
        }
    }
}

fn render(args: &RewindArgs) -> Result<String, String> {
    let settings = crate::place::settings(&Flags::default())?;
    let Some(request) = &args.action else {
        let turns = list_turns(&settings, &args.id).map_err(|e| e.to_string())?;
        return Ok(if args.json {
            serde_json::to_string(&turns).unwrap_or_default() + "\n"
        } else {
            listing(&args.id, &turns)
        });
    };
    let report = rewind_session(&settings, &args.id, request)
        .map_err(|e| e.to_string())?
        .map_err(|e: RewindError| e.to_string())?;
    Ok(if args.json {
        serde_json::to_string(&report).unwrap_or_default() + "\n"
    } else {
        outcome(request, &report)
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn arguments_are_read_or_refused_with_the_usage() {
        let listed = parse(&words(&["s-1"])).unwrap();
        assert_eq!(listed.action, None);
        let back = parse(&words(&["s-1", "--to", "2", "--files", "--yes"])).unwrap();
        assert_eq!(
            back.action,
            Some(RewindRequest {
                to_turn: Some(2),
                before_call: None,
                files: true,
                conversation: false,
                force: false,
                accepted_outside: Vec::new(),
                apply: true,
            })
        );
        let undo = parse(&words(&["--undo", "s-1"])).unwrap().action.unwrap();
        assert_eq!(
            (undo.to_turn, undo.files, undo.conversation),
            (None, true, true)
        );
        for (bad, says) in [
            (&["--to", "2"][..], "needs a session id"),
            (&["s-1", "--to", "zero"], "takes a turn number"),
            (&["s-1", "--to", "0"], "takes a turn number"),
            (
                &["s-1", "--files", "--conversation", "--to", "1"],
                "exclude each other",
            ),
            (&["s-1", "--undo", "--to", "1"], "exclude each other"),
            (
                &["s-1", "--before-call", "c1", "--to", "1"],
                "exclude each other",
            ),
            (
                &["s-1", "--before-call", "c1", "--conversation"],
                "files back only",
            ),
            (&["s-1", "--before-call"], "needs a call id"),
            (&["s-1", "--yes"], "say what to rewind to"),
            (&["s-1", "--soon"], "unknown option --soon"),
        ] {
            let error = parse(&words(bad)).unwrap_err();
            assert!(error.contains(says), "{bad:?}: {error}");
        }
    }
}
