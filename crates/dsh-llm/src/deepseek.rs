//! What dsh knows about the DeepSeek API without asking it.

use dsh_protocol::{OffPeak, PeakHours, Prices};

/// The public endpoint, used when no base URL is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com";

/// The DeepSeek models that accept images; the others take text only.
pub const IMAGE_MODELS: &[&str] = &["deepseek-v4-flash-vision-exp"];

/// Whether a DeepSeek model accepts images.
pub fn takes_images(model: &str) -> bool {
    IMAGE_MODELS.contains(&model)
}

/// The day [`prices`] were read from DeepSeek's pricing page
/// (<https://api-docs.deepseek.com/quick_start/pricing>).
pub const PRICES_TAKEN: &str = "2026-12-06";

/// DeepSeek's published prices for its own models, in US dollars per million tokens: the peak
/// rates, and half of them off-peak. The legacy names `deepseek-v4-flash` and
/// `deepseek-v4-flash-vision-exp` are served by the current Flash model and billed as Flash.
/// DeepSeek does not bill cache writes apart: a token written to the cache is a cache miss.
pub fn prices(model: &str) -> Option<Prices> {
    // [cache hit, cache miss, output] at the peak rate.
    let [cache_hit, cache_miss, output] = match model {
        "deepseek-flash" | "deepseek-v4-flash" | "deepseek-v4-flash-vision-exp" => {
            [0.006, 0.30, 1.20]
        }
        "deepseek-v4-pro" => [0.044, 1.32, 3.96],
        _ => return None,
    };
    Some(Prices {
        input: cache_miss,
        output,
        cache_read: cache_hit,
        cache_write: cache_miss,
        off_peak: Some(OffPeak {
            peak_hours: PeakHours::Deepseek,
            input: cache_miss / 2.0,
            output: output / 2.0,
            cache_read: cache_hit / 2.0,
            cache_write: cache_miss / 2.0,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_peak_is_half_the_published_peak_rates() {
        let flash = prices("deepseek-flash").unwrap();
        let off = flash.off_peak.unwrap();
        // The page's off-peak column for Flash: $0.003 hit, $0.15 miss, $0.60 output.
        assert_eq!([off.cache_read, off.input, off.output], [0.003, 0.15, 0.6]);
        assert_eq!(prices("deepseek-v4-flash"), Some(flash));
        let pro = prices("deepseek-v4-pro").unwrap().off_peak.unwrap();
        assert_eq!([pro.cache_read, pro.input, pro.output], [0.022, 0.66, 1.98]);
        assert_eq!(prices("deepseek-chat"), None);
    }
}
