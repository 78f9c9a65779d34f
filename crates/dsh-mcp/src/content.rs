//! What the model reads of a tool's result: MCP content blocks turned into text and images.
//!
//! The server is outside dsh's trust: every block is read from JSON, and a block with missing
//! or odd fields becomes a note in the text rather than a failure.

use base64::Engine as _;
use dsh_protocol::ToolOutputPart;
use dsh_tools::{AttachmentStore, ImageError};
use serde_json::Value;

/// The image types the attachment store keeps.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// Whether images of a result may be shown, and where they are kept.
pub(crate) enum ImageAdmission {
    Allowed(AttachmentStore),
    /// Why not, as the model is told.
    Refused(String),
}

/// The parts of a result: runs of text blocks joined by newlines, images where they were
/// (when admitted), notes for what cannot be shown. `raw` names the tool in the note for a
/// result with nothing to show; `structured` is shown as JSON when no block carries text.
pub(crate) fn project(
    content: &[Value],
    structured: Option<&Value>,
    raw: &str,
    images: &ImageAdmission,
) -> Vec<ToolOutputPart> {
    let mut image_for = admit_images(content, images);
    let mut parts = Vec::new();
    let mut text: Vec<String> = Vec::new();
    let flush = |text: &mut Vec<String>, parts: &mut Vec<ToolOutputPart>| {
        if !text.is_empty() {
            parts.push(ToolOutputPart::Text {
                text: text.join("\n"),
            });
            text.clear();
        }
    };
    for (index, block) in content.iter().enumerate() {
        let Some(fields) = block.as_object() else {
            text.push("[unsupported MCP content block: expected an object]".into());
            continue;
        };
        let field = |name: &str| fields.get(name).and_then(Value::as_str);
        match field("type").unwrap_or("") {
            "text" => {
                if let Some(t) = field("text") {
                    text.push(t.to_owned());
                }
            }
            "image" => match image_for.remove(&index) {
                Some(Ok(part)) => {
                    flush(&mut text, &mut parts);
                    parts.push(part);
                }
                Some(Err(note)) => text.push(note),
                None => {}
            },
            "resource_link" => match (field("name"), field("uri")) {
                (Some(name), Some(uri)) => text.push(format!("Resource link: {name} ({uri})")),
                _ => text.push(
                    "[resource link unavailable: the MCP block is missing its name or URI]".into(),
                ),
            },
            "audio" => text.push(format!(
                "[audio result unsupported: {}]",
                field("mimeType").unwrap_or("unknown media type")
            )),
            "resource" => text.push(embedded_resource(fields.get("resource"))),
            other => text.push(format!("[unsupported MCP content type: {other}]")),
        }
    }
    if parts.is_empty()
        && text.is_empty()
        && let Some(value) = structured
    {
        text.push(value.to_string());
    }
    flush(&mut text, &mut parts);
    if parts.is_empty() {
        parts.push(ToolOutputPart::Text {
            text: format!("({raw} returned no model-visible content)"),
        });
    }
    parts
}

/// An embedded resource: its text when it has some, else a note naming it.
fn embedded_resource(resource: Option<&Value>) -> String {
    let uri = resource
        .and_then(|r| r.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or("unnamed resource");
    match resource.and_then(|r| r.get("text")).and_then(Value::as_str) {
        Some(text) => format!("Resource {uri}:\n{text}"),
        None => format!("[embedded resource {uri}: binary content is not shown]"),
    }
}

/// Each image block's part, or the note that replaces it. One bad image makes every image of
/// the result a note, so the model never sees half a set without knowing.
fn admit_images(
    content: &[Value],
    images: &ImageAdmission,
) -> std::collections::HashMap<usize, Result<ToolOutputPart, String>> {
    let blocks: Vec<(usize, &serde_json::Map<String, Value>)> = content
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.as_object().map(|o| (i, o)))
        .filter(|(_, o)| o.get("type").and_then(Value::as_str) == Some("image"))
        .collect();
    let media = |o: &serde_json::Map<String, Value>| {
        o.get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("unknown media type")
            .to_owned()
    };
    let note = |o: &serde_json::Map<String, Value>, reason: &str| {
        format!("[image unavailable: {}; {reason}]", media(o))
    };
    let decoded: Vec<Result<Vec<u8>, &str>> = blocks.iter().map(|(_, o)| decode(o)).collect();
    if decoded.iter().any(Result::is_err) {
        return blocks
            .iter()
            .zip(&decoded)
            .map(|((i, o), d)| {
                let reason = match d {
                    Err(reason) => reason,
                    Ok(_) => "another image in the same result was invalid",
                };
                (*i, Err(note(o, reason)))
            })
            .collect();
    }
    let store = match images {
        ImageAdmission::Allowed(store) => store,
        ImageAdmission::Refused(reason) => {
            return blocks
                .iter()
                .map(|(i, o)| (*i, Err(note(o, reason))))
                .collect();
        }
    };
    let mut saved = Vec::new();
    for data in decoded.into_iter().flatten() {
        match store.save_image(&data) {
            Ok(stored) => saved.push(ToolOutputPart::Image {
                image: stored.image,
            }),
            Err(error) => {
                let reason = format!(
                    "image admission rejected the result: {}",
                    image_error(&error)
                );
                return blocks
                    .iter()
                    .map(|(i, o)| (*i, Err(note(o, &reason))))
                    .collect();
            }
        }
    }
    blocks
        .iter()
        .map(|(i, _)| *i)
        .zip(saved.into_iter().map(Ok))
        .collect()
}

