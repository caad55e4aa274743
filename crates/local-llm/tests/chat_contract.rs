//! The `ChatModel` behaviour contracts (mnemo-test-support's
//! `chat_contract_suite!`, the same the remote clients keep in
//! crates/llm/tests) on the local provider with the real
//! SmolLM2-135M-Instruct GGUF: one load per contract, with a window of
//! 2,048 tokens (the overflow contract sends twice as many words).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use mnemo_test_support::conformance::chat_contract::ChatCase;

/// SmolLM2 ignores tool instructions: only constrained decoding makes its
/// forced calls valid, which is what the tool contracts check.
fn smollm2_case() -> ChatCase {
    ChatCase::in_process(common::smollm2(2048))
}

mnemo_test_support::chat_contract_suite!(smollm2, super::smollm2_case);
