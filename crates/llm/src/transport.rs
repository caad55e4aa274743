//! The HTTP exchange shared by the chat clients: one JSON POST with
//! retries, and the translation of HTTP failures into [`LlmError`].

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::error::{classify, FailureContext, LlmError, Result};
use crate::retry::{parse_retry_after, Failure, RetryPolicy};

/// Looks at a 2xx body and returns `(status, error text)` when it reports
/// an error anyway (None status: the protocol's in-band error).
pub(crate) type BodyCheck = fn(&Value) -> Option<(Option<u16>, String)>;

/// Builds a header map from fixed headers plus the configured ones.
pub(crate) fn header_map(
    fixed: &[(&str, String)],
    extra: &BTreeMap<String, String>,
) -> Result<HeaderMap> {
    let mut map = HeaderMap::new();
    let pairs = fixed
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .chain(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    for (k, v) in pairs {
        let name = HeaderName::try_from(k.as_str()).map_err(|_| {
            LlmError::Config(format!(
                "invalid HTTP header name `{k}` in the provider's `headers`"
            ))
        })?;
        let mut value = HeaderValue::try_from(v.as_str()).map_err(|_| {
            LlmError::Config(format!(
                "invalid value for HTTP header `{k}`: it must be visible ASCII without newlines"
            ))
        })?;
        if is_secret_header(k.as_str()) {
            value.set_sensitive(true);
        }
        map.insert(name, value);
    }
    Ok(map)
}

/// True for headers that carry credentials; they are left out of cache
/// keys and logs.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["auth", "key", "token", "secret", "cookie", "signature"]
        .iter()
        .any(|m| n.contains(m))
}

/// Describes a reqwest error with its causes (reqwest's own text alone is
/// only "error sending request").
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// Turns a failed send (no HTTP answer) into an error.
pub(crate) fn send_error(
    e: &reqwest::Error,
    provider: &str,
    timeout: Duration,
    attempts: u32,
) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout {
            provider: provider.to_string(),
            timeout,
            attempts,
        }
    } else {
        LlmError::Transient {
            provider: provider.to_string(),
            status: None,
            attempts,
            message: describe(e),
        }
    }
}

/// A body read up to a cap: the text (invalid UTF-8 replaced) and whether
/// the answer went on past the cap.
pub(crate) struct CappedBody {
    pub text: String,
    pub cut: bool,
}

impl CappedBody {
    fn new(mut bytes: Vec<u8>, limit: u64) -> Self {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let cut = bytes.len() > limit;
        bytes.truncate(limit);
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        CappedBody { text, cut }
    }
}

/// Reads at most `limit` bytes of an answer (one more tells whether it went
/// on), so a runaway answer costs bounded memory.
pub(crate) async fn read_capped(
    mut resp: reqwest::Response,
    limit: u64,
) -> std::result::Result<CappedBody, reqwest::Error> {
    let mut bytes: Vec<u8> = Vec::new();
    let room = usize::try_from(limit.saturating_add(1)).unwrap_or(usize::MAX);
    while let Some(chunk) = resp.chunk().await? {
        let take = chunk.len().min(room - bytes.len());
        bytes.extend_from_slice(chunk.get(..take).unwrap_or_default());
        if bytes.len() >= room {
            break;
        }
    }
    Ok(CappedBody::new(bytes, limit))
}

/// [`read_capped`] for the blocking client.
pub(crate) fn read_capped_blocking(
    resp: reqwest::blocking::Response,
    limit: u64,
) -> std::io::Result<CappedBody> {
    use std::io::Read;
    let mut bytes = Vec::new();
    resp.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(CappedBody::new(bytes, limit))
}

/// One endpoint of one provider.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    policy: RetryPolicy,
    timeout: Duration,
    label: String,
    key_env: String,
    max_response_bytes: u64,
}

impl Transport {
    pub(crate) fn new(
        url: String,
        headers: HeaderMap,
        timeout: Duration,
        policy: RetryPolicy,
        label: String,
        key_env: String,
        max_response_bytes: u64,
    ) -> Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| {
                LlmError::Config(format!("cannot set up the HTTP client: {}", describe(&e)))
            })?;
        Ok(Transport {
            client,
            url,
            headers,
            policy,
            timeout,
            label,
            key_env,
            max_response_bytes,
        })
    }

    /// POSTs `body` and returns the parsed JSON answer, retrying 429, 5xx,
    /// connection failures and timeouts as the policy allows.
    pub(crate) async fn post_json(
        &self,
        body: &Value,
        tool_choice_forced: bool,
        check: BodyCheck,
    ) -> Result<Value> {
        self.policy
            .run(
                &self.label,
                "model request",
                |attempts| self.attempt(body, tool_choice_forced, check, attempts),
                tokio::time::sleep,
            )
            .await
    }

    /// One POST of `body`: the parsed answer, or why it failed.
    async fn attempt(
        &self,
        body: &Value,
        tool_choice_forced: bool,
        check: BodyCheck,
        attempts: u32,
    ) -> std::result::Result<Value, Failure> {
        let sent = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .json(body)
            .send()
            .await;
        let resp =
            sent.map_err(|e| Failure::new(send_error(&e, &self.label, self.timeout, attempts)))?;
        let status = resp.status();
        let retry_after = parse_retry_after(resp.headers());
        let text = match read_capped(resp, self.max_response_bytes).await {
            Err(e) => {
                return Err(Failure::new(send_error(
                    &e,
                    &self.label,
                    self.timeout,
                    attempts,
                )))
            }
            Ok(body) if body.cut && status.is_success() => {
                return Err(Failure::new(LlmError::TooLarge {
                    provider: self.label.clone(),
                    limit: self.max_response_bytes,
                }));
            }
            // An error answer is classified by its start.
            Ok(CappedBody { text, .. }) => text,
        };
        let cx = FailureContext {
            provider: &self.label,
            url: &self.url,
            key_env: &self.key_env,
            attempts,
            retry_after,
            tool_choice_forced,
        };
        let error = if status.is_success() {
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                Failure::new(LlmError::Decode {
                    provider: self.label.clone(),
                    message: format!(
                        "HTTP {status} with a body that is not JSON ({e}): {}",
                        text.chars().take(300).collect::<String>()
                    ),
                })
            })?;
            match check(&value) {
                None => return Ok(value),
                Some((st, msg)) => classify(st, &msg, &cx),
            }
        } else {
            classify(Some(status.as_u16()), &text, &cx)
        };
        Err(Failure { error, retry_after })
    }
}
