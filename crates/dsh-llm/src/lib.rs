//! Model provider clients for dsh.
//!
//! A [`Provider`] turns one [`ModelRequest`] (system prompt, history, tool schemas) into one
//! [`Completion`]: the assembled assistant message, why the model stopped, and what the request
//! cost. While the answer streams in, the provider reports [`StreamDelta`]s so a surface can show
//! reasoning live; the caller commits only the finished completion. A failed request is an
//! [`LlmError`] carrying the reference's failure code and the usage the attempt reported.
//!
//! Cancellation is by dropping the future: the connection is closed with it.

mod anthropic_messages;
mod chat_completions;
pub mod deepseek;
mod http;
mod openai_responses;
mod priced;
mod prompt_cache;
mod retry;
pub mod sse;
#[cfg(test)]
mod stream_props;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use dsh_protocol::{Failure, FinishReason, Message, ToolSpec, Usage};

pub use anthropic_messages::{
    AnthropicConfig, AnthropicMessages, DEFAULT_MAX_TOKENS as ANTHROPIC_DEFAULT_MAX_TOKENS,
};
pub use chat_completions::{ChatCompletions, ChatCompletionsConfig, ChatDialect};
pub use openai_responses::{OpenAiResponses, ResponsesConfig};
pub use priced::Priced;
pub use retry::{RetryNotice, RetryPolicy, Retrying};

/// Where a route's server is and how it is reached: what every wire format shares.
#[derive(Clone)]
pub struct EndpointConfig {
    /// The route's name, as a user refers to it (`deepseek`, `local`).
    pub name: String,
    /// The API root; each wire format appends its own path.
    pub base_url: String,
    /// The key, when the server needs one.
    pub api_key: Option<String>,
    /// Where the key came from, named when the server refuses it.
    pub api_key_env: String,
    /// Where the base URL came from, named when it looks wrong.
    pub base_url_source: String,
    /// A server silent for this long (before its first byte, or mid-stream) is given up as
    /// `TIMEOUT`.
    pub idle_timeout: std::time::Duration,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
}

/// The key and header values are secrets: only their presence and names are shown.
impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("name", &self.name)
            .field("base_url_source", &self.base_url_source)
            .field("api_key", &self.api_key.as_ref().map(|_| "[hidden]"))
            .field("api_key_env", &self.api_key_env)
            .field("idle_timeout", &self.idle_timeout)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// The wire format a route speaks, with the options only that format has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Chat completions (`/chat/completions`): DeepSeek's or an OpenAI-compatible server's.
    ChatCompletions(ChatDialect),
    /// Anthropic Messages (`/messages`); `thinking` asks for a thinking budget from the effort.
    AnthropicMessages { thinking: bool },
    /// OpenAI Responses (`/responses`); `reasoning_effort` sends the effort.
    OpenAiResponses { reasoning_effort: bool },
}

/// Whether the server of a route takes its key, asked the cheapest way there is: the list of
/// its models (`GET <base>/models`), which bills nothing. What `dsh login` checks a key with.
pub async fn check_key(endpoint: EndpointConfig, format: WireFormat) -> Result<(), Failure> {
    let (key_header, fixed) = match format {
        WireFormat::AnthropicMessages { .. } => anthropic_messages::key_headers(),
        WireFormat::ChatCompletions(_) | WireFormat::OpenAiResponses { .. } => {
            (http::KeyHeader::Bearer, Vec::new())
        }
    };
    http::Endpoint::new(&endpoint, "/models", key_header, fixed)?
        .get()
        .await
}

/// The client for a route.
pub fn connect(
    endpoint: EndpointConfig,
    format: WireFormat,
) -> Result<std::sync::Arc<dyn Provider>, Failure> {
    Ok(match format {
        WireFormat::ChatCompletions(dialect) => {
            std::sync::Arc::new(ChatCompletions::new(ChatCompletionsConfig {
                endpoint,
                dialect,
            })?)
        }
        WireFormat::AnthropicMessages { thinking } => {
            std::sync::Arc::new(AnthropicMessages::new(AnthropicConfig {
                endpoint,
                thinking,
            })?)
        }
        WireFormat::OpenAiResponses { reasoning_effort } => {
            std::sync::Arc::new(OpenAiResponses::new(ResponsesConfig {
                endpoint,
                reasoning_effort,
            })?)
        }
    })
}

