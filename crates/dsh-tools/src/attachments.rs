//! The attachment store: images a tool showed the model, normalised and kept by content.
//!
//! An image is admitted only if it decodes as PNG, JPEG, WebP or GIF (told by its bytes, not
//! its name) within the pixel limits; it is then stored as it is when it already suits a model
//! (long edge within 2,048 px, at most 4 MiB, upright, a still format), and otherwise re-encoded:
//! turned upright, fitted within 2,048 px, first frame only, PNG when it has transparency and
//! JPEG when not, made smaller until it fits 4 MiB. Objects live at
//! `<root>/v1/objects/<2 hex>/<sha256>`, written atomically, private to the user.

use std::io::{Cursor, Write as _};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use dsh_protocol::ImageRef;
use image::buffer::ConvertBuffer as _;
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::PngEncoder;
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, RgbImage, RgbaImage};
use sha2::{Digest, Sha256};

/// The largest image file accepted.
pub const MAX_SOURCE_BYTES: u64 = 20 * 1024 * 1024;
/// The most pixels a source image may decode to.
pub const MAX_PIXELS: u64 = 64_000_000;
/// The longest side a source image may have.
pub const MAX_SIDE: u32 = 8192;
/// The long edge a stored image is fitted within.
pub const STORED_LONG_EDGE: u32 = 2048;
/// The most bytes a stored image may have.
pub const STORED_MAX_BYTES: usize = 4 * 1024 * 1024;
const JPEG_QUALITY: u8 = 85;

/// Why an image was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// Not a PNG, JPEG, WebP or GIF, or damaged.
    Unreadable(String),
    SideTooLong,
    TooManyPixels,
    /// Could not be made small enough.
    TooLarge,
    /// The store could not be written.
    Store(String),
}

/// A stored image and, when it was resized, the source's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredImage {
    pub image: ImageRef,
    pub original: Option<(u32, u32)>,
}

/// Where attachments are kept (`$DSH_HOME/attachments`).
#[derive(Debug, Clone)]
pub struct AttachmentStore {
    root: PathBuf,
}

impl AttachmentStore {
    pub fn new(root: PathBuf) -> Self {
        AttachmentStore { root }
    }

    /// Admits, normalises and stores one image.
    pub fn save_image(&self, data: &[u8]) -> Result<StoredImage, ImageError> {
        let normal = normalise(data)?;
        let digest = sha256_hex(&normal.data);
        let dir = self.root.join("v1").join("objects").join(&digest[..2]);
        let path = dir.join(&digest);
        if !path.exists() {
            write_object(&dir, &path, &normal.data)
                .map_err(|e| ImageError::Store(format!("{}: {e}", path.display())))?;
        }
        Ok(StoredImage {
            image: ImageRef {
                attachment_id: format!("sha256:{digest}"),
                path,
                media_type: normal.format.to_mime_type().to_owned(),
                bytes: normal.data.len() as u64,
                width: normal.width,
                height: normal.height,
            },
            original: normal.original,
        })
    }
}

fn write_object(dir: &std::path::Path, path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let temp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)?;
    let written = file.write_all(data).and_then(|()| file.sync_all());
    if let Err(error) = written.and_then(|()| std::fs::rename(&temp, path)) {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    Ok(())
}

/// The sha256 of `bytes` in lower-case hex: the name of a stored object, and the digest
/// dsh records wherever it must tell whether content changed.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

struct Normalised {
    data: Vec<u8>,
    format: ImageFormat,
    width: u32,
    height: u32,
    original: Option<(u32, u32)>,
}

fn normalise(data: &[u8]) -> Result<Normalised, ImageError> {
    let unreadable = |e: image::ImageError| ImageError::Unreadable(e.to_string());
    let Ok(format @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::WebP | ImageFormat::Gif)) =
        image::guess_format(data)
    else {
        return Err(ImageError::Unreadable(
            "the content is not a PNG, JPEG, WebP or GIF image".into(),
        ));
    };
    let mut reader = ImageReader::new(Cursor::new(data));
    reader.set_format(format);
    let mut decoder = reader.into_decoder().map_err(unreadable)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    let (w, h) = decoder.dimensions();
    let (w, h) = match orientation {
        Orientation::Rotate90
        | Orientation::Rotate270
        | Orientation::Rotate90FlipH
        | Orientation::Rotate270FlipH => (h, w),
        _ => (w, h),
    };
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(ImageError::SideTooLong);
    }
    if u64::from(w) * u64::from(h) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels);
    }
    let still_8bit = !matches!(format, ImageFormat::Gif)
        && matches!(
            decoder.color_type(),
            image::ColorType::L8
                | image::ColorType::La8
                | image::ColorType::Rgb8
                | image::ColorType::Rgba8
        );
    // Decoding in full also proves the file is not damaged past its header.
    let mut img = DynamicImage::from_decoder(decoder).map_err(unreadable)?;
    if still_8bit
        && orientation == Orientation::NoTransforms
        && data.len() <= STORED_MAX_BYTES
        && w.max(h) <= STORED_LONG_EDGE
    {
        return Ok(Normalised {
            data: data.to_vec(),
            format,
            width: w,
            height: h,
            original: None,
        });
    }
    img.apply_orientation(orientation);
    let alpha = img.color().has_alpha();
    // One pixel type from here on, so that resizing is compiled for it alone and not for each
    // of the ten a `DynamicImage` can hold (it is the largest part of the image code).
    let img = img.into_rgba8();
    let (mut tw, mut th) = fit(w, h, STORED_LONG_EDGE);
    loop {
        let sized = if (tw, th) == (w, h) {
            img.clone()
        } else {
            image::imageops::resize(&img, tw, th, FilterType::Triangle)
        };
        let (data, format) = encode(&sized, alpha).map_err(unreadable)?;
        if data.len() <= STORED_MAX_BYTES {
            return Ok(Normalised {
                data,
                format,
                width: tw,
                height: th,
                original: ((tw, th) != (w, h)).then_some((w, h)),
            });
        }
        if (tw, th) == (1, 1) {
            return Err(ImageError::TooLarge);
        }
        tw = ((f64::from(tw) * 0.9) as u32).max(1);
        th = ((f64::from(th) * 0.9) as u32).max(1);
    }
}

