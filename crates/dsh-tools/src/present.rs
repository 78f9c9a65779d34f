//! `present`: the model hands the user something finished to look at (a report it wrote, a
//! patch, a summary of what changed). The result to the model is one line; what the user sees
//! is each front end's: a `present` event and a line on stderr headless, a card in the terminal
//! UI, a link in an editor.

use dsh_protocol::Presentation;

use crate::schema::{Param, ParamType, Parameters};
use crate::{
    Arguments, Tool, ToolContext, ToolEffect, ToolError, ToolFacts, ToolFuture, ToolKind,
    ToolOutput, fs_code, resolve,
};

/// The `present` tool.
pub struct Present {
    parameters: Parameters,
}

impl Default for Present {
    fn default() -> Self {
        Present {
            parameters: Parameters::new(vec![
                Param::required(
                    "title",
                    ParamType::String,
                    "What it is, in a few words (\"Migration plan\", \"Patch for the parser \
                     crash\").",
                ),
                Param::optional(
                    "path",
                    ParamType::String,
                    "The file to show: absolute, or relative to the working directory. It must \
                     exist.",
                ),
                Param::optional(
                    "summary",
                    ParamType::String,
                    "What the user should know about it, as markdown: what it is, how it was \
                     checked, what to look at first.",
                ),
            ]),
        }
    }
}

impl Tool for Present {
    fn name(&self) -> &str {
        "present"
    }

    fn description(&self) -> &str {
        "Hand the user a finished result to look at: a file you made (a report, a plan, a \
         patch) and/or a short markdown summary. Use it once the work is done and worth \
         reviewing, not for progress notes; your final answer still follows."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Other, "Present")
            .subject("title")
            .file("path")
            .read_only()
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let title = args.str("title").unwrap_or_default().trim();
            if title.is_empty() {
                return Err(ToolError::plain(
                    "present needs a title: say in a few words what you are showing",
                ));
            }
            let summary = (args.str("summary").map(str::trim)).filter(|s| !s.is_empty());
            let path = match args.str("path").filter(|p| !p.trim().is_empty()) {
                Some(raw) => Some(presented_file(ctx, raw)?),
                None => None,
            };
            if path.is_none() && summary.is_none() {
                return Err(ToolError::plain(
                    "present needs something to show: a path to a file, a summary, or both",
                ));
            }
            let shown = Presentation {
                turn: 0,
                title: title.to_owned(),
                path: path.map(|p| p.display().to_string()),
                summary: summary.map(str::to_owned),
            };
            let text = match &shown.path {
                Some(path) => format!("Presented \"{title}\" ({path}) to the user."),
                None => format!("Presented \"{title}\" to the user."),
            };
            Ok(ToolOutput::text(text).with_effect(ToolEffect::Present(shown)))
        })
    }
}

/// The file a call presents, as the model gave it (made absolute): it must be a file that is
/// there. Other failures to look at it are `read`'s errors.
fn presented_file(ctx: &ToolContext, raw: &str) -> Result<std::path::PathBuf, ToolError> {
    let target = resolve(&ctx.cwd, raw)?;
    match std::fs::metadata(&target.key) {
        Ok(meta) if meta.is_file() => Ok(target.display),
        Ok(_) => Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!(
                "\"{}\" is a directory: present one file, or describe the folder in summary",
                target.shown()
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ToolError::fs(
            fs_code::NOT_FOUND,
            format!(
                "\"{}\" does not exist: write the file first, or give its path as it is",
                target.shown()
            ),
        )),
        Err(e) => Err(crate::read::read_error(&target.shown().to_string(), &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::context;

    async fn call(dir: &std::path::Path, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let tool = Present::default();
        let args = tool.parameters().validate(args)?;
        tool.call(args, &context(dir)).await
    }

    #[tokio::test]
    async fn a_file_and_a_summary_become_one_presentation() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("report.md"), "# Report").unwrap();
        let out = call(
            dir.path(),
            serde_json::json!({"title": "Audit report", "path": "report.md", "summary": "Two findings."}),
        )
        .await
        .unwrap();
        let path = dir.path().join("report.md").display().to_string();
        assert_eq!(
            out.parts[0].text(),
            format!("Presented \"Audit report\" ({path}) to the user.")
        );
        let Some(ToolEffect::Present(shown)) = out.effect else {
            panic!("no presentation");
        };
        assert_eq!(shown.path.as_deref(), Some(path.as_str()));
        assert_eq!(shown.summary.as_deref(), Some("Two findings."));
    }

    #[tokio::test]
    async fn nothing_to_show_or_a_missing_file_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let error = call(dir.path(), serde_json::json!({"title": "X"}))
            .await
            .unwrap_err();
        assert!(
            error
                .message
                .contains("a path to a file, a summary, or both")
        );
        let error = call(
            dir.path(),
            serde_json::json!({"title": "X", "path": "gone.md"}),
        )
        .await
        .unwrap_err();
        assert_eq!(error.code(), Some("FS_NOT_FOUND"));
        let error = call(dir.path(), serde_json::json!({"title": "X", "path": "."}))
            .await
            .unwrap_err();
        assert!(
            error.message.contains("is a directory"),
            "{}",
            error.message
        );
    }
}
