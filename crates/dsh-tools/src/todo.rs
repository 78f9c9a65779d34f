//! `todo_write`: the model keeps a task list for the work at hand. Each call sends the whole
//! list, which replaces the one before; the list is a session record (so a resumed session
//! and whoever watches the run know it) and never goes back into the model's history.

use dsh_protocol::{TodoItem, TodoStatus};

use crate::schema::{Param, ParamType, Parameters, Shape};
use crate::{Arguments, Tool, ToolContext, ToolEffect, ToolError, ToolFuture, ToolOutput};

/// The `todo_write` tool.
pub struct TodoWrite {
    parameters: Parameters,
}

impl Default for TodoWrite {
    fn default() -> Self {
        // The reference's schema: an array of closed {content, status} objects.
        let item = Shape {
            params: vec![
                Param::required(
                    "content",
                    ParamType::String,
                    "The task, as one short imperative line.",
                ),
                Param::required(
                    "status",
                    ParamType::String,
                    "pending (not started), in_progress (being done now) or completed (done).",
                )
                .one_of(&["pending", "in_progress", "completed"]),
            ],
            additional: Some(false),
        };
        TodoWrite {
            parameters: Parameters::new(vec![Param::required(
                "todos",
                ParamType::Array(Box::new(ParamType::Shape(Box::new(item)))),
                "The whole task list; it replaces the previous one.",
            )]),
        }
    }
}

impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "todo_write"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Think, "Update the plan")
            .hook_names(&["TodoWrite"])
            .summary(todo_summary)
            .read_only()
    }

    fn description(&self) -> &str {
        "Keep a task list for multi-step work: send the whole list each time (it replaces the \
         last one), with one task in_progress while you work on it and each marked completed as \
         soon as it is done. Skip it for work of a single step."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let todos = todo_list(&args)?;
            let count = |status| todos.iter().filter(|t| t.status == status).count();
            // The count line alone, as the reference answers (conformance todo-write-basic):
            // the list itself is already in the model's own call, so restating it would only
            // bill its tokens a second time.
            let text = format!(
                "Updated todo list: {} pending, {} in progress, {} completed.",
                count(TodoStatus::Pending),
                count(TodoStatus::InProgress),
                count(TodoStatus::Completed)
            );
            Ok(ToolOutput::text(text).with_effect(ToolEffect::Todos(todos)))
        })
    }
}

/// The list the arguments give, checked as the reference checks it (contents trimmed, none
/// empty or repeated), and with at most one task in progress.
fn todo_list(args: &Arguments) -> Result<Vec<TodoItem>, ToolError> {
    let items = args
        .get("todos")
        .and_then(|v| v.as_array())
        .cloned()
        .unwrap_or_default();
    let mut todos: Vec<TodoItem> = Vec::with_capacity(items.len());
    for item in &items {
        let content = item["content"]
            .as_str()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if content.is_empty() {
            return Err(ToolError::plain(
                "invalid todo: `content` must be a non-empty string",
            ));
        }
        if todos.iter().any(|t| t.content == content) {
            return Err(ToolError::plain(format!(
                "invalid todos: duplicate content {}",
                serde_json::Value::from(content)
            )));
        }
        let status = match item["status"].as_str() {
            Some("in_progress") => TodoStatus::InProgress,
            Some("completed") => TodoStatus::Completed,
            _ => TodoStatus::Pending,
        };
        todos.push(TodoItem { content, status });
    }
    let in_progress = todos
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .count();
    if in_progress > 1 {
        return Err(ToolError::plain(format!(
            "invalid todos: at most one task may be in_progress (got {in_progress})"
        )));
    }
    Ok(todos)
}

/// The list itself is shown as the plan; the call needs no words of its own.
fn todo_summary(_args: &serde_json::Value) -> Option<String> {
    Some(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolRegistry;
    use pretty_assertions::assert_eq;

    async fn call(arguments: &str) -> crate::ToolOutcome {
        let mut registry = ToolRegistry::new();
        registry.register(Box::new(TodoWrite::default()));
        let dir = tempfile::tempdir().unwrap();
        registry
            .execute(
                "todo_write",
                arguments,
                &crate::testing::context(dir.path()),
            )
            .await
    }

    #[tokio::test]
    async fn the_list_is_counted_and_becomes_an_effect() {
        let outcome = call(
            r#"{"todos":[{"content":" Parse input ","status":"completed"},{"content":"Test","status":"in_progress"},{"content":"Docs","status":"pending"}]}"#,
        )
        .await;
        assert_eq!(
            outcome.text(),
            "Updated todo list: 1 pending, 1 in progress, 1 completed."
        );
        let Some(ToolEffect::Todos(todos)) = outcome.effect else {
            panic!("no todos effect")
        };
        assert_eq!(todos[0].content, "Parse input");
        assert_eq!(todos[1].status, TodoStatus::InProgress);
        // An empty list clears it.
        assert_eq!(
            call(r#"{"todos":[]}"#).await.effect,
            Some(ToolEffect::Todos(Vec::new()))
        );
    }

    #[tokio::test]
    async fn bad_lists_are_refused_with_the_reference_texts() {
        for (arguments, error) in [
            (
                r#"{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}"#,
                "Error: invalid todos: at most one task may be in_progress (got 2)",
            ),
            (
                r#"{"todos":[{"content":"a","status":"pending"},{"content":" a","status":"completed"}]}"#,
                "Error: invalid todos: duplicate content \"a\"",
            ),
            (
                r#"{"todos":[{"content":"  ","status":"pending"}]}"#,
                "Error: invalid todo: `content` must be a non-empty string",
            ),
            (
                r#"{"todos":[{"content":"a","status":"done","priority":1}]}"#,
                "Error: invalid arguments: \"todos[0].status\" must be one of [\"pending\",\"in_progress\",\"completed\"]; \"todos[0].priority\" is not a declared property (additionalProperties: false)",
            ),
        ] {
            let outcome = call(arguments).await;
            assert!(outcome.is_error);
            assert_eq!(outcome.text(), error);
        }
    }
}
