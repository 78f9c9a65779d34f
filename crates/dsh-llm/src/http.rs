//! HTTP plumbing shared by the dialects: the client, and the mapping of statuses and network
//! errors onto failure codes with messages that say what to do.

use std::time::Duration;

use dsh_protocol::{Failure, FailureCode};

use crate::EndpointConfig;
use reqwest::StatusCode;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// What to try after a provider's own failure (`SERVER`): the request was not at fault, and
/// dsh has already retried it as often as `requests.retries` allows.
pub(crate) const SERVER_FAULT: &str = "the fault is on its side and the retries did not get past it: \
    try again in a while, or use another model or provider";

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
/// How a route's key goes on the wire.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `Authorization: Bearer <key>` (OpenAI, DeepSeek).
    Bearer,
    /// The key alone under this header (`x-api-key` for Anthropic).
    Named(&'static str),
}

/// One route's endpoint: its URL and every header its requests carry, checked once when the
/// route is set up, the same way for every dialect.
pub(crate) struct Endpoint {
    client: reqwest::Client,
    url: String,
    /// The URL as messages name it ([`dsh_protocol::shown_url`]): a base URL may carry a
    /// password or a token.
    shown: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    api_key_env: String,
    base_url_source: String,
    /// How long the server may stay silent, before the status and between events.
    idle: Duration,
}

impl Endpoint {
    /// `path` is appended to the base URL (`/chat/completions`); `fixed_headers` are the ones
    /// the wire format always sends.
    pub(crate) fn new(
        spec: &EndpointConfig,
        path: &str,
        key_header: KeyHeader,
        fixed_headers: Vec<(HeaderName, HeaderValue)>,
    ) -> Result<Self, Failure> {
        let base = spec.base_url.trim();
        let parsed = reqwest::Url::parse(base);
        let usable = (parsed.as_ref())
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.has_host());
        if !usable {
            // Text that is not a URL is not shown: where its password ends cannot be told.
            let shown = match parsed {
                Ok(_) => format!(": \"{}\"", dsh_protocol::shown_url(&spec.base_url)),
                Err(_) => " (its text is not shown, as it may hold a password)".to_owned(),
            };
            return Err(Failure::new(
                FailureCode::InvalidRequest,
                format!(
                    "{} is not an http:// or https:// URL{shown}",
                    spec.base_url_source
                ),
            ));
        }
        let mut headers = fixed_headers;
        if let Some(key) = &spec.api_key {
            let (name, text) = match key_header {
                KeyHeader::Bearer => (AUTHORIZATION, format!("Bearer {key}")),
                KeyHeader::Named(name) => (HeaderName::from_static(name), key.clone()),
            };
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                Failure::new(
                    FailureCode::InvalidCredential,
                    format!(
                        "the value of {} cannot be sent in an HTTP header (it holds a line break \
                         or another control character)",
                        spec.api_key_env
                    ),
                )
            })?;
            value.set_sensitive(true);
            headers.push((name, value));
        }
        for (name, value) in &spec.headers {
            let bad = || {
                Failure::new(
                    FailureCode::InvalidRequest,
                    format!(
                        "provider \"{}\": the header \"{name}\" cannot be sent (check its name \
                         and value in the providers config)",
                        spec.name
                    ),
                )
            };
            headers.push((
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?,
                HeaderValue::from_str(value).map_err(|_| bad())?,
            ));
        }
        let url = format!("{}{path}", base.trim_end_matches('/'));
        Ok(Endpoint {
            client: client()?,
            shown: dsh_protocol::shown_url(&url),
            url,
            headers,
            api_key_env: spec.api_key_env.clone(),
            base_url_source: spec.base_url_source.clone(),
            idle: spec.idle_timeout,
        })
    }

    /// The URL as a message may name it.
    pub(crate) fn shown_url(&self) -> &str {
        &self.shown
    }

    pub(crate) fn idle(&self) -> Duration {
        self.idle
    }

    /// Posts `body` and reads the streamed answer into a fresh `A`: what a wire format whose
    /// server always streams does for a request.
    pub(crate) async fn stream<A: StreamedAnswer + Default>(
        &self,
        body: Vec<u8>,
        model: &str,
        on_delta: &mut crate::DeltaSink<'_>,
    ) -> Result<crate::Completion, crate::LlmError> {
        let response = self.post(body, model).await?;
        read_answer(
            response,
            self.idle,
            self.shown_url(),
            &mut A::default(),
            on_delta,
        )
        .await
    }

    /// Asks for the endpoint (a `GET`, nothing billed) and waits for the status as [`send`]:
    /// `Ok` when the server takes the route's key.
    pub(crate) async fn get(&self) -> Result<(), Failure> {
        let request = self.with_headers(
            self.client
                .get(&self.url)
                .header(ACCEPT, "application/json"),
        );
        send(request, self.idle, &self.context(""))
            .await
            .map(drop)
            .map_err(|error| error.failure)
    }

    /// Posts a JSON body asking for an event stream, and waits for the status as [`send`].
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        model: &str,
    ) -> Result<reqwest::Response, crate::LlmError> {
        let request = self.with_headers(
            (self.client.post(&self.url))
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream"),
        );
        send(request.body(body), self.idle, &self.context(model)).await
    }

    /// `request` with the route's headers: its key, the wire format's and the configured ones.
    fn with_headers(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        for (name, value) in &self.headers {
            request = request.header(name.clone(), value.clone());
        }
        request
    }

    /// What an error about a request for `model` names.
    fn context<'a>(&'a self, model: &'a str) -> ErrorContext<'a> {
        ErrorContext {
            url: &self.shown,
            model,
            api_key_env: &self.api_key_env,
            base_url_source: &self.base_url_source,
        }
    }
}

