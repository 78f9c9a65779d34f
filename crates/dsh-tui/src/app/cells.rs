//! The cells that commands print into the transcript: `/status`, `/help` and lists.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{App, DIM};
use crate::slash;
use crate::transcript::tokens;
use dsh_core::SavedPrompt;

/// A cell for `/status`.
pub fn status_cell(app: &App, grants: &[String]) -> Vec<Line<'static>> {
    let Some(info) = &app.info else {
        return vec![Line::styled("no session is open", DIM)];
    };
    let usage = &app.transcript.session_usage;
    let cost = if info.priced {
        format!("${:.4}", usage.cost_usd.unwrap_or(0.0))
    } else {
        "unknown (no prices declared for this model)".to_owned()
    };
    let rows = [
        ("session", info.id.clone()),
        ("log", info.log.display().to_string()),
        ("model", info.model.clone()),
        (
            "sandbox",
            format!("{} · approvals: {}", info.sandbox, info.approval),
        ),
        (
            "tokens",
            format!(
                "{} (input {}, cached {}, output {}, reasoning {})",
                tokens(usage.total_tokens),
                tokens(usage.input_tokens),
                tokens(usage.cache_read_tokens),
                tokens(usage.output_tokens),
                tokens(usage.reasoning_tokens)
            ),
        ),
        ("cost", cost),
        (
            "allowed for the session",
            if grants.is_empty() {
                "nothing".to_owned()
            } else {
                grants.join(", ")
            },
        ),
    ];
    let mut lines = vec![Line::default()];
    lines.extend(rows.into_iter().map(|(k, v)| {
        Line::from(vec![
            Span::styled(
                format!("  {k:<24}"),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(v),
        ])
    }));
    lines
}

/// A cell for `/help`.
pub fn help_cell(prompts: &[SavedPrompt]) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::styled("  Commands", Style::new().add_modifier(Modifier::BOLD)),
    ];
    for (name, about) in slash::COMMANDS {
        lines.push(Line::from(format!("  {name:<10} {about}")));
    }
    for prompt in prompts {
        lines.push(Line::from(format!(
            "  /{:<9} saved prompt ({})",
            prompt.name,
            prompt.path.display()
        )));
    }
    lines.push(Line::styled(
        "  Keys",
        Style::new().add_modifier(Modifier::BOLD),
    ));
    for (keys, about) in [
        ("Enter", "send (while a turn runs: queue it for after)"),
        ("Ctrl-J, Alt-Enter, \\ Enter", "new line"),
        (
            "Up / Down",
            "move between lines; on the first/last line, earlier messages",
        ),
        ("Tab", "complete the /command being typed"),
        ("@", "mention a file (fuzzy; Tab or Enter picks)"),
        (
            "Esc, Ctrl-C",
            "interrupt the turn (what you queued comes back to the composer); Ctrl-C twice quits",
        ),
        ("↑↓ or 1-9, Enter", "in a dialog: choose, then confirm"),
        ("Ctrl-D", "quit on an empty composer"),
        ("Ctrl-T", "show or fold reasoning in the transcript"),
    ] {
        lines.push(Line::from(format!("  {keys:<26} {about}")));
    }
    lines
}

/// A cell of lines under a title (skills, prompts, diffs).
pub fn list_cell(title: &str, items: Vec<Line<'static>>) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::default(),
        Line::styled(
            format!("  {title}"),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ];
    lines.extend(items);
    lines
}
