//! The `ChatModel` conformance suite (mnemo-test-support) on the write-path
//! eval's counting wrapper around the OpenAI-compatible client, against the
//! scripted server on loopback: counting must change nothing of what the
//! model answers or how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_eval::write_path::Counting;
use mnemo_llm::{ChatModel, LlmError, OpenAiChat, ProviderConfig};
use mnemo_test_support::conformance::chat::ChatTarget;

fn counting(t: &ChatTarget) -> Result<Box<dyn ChatModel>, LlmError> {
    let mut c = ProviderConfig::openai(format!("{}/v1", t.base_url), "test-model");
    c.timeout_secs = t.timeout_secs;
    c.max_retries = t.max_retries;
    c.retry_backoff_ms = t.retry_backoff_ms;
    c.api_key.clone_from(&t.api_key);
    c.api_key_env.clone_from(&t.api_key_env);
    let inner: Arc<dyn ChatModel> = Arc::new(OpenAiChat::new(&c)?);
    Ok(Box::new(Counting::new(inner)))
}

mnemo_test_support::chat_model_suite!(counting, super::counting);
