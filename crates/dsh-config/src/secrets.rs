//! The secret values a run knows, from which its redactor is built: keys, the credentials the
//! `.env` files hold, and every secret the config files hold, whatever it belongs to (an MCP
//! server turned off, a route not taken, a value set aside).

use std::path::Path;

use serde::Deserialize as _;

use super::layers::ConfigFiles;
use super::route::Route;
use super::sections::mcp::{McpServerSettings, McpTransport, oauth_client};
use super::shown::url_credentials;

/// What the redactor is built from besides the sections' own settings.
#[derive(Clone, Copy)]
pub(super) struct Known<'a> {
    /// The config files: every secret they hold is one, whatever it belongs to.
    pub(super) files: &'a ConfigFiles,
    pub(super) home: &'a Path,
    pub(super) credentials: &'a crate::Credentials,
    /// The variables the providers read their keys from ([`key_variables`]).
    pub(super) key_variables: &'a [String],
    pub(super) cwd: &'a Path,
}

/// The secret values a run knows: every key variable's value and every key `dsh login` saved,
/// whatever their names; every variable of the launch environment, the `.env` files
/// dsh reads and the project's other `.env.*` files whose name says it is a secret, and the
/// credentials inside any of their values that is a URL (`DATABASE_URL`); the model route's
/// key and credential headers; the MCP servers' secret-named `env` values, credential headers
/// and URL credentials (and every header and `env` value the config files hold, whatever its
/// name); the search key.
pub(super) fn secret_values(
    known: &Known<'_>,
    routes: &[&Route],
    mcp_servers: &[McpServerSettings],
    web: &dsh_web::WebSettings,
) -> Vec<String> {
    let Known {
        files,
        home,
        credentials,
        key_variables,
        cwd,
    } = *known;
    let root = crate::project::project_root(cwd, &[".git".to_owned()]);
    let project_env = crate::dotenv::project_env_values(cwd, &root);
    let mut values = Vec::new();
    // Every key variable's value, whatever its name (`ZP_ACCESS`), and every key `dsh login`
    // saved, those another file shadows included: they are secrets by what they are.
    for name in key_variables {
        if let Some((value, _)) = credentials.get(name) {
            values.push(value);
        }
        values.extend(credentials.held_value(name).map(str::to_owned));
    }
    let saved = crate::dotenv::parse_file(&crate::home::saved_keys_path(home));
    values.extend(
        saved
            .unwrap_or_default()
            .into_iter()
            .map(|(_, value)| value),
    );
    let variables = (credentials.all())
        .chain((project_env.iter()).map(|(name, value)| (name.as_str(), value.as_str())));
    for (name, value) in variables {
        if dsh_tools::is_secret_name(name) {
            values.push(value.to_owned());
        }
        if value.contains("://") {
            values.extend(url_credentials(value));
        }
    }
    for route in routes {
        if let crate::ApiKey::Found { value, .. } = &route.api_key {
            values.push(value.clone());
        }
        values.extend(secret_headers(&route.headers));
    }
    for server in mcp_servers {
        match &server.transport {
            McpTransport::Stdio { env, .. } => {
                // Of a server an editor hands over, only what is named like a secret:
                // `NODE_ENV = "production-eu-west"` is not one, and taking it for one would
                // blank it in every file read. The config's own are all taken, below.
                values.extend(
                    (env.iter())
                        .filter(|(name, _)| dsh_tools::is_secret_name(name))
                        .map(|(_, value)| value.clone()),
                );
            }
            McpTransport::Http {
                url,
                headers,
                oauth,
            } => {
                values.extend(secret_headers(headers));
                values.extend(url_credentials(url));
                if let Some(client) = oauth {
                    values.extend(client.client_secret.clone());
                }
                if let Some(setup) = server.oauth_setup(home) {
                    values.extend(dsh_mcp::oauth::stored_secrets(&setup, url));
                }
            }
        }
    }
    if let Ok(dsh_web::SearchBackend::Brave { api_key, .. }) = &web.search {
        values.push(api_key.clone());
    }
    values.extend(config_file_secrets(files, home));
    values
}

/// The values of headers that carry credentials (`Authorization`, `Cookie`, `X-Api-Key`, any
/// name a variable holding a secret could have): those of a server an editor hands over.
fn secret_headers(headers: &[(String, String)]) -> Vec<String> {
    let credentials = headers.iter().map(|(name, value)| (name, value));
    header_values(credentials.filter(|(name, _)| {
        let upper = name.to_uppercase();
        upper.contains("AUTH") || upper.contains("COOKIE") || dsh_tools::is_secret_name(name)
    }))
}

