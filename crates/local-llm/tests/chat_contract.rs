//! The `ChatModel` contracts (see `common`) run on the local provider with
//! the real SmolLM2-135M-Instruct GGUF.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[tokio::test]
async fn plain_answer_with_usage() {
    common::plain_answer_with_usage(&common::smollm2(2048)).await;
}

#[tokio::test]
async fn forced_call_holds_the_schema() {
    // SmolLM2 ignores tool instructions: only constrained decoding makes
    // this a valid call.
    common::forced_call_holds_the_schema(&common::smollm2(2048)).await;
}

#[tokio::test]
async fn required_choice_calls_an_offered_tool() {
    common::required_choice_calls_an_offered_tool(&common::smollm2(2048)).await;
}

#[tokio::test]
async fn overlong_prompt_is_context_overflow() {
    common::overlong_prompt_is_context_overflow(&common::smollm2(1024)).await;
}
