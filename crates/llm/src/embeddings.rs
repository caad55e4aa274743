//! OpenAI-compatible embeddings (`POST {base_url}/embeddings`) behind the
//! synchronous [`mnemo_core::Embedder`] seam: batching, retries, timeouts,
//! dimension discovery, normalisation and re-ordering by `index`.
//!
//! Works with OpenAI, Ollama, vLLM and LM Studio. The client is reqwest's
//! blocking one: create, use and drop it outside async code (async callers
//! use `spawn_blocking`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::{classify, FailureContext, LlmError, Result};
use crate::openai::short;
use crate::provider::{is_loopback, process_env};
use crate::retry::{parse_retry_after, Failure, RetryPolicy};
use crate::transport::{
    describe, header_map, is_secret_header, read_capped_blocking, send_error, CappedBody,
};

/// Largest embeddings answer read: a full batch of long vectors written as
/// JSON text stays well under it.
const MAX_EMBEDDING_RESPONSE_BYTES: u64 = 128 * 1024 * 1024;

/// Configuration of an [`OpenAiEmbedder`] (serde, every field defaulted).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiEmbedderConfig {
    /// Endpoint including `/v1`, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Environment variable holding the key.
    pub api_key_env: String,
    /// The key itself; beats `api_key_env`. Never serialised.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// Extra HTTP headers.
    pub headers: BTreeMap<String, String>,
    /// Vector dimension; discovered with one probe request when None.
    pub dims: Option<usize>,
    /// Most inputs per request.
    pub max_batch: usize,
    /// Most estimated tokens per request (an input above it goes alone).
    pub max_batch_tokens: usize,
    /// The model's input limit in its tokens, if known (passed on to
    /// chunkers through [`Embedder::max_input_tokens`]).
    pub max_input_tokens: Option<usize>,
    /// Per-request timeout in seconds.
    pub timeout_secs: f64,
    /// Retries after the first attempt on 429, 5xx, connection errors and
    /// timeouts.
    pub max_retries: u32,
    /// Wait before the first retry in milliseconds, doubled each time.
    pub retry_backoff_ms: u64,
}

impl Default for OpenAiEmbedderConfig {
    fn default() -> Self {
        OpenAiEmbedderConfig {
            base_url: "https://api.openai.com/v1".into(),
            model: "text-embedding-3-small".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            api_key: None,
            headers: BTreeMap::new(),
            dims: None,
            max_batch: 64,
            max_batch_tokens: 8_000,
            max_input_tokens: None,
            timeout_secs: 60.0,
            max_retries: 3,
            retry_backoff_ms: 500,
        }
    }
}

impl std::fmt::Debug for OpenAiEmbedderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedderConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("dims", &self.dims)
            .field("max_batch", &self.max_batch)
            .field("max_batch_tokens", &self.max_batch_tokens)
            .field("max_input_tokens", &self.max_input_tokens)
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .finish()
    }
}

impl OpenAiEmbedderConfig {
    /// An endpoint and model with the other defaults.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiEmbedderConfig {
            base_url: base_url.into(),
            model: model.into(),
            ..Default::default()
        }
    }

    /// Hex sha256 of the base URL, the model and the headers that carry no
    /// credentials: what changes the vectors, for cache keys.
    pub fn provider_key(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.base_url.trim_end_matches('/').as_bytes());
        h.update(b"\n");
        h.update(self.model.as_bytes());
        h.update(b"\n");
        let mut headers: Vec<(String, &String)> = self
            .headers
            .iter()
            .filter(|(k, _)| !is_secret_header(k))
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        headers.sort();
        for (k, v) in headers {
            h.update(k.as_bytes());
            h.update(b":");
            h.update(v.as_bytes());
            h.update(b"\n");
        }
        hex::encode(h.finalize())
    }
}