/// Each header's value, and for `<scheme> <credential>` values (`Bearer abc`) the credential
/// alone too, since it is what a command would print.
fn header_values<'a>(headers: impl IntoIterator<Item = (&'a String, &'a String)>) -> Vec<String> {
    let mut values = Vec::new();
    for (_, value) in headers {
        values.push(value.clone());
        if let Some((_, credential)) = value.trim().split_once(' ') {
            values.push(credential.trim().to_owned());
        }
    }
    values
}

/// Every secret the config files hold, layer by layer, whether the run uses it or not: each
/// route's headers and URL credentials, each MCP server's (turned off or not) `env` values,
/// headers, URL credentials, OAuth client secret and stored sign-in, and the search backend's
/// URL credentials. Headers and `env` values are
/// taken whatever their names: one set in the config is there to identify the caller or to
/// carry a credential (`X-Org`, `ZZ_CONF`), and a word (`production`) or a short value is
/// never taken ([`dsh_tools::Redactor::new`]). Only used servers had theirs taken before, so a
/// command printing the file showed the rest.
fn config_file_secrets(files: &ConfigFiles, home: &Path) -> Vec<String> {
    let mut values = Vec::new();
    for layer in files.layers() {
        let Some(table) = &layer.table else { continue };
        let Ok(config) = crate::Config::deserialize(table.clone()) else {
            continue;
        };
        for provider in config.providers.values() {
            values.extend(header_values(&provider.headers));
            values.extend(provider.base_url.iter().flat_map(|u| url_credentials(u)));
        }
        for (name, server) in &config.mcp.servers {
            values.extend(server.env.values().cloned());
            values.extend(header_values(&server.headers));
            if let Some(oauth) = &server.oauth {
                values.extend(oauth.client_secret.clone());
                values.extend((oauth.client_metadata_url.iter()).flat_map(|u| url_credentials(u)));
            }
            let Some(url) = &server.url else { continue };
            values.extend(url_credentials(url));
            if let Ok(Some(client)) = oauth_client(server) {
                let setup = dsh_mcp::oauth::OAuthSetup::new(home, name, url, client);
                values.extend(dsh_mcp::oauth::stored_secrets(&setup, url));
            }
        }
        values.extend((config.web.search.base_url.iter()).flat_map(|u| url_credentials(u)));
    }
    values
}

#[cfg(test)]
mod tests {
    use crate::{Environment, Flags, Settings};

    /// The finding: a server turned off (and a route not taken) kept its secrets out of the
    /// redactor, so a command that printed the config showed them; and a header or an env
    /// value under a name like no secret's was shown whoever it belonged to.
    #[test]
    fn every_secret_the_config_files_hold_is_redacted_used_or_not() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[providers.other]\nkind = \"openai-completions\"\n\
             base_url = \"https://u:route-url-pw-0123@h/v1\"\n\
             headers = { Authorization = \"Bearer route-header-0123456789\", \
             X-Org = \"org-header-7781-xy\" }\n\
             [mcp.servers.off]\nenabled = false\ncommand = \"x\"\n\
             env = { GH_TOKEN = \"off-env-token-0123456789\", ZZ_CONF = \"zz-conf-9921\", \
             NODE_ENV = \"production\" }\n\
             [mcp.servers.offweb]\nenabled = false\nurl = \"https://bot:off-url-pw-0123@h/mcp\"\n\
             headers = { X-Api-Key = \"off-header-key-0123456789\" }\n\
             [mcp.servers.signin]\nenabled = false\nurl = \"https://h/mcp\"\n\
             oauth = { client_id = \"dsh\", client_secret = \"off-client-secret-0123\" }\n",
        )
        .unwrap();
        let env = Environment::from_pairs([
            ("HOME".to_owned(), home.path().display().to_string()),
            ("DSH_HOME".to_owned(), home.path().display().to_string()),
            ("DEEPSEEK_API_KEY".to_owned(), "k".to_owned()),
        ]);
        let flags = Flags {
            interactive: true,
            ..Flags::default()
        };
        let settings = Settings::load(ws.path().to_path_buf(), &env, &flags).unwrap();
        assert!(settings.mcp_servers().is_empty());
        let secrets = [
            "route-url-pw-0123",
            "route-header-0123456789",
            "off-env-token-0123456789",
            "off-url-pw-0123",
            "off-header-key-0123456789",
            "off-client-secret-0123",
            // Under names no secret has (the red team's finding 4 after issue 47).
            "org-header-7781-xy",
            "zz-conf-9921",
        ];
        let printed = secrets.join(" ");
        let redactor = settings.redactor().unwrap();
        assert_eq!(
            redactor.redact(&printed),
            vec!["[REDACTED]"; secrets.len()].join(" ")
        );
        // A word is never taken for one, whatever holds it.
        assert_eq!(redactor.redact("production"), "production");
    }
}
