//! How the UI's state is drawn in the live area: what is streaming, the calls running, the
//! queue, the composer or the dialog or list in its place, and the footer.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{App, DIM, LIVE_OUTPUT_LINES, SPINNER, SessionPicker};
use crate::slash;
use crate::transcript::tokens;
use crate::wrap::wrap_lines;

impl App {
    /// The live area: what is streaming, the calls running, the queue, the composer (or the
    /// dialog in its place) and the footer.
    pub fn draw(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let width = area.width;
        let mut bottom: Vec<Line<'static>> = Vec::new();
        let mut cursor = None;
        if let Some(dialog) = self.dialogs.front() {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(wrap_lines(&dialog.lines(), width));
        } else if let Some(picker) = &self.picker {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(picker.lines(width, area.height.saturating_sub(4)));
        } else if let Some(view) = &self.rewind {
            bottom.push(rule(width, Color::Yellow));
            bottom.extend(wrap_lines(
                &view.lines(width, area.height.saturating_sub(4)),
                width,
            ));
        } else {
            if let Some(search) = &self.history {
                bottom.extend(search.lines(width));
            } else if let Some(m) = &self.mention {
                for (i, path) in m.matches.iter().enumerate() {
                    let style = if i == m.selected {
                        Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                    } else {
                        DIM
                    };
                    bottom.push(Line::styled(format!("  @{path}"), style));
                }
            } else if self.indexing {
                bottom.push(Line::styled(
                    "  indexing the workspace for @ mentions…",
                    DIM,
                ));
            } else if self.composer.text().starts_with('/') && !self.composer.text().contains(' ') {
                let typed = self.composer.text();
                let found = slash::completions(&typed, &self.prompts);
                for name in found.iter().take(5) {
                    let about = slash::COMMANDS
                        .iter()
                        .find(|(c, _)| c == name)
                        .map_or("saved prompt", |(_, a)| a);
                    bottom.push(Line::styled(format!("  {name}  {about}"), DIM));
                }
            }
            for steering in &self.steering {
                let first = steering.lines().next().unwrap_or("");
                bottom.push(Line::styled(format!("  at the next step: {first}"), DIM));
            }
            for queued in &self.queued {
                let first = queued.lines().next().unwrap_or("");
                bottom.push(Line::styled(format!("  queued: {first}"), DIM));
            }
            bottom.push(rule(width, Color::DarkGray));
            let (rows, (col, row)) = self.composer.layout(width.saturating_sub(2));
            let shown = rows.len().min(6);
            let first = rows.len() - shown;
            let first = if usize::from(row) < first {
                usize::from(row)
            } else {
                first
            };
            for (i, text) in rows.iter().enumerate().skip(first).take(shown) {
                let prefix = if i == 0 { "› " } else { "  " };
                bottom.push(Line::from(vec![
                    Span::styled(prefix, Style::new().fg(Color::Cyan)),
                    Span::raw(text.clone()),
                ]));
            }
            let composer_top = bottom.len() - shown.min(rows.len() - first);
            cursor = Some((col + 2, composer_top + usize::from(row) - first));
        }
        bottom.push(self.footer(width));

        let height = usize::from(area.height);
        let bottom_len = bottom.len().min(height);
        let live_rows = height - bottom_len;
        let live = self.live_lines(width);
        let live: Vec<Line<'static>> = live[live.len().saturating_sub(live_rows)..].to_vec();
        let top = Rect::new(area.x, area.y, width, u16::try_from(live_rows).unwrap_or(0));
        frame.render_widget(Paragraph::new(live), top);
        let skip = bottom.len() - bottom_len;
        let y = area.y + u16::try_from(live_rows).unwrap_or(0);
        let rect = Rect::new(area.x, y, width, u16::try_from(bottom_len).unwrap_or(0));
        frame.render_widget(Paragraph::new(bottom[skip..].to_vec()), rect);
        if let Some((col, row)) = cursor
            && row >= skip
        {
            let row = u16::try_from(row - skip).unwrap_or(0);
            frame.set_cursor_position((area.x + col.min(width.saturating_sub(1)), y + row));
        }
    }

