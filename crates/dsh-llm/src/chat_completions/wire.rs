//! The OpenAI chat-completions wire format, as DeepSeek (and most compatible servers) speak it:
//! the request body, and the assembly of a streamed (or whole) answer into a [`Completion`].

use std::collections::BTreeMap;

use base64::Engine as _;
use dsh_protocol::{
    Block, Failure, FailureCode, FinishReason, ImageRef, Message, Role, ToolOutputPart, Usage,
};
use serde::{Deserialize, Serialize};

use crate::{Completion, DeltaSink, ModelRequest, StreamDelta};

/// What a tool result with no text is sent as, so the model never sees an empty message.
const EMPTY_TOOL_RESULT: &str = "(no output)";

/// Dialect switches of the request body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyOptions<'a> {
    /// DeepSeek's `thinking: {type}` switch; `None` sends nothing.
    pub thinking: Option<bool>,
    /// The `reasoning_effort` value, if any.
    pub reasoning_effort: Option<&'static str>,
    /// Send `reasoning_content` back with assistant messages that called tools (DeepSeek
    /// requires it for those and ignores it elsewhere).
    pub echo_reasoning: bool,
    /// Send the system prompt with the `developer` role.
    pub developer_role: bool,
    /// OpenAI's `prompt_cache_key`, where the server takes one.
    pub prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    /// OpenAI's reasoning models refuse `max_tokens` and take this instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    Developer {
        content: &'a str,
    },
    User {
        content: String,
    },
    /// A user message of several parts: how images reach the model.
    #[serde(rename = "user")]
    UserParts {
        content: Vec<WirePart>,
    },
    Assistant {
        content: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: String,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart {
    Text { text: String },
    ImageUrl { image_url: WireImageUrl },
}

#[derive(Serialize)]
struct WireImageUrl {
    url: String,
}

/// Heads the user message that carries the images of tool results (the chat-completions wire
/// has no image in a tool message); the reference's text.
const TOOL_RESULT_IMAGES: &str = "Attached image(s) from tool result:";

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

/// Serialises the request body.
pub(crate) fn request_body(request: &ModelRequest<'_>, options: BodyOptions<'_>) -> Vec<u8> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(if options.developer_role {
            WireMessage::Developer {
                content: request.system,
            }
        } else {
            WireMessage::System {
                content: request.system,
            }
        });
    }
    // Images from tool results follow the whole run of tool messages they came with: a user
    // message between two tool messages would leave the second call unanswered.
    let mut pending_images: Vec<WireMessage<'_>> = Vec::new();
    for message in request.messages {
        let is_result = message
            .content
            .iter()
            .any(|b| matches!(b, Block::ToolResult { .. }));
        if !is_result {
            messages.append(&mut pending_images);
        }
        let start = messages.len();
        push_message(&mut messages, message, options);
        if is_result {
            let mut i = start;
            while i < messages.len() {
                if matches!(messages[i], WireMessage::UserParts { .. }) {
                    pending_images.push(messages.remove(i));
                } else {
                    i += 1;
                }
            }
        }
    }
    messages.append(&mut pending_images);
    let body = ChatRequest {
        model: request.model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        thinking: options.thinking.map(|on| Thinking {
            kind: if on { "enabled" } else { "disabled" },
        }),
        reasoning_effort: options.reasoning_effort,
        tools: request
            .tools
            .iter()
            .map(|tool| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        // The developer role marks OpenAI's reasoning models, which refuse `max_tokens`.
        max_tokens: request
            .max_output_tokens
            .filter(|_| !options.developer_role),
        max_completion_tokens: request.max_output_tokens.filter(|_| options.developer_role),
        prompt_cache_key: options.prompt_cache_key,
    };
    // Serialising plain structs of strings and JSON values cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// An image's stored copy could not be read. Its text is the line the model gets in the
/// image's place (every dialect says it the same way).
#[derive(Debug, thiserror::Error)]
#[error(
    "[image {attachment_id} omitted: its stored copy {} could not be read ({source}); read the \
     image file again if it is still needed]",
    path.display()
)]
pub(crate) struct ImageUnreadable {
    attachment_id: String,
    path: std::path::PathBuf,
    source: std::io::Error,
}

