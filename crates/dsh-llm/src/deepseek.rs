//! What dsh knows about the DeepSeek API without asking it.

/// The public endpoint, used when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The DeepSeek models that accept images; the others take text only.
pub const IMAGE_MODELS: &[&str] = &["deepseek-v4-flash-vision-exp"];

/// Whether a DeepSeek model accepts images.
pub fn takes_images(model: &str) -> bool {
    IMAGE_MODELS.contains(&model)
}
