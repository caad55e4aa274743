//! Remote model providers of mnemo: the [`ChatModel`] seam with clients for
//! OpenAI-compatible chat completions ([`OpenAiChat`]) and Anthropic
//! Messages ([`AnthropicChat`]), providers as configuration data
//! ([`ProviderConfig`]), error classification ([`ErrorKind`]) and an
//! OpenAI-compatible embeddings client ([`OpenAiEmbedder`]).
//!
//! Every client retries 429, 5xx, connection failures and timeouts with
//! exponential backoff and jitter (honouring `Retry-After`) before it
//! reports an error.
//!
//! ```
//! use mnemo_core::Message;
//! use mnemo_llm::{build_chat_model, ChatRequest, ErrorKind, ProviderConfig, ToolChoice, ToolSpec};
//! use mnemo_test_support::{Reply, ScriptedServer};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let server = ScriptedServer::start().await;
//! server.push(Reply::tool_call("save_memory", json!({"history_entry": "[2026-01-01 10:00] hi"})));
//!
//! // Loopback servers need no key; remote ones read `api_key_env`.
//! let model = build_chat_model(&ProviderConfig::openai(server.openai_base(), "some-model"))?;
//! let tool = ToolSpec::new("save_memory", "Save memory.", json!({"type": "object"}));
//! let req = ChatRequest::new(vec![Message::user("hi")])
//!     .with_tools(vec![tool])
//!     .with_tool_choice(ToolChoice::Function("save_memory".into()));
//! match model.complete(req).await {
//!     Ok(resp) => assert_eq!(resp.tool_calls()[0].function.name, "save_memory"),
//!     // The engine's reaction to a refused forced tool: retry with Auto.
//!     Err(e) if e.kind() == ErrorKind::ToolChoiceUnsupported => unreachable!(),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), mnemo_llm::LlmError>(())
//! # }).unwrap();
//! ```
#![forbid(unsafe_code)]
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
    BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelActivity, ModelInfo, ToolChoice,
    ToolSpec, Usage,
};
pub use embeddings::{OpenAiEmbedder, OpenAiEmbedderConfig};
pub use error::{
    is_context_overflow_text, is_tool_choice_unsupported_text, ErrorKind, LlmError, Result,
};
pub use openai::OpenAiChat;
pub use provider::{
    build_chat_model, is_loopback, ProviderConfig, ProviderKind, ProviderOverrides,
    DEFAULT_LOCAL_CONTEXT, DEFAULT_LOCAL_MAX_OUTPUT, DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BACKOFF_MS, DEFAULT_TIMEOUT_SECS, ENV_API_KEY, ENV_BASE_URL,
    ENV_MODEL, ENV_PROVIDER, MAX_TIMEOUT, PROVIDER_KEYS,
};
