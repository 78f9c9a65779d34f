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
mod model;
mod openai_responses;
mod priced;
mod prompt_cache;
mod retry;
pub mod sse;
#[cfg(test)]
mod stream_props;

use dsh_protocol::Failure;

pub use anthropic_messages::{
    AnthropicConfig, AnthropicMessages, DEFAULT_MAX_TOKENS as ANTHROPIC_DEFAULT_MAX_TOKENS,
};
pub use chat_completions::{ChatCompletions, ChatCompletionsConfig, ChatDialect};
pub use model::{
    BoxFuture, Completion, DeltaSink, Effort, EndpointConfig, LlmError, ModelRequest, Provider,
    RetryNotice, StreamDelta, USER_AGENT, UnknownEffort,
};
pub use openai_responses::{OpenAiResponses, ResponsesConfig};
pub use priced::Priced;
pub use retry::{RetryPolicy, Retrying};

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

/// A request of `messages` alone (no system prompt, no tools, effort off), for the dialects'
/// tests of how messages go on the wire.
#[cfg(test)]
pub(crate) fn bare_request(messages: &[dsh_protocol::Message]) -> ModelRequest<'_> {
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
