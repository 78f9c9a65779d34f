//! HTTP plumbing shared by the dialects: the client, and the mapping of statuses and network
//! errors onto failure codes with messages that say what to do.

use std::time::Duration;

use dsh_protocol::{Failure, FailureCode};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

/// How long to wait for a connection before calling the server unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an error body kept in a message.
const MAX_ERROR_TEXT: usize = 500;

/// Builds the HTTP client. TLS uses rustls with the ring provider and the platform's roots.
pub(crate) fn client() -> Result<reqwest::Client, Failure> {
    // A provider may already be installed by an earlier client; either way one is in place.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(crate::USER_AGENT)
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| Failure::new(FailureCode::Transport, format!("cannot set up HTTP: {e}")))
}

/// What an error message needs to name the fix.
#[derive(Debug, Clone)]
pub(crate) struct ErrorContext<'a> {
    pub url: &'a str,
    pub model: &'a str,
    /// The variable holding the key, named in authentication errors.
    pub api_key_env: &'a str,
    /// The variable (or setting) holding the base URL, named when the URL looks wrong.
    pub base_url_source: &'a str,
}

/// A network failure before any response arrived.
/// Sends a prepared request and waits, at most `idle`, for its status: a refusal (any status
/// but success) is a failure that cost nothing; no answer in time is a `TIMEOUT` that may have
/// been billed.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    idle: std::time::Duration,
    ctx: &ErrorContext<'_>,
) -> Result<reqwest::Response, crate::LlmError> {
    use dsh_protocol::Usage;
    let refused = |failure| crate::LlmError::new(failure, Usage::default());
    let response = match tokio::time::timeout(idle, request.send()).await {
        Ok(response) => response.map_err(|e| refused(transport_failure(&e, ctx.url)))?,
        Err(_) => {
            // A server that takes the request and never answers is given the same time as a
            // stream that goes silent.
            return Err(crate::LlmError::new(
                Failure::new(
                    FailureCode::Timeout,
                    format!(
                        "{} did not start answering within {} s",
                        ctx.url,
                        idle.as_secs_f64()
                    ),
                ),
                Usage::unreported(),
            ));
        }
    };
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        // A refusal whose body never comes is still a refusal: read it for `idle` at most.
        let text = tokio::time::timeout(idle, response.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        return Err(refused(status_failure(status, &headers, &text, ctx)));
    }
    Ok(response)
}

pub(crate) fn transport_failure(error: &reqwest::Error, url: &str) -> Failure {
    let cause = root_cause(error);
    if error.is_timeout() {
        return Failure::new(
            FailureCode::Timeout,
            format!("{url} did not answer in time: {cause}"),
        );
    }
    Failure::new(
        FailureCode::Transport,
        format!("cannot reach {url}: {cause}"),
    )
}

/// The innermost error message: "connection refused", not "error sending request".
pub(crate) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    let text = current.to_string();
    // io errors read "Connection refused (os error 111)"; the errno adds nothing for a user.
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_owned(),
        _ => text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => error.to_string(),
    }
}

/// Maps a non-success response onto a failure.
pub(crate) fn status_failure(
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    ctx: &ErrorContext<'_>,
) -> Failure {
    let detail = server_message(body)
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("no detail").to_owned());
    let n = status.as_u16();
    let lower = detail.to_lowercase();
    let said = format!("HTTP {n}: {detail}");
    let (code, message) = if n == 401 || n == 403 {
        (
            FailureCode::Auth,
            format!(
                "the provider refused the API key ({said}); check {}",
                ctx.api_key_env
            ),
        )
    } else if n == 402 || is_quota(&lower) {
        (
            FailureCode::Quota,
            format!("the account has no quota left ({said}); top it up or use another provider"),
        )
    } else if n == 429 {
        (
            FailureCode::RateLimit,
            format!("the provider is rate limiting requests ({said})"),
        )
    } else if is_unknown_model(&lower) && (n == 400 || n == 404 || n == 422) {
        (
            FailureCode::UnknownModel,
            format!(
                "model \"{}\" does not exist on this provider ({said}); choose another with --model",
                ctx.model
            ),
        )
    } else if is_context_overflow(&lower) && (n == 400 || n == 413 || n == 422) {
        (
            FailureCode::ContextWindowExceeded,
            format!(
                "the request does not fit the model's context window ({said}); if the server \
                 runs the model with a smaller window than dsh assumes (a local server started \
                 with a short context), declare it as context_window for model \"{}\" \
                 (docs/providers.md) so that compaction keeps the history inside it",
                ctx.model
            ),
        )
    } else if n == 400 || n == 413 || n == 422 {
        (
            FailureCode::InvalidRequest,
            format!("the provider rejected the request ({said})"),
        )
    } else if n == 404 {
        (
            FailureCode::Http(404),
            format!(
                "{} does not exist ({said}); check {}",
                ctx.url, ctx.base_url_source
            ),
        )
    } else if status.is_server_error() {
        (FailureCode::Server, format!("the provider failed ({said})"))
    } else {
        (
            FailureCode::Http(n),
            format!("unexpected answer from {} ({said})", ctx.url),
        )
    };
    let mut failure = Failure::new(code, message);
    failure.status = Some(n);
    failure.provider_retry_after_ms = retry_after_ms(headers);
    failure.request_id = ["x-request-id", "x-deepseek-request-id", "request-id"]
        .iter()
        .find_map(|name| headers.get(*name)?.to_str().ok().map(str::to_owned));
    failure
}