/// A stored image's bytes in base64.
pub(crate) fn image_base64(image: &ImageRef) -> Result<String, ImageUnreadable> {
    std::fs::read(&image.path)
        .map(|data| base64::engine::general_purpose::STANDARD.encode(data))
        .map_err(|source| ImageUnreadable {
            attachment_id: image.attachment_id.clone(),
            path: image.path.clone(),
            source,
        })
}

/// The line a tool result gets for an image it carries, and the image itself as a data URL
/// (none, with the reason in the line, when its stored copy cannot be read).
fn image_part(image: &ImageRef) -> (String, Option<WirePart>) {
    match image_base64(image) {
        Ok(data) => (
            format!(
                "Image {}; request image {}x{}px.",
                image.attachment_id, image.width, image.height
            ),
            Some(WirePart::ImageUrl {
                image_url: WireImageUrl {
                    url: format!("data:{};base64,{data}", image.media_type),
                },
            }),
        ),
        Err(unreadable) => (unreadable.to_string(), None),
    }
}

fn push_message<'a>(
    out: &mut Vec<WireMessage<'a>>,
    message: &'a Message,
    options: BodyOptions<'_>,
) {
    match message.role {
        Role::User => {
            let mut text = String::new();
            let mut images = Vec::new();
            // Images the user attached go in their own message, after its text.
            let mut attached = Vec::new();
            for block in &message.content {
                match block {
                    Block::ToolResult {
                        tool_call_id,
                        content,
                        ..
                    } => {
                        let mut result = String::new();
                        for part in content {
                            match part {
                                ToolOutputPart::Text { text } => result.push_str(text),
                                ToolOutputPart::Image { image } => {
                                    let (handle, part) = image_part(image);
                                    if !result.is_empty() {
                                        result.push('\n');
                                    }
                                    result.push_str(&handle);
                                    images.extend(part);
                                }
                            }
                        }
                        if result.is_empty() {
                            result.push_str(EMPTY_TOOL_RESULT);
                        }
                        out.push(WireMessage::Tool {
                            tool_call_id,
                            content: result,
                        });
                    }
                    Block::Text { text: t } => text.push_str(t),
                    Block::Image { image } => match image_base64(image) {
                        Ok(data) => attached.push(WirePart::ImageUrl {
                            image_url: WireImageUrl {
                                url: format!("data:{};base64,{data}", image.media_type),
                            },
                        }),
                        Err(unreadable) => {
                            text.push('\n');
                            text.push_str(&unreadable.to_string());
                        }
                    },
                    Block::Reasoning { .. } | Block::ToolCall { .. } => {}
                }
            }
            if !images.is_empty() {
                let mut content = vec![WirePart::Text {
                    text: TOOL_RESULT_IMAGES.to_owned(),
                }];
                content.extend(images);
                out.push(WireMessage::UserParts { content });
            }
            if !attached.is_empty() {
                let mut content = Vec::new();
                if !text.is_empty() {
                    content.push(WirePart::Text { text });
                }
                content.extend(attached);
                out.push(WireMessage::UserParts { content });
            } else if !text.is_empty() {
                out.push(WireMessage::User { content: text });
            }
        }
        Role::Assistant => {
            let mut content = String::new();
            let mut reasoning = String::new();
            let mut tool_calls = Vec::new();
            for block in &message.content {
                match block {
                    Block::Text { text } => content.push_str(text),
                    Block::Reasoning { text, .. } => reasoning.push_str(text),
                    Block::ToolCall {
                        id,
                        name,
                        arguments,
                    } => tool_calls.push(WireToolCall {
                        id,
                        kind: "function",
                        function: WireFunctionCall { name, arguments },
                    }),
                    Block::ToolResult { .. } | Block::Image { .. } => {}
                }
            }
            let echo = options.echo_reasoning && !tool_calls.is_empty() && !reasoning.is_empty();
            out.push(WireMessage::Assistant {
                content,
                reasoning_content: echo.then_some(reasoning),
                tool_calls,
            });
        }
    }
}

