//! `/rewind`: pick a turn, see what going back to its start would change, confirm.

use crossterm::event::{KeyCode, KeyEvent};
use dsh_core::checkpoints::{RewindReport, RewindRequest, TurnFiles};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

/// Where `/rewind` is.
pub enum RewindView {
    /// The session's turns, newest last.
    Pick {
        turns: Vec<TurnFiles>,
        selected: usize,
    },
    /// What going back to the start of `turn` would change, to confirm.
    Confirm { turn: u32, report: RewindReport },
}

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
            RewindView::Confirm { turn, report } => {
                let (files, conversation) = match key.code {
                    KeyCode::Char('1') => (true, true),
                    KeyCode::Char('2') => (true, false),
                    KeyCode::Char('3') => (false, true),
                    KeyCode::Esc => return RewindKey::Close,
                    _ => return RewindKey::None,
                };
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
            RewindView::Confirm { turn, report } => {
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
                lines.push(Line::styled(
                    "1 files and conversation · 2 files only · 3 conversation only · Esc \
                     cancels",
                    DIM,
                ));
                lines
            }
        }
    }
}
