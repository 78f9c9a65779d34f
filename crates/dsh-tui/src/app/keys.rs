//! What each key does: to the dialog or list in front, the `@` mention offered, or the
//! composer; and a key typed before what is in front was drawn.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use dsh_protocol::AbortReason;

use super::{Action, App, Lasts, MentionPopup};
use crate::dialog::Handled;
use crate::slash::{self, Slash};

impl App {
    /// A key (or a paste) typed before the dialog or list now in front was drawn: it goes
    /// where it would have gone without it, and never answers it.
    pub fn typed_before(&mut self, event: Event) -> Action {
        let dialogs = std::mem::take(&mut self.dialogs);
        let picker = self.picker.take();
        let rewind = self.rewind.take();
        let action = match event {
            Event::Key(key) => self.key(key),
            Event::Paste(text) => {
                self.paste(&text);
                Action::None
            }
            _ => Action::None,
        };
        // The composer's keys open none of these (a command that does runs after this).
        self.dialogs = dialogs;
        self.picker = picker;
        self.rewind = rewind;
        action
    }

    pub fn paste(&mut self, text: &str) {
        if let Some(dialog) = self.dialogs.front_mut() {
            dialog.paste(text);
            return;
        }
        self.composer.insert(text);
        self.refresh_mention();
    }

