//! `ask_user_question`: the model asks the user to choose or confirm before it goes on. The
//! questions go to the session's [`UserQuestions`] (the terminal UI); a run with no one to
//! answer (a headless one) says so at once, so the model decides for itself instead of waiting.
//! The answer is the reference's `{"answers":[{"id","selected","custom"?}]}`.

use std::future::Future;
use std::pin::Pin;

use crate::schema::{Param, ParamType, Parameters, Shape};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// One question as the user sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub id: String,
    pub question: String,
    pub header: Option<String>,
    pub options: Vec<QuestionOption>,
    pub multi_select: bool,
}

/// A choice offered for a question; its label is also the answer's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub label: String,
    pub description: Option<String>,
}

/// The user's answer to one question: the labels chosen, or their own words in `custom`
/// (which then stands alone). Nothing chosen and no words: the question was skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub id: String,
    pub selected: Vec<String>,
    pub custom: Option<String>,
}

impl Answer {
    /// The reference's shape: `custom` only when there is one.
    fn to_json(&self) -> serde_json::Value {
        let mut answer = serde_json::json!({ "id": self.id, "selected": self.selected });
        if let Some(custom) = &self.custom {
            answer["custom"] = custom.as_str().into();
        }
        answer
    }
}

/// How asking went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskOutcome {
    /// One answer per question, in the questions' order.
    Answered(Vec<Answer>),
    /// The user closed the questions without answering.
    Cancelled,
}

/// Someone who can answer the model's questions (the terminal UI, an editor), and, where
/// [`UserQuestions::can_elicit`] says so, an MCP server's questions.
pub trait UserQuestions: Send + Sync {
    /// Puts the questions of call `call_id` to the user.
    fn ask(
        &self,
        call_id: &str,
        questions: Vec<Question>,
    ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>>;

    /// Whether an MCP server's form ([`UserQuestions::elicit`]) can be put to the user here:
    /// only then do the MCP servers hear that dsh takes their questions.
    fn can_elicit(&self) -> bool {
        false
    }

    /// Puts an MCP server's form to the user. The answer's fields are checked again against
    /// the form before they go back.
    fn elicit(
        &self,
        request: crate::Elicitation,
    ) -> Pin<Box<dyn Future<Output = crate::ElicitationAnswer> + Send + '_>> {
        let _ = request;
        Box::pin(async { crate::ElicitationAnswer::Decline })
    }
}

/// The `ask_user_question` tool.
pub struct AskUserQuestion {
    parameters: Parameters,
}

impl Default for AskUserQuestion {
    fn default() -> Self {
        // The reference's schema: open objects (other keys are accepted and dropped).
        let option = Shape {
            params: vec![
                Param::required(
                    "label",
                    ParamType::String,
                    "The choice, as the user reads it.",
                ),
                Param::optional(
                    "description",
                    ParamType::String,
                    "One sentence on what choosing it means.",
                ),
            ],
            additional: Some(true),
        };
        let question = Shape {
            params: vec![
                Param::required(
                    "id",
                    ParamType::String,
                    "A stable id for the question; the answer names it.",
                ),
                Param::required("question", ParamType::String, "The question itself."),
                Param::optional("header", ParamType::String, "A short heading for it."),
                Param::optional(
                    "options",
                    ParamType::Array(Box::new(ParamType::Shape(Box::new(option)))),
                    "Choices to offer; a recommended one goes first, its label ending in \
                     \"(Recommended)\".",
                ),
                Param::optional(
                    "multi_select",
                    ParamType::Boolean,
                    "Whether more than one option may be chosen (default false).",
                ),
            ],
            additional: Some(true),
        };
        AskUserQuestion {
            parameters: Parameters::new(vec![Param::required(
                "questions",
                ParamType::Array(Box::new(ParamType::Shape(Box::new(question)))),
                "The questions to put to the user.",
            )]),
        }
    }
}

impl Tool for AskUserQuestion {
    fn name(&self) -> &str {
        "ask_user_question"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Think, "Ask")
            .summary(question_summary)
            .read_only()
    }

    fn description(&self) -> &str {
        "Ask the user to choose or confirm something only they can decide, before going on. \
         Each question has an id that the answer repeats; offer options where you can."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let questions = questions(&args);
            if questions.is_empty() {
                return Err(question_error(
                    "EMPTY_QUESTIONS",
                    "ask_user_question requires at least one question",
                ));
            }
            let Some(provider) = &ctx.session.questions else {
                // The reference's text for a run with no one to answer, then what to do.
                return Err(question_error(
                    "NO_PROVIDER",
                    "no user-questions provider is registered: no user is present in this run \
                     to answer. Decide with what you know, and say in your answer which \
                     assumptions you made",
                ));
            };
            let outcome = tokio::select! {
                outcome = provider.ask(&ctx.call_id, questions) => outcome,
                () = ctx.cancel.cancelled() => return Err(question_error(
                    "ASK_ABORTED",
                    "ask_user_question was aborted before the user answered",
                )),
            };
            match outcome {
                AskOutcome::Answered(answers) => {
                    let answers: Vec<_> = answers.iter().map(Answer::to_json).collect();
                    Ok(ToolOutput::text(
                        serde_json::json!({ "answers": answers }).to_string(),
                    ))
                }
                AskOutcome::Cancelled => Err(question_error(
                    "ASK_CANCELLED",
                    "the user cancelled ask_user_question",
                )),
            }
        })
    }
}

