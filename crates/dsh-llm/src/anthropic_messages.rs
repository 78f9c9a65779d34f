//! The Anthropic Messages API (and compatible endpoints), streamed.
//!
//! The system prompt goes in `system`; tool results are `tool_result` blocks of a user message
//! (all results of one answer in one message, since roles alternate); thinking blocks go back
//! with their signatures unchanged, as the API requires across tool-use turns. Usage comes in
//! `message_start` (input, cache read, cache creation) and `message_delta` (output, cumulative).
//! The prefix is marked for Anthropic's cache ([`crate::prompt_cache::mark_breakpoints`]).

use dsh_protocol::{
    Block, Failure, FailureCode, FinishReason, Message, Role, ToolOutputPart, Usage,
};
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use crate::http;
use crate::{
    BoxFuture, Completion, DeltaSink, Effort, EndpointConfig, LlmError, ModelRequest, Provider,
    StreamDelta,
};

/// The API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Output tokens asked for when the model declares none (the API requires a number).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Messages route: where it is, and whether thinking is asked for.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// `/messages` is appended to its base URL (`https://api.anthropic.com/v1`).
    pub endpoint: EndpointConfig,
    /// Send `thinking` with a budget from the effort.
    pub thinking: bool,
}

/// A Messages client for one route.
pub struct AnthropicMessages {
    endpoint: http::Endpoint,
    config: AnthropicConfig,
}

/// How the API takes a key, and the header every request carries.
pub(crate) fn key_headers() -> (http::KeyHeader, Vec<(HeaderName, HeaderValue)>) {
    (
        http::KeyHeader::Named("x-api-key"),
        vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        )],
    )
}

impl AnthropicMessages {
    pub fn new(config: AnthropicConfig) -> Result<Self, Failure> {
        let (key_header, fixed) = key_headers();
        let endpoint = http::Endpoint::new(&config.endpoint, "/messages", key_header, fixed)?;
        Ok(AnthropicMessages { endpoint, config })
    }

    async fn run(
        &self,
        request: ModelRequest<'_>,
        on_delta: DeltaSink<'_>,
    ) -> Result<Completion, LlmError> {
        let body = request_body(&request, self.config.thinking);
        let mut on_delta = on_delta;
        self.endpoint
            .stream::<Assembler>(body, request.model, &mut on_delta)
            .await
    }
}

impl Provider for AnthropicMessages {
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

/// The thinking budget for an effort.
fn budget(effort: Effort) -> Option<u32> {
    match effort {
        Effort::Off => None,
        Effort::Low => Some(2048),
        Effort::High => Some(8192),
        Effort::Max => Some(24_576),
    }
}

pub(crate) fn request_body(request: &ModelRequest<'_>, thinking: bool) -> Vec<u8> {
    let budget = budget(request.effort).filter(|_| thinking);
    let floor = budget.map_or(0, |b| b + 1024);
    let max_tokens = request
        .max_output_tokens
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .max(floor);
    let mut messages: Vec<Value> = Vec::new();
    for message in request.messages {
        let (role, content) = wire_message(message);
        if content.is_empty() {
            continue;
        }
        // Roles must alternate: a user message after a user message joins it.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(blocks) = last["content"].as_array_mut() {
                    blocks.extend(content);
                }
            }
            _ => messages.push(json!({"role": role, "content": content})),
        }
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "stream": true,
        "messages": messages,
    });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if !tools.is_empty() {
        body["tools"] = json!(tools);
    }
    if let Some(budget) = budget {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    crate::prompt_cache::mark_breakpoints(&mut body);
    serde_json::to_vec(&body).unwrap_or_default()
}

