//! A `session/prompt`'s content blocks as the one message dsh's agent takes.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

/// The message the blocks make: text as it is, a file link as the path the model can read
/// (`@src/main.rs` in the editor), an embedded file with its contents. Images and audio are
/// refused with what to do instead (the agent advertises text and embedded context only).
pub fn message_of(blocks: &[ContentBlock]) -> Result<String, PromptRefused> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(path_of(&link.uri)),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(file) => {
                    let mut text = file.text.clone();
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    parts.push(format!(
                        "\n<attached path=\"{}\">\n{text}</attached>\n",
                        path_of(&file.uri)
                    ));
                }
                _ => return Err(PromptRefused::BinaryFile),
            },
            ContentBlock::Image(_) | ContentBlock::Audio(_) => return Err(PromptRefused::Media),
            _ => return Err(PromptRefused::UnknownBlock),
        }
    }
    let message = parts.join(" ");
    if message.trim().is_empty() {
        return Err(PromptRefused::Empty);
    }
    Ok(message)
}

/// A prompt dsh does not run, and what to send instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PromptRefused {
    #[error(
        "an attached file is binary: dsh takes text files; give its path instead and the agent \
         reads it with its own tools"
    )]
    BinaryFile,
    #[error(
        "dsh takes text prompts: give an image's path instead and the agent reads it with \
         read_image"
    )]
    Media,
    #[error("a prompt block of a kind dsh does not know")]
    UnknownBlock,
    #[error("the prompt is empty: send the message as a text block")]
    Empty,
}

/// `file:///w/my%20file.rs` is `/w/my file.rs`, and a line range in the fragment (`#L10:20`,
/// as editors link a selection) is said after it: `/w/a.rs (lines 10-20)`. Any other address
/// stays as it is.
fn path_of(uri: &str) -> String {
    let Ok(url) = url::Url::parse(uri) else {
        return uri.to_owned();
    };
    let Ok(path) = url.to_file_path() else {
        return uri.to_owned();
    };
    let path = path.display().to_string();
    let lines = url
        .fragment()
        .and_then(|f| f.strip_prefix('L'))
        .map(|range| {
            let mut ends = range.split(':').filter_map(|n| n.parse::<u32>().ok());
            (ends.next(), ends.next())
        });
    match lines {
        Some((Some(first), Some(last))) if last != first => {
            format!("{path} (lines {first}-{last})")
        }
        Some((Some(line), _)) => format!("{path} (line {line})"),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn text_links_and_attached_files_make_one_message() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("Explain")),
            ContentBlock::ResourceLink(ResourceLink::new("a.rs", "file:///w/a.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/b.rs",
                )),
            )),
        ];
        assert_eq!(
            message_of(&blocks).unwrap_or_default(),
            "Explain /w/a.rs \n<attached path=\"/w/b.rs\">\nfn main() {}\n</attached>\n"
        );
    }

    #[test]
    fn file_addresses_are_decoded_and_their_lines_said() {
        assert_eq!(path_of("file:///w/my%20file.rs"), "/w/my file.rs");
        assert_eq!(path_of("file:///w/a.rs#L10:20"), "/w/a.rs (lines 10-20)");
        assert_eq!(path_of("file:///w/a.rs#L7"), "/w/a.rs (line 7)");
        assert_eq!(path_of("https://example.com/x"), "https://example.com/x");
        assert_eq!(path_of("not an address"), "not an address");
    }

    #[test]
    fn an_image_is_refused_with_what_to_do() {
        let blocks = vec![ContentBlock::Image(ImageContent::new("AAAA", "image/png"))];
        let error = message_of(&blocks).unwrap_err();
        assert_eq!(error, PromptRefused::Media);
        assert!(error.to_string().contains("read_image"), "{error}");
    }

    #[test]
    fn an_empty_prompt_is_refused() {
        let blocks = vec![ContentBlock::Text(TextContent::new("  "))];
        assert_eq!(message_of(&blocks), Err(PromptRefused::Empty));
    }
}
