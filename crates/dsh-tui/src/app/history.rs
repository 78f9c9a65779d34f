//! What Ctrl-R's search of the workspace's prompts ([`crate::history`]) does to the UI: opened
//! from the composer, fed the prompts read off the UI's thread, and its keys.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{Action, App};
use crate::history::HistorySearch;

impl App {
    /// Ctrl-R on the composer: a search opens (or, open, goes to the next older match).
    pub(super) fn search_history(&mut self) -> Action {
        if let Some(search) = &mut self.history {
            search.selected = (search.selected + 1).min(search.found.len().saturating_sub(1));
            return Action::None;
        }
        self.history = Some(HistorySearch::default());
        Action::LoadHistory
    }

    /// The workspace's prompts, read: the search open finds in them.
    pub fn history_loaded(&mut self, prompts: Vec<String>) {
        if let Some(search) = &mut self.history {
            search.prompts = Some(Arc::new(prompts));
            search.refilter();
        }
    }

    /// A key for the history search, when one is open.
    pub(super) fn history_key(&mut self, key: KeyEvent) -> Option<Action> {
        let search = self.history.as_mut()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('r') if ctrl => return Some(self.search_history()),
            KeyCode::Char(c) if !ctrl => {
                search.query.push(c);
                search.selected = 0;
                search.refilter();
            }
            KeyCode::Backspace => {
                search.query.pop();
                search.refilter();
            }
            KeyCode::Up => search.selected = search.selected.saturating_sub(1),
            KeyCode::Down => {
                search.selected = (search.selected + 1).min(search.found.len().saturating_sub(1));
            }
            KeyCode::Enter | KeyCode::Tab => {
                if let Some(chosen) = search.chosen() {
                    let chosen = chosen.to_owned();
                    self.composer.set_text(&chosen);
                }
                self.history = None;
            }
            KeyCode::Esc => self.history = None,
            KeyCode::Char('g') if ctrl => self.history = None,
            _ => {}
        }
        Some(Action::None)
    }
}