    /// What is streaming, and the calls running.
    fn live_lines(&self, width: u16) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if !self.live_reasoning.is_empty() && self.live_text.is_empty() {
            let tail: Vec<Line<'static>> = self
                .live_reasoning
                .lines()
                .map(|l| Line::styled(l.to_owned(), DIM.add_modifier(Modifier::ITALIC)))
                .collect();
            lines.extend(wrap_lines(&tail, width));
        }
        if !self.live_text.is_empty() {
            lines.extend(wrap_lines(&crate::markdown::render(&self.live_text), width));
        }
        let spin = SPINNER[self.tick % SPINNER.len()];
        for call in &self.active {
            lines.extend(wrap_lines(
                &[Line::from(vec![
                    Span::styled(format!("{spin} "), Style::new().fg(Color::Cyan)),
                    Span::styled(call.name.clone(), Style::new().add_modifier(Modifier::BOLD)),
                    Span::styled(format!(" {}", call.summary), DIM),
                ])],
                width,
            ));
            let output = crate::transcript::shown_lines(&call.output);
            let room = usize::from(width.saturating_sub(4));
            lines.extend(
                output[output.len().saturating_sub(LIVE_OUTPUT_LINES)..]
                    .iter()
                    .map(|l| Line::styled(format!("  │ {}", cut_to(l, room)), DIM)),
            );
        }
        if let Some(running) = &self.running {
            let what = if running.interrupted {
                "interrupting"
            } else if !self.active.is_empty() {
                "running tools"
            } else if !self.live_text.is_empty() {
                "answering"
            } else {
                "thinking"
            };
            lines.push(Line::from(vec![
                Span::styled(format!("{spin} {what}"), Style::new().fg(Color::Cyan)),
                Span::styled(
                    format!(
                        " · {}s · Esc or Ctrl-C interrupts",
                        running.started.elapsed().as_secs()
                    ),
                    DIM,
                ),
            ]));
        } else if let Some(busy) = &self.busy {
            lines.push(Line::styled(
                format!("{spin} {busy}"),
                Style::new().fg(Color::Cyan),
            ));
        }
        lines
    }

    fn footer(&self, width: u16) -> Line<'static> {
        if let Some((notice, _)) = &self.notice {
            return Line::styled(notice.clone(), Style::new().fg(Color::Yellow));
        }
        let Some(info) = &self.info else {
            let text = if self.busy.is_some() {
                "opening the session…"
            } else {
                "no session is open: /new starts one, /resume picks one"
            };
            return Line::styled(text, DIM);
        };
        let usage = &self.transcript.session_usage;
        let mut text = format!(
            "{} · {} · {} tokens",
            info.model,
            info.sandbox,
            tokens(usage.total_tokens)
        );
        if info.priced {
            text.push_str(&format!(" · ${:.4}", usage.cost_usd.unwrap_or(0.0)));
        }
        if self.context_used > 0 && info.context_window > 0 {
            // Rounded up: a conversation that fills any of the window shows at least 1%.
            let share = (self.context_used * 100)
                .div_ceil(info.context_window)
                .min(100);
            text.push_str(&format!(" · {share}% context"));
        }
        if let Some(todo) = self
            .transcript
            .todos
            .iter()
            .find(|t| t.status == dsh_protocol::TodoStatus::InProgress)
        {
            let done = self
                .transcript
                .todos
                .iter()
                .filter(|t| t.status == dsh_protocol::TodoStatus::Completed)
                .count();
            text.push_str(&format!(
                " · todo {done}/{}: {}",
                self.transcript.todos.len(),
                todo.content
            ));
        }
        let text: String = text.chars().take(usize::from(width)).collect();
        Line::styled(text, DIM)
    }
}

impl SessionPicker {
    fn lines(&self, width: u16, rows: u16) -> Vec<Line<'static>> {
        let mut lines = vec![Line::styled(
            "Resume a session (↑↓ choose · Enter opens · Esc cancels · type to search)",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        )];
        if !self.query.is_empty() {
            let found = match self.shown.len() {
                0 => "no session of this folder holds every word".to_owned(),
                1 => "1 session".to_owned(),
                n => format!("{n} sessions"),
            };
            lines.push(Line::styled(
                format!("search: {}▏ {found}", self.query),
                Style::new().fg(Color::Cyan),
            ));
        }
        let rows = usize::from(
            rows.saturating_sub(u16::from(!self.query.is_empty()))
                .max(1),
        );
        let first = self.selected.saturating_sub(rows - 1);
        let shown = self.shown.iter().map(|&index| &self.sessions[index]);
        for (i, s) in shown.enumerate().skip(first).take(rows) {
            let style = if i == self.selected {
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let marker = if i == self.selected { "› " } else { "  " };
            let short: String =
                s.id.trim_start_matches("session-")
                    .chars()
                    .take(8)
                    .collect();
            let text = format!(
                "{marker}{short}  {} turns · {} tokens · {}",
                s.turns,
                tokens(s.total_tokens),
                s.name()
            );
            lines.push(Line::styled(
                text.chars().take(usize::from(width)).collect::<String>(),
                style,
            ));
        }
        lines
    }
}

/// `text` cut to `columns` display columns.
fn cut_to(text: &str, columns: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    let mut used = 0;
    text.chars()
        .take_while(|c| {
            used += c.width().unwrap_or(0);
            used <= columns
        })
        .collect()
}

fn rule(width: u16, colour: Color) -> Line<'static> {
    Line::styled("─".repeat(usize::from(width)), Style::new().fg(colour))
}