/// What a silent server's failure adds: the setting that bounds the wait, and what to do.
const IDLE_LIMIT: &str =
    " (requests.idle_timeout_ms sets the limit: raise it for a server that thinks that long)";

/// A server silent past the limit.
pub(crate) fn silent(url: &str, idle: Duration) -> Failure {
    Failure::new(
        FailureCode::Timeout,
        format!(
            "{url} sent nothing for {} s{IDLE_LIMIT}",
            idle.as_secs_f64()
        ),
    )
}

/// A stream that broke off.
pub(crate) fn broken(url: &str, error: &reqwest::Error) -> Failure {
    Failure::new(
        FailureCode::StreamClosed,
        format!("the stream from {url} broke off: {}", root_cause(error)),
    )
}

/// One event's data as JSON.
pub(crate) fn parse_event(data: &str) -> Result<serde_json::Value, Failure> {
    serde_json::from_str(data).map_err(|e| {
        let shown: String = data.chars().take(200).collect();
        Failure::new(
            FailureCode::MalformedResponse,
            format!("the provider sent an event that is not JSON ({e}): {shown}"),
        )
    })
}

/// How one wire format builds an answer from its server-sent events.
pub(crate) trait StreamedAnswer {
    /// What the stream must reach before it ends, named when it does not (`message_stop`).
    const END: &'static str;

    /// Takes one event's data; the finished answer once it is complete.
    fn event(
        &mut self,
        data: &str,
        on_delta: &mut crate::DeltaSink<'_>,
    ) -> Result<Option<crate::Completion>, crate::LlmError>;

    /// What the answer has billed so far, for a failure's usage.
    fn usage(&self) -> dsh_protocol::Usage;
}

/// Reads `response` as server-sent events into `answer` until it is complete. A stream that
/// goes silent for `idle`, breaks, or ends before [`StreamedAnswer::END`] is a failure priced
/// with what the answer had billed by then.
pub(crate) async fn read_answer<A: StreamedAnswer>(
    response: reqwest::Response,
    idle: Duration,
    url: &str,
    answer: &mut A,
    on_delta: &mut crate::DeltaSink<'_>,
) -> Result<crate::Completion, crate::LlmError> {
    let mut events = EventStream::new(response, idle, url);
    while let Some(batch) = events
        .next()
        .await
        .map_err(|f| crate::LlmError::new(f, answer.usage()))?
    {
        for event in batch {
            if let Some(done) = answer.event(&event.data, on_delta)? {
                return Ok(done);
            }
        }
    }
    Err(crate::LlmError::new(
        Failure::new(
            FailureCode::StreamClosed,
            format!("the stream from {url} ended before {}", A::END),
        ),
        answer.usage(),
    ))
}

/// A response's event stream, read batch by batch within the silence limit.
struct EventStream {
    body: std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    decoder: crate::sse::SseDecoder,
    idle: Duration,
    url: String,
    ended: bool,
}

impl EventStream {
    fn new(response: reqwest::Response, idle: Duration, url: &str) -> Self {
        EventStream {
            body: Box::pin(response.bytes_stream()),
            decoder: crate::sse::SseDecoder::new(),
            idle,
            url: url.to_owned(),
            ended: false,
        }
    }

    /// The next events; `Ok(None)` once the stream has ended. A silent or broken stream is a
    /// failure, which the caller prices with what it has seen.
    async fn next(&mut self) -> Result<Option<Vec<crate::sse::SseEvent>>, Failure> {
        use futures_util::StreamExt as _;
        if self.ended {
            return Ok(None);
        }
        let Ok(next) = tokio::time::timeout(self.idle, self.body.next()).await else {
            return Err(silent(&self.url, self.idle));
        };
        let decoded = match next {
            Some(Ok(bytes)) => self.decoder.feed(&bytes),
            Some(Err(e)) => return Err(broken(&self.url, &e)),
            None => {
                self.ended = true;
                self.decoder.finish()
            }
        };
        Ok(Some(decoded.events))
    }
}

/// Sends a prepared request and waits, at most `idle`, for its status: a refusal (any status
/// but success) is a failure that cost nothing; no answer in time is a `TIMEOUT` that may have
/// been billed.
async fn send(
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
                        "{} did not start answering within {} s{IDLE_LIMIT}",
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
            format!(
                "{url} did not accept a connection within {} s ({cause}): check the address \
                 and the network",
                CONNECT_TIMEOUT.as_secs()
            ),
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
        (
            FailureCode::Server,
            format!("the provider failed ({said}); {SERVER_FAULT}"),
        )
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
