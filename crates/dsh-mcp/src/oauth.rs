//! Signing in to MCP servers that use OAuth, as the MCP authorization spec has it.
//!
//! [`login`] is the one place a sign-in happens (`dsh mcp login NAME`): it asks the server
//! without a token to learn its challenge, discovers the authorization server from it (rmcp's
//! discovery: protected resource metadata at the challenge's address, then the well-known
//! paths, then the 2025-03-26 defaults), picks how dsh is known there (a configured client
//! id, else a client ID metadata document the server accepts, else dynamic registration),
//! sends the user's browser to the authorization endpoint with PKCE and the resource
//! indicator, takes the code on a loopback listener, and stores the tokens in a file only the
//! user can read. It then lists the server's tools with them, and when the server answers
//! `insufficient_scope` for scopes not yet granted it asks again for those too (three
//! authorizations at most; none when the server asks for scopes it was already given).
//!
//! Runs never open a browser: a run's connection uses the stored tokens (refreshed by rmcp as
//! they expire, one refresh at a time across processes), and a server that refuses them is
//! reported with the command to run. A refusal a run meets is remembered, so the next login
//! asks for what the server wanted.

mod callback;
mod record;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::ServiceExt;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, OAuthClientConfig,
    WWWAuthenticateParams,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClient,
};
use rmcp::transport::{AuthClient, StreamableHttpClientTransport};

pub use record::RecordError;
use record::{ClientRecord, ClientSource, RecordStore, SignedInWith};

use crate::{McpServer, Transport};

/// How many authorizations one login may run: the first, and two step-ups.
const MAX_AUTHORIZATIONS: usize = 3;

/// How dsh presents itself to a server's authorization server, from the server's
/// `oauth` settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthClient {
    /// A client id registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// The HTTPS address of a client ID metadata document describing dsh, used where the
    /// authorization server accepts one and no client id is configured.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for besides what the server asks for.
    pub scopes: Vec<String>,
    /// The loopback port the browser returns to (0 or none: any free port). A configured
    /// client's registered redirect address usually fixes it.
    pub callback_port: Option<u16>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[hidden]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .finish()
    }
}

/// A server's sign-in: where it is kept and how dsh signs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSetup {
    /// The record's file.
    pub record: PathBuf,
    pub client: OAuthClient,
    /// Why a run must not use the stored sign-in (`--profile headless`), if it must not: the
    /// record is then neither read nor written, and a refusal says why.
    pub unused: Option<String>,
}

impl OAuthSetup {
    /// The sign-in of server `name` at `url`, kept under dsh's home `home` (in `mcp-auth/`).
    pub fn new(home: &std::path::Path, name: &str, url: &str, client: OAuthClient) -> OAuthSetup {
        OAuthSetup {
            record: record::record_path(&home.join("mcp-auth"), name, url),
            client,
            unused: None,
        }
    }

    /// The same sign-in, which a run does not use, for the reason `why`.
    pub fn unused_because(self, why: String) -> OAuthSetup {
        OAuthSetup {
            unused: Some(why),
            ..self
        }
    }
}

/// What a person signing in needs from the front end.
pub struct LoginUi<'a> {
    /// Sends the browser to the authorization address (and shows it, for a browser elsewhere).
    pub open: &'a (dyn Fn(&str) + Sync),
    /// A line of progress.
    pub say: &'a (dyn Fn(&str) + Sync),
    /// How long to wait for the browser to come back.
    pub wait: Duration,
}

/// How a login ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    /// The server answered without a sign-in; nothing was stored.
    NotNeeded { tools: usize },
    /// Signed in: the scopes granted and the tools the server now lists.
    SignedIn { scopes: Vec<String>, tools: usize },
}

/// What is stored for a server, for `dsh mcp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignIn {
    /// Nothing stored.
    None,
    /// A sign-in is stored.
    Stored {
        scopes: Vec<String>,
        /// When the access token runs out, if the server said.
        expires: Option<SystemTime>,
        /// Whether it can be renewed without the user.
        refreshable: bool,
        /// Scopes the server asked for since, which the next login asks for.
        wanted: Vec<String>,
        /// How dsh is known there.
        client: &'static str,
    },
    /// A run met a refusal and nothing is stored yet.
    Needed,
}

