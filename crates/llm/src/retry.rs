//! The retry policy of every HTTP client of the crate: the one retry loop
//! ([`RetryPolicy::run`], and [`RetryPolicy::run_blocking`] for the
//! blocking embedder), its timing (exponential backoff with jitter) and the
//! parsing of `Retry-After`.

use std::collections::hash_map::RandomState;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::error::LlmError;

/// The longest wait a `Retry-After` header can impose; longer asks are
/// capped so a misbehaving server cannot park the caller for hours.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// How often and how long to wait between attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub base: Duration,
    /// Longest computed wait.
    pub cap: Duration,
}

impl RetryPolicy {
    pub(crate) fn new(max_retries: u32, base_ms: u64) -> Self {
        RetryPolicy {
            max_retries,
            base: Duration::from_millis(base_ms),
            cap: Duration::from_secs(8),
        }
    }

    /// The wait before retry number `retry` (0 for the first retry): the
    /// server's `Retry-After` when given (capped), else `base * 2^retry`
    /// capped, plus 0–20 % jitter so that many clients do not retry in step.
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(MAX_RETRY_AFTER);
        }
        let exp = self.base.saturating_mul(1u32 << retry.min(16));
        let d = exp.min(self.cap);
        d + d.mul_f64(jitter_fraction() * 0.2)
    }

    /// Runs `attempt` (called with the attempt number, from 1) until it
    /// succeeds, fails with an error that is not retryable, or the retries
    /// run out, waiting [`delay`](Self::delay) with `sleep` between
    /// attempts. The async chat clients pass tokio's sleep; the blocking
    /// embedder goes through [`run_blocking`](Self::run_blocking), so both
    /// share this one loop. `what` names the request in the retry log line.
    pub(crate) async fn run<T, A, AF, S, SF>(
        &self,
        label: &str,
        what: &str,
        mut attempt: A,
        sleep: S,
    ) -> Result<T, LlmError>
    where
        A: FnMut(u32) -> AF,
        AF: Future<Output = Result<T, Failure>>,
        S: Fn(Duration) -> SF,
        SF: Future<Output = ()>,
    {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let Failure { error, retry_after } = match attempt(attempts).await {
                Ok(v) => return Ok(v),
                Err(f) => f,
            };
            if error.is_retryable() && attempts <= self.max_retries {
                let wait = self.delay(attempts - 1, retry_after);
                tracing::warn!(provider = %label, attempt = attempts, ?wait, error = %error, "retrying {what}");
                sleep(wait).await;
                continue;
            }
            return Err(error);
        }
    }

    /// [`run`](Self::run) for blocking clients: `attempt` blocks, and the
    /// waits are `std::thread::sleep`.
    pub(crate) fn run_blocking<T>(
        &self,
        label: &str,
        what: &str,
        mut attempt: impl FnMut(u32) -> Result<T, Failure>,
    ) -> Result<T, LlmError> {
        let fut = self.run(
            label,
            what,
            |n| std::future::ready(attempt(n)),
            |wait| {
                std::thread::sleep(wait);
                std::future::ready(())
            },
        );
        complete_now(fut)
    }
}

