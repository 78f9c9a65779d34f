//! The OpenAI Responses API, streamed.
//!
//! The system prompt goes in `instructions`; the history is a list of items: user and assistant
//! messages, `function_call` items for the model's calls and `function_call_output` items for
//! their results (an image from a result follows as a user message with an `input_image`).
//! Nothing is stored server-side (`store: false`), so reasoning is not sent back: the API would
//! need its encrypted form. Usage comes with `response.completed`. Each request carries the
//! client's `prompt_cache_key` ([`crate::prompt_cache`]).

use dsh_protocol::{
    Block, Failure, FailureCode, FinishReason, Message, Role, ToolOutputPart, Usage,
};
use serde_json::{Value, json};

use crate::http;
use crate::{
    BoxFuture, Completion, DeltaSink, EndpointConfig, LlmError, ModelRequest, Provider, StreamDelta,
};

/// A Responses route: where it is, and whether the effort is sent.
#[derive(Debug, Clone)]
pub struct ResponsesConfig {
    /// `/responses` is appended to its base URL (`https://api.openai.com/v1`).
    pub endpoint: EndpointConfig,
    /// Send `reasoning.effort` from `--effort`.
    pub reasoning_effort: bool,
}

/// A Responses client for one route.
pub struct OpenAiResponses {
    endpoint: http::Endpoint,
    config: ResponsesConfig,
    /// Sent as `prompt_cache_key` with every request ([`crate::prompt_cache::session_key`]).
    cache_key: String,
}

impl OpenAiResponses {
    pub fn new(config: ResponsesConfig) -> Result<Self, Failure> {
        let endpoint = http::Endpoint::new(
            &config.endpoint,
            "/responses",
            http::KeyHeader::Bearer,
            Vec::new(),
        )?;
        Ok(OpenAiResponses {
            endpoint,
            config,
            cache_key: crate::prompt_cache::session_key(),
        })
    }

    async fn run(
        &self,
        request: ModelRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let body = request_body(&request, self.config.reasoning_effort, &self.cache_key);
        let mut on_delta = on_delta;
        self.endpoint
            .stream::<Assembler>(body, request.model, &mut on_delta)
            .await
    }
}

impl Provider for OpenAiResponses {
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

/// The body of a request. `prompt_cache_key` is part of the Responses API itself (OpenAI's and
/// Azure's), so every server of this dialect gets it.
pub(crate) fn request_body(
    request: &ModelRequest<'_>,
    reasoning_effort: bool,
    cache_key: &str,
) -> Vec<u8> {
    let mut input: Vec<Value> = Vec::new();
    for message in request.messages {
        push_items(&mut input, message);
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description,
                   "parameters": t.parameters})
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "prompt_cache_key": cache_key,
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(effort) =
        crate::chat_completions::openai_effort(request.effort).filter(|_| reasoning_effort)
    {
        body["reasoning"] = json!({"effort": effort});
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

fn push_items(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::User => {
            let mut images = Vec::new();
            for block in &message.content {
                match block {
                    Block::Text { text } if !text.is_empty() => out.push(
                        json!({"role": "user", "content": [{"type": "input_text", "text": text}]}),
                    ),
                    Block::Image { image } => out.push(json!({"role": "user", "content": [
                        match crate::chat_completions::image_base64(image) {
                            Ok(data) => json!({
                                "type": "input_image",
                                "image_url": format!("data:{};base64,{data}", image.media_type),
                            }),
                            Err(line) => json!({"type": "input_text", "text": line.to_string()}),
                        }
                    ]})),
                    Block::ToolResult {
                        tool_call_id,
                        content,
                        ..
                    } => {
                        let mut text = String::new();
                        for part in content {
                            match part {
                                ToolOutputPart::Text { text: t } => text.push_str(t),
                                ToolOutputPart::Image { image } => {
                                    match crate::chat_completions::image_base64(image) {
                                        Ok(data) => images.push(json!({
                                            "type": "input_image",
                                            "image_url": format!("data:{};base64,{data}", image.media_type),
                                        })),
                                        Err(line) => text.push_str(&line.to_string()),
                                    }
                                }
                            }
                        }
                        out.push(
                            json!({"type": "function_call_output", "call_id": tool_call_id,
                                        "output": text}),
                        );
                    }
                    _ => {}
                }
            }
            if !images.is_empty() {
                let mut content = vec![
                    json!({"type": "input_text", "text": "Attached image(s) from tool result:"}),
                ];
                content.extend(images);
                out.push(json!({"role": "user", "content": content}));
            }
        }
        Role::Assistant => {
            for block in &message.content {
                match block {
                    Block::Text { text } if !text.is_empty() => out.push(
                        json!({"role": "assistant", "content": [{"type": "output_text", "text": text}]}),
                    ),
                    Block::ToolCall {
                        id,
                        name,
                        arguments,
                    } => out.push(json!({"type": "function_call", "call_id": id, "name": name,
                                         "arguments": arguments})),
                    _ => {}
                }
            }
        }
    }
}

/// Builds the answer from the stream's events.
#[derive(Default)]
pub(crate) struct Assembler {
    reasoning: String,
    text: String,
    /// Calls in the order they opened: (item id, call id, name, arguments).
    calls: Vec<(String, String, String, String)>,
}

impl http::StreamedAnswer for Assembler {
    const END: &'static str = "response.completed";

