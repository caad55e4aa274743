//! Providers as configuration data: [`ProviderConfig`] (the `[provider]`
//! and `[providers.NAME]` sections of mnemo.toml), its resolution with flag
//! and environment overrides, and [`build_chat_model`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::anthropic::AnthropicChat;
use crate::chat::{ChatModel, ModelInfo};
use crate::error::{LlmError, Result};
use crate::openai::OpenAiChat;
use crate::retry::RetryPolicy;
use crate::transport::{header_map, Transport};

/// The wire protocol of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI chat completions: OpenAI, Ollama, vLLM, DeepSeek, DashScope,
    /// OpenRouter, LM Studio, …
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// A GGUF model run inside the process (`mnemo-local-llm`): no
    /// endpoint, no key.
    Local,
}

impl ProviderKind {
    /// `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Local => "local",
        }
    }

    /// The public endpoint of the provider.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Local => "",
        }
    }

    /// The variable the key is read from by default.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Local => "",
        }
    }

    /// Default context window in tokens.
    pub fn default_context_window(self) -> u32 {
        match self {
            ProviderKind::OpenAi => 128_000,
            ProviderKind::Anthropic => 200_000,
            ProviderKind::Local => DEFAULT_LOCAL_CONTEXT,
        }
    }

    /// Default output cap in tokens.
    pub fn default_max_output(self) -> u32 {
        match self {
            ProviderKind::Local => DEFAULT_LOCAL_MAX_OUTPUT,
            _ => 8_192,
        }
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "openai" => Ok(ProviderKind::OpenAi),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "local" => Ok(ProviderKind::Local),
            other => Err(LlmError::Config(format!(
                "unknown provider kind `{other}`: use `openai` (any OpenAI-compatible server), `anthropic`, or `local` (a GGUF model run by mnemo)"
            ))),
        }
    }
}

/// Context window of a local model unless configured: its KV cache grows
/// with it, and two cores read a longer prompt slowly.
pub const DEFAULT_LOCAL_CONTEXT: u32 = 8_192;
/// Output cap of a local model unless configured.
pub const DEFAULT_LOCAL_MAX_OUTPUT: u32 = 1_024;

