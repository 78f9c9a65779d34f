//! The `write` tool: create a file, or replace one the session has read.

use std::os::unix::fs::PermissionsExt;

use dsh_fence::WriteSite;

use crate::atomic::{Publish, publish};
use crate::mutate::{
    Fenced, call_policy, escalation_params, fence, resolve_for_write, with_remedy,
};
use crate::schema::{Param, ParamType, Parameters};
use crate::{
    Arguments, Observation, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, Version, fs_code,
};

/// The `write` tool.
pub struct Write {
    parameters: Parameters,
}

impl Write {
    /// `confining`: whether writes are fenced, so that the escalation arguments are offered.
    pub fn new(confining: bool) -> Self {
        let mut params = vec![
            Param::required(
                "file_path",
                ParamType::String,
                "File to write: absolute, or relative to the workspace. Missing folders are created.",
            ),
            Param::required(
                "content",
                ParamType::String,
                "The whole new content, exactly as it should be stored.",
            ),
        ];
        if confining {
            params.extend(escalation_params());
        }
        Write {
            parameters: Parameters::new(params),
        }
    }
}

impl Tool for Write {
    fn name(&self) -> &str {
        "write"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Edit, "Write")
            .file("file_path")
            .hook_names(&["Write"])
            .change(write_change)
    }

    fn description(&self) -> &str {
        "Create a text file, or replace the whole of one you have read, with the given content."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`write` creates a file or replaces all of it; an existing file must be read first, \
             and for changes to part of a file `edit` is the better tool.",
        )
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args.str("file_path").unwrap_or_default().to_owned();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("file_path must be a non-empty string"));
            }
            let content = args.str("content").unwrap_or_default().to_owned();
            crate::redact::refuse_placeholder(&ctx.session, &content)?;
            let policy = call_policy(&args, ctx, "write", dsh_sandbox::Subject::Operation).await?;
            let target = resolve_for_write(&policy, &raw)?;
            let session = ctx.session.clone();
            let editor = session.writing_editor();
            let through_editor = editor.is_some();
            let (target, shown, created, content) = crate::registry::blocking("write", move || {
                let shown = target.shown().to_string();
                let seen = session.observations.get(&target.key);
                let Fenced { target, site } =
                    fence(&target, &policy, session.offers_escalation(), true)?;
                let publish_as = checked(&site, seen, &shown).map_err(with_remedy)?;
                let created = matches!(publish_as, Publish::Create);
                if through_editor {
                    return Ok((target, shown, created, Some(content)));
                }
                publish(&site, content.as_bytes(), publish_as, &shown)?;
                session.observe_written(&target.key);
                Ok((target, shown, created, None))
            })
            .await?;
            if let (Some(editor), Some(content)) = (editor, content) {
                editor
                    .write_text(&target.display, content)
                    .await
                    .map_err(|reason| editor_refused(&shown, &reason.0))?;
                ctx.session.observe_written(&target.key);
            }
            let what = if created {
                "Created file"
            } else {
                "Updated file"
            };
            Ok(ToolOutput::text(format!(
                "<path>{shown}</path>\n<type>file</type>\n<content>\n{what}\n</content>"
            )))
        })
    }
}

/// The editor would not take a write (ACP's `fs/write_text_file` failed): nothing changed.
pub(crate) fn editor_refused(shown: &str, reason: &str) -> ToolError {
    ToolError::fs(
        fs_code::IO_ERROR,
        format!(
            "cannot write \"{shown}\": the editor refused the change ({reason}); the file is \
             unchanged — read it again, or ask the user why the editor refuses it"
        ),
    )
}

/// Publishes `content` at `site` if what is there matches what the session saw. Returns whether
/// the file was created.
pub(crate) fn write_checked(
    site: &WriteSite,
    content: &str,
    seen: Option<Observation>,
    shown: &str,
) -> Result<bool, ToolError> {
    let publish_as = checked(site, seen, shown)?;
    let created = matches!(publish_as, Publish::Create);
    publish(site, content.as_bytes(), publish_as, shown)?;
    Ok(created)
}

/// How `site` may be written, if what is there matches what the session saw: replaced (keeping
/// its permissions) or created. What is there is looked at without following a symlink: one
/// swapped in after the fence is not a regular file.
fn checked(site: &WriteSite, seen: Option<Observation>, shown: &str) -> Result<Publish, ToolError> {
    let current = site
        .metadata()
        .map_err(|e| crate::atomic::write_error(shown, &e))?;
    let seen_version = match seen {
        Some(Observation::Present(version)) => Some(version),
        Some(Observation::Absent) | None => None,
    };
    match (current, seen_version) {
        (Some(meta), _) if !meta.is_file() => Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot write \"{shown}\": not a regular file"),
        )),
        (Some(_), None) => Err(ToolError::fs(
            fs_code::NOT_OBSERVED,
            format!("cannot overwrite existing \"{shown}\" without reading it first"),
        )),
        (Some(meta), Some(version)) if Version::of(&meta) != version => Err(ToolError::fs(
            fs_code::STALE_VERSION,
            format!("cannot write \"{shown}\": file changed since it was read"),
        )),
        (Some(meta), Some(_)) => Ok(Publish::Replace {
            mode: meta.permissions().mode(),
        }),
        (None, Some(_)) => Err(ToolError::fs(
            fs_code::STALE_VERSION,
            format!("cannot write \"{shown}\": file no longer exists"),
        )),
        (None, None) => Ok(Publish::Create),
    }
}

fn write_change<'a>(args: &'a serde_json::Value) -> Option<crate::CallChange<'a>> {
    let text = |key: &str| crate::text_arg(args, key);
    Some(crate::CallChange {
        path: text("file_path")?,
        old: None,
        new: text("content")?,
        whole_file: true,
    })
}