/// What is stored for `server` at `url` under `setup`.
pub fn sign_in(setup: &OAuthSetup, url: &str) -> Result<SignIn, RecordError> {
    use oauth2::TokenResponse;
    let Some(record) = record::read(&setup.record, url)? else {
        return Ok(SignIn::None);
    };
    let Some(credentials) = &record.credentials else {
        return Ok(
            if record.challenge.is_some() || !record.wanted_scopes.is_empty() {
                SignIn::Needed
            } else {
                SignIn::None
            },
        );
    };
    let token = credentials.token_response.as_ref();
    let expires = match (
        token.and_then(oauth2::TokenResponse::expires_in),
        credentials.token_received_at,
    ) {
        (Some(lasts), Some(received)) => Some(UNIX_EPOCH + Duration::from_secs(received) + lasts),
        _ => None,
    };
    Ok(SignIn::Stored {
        scopes: credentials
            .granted_scopes
            .iter()
            .map(|s| printable(s))
            .collect(),
        expires,
        refreshable: token.is_some_and(|t| t.refresh_token().is_some()),
        wanted: record.wanted_scopes.iter().map(|s| printable(s)).collect(),
        client: record
            .client
            .as_ref()
            .map_or("an unknown client", |c| c.source.words()),
    })
}

/// Forgets the server's sign-in; whether there was one. The tokens are not revoked at the
/// server (MCP names no revocation endpoint); they lapse there as they expire.
pub fn logout(setup: &OAuthSetup) -> Result<bool, RecordError> {
    record::remove(&setup.record)
}

/// The secrets stored for the server at `url`, for a run's redaction: a server that echoes its
/// token back must not hand it to the model.
pub fn stored_secrets(setup: &OAuthSetup, url: &str) -> Vec<String> {
    match record::read(&setup.record, url) {
        Ok(Some(record)) => record::secrets(&record),
        _ => Vec::new(),
    }
}

/// Signs in to `server` (an HTTP server with an OAuth setup).
pub async fn login(server: &McpServer, ui: &LoginUi<'_>) -> Result<LoginOutcome, String> {
    let name = &server.name;
    let Transport::Http {
        url,
        headers,
        oauth,
    } = &server.transport
    else {
        return Err(format!(
            "MCP server \"{name}\" is started as a command; only servers reached by URL sign in"
        ));
    };
    let Some(setup) = oauth else {
        return Err(format!(
            "MCP server \"{name}\" sends its own Authorization header \
             (mcp.servers.{name}.headers); remove it to sign in with OAuth"
        ));
    };
    secure(url).map_err(|why| {
        format!("MCP server \"{name}\" is at {why}; dsh sends no sign-in there: use its https:// address")
    })?;
    let stored = record::read(&setup.record, url).map_err(|e| e.to_string())?;
    // A new sign-in keeps what was granted before (SEP-2350: scopes accumulate), adds what
    // the server asked for since and what the configuration names.
    let mut wanted: Vec<String> = setup.client.scopes.clone();
    let mut challenge = None;
    if let Some(stored) = &stored {
        if let Some(credentials) = &stored.credentials {
            merge(&mut wanted, &credentials.granted_scopes);
        }
        merge(&mut wanted, &stored.wanted_scopes);
        challenge.clone_from(&stored.challenge);
    }
    (ui.say)(&format!(
        "Asking {} what it needs…",
        dsh_protocol::shown_url(url)
    ));
    match list_tools(http_client()?, url, headers).await {
        Ok(tools) if challenge.is_none() && wanted.is_empty() => {
            return Ok(LoginOutcome::NotNeeded { tools });
        }
        Ok(_) => {}
        Err(Listing::Refused(refusal)) => {
            if let Some(scopes) = refusal.scopes() {
                merge(&mut wanted, &scopes);
            }
            challenge = Some(refusal.challenge);
        }
        Err(Listing::Failed(reason)) => {
            return Err(format!(
                "MCP server \"{name}\" could not be asked: {reason}"
            ));
        }
    }
    for round in 1..=MAX_AUTHORIZATIONS {
        let granted = authorize(url, setup, challenge.as_deref(), &wanted, ui).await?;
        let client = authorized_client(setup, url, http_client()?, None)
            .await?
            .ok_or_else(|| "the sign-in was not stored".to_owned())?;
        match list_tools(client, url, headers).await {
            Ok(tools) => {
                return Ok(LoginOutcome::SignedIn {
                    scopes: granted,
                    tools,
                });
            }
            Err(Listing::Refused(refusal)) if refusal.insufficient_scope() => {
                let asked = refusal.scopes().unwrap_or_default();
                if asked.iter().all(|s| granted.contains(s)) {
                    return Err(format!(
                        "MCP server \"{name}\" refuses the sign-in even with the scopes it asks \
                         for ({}); check your account's access there",
                        asked.join(" ")
                    ));
                }
                if round < MAX_AUTHORIZATIONS {
                    (ui.say)(&format!(
                        "The server asks for more access ({}); signing in again…",
                        asked.join(" ")
                    ));
                }
                merge(&mut wanted, &granted);
                merge(&mut wanted, &asked);
                challenge = Some(refusal.challenge);
            }
            Err(Listing::Refused(_)) => {
                return Err(format!(
                    "MCP server \"{name}\" refused the token its authorization server just \
                     issued; check mcp.servers.{name}.url and the server's sign-in settings"
                ));
            }
            Err(Listing::Failed(reason)) => {
                return Err(format!(
                    "signed in, but MCP server \"{name}\" then failed: {reason}"
                ));
            }
        }
    }
    Err(format!(
        "MCP server \"{name}\" kept asking for more access after {MAX_AUTHORIZATIONS} \
         sign-ins; dsh stopped there"
    ))
}

