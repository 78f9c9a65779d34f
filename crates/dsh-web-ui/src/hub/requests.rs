//! A session's requests (an approval, the model's questions, an MCP server's form) as
//! questions for its pages: each is pushed as an `ask` report, and the first page to answer
//! it answers the run; one the run stops waiting for is withdrawn from the pages.

use std::sync::Weak;

use dsh_core::ask::{Answer, Approval, Choice, FormRequest, Questions, Request, Requests};
use serde_json::{Value, json};

use super::Live;

impl Live {
    /// Answers the session's requests until its runs are gone, each in a task of its own: a
    /// question waits for a page while another is asked.
    pub(super) async fn answer_requests(live: Weak<Live>, mut requests: Requests) {
        while let Some(request) = requests.recv().await {
            let Some(live) = live.upgrade() else {
                // The session is gone: nobody is left to ask (a dropped request is cancelled).
                if let Request::Approval(asked) = request {
                    asked.unavailable();
                }
                continue;
            };
            tokio::task::spawn_local(async move {
                match request {
                    Request::Approval(asked) => live.approve(asked).await,
                    Request::Questions(asked) => live.ask_questions(asked).await,
                    Request::Form(asked) => live.fill(asked).await,
                }
            });
        }
    }

    /// The call itself beside the reason: what is approved is what runs, not what the model
    /// says of it.
    async fn approve(&self, mut asked: Approval) {
        let request = &asked.request;
        let question = json!({
            "ask": "approval",
            "tool": request.tool,
            "callId": request.call_id,
            "reason": request.reason,
            "grant": request.grant,
            "call": self.call(&request.call_id),
        });
        let Some(answer) = self.ask(question, &mut asked.reply).await else {
            return asked.cancel();
        };
        let choice = match answer["outcome"].as_str() {
            Some("once") => Choice::Once,
            Some("session") => Choice::Session,
            Some("deny") => Choice::Deny,
            _ => return asked.cancel(),
        };
        asked.answer(choice, answer["reason"].as_str());
    }

    async fn ask_questions(&self, mut asked: Questions) {
        let shown: Vec<Value> = (asked.questions.iter())
            .map(|q| {
                json!({
                    "id": q.id,
                    "question": q.question,
                    "header": q.header,
                    "multiSelect": q.multi_select,
                    "options": q.options.iter().map(|o| json!({
                        "label": o.label, "description": o.description
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let question = json!({"ask": "questions", "questions": shown});
        let Some(answer) = self.ask(question, &mut asked.reply).await else {
            return asked.cancel();
        };
        let Some(answers) = answer["answers"].as_array() else {
            return asked.cancel();
        };
        let answers = (answers.iter())
            .filter_map(|a| {
                Some(Answer {
                    id: a["id"].as_str()?.to_owned(),
                    selected: (a["selected"].as_array().into_iter().flatten())
                        .filter_map(|label| label.as_str().map(str::to_owned))
                        .collect(),
                    custom: a["custom"].as_str().map(str::to_owned),
                })
            })
            .collect();
        asked.answer(answers);
    }

    async fn fill(&self, mut asked: FormRequest) {
        let form = &asked.form;
        let question = json!({
            "ask": "form",
            "server": form.server,
            "message": form.message,
            "schema": form.schema,
        });
        let Some(answer) = self.ask(question, &mut asked.reply).await else {
            return asked.cancel();
        };
        match answer["action"].as_str() {
            Some("accept") => {
                asked.accept(answer["content"].as_object().cloned().unwrap_or_default());
            }
            Some("decline") => asked.decline(),
            _ => asked.cancel(),
        }
    }
}
