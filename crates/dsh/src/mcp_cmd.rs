//! `dsh mcp`: the configured MCP servers and their OAuth sign-ins. `login` is the only place
//! dsh opens a browser; runs use what it stored and name the command when a server wants it.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, SystemTime};

use dsh_core::config::{McpServerSettings, McpTransport};
use dsh_core::{Flags, Settings};
use dsh_mcp::oauth::{LoginOutcome, LoginUi, SignIn};
use dsh_mcp::{McpServer, Transport};

use crate::surface::Surface;

/// How long a login waits for the browser unless `--timeout` says otherwise.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// What `dsh mcp` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpCommand {
    Login {
        server: String,
        wait: Duration,
        /// Print the address instead of opening a browser.
        no_browser: bool,
    },
    Logout {
        server: String,
    },
    List {
        json: bool,
    },
}

pub fn run(command: &McpCommand) -> u8 {
    let json = matches!(command, McpCommand::List { json: true });
    let outcome = crate::place::settings(&Flags::default()).and_then(|settings| {
        match command {
            McpCommand::Login {
                server,
                wait,
                no_browser,
            } => login(&settings, server, *wait, *no_browser),
            McpCommand::Logout { server } => logout(&settings, server),
            McpCommand::List { json } => list(&settings, *json),
        }
        .map_err(|message| dsh_core::SetupError::new("MCP_SIGN_IN", message))
    });
    match outcome {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(error) => {
            Surface::new(json).failed(&error);
            1
        }
    }
}

fn configured<'a>(settings: &'a Settings, name: &str) -> Result<&'a McpServerSettings, String> {
    settings
        .mcp_servers()
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = settings
                .mcp_servers()
                .iter()
                .map(|s| s.name.as_str())
                .collect();
            let mut message = if names.is_empty() {
                format!(
                    "no MCP server \"{name}\" is configured here (none is); add one under \
                     [mcp.servers.{name}] in config.toml"
                )
            } else {
                format!(
                    "no MCP server \"{name}\" is configured here; the servers are: {}",
                    names.join(", ")
                )
            };
            // The workspace's config may declare it, set aside until the folder is trusted.
            if let Some(notice) = settings.files().trust_notice() {
                message.push_str(&format!(" (note: {notice})"));
            }
            message
        })
}

fn login(
    settings: &Settings,
    name: &str,
    wait: Duration,
    no_browser: bool,
) -> Result<String, String> {
    let configured = configured(settings, name)?;
    let home = &settings.home().value;
    let McpTransport::Http { url, headers, .. } = &configured.transport else {
        return Err(format!(
            "MCP server \"{name}\" is started as a command; only servers reached by url sign in"
        ));
    };
    let server = McpServer {
        name: name.to_owned(),
        transport: Transport::Http {
            url: url.clone(),
            headers: headers.clone(),
            oauth: configured.oauth_setup(home),
        },
        call_timeout: configured.call_timeout,
        startup_timeout: configured.startup_timeout,
        fail_on_startup_error: true,
    };
    let open = |address: &str| {
        let opened = !no_browser && open_browser(address);
        let line = if opened {
            format!("Your browser was sent to sign in to \"{name}\". If it did not open, visit:")
        } else {
            format!("To sign in to \"{name}\", visit:")
        };
        crate::surface::notice(&format!("{line}\n  {address}"));
    };
    let say = |line: &str| crate::surface::notice(line);
    let ui = LoginUi {
        open: &open,
        say: &say,
        wait,
    };
    let runtime = dsh_core::runtime()?;
    let outcome = runtime.block_on(dsh_mcp::oauth::login(&server, &ui))?;
    Ok(match outcome {
        LoginOutcome::NotNeeded { tools } => format!(
            "MCP server \"{name}\" answered without a sign-in ({tools} tools); nothing was \
             stored.\n"
        ),
        LoginOutcome::SignedIn { scopes, tools } => format!(
            "Signed in to \"{name}\"{}; it lists {tools} tools.\n",
            if scopes.is_empty() {
                String::new()
            } else {
                format!(" (scopes: {})", scopes.join(" "))
            }
        ),
    })
}

fn logout(settings: &Settings, name: &str) -> Result<String, String> {
    let configured = configured(settings, name)?;
    let Some(setup) = configured.oauth_setup(&settings.home().value) else {
        return Ok(format!("MCP server \"{name}\" has no OAuth sign-in.\n"));
    };
    Ok(
        if dsh_mcp::oauth::logout(&setup).map_err(|e| e.to_string())? {
            format!(
                "Signed out of \"{name}\": its tokens are deleted here (the server is not told; \
             they lapse there as they expire).\n"
            )
        } else {
            format!("MCP server \"{name}\" had no sign-in stored.\n")
        },
    )
}