/// Default request timeout.
pub const DEFAULT_TIMEOUT_SECS: f64 = 120.0;
/// Default number of retries after the first attempt.
pub const DEFAULT_MAX_RETRIES: u32 = 3;
/// Default wait before the first retry, in milliseconds.
pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 500;
/// Default cap of an answer read from a provider: 8 MiB, half the session
/// log's line limit.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;
/// Longest per-request timeout; larger `timeout_secs` values mean this.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// A chat provider, as configured.
///
/// In mnemo.toml, `[provider]` is the default provider and
/// `[providers.NAME]` are named ones; absent fields take the defaults of
/// the provider's `kind`:
///
/// ```toml
/// [provider]
/// kind = "openai"                        # or "anthropic"
/// base_url = "http://localhost:11434/v1" # includes /v1 for OpenAI-compatible servers
/// model = "qwen2.5:7b"
/// api_key_env = "OPENAI_API_KEY"         # variable holding the key
/// context_window = 32768
/// timeout_secs = 120
/// max_retries = 3
/// headers = { "X-Title" = "mnemo" }
/// ```
///
/// A local model (`kind = "local"`) needs no endpoint and no key:
///
/// ```toml
/// [provider]
/// kind = "local"
/// model = "qwen2.5-coder-1.5b-instruct-q4_k_m"   # a known model, fetched once
/// # path = "/models/my-model.gguf"              # or any Qwen2/Llama GGUF
/// # download = false                            # never fetch
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "RawProvider")]
pub struct ProviderConfig {
    /// Wire protocol.
    pub kind: ProviderKind,
    /// Endpoint: `https://api.openai.com/v1` (OpenAI-compatible, with
    /// `/v1`) or `https://api.anthropic.com` (Anthropic, without).
    pub base_url: String,
    /// Name of the environment variable holding the key.
    pub api_key_env: String,
    /// The key itself; takes precedence over `api_key_env`. Never
    /// serialised.
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// Model name as the provider knows it.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u32,
    /// Largest output in tokens (also Anthropic's default `max_tokens`).
    pub max_output: u32,
    /// Extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Per-request timeout in seconds (fractions allowed).
    pub timeout_secs: f64,
    /// Retries after the first attempt on 429, 5xx, connection errors and
    /// timeouts.
    pub max_retries: u32,
    /// Wait before the first retry in milliseconds, doubled each time
    /// (capped at 8 s, plus up to 20 % jitter).
    pub retry_backoff_ms: u64,
    /// Local models: the `.gguf` file to load (beats `model`).
    pub path: Option<String>,
    /// Local models: whether a known model missing from the cache may be
    /// downloaded.
    pub download: bool,
    /// Local models: the model cache (default: the Hugging Face cache).
    pub cache_dir: Option<String>,
    /// Largest answer read from the provider, in bytes; a longer one is cut
    /// off there and refused with an error (not retried). The default stays
    /// under the session log's line limit, so an answer that is read can be
    /// logged.
    pub max_response_bytes: u64,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("context_window", &self.context_window)
            .field("max_output", &self.max_output)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .field("path", &self.path)
            .field("download", &self.download)
            .field("cache_dir", &self.cache_dir)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl Default for ProviderConfig {
    fn default() -> Self {
        Self::new(ProviderKind::OpenAi, "")
    }
}

/// The keys of a `[provider]` (or `[providers.NAME]`) section, for
/// checking a `--set provider.KEY=…` before anything reads it.
pub const PROVIDER_KEYS: &[&str] = &[
    "kind",
    "base_url",
    "api_key_env",
    "api_key",
    "model",
    "context_window",
    "max_output",
    "headers",
    "timeout_secs",
    "max_retries",
    "retry_backoff_ms",
    "path",
    "download",
    "cache_dir",
    "max_response_bytes",
];

/// The file form: every field optional so that defaults can follow the
/// final `kind` after overrides.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    kind: Option<ProviderKind>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    context_window: Option<u32>,
    max_output: Option<u32>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    timeout_secs: Option<f64>,
    max_retries: Option<u32>,
    retry_backoff_ms: Option<u64>,
    path: Option<String>,
    download: Option<bool>,
    cache_dir: Option<String>,
    max_response_bytes: Option<u64>,
}

impl RawProvider {
    fn into_config(self, kind: ProviderKind) -> ProviderConfig {
        ProviderConfig {
            kind,
            base_url: self
                .base_url
                .unwrap_or_else(|| kind.default_base_url().to_string()),
            api_key_env: self
                .api_key_env
                .unwrap_or_else(|| kind.default_api_key_env().to_string()),
            api_key: self.api_key,
            model: self.model.unwrap_or_default(),
            context_window: self
                .context_window
                .unwrap_or_else(|| kind.default_context_window()),
            max_output: self.max_output.unwrap_or_else(|| kind.default_max_output()),
            headers: self.headers,
            timeout_secs: self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS),
            max_retries: self.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            retry_backoff_ms: self.retry_backoff_ms.unwrap_or(DEFAULT_RETRY_BACKOFF_MS),
            path: self.path,
            download: self.download.unwrap_or(true),
            cache_dir: self.cache_dir,
            max_response_bytes: self
                .max_response_bytes
                .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES),
        }
    }
}

impl From<RawProvider> for ProviderConfig {
    fn from(raw: RawProvider) -> Self {
        let kind = raw.kind.unwrap_or(ProviderKind::OpenAi);
        raw.into_config(kind)
    }
}

/// Overrides given on the command line (`--provider`, `--base-url`,
/// `--model`). They beat the `MNEMO_*` variables, which beat the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderOverrides {
    /// `--provider`: `openai` or `anthropic` (or the name of a
    /// `[providers.NAME]` section).
    pub provider: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
}

/// Variables read by [`ProviderConfig::resolve`].
pub const ENV_PROVIDER: &str = "MNEMO_PROVIDER";
/// See [`ENV_PROVIDER`].
pub const ENV_BASE_URL: &str = "MNEMO_BASE_URL";
/// See [`ENV_PROVIDER`].
pub const ENV_MODEL: &str = "MNEMO_MODEL";
/// See [`ENV_PROVIDER`].
pub const ENV_API_KEY: &str = "MNEMO_API_KEY";