/// One authorization-code flow; the scopes granted.
async fn authorize(
    url: &str,
    setup: &OAuthSetup,
    challenge: Option<&str>,
    wanted: &[String],
    ui: &LoginUi<'_>,
) -> Result<Vec<String>, String> {
    let mut manager = AuthorizationManager::new(url).await.map_err(words)?;
    let metadata = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| {
            format!(
                "cannot find the server's authorization server: {}",
                words(e)
            )
        })?
        .metadata;
    let endpoints = [
        Some(&metadata.authorization_endpoint),
        Some(&metadata.token_endpoint),
        metadata.registration_endpoint.as_ref(),
    ];
    for endpoint in endpoints.into_iter().flatten() {
        secure(endpoint).map_err(|why| {
            format!(
                "the authorization server names an endpoint at {why}; dsh signs in over https \
                 only (or http on this machine)"
            )
        })?;
    }
    manager.set_metadata(metadata.clone());
    let callback = (callback::Callback::bind(setup.client.callback_port.unwrap_or(0)).await)
        .map_err(|e| e.to_string())?;
    let redirect = callback.redirect_uri();
    // The spec's order: the challenge's scopes, else the resource's `scopes_supported`, else
    // none (never the authorization server's whole list); then what this login adds.
    let mut scopes = manager.select_initial_scopes(&[]).await;
    merge(&mut scopes, wanted);
    let mut request = AuthorizationRequest::new(redirect.clone())
        .with_scopes(scopes.clone())
        .with_initial_scope_selection();
    let takes_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        == Some(true);
    let client = if let Some(id) = &setup.client.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &setup.client.client_secret {
            request = request.with_client_secret(secret.clone());
        }
        ClientRecord {
            id: id.clone(),
            secret: setup.client.client_secret.clone(),
            redirect_uri: redirect.clone(),
            source: ClientSource::Configured,
        }
    } else if let Some(document) =
        (setup.client.client_metadata_url.as_ref()).filter(|_| takes_documents)
    {
        request = request.with_client_metadata_url(document.clone());
        ClientRecord {
            id: document.clone(),
            secret: None,
            redirect_uri: redirect.clone(),
            source: ClientSource::MetadataDocument,
        }
    } else if metadata.registration_endpoint.is_some() {
        let asked: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered: OAuthClientConfig = manager
            .register_client("dsh", &redirect, &asked)
            .await
            .map_err(|e| {
                format!(
                    "registering dsh with the authorization server failed: {}",
                    words(e)
                )
            })?;
        request = request.with_preregistered_client(registered.client_id.clone());
        if let Some(secret) = &registered.client_secret {
            request = request.with_client_secret(secret.clone());
        }
        ClientRecord {
            id: registered.client_id,
            secret: registered.client_secret,
            redirect_uri: redirect.clone(),
            source: ClientSource::Registered,
        }
    } else {
        return Err(
            "the authorization server takes no registrations; register dsh there and set \
             oauth.client_id (and oauth.client_secret) for this server"
                .into(),
        );
    };
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| format!("cannot start the sign-in: {}", words(e)))?;
    let address = session.get_authorization_url().to_owned();
    let query = |key: &str| {
        url::Url::parse(&address).ok().and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.into_owned())
        })
    };
    let state = query("state").ok_or("the sign-in address has no state")?;
    // The tokens are written with the client and endpoints they belong to, in one change.
    let mut session = session;
    session.auth_manager.set_credential_store(RecordStore {
        path: setup.record.clone(),
        url: url.to_owned(),
        redactor: None,
        signing_in: Some(SignedInWith {
            client,
            metadata,
            resource: query("resource"),
        }),
    });
    (ui.open)(&address);
    let returned = (callback.wait(&state, ui.wait).await).map_err(|e| e.to_string())?;
    session
        .handle_callback_with_issuer(&returned.code, &returned.state, returned.issuer.as_deref())
        .await
        .map_err(|e| {
            format!(
                "the authorization server did not give a token: {}",
                words(e)
            )
        })?;
    let granted = (record::read(&setup.record, url).map_err(|e| e.to_string())?)
        .and_then(|r| r.credentials)
        .map(|c| c.granted_scopes)
        .unwrap_or_default();
    Ok(granted)
}

