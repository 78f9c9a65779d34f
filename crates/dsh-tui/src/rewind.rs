//! `/rewind`: pick a turn, see what going back to its start would change, confirm.

use crossterm::event::{KeyCode, KeyEvent};
use dsh_core::checkpoints::{RewindReport, RewindRequest, TurnFiles};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

use crate::dialog::numbered;

/// Where `/rewind` is.
pub enum RewindView {
    /// The session's turns, newest last.
    Pick {
        turns: Vec<TurnFiles>,
        selected: usize,
    },
    /// What going back to the start of `turn` would change, to confirm: which of
    /// [`TAKEN_BACK`] is chosen.
    Confirm {
        turn: u32,
        report: RewindReport,
        selected: usize,
    },
}

/// What a rewind can take back: the files, the conversation, as `(files, conversation)`.
const TAKEN_BACK: [(&str, bool, bool); 3] = [
    ("files and conversation", true, true),
    ("files only", true, false),
    ("conversation only", false, true),
];

/// What a key asks of the UI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindKey {
    None,
    Close,
    /// Show what going back to this turn's start would change.
    Preview(u32),
    /// Do it.
    Apply(RewindRequest),
}

const TITLE: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
const CHOSEN: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
const DIM: Style = Style::new().fg(Color::DarkGray);

impl RewindView {
    /// The picker, on the newest turn.
    pub fn pick(turns: Vec<TurnFiles>) -> Self {
        let selected = turns.len().saturating_sub(1);
        RewindView::Pick { turns, selected }
    }

    /// What going back to `turn` would change, on the first choice.
    pub fn confirm(turn: u32, report: RewindReport) -> Self {
        RewindView::Confirm {
            turn,
            report,
            selected: 0,
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> RewindKey {
        match self {
            RewindView::Pick { turns, selected } => match key.code {
                KeyCode::Up => {
                    *selected = selected.saturating_sub(1);
                    RewindKey::None
                }
                KeyCode::Down => {
                    *selected = (*selected + 1).min(turns.len().saturating_sub(1));
                    RewindKey::None
                }
                KeyCode::Enter => turns
                    .get(*selected)
                    .map_or(RewindKey::Close, |t| RewindKey::Preview(t.turn)),
                KeyCode::Esc => RewindKey::Close,
                _ => RewindKey::None,
            },
            RewindView::Confirm {
                turn,
                report,
                selected,
            } => {
                // A number chooses, as ↑↓ do; only Enter rewinds.
                match key.code {
                    KeyCode::Up => *selected = selected.saturating_sub(1),
                    KeyCode::Down => *selected = (*selected + 1).min(TAKEN_BACK.len() - 1),
                    KeyCode::Char(c) => {
                        if let Some(n) = numbered(c).filter(|n| *n < TAKEN_BACK.len()) {
                            *selected = n;
                        }
                    }
                    KeyCode::Esc => return RewindKey::Close,
                    _ => {}
                }
                if key.code != KeyCode::Enter {
                    return RewindKey::None;
                }
                let (_, files, conversation) = TAKEN_BACK[*selected];
                RewindKey::Apply(RewindRequest {
                    to_turn: Some(*turn),
                    before_call: None,
                    files,
                    conversation,
                    // The files changed outside dsh shown above the choice may be overwritten;
                    // any changed since the preview stop the rewind.
                    force: false,
                    accepted_outside: (report.changed_outside.iter())
                        .map(|c| c.path.clone())
                        .collect(),
                    apply: true,
                })
            }
        }
    }

    pub fn lines(&self, width: u16, rows: u16) -> Vec<Line<'static>> {
        let cut = |text: String| text.chars().take(usize::from(width)).collect::<String>();
        match self {
            RewindView::Pick { turns, selected } => {
                let mut lines = vec![Line::styled(
                    "Rewind to the start of a turn (↑↓ choose · Enter shows what changes · Esc \
                     cancels)",
                    TITLE,
                )];
                let rows = usize::from(rows.max(1));
                let first = selected.saturating_sub(rows - 1);
                for (i, turn) in turns.iter().enumerate().skip(first).take(rows) {
                    let files = if !turn.restorable {
                        "files not restorable".to_owned()
                    } else if turn.changes.is_empty() {
                        "no file changes".to_owned()
                    } else {
                        format!("{} files changed", turn.changes.len())
                    };
                    let marker = if i == *selected { "› " } else { "  " };
                    let style = if i == *selected {
                        CHOSEN
                    } else {
                        Style::default()
                    };
                    lines.push(Line::styled(
                        cut(format!(
                            "{marker}turn {} · {} · {files}",
                            turn.turn, turn.task
                        )),
                        style,
                    ));
                }
                lines
            }
            RewindView::Confirm {
                turn,
                report,
                selected,
            } => {
                let mut lines = vec![Line::styled(
                    format!("Rewind to the start of turn {turn}?"),
                    TITLE,
                )];
                if report.plan.is_empty() {
                    lines.push(Line::styled("  the files are as they were then", DIM));
                }
                for path in &report.plan.restore {
                    lines.push(Line::from(cut(format!("  write back  {path}"))));
                }
                for path in &report.plan.remove {
                    lines.push(Line::from(cut(format!("  remove      {path}"))));
                }
                if !report.changed_outside.is_empty() {
                    lines.push(Line::styled(
                        "Changed outside dsh since its last checkpoint (kept in the snapshot \
                         taken first, which `dsh rewind --undo` restores):",
                        Style::new().fg(Color::Red),
                    ));
                    for change in &report.changed_outside {
                        lines.push(Line::from(cut(format!(
                            "  {} {}",
                            change.kind.letter(),
                            change.path
                        ))));
                    }
                }
                for (i, (what, ..)) in TAKEN_BACK.iter().enumerate() {
                    let (marker, style) = if i == *selected {
                        ("› ", CHOSEN)
                    } else {
                        ("  ", Style::default())
                    };
                    lines.push(Line::styled(format!("{marker}{}. {what}", i + 1), style));
                }
                lines.push(Line::styled(
                    "↑↓ or 1-3 choose · Enter rewinds · Esc cancels",
                    DIM,
                ));
                lines
            }
        }
    }
}
