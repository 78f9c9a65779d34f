//! An MCP server's question (elicitation) as a form in place of the composer: one row per
//! field, prefilled with its default, then "Submit" and "Decline". What was typed is read and
//! checked against the form on "Submit"; a field that is wrong is named and selected.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_core::ask::{Elicitation, FieldKind, FormField, FormRequest, shown_value, typed_value};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Map;

/// Whether a key finished a dialog (a form, or any other [`crate::dialog::Dialog`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Handled {
    Open,
    Closed,
}

pub struct FormDialog {
    request: Elicitation,
    /// Each field's text as typed, prefilled with its default.
    inputs: Vec<String>,
    /// The row under the cursor: the fields, then "Submit", then "Decline".
    selected: usize,
    /// What was wrong with the last "Submit".
    error: Option<String>,
    /// The server's request, until it is answered.
    pub(crate) asked: Option<FormRequest>,
}

impl FormDialog {
    pub fn new(asked: FormRequest) -> Self {
        let request = asked.form.clone();
        let inputs = (request.form.fields.iter())
            .map(|field| field.default.as_ref().map(shown_value).unwrap_or_default())
            .collect();
        FormDialog {
            request,
            inputs,
            selected: 0,
            error: None,
            asked: Some(asked),
        }
    }

    fn fields(&self) -> &[FormField] {
        &self.request.form.fields
    }

    fn submit_row(&self) -> usize {
        self.fields().len()
    }

    /// The text being typed, for a paste.
    pub fn input(&mut self) -> Option<&mut String> {
        let field = self.fields().get(self.selected)?;
        if matches!(
            field.kind,
            FieldKind::Text { .. } | FieldKind::Number { .. } | FieldKind::Choices { .. }
        ) {
            self.inputs.get_mut(self.selected)
        } else {
            None
        }
    }

    pub fn key(&mut self, key: KeyEvent) -> Handled {
        let rows = self.submit_row() + 2;
        match key.code {
            KeyCode::Up | KeyCode::BackTab => {
                self.selected = self.selected.saturating_sub(1);
                return Handled::Open;
            }
            KeyCode::Down | KeyCode::Tab => {
                self.selected = (self.selected + 1).min(rows - 1);
                return Handled::Open;
            }
            _ => {}
        }
        if self.selected == self.submit_row() {
            if key.code == KeyCode::Enter {
                return self.submit();
            }
            return Handled::Open;
        }
        if self.selected == self.submit_row() + 1 {
            if key.code == KeyCode::Enter {
                if let Some(asked) = self.asked.take() {
                    asked.decline();
                }
                return Handled::Closed;
            }
            return Handled::Open;
        }
        let index = self.selected;
        let kind = self.fields()[index].kind.clone();
        let input = &mut self.inputs[index];
        match (&kind, key.code) {
            (_, KeyCode::Enter) => self.selected += 1,
            (FieldKind::Boolean, KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right) => {
                *input = if input == "yes" { "no" } else { "yes" }.into();
            }
            (
                FieldKind::Choice { options },
                KeyCode::Left | KeyCode::Right | KeyCode::Char(' '),
            ) => {
                let at = options
                    .iter()
                    .position(|o| o.value == *input || o.title == *input);
                let next = match (at, key.code) {
                    (None, _) => 0,
                    (Some(i), KeyCode::Left) => (i + options.len() - 1) % options.len(),
                    (Some(i), _) => (i + 1) % options.len(),
                };
                if let Some(option) = options.get(next) {
                    *input = option.value.clone();
                }
            }
            (FieldKind::Boolean | FieldKind::Choice { .. }, _) => {}
            (_, KeyCode::Backspace) => {
                input.pop();
            }
            (_, KeyCode::Char(c)) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                input.push(c);
            }
            _ => {}
        }
        Handled::Open
    }

    /// Reads every field; sends the answer, or names what is wrong and selects it.
    fn submit(&mut self) -> Handled {
        let mut given = Map::new();
        for (index, field) in self.fields().iter().enumerate() {
            match typed_value(field, &self.inputs[index]) {
                Ok(Some(value)) => {
                    given.insert(field.name.clone(), value);
                }
                // Emptied on purpose: the default must not come back.
                Ok(None) if field.default.is_some() => {
                    given.insert(field.name.clone(), serde_json::Value::Null);
                }
                Ok(None) => {}
                Err(why) => {
                    self.error = Some(why);
                    self.selected = index;
                    return Handled::Open;
                }
            }
        }
        if let Err(why) = self.request.form.check(&given) {
            if let Some(index) =
                (self.fields().iter()).position(|f| why.starts_with(&format!("{}:", f.label())))
            {
                self.selected = index;
            }
            self.error = Some(why);
            return Handled::Open;
        }
        if let Some(asked) = self.asked.take() {
            asked.accept(given);
        }
        Handled::Closed
    }

    pub fn lines(&self) -> Vec<Line<'static>> {
        let mut lines = vec![
            Line::styled(
                format!("MCP server \"{}\" asks", self.request.server),
                Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
            ),
            Line::from(self.request.message.clone()),
        ];
        for (index, field) in self.fields().iter().enumerate() {
            let selected = index == self.selected;
            let (marker, style) = if selected {
                (
                    "› ",
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )
            } else {
                ("  ", Style::default())
            };
            let required = if field.required { "*" } else { "" };
            let mut spans = vec![
                Span::styled(
                    format!(
                        "{marker}{}{required} ({}): ",
                        field.label(),
                        kind_words(&field.kind)
                    ),
                    style,
                ),
                Span::raw(self.inputs[index].clone()),
            ];
            if selected {
                spans.push(Span::styled("▏", Style::new().fg(Color::Cyan)));
            }
            if let Some(description) = &field.description {
                spans.push(Span::styled(
                    format!(" — {description}"),
                    Style::new().fg(Color::DarkGray),
                ));
            }
            lines.push(Line::from(spans));
        }
        for (offset, label) in ["Submit", "Decline"].into_iter().enumerate() {
            let selected = self.selected == self.submit_row() + offset;
            let (marker, style) = if selected {
                (
                    "› ",
                    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
                )
            } else {
                ("  ", Style::default())
            };
            lines.push(Line::styled(format!("{marker}{label}"), style));
        }
        if let Some(error) = &self.error {
            lines.push(Line::styled(error.clone(), Style::new().fg(Color::Red)));
        }
        lines.push(Line::styled(
            "↑↓ move · type to edit · ←→ or Space change a choice · Enter on Submit sends · Esc cancels",
            Style::new().fg(Color::DarkGray),
        ));
        lines
    }
}