/// The human message of an error body: `{"error":{"message":..}}`, `{"message":..}`,
/// `{"error":".."}`, or the text itself.
fn server_message(body: &str) -> Option<String> {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return None;
    }
    let text = match serde_json::from_str::<serde_json::Value>(trimmed) {
        Ok(value) => {
            let found = value
                .pointer("/error/message")
                .or_else(|| value.get("message"))
                .or_else(|| value.get("error"))
                .or_else(|| value.get("detail"));
            match found {
                Some(serde_json::Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => trimmed.to_owned(),
            }
        }
        Err(_) => trimmed.to_owned(),
    };
    Some(cut(
        text.split_whitespace().collect::<Vec<_>>().join(" "),
        MAX_ERROR_TEXT,
    ))
}

fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

fn is_quota(lower: &str) -> bool {
    [
        "insufficient balance",
        "insufficient_quota",
        "exceeded your current quota",
        "quota exceeded",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn is_unknown_model(lower: &str) -> bool {
    lower.contains("model")
        && [
            "not exist",
            "does not exist",
            "not found",
            "unknown model",
            "no such model",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

fn is_context_overflow(lower: &str) -> bool {
    [
        "context length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "input is too long",
        "exceeds the limit",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// `Retry-After` in seconds or as an HTTP date.
fn retry_after_ms(headers: &HeaderMap) -> Option<u64> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then_some((seconds * 1000.0) as u64);
    }
    let when = httpdate_to_unix(value)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(when.saturating_sub(now.as_secs()) * 1000)
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds.
fn httpdate_to_unix(text: &str) -> Option<u64> {
    let mut parts = text.split_whitespace();
    let _weekday = parts.next()?;
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':').map(str::parse::<u64>);
    let (h, m, s) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let days = days_from_civil(year, month, day as i64);
    u64::try_from(days)
        .ok()
        .map(|d| d * 86_400 + h * 3600 + m * 60 + s)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ErrorContext<'static> {
        ErrorContext {
            url: "http://h/chat/completions",
            model: "m1",
            api_key_env: "DEEPSEEK_API_KEY",
            base_url_source: "DEEPSEEK_BASE_URL",
        }
    }

    fn classify(status: u16, body: &str) -> Failure {
        status_failure(
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body,
            &ctx(),
        )
    }

    #[test]
    fn maps_statuses_to_codes_with_a_fix() {
        let auth = classify(
            401,
            r#"{"error":{"message":"Authentication Fails","type":"x"}}"#,
        );
        assert_eq!(auth.code, FailureCode::Auth);
        assert_eq!(
            auth.message,
            "the provider refused the API key (HTTP 401: Authentication Fails); check DEEPSEEK_API_KEY"
        );
        assert_eq!(
            classify(402, "Insufficient Balance").code,
            FailureCode::Quota
        );
        assert_eq!(classify(429, "slow down").code, FailureCode::RateLimit);
        assert_eq!(classify(503, "").code, FailureCode::Server);
        assert_eq!(classify(418, "").code, FailureCode::Http(418));
        let missing = classify(404, "");
        assert_eq!(missing.code, FailureCode::Http(404));
        assert!(
            missing.message.ends_with("check DEEPSEEK_BASE_URL"),
            "{}",
            missing.message
        );
    }

    #[test]
    fn recognises_unknown_models_and_context_overflow() {
        let model = classify(400, r#"{"error":{"message":"Model Not Exist"}}"#);
        assert_eq!(model.code, FailureCode::UnknownModel);
        assert!(model.message.contains("model \"m1\" does not exist"));
        let openai = classify(
            404,
            r#"{"error":{"message":"The model `x` does not exist"}}"#,
        );
        assert_eq!(openai.code, FailureCode::UnknownModel);
        let overflow = classify(400, "This model's maximum context length is 8192 tokens");
        assert_eq!(overflow.code, FailureCode::ContextWindowExceeded);
        assert_eq!(classify(400, "bad field").code, FailureCode::InvalidRequest);
    }

    #[test]
    fn reads_retry_after_in_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after_ms(&headers), Some(2000));
        headers.insert(
            "retry-after",
            "Thu, 01 Jan 1970 00:00:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after_ms(&headers), Some(0));
        assert_eq!(
            httpdate_to_unix("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
    }
}