// ---- answers -------------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct ChatChunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Some servers report a failure inside the stream instead of with a status.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default, alias = "message")]
    delta: Option<ChunkDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    /// What the request wrote to the cache, where the model bills that apart (OpenAI's
    /// GPT-5.6 and later); part of `prompt_tokens`, like the cached part.
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Normalises into disjoint buckets. The cache count comes from the OpenAI-style nested
    /// `cached_tokens` or, failing that, DeepSeek's `prompt_cache_hit_tokens`; either way it is
    /// part of `prompt_tokens`, as is a cache write, so the uncached input is what is left.
    fn normalise(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0)
            .min(self.prompt_tokens);
        let written = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cache_write_tokens)
            .unwrap_or(0)
            .min(self.prompt_tokens - cached);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        Usage::new(
            self.prompt_tokens - cached - written,
            self.completion_tokens,
            cached,
            written,
            reasoning,
        )
    }
}

enum PendingBlock {
    Reasoning(String),
    Text(String),
    ToolCall {
        id: Option<String>,
        name: String,
        arguments: String,
    },
}

/// Collects chunks into one answer. Blocks keep the order in which they opened; the pieces of a
/// tool call are joined by their `index`.
#[derive(Default)]
pub(crate) struct ChatAssembler {
    blocks: Vec<PendingBlock>,
    reasoning_at: Option<usize>,
    text_at: Option<usize>,
    tool_at: BTreeMap<usize, usize>,
    finish: Option<String>,
    usage: Option<Usage>,
}