/// Estimated tokens of an input: a quarter of its ASCII characters plus one
/// per other character, so that CJK text is not underestimated.
fn estimate_tokens(text: &str) -> usize {
    let (ascii, other) = text.chars().fold((0usize, 0usize), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    (ascii.div_ceil(4) + other).max(1)
}

/// Splits inputs into consecutive batches of at most `max_batch` inputs and
/// `max_tokens` estimated tokens (an input over the cap goes alone).
fn plan_batches(texts: &[&str], max_batch: usize, max_tokens: usize) -> Vec<Range<usize>> {
    let max_batch = max_batch.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut tokens = 0;
    for (i, t) in texts.iter().enumerate() {
        let n = estimate_tokens(t);
        if i > start && (i - start >= max_batch || tokens + n > max_tokens) {
            out.push(start..i);
            start = i;
            tokens = 0;
        }
        tokens += n;
    }
    if start < texts.len() {
        out.push(start..texts.len());
    }
    out
}

/// An [`Embedder`] calling an OpenAI-compatible `/embeddings` endpoint.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    config: OpenAiEmbedderConfig,
    client: reqwest::blocking::Client,
    url: String,
    headers: HeaderMap,
    policy: RetryPolicy,
    timeout: Duration,
    label: String,
    dims: usize,
}

impl OpenAiEmbedder {
    /// A client for `config`, with the key from `api_key` or the process
    /// variable `api_key_env` (none needed on loopback). When `dims` is not
    /// configured, one short probe request discovers it, so a wrong URL,
    /// model or key fails here rather than at the first indexing run.
    pub fn new(config: OpenAiEmbedderConfig) -> Result<Self> {
        Self::with_env(config, &process_env)
    }

