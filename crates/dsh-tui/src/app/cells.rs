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
        (
            "Enter",
            "send (while the model works: it reads it at its next step)",
        ),
        ("Ctrl-J, Alt-Enter, \\ Enter", "new line"),
        (
            "Up / Down",
            "move between lines; on the first/last line, earlier messages",
        ),
        (
            "Tab",
            "complete the /command being typed; while a turn runs, queue for after it",
        ),
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

/// The lines of a file shown by `/blame` at most; `/blame FILE:LINE` shows one.
const BLAME_LINES: usize = 200;

/// A cell for `/blame FILE[:LINE]`: each line (or the one asked) with the session, turn and
/// call that last wrote it and the user's message, as `dsh blame` finds them
/// ([`dsh_core::blame_file`]); or what was wrong with what was asked.
pub fn blame(
    home: &std::path::Path,
    cwd: &std::path::Path,
    given: Option<&str>,
) -> Vec<Line<'static>> {
    use ratatui::style::Color;
    let failed = |text: String| vec![Line::styled(format!("✗ {text}"), Color::Red)];
    let Some(given) = given else {
        return failed(
            "/blame needs a file, with a line if you like: /blame src/main.rs:12".into(),
        );
    };
    // `FILE:LINE`, unless a file is named so.
    let split = (given.rsplit_once(':'))
        .filter(|_| !cwd.join(given).exists())
        .and_then(|(file, line)| Some((file, line.parse::<usize>().ok()?)));
    let (file, line) = match split {
        Some((_, 0)) => return failed(format!("lines are counted from 1, not in {given}")),
        Some((file, line)) => (file, Some(line)),
        None => (given, None),
    };
    let lines = match dsh_core::blame_file(home, cwd, std::path::Path::new(file), line) {
        Ok(lines) => lines,
        Err(error) => return failed(error.to_string()),
    };
    let mut cell = vec![Line::styled(
        format!("Blame {given}"),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    for blamed in lines.iter().take(BLAME_LINES) {
        let who = match &blamed.origin {
            None => "(not written by dsh)".to_owned(),
            Some(origin) => {
                let call = match (&origin.tool, &origin.call_id) {
                    (Some(tool), Some(id)) => format!("{tool} {id}"),
                    _ => "one of its calls".to_owned(),
                };
                let message: String = (origin.message.lines().next().unwrap_or_default())
                    .chars()
                    .take(40)
                    .collect();
                format!(
                    "{} turn {} · {call} · \"{message}\"",
                    origin.session, origin.turn
                )
            }
        };
        cell.push(Line::from(vec![
            Span::styled(format!("  {:>4}  ", blamed.line), DIM),
            Span::styled(who, Style::new().fg(Color::Cyan)),
        ]));
        cell.push(Line::from(format!("        {}", blamed.text)));
    }
    if lines.len() > BLAME_LINES {
        cell.push(Line::styled(
            format!(
                "  … {} more lines: /blame {file}:LINE shows one, `dsh blame {file}` all",
                lines.len() - BLAME_LINES
            ),
            DIM,
        ));
    }
    cell
}
