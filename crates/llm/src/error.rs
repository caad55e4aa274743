//! The crate's error type, its classification into [`ErrorKind`] and the
//! recognition of provider error texts (context overflow, unsupported
//! `tool_choice`).

use std::time::Duration;

use mnemo_core::{Coded, ErrorCode};
use serde_json::Value;

/// Result alias of this crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// What kind of failure an [`LlmError`] is, so the engine can react
/// without matching on texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The prompt does not fit the context window: compact and retry.
    ContextOverflow,
    /// A forced `tool_choice` was refused: retry once with `ToolChoice::Auto`.
    ToolChoiceUnsupported,
    /// The key was refused: fix the configuration.
    Auth,
    /// Rate limited, still after the client's own retries.
    RateLimit,
    /// Server error or connection failure, still after retries.
    Transient,
    /// No answer in time, still after retries.
    Timeout,
    /// The provider rejected the request for another reason.
    BadRequest,
    /// The answer could not be understood.
    Decode,
    /// The provider configuration is missing or wrong.
    Config,
}

/// Errors of the model providers.
///
/// The HTTP clients already retry (exponential backoff with jitter,
/// honouring `Retry-After`) on 429, 5xx, connection errors and timeouts;
/// an error of those kinds means the retries ran out.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// Missing or invalid configuration (no model, no key, bad URL). Never
    /// retried: the message names the setting to fix.
    #[error("{0}")]
    Config(String),
    /// The prompt is longer than the model's context window (OpenAI
    /// `context_length_exceeded`, Anthropic "prompt is too long", …). Not
    /// retried as is: the engine compacts the history and sends a shorter
    /// prompt.
    #[error("{provider}: the prompt does not fit the model's context window{}: {message}", status_suffix(*status))]
    ContextOverflow {
        /// Provider and model.
        provider: String,
        /// HTTP status, when there was one.
        status: Option<u16>,
        /// What the provider said.
        message: String,
    },
    /// The provider refused a forced `tool_choice` (some OpenAI-compatible
    /// services accept only `none` and `auto`). Not retried by the client:
    /// the engine retries once with `ToolChoice::Auto`.
    #[error("{provider}: the provider does not support this tool_choice{}: {message}; retry with tool_choice auto", status_suffix(*status))]
    ToolChoiceUnsupported {
        /// Provider and model.
        provider: String,
        /// HTTP status, when there was one (None for a 200 answer with
        /// `finish_reason: "error"`).
        status: Option<u16>,
        /// What the provider said.
        message: String,
    },
    /// HTTP 401/403: the key was refused. Not retried.
    #[error("{provider}: authentication failed (HTTP {status}): {message}; check the API key in ${key_env} (or `api_key` in mnemo.toml)")]
    Auth {
        /// Provider and model.
        provider: String,
        /// HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
        /// The environment variable the key is read from.
        key_env: String,
    },
    /// HTTP 429 on every attempt. The caller may try again later.
    #[error("{provider}: rate limited (HTTP 429) after {attempts} attempts: {message}; wait and retry, or raise max_retries")]
    RateLimit {
        /// Provider and model.
        provider: String,
        /// Requests made.
        attempts: u32,
        /// What the provider said.
        message: String,
        /// The provider's last `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// 5xx answers or connection failures on every attempt. The caller may
    /// try again later.
    #[error("{provider}: the provider failed{} after {attempts} attempts: {message}", status_suffix(*status))]
    Transient {
        /// Provider and model.
        provider: String,
        /// HTTP status of the last answer, None for a connection failure.
        status: Option<u16>,
        /// Requests made.
        attempts: u32,
        /// What went wrong last.
        message: String,
    },
    /// No answer within the timeout on every attempt.
    #[error("{provider}: no answer within {timeout:?} after {attempts} attempts; raise timeout_secs in the provider configuration or check that the server is up")]
    Timeout {
        /// Provider and model.
        provider: String,
        /// The per-request timeout.
        timeout: Duration,
        /// Requests made.
        attempts: u32,
    },
    /// Any other 4xx: the request was rejected. Not retried: the message
    /// says what the provider disliked.
    #[error("{provider}: the request was rejected (HTTP {status}): {message}")]
    BadRequest {
        /// Provider and model.
        provider: String,
        /// HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// The answer was not a valid response of the protocol. Not retried.
    #[error("{provider}: cannot understand the answer: {message}")]
    Decode {
        /// Provider and model.
        provider: String,
        /// What is wrong with it.
        message: String,
    },
    /// The answer was longer than the configured cap; reading stopped there
    /// and the answer was refused. Not retried (the same request would cost
    /// the same again).
    #[error("{provider}: the answer is over {limit} bytes, so reading stopped there and it was refused (a model that ran on, or a wrong endpoint); ask for fewer tokens (max_output), or raise max_response_bytes in the provider configuration")]
    TooLarge {
        /// Provider and model.
        provider: String,
        /// The cap, in bytes.
        limit: u64,
    },
}

fn status_suffix(status: Option<u16>) -> String {
    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
}

impl LlmError {
    /// The classification the engine reacts to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            LlmError::Config(_) => ErrorKind::Config,
            LlmError::ContextOverflow { .. } => ErrorKind::ContextOverflow,
            LlmError::ToolChoiceUnsupported { .. } => ErrorKind::ToolChoiceUnsupported,
            LlmError::Auth { .. } => ErrorKind::Auth,
            LlmError::RateLimit { .. } => ErrorKind::RateLimit,
            LlmError::Transient { .. } => ErrorKind::Transient,
            LlmError::Timeout { .. } => ErrorKind::Timeout,
            LlmError::BadRequest { .. } => ErrorKind::BadRequest,
            LlmError::Decode { .. } | LlmError::TooLarge { .. } => ErrorKind::Decode,
        }
    }

    /// True for the kinds the HTTP clients retry (rate limit, server and
    /// connection errors, timeouts).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::RateLimit | ErrorKind::Transient | ErrorKind::Timeout
        )
    }
}