/// How one attempt failed: the error, and the server's `Retry-After` when
/// it sent one.
#[derive(Debug)]
pub(crate) struct Failure {
    /// What went wrong; retried when [`LlmError::is_retryable`].
    pub error: LlmError,
    /// The wait the server asked for.
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure without a `Retry-After`.
    pub(crate) fn new(error: LlmError) -> Self {
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// Drives a future whose every await point is already ready (the blocking
/// loop of [`RetryPolicy::run_blocking`]) to its end on this thread. It
/// completes on the first poll; the loop only guards against a future that
/// is not of that kind, which then still finishes, by polling again.
fn complete_now<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

/// A pseudo-random number in [0, 1), from the process's random hash keys.
fn jitter_fraction() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Parses `retry-after-ms` (milliseconds) or `retry-after` (seconds, possibly
/// fractional), capped at [`MAX_RETRY_AFTER`]. HTTP dates are not supported
/// and yield None (the computed backoff is used), as do negative or
/// non-numeric values.
pub(crate) fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let capped = |secs: f64| seconds(secs, MAX_RETRY_AFTER);
    if let Some(d) = get("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|ms| capped(ms / 1000.0))
    {
        return Some(d);
    }
    capped(get("retry-after")?.parse::<f64>().ok()?)
}

/// `secs` seconds as a duration of at most `max`; None for negative or
/// non-finite values. A value from a server or a configuration file can be
/// anything (`1e30`), and `Duration::from_secs_f64` panics on what it cannot
/// represent.
pub(crate) fn seconds(secs: f64, max: Duration) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| {
        if secs >= max.as_secs_f64() {
            max
        } else {
            Duration::try_from_secs_f64(secs).unwrap_or(max)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn backoff_doubles_within_jitter_and_cap() {
        let p = RetryPolicy::new(5, 100);
        for (retry, base_ms) in [(0u32, 100u64), (1, 200), (2, 400), (10, 8000)] {
            let d = p.delay(retry, None);
            let lo = Duration::from_millis(base_ms);
            assert!(d >= lo && d <= lo.mul_f64(1.2), "retry {retry}: {d:?}");
        }
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(p.delay(0, Some(Duration::from_secs(3600))), MAX_RETRY_AFTER);
    }

    #[test]
    fn parses_retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(parse_retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&h), None);
    }

    fn transient(attempts: u32) -> Failure {
        Failure {
            error: LlmError::Transient {
                provider: "p".into(),
                status: Some(503),
                attempts,
                message: "down".into(),
            },
            retry_after: Some(Duration::ZERO),
        }
    }

    /// The blocking loop retries retryable errors until the retries run
    /// out, and stops at once on any other error or on success.
    #[test]
    fn the_loop_retries_what_is_retryable_as_often_as_allowed() {
        let p = RetryPolicy::new(2, 0);
        let mut calls = Vec::new();
        let err = p
            .run_blocking("p", "test request", |n| -> Result<(), Failure> {
                calls.push(n);
                Err(transient(n))
            })
            .unwrap_err();
        assert_eq!(calls, vec![1, 2, 3]);
        assert!(
            matches!(err, LlmError::Transient { attempts: 3, .. }),
            "{err:?}"
        );

        let mut calls = 0;
        let ok = p.run_blocking("p", "test request", |n| {
            calls += 1;
            if n < 3 {
                Err(transient(n))
            } else {
                Ok(n)
            }
        });
        assert_eq!((ok.unwrap(), calls), (3, 3));

        let mut calls = 0;
        let err = p
            .run_blocking("p", "test request", |_| -> Result<(), Failure> {
                calls += 1;
                Err(Failure::new(LlmError::Decode {
                    provider: "p".into(),
                    message: "garbage".into(),
                }))
            })
            .unwrap_err();
        assert_eq!((err.kind(), calls), (crate::ErrorKind::Decode, 1));
    }

    /// Whatever a server sends, the wait is a duration within the cap.
    #[test]
    fn absurd_retry_after_values_are_capped_not_panics() {
        for (name, value, want) in [
            ("retry-after-ms", "1e30", Some(MAX_RETRY_AFTER)),
            ("retry-after-ms", "1e300", Some(MAX_RETRY_AFTER)),
            ("retry-after-ms", "-5", None),
            ("retry-after-ms", "NaN", None),
            ("retry-after-ms", "inf", None),
            ("retry-after", "1e30", Some(MAX_RETRY_AFTER)),
            ("retry-after", "18446744073709551616", Some(MAX_RETRY_AFTER)),
            ("retry-after", "0.5", Some(Duration::from_millis(500))),
        ] {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(value));
            assert_eq!(parse_retry_after(&h), want, "{name}: {value}");
        }
    }
}
