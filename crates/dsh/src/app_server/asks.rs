//! The run's requests (an escalation to approve, the model's questions, an MCP server's form)
//! as the server's `request` messages, and the client's `answer`s put through each request's
//! own methods, which decide what an answer means ([`dsh_core::ask`]). A host tool's call is
//! a request too, answered with the tool's output or error.

use std::collections::HashMap;

use dsh_core::HostCall;
use dsh_core::ask::{Answer, Approval, Choice, FormRequest, Questions, Request};
use serde_json::{Value, json};

use super::message::{Refusal, code, say};

/// What waits for the client: something the run asks, or a call of one of its tools.
enum Waiting {
    Asked(Request),
    Tool(HostCall),
}

/// The requests waiting for the client, by the id they were sent with.
#[derive(Default)]
pub struct Asks {
    waiting: HashMap<String, Waiting>,
    /// The number of the last request sent: ids are `ask-1`, `ask-2`...
    sent: u64,
}

impl Asks {
    /// Sends a host tool's call to the client and keeps it until it is answered.
    pub fn call(&mut self, call: HostCall) {
        let message = json!({
            "kind": "tool",
            "callId": call.call_id,
            "tool": call.tool,
            "input": call.input,
        });
        self.send(message, Waiting::Tool(call));
    }

    fn send(&mut self, mut message: Value, waiting: Waiting) {
        self.sent += 1;
        let id = format!("ask-{}", self.sent);
        message["type"] = json!("request");
        message["id"] = json!(id);
        say(&message);
        self.waiting.insert(id, waiting);
    }

    /// Sends `request` to the client and keeps it until it is answered.
    pub fn ask(&mut self, request: Request) {
        let message = match &request {
            Request::Approval(asked) => approval(asked),
            Request::Questions(asked) => questions(asked),
            Request::Form(asked) => json!({
                "kind": "form",
                "server": asked.form.server,
                "message": asked.form.message,
                "schema": asked.form.schema,
            }),
        };
        self.send(message, Waiting::Asked(request));
    }

    /// Answers request `id` with the client's `answer` message.
    pub fn answer(&mut self, id: &Value, request: &str, answer: &Value) -> Result<(), Refusal> {
        let bad = |what: String| Refusal::new(id, code::BAD_REQUEST, what);
        let asked = self.waiting.remove(request).ok_or_else(|| {
            Refusal::new(
                id,
                code::UNKNOWN_REQUEST,
                format!(
                    "request \"{request}\" is not waiting for an answer (answered already, \
                     withdrawn when its turn ended, or never sent)"
                ),
            )
        })?;
        // A malformed answer leaves the request waiting for a good one.
        let kept = |this: &mut Asks, asked: Waiting, problem: String| {
            this.waiting.insert(request.to_owned(), asked);
            Err(bad(format!("the answer to \"{request}\": {problem}")))
        };
        let asked = match asked {
            Waiting::Tool(call) => {
                match (&answer["output"], &answer["error"]) {
                    (Value::String(output), Value::Null) => call.succeed(output.clone()),
                    (Value::Null, Value::String(error)) => call.fail(error.clone()),
                    _ => {
                        let problem = "a tool call is answered with \"output\" or \"error\", \
                                       a string";
                        return kept(self, Waiting::Tool(call), problem.into());
                    }
                }
                return Ok(());
            }
            Waiting::Asked(asked) => asked,
        };
        match asked {
            Request::Approval(approval) => match choice(answer) {
                Ok(choice) => approval.answer(choice, answer["reason"].as_str()),
                Err(problem) => {
                    return kept(self, Waiting::Asked(Request::Approval(approval)), problem);
                }
            },
            Request::Questions(questions) => match answers(answer) {
                Ok(Some(answers)) => questions.answer(answers),
                Ok(None) => questions.cancel(),
                Err(problem) => {
                    return kept(self, Waiting::Asked(Request::Questions(questions)), problem);
                }
            },
            Request::Form(form) => {
                if let Err((form, problem)) = fill(form, answer) {
                    return kept(self, Waiting::Asked(Request::Form(form)), problem);
                }
            }
        }
        Ok(())
    }

    /// The turn ended: what it asked and was not answered no longer waits. Each request is
    /// dropped (so cancelled) and the client told it is withdrawn.
    pub fn withdraw_all(&mut self) {
        let mut ids: Vec<String> = self.waiting.drain().map(|(id, _)| id).collect();
        ids.sort_by_key(|id| id.trim_start_matches("ask-").parse::<u64>().unwrap_or(0));
        for id in ids {
            say(&json!({"type": "withdrawn", "request": id}));
        }
    }
}

fn approval(asked: &Approval) -> Value {
    let request = &asked.request;
    let choices: Vec<&str> = (asked.choices().iter())
        .map(|choice| match choice {
            Choice::Once => "once",
            Choice::Session => "session",
            Choice::Deny => "deny",
        })
        .collect();
    json!({
        "kind": "approval",
        "callId": request.call_id,
        "tool": request.tool,
        "reason": request.reason,
        "grant": request.grant,
        "choices": choices,
    })
}

fn questions(asked: &Questions) -> Value {
    let questions: Vec<Value> = (asked.questions.iter())
        .map(|q| {
            let options: Vec<Value> = (q.options.iter())
                .map(|o| json!({"label": o.label, "description": o.description}))
                .collect();
            json!({
                "id": q.id,
                "question": q.question,
                "header": q.header,
                "options": options,
                "multiSelect": q.multi_select,
            })
        })
        .collect();
    json!({"kind": "questions", "callId": asked.call_id, "questions": questions})
}

/// An approval's `choice`.
fn choice(answer: &Value) -> Result<Choice, String> {
    match answer["choice"].as_str() {
        Some("once") => Ok(Choice::Once),
        Some("session") => Ok(Choice::Session),
        Some("deny") => Ok(Choice::Deny),
        _ => Err("an approval's \"choice\" is once, session or deny".into()),
    }
}

/// The questions' `answers`, or `None` for `"cancel": true`.
fn answers(answer: &Value) -> Result<Option<Vec<Answer>>, String> {
    if answer["cancel"] == true {
        return Ok(None);
    }
    let problem = || {
        "questions are answered with \"answers\": [{\"id\", \"selected\": [labels], \
         \"custom\"?}], or \"cancel\": true"
            .to_owned()
    };
    let given = answer["answers"].as_array().ok_or_else(problem)?;
    given
        .iter()
        .map(|a| {
            let id = a["id"].as_str().ok_or_else(problem)?;
            let selected = match &a["selected"] {
                Value::Null => Vec::new(),
                Value::Array(labels) => (labels.iter())
                    .map(|l| l.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or_else(problem)?,
                _ => return Err(problem()),
            };
            Ok(Answer {
                id: id.to_owned(),
                selected,
                custom: a["custom"].as_str().map(str::to_owned),
            })
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// A form's `action` (`accept` with its `content`, `decline`, `cancel`).
fn fill(form: FormRequest, answer: &Value) -> Result<(), (FormRequest, String)> {
    match answer["action"].as_str() {
        Some("accept") => match answer["content"].as_object() {
            Some(content) => form.accept(content.clone()),
            None => return Err((form, "\"accept\" needs a \"content\" object".into())),
        },
        Some("decline") => form.decline(),
        Some("cancel") => form.cancel(),
        _ => {
            return Err((
                form,
                "a form's \"action\" is accept, decline or cancel".into(),
            ));
        }
    }
    Ok(())
}
