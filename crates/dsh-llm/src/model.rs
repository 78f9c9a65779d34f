//! What every dialect shares: where a route's server is ([`EndpointConfig`]), the request, the
//! stream of deltas, the completion, the error, and the [`Provider`] trait they all implement.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

use dsh_protocol::{Failure, FinishReason, Message, ToolSpec, Usage};

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

/// One retry about to happen, for whoever shows the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The attempt about to be made (2 for the first retry).
    pub attempt: u32,
    /// How many attempts there can be in all.
    pub attempts: u32,
    pub code: String,
    pub message: String,
    pub delay: std::time::Duration,
}