/// The bytes of an image block, which must declare a kept type and carry canonical base64.
fn decode(block: &serde_json::Map<String, Value>) -> Result<Vec<u8>, &'static str> {
    let media = block.get("mimeType").and_then(Value::as_str);
    if !media.is_some_and(|m| IMAGE_TYPES.contains(&m)) {
        return Err("the declared media type is not PNG, JPEG, WebP, or GIF");
    }
    let not_base64 = "the image data is not canonical base64";
    let data = block
        .get("data")
        .and_then(Value::as_str)
        .ok_or(not_base64)?;
    // Checked before decoding: a server can send any amount.
    if data.len() as u64 / 4 * 3 > dsh_tools::MAX_IMAGE_SOURCE_BYTES {
        return Err("the image is larger than 20 MiB");
    }
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(data).map_err(|_| not_base64)?;
    if engine.encode(&bytes) != data {
        return Err(not_base64);
    }
    Ok(bytes)
}

fn image_error(error: &ImageError) -> String {
    match error {
        ImageError::Unreadable(detail) => format!("the image cannot be read: {detail}"),
        ImageError::SideTooLong => "a side of the image is too long".into(),
        ImageError::TooManyPixels => "the image has too many pixels".into(),
        ImageError::TooLarge => "the image cannot be made small enough".into(),
        ImageError::Store(detail) => format!("the image could not be stored: {detail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(parts: &[ToolOutputPart]) -> Vec<String> {
        parts.iter().map(|p| p.text().to_owned()).collect()
    }

    fn refused() -> ImageAdmission {
        ImageAdmission::Refused("model \"m\" does not declare image input".into())
    }

    #[test]
    fn text_blocks_are_joined_and_odd_blocks_noted() {
        let content = [
            json!({"type": "text", "text": "one"}),
            json!({"type": "resource_link", "name": "readme", "uri": "file:///r"}),
            json!({"type": "resource_link", "uri": "file:///r"}),
            json!({"type": "audio", "mimeType": "audio/wav", "data": "AA=="}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "blob": "AA=="}}),
            json!({"type": "video"}),
            json!(3),
        ];
        let parts = project(&content, None, "t", &refused());
        assert_eq!(
            texts(&parts),
            ["one\nResource link: readme (file:///r)\n\
              [resource link unavailable: the MCP block is missing its name or URI]\n\
              [audio result unsupported: audio/wav]\n\
              Resource file:///a:\nbody\n\
              [embedded resource file:///b: binary content is not shown]\n\
              [unsupported MCP content type: video]\n\
              [unsupported MCP content block: expected an object]"]
        );
    }

    #[test]
    fn empty_results_say_so_or_show_their_structured_content() {
        assert_eq!(
            texts(&project(&[], None, "echo", &refused())),
            ["(echo returned no model-visible content)"]
        );
        assert_eq!(
            texts(&project(&[], Some(&json!({"sum": 3})), "add", &refused())),
            ["{\"sum\":3}"]
        );
    }

    #[test]
    fn images_are_notes_unless_admitted_and_valid() {
        let png = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
        let parts = project(
            &[json!({"type": "text", "text": "a"}), png.clone()],
            None,
            "t",
            &refused(),
        );
        assert_eq!(
            texts(&parts),
            ["a\n[image unavailable: image/png; model \"m\" does not declare image input]"]
        );
        let bad = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo"});
        let tiff = json!({"type": "image", "mimeType": "image/tiff", "data": "AA=="});
        let parts = project(&[png, bad, tiff], None, "t", &refused());
        assert_eq!(
            texts(&parts),
            [
                "[image unavailable: image/png; another image in the same result was invalid]\n\
                 [image unavailable: image/png; the image data is not canonical base64]\n\
                 [image unavailable: image/tiff; the declared media type is not PNG, JPEG, WebP, or GIF]"
            ]
        );
    }

    #[test]
    fn admitted_images_are_stored_and_split_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let store = AttachmentStore::new(dir.path().to_path_buf());
        let mut png = Vec::new();
        let image = image_1x1();
        png.extend_from_slice(&image);
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let content = [
            json!({"type": "text", "text": "before"}),
            json!({"type": "image", "mimeType": "image/png", "data": data}),
            json!({"type": "text", "text": "after"}),
        ];
        let parts = project(&content, None, "t", &ImageAdmission::Allowed(store));
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].text(), "before");
        assert!(matches!(&parts[1], ToolOutputPart::Image { image } if image.width == 1));
        assert_eq!(parts[2].text(), "after");
    }

    /// A valid 1x1 PNG.
    fn image_1x1() -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(
                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
            )
            .unwrap()
    }
}
