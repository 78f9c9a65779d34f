//! The `edit` tool: replace literal text in a file the session has read.
//!
//! Matching is literal, on text with CRLF line ends normalised to LF (in the file and in both
//! strings); the file's majority line ending is restored on the way out, and a leading BOM is
//! kept. When nothing matches, the error says where the closest text is.

use std::os::unix::fs::PermissionsExt;

use crate::atomic::{Publish, publish};
use crate::mutate::{
    Fenced, call_policy, escalation_params, fence, resolve_for_write, with_remedy,
};
use crate::schema::{Param, ParamType, Parameters};
use crate::{
    Arguments, Observation, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, Version, fs_code,
};

const BOM: &str = "\u{feff}";
/// Line endings are judged on this many UTF-16 units from the start, as the reference does.
const STYLE_SAMPLE_UNITS: usize = 4096;

/// The `edit` tool.
pub struct Edit {
    parameters: Parameters,
}

impl Edit {
    /// `confining`: whether writes are fenced, so that the escalation arguments are offered.
    pub fn new(confining: bool) -> Self {
        let mut params = vec![
            Param::required(
                "file_path",
                ParamType::String,
                "File to change: absolute, or relative to the workspace.",
            ),
            Param::required(
                "old_string",
                ParamType::String,
                "The exact text to replace, whitespace and indentation included.",
            ),
            Param::required(
                "new_string",
                ParamType::String,
                "The text to put in its place; empty to delete it.",
            ),
            Param::optional(
                "replace_all",
                ParamType::Boolean,
                "Replace every occurrence. Without it old_string must occur exactly once.",
            ),
        ];
        if confining {
            params.extend(escalation_params());
        }
        Edit {
            parameters: Parameters::new(params),
        }
    }
}

impl Tool for Edit {
    fn name(&self) -> &str {
        "edit"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Edit, "Edit")
            .file("file_path")
            .hook_names(&["Edit"])
            .change(edit_change)
    }

    fn description(&self) -> &str {
        "Change a text file by replacing an exact piece of its text with new text."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "`edit` replaces old_string with new_string; old_string must match the file exactly \
             and, unless replace_all is set, only once, so include enough surrounding lines to \
             make it unique. Read the file first, unless this session just wrote or edited it.",
        )
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args.str("file_path").unwrap_or_default().to_owned();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("file_path must be a non-empty string"));
            }
            let old = args.str("old_string").unwrap_or_default().to_owned();
            let new = args.str("new_string").unwrap_or_default().to_owned();
            if old.is_empty() {
                return Err(ToolError::plain("old_string must be a non-empty string"));
            }
            crate::redact::refuse_placeholder(&ctx.session, &new)?;
            if old == new {
                return Err(ToolError::plain("old_string and new_string must differ"));
            }
            let replace_all = args.bool("replace_all").unwrap_or(false);
            let policy = call_policy(&args, ctx, "edit", dsh_sandbox::Subject::Operation).await?;
            let target = resolve_for_write(&policy, &raw)?;
            let session = ctx.session.clone();
            let buffer = crate::read::editor_text(&session, &target)
                .await
                .map(|open| open.text);
            let editor = session.writing_editor();
            let through_editor = editor.is_some();
            let (target, shown, edited) = crate::registry::blocking("edit", move || {
                let shown = target.shown().to_string();
                let version = match session.observations.get(&target.key) {
                    None => {
                        return Err(with_remedy(ToolError::fs(
                            fs_code::NOT_OBSERVED,
                            format!("edit requires reading \"{shown}\" first"),
                        )));
                    }
                    Some(Observation::Absent) => {
                        return Err(ToolError::fs(
                            fs_code::NOT_FOUND,
                            format!("cannot edit \"{shown}\": not found"),
                        ));
                    }
                    Some(Observation::Present(version)) => version,
                };
                let Fenced { target, site } =
                    fence(&target, &policy, session.offers_escalation(), false)?;
                let change = Change {
                    old: &old,
                    new: &new,
                    replace_all,
                };
                let edited =
                    edited_file(&site, &version, change, &shown, buffer).map_err(with_remedy)?;
                if through_editor {
                    return Ok((target, shown, Some(edited.text)));
                }
                let mode = Publish::Replace { mode: edited.mode };
                publish(&site, edited.text.as_bytes(), mode, &shown)?;
                session.observe_written(&target.key);
                Ok((target, shown, None))
            })
            .await?;
            if let (Some(editor), Some(text)) = (editor, edited) {
                editor
                    .write_text(&target.display, text)
                    .await
                    .map_err(|reason| crate::write::editor_refused(&shown, &reason.0))?;
                ctx.session.observe_written(&target.key);
            }
            Ok(ToolOutput::text(if replace_all {
                format!(
                    "The file {shown} has been updated. All occurrences were successfully replaced."
                )
            } else {
                format!("The file {shown} has been updated successfully.")
            }))
        })
    }
}

