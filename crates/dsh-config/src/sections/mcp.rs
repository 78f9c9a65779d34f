//! `[mcp]`: the MCP servers whose tools the model is offered, how each is reached and how
//! long it may take, and how long the first request waits for servers that start late.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::environment::SetupError;
use crate::layer::quote_key;
use crate::resolver::Resolver;
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// How each key can widen what a server may take ([`crate::trust_look::Widens`]); its
/// program, address and sign-in have rules of their own ([`crate::trust_rules`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher("mcp.startup_grace_ms", MCP_GRACE_MS, Reason::Limit),
    Guard::higher(
        "mcp.servers.*.call_timeout_ms",
        MCP_TIMEOUT_MS,
        Reason::Limit,
    ),
    Guard::higher(
        "mcp.servers.*.startup_timeout_ms",
        MCP_TIMEOUT_MS,
        Reason::Limit,
    ),
    Guard::neither(
        "mcp.servers.*.fail_on_startup_error",
        "whether the run stops or goes on without the server",
    ),
    Guard::switch("mcp.servers.*.enabled", true, true, Reason::Server),
    Guard::neither(
        "mcp.servers.*.oauth.callback_port",
        "a port on this machine; the sign-in itself needs trust",
    ),
];

/// MCP servers whose tools the model is offered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// How long the first request waits for servers that may start late, in milliseconds
    /// (default 3000); their tools join a later request when they are ready.
    pub startup_grace_ms: Option<u64>,
    /// The servers by name; the name is the middle of their tools' names
    /// (`mcp__<name>__<tool>`).
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// One MCP server: `command` (a child process on stdio) or `url` (streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to start, looked up on PATH.
    pub command: Option<String>,
    pub args: Vec<String>,
    /// Variables set for it, over the inherited environment (which loses secrets and `DSH_*`).
    pub env: BTreeMap<String, String>,
    /// Where it starts, relative to the working directory (default: the working directory).
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable-HTTP server.
    pub url: Option<String>,
    /// Headers sent with every HTTP request.
    pub headers: BTreeMap<String, String>,
    /// How long one tool call may take, in milliseconds (default 60000).
    pub call_timeout_ms: Option<u64>,
    /// How long starting and listing tools may take, in milliseconds (default 60000).
    pub startup_timeout_ms: Option<u64>,
    /// Stop the run before its task when the server cannot start (default false: run
    /// without its tools, with a warning).
    pub fail_on_startup_error: Option<bool>,
    /// false leaves a server of a lower layer out.
    pub enabled: Option<bool>,
    /// How dsh signs in to a url server that uses OAuth (`dsh mcp login`).
    pub oauth: Option<McpOAuthConfig>,
}

/// An MCP server's OAuth client settings; all optional: without them dsh registers itself.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpOAuthConfig {
    /// A client id registered with the server's authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The HTTPS address of a client ID metadata document describing dsh.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for besides those the server asks for.
    pub scopes: Vec<String>,
    /// The loopback port the browser returns to (default: any free port).
    pub callback_port: Option<u16>,
}

/// The MCP servers of a run.
#[derive(Debug, Clone)]
pub struct Mcp {
    /// How long the first request waits for servers that may start late.
    pub startup_grace: Sourced<Duration>,
    /// The enabled servers, in name order, then those a front end handed over.
    pub servers: Vec<McpServerSettings>,
}

/// The servers the config enables and those a front end hands over (`given`), checked; the
/// grace recorded.
pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &McpConfig,
    given: &[McpServerSettings],
    cwd: &Path,
) -> Result<Mcp, SetupError> {
    let startup_grace = r.millis(
        "mcp.startup_grace_ms",
        config.startup_grace_ms,
        Duration::from_millis(MCP_GRACE_MS),
    );
    let servers = servers(r, config, given, cwd)?;
    Ok(Mcp {
        startup_grace,
        servers,
    })
}

/// The default of an MCP server's `call_timeout_ms` and `startup_timeout_ms`.
const MCP_TIMEOUT_MS: u64 = 60_000;

/// The default of `mcp.startup_grace_ms`.
const MCP_GRACE_MS: u64 = 3_000;

/// One MCP server as the run will start it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerSettings {
    pub name: String,
    pub transport: McpTransport,
    pub call_timeout: Duration,
    pub startup_timeout: Duration,
    pub fail_on_startup_error: bool,
}

impl McpServerSettings {
    /// A server handed over by a front end (an editor's own servers, over ACP), with the
    /// defaults a config entry gets: the config's timeouts, and optional, so that a server
    /// that cannot start is reported and the session goes on without its tools.
    pub fn given(name: String, transport: McpTransport) -> McpServerSettings {
        McpServerSettings {
            name,
            transport,
            call_timeout: Duration::from_millis(MCP_TIMEOUT_MS),
            startup_timeout: Duration::from_millis(MCP_TIMEOUT_MS),
            fail_on_startup_error: false,
        }
    }
}

impl McpServerSettings {
    /// Where the server's OAuth sign-in is kept under dsh's home `home`, and how dsh signs in;
    /// `None` for a command server or one that sends its own `Authorization` header.
    pub fn oauth_setup(&self, home: &Path) -> Option<dsh_mcp::oauth::OAuthSetup> {
        match &self.transport {
            McpTransport::Http {
                url,
                oauth: Some(client),
                ..
            } => Some(dsh_mcp::oauth::OAuthSetup::new(
                home,
                &self.name,
                url,
                client.clone(),
            )),
            _ => None,
        }
    }
}

