//! `list_mcp_resources` and `read_mcp_resource`: what MCP servers offer to read besides tools
//! (files, schemas, records), for the servers that declare resources. Offered once such a
//! server is ready.

use std::sync::Arc;

use dsh_tools::{
    Arguments, Param, ParamType, Parameters, Tool, ToolContext, ToolError, ToolFacts, ToolFuture,
    ToolGroup, ToolKind, ToolOutput,
};
use serde_json::{Value, json};

use crate::McpServers;
use crate::link::Link;

/// The name of the group the two tools come in.
const GROUP: &str = "mcp resources";

/// The two tools, over every server of `servers` that declares resources.
pub(crate) fn group(servers: &McpServers) -> ToolGroup {
    ToolGroup {
        name: GROUP.to_owned(),
        listing: 1,
        tools: vec![
            Box::new(ListMcpResources {
                servers: servers.clone(),
                parameters: Parameters::new(vec![Param::optional(
                    "server",
                    ParamType::String,
                    "Only this server's resources (default: every server's).",
                )]),
            }),
            Box::new(ReadMcpResource {
                servers: servers.clone(),
                parameters: Parameters::new(vec![
                    Param::required("server", ParamType::String, "The server that lists it."),
                    Param::required("uri", ParamType::String, "The resource's URI, as listed."),
                ]),
            }),
        ],
    }
}

/// The servers with resources, by name; `only` names one.
fn servers_with_resources(
    servers: &McpServers,
    only: Option<&str>,
) -> Result<Vec<Arc<Link>>, ToolError> {
    let links: Vec<Arc<Link>> = servers
        .links()
        .into_iter()
        .filter(|link| link.has_resources())
        .collect();
    let Some(name) = only else {
        return Ok(links);
    };
    match links.iter().find(|link| link.server.name == name) {
        Some(link) => Ok(vec![link.clone()]),
        None => {
            let names: Vec<&str> = links.iter().map(|l| l.server.name.as_str()).collect();
            Err(ToolError::plain(format!(
                "no MCP server \"{name}\" with resources; servers with resources: {}",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )))
        }
    }
}

/// The `list_mcp_resources` tool.
struct ListMcpResources {
    servers: McpServers,
    parameters: Parameters,
}

impl Tool for ListMcpResources {
    fn name(&self) -> &str {
        "list_mcp_resources"
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Read, "List the MCP resources of")
            .subject("server")
            .read_only()
    }

    fn description(&self) -> &str {
        "List the resources MCP servers offer to read (their URIs, names and types); read one \
         with read_mcp_resource."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let only = args.str("server");
            let mut listed = Vec::new();
            for link in servers_with_resources(&self.servers, only)? {
                let resources = match link.list_resources().await {
                    Ok(resources) => resources,
                    // One server's failure is its entry, not the whole listing's.
                    Err(error) if only.is_none() => {
                        listed.push(json!({"server": link.server.name, "error": error}));
                        continue;
                    }
                    Err(error) => return Err(ToolError::plain(error)),
                };
                for resource in resources {
                    let mut entry = json!({"server": link.server.name, "uri": resource.uri, "name": resource.name});
                    if let Some(mime) = &resource.mime_type {
                        entry["mimeType"] = Value::from(mime.as_str());
                    }
                    if let Some(description) = &resource.description {
                        entry["description"] = Value::from(description.as_str());
                    }
                    listed.push(entry);
                }
            }
            Ok(ToolOutput::text(json!({"resources": listed}).to_string()))
        })
    }
}

/// The `read_mcp_resource` tool.
struct ReadMcpResource {
    servers: McpServers,
    parameters: Parameters,
}

impl Tool for ReadMcpResource {
    fn name(&self) -> &str {
        "read_mcp_resource"
    }

    fn facts(&self) -> ToolFacts {
        ToolFacts::new(ToolKind::Read, "Read the MCP resource")
            .subject("uri")
            .read_only()
    }

    fn description(&self) -> &str {
        "Read one resource of an MCP server by its URI (from list_mcp_resources)."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let server = args.str("server").unwrap_or_default();
            let uri = args.str("uri").unwrap_or_default();
            if uri.trim().is_empty() {
                return Err(ToolError::plain("uri must be a non-empty string"));
            }
            let links = servers_with_resources(&self.servers, Some(server))?;
            let result = links[0]
                .read_resource(uri)
                .await
                .map_err(ToolError::plain)?;
            let contents = serde_json::to_value(&result.contents).unwrap_or_default();
            let blocks: Vec<String> = contents
                .as_array()
                .into_iter()
                .flatten()
                .map(|content| {
                    let uri = content["uri"].as_str().unwrap_or(uri);
                    let mime = content["mimeType"].as_str().unwrap_or("unknown type");
                    match (content["text"].as_str(), content["blob"].as_str()) {
                        (Some(text), _) => format!("[resource {uri} ({mime})]\n{text}"),
                        (None, Some(blob)) => format!(
                            "[resource {uri} ({mime}): binary, {} bytes; not shown]",
                            blob.len() / 4 * 3
                        ),
                        (None, None) => format!("[resource {uri} ({mime}): no content]"),
                    }
                })
                .collect();
            if blocks.is_empty() {
                return Ok(ToolOutput::text(format!(
                    "(resource {uri} has no contents)"
                )));
            }
            Ok(ToolOutput::text(blocks.join("\n\n")))
        })
    }
}
