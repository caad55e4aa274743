//! Remote model providers of mnemo: the [`ChatModel`] seam with clients for
//! OpenAI-compatible chat completions ([`OpenAiChat`]) and Anthropic
//! Messages ([`AnthropicChat`]), providers as configuration data
//! ([`ProviderConfig`]), error classification ([`ErrorKind`]) and an
//! OpenAI-compatible embeddings client ([`OpenAiEmbedder`]).
//!
//! Every client retries 429, 5xx, connection failures and timeouts with
//! exponential backoff and jitter (honouring `Retry-After`) before it
//! reports an error.
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod anthropic;
mod chat;
mod embeddings;
mod error;
mod openai;
mod provider;
mod retry;
mod transport;

pub use anthropic::{AnthropicChat, ANTHROPIC_VERSION};
pub use chat::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelInfo, ToolChoice, ToolSpec, Usage,
};
pub use embeddings::{OpenAiEmbedder, OpenAiEmbedderConfig};
pub use error::{
    is_context_overflow_text, is_tool_choice_unsupported_text, ErrorKind, LlmError, Result,
};
pub use openai::OpenAiChat;
pub use provider::{
    build_chat_model, is_loopback, ProviderConfig, ProviderKind, ProviderOverrides,
    DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF_MS, DEFAULT_TIMEOUT_SECS, ENV_API_KEY, ENV_BASE_URL,
    ENV_MODEL, ENV_PROVIDER,
};
