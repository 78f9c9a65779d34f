//! The configured MCP servers, checked and turned into what `dsh-mcp` starts.

use std::time::Duration;

use dsh_core::{Config, McpServerConfig};
use dsh_mcp::{McpServer, Transport};
use dsh_tools::ShellEnv;

use crate::run::SetupError;

/// The default of `call_timeout_ms` and `startup_timeout_ms`.
const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// The default of `mcp.startup_grace_ms`.
const DEFAULT_GRACE_MS: u64 = 3_000;

/// How long the first request waits for optional servers.
pub(crate) fn grace(files: &Config) -> Duration {
    Duration::from_millis(files.mcp.startup_grace_ms.unwrap_or(DEFAULT_GRACE_MS))
}

/// The enabled servers of the config, in name order. A stdio server inherits the environment
/// commands get (secrets and `DSH_*` scrubbed) plus its own `env`.
pub(crate) fn servers(
    files: &Config,
    cwd: &std::path::Path,
    shell_env: &ShellEnv,
) -> Result<Vec<McpServer>, SetupError> {
    files
        .mcp
        .servers
        .iter()
        .filter(|(_, server)| server.enabled != Some(false))
        .map(|(name, server)| server_of(name, server, cwd, shell_env))
        .collect()
}

fn server_of(
    name: &str,
    config: &McpServerConfig,
    cwd: &std::path::Path,
    shell_env: &ShellEnv,
) -> Result<McpServer, SetupError> {
    let fail = |what: String| SetupError(format!("config mcp.servers.{name}: {what}"));
    if !dsh_mcp::valid_server_name(name) {
        return Err(fail(
            "the name must be 1 to 32 letters, digits, `_` or `-`, without `__` and not \
             ending in `_` (it becomes part of each tool's name, mcp__<server>__<tool>)"
                .into(),
        ));
    }
    let transport = match (&config.command, &config.url) {
        (Some(command), None) => {
            if !config.headers.is_empty() {
                return Err(fail("headers are for url servers; remove them".into()));
            }
            let mut env: Vec<_> = std::env::vars_os()
                .filter(|(name, _)| !shell_env.scrubs(name))
                .collect();
            for (key, value) in &config.env {
                env.retain(|(name, _)| name.as_os_str() != key.as_str());
                env.push((key.into(), value.into()));
            }
            Transport::Stdio {
                command: command.into(),
                args: config.args.iter().map(Into::into).collect(),
                env,
                cwd: config
                    .cwd
                    .as_ref()
                    .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir)),
            }
        }
        (None, Some(url)) => {
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("http" | "https")) {
                // Not quoted: a URL can carry a token, and errors are not the place for it.
                return Err(fail(
                    "url is not an http:// or https:// address; give the server's full URL".into(),
                ));
            }
            if !config.args.is_empty() || !config.env.is_empty() || config.cwd.is_some() {
                return Err(fail(
                    "args, env and cwd are for command servers; remove them".into(),
                ));
            }
            Transport::Http {
                url: url.clone(),
                headers: config
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            }
        }
        (Some(_), Some(_)) => {
            return Err(fail(
                "give either command (a stdio server) or url (an HTTP server), not both".into(),
            ));
        }
        (None, None) => {
            return Err(fail(
                "give command (a stdio server) or url (an HTTP server)".into(),
            ));
        }
    };
    let ms = |value: Option<u64>, key: &str| match value {
        Some(0) => Err(fail(format!("{key} must be more than 0"))),
        value => Ok(Duration::from_millis(value.unwrap_or(DEFAULT_TIMEOUT_MS))),
    };
    Ok(McpServer {
        name: name.to_owned(),
        transport,
        call_timeout: ms(config.call_timeout_ms, "call_timeout_ms")?,
        startup_timeout: ms(config.startup_timeout_ms, "startup_timeout_ms")?,
        fail_on_startup_error: config.fail_on_startup_error.unwrap_or(false),
    })
}