fn kind_words(kind: &FieldKind) -> String {
    match kind {
        FieldKind::Text {
            format: Some(format),
            ..
        } => format.clone(),
        FieldKind::Text { .. } => "text".into(),
        FieldKind::Number { integer: true, .. } => "whole number".into(),
        FieldKind::Number { .. } => "number".into(),
        FieldKind::Boolean => "yes/no".into(),
        FieldKind::Choice { options } => format!(
            "one of {}",
            options
                .iter()
                .map(|o| o.value.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        FieldKind::Choices { options, .. } => format!(
            "any of {}, separated by commas",
            options
                .iter()
                .map(|o| o.value.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::plain;
    use dsh_core::ask::{ElicitationAnswer, Form};
    use serde_json::json;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn sign_up() -> Elicitation {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name", "default": "John Doe"},
            "age": {"type": "integer", "minimum": 0},
            "status": {"type": "string", "enum": ["active", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }, "required": ["age"]});
        Elicitation {
            server: "asking".into(),
            message: "Who are you?".into(),
            form: Form::from_schema(&schema).unwrap(),
            schema,
        }
    }

    #[test]
    fn the_form_is_prefilled_checked_and_sent() {
        let (asked, mut rx) = FormRequest::new(sign_up());
        let mut dialog = FormDialog::new(asked);
        let text = |d: &FormDialog| plain(&d.lines());
        insta::assert_snapshot!(text(&dialog));
        // Submit with the required age empty: named, and selected.
        for _ in 0..4 {
            dialog.key(key(KeyCode::Down));
        }
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Open);
        assert!(
            text(&dialog).contains("age: needs an answer"),
            "{}",
            text(&dialog)
        );
        assert_eq!(dialog.selected, 1);
        for c in "41".chars() {
            dialog.key(key(KeyCode::Char(c)));
        }
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Right));
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Char(' ')));
        dialog.key(key(KeyCode::Down));
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        let Ok(ElicitationAnswer::Accept(given)) = rx.try_recv() else {
            panic!("the form was not sent");
        };
        assert_eq!(
            serde_json::Value::Object(given),
            json!({"name": "John Doe", "age": 41, "status": "pending", "verified": false})
        );
    }

    #[test]
    fn an_emptied_default_stays_empty() {
        let (asked, mut rx) = FormRequest::new(sign_up());
        let mut dialog = FormDialog::new(asked);
        for _ in 0.."John Doe".len() {
            dialog.key(key(KeyCode::Backspace));
        }
        dialog.key(key(KeyCode::Down));
        dialog.key(key(KeyCode::Char('7')));
        for _ in 0..3 {
            dialog.key(key(KeyCode::Down));
        }
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        let Ok(ElicitationAnswer::Accept(given)) = rx.try_recv() else {
            panic!("the form was not sent");
        };
        assert_eq!(given["name"], serde_json::Value::Null);
        let sent = sign_up().form.check(&given).unwrap();
        assert!(sent.get("name").is_none(), "{sent:?}");
    }

    #[test]
    fn decline_is_a_row_of_its_own() {
        let (asked, mut rx) = FormRequest::new(sign_up());
        let mut dialog = FormDialog::new(asked);
        for _ in 0..5 {
            dialog.key(key(KeyCode::Down));
        }
        assert_eq!(dialog.key(key(KeyCode::Enter)), Handled::Closed);
        assert_eq!(rx.try_recv().unwrap(), ElicitationAnswer::Decline);
    }
}
