use serde::{Deserialize, Serialize};

/// Tokens billed for one or more model requests, in disjoint buckets: `input_tokens` is the
/// uncached input only, so billed input is `input + cache_read + cache_write`.
/// `reasoning_tokens` is the part of `output_tokens` the model spent thinking.
///
/// `unreported_calls` counts requests the server answered without reporting usage: their tokens
/// are unknown, which is different from zero, and a consumer pricing a run must know it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unreported_calls: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Usage {
    /// A usage built from buckets; the total is derived.
    pub fn new(input: u64, output: u64, cache_read: u64, cache_write: u64, reasoning: u64) -> Self {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: cache_read,
            cache_write_tokens: cache_write,
            reasoning_tokens: reasoning,
            total_tokens: input + output + cache_read + cache_write,
            unreported_calls: 0,
        }
    }

    /// Every input token of the request, cached or not: the size of the context it sent.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// The usage of one request whose server reported nothing.
    pub fn unreported() -> Self {
        Usage {
            unreported_calls: 1,
            ..Usage::default()
        }
    }

    /// Adds another request's (or step's) usage to this one. Nothing is dropped: every bucket
    /// is summed, and unreported requests stay counted.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.total_tokens += other.total_tokens;
        self.unreported_calls += other.unreported_calls;
    }

    /// The sum of several usages.
    pub fn sum<'a>(usages: impl IntoIterator<Item = &'a Usage>) -> Usage {
        let mut total = Usage::default();
        for usage in usages {
            total.add(usage);
        }
        total
    }
}

/// Prices of one model, in US dollars per million tokens of each bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

impl Prices {
    /// What `usage` cost. Requests whose usage was not reported cost nothing here, so with
    /// `unreported_calls` above zero this is a lower bound.
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// Usage as the stream reports it: the buckets, and the price when the model has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BilledUsage {
    #[serde(flatten)]
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl BilledUsage {
    pub fn new(usage: Usage, prices: Option<&Prices>) -> Self {
        BilledUsage {
            usage,
            cost_usd: prices.map(|p| p.cost_usd(&usage)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_bucket_and_keeps_unreported_calls() {
        let mut a = Usage::new(10, 5, 90, 0, 2);
        a.add(&Usage::unreported());
        a.add(&Usage::new(1, 1, 0, 3, 0));
        assert_eq!(a.input_tokens, 11);
        assert_eq!(a.output_tokens, 6);
        assert_eq!(a.cache_read_tokens, 90);
        assert_eq!(a.cache_write_tokens, 3);
        assert_eq!(a.total_tokens, 105 + 5);
        assert_eq!(a.unreported_calls, 1);
    }

    #[test]
    fn serialises_in_camel_case_without_a_zero_unreported_count() {
        let json = serde_json::to_string(&Usage::new(3, 4, 0, 0, 0)).unwrap();
        assert_eq!(
            json,
            r#"{"inputTokens":3,"outputTokens":4,"cacheReadTokens":0,"cacheWriteTokens":0,"reasoningTokens":0,"totalTokens":7}"#
        );
    }
}
