//! Ctrl-R: an incremental search of the prompts sent in this workspace, in every session of
//! it (newest first), typed into the composer when chosen. The prompts are read off the UI's
//! thread at each Ctrl-R ([`workspace_prompts`]), so a message sent a moment ago in another
//! window is found too.

use std::path::Path;
use std::sync::Arc;

use dsh_protocol::{Record, View};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;

const DIM: Style = Style::new().fg(Color::DarkGray);

/// The matches shown under the composer.
const SHOWN: usize = 5;

/// The search under way.
#[derive(Default)]
pub struct HistorySearch {
    pub query: String,
    /// Every prompt of the workspace, newest first, once read.
    pub prompts: Option<Arc<Vec<String>>>,
    /// The prompts the query finds (indexes into `prompts`).
    pub found: Vec<usize>,
    pub selected: usize,
}

impl HistorySearch {
    pub fn refilter(&mut self) {
        let query = self.query.to_lowercase();
        self.found = (self.prompts.iter().flat_map(|p| p.iter().enumerate()))
            .filter(|(_, p)| p.to_lowercase().contains(&query))
            .map(|(i, _)| i)
            .collect();
        self.selected = self.selected.min(self.found.len().saturating_sub(1));
    }

    pub fn chosen(&self) -> Option<&str> {
        let prompts = self.prompts.as_ref()?;
        let index = *self.found.get(self.selected)?;
        prompts.get(index).map(String::as_str)
    }

    /// What the live area shows above the composer: the matches around the one chosen, and
    /// the query.
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let room = usize::from(width.saturating_sub(4));
        let mut lines = Vec::new();
        match &self.prompts {
            None => lines.push(Line::styled("  reading this workspace's prompts…", DIM)),
            Some(prompts) => {
                let first = self.selected.saturating_sub(SHOWN - 1);
                for (i, &index) in self.found.iter().enumerate().skip(first).take(SHOWN) {
                    let text: String = prompts[index].replace('\n', " ⏎ ");
                    let text: String = text.chars().take(room).collect();
                    let style = if i == self.selected {
                        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                    } else {
                        DIM
                    };
                    lines.push(Line::styled(format!("  {text}"), style));
                }
                if self.found.is_empty() {
                    lines.push(Line::styled("  no prompt of this workspace matches", DIM));
                }
            }
        }
        lines.push(Line::styled(
            format!(
                "  history search: {}▏ (Ctrl-R older · Enter takes · Esc cancels)",
                self.query
            ),
            Style::new().fg(Color::Yellow),
        ));
        lines
    }
}

/// The prompts sent in the sessions of the workspace `cwd`, newest first, each once: the
/// message each turn started with (a `!` command as typed).
pub fn workspace_prompts(home: &Path, cwd: &Path) -> Vec<String> {
    let mut prompts: Vec<String> = Vec::new();
    for session in dsh_core::list_sessions(home, cwd) {
        let Ok(path) = dsh_core::session_log_path(home, cwd, &session.id) else {
            continue;
        };
        let Ok(log) = dsh_core::read_log(&path) else {
            continue;
        };
        let mut turn_started = false;
        let mut this_session = Vec::new();
        for envelope in &log.records {
            match (&envelope.record, envelope.record.view()) {
                (Record::TurnStart { .. }, _) => turn_started = true,
                (Record::UserMessage { .. }, View::User { message }) if turn_started => {
                    turn_started = false;
                    let text = message.text();
                    let text = match dsh_core::user_shell::read(&text) {
                        Some((command, _)) => format!("!{command}"),
                        None => text,
                    };
                    this_session.push(text);
                }
                _ => {}
            }
        }
        // Sessions come newest first; within one, the last turn is the newest.
        prompts.extend(this_session.into_iter().rev());
    }
    let mut seen = std::collections::HashSet::new();
    prompts.retain(|p| !p.trim().is_empty() && seen.insert(p.clone()));
    prompts
}