/// Whether tokens may go to `address`: https, or plain http to this machine
/// ([`dsh_protocol::address::check_secret_destination`]). Else the words for what it is.
fn secure(address: &str) -> Result<(), String> {
    use dsh_protocol::address::Insecure;
    match dsh_protocol::address::check_secret_destination(address) {
        Ok(()) => Ok(()),
        Err(Insecure::Unparsable) => Err("an address that does not parse".to_owned()),
        Err(Insecure::PlainHttp) => Err(format!(
            "a plain http:// address that is not this machine ({}; only 127.0.0.1, ::1 and \
             localhost are, with no user@ part)",
            dsh_protocol::shown_url(address)
        )),
        Err(Insecure::Scheme(other)) => {
            Err(format!("an address of scheme \"{}\"", printable(&other)))
        }
    }
}

/// An HTTP client that sends the stored tokens (renewing them as they expire), when a
/// sign-in is stored for the server.
pub(crate) async fn authorized_client(
    setup: &OAuthSetup,
    url: &str,
    http: reqwest::Client,
    redactor: Option<dsh_tools::Redactor>,
) -> Result<Option<AuthClient<reqwest::Client>>, String> {
    if secure(url).is_err() || setup.unused.is_some() {
        return Ok(None);
    }
    let Some(record) = record::read(&setup.record, url).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let (Some(client), Some(metadata), Some(_)) =
        (record.client, record.metadata, record.credentials)
    else {
        return Ok(None);
    };
    // Based at the resource the tokens were issued for, so a renewal names it again (the
    // manager does no discovery here: the endpoints are in the record).
    let base = record.resource.as_deref().unwrap_or(url);
    let mut manager = AuthorizationManager::new(base).await.map_err(words)?;
    manager.set_credential_store(RecordStore {
        path: setup.record.clone(),
        url: url.to_owned(),
        redactor,
        signing_in: None,
    });
    manager.set_metadata(metadata);
    let mut config = OAuthClientConfig::new(client.id, client.redirect_uri);
    if let Some(secret) = client.secret {
        config = config.with_client_secret(secret);
    }
    manager.configure_client(config).map_err(words)?;
    Ok(Some(AuthClient::new(http, manager)))
}

/// A server's refusal of a request for want of a sign-in (401) or of scope (403).
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// The `WWW-Authenticate` header.
    pub challenge: String,
    /// Whether it was a 403 `insufficient_scope`.
    scope: bool,
}

impl Refusal {
    /// The refusal under `error` (a failed start or call), if that is what it was.
    pub(crate) fn find(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
        use rmcp::service::ClientInitializeError;
        // rmcp keeps the transport's error in a field its wrappers do not name as the source.
        let inner: &(dyn std::error::Error + 'static) =
            if let Some(ClientInitializeError::TransportError { error, .. }) =
                error.downcast_ref::<ClientInitializeError>()
            {
                error.error.as_ref()
            } else if let Some(rmcp::ServiceError::TransportSend(error)) =
                error.downcast_ref::<rmcp::ServiceError>()
            {
                error.error.as_ref()
            } else {
                error
            };
        let mut current = Some(inner);
        while let Some(error) = current {
            if let Some(e) = error.downcast_ref::<AuthRequiredError>() {
                return Some(Refusal {
                    challenge: e.www_authenticate_header.clone(),
                    scope: false,
                });
            }
            if let Some(e) = error.downcast_ref::<InsufficientScopeError>() {
                return Some(Refusal {
                    challenge: e.www_authenticate_header.clone(),
                    scope: true,
                });
            }
            current = error.source();
        }
        None
    }

    /// A 403 whose challenge says `insufficient_scope`; any other refusal asks for a sign-in.
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.scope && self.params().is_some_and(|p| p.is_insufficient_scope())
    }

