//! `[requests]`: how often and how long an outage is retried, and how long a server may stay
//! silent.

use std::time::Duration;

use dsh_llm::RetryPolicy;
use serde::Deserialize;

use crate::resolver::Resolver;
use crate::sourced::Sourced;
use crate::trust_look::{Guard, Reason};

/// The default of `requests.idle_timeout_ms`.
const IDLE_TIMEOUT_MS: u64 = 300_000;

/// How each key can widen how long or how often a run retries ([`crate::trust_look::Widens`]);
/// the defaults are [`RetryPolicy::default`]'s, which a test checks.
pub(crate) const GUARDS: &[Guard] = &[
    Guard::higher("requests.retries", 5, Reason::Limit),
    Guard::neither(
        "requests.retry_base_ms",
        "the first wait between attempts; how many there are is requests.retries",
    ),
    Guard::higher("requests.retry_max_ms", 10_000, Reason::Limit),
    Guard::higher("requests.retry_after_max_ms", 60_000, Reason::Limit),
    Guard::higher("requests.idle_timeout_ms", IDLE_TIMEOUT_MS, Reason::Limit),
];

/// Model requests: retries and timeouts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequestsConfig {
    /// Attempts after the first for an outage (default 5).
    pub retries: Option<u32>,
    /// The first backoff in milliseconds (default 500), doubling up to `retry_max_ms`.
    pub retry_base_ms: Option<u64>,
    /// The longest backoff in milliseconds (default 10000).
    pub retry_max_ms: Option<u64>,
    /// The longest `Retry-After` honoured, in milliseconds (default 60000).
    pub retry_after_max_ms: Option<u64>,
    /// How long a server may stay silent, before its first byte or mid-stream, in
    /// milliseconds (default 300000).
    pub idle_timeout_ms: Option<u64>,
}

/// How model requests are retried and timed out.
#[derive(Debug, Clone)]
pub struct Requests {
    pub retry: RetryPolicy,
    pub idle_timeout: Sourced<Duration>,
}

pub(crate) fn resolve(r: &mut Resolver<'_>, file: &RequestsConfig) -> Requests {
    let defaults = RetryPolicy::default();
    let retry = RetryPolicy {
        retries: (r.file_setting("requests.retries", file.retries, defaults.retries)).value,
        base_delay: (r.millis(
            "requests.retry_base_ms",
            file.retry_base_ms,
            defaults.base_delay,
        ))
        .value,
        max_delay: (r.millis(
            "requests.retry_max_ms",
            file.retry_max_ms,
            defaults.max_delay,
        ))
        .value,
        max_retry_after: (r.millis(
            "requests.retry_after_max_ms",
            file.retry_after_max_ms,
            defaults.max_retry_after,
        ))
        .value,
    };
    // 0 would give up at once; the shortest wait is 1 ms.
    let idle_timeout = r.millis(
        "requests.idle_timeout_ms",
        file.idle_timeout_ms.map(|ms| ms.max(1)),
        Duration::from_millis(IDLE_TIMEOUT_MS),
    );
    Requests {
        retry,
        idle_timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trust rule compares against these defaults: they must be the ones a run uses.
    #[test]
    fn the_guards_defaults_are_the_retry_policys() {
        let policy = RetryPolicy::default();
        let default = |key: &str| {
            GUARDS
                .iter()
                .find(|g| g.key == key)
                .map(|g| g.widens)
                .unwrap()
        };
        use crate::trust_look::Widens::Higher;
        assert_eq!(
            default("requests.retries"),
            Higher(Some(u64::from(policy.retries)))
        );
        assert_eq!(
            default("requests.retry_max_ms"),
            Higher(Some(policy.max_delay.as_millis() as u64))
        );
        assert_eq!(
            default("requests.retry_after_max_ms"),
            Higher(Some(policy.max_retry_after.as_millis() as u64))
        );
    }
}
