//! `ask_user_question`: the model asks the user to choose or confirm before it goes on. A run
//! with no one to answer (every run built today: headless) says so at once, so the model decides
//! for itself instead of waiting.

use crate::schema::{Param, ParamType, Parameters, Shape};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture};

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

    fn description(&self) -> &str {
        "Ask the user to choose or confirm something only they can decide, before going on. \
         Each question has an id that the answer repeats; offer options where you can."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// It asks.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let asked = args
                .get("questions")
                .and_then(|q| q.as_array())
                .map_or(0, Vec::len);
            if asked == 0 {
                return Err(ToolError::coded(
                    "UserQuestionError",
                    "EMPTY_QUESTIONS",
                    "ask_user_question requires at least one question",
                ));
            }
            // The reference's text for a run with no one to answer, then what to do instead.
            Err(ToolError::coded(
                "UserQuestionError",
                "NO_PROVIDER",
                "no user-questions provider is registered: no user is present in this run to \
                 answer. Decide with what you know, and say in your answer which assumptions \
                 you made",
            ))
        })
    }
}