    /// Like [`new`](Self::new), looking the key variable up with `env`.
    pub fn with_env(
        mut config: OpenAiEmbedderConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        if config.model.trim().is_empty() {
            return Err(LlmError::Config(
                "no embedding model configured: set `model` for the embedder".into(),
            ));
        }
        let url = reqwest::Url::parse(&config.base_url).map_err(|e| {
            LlmError::Config(format!(
                "embedder base_url `{}` is not a valid URL ({e}): use for example http://localhost:11434/v1",
                config.base_url
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!(
                "embedder base_url `{}` must start with http:// or https://",
                config.base_url
            )));
        }
        let key = config
            .api_key
            .clone()
            .filter(|k| !k.trim().is_empty())
            .or_else(|| env(&config.api_key_env).filter(|k| !k.trim().is_empty()));
        if key.is_none() && !is_loopback(&config.base_url) {
            return Err(LlmError::Config(format!(
                "no API key for the embedding provider at {}: set the environment variable {} (or `api_key_env` / `api_key` in the embedder configuration)",
                config.base_url, config.api_key_env
            )));
        }
        if config.dims == Some(0) {
            return Err(LlmError::Config(
                "embedder dims must be positive (or left out to discover it)".into(),
            ));
        }
        let mut fixed = Vec::new();
        if let Some(k) = key {
            fixed.push(("authorization", format!("Bearer {}", k.trim())));
        }
        let headers = header_map(&fixed, &config.headers)?;
        let timeout = crate::retry::seconds(config.timeout_secs, crate::provider::MAX_TIMEOUT)
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(60));
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| {
                LlmError::Config(format!("cannot set up the HTTP client: {}", describe(&e)))
            })?;
        let label = format!("embedding model `{}` at {}", config.model, config.base_url);
        let policy = RetryPolicy::new(config.max_retries, config.retry_backoff_ms);
        // The key lives in the headers only; the kept config never holds it.
        config.api_key = None;
        let mut me = OpenAiEmbedder {
            url: format!("{}/embeddings", config.base_url.trim_end_matches('/')),
            dims: config.dims.unwrap_or(0),
            config,
            client,
            headers,
            policy,
            timeout,
            label,
        };
        if me.dims == 0 {
            let v = me.embed_batch(&["dimension probe"])?;
            me.dims = v.first().map_or(0, Vec::len);
            if me.dims == 0 {
                return Err(LlmError::Decode {
                    provider: me.label,
                    message: "the probe returned an empty vector".into(),
                });
            }
        }
        Ok(me)
    }

    /// The configuration (without the key).
    pub fn config(&self) -> &OpenAiEmbedderConfig {
        &self.config
    }

    fn post(&self, body: &Value) -> Result<Value> {
        self.policy
            .run_blocking(&self.label, "embedding request", |attempts| {
                self.attempt(body, attempts)
            })
    }

    /// One POST of `body`: the parsed answer, or why it failed.
    fn attempt(&self, body: &Value, attempts: u32) -> std::result::Result<Value, Failure> {
        let sent = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .json(body)
            .send();
        let resp =
            sent.map_err(|e| Failure::new(send_error(&e, &self.label, self.timeout, attempts)))?;
        let status = resp.status();
        let retry_after = parse_retry_after(resp.headers());
        match read_capped_blocking(resp, MAX_EMBEDDING_RESPONSE_BYTES) {
            Err(e) => Err(Failure::new(LlmError::Transient {
                provider: self.label.clone(),
                status: Some(status.as_u16()),
                attempts,
                message: format!("reading the answer failed: {e}"),
            })),
            Ok(body) if body.cut && status.is_success() => Err(Failure::new(LlmError::TooLarge {
                provider: self.label.clone(),
                limit: MAX_EMBEDDING_RESPONSE_BYTES,
            })),
            Ok(CappedBody { text, .. }) if status.is_success() => serde_json::from_str(&text)
                .map_err(|e| {
                    Failure::new(LlmError::Decode {
                        provider: self.label.clone(),
                        message: format!("HTTP {status} with a body that is not JSON ({e})"),
                    })
                }),
            Ok(CappedBody { text, .. }) => {
                let cx = FailureContext {
                    provider: &self.label,
                    url: &self.url,
                    key_env: &self.config.api_key_env,
                    attempts,
                    retry_after,
                    tool_choice_forced: false,
                };
                Err(Failure {
                    error: classify(Some(status.as_u16()), &text, &cx),
                    retry_after,
                })
            }
        }
    }

    /// One request for `texts`; vectors in input order, normalised.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let body = json!({"model": self.config.model, "input": texts});
        let v = self.post(&body)?;
        let decode = |message: String| LlmError::Decode {
            provider: self.label.clone(),
            message,
        };
        let data = v
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| decode(format!("no `data` array in the answer: {}", short(&v))))?;
        if data.len() != texts.len() {
            return Err(decode(format!(
                "{} vectors for {} inputs",
                data.len(),
                texts.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in data.iter().enumerate() {
            let index = match item.get("index") {
                None => pos,
                Some(i) => i
                    .as_u64()
                    .and_then(|i| usize::try_from(i).ok())
                    .ok_or_else(|| decode(format!("item {pos} has a bad `index`: {}", short(i))))?,
            };
            let slot = out.get_mut(index).ok_or_else(|| {
                decode(format!(
                    "`index` {index} out of range for {} inputs",
                    texts.len()
                ))
            })?;
            if slot.is_some() {
                return Err(decode(format!("`index` {index} appears twice")));
            }
            let raw = item
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| {
                    decode(format!(
                        "item {pos} has no `embedding` array (base64 encoding is not supported)"
                    ))
                })?;
            let mut vec = Vec::with_capacity(raw.len());
            for x in raw {
                let f = x.as_f64().ok_or_else(|| {
                    decode(format!("item {pos} holds a non-number: {}", short(x)))
                })?;
                vec.push(f as f32);
            }
            if vec.iter().any(|x| !x.is_finite()) {
                return Err(decode(format!("item {pos} holds a non-finite number")));
            }
            if self.dims != 0 && vec.len() != self.dims {
                return Err(decode(format!(
                    "vector of {} dimensions where {} were expected: check `dims` and the model",
                    vec.len(),
                    self.dims
                )));
            }
            let norm = vec.iter().map(|x| x * x).sum::<f32>().sqrt();
            // A zero vector stays zero rather than becoming NaN.
            if norm > 0.0 {
                for x in &mut vec {
                    *x /= norm;
                }
            }
            *slot = Some(vec);
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| v.ok_or_else(|| decode(format!("no vector for input {i}"))))
            .collect()
    }
}

fn to_embed_error(e: LlmError) -> EmbedError {
    match e {
        LlmError::Timeout { .. } => EmbedError::Timeout(e.to_string()),
        LlmError::Config(m) => EmbedError::Unavailable(m),
        LlmError::Auth { status, .. } | LlmError::BadRequest { status, .. } => {
            EmbedError::Provider {
                status: Some(status),
                message: e.to_string(),
            }
        }
        LlmError::ContextOverflow { status, .. } | LlmError::Transient { status, .. } => {
            EmbedError::Provider {
                status,
                message: e.to_string(),
            }
        }
        LlmError::RateLimit { .. } => EmbedError::Provider {
            status: Some(429),
            message: e.to_string(),
        },
        LlmError::ToolChoiceUnsupported { .. }
        | LlmError::Decode { .. }
        | LlmError::TooLarge { .. } => EmbedError::Provider {
            status: None,
            message: e.to_string(),
        },
    }
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> EmbedderId {
        EmbedderId {
            provider: "openai".into(),
            model: self.config.model.clone(),
            provider_key: self.config.provider_key(),
        }
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn max_batch(&self) -> usize {
        self.config.max_batch.max(1)
    }

    fn max_input_tokens(&self) -> Option<usize> {
        self.config.max_input_tokens
    }

    /// Embeds `texts` in batches; the kind is ignored (OpenAI-compatible
    /// models embed queries and documents alike). A blank input is refused
    /// before any request ([`Embedder::embed`]'s contract; providers reject
    /// it anyway).
    fn embed(&self, texts: &[&str], _kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if let Some(i) = texts.iter().position(|t| t.trim().is_empty()) {
            return Err(EmbedError::Invalid(format!(
                "input {i} is blank: a blank text has nothing to embed (and providers refuse it), so leave it out before embedding"
            )));
        }
        let mut out = Vec::with_capacity(texts.len());
        for range in plan_batches(texts, self.config.max_batch, self.config.max_batch_tokens) {
            out.extend(self.embed_batch(&texts[range]).map_err(to_embed_error)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_count_and_tokens() {
        let texts = ["a"; 10];
        assert_eq!(plan_batches(&texts, 4, 1000), vec![0..4, 4..8, 8..10]);
        let long = "x".repeat(40); // 10 tokens
        let texts = [long.as_str(), "a", long.as_str(), long.as_str()];
        assert_eq!(plan_batches(&texts, 10, 12), vec![0..2, 2..3, 3..4]);
        let huge = "y".repeat(400);
        assert_eq!(
            plan_batches(&[huge.as_str(), "a"], 10, 12),
            vec![0..1, 1..2]
        );
        assert!(plan_batches(&[], 4, 10).is_empty());
    }

    #[test]
    fn token_estimate_counts_cjk() {
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("你好"), 2);
        assert_eq!(estimate_tokens(""), 1);
    }

    #[test]
    fn provider_key_ignores_secrets() {
        let mut a = OpenAiEmbedderConfig::new("http://h/v1", "m");
        let base = a.provider_key();
        a.headers.insert("Authorization".into(), "Bearer x".into());
        a.headers.insert("X-Api-Key".into(), "k".into());
        assert_eq!(a.provider_key(), base);
        a.headers.insert("X-Region".into(), "eu".into());
        assert_ne!(a.provider_key(), base);
        let b = OpenAiEmbedderConfig::new("http://h/v1/", "m");
        assert_eq!(b.provider_key(), base);
        assert_eq!(base.len(), 64);
    }
}
