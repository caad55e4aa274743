//! The `ChatModel` behaviour contracts (mnemo-test-support's
//! `chat_contract_suite!`) on this crate's clients, each against a
//! scripted server of its own on loopback that answers in its provider's
//! wire shape: the checks are on the client's mapping of the wire to
//! mnemo's types (usage, tool calls, the context-overflow error). The same
//! contracts run on the local model in crates/local-llm/tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_llm::{AnthropicChat, OpenAiChat, ProviderConfig};
use mnemo_test_support::conformance::chat_contract::{ChatCase, Protocol};
use mnemo_test_support::ScriptedServer;

/// A small window, so the overflow contract's prompt stays small; fast
/// retries, so a wrongly retried request shows without a wait.
fn configure(mut c: ProviderConfig) -> ProviderConfig {
    c.context_window = 2048;
    c.max_retries = 2;
    c.retry_backoff_ms = 1;
    c.timeout_secs = 30.0;
    c
}

fn openai_case() -> ChatCase {
    let server = ScriptedServer::start_blocking();
    let config = configure(ProviderConfig::openai(server.openai_base(), "test-model"));
    ChatCase::over_wire(
        OpenAiChat::new(&config).unwrap(),
        server,
        Protocol::OpenAiChat,
    )
}

fn anthropic_case() -> ChatCase {
    let server = ScriptedServer::start_blocking();
    let config = configure(ProviderConfig::anthropic(server.url(), "claude-test"));
    ChatCase::over_wire(
        AnthropicChat::new(&config).unwrap(),
        server,
        Protocol::AnthropicMessages,
    )
}

mnemo_test_support::chat_contract_suite!(openai, super::openai_case);
mnemo_test_support::chat_contract_suite!(anthropic, super::anthropic_case);