/// How an MCP server is reached.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process; `env` is set over what it inherits (secrets and `DSH_*` scrubbed).
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: PathBuf,
    },
    Http {
        url: String,
        headers: Vec<(String, String)>,
        /// How dsh signs in with OAuth; `None` when the configuration sends its own
        /// `Authorization` header.
        oauth: Option<dsh_mcp::oauth::OAuthClient>,
    },
}

/// `env` and `headers` values (and a URL, which can carry a token) often hold secrets: only
/// names are shown.
impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &env.iter().map(|(k, _)| k).collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { headers, .. } => f
                .debug_struct("Http")
                .field(
                    "headers",
                    &headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                )
                .finish_non_exhaustive(),
        }
    }
}

/// The MCP servers the config enables, then the ones a front end hands over (an editor's),
/// which replace a server of the same name.
fn servers(
    r: &mut Resolver<'_>,
    config: &McpConfig,
    given: &[McpServerSettings],
    cwd: &Path,
) -> Result<Vec<McpServerSettings>, SetupError> {
    let mut mcp_servers = config
        .servers
        .iter()
        .filter(|(_, server)| server.enabled != Some(false))
        .map(|(name, server)| mcp_server(r, name, server, cwd))
        .collect::<Result<Vec<_>, _>>()?;
    for server in given {
        mcp_servers.retain(|s| s.name != server.name);
        mcp_servers.push(server.clone());
    }
    Ok(mcp_servers)
}

/// One configured MCP server, checked; its defaults recorded.
fn mcp_server(
    r: &mut Resolver<'_>,
    name: &str,
    config: &McpServerConfig,
    cwd: &Path,
) -> Result<McpServerSettings, SetupError> {
    let file = r
        .layers()
        .source_of(&format!("mcp.servers.{}", quote_key(name)));
    let fail = |what: String| {
        SetupError::config(format!(
            "config mcp.servers.{name} ({}): {what}",
            file.display()
        ))
    };
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
            if config.oauth.is_some() {
                return Err(fail(
                    "oauth is for url servers (a command server signs in its own way); remove \
                     it"
                    .into(),
                ));
            }
            McpTransport::Stdio {
                command: command.clone(),
                args: config.args.clone(),
                env: config
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
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
            McpTransport::Http {
                url: url.clone(),
                headers: config
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                oauth: oauth_client(config).map_err(fail)?,
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
    let prefix = format!("mcp.servers.{}", quote_key(name));
    let mut timeout = |field: &str, value: Option<u64>| {
        if value == Some(0) {
            return Err(fail(format!("{field} must be more than 0")));
        }
        Ok(r.millis(
            &format!("{prefix}.{field}"),
            value,
            Duration::from_millis(MCP_TIMEOUT_MS),
        )
        .value)
    };
    let call_timeout = timeout("call_timeout_ms", config.call_timeout_ms)?;
    let startup_timeout = timeout("startup_timeout_ms", config.startup_timeout_ms)?;
    let key = format!("{prefix}.fail_on_startup_error");
    let fail_on_startup_error = r
        .setting(&key, [r.file(&key, config.fail_on_startup_error)], false)
        .value;
    Ok(McpServerSettings {
        name: name.to_owned(),
        transport,
        call_timeout,
        startup_timeout,
        fail_on_startup_error,
    })
}

/// How dsh signs in to a url server: `None` when the configuration sends its own
/// `Authorization` header (then the server's auth is the user's business), else the `oauth`
/// table's settings (all optional).
pub(crate) fn oauth_client(
    config: &McpServerConfig,
) -> Result<Option<dsh_mcp::oauth::OAuthClient>, String> {
    let own_header = (config.headers.keys()).any(|k| k.eq_ignore_ascii_case("authorization"));
    let Some(oauth) = &config.oauth else {
        return Ok((!own_header).then(Default::default));
    };
    if own_header {
        return Err(
            "give either an Authorization header or an oauth table, not both; remove one".into(),
        );
    }
    if oauth.client_secret.is_some() && oauth.client_id.is_none() {
        return Err("oauth.client_secret needs the oauth.client_id it belongs to".into());
    }
    if let Some(document) = &oauth.client_metadata_url {
        let https = url_has_path(document) && document.to_ascii_lowercase().starts_with("https://");
        if !https {
            return Err(
                "oauth.client_metadata_url must be an https:// address with a path (the client \
                 ID metadata document describing dsh)"
                    .into(),
            );
        }
    }
    if oauth
        .scopes
        .iter()
        .any(|s| s.is_empty() || s.contains(char::is_whitespace))
    {
        return Err("oauth.scopes takes one scope per entry, without spaces".into());
    }
    Ok(Some(dsh_mcp::oauth::OAuthClient {
        client_id: oauth.client_id.clone(),
        client_secret: oauth.client_secret.clone(),
        client_metadata_url: oauth.client_metadata_url.clone(),
        scopes: oauth.scopes.clone(),
        callback_port: oauth.callback_port.filter(|p| *p != 0),
    }))
}

/// Whether `address` has a path beyond `/` after its host.
fn url_has_path(address: &str) -> bool {
    address
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('/'))
        .is_some_and(|(_, path)| !path.is_empty())
}
