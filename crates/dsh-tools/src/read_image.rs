//! The `read_image` tool: show the model an image file.
//!
//! The format is told by the file's bytes, so a path without an extension works (seed 000; the
//! recorded reference insists on an extension). A path whose extension names another kind of
//! file is refused before anything is read, as is any call while the session's model takes no
//! images. The image is normalised and stored by the [`AttachmentStore`]; the result is an
//! envelope describing the stored image and the image itself.

use std::io::Read as _;
use std::path::Path;

use dsh_protocol::ToolOutputPart;

use crate::attachments::{
    AttachmentStore, ImageError, MAX_PIXELS, MAX_SIDE, MAX_SOURCE_BYTES, StoredImage,
};
use crate::read::{read_error, stat_readable};
use crate::schema::{Param, ParamType, Parameters};
use crate::{
    Arguments, ObservationMap, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, Version,
    fs_code, resolve,
};

const IMAGE_EXTENSIONS: [&str; 5] = ["png", "jpg", "jpeg", "webp", "gif"];

/// The `read_image` tool.
pub struct ReadImage {
    parameters: Parameters,
}

impl Default for ReadImage {
    fn default() -> Self {
        ReadImage {
            parameters: Parameters::new(vec![Param::required(
                "file_path",
                ParamType::String,
                "Image file to show: absolute, or relative to the workspace.",
            )]),
        }
    }
}

impl Tool for ReadImage {
    fn name(&self) -> &str {
        "read_image"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Read, "Read")
            .file("file_path")
            .hook_names(&["Read"])
            .read_only()
    }

    fn description(&self) -> &str {
        "Look at a PNG, JPEG, WebP or GIF image. The format is read from the file's content, so \
         a path without an extension is fine. Large images are scaled down for you; there is no \
         need to make thumbnails or install image tools first. Only works when the current \
         model accepts images."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args.str("file_path").unwrap_or_default().to_owned();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("file_path must be a non-empty string"));
            }
            // Every gate runs before any file-system access, and names the path as given.
            if let Some(ext) = Path::new(&raw).extension() {
                let ext = ext.to_string_lossy().to_ascii_lowercase();
                if !IMAGE_EXTENSIONS.contains(&ext.as_str()) {
                    return Err(ToolError::plain(format!(
                        "cannot read \"{raw}\": read_image only accepts PNG/JPEG/WebP/GIF paths"
                    )));
                }
            }
            let Some(store) = ctx.session.attachments.clone() else {
                return Err(ToolError::plain(format!(
                    "cannot read \"{raw}\" as an image: no attachment service is mounted"
                )));
            };
            let model = &ctx.session.model;
            if !model.image_input {
                return Err(ToolError::plain(format!(
                    "cannot read \"{raw}\" as an image: model \"{}\" does not declare image \
                     input; switch to an image-capable model to read images",
                    model.name
                )));
            }
            let cwd = ctx.cwd.clone();
            let session = ctx.session.clone();
            crate::registry::blocking("read_image", move || {
                read_image(&cwd, &raw, &store, &session.observations)
            })
            .await
        })
    }
}

fn read_image(
    cwd: &Path,
    raw: &str,
    store: &AttachmentStore,
    observations: &ObservationMap,
) -> Result<ToolOutput, ToolError> {
    let target = resolve(cwd, raw)?;
    let shown = target.shown().to_string();
    let metadata = stat_readable(&target, &shown, observations)?;
    if metadata.len() > MAX_SOURCE_BYTES {
        return Err(ToolError::fs(
            fs_code::TOO_LARGE,
            format!(
                "cannot read \"{shown}\": {} bytes exceeds the {MAX_SOURCE_BYTES}-byte limit",
                metadata.len()
            ),
        ));
    }
    let mut data = Vec::new();
    std::fs::File::open(&target.key)
        .and_then(|file| file.take(MAX_SOURCE_BYTES + 1).read_to_end(&mut data))
        .map_err(|e| read_error(&shown, &e))?;
    if data.len() as u64 > MAX_SOURCE_BYTES {
        return Err(ToolError::fs(
            fs_code::TOO_LARGE,
            format!("cannot read \"{shown}\": content exceeds the {MAX_SOURCE_BYTES}-byte limit"),
        ));
    }
    let stored = store
        .save_image(&data)
        .map_err(|e| admission_error(&shown, e))?;
    observations.present(&target.key, Version::of(&metadata));
    Ok(ToolOutput::parts(vec![
        ToolOutputPart::Text {
            text: envelope(&shown, &stored),
        },
        ToolOutputPart::Image {
            image: stored.image,
        },
    ]))
}