fn question_error(code: &str, message: &str) -> ToolError {
    ToolError::coded("UserQuestionError", code, message)
}

/// The questions the arguments hold; the schema has already checked their shape.
fn questions(args: &Arguments) -> Vec<Question> {
    let text = |value: &serde_json::Value, key: &str| {
        value.get(key).and_then(|v| v.as_str()).map(str::to_owned)
    };
    let Some(list) = args.get("questions").and_then(|q| q.as_array()) else {
        return Vec::new();
    };
    list.iter()
        .map(|q| Question {
            id: text(q, "id").unwrap_or_default(),
            question: text(q, "question").unwrap_or_default(),
            header: text(q, "header"),
            options: q
                .get("options")
                .and_then(|o| o.as_array())
                .map(|options| {
                    options
                        .iter()
                        .map(|o| QuestionOption {
                            label: text(o, "label").unwrap_or_default(),
                            description: text(o, "description"),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            multi_select: q.get("multi_select").and_then(serde_json::Value::as_bool) == Some(true),
        })
        .collect()
}

/// The first question.
fn question_summary(args: &serde_json::Value) -> Option<String> {
    let first = args.pointer("/questions/0/question");
    Some(
        first
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Answers every question with its first option, or cancels.
    struct FirstChoice {
        cancel: bool,
    }

    impl UserQuestions for FirstChoice {
        fn ask(
            &self,
            _call_id: &str,
            questions: Vec<Question>,
        ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
            let outcome = if self.cancel {
                AskOutcome::Cancelled
            } else {
                AskOutcome::Answered(
                    questions
                        .iter()
                        .map(|q| match q.options.first() {
                            Some(option) => Answer {
                                id: q.id.clone(),
                                selected: vec![option.label.clone()],
                                custom: None,
                            },
                            None => Answer {
                                id: q.id.clone(),
                                selected: Vec::new(),
                                custom: Some("my words".into()),
                            },
                        })
                        .collect(),
                )
            };
            Box::pin(std::future::ready(outcome))
        }
    }

    fn args() -> Arguments {
        let tool = AskUserQuestion::default();
        tool.parameters
            .validate(serde_json::json!({"questions": [
                {"id": "db", "question": "Which database?", "options": [
                    {"label": "Postgres (Recommended)"}, {"label": "SQLite"}]},
                {"id": "name", "question": "What name?"}
            ]}))
            .unwrap()
    }

    fn context(questions: Option<Arc<dyn UserQuestions>>) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = crate::testing::context(dir.path());
        let session = Arc::get_mut(&mut ctx.session).unwrap();
        session.questions = questions;
        (dir, ctx)
    }

    #[tokio::test]
    async fn answers_come_back_in_the_reference_shape() {
        let (_dir, ctx) = context(Some(Arc::new(FirstChoice { cancel: false })));
        let output = AskUserQuestion::default().call(args(), &ctx).await.unwrap();
        let [dsh_protocol::ToolOutputPart::Text { text }] = output.parts.as_slice() else {
            panic!("one text part expected: {output:?}");
        };
        assert_eq!(
            text,
            r#"{"answers":[{"id":"db","selected":["Postgres (Recommended)"]},{"id":"name","selected":[],"custom":"my words"}]}"#
        );
    }

    #[tokio::test]
    async fn a_closed_dialog_and_a_stopped_run_are_errors_the_model_can_read() {
        let (_dir, ctx) = context(Some(Arc::new(FirstChoice { cancel: true })));
        let error = AskUserQuestion::default()
            .call(args(), &ctx)
            .await
            .unwrap_err();
        assert_eq!(error.info.unwrap().code, "ASK_CANCELLED");

        struct Never;
        impl UserQuestions for Never {
            fn ask(
                &self,
                _: &str,
                _: Vec<Question>,
            ) -> Pin<Box<dyn Future<Output = AskOutcome> + Send + '_>> {
                Box::pin(std::future::pending())
            }
        }
        let (_dir, ctx) = context(Some(Arc::new(Never)));
        ctx.cancel.cancel();
        let error = AskUserQuestion::default()
            .call(args(), &ctx)
            .await
            .unwrap_err();
        assert_eq!(error.info.unwrap().code, "ASK_ABORTED");

        let (_dir, ctx) = context(None);
        let error = AskUserQuestion::default()
            .call(args(), &ctx)
            .await
            .unwrap_err();
        assert_eq!(error.info.unwrap().code, "NO_PROVIDER");
    }
}