    /// The scopes the challenge names (made printable: they come from the server).
    pub(crate) fn scopes(&self) -> Option<Vec<String>> {
        self.params()?
            .scope
            .map(|s| s.split_whitespace().map(printable).collect())
    }

    fn params(&self) -> Option<WWWAuthenticateParams> {
        // Only the scope and error are read, so any base does for a relative address.
        let base = url::Url::parse("http://localhost/").ok()?;
        Some(WWWAuthenticateParams::parse(&self.challenge, &base))
    }

    /// Remembers the refusal for the next login, and says what to do.
    pub(crate) fn report(&self, server: &str, url: &str, setup: Option<&OAuthSetup>) -> String {
        let Some(setup) = setup else {
            return format!(
                "MCP server \"{server}\" refused the request (HTTP {}); dsh does no OAuth \
                 sign-in for it: check the credentials it is given (its Authorization header)",
                if self.scope { 403 } else { 401 }
            );
        };
        if let Some(why) = &setup.unused {
            return format!("MCP server \"{server}\" needs a sign-in: {why}");
        }
        let asked = self.scopes().unwrap_or_default();
        let granted = record::update(&setup.record, url, |record| {
            record.challenge = Some(self.challenge.clone());
            let granted = record
                .credentials
                .as_ref()
                .map(|c| c.granted_scopes.clone());
            if self.insufficient_scope() {
                let mut wanted = std::mem::take(&mut record.wanted_scopes);
                merge(&mut wanted, &asked);
                record.wanted_scopes = wanted;
            }
            granted
        })
        .unwrap_or_default();
        let login = format!("run `dsh mcp login {server}`");
        match granted {
            _ if self.insufficient_scope() && !asked.is_empty() => format!(
                "MCP server \"{server}\" needs more access for this (scope \"{}\"): {login} to \
                 grant it, then try again",
                asked.join(" ")
            ),
            Some(_) => format!(
                "MCP server \"{server}\" refused the saved sign-in (it may have expired or \
                 been revoked): {login}"
            ),
            None => format!("MCP server \"{server}\" needs a sign-in: {login}"),
        }
    }
}

enum Listing {
    Refused(Refusal),
    Failed(String),
}

/// Connects with `client` and counts the server's tools.
async fn list_tools<C>(client: C, url: &str, headers: &[(String, String)]) -> Result<usize, Listing>
where
    C: StreamableHttpClient + Send + Sync + 'static,
    C::Error: std::error::Error + Send + Sync + 'static,
{
    let config = crate::link::transport_config(url, headers).map_err(Listing::Failed)?;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let running = crate::link::Handler::detached()
        .serve(transport)
        .await
        .map_err(|e| match Refusal::find(&e) {
            Some(refusal) => Listing::Refused(refusal),
            None => Listing::Failed(crate::link::hide_url_secrets(&e.to_string(), url)),
        })?;
    let listed = running.peer().list_all_tools().await;
    let _ = tokio::time::timeout(Duration::from_secs(1), running.cancel()).await;
    match listed {
        Ok(tools) => Ok(tools.len()),
        Err(e) => Err(match Refusal::find(&e) {
            Some(refusal) => Listing::Refused(refusal),
            None => Listing::Failed(crate::link::hide_url_secrets(&e.to_string(), url)),
        }),
    }
}

fn http_client() -> Result<reqwest::Client, String> {
    crate::link::http_client()
}

/// An rmcp auth error in words, with the library's own prefixes kept: they name the step.
/// Made printable: it may quote what a server sent.
fn words(error: AuthError) -> String {
    printable(&error.to_string())
}

/// `text` with control characters (a server's terminal escapes among them) replaced, for
/// text from a server that is printed.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// Adds what `more` has that `scopes` lacks, in order.
fn merge(scopes: &mut Vec<String>, more: &[String]) {
    for scope in more {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
}
