//! What a failed start or call says: rmcp's and the HTTP client's errors in words a user can
//! act on.

use dsh_protocol::shown_url;
use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::link::hide_url_secrets;

pub(crate) fn call_error(server: &str, error: &rmcp::ServiceError) -> String {
    match error {
        rmcp::ServiceError::McpError(e) => {
            format!("MCP error {}: {}", e.code.0, e.message)
        }
        rmcp::ServiceError::TransportClosed => format!(
            "MCP server \"{server}\" closed the connection during the call: {error}; the next \
             call restarts it"
        ),
        rmcp::ServiceError::TransportSend(sent) => format!(
            "MCP server \"{server}\" was lost during the call ({}); the next call connects \
             again",
            transport_reason(sent)
        ),
        other => format!("MCP server \"{server}\": {other}"),
    }
}

/// Why an HTTP server's handshake failed, and what to check: rmcp's own wording names its
/// Rust types (`Transport [rmcp::transport::worker::WorkerTransport<...>] error`), which
/// tell a user nothing.
pub(crate) fn http_start_failure(error: &ClientInitializeError, url: &str, name: &str) -> String {
    let at = shown_url(url);
    let check = format!("check that the server is running there, and mcp.servers.{name}.url");
    let message = match error {
        ClientInitializeError::TransportError { error, .. } => match reqwest_error(error) {
            Some(e) if e.is_timeout() => format!("{at} did not answer in time; {check}"),
            Some(e) if e.is_connect() || e.is_request() => {
                format!("cannot reach {at}: {}; {check}", root_cause(e))
            }
            _ => format!(
                "the MCP handshake with {at} failed: {}; check mcp.servers.{name} (url, \
                 headers)",
                transport_reason(error)
            ),
        },
        other => format!(
            "the MCP handshake with {at} failed: {other}; check that mcp.servers.{name}.url is \
             an MCP server's streamable-HTTP endpoint"
        ),
    };
    hide_url_secrets(&message, url)
}

/// A transport's failure in words: the HTTP client's error (`connection refused`) or the
/// transport's own, without rmcp's wrapper.
fn transport_reason(error: &DynamicTransportError) -> String {
    match reqwest_error(error) {
        Some(e) if e.is_connect() || e.is_request() => {
            format!("cannot reach it: {}", root_cause(e))
        }
        _ => error.error.to_string(),
    }
}

/// The HTTP client's error under a transport failure, when that is what it was.
fn reqwest_error(error: &DynamicTransportError) -> Option<&reqwest::Error> {
    let inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
    match inner.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(e)) => Some(e),
        _ => inner.downcast_ref::<reqwest::Error>(),
    }
}

/// The innermost error's words ("connection refused"), without the errno.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    let text = current.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => text.as_str(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => error.to_string(),
    }
}
