//! The MCP servers an editor hands a session (`mcpServers` of `session/new`, `load` and
//! `resume`), started beside those of dsh's config, their tools offered as
//! `mcp__<server>__<tool>` like any other.

use std::path::Path;

use agent_client_protocol::v1::schema::McpServer;
use dsh_core::config::{McpServerSettings, McpTransport};

/// The servers dsh can start, and a line for each it cannot (an SSE server, a name that
/// cannot become part of a tool name even when tidied).
pub fn servers(given: &[McpServer], cwd: &Path) -> (Vec<McpServerSettings>, Vec<String>) {
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    for server in given {
        let (name, transport) = match server {
            McpServer::Stdio(stdio) => (
                &stdio.name,
                McpTransport::Stdio {
                    command: stdio.command.to_string_lossy().into_owned(),
                    args: stdio.args.clone(),
                    env: (stdio.env.iter())
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect(),
                    cwd: cwd.to_path_buf(),
                },
            ),
            McpServer::Http(http) => (
                &http.name,
                McpTransport::Http {
                    url: http.url.clone(),
                    headers: (http.headers.iter())
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                    // The editor's servers carry the editor's own credentials, if any.
                    oauth: None,
                },
            ),
            McpServer::Sse(sse) => {
                skipped.push(format!(
                    "MCP server {}: dsh speaks stdio and streamable HTTP, not SSE; it is left out",
                    sse.name
                ));
                continue;
            }
            _ => {
                skipped.push("an MCP server of a kind dsh does not know is left out".to_owned());
                continue;
            }
        };
        match tool_prefix(name) {
            Some(tidy) => servers.push(McpServerSettings::given(tidy, transport)),
            None => skipped.push(format!(
                "MCP server \"{name}\": its name cannot be part of a tool name; it is left out"
            )),
        }
    }
    (servers, skipped)
}

/// An editor's server names are for people ("GitHub Issues"); a tool name takes letters,
/// digits, `_` and `-` only: other characters become `-`.
fn tool_prefix(name: &str) -> Option<String> {
    let mut tidy: String = (name.trim().chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    while tidy.contains("__") {
        tidy = tidy.replace("__", "_");
    }
    let tidy = tidy.trim_end_matches('_').to_owned();
    // What is left is a server name unless it is empty (the settings check it again).
    (!tidy.is_empty()).then_some(tidy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_for_people_become_tool_prefixes() {
        assert_eq!(
            tool_prefix("GitHub Issues").as_deref(),
            Some("GitHub-Issues")
        );
        assert_eq!(tool_prefix("my__server_").as_deref(), Some("my_server"));
        assert_eq!(tool_prefix("   "), None);
    }
}