impl Coded for LlmError {
    /// The wire-visible error code.
    fn code(&self) -> ErrorCode {
        match self {
            LlmError::Config(_) | LlmError::Auth { .. } => ErrorCode::Config,
            _ => ErrorCode::Provider,
        }
    }
}

impl From<mnemo_core::ConfigError> for LlmError {
    fn from(e: mnemo_core::ConfigError) -> Self {
        LlmError::Config(e.to_string())
    }
}

/// True when an error text says the prompt is longer than the context
/// window, in the wording of OpenAI, Anthropic, vLLM, Ollama, DashScope,
/// Gemini and similar services.
pub fn is_context_overflow_text(text: &str) -> bool {
    let t = text.to_lowercase();
    const MARKERS: &[&str] = &[
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "prompt too long",
        "exceeds the context",
        "exceed context limit",
        "context window",
        "input is too long",
        "input length exceeds",
        "range of input length",
        "too many tokens",
        "maximum number of tokens",
        "reduce the length of the messages",
    ];
    MARKERS.iter().any(|m| t.contains(m))
}

/// True when an error text says a `tool_choice` value is not supported,
/// as nanobot recognises it: the lower-cased text contains `tool_choice`,
/// `toolchoice`, `does not support` or `should be ["none", "auto"]`.
pub fn is_tool_choice_unsupported_text(text: &str) -> bool {
    let t = text.to_lowercase();
    t.contains("tool_choice")
        || t.contains("toolchoice")
        || t.contains("does not support")
        || t.contains(r#"should be ["none", "auto"]"#)
}

/// Context for classifying one failed exchange.
pub(crate) struct FailureContext<'a> {
    pub provider: &'a str,
    /// The URL that was called, for hints.
    pub url: &'a str,
    pub key_env: &'a str,
    pub attempts: u32,
    pub retry_after: Option<Duration>,
    /// The request forced a tool (`Required` or `Function`): only then is
    /// the broad "does not support" taken to be about `tool_choice`.
    pub tool_choice_forced: bool,
}

/// The provider's own message in an error body: `error.message`,
/// `message`, a string `error`, else the body itself (shortened).
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("message"),
            v.get("error").filter(|e| e.is_string()),
            v.get("detail"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str() {
                return s.to_string();
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_string();
    }
    let mut s: String = trimmed.chars().take(500).collect();
    if trimmed.chars().count() > 500 {
        s.push('…');
    }
    s
}

