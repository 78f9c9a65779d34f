//! Streamed chat completions: the DeepSeek API and any OpenAI-compatible server (vLLM,
//! Ollama, llama.cpp, Fireworks, OpenRouter, OpenAI itself). The dialect decides the few
//! places they differ: DeepSeek's `thinking` switch and the `reasoning_content` it wants back,
//! whether `reasoning_effort` is sent, and the role of the system prompt.

use dsh_protocol::{Failure, FailureCode, Usage};
use reqwest::header::CONTENT_TYPE;

mod wire;

use crate::http;
use crate::{
    BoxFuture, Completion, DeltaSink, Effort, EndpointConfig, LlmError, ModelRequest, Provider,
};
pub(crate) use wire::ChatAssembler;
pub(crate) use wire::image_base64;
use wire::{BodyOptions, ChatChunk, request_body};

/// Which server family a route talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatDialect {
    /// The DeepSeek API: `thinking` on or off, `reasoning_effort`, reasoning echoed back.
    DeepSeek,
    /// An OpenAI-compatible server.
    OpenAi {
        /// Send `reasoning_effort` (servers that do not know it may refuse the request).
        reasoning_effort: bool,
        /// Send the system prompt as a `developer` message (OpenAI's reasoning models).
        developer_role: bool,
    },
}

/// A chat-completions route: where it is, and its dialect.
#[derive(Debug, Clone)]
pub struct ChatCompletionsConfig {
    /// `/chat/completions` is appended to its base URL.
    pub endpoint: EndpointConfig,
    pub dialect: ChatDialect,
}

/// A chat-completions client for one route.
pub struct ChatCompletions {
    endpoint: http::Endpoint,
    config: ChatCompletionsConfig,
    /// Sent as `prompt_cache_key` to the servers documented to take it
    /// ([`crate::prompt_cache::takes_prompt_cache_key`]).
    cache_key: Option<String>,
}

impl ChatCompletions {
    pub fn new(config: ChatCompletionsConfig) -> Result<Self, Failure> {
        let endpoint = http::Endpoint::new(
            &config.endpoint,
            "/chat/completions",
            http::KeyHeader::Bearer,
            Vec::new(),
        )?;
        let cache_key = matches!(config.dialect, ChatDialect::OpenAi { .. })
            .then_some(())
            .filter(|()| crate::prompt_cache::takes_prompt_cache_key(&config.endpoint.base_url))
            .map(|()| crate::prompt_cache::session_key());
        Ok(ChatCompletions {
            endpoint,
            config,
            cache_key,
        })
    }

    async fn run(
        &self,
        request: ModelRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let mut on_delta = on_delta;
        let effort = match request.effort {
            Effort::Off => None,
            other => Some(other.as_str()),
        };
        let options = match self.config.dialect {
            ChatDialect::DeepSeek => BodyOptions {
                thinking: Some(request.effort != Effort::Off),
                reasoning_effort: effort,
                echo_reasoning: true,
                developer_role: false,
                prompt_cache_key: None,
            },
            ChatDialect::OpenAi {
                reasoning_effort,
                developer_role,
            } => BodyOptions {
                thinking: None,
                reasoning_effort: openai_effort(request.effort).filter(|_| reasoning_effort),
                echo_reasoning: false,
                developer_role,
                prompt_cache_key: self.cache_key.as_deref(),
            },
        };
        let body = request_body(&request, options);
        let idle = self.endpoint.idle();
        let response = self.endpoint.post(body, request.model).await?;
        let streamed = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut answer = ChatAssembler::default();
        if !streamed {
            // A server that ignores `stream: true` answers with one whole completion.
            let bytes = match tokio::time::timeout(idle, response.bytes()).await {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) => {
                    return Err(LlmError::new(
                        http::broken(self.endpoint.shown_url(), &e),
                        answer.usage_so_far(),
                    ));
                }
                Err(_) => {
                    return Err(LlmError::new(
                        http::silent(self.endpoint.shown_url(), idle),
                        answer.usage_so_far(),
                    ));
                }
            };
            let chunk = parse_chunk(&bytes).map_err(|f| LlmError::new(f, Usage::unreported()))?;
            answer.chunk(chunk, &mut on_delta)?;
            let usage = answer.usage_so_far();
            return answer.finish().map_err(|f| LlmError::new(f, usage));
        }
        http::read_answer(
            response,
            idle,
            self.endpoint.shown_url(),
            &mut answer,
            &mut on_delta,
        )
        .await
    }
}

impl ChatAssembler {
    /// Takes one chunk, or the error a server sends in place of one.
    fn chunk(&mut self, chunk: ChatChunk, on_delta: &mut DeltaSink<'_>) -> Result<(), LlmError> {
        if let Some(error) = &chunk.error {
            let detail = error
                .get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(LlmError::new(
                Failure::new(
                    FailureCode::Server,
                    format!(
                        "the provider failed while answering: {detail}; {}",
                        crate::http::SERVER_FAULT
                    ),
                ),
                self.usage_so_far(),
            ));
        }
        self.apply(chunk, on_delta);
        Ok(())
    }
}

impl http::StreamedAnswer for ChatAssembler {
    const END: &'static str = "the answer was complete";

    fn event(
        &mut self,
        data: &str,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Option<Completion>, LlmError> {
        if data.trim() == "[DONE]" {
            let usage = self.usage_so_far();
            return std::mem::take(self)
                .finish()
                .map(Some)
                .map_err(|f| LlmError::new(f, usage));
        }
        let chunk =
            parse_chunk(data.as_bytes()).map_err(|f| LlmError::new(f, self.usage_so_far()))?;
        self.chunk(chunk, on_delta)?;
        Ok(None)
    }

    fn usage(&self) -> Usage {
        self.usage_so_far()
    }
}

fn parse_chunk(data: &[u8]) -> Result<ChatChunk, Failure> {
    serde_json::from_slice(data).map_err(|e| {
        let shown: String = String::from_utf8_lossy(data).chars().take(200).collect();
        Failure::new(
            FailureCode::MalformedResponse,
            format!(
                "the provider sent an event that is not a chat completion chunk ({e}): {shown}"
            ),
        )
    })
}

impl Provider for ChatCompletions {
    fn name(&self) -> &str {
        &self.config.endpoint.name
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.run(request, on_delta))
    }
}

/// The effort in OpenAI's words: it has no `max`, so that is its highest, `high`.
pub(crate) fn openai_effort(effort: Effort) -> Option<&'static str> {
    match effort {
        Effort::Off => None,
        Effort::Low => Some("low"),
        Effort::High | Effort::Max => Some("high"),
    }
}