    fn event(
        &mut self,
        data: &str,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Option<Completion>, LlmError> {
        let event = http::parse_event(data).map_err(|f| LlmError::new(f, self.usage()))?;
        self.apply(&event, on_delta)
    }

    /// Responses reports usage only when it completes: a failure before that is unreported.
    fn usage(&self) -> Usage {
        Usage::unreported()
    }
}

impl Assembler {
    fn apply(
        &mut self,
        event: &Value,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<Option<Completion>, LlmError> {
        let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
        match event["type"].as_str().unwrap_or("") {
            "response.output_text.delta" => {
                let piece = text(&event["delta"]);
                on_delta(StreamDelta::Text(piece.clone()));
                self.text.push_str(&piece);
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                let piece = text(&event["delta"]);
                on_delta(StreamDelta::Reasoning(piece.clone()));
                self.reasoning.push_str(&piece);
            }
            "response.output_item.added" if event["item"]["type"] == "function_call" => {
                let item = &event["item"];
                on_delta(StreamDelta::ToolCall);
                self.calls.push((
                    text(&item["id"]),
                    text(&item["call_id"]),
                    text(&item["name"]),
                    text(&item["arguments"]),
                ));
            }
            "response.function_call_arguments.delta" => {
                let id = text(&event["item_id"]);
                if let Some(call) = self.calls.iter_mut().find(|c| c.0 == id) {
                    on_delta(StreamDelta::ToolCall);
                    call.3.push_str(&text(&event["delta"]));
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = &event["response"];
                let usage = usage(&response["usage"]);
                let cut = response["status"] == "incomplete"
                    || response["incomplete_details"]["reason"] == "max_output_tokens";
                return self.finish(cut, usage).map(Some);
            }
            "response.failed" | "error" => {
                let error = if event["type"] == "error" {
                    event
                } else {
                    &event["response"]["error"]
                };
                let code = match error["code"].as_str().unwrap_or("") {
                    "rate_limit_exceeded" => FailureCode::RateLimit,
                    "server_error" | "" => FailureCode::Server,
                    other => FailureCode::Provider(other.to_uppercase()),
                };
                let message = error["message"].as_str().unwrap_or("(no message)");
                return Err(LlmError::new(
                    Failure::new(
                        code,
                        format!(
                            "the provider failed while answering: {message}; {}",
                            crate::http::SERVER_FAULT
                        ),
                    ),
                    usage(&event["response"]["usage"]),
                ));
            }
            _ => {}
        }
        Ok(None)
    }

    fn finish(&mut self, cut: bool, usage: Usage) -> Result<Completion, LlmError> {
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(Block::Reasoning {
                text: std::mem::take(&mut self.reasoning),
                signature: None,
                redacted: false,
            });
        }
        if !self.text.is_empty() {
            content.push(Block::Text {
                text: std::mem::take(&mut self.text),
            });
        }
        let calls = std::mem::take(&mut self.calls);
        let has_calls = !calls.is_empty();
        for (_, call_id, name, arguments) in calls {
            content.push(Block::ToolCall {
                id: call_id,
                name,
                arguments: if arguments.is_empty() {
                    "{}".to_owned()
                } else {
                    arguments
                },
            });
        }
        if content.is_empty() {
            return Err(LlmError::new(
                Failure::new(
                    FailureCode::EmptyResponse,
                    "the model answered with nothing: no text, no reasoning, no tool call"
                        .to_owned(),
                ),
                usage,
            ));
        }
        let finish = if cut {
            FinishReason::MaxTokens
        } else if has_calls {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        Ok(Completion {
            message: Message {
                role: Role::Assistant,
                content,
            },
            finish,
            usage,
            retried: Usage::default(),
        })
    }
}

/// The Responses usage object in our buckets: `input_tokens` includes the cached part and,
/// where the model bills cache writes apart (GPT-5.6 and later), the written part.
fn usage(wire: &Value) -> Usage {
    if !wire.is_object() {
        return Usage::unreported();
    }
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    let input = count(&wire["input_tokens"]);
    let details = &wire["input_tokens_details"];
    let cached = count(&details["cached_tokens"]).min(input);
    let written = count(&details["cache_write_tokens"]).min(input - cached);
    Usage::new(
        input - cached - written,
        count(&wire["output_tokens"]),
        cached,
        written,
        count(&wire["output_tokens_details"]["reasoning_tokens"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Effort;

    #[test]
    fn an_attached_image_is_an_input_image_after_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let messages = vec![Message::user_with_images(
            "what is this?",
            vec![crate::stored_image(dir.path())],
        )];
        let request = crate::bare_request(&messages);
        let body: Value = serde_json::from_slice(&request_body(&request, false, "k")).unwrap();
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [{"type": "input_text", "text": "what is this?"}]},
                {"role": "user", "content": [{"type": "input_image",
                    "image_url": "data:image/png;base64,cG5nLWJ5dGVz"}]},
            ])
        );
    }

