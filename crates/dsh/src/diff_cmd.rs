//! `dsh sessions diff A B [--json]`: where two sessions went separate ways, the files each
//! changed and what each billed ([`dsh_core::diff_sessions`]).

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::{CoreError, DiffSide, DivergedCall, SessionDiff, SetupError};

use crate::surface::Surface;

/// Characters of a call's arguments shown on its line.
const ARGUMENTS_SHOWN: usize = 160;

pub fn run(a: &str, b: &str, json: bool) -> u8 {
    let (home, _) = match crate::place::home_and_cwd() {
        Ok(found) => found,
        Err(error) => return fail(&error, json),
    };
    let diff = match dsh_core::diff_sessions(&home, a, b) {
        Ok(diff) => diff,
        Err(error) => return fail(&not_found(error, &home), json),
    };
    let out = if json {
        format!("{}\n", serde_json::to_string(&diff).unwrap_or_default())
    } else {
        text(&diff)
    };
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// A session that cannot be read, said for this command: an unknown id is looked for in
/// every folder, so the hint names the commands that find one.
pub(crate) fn not_found(error: CoreError, home: &std::path::Path) -> SetupError {
    let code = error.code();
    let message = match error {
        CoreError::UnknownSession { id, .. } => format!(
            "no session \"{id}\" under {}\nhint: `dsh sessions list` lists this folder's \
             sessions and `dsh sessions search TEXT` finds one of any folder by what was said \
             in it",
            home.join("sessions").display()
        ),
        other => other.to_string(),
    };
    SetupError::new(code, message)
}

fn text(diff: &SessionDiff) -> String {
    let mut out = String::new();
    for (name, side) in [("A", &diff.a), ("B", &diff.b)] {
        let _ = writeln!(out, "{name}  {}", side_line(side));
    }
    if !diff.same_workspace {
        let _ = writeln!(
            out,
            "note: recorded in different folders (A in {}, B in {})",
            diff.a.cwd, diff.b.cwd
        );
    }
    if !diff.same_task {
        let _ = writeln!(out, "note: their first turns answered different messages");
    }
    let _ = writeln!(out);
    match &diff.divergence {
        None => {
            let _ = writeln!(
                out,
                "no divergence: both made the same {} calls, in the same order",
                diff.common_calls
            );
        }
        Some(divergence) => {
            let _ = writeln!(
                out,
                "the same first {} {}, then they diverged at call {}:",
                diff.common_calls,
                if diff.common_calls == 1 {
                    "call"
                } else {
                    "calls"
                },
                divergence.call
            );
            for (name, call) in [("A", &divergence.a), ("B", &divergence.b)] {
                let _ = writeln!(out, "  {name}  {}", call_line(call.as_ref()));
            }
        }
    }
    for (name, side) in [("A", &diff.a), ("B", &diff.b)] {
        let files = if side.files.is_empty() {
            "none".to_owned()
        } else {
            (side.files.iter())
                .map(|c| format!("{} {}", c.kind.letter(), c.path))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "files {name} changed: {files}");
    }
    out
}

/// `session-… · /ws · model · 2 turns, 3 calls · 1200 tokens, $0.0012`.
pub(crate) fn side_line(side: &DiffSide) -> String {
    let models = if side.models.is_empty() {
        "no answer".to_owned()
    } else {
        side.models.join(", ")
    };
    format!(
        "{} · {} · {models} · {} turns, {} calls · {}",
        side.id,
        side.cwd,
        side.turns,
        side.calls,
        billed(&side.usage)
    )
}

/// Tokens and, when the prices are known, the cost.
pub(crate) fn billed(usage: &dsh_protocol::Usage) -> String {
    match usage.cost_usd {
        Some(usd) => format!("{} tokens, ${usd:.4}", usage.total_tokens),
        None => format!("{} tokens, cost unknown", usage.total_tokens),
    }
}

fn call_line(call: Option<&DivergedCall>) -> String {
    let Some(DivergedCall { call, message }) = call else {
        return "(made no more calls)".to_owned();
    };
    let arguments = call.arguments.to_string();
    let mut shown: String = arguments.chars().take(ARGUMENTS_SHOWN).collect();
    if arguments.chars().count() > ARGUMENTS_SHOWN {
        shown.push('…');
    }
    let message: String = message
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(60)
        .collect();
    format!("turn {} \"{message}\": {} {shown}", call.turn, call.tool)
}

fn fail(error: &SetupError, json: bool) -> u8 {
    Surface::new(json).failed(error);
    1
}
