//! An MCP server's tool as a dsh [`Tool`].

use std::collections::HashSet;
use std::sync::Arc;

use dsh_protocol::ToolOutputPart;
use dsh_tools::{
    Arguments, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture, ToolKind,
    ToolOutput,
};
use serde_json::Value;

use crate::content::{ImageAdmission, project};
use crate::link::Link;
use crate::name::public_tool_name;

/// One tool of one server. Calls are exclusive: dsh knows nothing of what they touch.
pub(crate) struct McpTool {
    /// The name the model calls it by.
    name: String,
    /// The server's own name for it, the one sent in `tools/call`.
    raw: String,
    description: String,
    parameters: Parameters,
    /// The server says the tool changes nothing (`readOnlyHint`): it may run in plan mode.
    read_only: bool,
    link: Arc<Link>,
}

/// The server's listed tools as dsh tools; a list naming a tool twice is refused whole.
pub(crate) fn bridge(
    link: &Arc<Link>,
    listed: Vec<rmcp::model::Tool>,
) -> Result<Vec<Box<dyn Tool>>, String> {
    let mut seen = HashSet::new();
    let mut tools: Vec<Box<dyn Tool>> = Vec::new();
    for tool in listed {
        let name = public_tool_name(&link.server.name, &tool.name);
        if !seen.insert(name.clone()) {
            return Err(format!(
                "it listed the tool \"{}\" more than once, which makes its list unusable",
                tool.name
            ));
        }
        tools.push(Box::new(McpTool {
            name,
            raw: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            parameters: Parameters::declared(Value::Object((*tool.input_schema).clone())),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            link: link.clone(),
        }));
    }
    Ok(tools)
}

fn has_images(content: &[Value]) -> bool {
    content
        .iter()
        .any(|block| block.get("type").and_then(Value::as_str) == Some("image"))
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    /// Read-only only when its server declares it so (`readOnlyHint`): dsh cannot tell what
    /// else a tool changes, and takes the server's word for it, as for the server's whole
    /// behaviour (plan mode included). Its title is its name: its arguments are its own.
    fn facts(&self) -> ToolFacts {
        let kind = if self.read_only {
            ToolKind::Read
        } else {
            ToolKind::Other
        };
        let facts = ToolFacts::new(kind, self.name.clone());
        if self.read_only {
            facts.read_only()
        } else {
            facts
        }
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let result = self
                .link
                .call(&self.raw, args.into_map())
                .await
                .map_err(ToolError::plain)?;
            let content: Vec<Value> = result
                .content
                .iter()
                .filter_map(|block| serde_json::to_value(block).ok())
                .collect();
            let session = &ctx.session;
            let images = match (&session.attachments, session.model.image_input) {
                (_, _) if result.is_error == Some(true) => {
                    // An error result is text: images in it are described, not shown.
                    ImageAdmission::Refused("the result is an error".into())
                }
                (Some(store), true) => ImageAdmission::Allowed(store.clone()),
                (None, _) => ImageAdmission::Refused("no attachment store is mounted".into()),
                (Some(_), false) => ImageAdmission::Refused(format!(
                    "model \"{}\" does not declare image input",
                    session.model.name
                )),
            };
            let structured = result.structured_content;
            let raw = self.raw.clone();
            let parts = if has_images(&content) {
                // Checking base64 (up to 20 MiB an image, admitted or not) and resizing are
                // CPU work: kept off the async thread, which also serves signals and stderr.
                tokio::task::spawn_blocking(move || {
                    project(&content, structured.as_ref(), &raw, &images)
                })
                .await
                .map_err(|e| {
                    ToolError::plain(format!("the result's images could not be read: {e}"))
                })?
            } else {
                project(&content, structured.as_ref(), &raw, &images)
            };
            if result.is_error == Some(true) {
                let text: Vec<&str> = parts.iter().map(ToolOutputPart::text).collect();
                return Err(ToolError::plain(text.join("\n")));
            }
            Ok(ToolOutput::parts(parts))
        })
    }
}