/// Classifies a failure. `status` is the HTTP status, or None for a 2xx
/// answer that reported an error (`finish_reason: "error"`); `body` is the
/// raw error text, searched for known phrases.
pub(crate) fn classify(status: Option<u16>, body: &str, cx: &FailureContext<'_>) -> LlmError {
    let provider = cx.provider.to_string();
    let message = error_message(body);
    let lower = body.to_lowercase();
    if is_context_overflow_text(body) {
        return LlmError::ContextOverflow {
            provider,
            status,
            message,
        };
    }
    match status {
        Some(s @ (401 | 403)) => {
            return LlmError::Auth {
                provider,
                status: s,
                message,
                key_env: cx.key_env.to_string(),
            };
        }
        Some(429) if lower.contains("insufficient_quota") => {
            return LlmError::BadRequest {
                provider,
                status: 429,
                message: format!(
                    "{message} (the account's quota is used up: check the plan and billing)"
                ),
            };
        }
        Some(429) => {
            return LlmError::RateLimit {
                provider,
                attempts: cx.attempts,
                message,
                retry_after: cx.retry_after,
            };
        }
        _ => {}
    }
    let client_side = status.is_none_or(|s| (400..500).contains(&s));
    let about_tool_choice = lower.contains("tool_choice")
        || lower.contains("toolchoice")
        || lower.contains(r#"should be ["none", "auto"]"#)
        || lower.contains(r#"should be [\"none\", \"auto\"]"#)
        || (cx.tool_choice_forced && is_tool_choice_unsupported_text(body));
    if client_side && about_tool_choice {
        return LlmError::ToolChoiceUnsupported {
            provider,
            status,
            message,
        };
    }
    match status {
        None | Some(408 | 409) => LlmError::Transient {
            provider,
            status,
            attempts: cx.attempts,
            message,
        },
        Some(s) if s >= 500 => LlmError::Transient {
            provider,
            status,
            attempts: cx.attempts,
            message,
        },
        Some(404) => LlmError::BadRequest {
            provider,
            status: 404,
            message: format!(
                "{message} (POST {} found nothing: check base_url, which for OpenAI-compatible servers usually ends in /v1, and the model name)",
                cx.url
            ),
        },
        Some(s) => LlmError::BadRequest {
            provider,
            status: s,
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> FailureContext<'static> {
        FailureContext {
            provider: "p",
            url: "http://h/v1/x",
            key_env: "K",
            attempts: 1,
            retry_after: None,
            tool_choice_forced: true,
        }
    }

    #[test]
    fn recognises_overflow_texts() {
        for t in [
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            "the input length exceeds the context length",
            "Range of input length should be [1, 30720]",
        ] {
            assert_eq!(
                classify(Some(400), t, &cx()).kind(),
                ErrorKind::ContextOverflow,
                "{t}"
            );
        }
        assert!(!is_context_overflow_text("max_tokens must be at most 4096"));
    }

    #[test]
    fn recognises_tool_choice_texts() {
        for t in [
            r#"{"error":{"message":"The tool_choice parameter should be [\"none\", \"auto\"]","type":"invalid_request_error"}}"#,
            "toolChoice is not supported",
            "This model does not support forced function calls",
        ] {
            assert_eq!(
                classify(Some(400), t, &cx()).kind(),
                ErrorKind::ToolChoiceUnsupported,
                "{t}"
            );
            assert_eq!(
                classify(None, t, &cx()).kind(),
                ErrorKind::ToolChoiceUnsupported,
                "{t}"
            );
        }
        let unforced = FailureContext {
            tool_choice_forced: false,
            ..cx()
        };
        assert_eq!(
            classify(Some(400), "this model does not support images", &unforced).kind(),
            ErrorKind::BadRequest
        );
        // A server error mentioning tool_choice is still a server error.
        assert_eq!(
            classify(Some(500), "tool_choice crashed", &cx()).kind(),
            ErrorKind::Transient
        );
    }

    #[test]
    fn classifies_by_status() {
        assert_eq!(classify(Some(401), "{}", &cx()).kind(), ErrorKind::Auth);
        assert_eq!(
            classify(Some(429), "{}", &cx()).kind(),
            ErrorKind::RateLimit
        );
        assert_eq!(
            classify(
                Some(429),
                r#"{"error":{"code":"insufficient_quota"}}"#,
                &cx()
            )
            .kind(),
            ErrorKind::BadRequest
        );
        assert_eq!(
            classify(Some(529), "overloaded", &cx()).kind(),
            ErrorKind::Transient
        );
        assert_eq!(
            classify(Some(404), "no such model", &cx()).kind(),
            ErrorKind::BadRequest
        );
        assert_eq!(
            classify(None, "something broke", &cx()).kind(),
            ErrorKind::Transient
        );
    }

    #[test]
    fn extracts_messages() {
        assert_eq!(error_message(r#"{"error":{"message":"m1"}}"#), "m1");
        assert_eq!(error_message(r#"{"code":"X","message":"m2"}"#), "m2");
        assert_eq!(error_message(r#"{"error":"m3"}"#), "m3");
        assert_eq!(error_message("  plain  "), "plain");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn auth_message_names_variable() {
        let e = classify(
            Some(401),
            r#"{"error":{"message":"bad key"}}"#,
            &FailureContext {
                key_env: "OPENAI_API_KEY",
                ..cx()
            },
        );
        assert!(e.to_string().contains("$OPENAI_API_KEY"), "{e}");
        assert_eq!(e.code(), ErrorCode::Config);
    }
}
