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
    /// What front ends show of it, from its name and the server's annotations.
    facts: ToolFacts,
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
        let facts = facts_of(&name, tool.title.as_deref(), tool.annotations.as_ref());
        tools.push(Box::new(McpTool {
            name,
            facts,
            raw: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            parameters: Parameters::declared(Value::Object((*tool.input_schema).clone())),
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

/// A server's tool as front ends show it: titled by the server's title for it, else its
/// name; read-only only when the server declares it so (`readOnlyHint`), since dsh cannot
/// tell what else a tool changes and takes the server's word for it, as for the server's whole
/// behaviour (plan mode included); a read-only tool that reaches outside (`openWorldHint`)
/// fetches. Its arguments are its own, so a call's summary shows them.
fn facts_of(
    name: &str,
    title: Option<&str>,
    annotations: Option<&rmcp::model::ToolAnnotations>,
) -> ToolFacts {
    let title = title.or_else(|| annotations.and_then(|a| a.title.as_deref()));
    let hint = |get: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| {
        annotations.and_then(get).unwrap_or(false)
    };
    let read_only = hint(|a| a.read_only_hint);
    let kind = match (read_only, hint(|a| a.open_world_hint)) {
        (true, true) => ToolKind::Fetch,
        (true, false) => ToolKind::Read,
        (false, _) => ToolKind::Other,
    };
    let facts = ToolFacts::new(kind, title.unwrap_or(name).to_owned());
    if read_only { facts.read_only() } else { facts }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn facts(&self) -> ToolFacts {
        self.facts.clone()
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

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ToolAnnotations;

    #[test]
    fn a_servers_tool_is_described_by_its_annotations() {
        let plain = facts_of("mcp__gh__create_issue", None, None);
        assert_eq!(plain.kind, ToolKind::Other);
        assert_eq!(plain.verb, "mcp__gh__create_issue");
        assert!(!plain.read_only);
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = Some(true);
        let reader = facts_of(
            "mcp__gh__get_issue",
            Some("Get an issue"),
            Some(&annotations),
        );
        assert_eq!(
            (reader.kind, reader.verb.as_ref()),
            (ToolKind::Read, "Get an issue")
        );
        assert!(reader.read_only);
        annotations.open_world_hint = Some(true);
        annotations.title = Some("Search the web".into());
        let fetcher = facts_of("mcp__web__search", None, Some(&annotations));
        assert_eq!(
            (fetcher.kind, fetcher.verb.as_ref()),
            (ToolKind::Fetch, "Search the web")
        );
    }
}