    pub fn key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        if key.code != KeyCode::Esc {
            self.quit_armed = false;
        }
        self.clear_notice(Lasts::Key);
        if let Some(action) = self.front_key(key) {
            return action;
        }
        if let Some(action) = self.history_key(key) {
            return action;
        }
        if let Some(action) = self.mention_key(key) {
            return action;
        }
        let action = self.composer_key(key, ctrl);
        self.refresh_mention();
        action
    }

    /// A key for the dialog or list in front of the composer, if one is.
    fn front_key(&mut self, key: KeyEvent) -> Option<Action> {
        if let Some(dialog) = self.dialogs.front_mut() {
            if key.code == KeyCode::Esc {
                if let Some(dialog) = self.close_dialog() {
                    dialog.cancel();
                }
            } else if dialog.key(key) == Handled::Closed {
                self.close_dialog();
            }
            return Some(Action::None);
        }
        if self.picker.is_some() {
            return Some(self.picker_key(key));
        }
        let view = self.rewind.as_mut()?;
        use crate::rewind::RewindKey;
        Some(match view.key(key) {
            RewindKey::None => Action::None,
            RewindKey::Close => {
                self.rewind = None;
                Action::None
            }
            RewindKey::Preview(turn) => {
                self.rewind = None;
                Action::Slash(Slash::Rewind(Some(turn.to_string())))
            }
            RewindKey::Apply(request) => {
                self.rewind = None;
                Action::Rewind(request)
            }
        })
    }

    /// A key for the `@` mention offered, if one is and the key is one it takes.
    fn mention_key(&mut self, key: KeyEvent) -> Option<Action> {
        if self.mention.is_some() {
            match key.code {
                KeyCode::Up => {
                    if let Some(m) = &mut self.mention {
                        m.selected = m.selected.saturating_sub(1);
                    }
                    return Some(Action::None);
                }
                KeyCode::Down => {
                    if let Some(m) = &mut self.mention {
                        m.selected = (m.selected + 1).min(m.matches.len().saturating_sub(1));
                    }
                    return Some(Action::None);
                }
                KeyCode::Enter | KeyCode::Tab => {
                    if let Some(m) = self.mention.take()
                        && let Some(path) = m.matches.get(m.selected)
                    {
                        self.composer.complete_mention(m.start, path);
                        return Some(Action::None);
                    }
                }
                KeyCode::Esc => {
                    self.mention = None;
                    return Some(Action::None);
                }
                _ => {}
            }
        }
        None
    }

    /// A key for the composer: editing, sending, completing, interrupting.
    fn composer_key(&mut self, key: KeyEvent, ctrl: bool) -> Action {
        match key.code {
            KeyCode::Char('d') if ctrl => {
                if self.composer.is_empty() {
                    Action::Quit
                } else {
                    self.composer.delete();
                    Action::None
                }
            }
            KeyCode::Char('t') if ctrl => {
                self.transcript.show_reasoning ^= true;
                let shown = if self.transcript.show_reasoning {
                    "shown in full"
                } else {
                    "folded"
                };
                self.notify(
                    format!("reasoning is now {shown} in the transcript"),
                    Lasts::Key,
                );
                Action::None
            }
            KeyCode::Char('r') if ctrl => self.search_history(),
            KeyCode::Char('g') if ctrl => Action::Edit,
            KeyCode::Char('j') if ctrl => {
                self.composer.insert("\n");
                Action::None
            }
            KeyCode::Char('u') if ctrl => {
                self.composer.delete_to_line_start();
                Action::None
            }
            KeyCode::Char('w') if ctrl => {
                self.composer.delete_word();
                Action::None
            }
            KeyCode::Char('a') if ctrl => {
                self.composer.home();
                Action::None
            }
            KeyCode::Char('e') if ctrl => {
                self.composer.end();
                Action::None
            }
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.composer.insert("\n");
                Action::None
            }
            KeyCode::Enter => self.enter(),
            KeyCode::Tab => {
                if let Some(typed) = self.command_typed() {
                    if let Some(completed) = slash::complete(&typed, &self.prompts) {
                        self.composer.set_text(&completed);
                    }
                } else if self.running.is_some() && !self.composer.text().trim().is_empty() {
                    // The message waits for the turn's end, as Enter did before steering.
                    let text = self.composer.take();
                    self.queued.push_back(text);
                }
                Action::None
            }
            KeyCode::Esc => {
                if self.is_running() {
                    self.interrupt()
                } else {
                    if let Some(stop) = &self.busy_stop {
                        stop.request(AbortReason::User);
                    }
                    Action::None
                }
            }
            KeyCode::Char(c) if !ctrl => {
                self.composer.insert(&c.to_string());
                if c == '/' && self.composer.text() == "/" {
                    // A command line starts: the hint offers the prompts saved by now.
                    self.reload_prompts();
                }
                if c == '@' && (self.files.is_none() || self.files_stale) && !self.indexing {
                    self.files_stale = false;
                    self.indexing = true;
                    self.refresh_mention();
                    return Action::IndexFiles;
                }
                Action::None
            }
            KeyCode::Backspace => {
                self.composer.backspace();
                Action::None
            }
            KeyCode::Delete => {
                self.composer.delete();
                Action::None
            }
            KeyCode::Left => {
                self.composer.left();
                Action::None
            }
            KeyCode::Right => {
                self.composer.right();
                Action::None
            }
            KeyCode::Home => {
                self.composer.home();
                Action::None
            }
            KeyCode::End => {
                self.composer.end();
                Action::None
            }
            KeyCode::Up => {
                self.composer.up();
                Action::None
            }
            KeyCode::Down => {
                self.composer.down();
                Action::None
            }
            _ => Action::None,
        }
    }

    fn picker_key(&mut self, key: KeyEvent) -> Action {
        let Some(picker) = &mut self.picker else {
            return Action::None;
        };
        match key.code {
            KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
            KeyCode::Down => {
                picker.selected = (picker.selected + 1).min(picker.shown.len().saturating_sub(1));
            }
            KeyCode::Enter => {
                // Nothing found: Enter opens nothing.
                let Some(&index) = picker.shown.get(picker.selected) else {
                    return Action::None;
                };
                let id = picker.sessions[index].id.clone();
                self.picker = None;
                return Action::Slash(Slash::Resume(Some(id)));
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                picker.query.push(c);
                picker.filter();
            }
            KeyCode::Backspace => {
                picker.query.pop();
                picker.filter();
            }
            KeyCode::Esc => {
                self.picker = None;
                if self.info.is_none() {
                    return Action::Slash(Slash::New);
                }
            }
            _ => {}
        }
        Action::None
    }

    fn ctrl_c(&mut self) -> Action {
        if let Some(dialog) = self.close_dialog() {
            dialog.cancel();
        }
        if let Some(running) = &self.running {
            if running.interrupted {
                return Action::Quit;
            }
            // A second Ctrl-C quits even when the turn has ended by the time it comes.
            self.quit_armed = true;
            return self.interrupt();
        }
        if let Some(stop) = &self.busy_stop
            && !stop.is_requested()
        {
            stop.request(AbortReason::User);
            self.notify("stopping… (Ctrl-C again quits)", Lasts::Idle);
            return Action::None;
        }
        if !self.composer.is_empty() {
            self.composer.clear();
            self.mention = None;
            return Action::None;
        }
        if self.quit_armed {
            return Action::Quit;
        }
        self.quit_armed = true;
        self.notify("press Ctrl-C again (or Ctrl-D) to quit", Lasts::Key);
        Action::None
    }

    pub(super) fn interrupt(&mut self) -> Action {
        if let Some(running) = &mut self.running {
            running.interrupted = true;
            running.stop.request(AbortReason::User);
            self.notify("interrupting… (Ctrl-C again quits)", Lasts::Idle);
            self.unqueue();
        }
        Action::Interrupt
    }

    /// The messages queued for after an interrupted turn go back to the composer, ahead of
    /// what is being typed: nothing is sent on its own after an interrupt.
    fn unqueue(&mut self) {
        let mut text = self.take_back_steering();
        text.extend(self.queued.drain(..));
        if text.is_empty() {
            return;
        }
        if !self.composer.is_empty() {
            text.push(self.composer.text());
        }
        self.composer.set_text(&text.join("\n"));
        self.note("the turn is interrupted: what you queued is back in the composer, for Enter");
    }

    fn enter(&mut self) -> Action {
        // A line ending in `\` continues on the next.
        let text = self.composer.text();
        if text.ends_with('\\') {
            self.composer.backspace();
            self.composer.insert("\n");
            return Action::None;
        }
        if text.trim().is_empty() {
            return Action::None;
        }
        if text.starts_with('/') {
            // Read where prompts are kept now: one saved a moment ago is a command.
            self.reload_prompts();
            // A start that names one command only (the hint shows it) runs that command.
            if let Some(typed) = self.command_typed()
                && let [only] = slash::completions(&typed, &self.prompts).as_slice()
            {
                self.composer.set_text(only);
            }
            let line = self.composer.take();
            return match slash::parse(&line, &self.prompts) {
                Slash::Edit => Action::Edit,
                command => Action::Slash(command),
            };
        }
        let text = self.composer.take();
        if self.can_steer() && !text.starts_with('!') {
            self.steer(text);
            Action::None
        } else if self.running.is_some() || self.busy.is_some() {
            self.queued.push_back(text);
            Action::None
        } else {
            // With no session open, sending says so.
            Action::Send(text)
        }
    }

    pub(super) fn refresh_mention(&mut self) {
        self.mention = match (self.composer.mention(), &self.files) {
            (Some((start, query)), Some(files)) => {
                let matches = files.matches(&query);
                let selected = self
                    .mention
                    .as_ref()
                    .filter(|m| m.start == start)
                    .map_or(0, |m| m.selected.min(matches.len().saturating_sub(1)));
                (!matches.is_empty()).then_some(MentionPopup {
                    start,
                    matches,
                    selected,
                })
            }
            _ => None,
        };
    }
}