struct Change<'a> {
    old: &'a str,
    new: &'a str,
    replace_all: bool,
}

/// A file's new content, and the permissions it keeps.
struct Edited {
    text: String,
    mode: u32,
}

/// The file's content with the change made, checked against the version the session saw.
/// `buffer` is the editor's text of the file, which is what is changed when there is one.
fn edited_file(
    site: &dsh_fence::WriteSite,
    seen: &Version,
    change: Change<'_>,
    shown: &str,
    buffer: Option<String>,
) -> Result<Edited, ToolError> {
    let stale = || {
        ToolError::fs(
            fs_code::STALE_VERSION,
            format!("cannot edit \"{shown}\": file changed since it was read"),
        )
    };
    // Looked at and read at the name the fence opened, never through a symlink.
    let meta = site.metadata().ok().flatten().ok_or_else(stale)?;
    if !meta.is_file() {
        return Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot edit \"{shown}\": not a regular file"),
        ));
    }
    // Checked before matching: stale content must never be reported as "not found".
    if Version::of(&meta) != *seen {
        return Err(stale());
    }
    let bytes = match buffer {
        Some(text) => text.into_bytes(),
        None => {
            let mut file = site.open_read().map_err(|_| stale())?;
            // The file opened is the one checked (nothing was swapped in between).
            if file.metadata().map(|m| Version::of(&m)).ok().as_ref() != Some(seen) {
                return Err(stale());
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            std::io::Read::read_to_end(&mut file, &mut bytes)
                .map_err(|e| crate::atomic::write_error(shown, &e))?;
            bytes
        }
    };
    if bytes.contains(&0) {
        return Err(ToolError::fs(
            fs_code::NOT_TEXT,
            format!("cannot edit \"{shown}\": binary file"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::fs(
            fs_code::NOT_TEXT,
            format!("cannot edit \"{shown}\": invalid UTF-8 text"),
        )
    })?;
    let (bom, text) = match text.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", text.as_str()),
    };
    let crlf = is_crlf(text);
    let text = text.replace("\r\n", "\n");
    let old = change.old.replace("\r\n", "\n");
    let new = change.new.replace("\r\n", "\n");
    let matches = text.matches(old.as_str()).count();
    if matches == 0 {
        return Err(ToolError::fs(
            fs_code::EDIT_NOT_FOUND,
            format!(
                "old_string was not found in \"{shown}\"; {}",
                crate::edit_hint::closest(&text, &old)
            ),
        ));
    }
    if matches > 1 && !change.replace_all {
        return Err(ToolError::fs(
            fs_code::AMBIGUOUS_EDIT,
            format!(
                "old_string matched {matches} times in \"{shown}\"; provide a more specific \
                 old_string or set replace_all to true"
            ),
        ));
    }
    let mut edited = text.replace(old.as_str(), &new);
    if crlf {
        // A replacement can join a lone CR to a LF; that pair is one line end too.
        edited = edited.replace("\r\n", "\n").replace('\n', "\r\n");
    }
    Ok(Edited {
        text: format!("{bom}{edited}"),
        mode: meta.permissions().mode(),
    })
}

/// Whether CRLF ends most lines of the file's start (ties and files without newlines are LF).
fn is_crlf(text: &str) -> bool {
    let mut units = 0;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > STYLE_SAMPLE_UNITS {
            end = at;
            break;
        }
    }
    let sample = &text[..end];
    let crlf = sample.matches("\r\n").count();
    let lf = sample.matches('\n').count() - crlf;
    crlf > lf
}

fn edit_change<'a>(args: &'a serde_json::Value) -> Option<crate::CallChange<'a>> {
    let text = |key: &str| crate::text_arg(args, key);
    Some(crate::CallChange {
        path: text("file_path")?,
        old: Some(text("old_string")?),
        new: text("new_string")?,
        whole_file: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_line_endings_by_majority() {
        assert!(is_crlf("a\r\nb\r\nc\nd\r\n"));
        assert!(!is_crlf("a\r\nb\n"));
        assert!(!is_crlf("no newline"));
    }
}
