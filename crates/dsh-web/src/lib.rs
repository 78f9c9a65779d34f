//! dsh's web tools.
//!
//! [`WebFetch`] (`web_fetch`) reads one http(s) page and gives it to the model as markdown (HTML
//! is converted with `htmd`, a port of the turndown converter the reference uses) or as text,
//! within caps on bytes, characters and lines. It refuses private, loopback and link-local
//! addresses unless the configuration allows them, checks every redirect hop the same way, and
//! connects to the very address it checked (directly: never through a proxy, which would look
//! the name up again). [`WebSearch`] (`web_search`) asks the configured
//! [`SearchBackend`] and lists what it found as the reference does. Both respect the sandbox's
//! network switch: with the network off a call needs an approved exception.
//!
//! Model-facing texts (error messages, the result layout) are the reference's where it has
//! them.

mod address;
mod fetch;
mod search;

use std::sync::Arc;
use std::time::Duration;

use dsh_sandbox::escalation::{ApprovalOutcome, ApprovalPolicy, ApprovalRequest};
use dsh_tools::{ToolContext, ToolError};

pub use fetch::WebFetch;
pub use search::{NO_BACKEND, NativeSearch, SearchBackend, WebSearch};

/// What the web tools may reach, and how long they wait.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// Whether the run may use the network (`sandbox.network`).
    pub network: bool,
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

/// The two web tools over the same settings.
pub fn tools(settings: WebSettings) -> (WebFetch, WebSearch) {
    let settings = Arc::new(settings);
    (WebFetch::new(settings.clone()), WebSearch::new(settings))
}

/// A web tool's error: the reference's `WebError` with its code.
fn web_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("WebError", code, message)
}

/// With the network switched off, a call goes ahead only when an approver grants it.
async fn network_allowed(
    settings: &WebSettings,
    ctx: &ToolContext,
    tool: &str,
    what: &str,
) -> Result<(), ToolError> {
    if settings.network {
        return Ok(());
    }
    let refused = || {
        web_error(
            "WEB_NETWORK_OFF",
            format!(
                "{tool} is refused: network access is off for this run (sandbox.network = \
                 false), and no one here can allow an exception; work without it, or ask for a \
                 run with the network on"
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
            reason: format!("use the network (off for this run) to {what}"),
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
            "{tool} is refused: network access is off for this run (sandbox.network = false), \
             and the user did not allow an exception{said}; work without it"
        ),
    ))
}
