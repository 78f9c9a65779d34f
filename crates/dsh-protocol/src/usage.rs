use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Tokens billed for one or more model requests, in disjoint buckets: `input_tokens` is the
/// uncached input only, so billed input is `input + cache_read + cache_write`.
/// `reasoning_tokens` is the part of `output_tokens` the model spent thinking.
///
/// `unreported_calls` counts requests the server answered without reporting usage: their tokens
/// are unknown, which is different from zero, and a consumer pricing a run must know it.
///
/// `cost_usd` is what the requests cost at the model's prices, each priced when it was sent
/// (a provider's rates can change with the time of day); `None` when no request was priced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
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
            cost_usd: None,
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
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }

    /// This usage priced at `prices` for a request sent at `at`.
    pub fn priced(mut self, prices: &Prices, at: SystemTime) -> Usage {
        self.cost_usd = Some(prices.cost_usd(&self, at));
        self
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

/// Prices of one model, in US dollars per million tokens of each bucket. The four rates are
/// what a request costs at any time, or during the peak hours when `off_peak` is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Lower rates outside the provider's peak hours, when it has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_peak: Option<OffPeak>,
}

/// The rates billed outside a provider's peak hours.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OffPeak {
    /// When the peak rates apply instead.
    pub peak_hours: PeakHours,
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// A provider's peak hours, by name: the schedules are fixed by the provider, so a config
/// names one rather than spelling out hours it could get wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeakHours {
    /// DeepSeek's: Monday to Friday, 09:00 to 12:00 and 14:00 to 18:00 Beijing time (UTC+8).
    /// DeepSeek also bills Chinese public holidays off-peak; dsh does not know that calendar
    /// and counts those hours at the peak rate, so a cost is never below the bill.
    Deepseek,
}

impl PeakHours {
    /// The name a config gives it.
    pub fn name(self) -> &'static str {
        match self {
            PeakHours::Deepseek => "deepseek",
        }
    }

    /// Whether `at` falls in the peak hours.
    pub fn is_peak(self, at: SystemTime) -> bool {
        match self {
            PeakHours::Deepseek => {
                const BEIJING_OFFSET_SECS: u64 = 8 * 3600;
                let since_epoch = at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
                let local = since_epoch + BEIJING_OFFSET_SECS;
                let days = local / 86_400;
                // 1970-01-01 was a Thursday: day 0 is weekday 4, counting Sunday as 0.
                let weekday = (days + 4) % 7;
                let minute = (local % 86_400) / 60;
                let morning = (9 * 60..12 * 60).contains(&minute);
                let afternoon = (14 * 60..18 * 60).contains(&minute);
                (1..=5).contains(&weekday) && (morning || afternoon)
            }
        }
    }
}

impl Prices {
    /// What `usage` cost for a request sent at `at`. Requests whose usage was not reported
    /// cost nothing here, so with `unreported_calls` above zero this is a lower bound.
    pub fn cost_usd(&self, usage: &Usage, at: SystemTime) -> f64 {
        let [input, output, cache_read, cache_write] = match &self.off_peak {
            Some(off) if !off.peak_hours.is_peak(at) => {
                [off.input, off.output, off.cache_read, off.cache_write]
            }
            _ => [self.input, self.output, self.cache_read, self.cache_write],
        };
        (usage.input_tokens as f64 * input
            + usage.output_tokens as f64 * output
            + usage.cache_read_tokens as f64 * cache_read
            + usage.cache_write_tokens as f64 * cache_write)
            / 1_000_000.0
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

    fn utc(unix: u64) -> SystemTime {
        UNIX_EPOCH + std::time::Duration::from_secs(unix)
    }

    #[test]
    fn deepseek_peak_hours_are_beijing_weekday_office_hours() {
        let peak = PeakHours::Deepseek;
        // Monday 2026-12-07, in UTC: peak from 01:00 to 04:00 and from 06:00 to 10:00.
        assert!(!peak.is_peak(utc(1_796_605_140)), "00:59");
        assert!(peak.is_peak(utc(1_796_605_200)), "01:00");
        assert!(peak.is_peak(utc(1_796_615_940)), "03:59");
        assert!(!peak.is_peak(utc(1_796_616_000)), "04:00, Beijing's lunch");
        assert!(peak.is_peak(utc(1_796_623_200)), "06:00");
        assert!(peak.is_peak(utc(1_796_637_540)), "09:59");
        assert!(!peak.is_peak(utc(1_796_637_600)), "10:00");
        // Friday afternoon in Beijing is peak; the weekend is not.
        assert!(peak.is_peak(utc(1_796_378_340)), "Friday 17:59 in Beijing");
        assert!(
            !peak.is_peak(utc(1_796_434_200)),
            "Saturday 09:30 in Beijing"
        );
        assert!(!peak.is_peak(utc(1_796_522_400)), "Sunday 10:00 in Beijing");
    }

    #[test]
    fn a_request_is_priced_at_the_rates_of_the_hour_it_was_sent() {
        let prices = Prices {
            input: 2.0,
            output: 8.0,
            cache_read: 0.5,
            cache_write: 0.0,
            off_peak: Some(OffPeak {
                peak_hours: PeakHours::Deepseek,
                input: 1.0,
                output: 4.0,
                cache_read: 0.25,
                cache_write: 0.0,
            }),
        };
        let usage = Usage::new(1_000_000, 1_000_000, 1_000_000, 0, 0);
        let peak = usage.priced(&prices, utc(1_796_605_200)).cost_usd.unwrap();
        let off = usage.priced(&prices, utc(1_796_616_000)).cost_usd.unwrap();
        assert_eq!(peak, 10.5);
        assert_eq!(off, 5.25);
        // Flat prices ignore the hour.
        let flat = Prices {
            off_peak: None,
            ..prices
        };
        assert_eq!(flat.cost_usd(&usage, utc(1_796_616_000)), 10.5);
    }

    #[test]
    fn costs_add_up_and_an_unpriced_usage_stays_without_one() {
        let mut total = Usage::new(1, 1, 0, 0, 0);
        total.add(&Usage::unreported());
        assert_eq!(total.cost_usd, None);
        let mut priced = Usage::new(1, 0, 0, 0, 0);
        priced.cost_usd = Some(0.25);
        total.add(&priced);
        total.add(&priced);
        assert_eq!(total.cost_usd, Some(0.5));
        let json = serde_json::to_value(total).unwrap();
        assert_eq!(json["costUsd"], 0.5);
    }

    #[test]
    fn off_peak_rates_name_their_peak_hours() {
        let toml_like = serde_json::json!({
            "input": 0.3, "output": 1.2,
            "off_peak": {"peak_hours": "deepseek", "input": 0.15, "output": 0.6}
        });
        let prices: Prices = serde_json::from_value(toml_like).unwrap();
        assert_eq!(prices.off_peak.unwrap().peak_hours, PeakHours::Deepseek);
        let missing = serde_json::json!({"off_peak": {"input": 0.15}});
        let error = serde_json::from_value::<Prices>(missing).unwrap_err();
        assert!(error.to_string().contains("peak_hours"), "{error}");
    }
}
