//! Retrying outages: a provider wrapped so that a request that failed for a reason worth
//! another try (`RATE_LIMIT`, `SERVER`, `TIMEOUT`, `TRANSPORT`, `EMPTY_RESPONSE`,
//! `STREAM_CLOSED`) is sent again, up to [`RetryPolicy::retries`] more times, after the
//! server's `Retry-After` or an exponential backoff with jitter. An attempt cut off mid-stream
//! is discarded whole (its deltas were for display only). Every failed attempt's reported
//! usage comes back with the answer (`Completion::retried`) or the final error, so nothing
//! billed is dropped.

use std::sync::Arc;
use std::time::Duration;

use dsh_protocol::Usage;

use crate::{
    BoxFuture, Completion, DeltaSink, LlmError, ModelRequest, Provider, RetryNotice, StreamDelta,
};

/// When and how often to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub retries: u32,
    /// The first backoff; each later one doubles, up to `max_delay`.
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a server asking for more is waited for this long.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (1 for the first), given the server's request.
    pub fn delay(&self, retry: u32, retry_after_ms: Option<u64>, jitter: f64) -> Duration {
        if let Some(ms) = retry_after_ms {
            return Duration::from_millis(ms).min(self.max_retry_after);
        }
        let doubled = self
            .base_delay
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        // Between half and all of the backoff, so that clients that failed together do not
        // all come back together.
        doubled
            .min(self.max_delay)
            .mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// A provider that retries outages.
pub struct Retrying {
    inner: Arc<dyn Provider>,
    policy: RetryPolicy,
}

impl Retrying {
    pub fn new(inner: Arc<dyn Provider>, policy: RetryPolicy) -> Self {
        Retrying { inner, policy }
    }

    async fn run<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> Result<Completion, LlmError> {
        let mut spent = Usage::default();
        let mut jitter = Jitter::seeded();
        let attempts = self.policy.retries + 1;
        let mut attempt = 1;
        loop {
            match self.inner.complete(request, &mut *on_delta).await {
                Ok(mut completion) => {
                    completion.retried.add(&spent);
                    return Ok(completion);
                }
                Err(mut error) if !error.failure.code.is_outage() || attempt >= attempts => {
                    error.usage.add(&spent);
                    return Err(error);
                }
                Err(error) => {
                    spent.add(&error.usage);
                    let delay = self.policy.delay(
                        attempt,
                        error.failure.provider_retry_after_ms,
                        jitter.next(),
                    );
                    attempt += 1;
                    on_delta(StreamDelta::Retry(RetryNotice {
                        attempt,
                        attempts,
                        code: error.failure.code.to_string(),
                        message: error.failure.message.clone(),
                        delay,
                    }));
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
}

impl Provider for Retrying {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.run(request, on_delta))
    }
}

/// A small xorshift generator: jitter needs spread, not quality.
struct Jitter(u64);

impl Jitter {
    fn seeded() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Jitter(u64::from(nanos) ^ (u64::from(std::process::id()) << 32) | 1)
    }

    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped_and_retry_after_wins() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay(1, None, 1.0), Duration::from_millis(500));
        assert_eq!(policy.delay(1, None, 0.0), Duration::from_millis(250));
        assert_eq!(policy.delay(3, None, 1.0), Duration::from_secs(2));
        assert_eq!(policy.delay(9, None, 1.0), Duration::from_secs(10));
        assert_eq!(policy.delay(1, Some(3000), 0.0), Duration::from_secs(3));
        assert_eq!(policy.delay(1, Some(600_000), 0.0), Duration::from_secs(60));
        let mut jitter = Jitter::seeded();
        for _ in 0..100 {
            let j = jitter.next();
            assert!((0.0..1.0).contains(&j));
        }
    }
}