fn list(settings: &Settings, json: bool) -> Result<String, String> {
    let home = &settings.home().value;
    let mut rows = Vec::new();
    for server in settings.mcp_servers() {
        let (kind, target) = match &server.transport {
            McpTransport::Stdio { command, args, .. } => (
                "stdio",
                std::iter::once(command.as_str())
                    .chain(args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            McpTransport::Http { url, .. } => ("http", dsh_mcp::shown_url(url)),
        };
        let sign_in = match (&server.transport, server.oauth_setup(home)) {
            (McpTransport::Http { url, .. }, Some(setup)) => {
                Some(dsh_mcp::oauth::sign_in(&setup, url).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        rows.push((server.name.as_str(), kind, target, sign_in));
    }
    if json {
        let items: Vec<serde_json::Value> = rows
            .iter()
            .map(|(name, kind, target, sign_in)| {
                serde_json::json!({
                    "name": name,
                    "transport": kind,
                    "target": target,
                    "signIn": sign_in.as_ref().map(sign_in_json),
                })
            })
            .collect();
        return Ok(serde_json::Value::Array(items).to_string() + "\n");
    }
    if rows.is_empty() {
        return Ok("No MCP servers are configured here (see docs/mcp.md).\n".into());
    }
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(4).max(4);
    let mut out = String::new();
    for (name, kind, target, sign_in) in &rows {
        let status = match sign_in {
            None if *kind == "stdio" => String::new(),
            None => "  (sends its own Authorization header)".into(),
            Some(state) => format!("  {}", sign_in_words(state, name)),
        };
        let _ = writeln!(out, "{name:<width$}  {kind:<5}  {target}{status}");
    }
    Ok(out)
}

fn sign_in_words(state: &SignIn, name: &str) -> String {
    match state {
        SignIn::None => "not signed in".into(),
        SignIn::Needed => format!("needs a sign-in: dsh mcp login {name}"),
        SignIn::Stored {
            scopes,
            expires,
            refreshable,
            wanted,
            ..
        } => {
            let mut words = "signed in".to_owned();
            if !scopes.is_empty() {
                let _ = write!(words, " (scopes: {})", scopes.join(" "));
            }
            if let Some(expires) = expires {
                match expires.duration_since(SystemTime::now()) {
                    Ok(left) => {
                        let _ = write!(words, ", token good for {} min", left.as_secs() / 60);
                    }
                    Err(_) if *refreshable => words.push_str(", token expired (renewed on use)"),
                    Err(_) => {
                        let _ = write!(words, ", expired: dsh mcp login {name}");
                    }
                }
            }
            if !wanted.is_empty() {
                let _ = write!(
                    words,
                    "; the server asked for more ({}): dsh mcp login {name}",
                    wanted.join(" ")
                );
            }
            words
        }
    }
}

fn sign_in_json(state: &SignIn) -> serde_json::Value {
    match state {
        SignIn::None => serde_json::json!({"state": "none"}),
        SignIn::Needed => serde_json::json!({"state": "needed"}),
        SignIn::Stored {
            scopes,
            expires,
            refreshable,
            wanted,
            client,
        } => serde_json::json!({
            "state": "stored",
            "scopes": scopes,
            "expiresAt": expires.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok()).map(|d| d.as_secs()),
            "refreshable": refreshable,
            "wantedScopes": wanted,
            "client": client,
        }),
    }
}

/// Sends a browser to `address`: the first entry of `$BROWSER` (entries separated by `:`)
/// that starts, else `xdg-open` where a display is. An entry with `%s` is a shell command with
/// the address in its place (passed as an argument, never spliced into the text); any other
/// entry is a program and its arguments, the address appended. Whether one was started; the
/// address is printed either way.
fn open_browser(address: &str) -> bool {
    let browsers: Vec<String> = match std::env::var("BROWSER") {
        Ok(list) if !list.trim().is_empty() => list.split(':').map(str::to_owned).collect(),
        _ if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            vec!["xdg-open".into()]
        }
        _ => Vec::new(),
    };
    browsers
        .iter()
        .any(|entry| start_browser(entry.trim(), address))
}

fn start_browser(entry: &str, address: &str) -> bool {
    let mut command = if entry.contains("%s") {
        let script = entry
            .replace("'%s'", "\"$1\"")
            .replace("\"%s\"", "\"$1\"")
            .replace("%s", "\"$1\"");
        let mut command = std::process::Command::new("sh");
        command.args(["-c", &script, "dsh-browser", address]);
        command
    } else {
        let mut words = entry.split_whitespace();
        let Some(program) = words.next() else {
            return false;
        };
        let mut command = std::process::Command::new(program);
        command.args(words).arg(address);
        command
    };
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
