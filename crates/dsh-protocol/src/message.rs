use serde::{Deserialize, Serialize};

/// Who a message comes from, as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// One message of the conversation. Tool results travel as user messages holding
/// [`Block::ToolResult`] blocks, the shape the session log stores; each provider dialect maps
/// them onto its own wire form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }

    /// A user message: its text, then the images attached to it.
    pub fn user_with_images(text: impl Into<String>, images: Vec<ImageRef>) -> Self {
        let mut message = Message::user_text(text);
        (message.content).extend(images.into_iter().map(|image| Block::Image { image }));
        message
    }

    /// The concatenated text blocks (no separator), as the final answer is read.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls of an assistant message, in the order the model made them.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
    }
}

/// A content block. The tags are the reference's durable block names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Block {
    Text {
        text: String,
    },
    /// Model reasoning ("thinking"). `signature` is the provider's opaque token that some
    /// dialects require to be echoed back unchanged.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Reasoning the provider sent encrypted (Anthropic's `redacted_thinking`): no text,
        /// and `signature` holds the opaque data to send back unchanged.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
    /// A tool call as the model sent it: `arguments` is the raw argument text, never re-encoded,
    /// so that what is sent back is byte-identical to what the model produced.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        content: Vec<ToolOutputPart>,
        #[serde(rename = "isError")]
        is_error: bool,
    },
    /// An image the user attached to their message (the web app's composer), for a model that
    /// takes images; the bytes stay in the attachment store, the log keeps the reference.
    Image {
        #[serde(flatten)]
        image: ImageRef,
    },
}

/// One part of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToolOutputPart {
    Text {
        text: String,
    },
    /// An image the model is shown; the bytes stay in the attachment store, the log keeps the
    /// reference.
    Image {
        #[serde(flatten)]
        image: ImageRef,
    },
}

impl ToolOutputPart {
    /// The text of a text part; an image has none.
    pub fn text(&self) -> &str {
        match self {
            ToolOutputPart::Text { text } => text,
            ToolOutputPart::Image { .. } => "",
        }
    }
}

/// A stored image: content-addressed, normalised to what a model accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageRef {
    /// `sha256:<64 hex>` of the stored bytes.
    pub attachment_id: String,
    /// Where the bytes are: an absolute path in the attachment store.
    pub path: std::path::PathBuf,
    /// `image/png`, `image/jpeg`, `image/webp` or `image/gif`.
    pub media_type: String,
    pub bytes: u64,
    pub width: u32,
    pub height: u32,
}

impl ImageRef {
    /// The image in a transcript that shows text only: `[image image/png 640x480]`.
    pub fn summary(&self) -> String {
        format!("[image {} {}x{}]", self.media_type, self.width, self.height)
    }
}

/// A tool as offered to the model: its name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}
