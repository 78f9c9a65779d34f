//! What a session reports to the pages, as JSON: each record's view ([`Record::view`]), with
//! what the page cannot make itself beside it: an answer's text and a card's body as HTML
//! (rendered here, where no raw HTML or script gets through), a call described by the run's
//! tools, a message's images as the page may fetch them.

use dsh_core::{AgentEvent, StreamDelta};
use dsh_protocol::{Block, Record, View};
use serde_json::{Value, json};

use super::{Live, image_json, lock};

impl Live {
    /// An agent event as the page reads it; `None` for what it does not show.
    pub(super) fn event_json(&self, event: &AgentEvent) -> Option<Value> {
        Some(match event {
            AgentEvent::Record(record) => self.view_json(record),
            AgentEvent::Delta(StreamDelta::Text(text)) => json!({"kind": "delta", "text": text}),
            AgentEvent::Delta(StreamDelta::Reasoning(text)) => {
                json!({"kind": "delta", "reasoning": text})
            }
            AgentEvent::Delta(_) => return None,
            AgentEvent::Notice(text) => json!({"kind": "notice", "text": text}),
            AgentEvent::ToolOutput { call_id, text } => {
                json!({"kind": "output", "callId": call_id, "text": text})
            }
            AgentEvent::Child { agent_id, event } => {
                let mut inner = self.event_json(event)?;
                inner["agent"] = json!(agent_id);
                inner
            }
        })
    }

    /// A record's view as the page reads it: `{"kind": "view", "view": {...}}`.
    pub(super) fn view_json(&self, record: &Record) -> Value {
        let view = record.view();
        let mut shown = serde_json::to_value(&view).unwrap_or(Value::Null);
        match view {
            View::User { message } => {
                let images: Vec<Value> = (message.content.iter())
                    .filter_map(|block| match block {
                        Block::Image { image } => Some(image),
                        _ => None,
                    })
                    .map(|image| {
                        let seen = image_json(image);
                        lock(&self.images).insert(image.attachment_id.clone(), image.clone());
                        seen
                    })
                    .collect();
                if !images.is_empty() {
                    shown["images"] = json!(images);
                }
            }
            View::Answer(answer) => {
                let text: Vec<&str> = (answer.message.content.iter())
                    .filter_map(|block| match block {
                        Block::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !text.is_empty() {
                    shown["html"] = json!(crate::markdown::to_html(&text.join("\n")));
                }
            }
            View::Call(call) => {
                if let Some(described) = self.described(&call.call_id, &call.name, &call.arguments)
                {
                    shown["described"] = described;
                }
            }
            View::Card(card) => {
                if let Some(detail) = card.detail {
                    shown["html"] = json!(crate::markdown::to_html(detail));
                }
            }
            _ => {}
        }
        json!({"kind": "view", "view": shown})
    }

    /// A call's title and diff or document as every front end shows them
    /// ([`dsh_core::ToolCatalog`]), remembered with its arguments for a question about it.
    fn described(&self, call_id: &str, name: &str, arguments: &str) -> Option<Value> {
        let catalog = lock(&self.catalog);
        let catalog = catalog.as_ref()?;
        let parsed: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let view = catalog.describe(name, &parsed);
        let mut shown = json!({"title": view.title});
        if let Some(change) = &view.change {
            shown["path"] = json!(change.path);
            shown["diff"] = crate::diff::lines(change, &self.cwd);
        }
        // A document the call carries (a plan) is shown whole.
        if let Some(document) = view.document {
            shown["html"] = json!(crate::markdown::to_html(document));
        }
        let mut remembered = shown.clone();
        remembered["arguments"] = json!(arguments);
        lock(&self.calls).insert(call_id.to_owned(), remembered);
        Some(shown)
    }
}