impl ProviderConfig {
    /// The defaults of `kind` with this model.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        let mut c = RawProvider::default().into_config(kind);
        c.model = model.into();
        c
    }

    /// An OpenAI-compatible provider at `base_url` (including `/v1`).
    pub fn openai(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let mut c = Self::new(ProviderKind::OpenAi, model);
        c.base_url = base_url.into();
        c
    }

    /// An Anthropic provider at `base_url` (without `/v1`).
    pub fn anthropic(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let mut c = Self::new(ProviderKind::Anthropic, model);
        c.base_url = base_url.into();
        c
    }

    /// The per-request timeout: `timeout_secs`, at most [`MAX_TIMEOUT`];
    /// the default for zero, negative or non-finite values.
    pub fn timeout(&self) -> Duration {
        crate::retry::seconds(self.timeout_secs, MAX_TIMEOUT)
            .filter(|d| !d.is_zero())
            .unwrap_or(Duration::from_secs(DEFAULT_TIMEOUT_SECS as u64))
    }

    /// The HTTP transport for `url` with this provider's headers, timeout,
    /// retries and key variable, plus the protocol's own `fixed` headers.
    pub(crate) fn transport(&self, url: String, fixed: &[(&str, String)]) -> Result<Transport> {
        let headers = header_map(fixed, &self.headers)?;
        Transport::new(
            url,
            headers,
            self.timeout(),
            RetryPolicy::new(self.max_retries, self.retry_backoff_ms),
            self.label(),
            self.api_key_env.clone(),
            self.max_response_bytes,
        )
    }

    /// What a client built from this config reports about its model.
    pub(crate) fn model_info(&self, provider: &str) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            model: self.model.clone(),
            context_window: self.context_window,
            max_output: self.max_output,
        }
    }

    /// A short label for messages: `openai model gpt-4o at https://…`.
    pub fn label(&self) -> String {
        match self.kind {
            ProviderKind::Local => format!(
                "local model `{}`",
                self.path.as_deref().unwrap_or(&self.model)
            ),
            _ => format!("{} model `{}` at {}", self.kind, self.model, self.base_url),
        }
    }

    /// Resolves the provider to use.
    ///
    /// `name` picks `[providers.NAME]`, else `[provider]` is used. Then, per
    /// field, a flag beats the environment (`MNEMO_PROVIDER`,
    /// `MNEMO_BASE_URL`, `MNEMO_MODEL`, `MNEMO_API_KEY`), which beats the
    /// file, which beats the defaults of the final kind. When a flag or
    /// variable switches the kind away from the file's, the file's
    /// kind-specific fields (base_url, key, model, limits) are dropped so an
    /// OpenAI endpoint is never called with the Anthropic protocol.
    ///
    /// The key is taken from `MNEMO_API_KEY`, else `api_key`, else the
    /// variable named by `api_key_env`. A missing key is an error unless the
    /// endpoint is on the loopback interface (a local server).
    pub fn resolve(
        config: &mnemo_core::Config,
        name: Option<&str>,
        overrides: &ProviderOverrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ProviderConfig> {
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let flag = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());

        let named: BTreeMap<String, RawProvider> = config.section("providers")?;
        let mut kind_override = None;
        let mut name = name.map(str::to_string);
        if let Some(p) = flag(&overrides.provider).or_else(|| env(ENV_PROVIDER)) {
            match p.parse::<ProviderKind>() {
                Ok(k) => kind_override = Some(k),
                Err(_) if name.is_none() && named.contains_key(&p) => name = Some(p),
                Err(_) => {
                    return Err(LlmError::Config(format!(
                        "unknown provider `{p}`: use `openai`, `anthropic` or `local`{}",
                        known_names(&named)
                    )));
                }
            }
        }
        let mut raw = match &name {
            None => config.section::<RawProvider>("provider")?,
            Some(n) => named.get(n).cloned().ok_or_else(|| {
                LlmError::Config(format!(
                    "no [providers.{n}] section in mnemo.toml{}",
                    known_names(&named)
                ))
            })?,
        };
        let file_kind = raw.kind.unwrap_or(ProviderKind::OpenAi);
        let kind = kind_override.unwrap_or(file_kind);
        if kind != file_kind {
            tracing::debug!(from = %file_kind, to = %kind, "provider kind overridden; ignoring the file's endpoint, key and model");
            raw.base_url = None;
            raw.api_key_env = None;
            raw.api_key = None;
            raw.model = None;
            raw.context_window = None;
            raw.max_output = None;
            raw.path = None;
        }
        if let Some(u) = flag(&overrides.base_url).or_else(|| env(ENV_BASE_URL)) {
            raw.base_url = Some(u);
        }
        if let Some(m) = flag(&overrides.model).or_else(|| env(ENV_MODEL)) {
            raw.model = Some(m);
        }
        let mut cfg = raw.into_config(kind);
        if let Some(k) = env(ENV_API_KEY) {
            cfg.api_key = Some(k);
        } else if cfg.api_key.as_deref().is_none_or(|k| k.trim().is_empty()) {
            cfg.api_key = env(&cfg.api_key_env);
        }
        cfg.validate(&|k| env(k))?;
        Ok(cfg)
    }

    /// Checks the configuration: a model, an http(s) URL, sane limits, and
    /// a key unless the endpoint is local. `env` looks up `api_key_env`
    /// when `api_key` is not set.
    pub fn validate(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<()> {
        if self.kind == ProviderKind::Local {
            // No endpoint and no key; an empty model means the default one.
            if self.context_window == 0 || self.max_output == 0 {
                return Err(LlmError::Config(
                    "context_window and max_output must be positive".into(),
                ));
            }
            return Ok(());
        }
        if self.model.trim().is_empty() {
            return Err(LlmError::Config(format!(
                "no model configured for the {} provider: set `model` under [provider] in mnemo.toml, pass --model, or set {ENV_MODEL}",
                self.kind
            )));
        }
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| {
            LlmError::Config(format!(
                "base_url `{}` is not a valid URL ({e}): use for example {}",
                self.base_url,
                self.kind.default_base_url()
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(LlmError::Config(format!(
                "base_url `{}` must start with http:// or https://",
                self.base_url
            )));
        }
        if self.context_window == 0 || self.max_output == 0 {
            return Err(LlmError::Config(
                "context_window and max_output must be positive".into(),
            ));
        }
        if self.api_key(env).is_none() && !is_loopback(&self.base_url) {
            return Err(LlmError::Config(format!(
                "no API key for the {} provider at {}: set the environment variable {} (or {ENV_API_KEY}, or `api_key_env` / `api_key` in the provider section of mnemo.toml)",
                self.kind, self.base_url, self.api_key_env
            )));
        }
        Ok(())
    }

    /// The key: `api_key`, else the variable `api_key_env` looked up with `env`.
    pub fn api_key(&self, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
        self.api_key
            .clone()
            .filter(|k| !k.trim().is_empty())
            .or_else(|| env(&self.api_key_env).filter(|k| !k.trim().is_empty()))
    }
}

fn known_names(named: &BTreeMap<String, RawProvider>) -> String {
    if named.is_empty() {
        String::new()
    } else {
        format!(
            " (named providers in mnemo.toml: {})",
            named.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    }
}

/// Reads a process environment variable (the default key lookup).
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// True when `base_url` points at this machine (`localhost`, 127.0.0.0/8,
/// `::1`): local servers such as Ollama need no key.
pub fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Builds the chat client for a provider. The key is `api_key`, else the
/// process environment variable `api_key_env`.
///
/// A local provider is not built here (this crate stays free of the model
/// runtime): `mnemo::build_chat_model` builds every kind.
pub fn build_chat_model(config: &ProviderConfig) -> Result<Arc<dyn ChatModel>> {
    Ok(match config.kind {
        ProviderKind::OpenAi => Arc::new(OpenAiChat::new(config)?),
        ProviderKind::Anthropic => Arc::new(AnthropicChat::new(config)?),
        ProviderKind::Local => {
            return Err(LlmError::Config(
                "a local model is built by mnemo::build_chat_model (crate mnemo-local-llm), not by mnemo_llm".into(),
            ))
        }
    })
}
