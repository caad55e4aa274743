//! The conformance suites (mnemo-test-support) on this crate's clients,
//! against the scripted server on loopback: the `ChatModel` suite on the
//! OpenAI-compatible and the Anthropic clients, the `Embedder` suite on the
//! OpenAI-compatible embedder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Embedder;
use mnemo_llm::{
    AnthropicChat, ChatModel, LlmError, OpenAiChat, OpenAiEmbedder, OpenAiEmbedderConfig,
    ProviderConfig,
};
use mnemo_test_support::conformance::chat::ChatTarget;
use mnemo_test_support::conformance::embedder::{EmbedderCase, Kinds};
use mnemo_test_support::ScriptedServer;

/// The target's settings on a provider configuration.
fn configure(mut c: ProviderConfig, t: &ChatTarget) -> ProviderConfig {
    c.timeout_secs = t.timeout_secs;
    c.max_retries = t.max_retries;
    c.retry_backoff_ms = t.retry_backoff_ms;
    c.api_key.clone_from(&t.api_key);
    c.api_key_env.clone_from(&t.api_key_env);
    c
}

fn openai(t: &ChatTarget) -> Result<Box<dyn ChatModel>, LlmError> {
    let c = configure(
        ProviderConfig::openai(format!("{}/v1", t.base_url), "test-model"),
        t,
    );
    Ok(Box::new(OpenAiChat::new(&c)?))
}

fn anthropic(t: &ChatTarget) -> Result<Box<dyn ChatModel>, LlmError> {
    let c = configure(
        ProviderConfig::anthropic(t.base_url.clone(), "claude-test"),
        t,
    );
    Ok(Box::new(AnthropicChat::new(&c)?))
}

mnemo_test_support::chat_model_suite!(openai, super::openai);
mnemo_test_support::chat_model_suite!(anthropic, super::anthropic);

/// The embedder on a server of its own, kept alive by the case; batches
/// of four, so that the suite's large batch takes several requests.
fn openai_embedder() -> EmbedderCase {
    let server = ScriptedServer::start_blocking();
    let mut config = OpenAiEmbedderConfig::new(server.openai_base(), "test-embedding");
    config.max_batch = 4;
    config.retry_backoff_ms = 1;
    let embedder = OpenAiEmbedder::new(config).unwrap();
    assert_eq!(embedder.max_batch(), 4);
    EmbedderCase::new(embedder, Kinds::Same).keeping(server)
}

mnemo_test_support::embedder_suite!(openai_compatible, super::openai_embedder);

/// A blank text is refused before any request: the server sees nothing.
#[test]
fn blank_text_sends_no_request() {
    let server = ScriptedServer::start_blocking();
    let mut config = OpenAiEmbedderConfig::new(server.openai_base(), "test-embedding");
    config.dims = Some(64);
    let embedder = OpenAiEmbedder::new(config).unwrap();
    let err = embedder
        .embed(&["fine", "  "], mnemo_core::EmbedKind::Document)
        .unwrap_err();
    assert!(matches!(err, mnemo_core::EmbedError::Invalid(_)), "{err}");
    assert_eq!(server.request_count(), 0);
}