fn wire_message(message: &Message) -> (&'static str, Vec<Value>) {
    let mut blocks = Vec::new();
    match message.role {
        Role::User => {
            for block in &message.content {
                match block {
                    Block::Text { text } if !text.is_empty() => {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    Block::Image { image } => blocks.push(result_part(&ToolOutputPart::Image {
                        image: image.clone(),
                    })),
                    Block::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    } => {
                        let parts: Vec<Value> = content.iter().map(result_part).collect();
                        let mut result = json!({
                            "type": "tool_result",
                            "tool_use_id": tool_call_id,
                            "content": parts,
                        });
                        if *is_error {
                            result["is_error"] = json!(true);
                        }
                        blocks.push(result);
                    }
                    _ => {}
                }
            }
            ("user", blocks)
        }
        Role::Assistant => {
            for block in &message.content {
                match block {
                    // A thinking block goes back only with its signature: without one the
                    // API refuses it, and it did not come from this API.
                    Block::Reasoning {
                        signature: Some(data),
                        redacted: true,
                        ..
                    } => blocks.push(json!({"type": "redacted_thinking", "data": data})),
                    Block::Reasoning {
                        text,
                        signature: Some(signature),
                        redacted: false,
                    } => blocks.push(
                        json!({"type": "thinking", "thinking": text, "signature": signature}),
                    ),
                    Block::Text { text } if !text.is_empty() => {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    Block::ToolCall {
                        id,
                        name,
                        arguments,
                    } => {
                        // The API takes the input as an object; a call whose arguments did not
                        // parse already got an error result, and goes back empty.
                        let input = serde_json::from_str::<Value>(arguments)
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or_else(|| json!({}));
                        blocks.push(
                            json!({"type": "tool_use", "id": id, "name": name, "input": input}),
                        );
                    }
                    _ => {}
                }
            }
            ("assistant", blocks)
        }
    }
}

/// A part of a tool result, or an image the user attached: the same content block either way.
fn result_part(part: &ToolOutputPart) -> Value {
    match part {
        ToolOutputPart::Text { text } => json!({"type": "text", "text": text}),
        ToolOutputPart::Image { image } => match crate::chat_completions::image_base64(image) {
            Ok(data) => json!({"type": "image", "source": {
                "type": "base64",
                "media_type": image.media_type,
                "data": data,
            }}),
            Err(line) => json!({"type": "text", "text": line.to_string()}),
        },
    }
}

/// Builds the answer from the stream's events.
#[derive(Default)]
pub(crate) struct Assembler {
    /// Blocks by index: the block, and a tool call's argument text so far.
    blocks: Vec<(Block, String)>,
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
    reported: bool,
    stop: Option<String>,
}

impl http::StreamedAnswer for Assembler {
    const END: &'static str = "message_stop";

    fn event(
        &mut self,
        data: &str,
        on_delta: &mut DeltaSink<'_>,
    ) -> Result<Option<Completion>, LlmError> {
        let event = http::parse_event(data).map_err(|f| LlmError::new(f, self.usage()))?;
        self.apply(&event, on_delta)
            .map_err(|f| LlmError::new(f, self.usage()))
    }

    fn usage(&self) -> Usage {
        Assembler::usage(self)
    }
}

impl Assembler {
    fn usage(&self) -> Usage {
        if self.reported {
            Usage::new(
                self.input,
                self.output,
                self.cache_read,
                self.cache_write,
                0,
            )
        } else {
            Usage::unreported()
        }
    }

    /// Applies one event; the finished answer at `message_stop`.
    fn apply(
        &mut self,
        event: &Value,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<Option<Completion>, Failure> {
        let count = |v: &Value| v.as_u64().unwrap_or(0);
        match event["type"].as_str().unwrap_or("") {
            "message_start" => {
                let usage = &event["message"]["usage"];
                if usage.is_object() {
                    self.reported = true;
                    self.input = count(&usage["input_tokens"]);
                    self.cache_read = count(&usage["cache_read_input_tokens"]);
                    self.cache_write = count(&usage["cache_creation_input_tokens"]);
                    self.output = count(&usage["output_tokens"]);
                }
            }
            "content_block_start" => {
                let block = &event["content_block"];
                let text = |k: &str| block[k].as_str().unwrap_or("").to_owned();
                let new = match block["type"].as_str().unwrap_or("") {
                    "thinking" => Block::Reasoning {
                        text: text("thinking"),
                        signature: block["signature"]
                            .as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned),
                        redacted: false,
                    },
                    // Encrypted reasoning: nothing to show, but it must go back unchanged.
                    "redacted_thinking" => Block::Reasoning {
                        text: String::new(),
                        signature: Some(text("data")),
                        redacted: true,
                    },
                    "tool_use" => {
                        on_delta(StreamDelta::ToolCall);
                        Block::ToolCall {
                            id: text("id"),
                            name: text("name"),
                            arguments: String::new(),
                        }
                    }
                    _ => Block::Text { text: text("text") },
                };
                self.blocks.push((new, String::new()));
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                let index = count(&event["index"]) as usize;
                let Some((block, args)) = self.blocks.get_mut(index) else {
                    return Ok(None);
                };
                let piece = |k: &str| delta[k].as_str().unwrap_or("").to_owned();
                match (delta["type"].as_str().unwrap_or(""), block) {
                    ("text_delta", Block::Text { text }) => {
                        let p = piece("text");
                        on_delta(StreamDelta::Text(p.clone()));
                        text.push_str(&p);
                    }
                    ("thinking_delta", Block::Reasoning { text, .. }) => {
                        let p = piece("thinking");
                        on_delta(StreamDelta::Reasoning(p.clone()));
                        text.push_str(&p);
                    }
                    ("signature_delta", Block::Reasoning { signature, .. }) => {
                        signature
                            .get_or_insert_with(String::new)
                            .push_str(&piece("signature"));
                    }
                    ("input_json_delta", Block::ToolCall { .. }) => {
                        on_delta(StreamDelta::ToolCall);
                        args.push_str(&piece("partial_json"));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(stop) = event["delta"]["stop_reason"].as_str() {
                    self.stop = Some(stop.to_owned());
                }
                if let Some(output) = event["usage"]["output_tokens"].as_u64() {
                    self.reported = true;
                    self.output = output;
                }
            }
            "message_stop" => return self.finish().map(Some),
            "error" => {
                let kind = event["error"]["type"].as_str().unwrap_or("");
                let message = event["error"]["message"].as_str().unwrap_or("(no message)");
                let code = match kind {
                    "overloaded_error" | "api_error" => FailureCode::Server,
                    "rate_limit_error" => FailureCode::RateLimit,
                    _ => FailureCode::Provider(kind.to_uppercase()),
                };
                return Err(Failure::new(
                    code,
                    format!(
                        "the provider failed while answering: {message}; {}",
                        crate::http::SERVER_FAULT
                    ),
                ));
            }
            _ => {}
        }
        Ok(None)
    }

    fn finish(&mut self) -> Result<Completion, Failure> {
        let content: Vec<Block> = std::mem::take(&mut self.blocks)
            .into_iter()
            .map(|(block, args)| match block {
                Block::ToolCall { id, name, .. } => Block::ToolCall {
                    id,
                    name,
                    arguments: if args.is_empty() {
                        "{}".to_owned()
                    } else {
                        args
                    },
                },
                other => other,
            })
            .filter(|b| !matches!(b, Block::Text { text } if text.is_empty()))
            .collect();
        let has_calls = content.iter().any(|b| matches!(b, Block::ToolCall { .. }));
        let finish = match self.stop.as_deref() {
            Some("tool_use") => FinishReason::ToolCalls,
            Some("max_tokens") => FinishReason::MaxTokens,
            Some("end_turn") | Some("stop_sequence") | None if has_calls => FinishReason::ToolCalls,
            Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
            Some(other) => {
                return Err(Failure::new(
                    FailureCode::Provider(other.to_uppercase()),
                    format!("the model stopped for a reason dsh does not handle: {other}"),
                ));
            }
        };
        if content.is_empty() {
            return Err(Failure::new(
                FailureCode::EmptyResponse,
                "the model answered with nothing: no text, no thinking, no tool call".to_owned(),
            ));
        }
        Ok(Completion {
            message: Message {
                role: Role::Assistant,
                content,
            },
            finish,
            usage: self.usage(),
            retried: Usage::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attached_image_is_an_image_block_after_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let image = crate::stored_image(dir.path());
        let messages = vec![Message::user_with_images("what is this?", vec![image])];
        let request = crate::bare_request(&messages);
        let body: Value = serde_json::from_slice(&request_body(&request, false)).unwrap();
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                    "data": "cG5nLWJ5dGVz"}, "cache_control": {"type": "ephemeral"}},
            ])
        );
    }

    #[test]
    fn results_join_one_user_message_and_thinking_keeps_its_signature() {
        let messages = vec![
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Reasoning {
                        text: "think".into(),
                        signature: Some("sig".into()),
                        redacted: false,
                    },
                    Block::Reasoning {
                        text: String::new(),
                        signature: Some("opaque".into()),
                        redacted: true,
                    },
                    Block::ToolCall {
                        id: "a".into(),
                        name: "read".into(),
                        arguments: r#"{"file_path":"x"}"#.into(),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "read".into(),
                        arguments: "not json".into(),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "a".into(),
                    content: vec![ToolOutputPart::Text { text: "one".into() }],
                    is_error: false,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "b".into(),
                    content: vec![ToolOutputPart::Text {
                        text: "Error: bad".into(),
                    }],
                    is_error: true,
                }],
            },
        ];
        let request = ModelRequest {
            model: "m",
            system: "sys",
            messages: &messages,
            tools: &[],
            effort: Effort::High,
            max_output_tokens: None,
        };
        let body: Value = serde_json::from_slice(&request_body(&request, true)).unwrap();
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["thinking"]["budget_tokens"], 8192);
        assert!(body["max_tokens"].as_u64().unwrap() > 8192);
        let wire = body["messages"].as_array().unwrap();
        assert_eq!(wire.len(), 3, "{wire:#?}");
        assert_eq!(
            wire[1]["content"][0],
            json!({"type": "thinking", "thinking": "think", "signature": "sig"})
        );
        assert_eq!(
            wire[1]["content"][1],
            json!({"type": "redacted_thinking", "data": "opaque"})
        );
        assert_eq!(wire[1]["content"][3]["input"], json!({}));
        assert_eq!(wire[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(wire[2]["content"][1]["is_error"], true);
    }
}
