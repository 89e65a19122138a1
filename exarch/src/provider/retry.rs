//! When and how long to wait before re-issuing a request.
//!
//! Retried: transport errors (connect, reset, a stalled read before any
//! text arrived), 408, 429 and every 5xx (Anthropic's 529 "overloaded"
//! included), and a mid-stream error event before any text arrived. A
//! stream that already delivered text is never re-issued (the caller keeps
//! what arrived). The wait is the server's `retry-after-ms` or
//! `retry-after` when it sent one (capped), otherwise exponential backoff
//! with jitter.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The retry policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff; each later one doubles.
    pub base: Duration,
    /// The longest backoff.
    pub max_backoff: Duration,
    /// The longest wait a `retry-after` header may ask for.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 6,
            base: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// Whether an HTTP status is worth retrying.
pub fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || status >= 500
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, given that `attempt`
    /// (1-based) failed, and the server's own request if any.
    pub fn wait(&self, attempt: u32, server_asked: Option<Duration>) -> Duration {
        if let Some(asked) = server_asked {
            return asked.min(self.max_retry_after);
        }
        let shift = attempt.saturating_sub(1).min(16);
        let backoff = self
            .base
            .saturating_mul(1u32 << shift)
            .min(self.max_backoff);
        // Up to a quarter more, so clients that failed together do not
        // retry together.
        let quarter = backoff.as_nanos() / 4;
        let jitter = if quarter == 0 {
            0
        } else {
            u128::from(clock_noise()) % quarter
        };
        backoff + Duration::from_nanos(u64::try_from(jitter).unwrap_or(0))
    }
}

fn clock_noise() -> u32 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else
/// `retry-after` in seconds (an integer or a decimal). An HTTP-date form
/// is not honoured (the backoff applies instead).
pub fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let secs = text("retry-after")?.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn backoff_doubles_within_its_jitter_and_caps() {
        let p = RetryPolicy {
            max_attempts: 5,
            base: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_retry_after: Duration::from_secs(2),
        };
        let w1 = p.wait(1, None);
        assert!(w1 >= Duration::from_millis(100) && w1 <= Duration::from_millis(125));
        let w2 = p.wait(2, None);
        assert!(w2 >= Duration::from_millis(200) && w2 <= Duration::from_millis(250));
        let w9 = p.wait(9, None);
        assert!(w9 >= Duration::from_millis(350) && w9 <= Duration::from_millis(438));
        assert_eq!(
            p.wait(1, Some(Duration::from_secs(9))),
            Duration::from_secs(2)
        );
        assert_eq!(p.wait(3, Some(Duration::ZERO)), Duration::ZERO);
    }

    #[test]
    fn retry_after_headers_parse() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(500)));
        h.insert("retry-after-ms", HeaderValue::from_static("20"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(20)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&d), None);
    }

    #[test]
    fn statuses() {
        assert!(retryable_status(429));
        assert!(retryable_status(529));
        assert!(retryable_status(503));
        assert!(!retryable_status(400));
        assert!(!retryable_status(401));
    }
}