    #[test]
    fn the_history_becomes_items_and_usage_splits_the_cache() {
        let messages = vec![
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: r#"{"file_path":"x"}"#.into(),
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "call_1".into(),
                    content: vec![ToolOutputPart::Text { text: "one".into() }],
                    is_error: false,
                }],
            },
        ];
        let request = ModelRequest {
            model: "m",
            system: "sys",
            messages: &messages,
            tools: &[],
            effort: Effort::High,
            max_output_tokens: Some(100),
        };
        let body: Value = serde_json::from_slice(&request_body(&request, true, "k")).unwrap();
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["prompt_cache_key"], "k");
        assert_eq!(body["reasoning"]["effort"], "high");
        assert_eq!(body["store"], false);
        assert_eq!(body["input"][1]["type"], "function_call");
        assert_eq!(body["input"][1]["arguments"], r#"{"file_path":"x"}"#);
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "one"})
        );
        let u = usage(
            &json!({"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 600},
                              "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 20}}),
        );
        assert_eq!(
            (
                u.input_tokens,
                u.cache_read_tokens,
                u.output_tokens,
                u.reasoning_tokens
            ),
            (400, 600, 50, 20)
        );
        assert_eq!(usage(&Value::Null).unreported_calls, 1);
        // A model that bills cache writes apart reports them inside `input_tokens` too.
        let u = usage(&json!({"input_tokens": 1000, "output_tokens": 5,
            "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300}}));
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens),
            (100, 600, 300)
        );
    }
}
