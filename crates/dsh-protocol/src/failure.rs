use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The canonical code of a failed model request or turn. Supervisors match these names (for
/// example at the start of a `dsh: <CODE>: <message>` line), so the spellings are the reference's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FailureCode {
    RateLimit,
    Server,
    Timeout,
    Transport,
    EmptyResponse,
    StreamClosed,
    ContextWindowExceeded,
    Quota,
    Auth,
    InvalidRequest,
    InvalidCredential,
    MissingCredential,
    UnsupportedReasoningEffort,
    UnknownModel,
    MalformedResponse,
    Aborted,
    /// The turn reached its configured step cap.
    MaxSteps,
    /// A subagent spent its token budget (`subagents.max_tokens`).
    TokenBudget,
    /// A `UserPromptSubmit` hook withheld the message (exit status 2).
    HookBlocked,
    /// A saved workflow the user ran (`dsh workflow NAME`) failed.
    Workflow,
    /// An HTTP status no other code describes.
    Http(u16),
    /// A provider finish reason we do not model (for example `CONTENT_FILTER`), upper-cased.
    Provider(String),
    Unknown,
}

impl FailureCode {
    /// Outages worth another attempt: the request may succeed when sent again.
    pub fn is_outage(&self) -> bool {
        matches!(
            self,
            FailureCode::RateLimit
                | FailureCode::Server
                | FailureCode::Timeout
                | FailureCode::Transport
                | FailureCode::EmptyResponse
                | FailureCode::StreamClosed
        )
    }

    pub fn as_str(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow::Borrowed;
        match self {
            FailureCode::RateLimit => Borrowed("RATE_LIMIT"),
            FailureCode::Server => Borrowed("SERVER"),
            FailureCode::Timeout => Borrowed("TIMEOUT"),
            FailureCode::Transport => Borrowed("TRANSPORT"),
            FailureCode::EmptyResponse => Borrowed("EMPTY_RESPONSE"),
            FailureCode::StreamClosed => Borrowed("STREAM_CLOSED"),
            FailureCode::ContextWindowExceeded => Borrowed("CONTEXT_WINDOW_EXCEEDED"),
            FailureCode::Quota => Borrowed("QUOTA"),
            FailureCode::Auth => Borrowed("AUTH"),
            FailureCode::InvalidRequest => Borrowed("INVALID_REQUEST"),
            FailureCode::InvalidCredential => Borrowed("INVALID_CREDENTIAL"),
            FailureCode::MissingCredential => Borrowed("MISSING_CREDENTIAL"),
            FailureCode::UnsupportedReasoningEffort => Borrowed("UNSUPPORTED_REASONING_EFFORT"),
            FailureCode::UnknownModel => Borrowed("UNKNOWN_MODEL"),
            FailureCode::MalformedResponse => Borrowed("MALFORMED_RESPONSE"),
            FailureCode::Aborted => Borrowed("ABORTED"),
            FailureCode::MaxSteps => Borrowed("MAX_STEPS"),
            FailureCode::TokenBudget => Borrowed("TOKEN_BUDGET"),
            FailureCode::HookBlocked => Borrowed("HOOK_BLOCKED"),
            FailureCode::Workflow => Borrowed("WORKFLOW"),
            FailureCode::Http(status) => std::borrow::Cow::Owned(format!("HTTP_{status}")),
            FailureCode::Provider(code) => std::borrow::Cow::Owned(code.clone()),
            FailureCode::Unknown => Borrowed("UNKNOWN"),
        }
    }

    fn parse(text: &str) -> FailureCode {
        match text {
            "RATE_LIMIT" => FailureCode::RateLimit,
            "SERVER" => FailureCode::Server,
            "TIMEOUT" => FailureCode::Timeout,
            "TRANSPORT" => FailureCode::Transport,
            "EMPTY_RESPONSE" => FailureCode::EmptyResponse,
            "STREAM_CLOSED" => FailureCode::StreamClosed,
            "CONTEXT_WINDOW_EXCEEDED" => FailureCode::ContextWindowExceeded,
            "QUOTA" => FailureCode::Quota,
            "AUTH" => FailureCode::Auth,
            "INVALID_REQUEST" => FailureCode::InvalidRequest,
            "INVALID_CREDENTIAL" => FailureCode::InvalidCredential,
            "MISSING_CREDENTIAL" => FailureCode::MissingCredential,
            "UNSUPPORTED_REASONING_EFFORT" => FailureCode::UnsupportedReasoningEffort,
            "UNKNOWN_MODEL" => FailureCode::UnknownModel,
            "MALFORMED_RESPONSE" => FailureCode::MalformedResponse,
            "ABORTED" => FailureCode::Aborted,
            "MAX_STEPS" => FailureCode::MaxSteps,
            "TOKEN_BUDGET" => FailureCode::TokenBudget,
            "HOOK_BLOCKED" => FailureCode::HookBlocked,
            "WORKFLOW" => FailureCode::Workflow,
            "UNKNOWN" => FailureCode::Unknown,
            other => match other.strip_prefix("HTTP_").and_then(|n| n.parse().ok()) {
                Some(status) => FailureCode::Http(status),
                None => FailureCode::Provider(other.to_owned()),
            },
        }
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl Serialize for FailureCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.as_str())
    }
}

impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(FailureCode::parse(&text))
    }
}

/// Why a model request (and with it the turn) failed: the durable error of a `turn/end` record
/// with reason `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub message: String,
    pub code: FailureCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl Failure {
    pub fn new(code: FailureCode, message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code,
            status: None,
            provider_retry_after_ms: None,
            request_id: None,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// The structured identity of a tool error (`FsError` / `FS_NOT_FOUND`), stored next to the
/// error text so that programs need not parse it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub name: String,
    pub code: String,
    /// Why, in words a program can show without parsing the text (the seed's durable
    /// `{name, code, reason?}`): an Auto review's reason for a denial, or what made the
    /// review fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ErrorInfo {
    pub fn new(name: impl Into<String>, code: impl Into<String>) -> Self {
        ErrorInfo {
            name: name.into(),
            code: code.into(),
            reason: None,
        }
    }

    /// The error with the reason a program may show.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_wire_names() {
        for code in [
            FailureCode::RateLimit,
            FailureCode::ContextWindowExceeded,
            FailureCode::Http(418),
            FailureCode::Provider("CONTENT_FILTER".into()),
            FailureCode::MaxSteps,
            FailureCode::TokenBudget,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(serde_json::from_str::<FailureCode>(&json).unwrap(), code);
        }
        assert_eq!(FailureCode::Http(404).to_string(), "HTTP_404");
    }

    #[test]
    fn only_outages_are_retryable() {
        assert!(FailureCode::StreamClosed.is_outage());
        assert!(!FailureCode::Auth.is_outage());
        assert!(!FailureCode::ContextWindowExceeded.is_outage());
    }
}