impl ChatAssembler {
    /// Applies one parsed chunk (or a whole non-streamed answer).
    pub fn apply(&mut self, chunk: ChatChunk, on_delta: &mut DeltaSink<'_>) {
        if let Some(usage) = &chunk.usage {
            self.usage = Some(usage.normalise());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, on_delta);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason);
            }
        }
    }

    fn apply_delta(&mut self, delta: ChunkDelta, on_delta: &mut DeltaSink<'_>) {
        if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
            let at = *self.reasoning_at.get_or_insert_with(|| {
                self.blocks.push(PendingBlock::Reasoning(String::new()));
                self.blocks.len() - 1
            });
            if let PendingBlock::Reasoning(buf) = &mut self.blocks[at] {
                buf.push_str(&text);
            }
            on_delta(StreamDelta::Reasoning(text));
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            let at = *self.text_at.get_or_insert_with(|| {
                self.blocks.push(PendingBlock::Text(String::new()));
                self.blocks.len() - 1
            });
            if let PendingBlock::Text(buf) = &mut self.blocks[at] {
                buf.push_str(&text);
            }
            on_delta(StreamDelta::Text(text));
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = call.index.unwrap_or(position);
            let at = *self.tool_at.entry(index).or_insert_with(|| {
                self.blocks.push(PendingBlock::ToolCall {
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                });
                self.blocks.len() - 1
            });
            if let PendingBlock::ToolCall {
                id,
                name,
                arguments,
            } = &mut self.blocks[at]
            {
                if let Some(new_id) = call.id.filter(|i| !i.is_empty()) {
                    *id = Some(new_id);
                }
                if let Some(function) = call.function {
                    if let Some(n) = function.name {
                        name.push_str(&n);
                    }
                    if let Some(a) = function.arguments {
                        arguments.push_str(&a);
                    }
                }
            }
            on_delta(StreamDelta::ToolCall);
        }
    }

    /// The usage reported so far, or one unreported call.
    pub fn usage_so_far(&self) -> Usage {
        self.usage.unwrap_or_else(Usage::unreported)
    }

    /// Finishes a complete answer.
    pub fn finish(self) -> Result<Completion, Failure> {
        let usage = self.usage_so_far();
        let has_tool_calls = !self.tool_at.is_empty();
        let finish = match self.finish.as_deref() {
            Some("stop") | Some("end_turn") => FinishReason::Stop,
            Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::MaxTokens,
            None if has_tool_calls => FinishReason::ToolCalls,
            None => FinishReason::Stop,
            Some(other) => {
                return Err(Failure::new(
                    FailureCode::Provider(other.to_uppercase()),
                    format!("the model stopped with finish reason \"{other}\""),
                ));
            }
        };
        if self.blocks.is_empty() && finish == FinishReason::Stop {
            return Err(Failure::new(
                FailureCode::EmptyResponse,
                "the model answered with nothing: no text, reasoning or tool call",
            ));
        }
        let content = self
            .blocks
            .into_iter()
            .enumerate()
            .map(|(n, block)| match block {
                PendingBlock::Reasoning(text) => Block::Reasoning {
                    text,
                    signature: None,
                    redacted: false,
                },
                PendingBlock::Text(text) => Block::Text { text },
                PendingBlock::ToolCall {
                    id,
                    name,
                    arguments,
                } => Block::ToolCall {
                    // A server that sends no id still needs one to pair the result with.
                    id: id.unwrap_or_else(|| format!("call-{n}")),
                    name,
                    arguments,
                },
            })
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::{ToolOutputPart, ToolSpec};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    /// A body with no dialect switch on.
    const PLAIN: BodyOptions<'static> = BodyOptions {
        thinking: None,
        reasoning_effort: None,
        echo_reasoning: false,
        developer_role: false,
        prompt_cache_key: None,
    };

    #[test]
    fn images_wait_until_the_run_of_tool_messages_ends() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("a.png");
        std::fs::write(&png, b"png").unwrap();
        let result = |id: &str, image: bool| Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_call_id: id.into(),
                content: if image {
                    vec![ToolOutputPart::Image {
                        image: dsh_protocol::ImageRef {
                            attachment_id: "att".into(),
                            path: png.clone(),
                            media_type: "image/png".into(),
                            bytes: 3,
                            width: 1,
                            height: 1,
                        },
                    }]
                } else {
                    vec![ToolOutputPart::Text { text: "ok".into() }]
                },
                is_error: false,
            }],
        };
        let messages = vec![
            Message::user_text("go"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::ToolCall {
                        id: "a".into(),
                        name: "read_image".into(),
                        arguments: "{}".into(),
                    },
                    Block::ToolCall {
                        id: "b".into(),
                        name: "read".into(),
                        arguments: "{}".into(),
                    },
                ],
            },
            result("a", true),
            result("b", false),
        ];
        let request = crate::bare_request(&messages);
        let body: Value = serde_json::from_slice(&request_body(&request, PLAIN)).unwrap();
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, vec!["user", "assistant", "tool", "tool", "user"]);
    }

    #[test]
    fn an_attached_image_goes_with_the_users_text() {
        let dir = tempfile::tempdir().unwrap();
        let messages = vec![Message::user_with_images(
            "what is this?",
            vec![crate::stored_image(dir.path())],
        )];
        let request = crate::bare_request(&messages);
        let body: Value = serde_json::from_slice(&request_body(&request, PLAIN)).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5nLWJ5dGVz"}},
            ]}])
        );
    }

    fn chunk(value: Value) -> ChatChunk {
        serde_json::from_value(value).unwrap()
    }

    fn assemble(chunks: Vec<Value>) -> (Result<Completion, Failure>, Vec<StreamDelta>) {
        let mut deltas = Vec::new();
        let mut sink = |d: StreamDelta| deltas.push(d);
        let mut sink: DeltaSink<'_> = &mut sink;
        let mut assembler = ChatAssembler::default();
        for c in chunks {
            assembler.apply(chunk(c), &mut sink);
        }
        (assembler.finish(), deltas)
    }

    #[test]
    fn assembles_reasoning_text_and_tool_calls_split_by_index() {
        let (done, deltas) = assemble(vec![
            json!({"choices":[{"delta":{"role":"assistant","content":""}}]}),
            json!({"choices":[{"delta":{"reasoning_content":"think "}}]}),
            json!({"choices":[{"delta":{"reasoning_content":"hard"}}]}),
            json!({"choices":[{"delta":{"content":"ok"}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{\"file"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"read","arguments":"{}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"_path\":\"a\"}"}}]}}]}),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,
                "prompt_cache_hit_tokens":60,"prompt_cache_miss_tokens":40,
                "completion_tokens_details":{"reasoning_tokens":5}}}),
        ]);
        let done = done.unwrap();
        assert_eq!(done.finish, FinishReason::ToolCalls);
        assert_eq!(
            done.message.content,
            vec![
                Block::Reasoning {
                    text: "think hard".into(),
                    signature: None,
                    redacted: false,
                },
                Block::Text { text: "ok".into() },
                Block::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{\"file_path\":\"a\"}".into()
                },
                Block::ToolCall {
                    id: "c2".into(),
                    name: "read".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(done.usage, Usage::new(40, 20, 60, 0, 5));
        assert_eq!(deltas[0], StreamDelta::Reasoning("think ".into()));
        assert_eq!(deltas.len(), 6);
    }

    #[test]
    fn prefers_the_nested_cached_tokens_count() {
        let (done, _) = assemble(vec![
            json!({"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":1,
                "prompt_tokens_details":{"cached_tokens":0},"prompt_cache_hit_tokens":7}}),
        ]);
        assert_eq!(done.unwrap().usage, Usage::new(10, 1, 0, 0, 0));
        let (done, _) = assemble(vec![
            json!({"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":1,
                "prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300}}}),
        ]);
        assert_eq!(done.unwrap().usage, Usage::new(100, 1, 600, 300, 0));
    }

    #[test]
    fn a_prompt_cache_key_is_sent_only_when_given() {
        let messages = vec![Message::user_text("task")];
        let request = crate::bare_request(&messages);
        let body: Value = serde_json::from_slice(&request_body(&request, PLAIN)).unwrap();
        assert!(body.get("prompt_cache_key").is_none(), "{body}");
        let keyed = BodyOptions {
            prompt_cache_key: Some("dsh-1"),
            ..PLAIN
        };
        let body: Value = serde_json::from_slice(&request_body(&request, keyed)).unwrap();
        assert_eq!(body["prompt_cache_key"], "dsh-1");
    }

    #[test]
    fn an_answer_without_usage_counts_as_unreported() {
        let (done, _) = assemble(vec![
            json!({"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(done.unwrap().usage.unreported_calls, 1);
    }

    #[test]
    fn empty_and_filtered_answers_fail() {
        let (empty, _) = assemble(vec![
            json!({"choices":[{"delta":{},"finish_reason":"stop"}]}),
        ]);
        assert_eq!(empty.unwrap_err().code, FailureCode::EmptyResponse);
        let (filtered, _) = assemble(vec![
            json!({"choices":[{"delta":{"content":"x"},"finish_reason":"content_filter"}]}),
        ]);
        assert_eq!(
            filtered.unwrap_err().code,
            FailureCode::Provider("CONTENT_FILTER".into())
        );
        let (cut, _) = assemble(vec![
            json!({"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}),
        ]);
        assert_eq!(cut.unwrap().finish, FinishReason::MaxTokens);
    }

    #[test]
    fn request_body_echoes_reasoning_only_for_tool_calling_turns() {
        let messages = vec![
            Message::user_text("task"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Reasoning {
                        text: "plan".into(),
                        signature: None,
                        redacted: false,
                    },
                    Block::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: "{}".into(),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_call_id: "c1".into(),
                    content: vec![ToolOutputPart::Text {
                        text: String::new(),
                    }],
                    is_error: false,
                }],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Reasoning {
                        text: "done".into(),
                        signature: None,
                        redacted: false,
                    },
                    Block::Text {
                        text: "answer".into(),
                    },
                ],
            },
        ];
        let tools = vec![ToolSpec {
            name: "read".into(),
            description: "Reads.".into(),
            parameters: json!({"type":"object"}),
        }];
        let request = ModelRequest {
            model: "m",
            system: "sys",
            messages: &messages,
            tools: &tools,
            effort: crate::Effort::High,
            max_output_tokens: Some(100),
        };
        let body = request_body(
            &request,
            BodyOptions {
                thinking: Some(true),
                reasoning_effort: Some("high"),
                echo_reasoning: true,
                developer_role: false,
                prompt_cache_key: None,
            },
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role":"system","content":"sys"},
                    {"role":"user","content":"task"},
                    {"role":"assistant","content":"","reasoning_content":"plan",
                     "tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{}"}}]},
                    {"role":"tool","tool_call_id":"c1","content":"(no output)"},
                    {"role":"assistant","content":"answer"}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "thinking": {"type":"enabled"},
                "reasoning_effort": "high",
                "tools": [{"type":"function","function":{"name":"read","description":"Reads.","parameters":{"type":"object"}}}],
                "max_tokens": 100
            })
        );
    }
}