/// The size that fits `w` x `h` within `edge` on its long side, never enlarged.
fn fit(w: u32, h: u32, edge: u32) -> (u32, u32) {
    let long = w.max(h);
    if long <= edge {
        return (w, h);
    }
    let scale = f64::from(edge) / f64::from(long);
    let side = |v: u32| ((f64::from(v) * scale).round() as u32).clamp(1, edge);
    (side(w), side(h))
}

/// PNG when the image has transparency, else JPEG (which has none to keep).
fn encode(img: &RgbaImage, alpha: bool) -> Result<(Vec<u8>, ImageFormat), image::ImageError> {
    let mut out = Vec::new();
    if alpha {
        img.write_with_encoder(PngEncoder::new(&mut out))?;
        Ok((out, ImageFormat::Png))
    } else {
        let rgb: RgbImage = img.convert();
        rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY))?;
        Ok((out, ImageFormat::Jpeg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32, alpha: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let img = if alpha {
            DynamicImage::ImageRgba8(image::RgbaImage::from_fn(w, h, |x, y| {
                image::Rgba([(x % 256) as u8, (y % 256) as u8, 7, 128])
            }))
        } else {
            DynamicImage::ImageRgb8(image::RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([(x % 256) as u8, (y % 256) as u8, 7])
            }))
        };
        img.write_with_encoder(PngEncoder::new(&mut out)).unwrap();
        out
    }

    #[test]
    fn small_images_are_stored_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let store = AttachmentStore::new(dir.path().to_path_buf());
        let data = png(3, 2, false);
        let stored = store.save_image(&data).unwrap();
        assert_eq!(stored.original, None);
        assert_eq!((stored.image.width, stored.image.height), (3, 2));
        assert_eq!(stored.image.media_type, "image/png");
        assert_eq!(std::fs::read(&stored.image.path).unwrap(), data);
        assert!(stored.image.attachment_id.starts_with("sha256:"));
        // Content-addressed: the same bytes are one object.
        assert_eq!(store.save_image(&data).unwrap(), stored);
    }

    #[test]
    fn large_images_are_fitted_within_the_long_edge() {
        let dir = tempfile::tempdir().unwrap();
        let store = AttachmentStore::new(dir.path().to_path_buf());
        let stored = store.save_image(&png(4096, 1024, false)).unwrap();
        assert_eq!((stored.image.width, stored.image.height), (2048, 512));
        assert_eq!(stored.original, Some((4096, 1024)));
        assert_eq!(stored.image.media_type, "image/jpeg");
        let with_alpha = store.save_image(&png(3000, 3000, true)).unwrap();
        assert_eq!(with_alpha.image.media_type, "image/png");
        assert_eq!(
            (with_alpha.image.width, with_alpha.image.height),
            (2048, 2048)
        );
    }

    #[test]
    fn oversized_and_foreign_content_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = AttachmentStore::new(dir.path().to_path_buf());
        assert_eq!(
            store.save_image(b"plain text").unwrap_err(),
            ImageError::Unreadable("the content is not a PNG, JPEG, WebP or GIF image".into())
        );
        assert_eq!(
            store.save_image(&png(8193, 1, false)).unwrap_err(),
            ImageError::SideTooLong
        );
        let mut truncated = png(64, 64, false);
        truncated.truncate(truncated.len() / 2);
        assert!(matches!(
            store.save_image(&truncated),
            Err(ImageError::Unreadable(_))
        ));
    }

    #[test]
    fn fitting_keeps_the_aspect_and_never_enlarges() {
        assert_eq!(fit(100, 50, 2048), (100, 50));
        assert_eq!(fit(4096, 2048, 2048), (2048, 1024));
        assert_eq!(fit(10000, 1, 2048), (2048, 1));
    }
}
