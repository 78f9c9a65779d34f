//! What the web tools may reach and how long they wait ([`WebSettings`], the search backend
//! among them), and how they refuse: their coded error, and the network switch a call passes
//! (or an approver's exception to it).

use std::time::Duration;

use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy, ApprovalRequest};
use dsh_tools::{ToolContext, ToolError};

/// What the web tools may reach, and how long they wait.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// What the run's `sandbox.network` lets the web tools do.
    pub network: WebNetwork,
    /// Fetch private, loopback and link-local addresses too (`web.allow_private_addresses`).
    pub allow_private: bool,
    /// How long one `web_fetch` may take (`web.fetch_timeout_ms`).
    pub fetch_timeout: Duration,
    /// Where `web_search` searches, or why it cannot (no backend configured, no key): what the
    /// model is told when it calls the tool.
    pub search: Result<SearchBackend, String>,
    /// How long one `web_search` may take (`web.search.timeout_ms`).
    pub search_timeout: Duration,
}

/// What `web_search` says when no backend is configured.
pub const NO_BACKEND: &str = "no usable web provider is registered: set web.search.provider \
     (searxng or brave) in a config file to search the web";

/// Where `web_search` searches (`web.search.provider`).
#[derive(Clone)]
pub enum SearchBackend {
    /// A SearXNG instance's JSON API: `GET <base_url>/search?q=..&format=json`.
    Searxng { base_url: String },
    /// The Brave Search API: `GET <base_url>/res/v1/web/search?q=..`, the key in
    /// `X-Subscription-Token`.
    Brave { base_url: String, api_key: String },
    /// The model provider's own hosted search: one request a query to its Anthropic-compatible
    /// Messages API (`POST <base_url>/messages`) offering the `web_search_20250305` server
    /// tool, on the route's key. What the request bills is counted in the call's usage.
    Native(NativeSearch),
}

/// A provider's hosted search, as `SearchBackend::Native` reaches it.
#[derive(Clone)]
pub struct NativeSearch {
    /// The provider's name in errors: `DeepSeek`, `Anthropic`.
    pub service: &'static str,
    /// The Messages API root: `/messages` is appended.
    pub base_url: String,
    pub api_key: String,
    /// The model that runs the search.
    pub model: String,
    /// Its prices, to price what a search bills.
    pub prices: Option<dsh_protocol::Prices>,
}

/// The key is a secret: only the endpoint is shown, and that without a password or a query.
impl std::fmt::Debug for SearchBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use dsh_protocol::shown_url;
        match self {
            SearchBackend::Searxng { base_url } => write!(f, "Searxng({})", shown_url(base_url)),
            SearchBackend::Brave { base_url, .. } => write!(f, "Brave({})", shown_url(base_url)),
            SearchBackend::Native(native) => {
                let shown = shown_url(&native.base_url);
                write!(f, "Native({}, {shown})", native.service)
            }
        }
    }
}

impl SearchBackend {
    /// Its name in errors.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SearchBackend::Searxng { .. } => "SearXNG",
            SearchBackend::Brave { .. } => "Brave",
            SearchBackend::Native(native) => native.service,
        }
    }
}

/// A web tool's error: the reference's `WebError` with its code.
pub(crate) fn web_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("WebError", code, message)
}

/// What the run's network setting lets the web tools do: they connect from dsh itself, not from
/// a sandboxed command, so under the allowlist (which only commands' traffic goes through) they
/// are off as with `false`, and say so in the allowlist's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebNetwork {
    /// `sandbox.network = true`.
    On,
    /// `sandbox.network = false`.
    Off,
    /// `sandbox.network = "allowlist"`.
    CommandsOnly,
}

impl WebNetwork {
    /// How the setting is named in a refusal: the reference's words for `false`.
    fn refusal(self) -> &'static str {
        match self {
            WebNetwork::CommandsOnly => {
                "network access is limited to commands for this run (sandbox.network = \
                 \"allowlist\": only commands reach sandbox.allowed_domains, through dsh's proxy)"
            }
            WebNetwork::On | WebNetwork::Off => {
                "network access is off for this run (sandbox.network = false)"
            }
        }
    }
}

/// With the network switched off, a call goes ahead only when an approver grants it.
pub(crate) async fn network_allowed(
    settings: &WebSettings,
    ctx: &ToolContext,
    tool: &str,
    what: &str,
) -> Result<(), ToolError> {
    if settings.network == WebNetwork::On {
        return Ok(());
    }
    let off = settings.network.refusal();
    let refused = || {
        web_error(
            "WEB_NETWORK_OFF",
            format!(
                "{tool} is refused: {off}, and no one here can allow an exception; work \
                 without it, or ask for a run with the network on"
            ),
        )
    };
    let session = &ctx.session;
    let (ApprovalPolicy::Ask, Some(approver)) = (session.approval, &session.approver) else {
        return Err(refused());
    };
    let outcome = approver
        .request(ApprovalRequest {
            tool: tool.to_owned(),
            call_id: ctx.call_id.clone(),
            reason: match settings.network {
                WebNetwork::CommandsOnly => {
                    format!("use the network (limited to commands for this run) to {what}")
                }
                WebNetwork::On | WebNetwork::Off => {
                    format!("use the network (off for this run) to {what}")
                }
            },
            grant: Some("network".into()),
        })
        .await;
    let reason = match outcome {
        ApprovalOutcome::AllowedOnce | ApprovalOutcome::AllowedForSession => return Ok(()),
        ApprovalOutcome::Unavailable => return Err(refused()),
        ApprovalOutcome::Rejected { reason } => reason.filter(|r| !r.trim().is_empty()),
        ApprovalOutcome::Cancelled => None,
    };
    let said = reason.map_or_else(String::new, |r| format!(" (the user said: {})", r.trim()));
    Err(web_error(
        "WEB_NETWORK_OFF",
        format!(
            "{tool} is refused: {off}, and the user did not allow an exception{said}; work \
             without it"
        ),
    ))
}