/// The value sent as `User-Agent`.
pub const USER_AGENT: &str = concat!("dsh/", env!("CARGO_PKG_VERSION"));

/// How hard a reasoning model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Effort {
    /// No reasoning at all.
    Off,
    Low,
    #[default]
    High,
    Max,
}

impl Effort {
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Off => "off",
            Effort::Low => "low",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An effort name that is not one of `off`, `low`, `high`, `max`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reasoning effort \"{0}\": use off, low, high or max")]
pub struct UnknownEffort(pub String);

impl FromStr for Effort {
    type Err = UnknownEffort;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "off" => Ok(Effort::Off),
            "low" => Ok(Effort::Low),
            "high" => Ok(Effort::High),
            "max" => Ok(Effort::Max),
            other => Err(UnknownEffort(other.to_owned())),
        }
    }
}

/// Everything one model request carries.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    pub model: &'a str,
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub effort: Effort,
    /// The most output tokens to ask for; `None` leaves the server's default.
    pub max_output_tokens: Option<u32>,
}

/// A piece of the answer as it streams in. Deltas are for display only: they are never
/// committed, and an attempt that fails after some deltas leaves nothing behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    Reasoning(String),
    Text(String),
    /// Part of a tool call arrived.
    ToolCall,
    /// The request failed for a reason worth another try, which is about to be made; what
    /// the failed attempt streamed is discarded.
    Retry(RetryNotice),
}

/// A finished answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message: reasoning, text and tool-call blocks in the order they opened.
    pub message: Message,
    pub finish: FinishReason,
    /// What the attempt that produced the answer cost.
    pub usage: Usage,
    /// What earlier attempts of the same request cost (retried outages); billed too.
    pub retried: Usage,
}

impl Completion {
    /// Everything the request cost: its answer and the attempts before it.
    pub fn billed(&self) -> Usage {
        let mut total = self.usage;
        total.add(&self.retried);
        total
    }
}

/// A request that did not produce an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{failure}")]
pub struct LlmError {
    pub failure: Failure,
    /// What this attempt cost: the usage the server reported before failing, zero for a request
    /// it refused outright, or one unreported call when an answer was cut off before its usage.
    pub usage: Usage,
}

impl LlmError {
    pub fn new(failure: Failure, usage: Usage) -> Self {
        LlmError { failure, usage }
    }
}

/// The callback a provider reports deltas to.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(StreamDelta) + Send);

/// A boxed future, so that providers can be used as trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A model API.
pub trait Provider: Send + Sync {
    /// The provider's name as a user refers to it (`deepseek`).
    fn name(&self) -> &str;

    /// Sends one request and assembles the answer.
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// A request of `messages` alone (no system prompt, no tools, effort off), for the dialects'
/// tests of how messages go on the wire.
#[cfg(test)]
pub(crate) fn bare_request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "m",
        system: "",
        messages,
        tools: &[],
        effort: Effort::Off,
        max_output_tokens: None,
    }
}

/// An image as the attachment store keeps it, for the dialects' tests: its bytes are
/// `png-bytes` (`cG5nLWJ5dGVz` in base64).
#[cfg(test)]
pub(crate) fn stored_image(dir: &std::path::Path) -> dsh_protocol::ImageRef {
    let path = dir.join("a.png");
    std::fs::write(&path, b"png-bytes").unwrap();
    dsh_protocol::ImageRef {
        attachment_id: "sha256:ab".into(),
        path,
        media_type: "image/png".into(),
        bytes: 9,
        width: 1,
        height: 1,
    }
}