fn admission_error(shown: &str, error: ImageError) -> ToolError {
    let why = match error {
        ImageError::Unreadable(detail) => detail,
        ImageError::SideTooLong => format!(
            "at least one image side exceeds the {MAX_SIDE}px limit; downscale the image and read \
             the smaller copy"
        ),
        ImageError::TooManyPixels => format!(
            "the image exceeds the {MAX_PIXELS}-pixel decoded-size limit; downscale the image and \
             read the smaller copy"
        ),
        ImageError::TooLarge => "the image cannot be stored within the deployment's byte limits; \
                                 downscale the image and read the smaller copy"
            .to_owned(),
        ImageError::Store(detail) => format!("the image could not be stored ({detail})"),
    };
    ToolError::plain(format!("cannot read \"{shown}\": {why}"))
}

/// The text part: what was stored, and how to map coordinates back after a downscale.
fn envelope(shown: &str, stored: &StoredImage) -> String {
    let image = &stored.image;
    let scaled = match stored.original {
        None => String::new(),
        Some((w, h)) => {
            let rx = format!("{:.2}", f64::from(w) / f64::from(image.width));
            let ry = format!("{:.2}", f64::from(h) / f64::from(image.height));
            let advice = if rx == ry {
                format!("multiply coordinates by {rx}")
            } else {
                format!("multiply x coordinates by {rx} and y coordinates by {ry}")
            };
            format!(
                " (downscaled from {w}x{h} px; {advice} to locate features in the original file)"
            )
        }
    };
    format!(
        "<path>{shown}</path>\n<type>image</type>\n<content>\n{} image, {}x{} px, {} bytes{scaled}\n</content>",
        image.media_type, image.width, image.height, image.bytes
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{ModelCaps, SpillStore, ToolRegistry, ToolSession};

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut out = Vec::new();
        image::DynamicImage::ImageRgb8(image::RgbImage::new(w, h))
            .write_with_encoder(image::codecs::png::PngEncoder::new(&mut out))
            .unwrap();
        out
    }

    #[tokio::test]
    async fn an_image_is_shown_stored_and_counts_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(ws.join("shot"), png(4096, 64)).unwrap();
        let mut ctx = crate::testing::context(&ws);
        ctx.session = Arc::new(
            ToolSession::new(
                ctx.session.policy.clone(),
                SpillStore::new(ws.join(".spill")),
                ModelCaps {
                    name: "vision".into(),
                    image_input: true,
                },
            )
            .with_attachments(AttachmentStore::new(ws.join(".attachments"))),
        );
        let registry = ToolRegistry::with_file_tools(true);
        let outcome = registry
            .execute("read_image", r#"{"file_path": "shot"}"#, &ctx)
            .await;
        assert!(!outcome.is_error, "{}", outcome.text());
        let [
            ToolOutputPart::Text { text },
            ToolOutputPart::Image { image },
        ] = &outcome.parts[..]
        else {
            panic!("{:?}", outcome.parts);
        };
        assert_eq!((image.width, image.height), (2048, 32));
        assert_eq!(image.media_type, "image/jpeg");
        assert!(text.ends_with(&format!(
            "image/jpeg image, 2048x32 px, {} bytes (downscaled from 4096x64 px; multiply \
             coordinates by 2.00 to locate features in the original file)\n</content>",
            image.bytes
        )));
        assert!(image.path.starts_with(ws.join(".attachments/v1/objects")));
        // Seen through read_image, the file may now be replaced.
        let outcome = registry
            .execute("write", r#"{"file_path": "shot", "content": "x"}"#, &ctx)
            .await;
        assert!(!outcome.is_error, "{}", outcome.text());

        let outcome = registry
            .execute("read_image", r#"{"file_path": "shot"}"#, &ctx)
            .await;
        assert_eq!(
            outcome.text(),
            format!(
                "Error: cannot read \"{}/shot\": the content is not a PNG, JPEG, WebP or GIF image",
                ws.display()
            )
        );
        let outcome = registry
            .execute("read_image", r#"{"file_path": "notes.txt"}"#, &ctx)
            .await;
        assert_eq!(
            outcome.text(),
            "Error: cannot read \"notes.txt\": read_image only accepts PNG/JPEG/WebP/GIF paths"
        );
    }

    #[test]
    fn the_envelope_gives_the_multiplier_after_a_downscale() {
        let stored = StoredImage {
            image: dsh_protocol::ImageRef {
                attachment_id: "sha256:x".into(),
                path: "/a".into(),
                media_type: "image/png".into(),
                bytes: 7,
                width: 2,
                height: 1,
            },
            original: Some((4, 2)),
        };
        assert_eq!(
            envelope("/w/a.png", &stored),
            "<path>/w/a.png</path>\n<type>image</type>\n<content>\nimage/png image, 2x1 px, 7 \
             bytes (downscaled from 4x2 px; multiply coordinates by 2.00 to locate features in \
             the original file)\n</content>"
        );
        let uneven = StoredImage {
            original: Some((5, 2)),
            ..stored
        };
        assert!(
            envelope("/a", &uneven)
                .contains("multiply x coordinates by 2.50 and y coordinates by 2.00")
        );
    }
}
