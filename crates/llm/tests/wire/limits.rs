//! What a hostile or broken provider can send: absurd `Retry-After` values,
//! an absurd configured timeout, and answers of any size. None may panic the
//! process or cost unbounded memory.

use mnemo_core::Message;
use mnemo_llm::{
    build_chat_model, AnthropicChat, ChatModel, ChatRequest, ErrorKind, LlmError, OpenAiChat,
    OpenAiEmbedder, OpenAiEmbedderConfig,
};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::json;

use crate::common::{anthropic_config, openai_config};

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

/// `retry-after-ms: 1e30` on a 200 and on a 429, on both providers: the
/// answer (or the rate-limit error) comes back, no panic.
#[tokio::test]
async fn absurd_retry_after_headers_do_not_panic() {
    for value in ["1e30", "1e300", "-1", "nan"] {
        let server = ScriptedServer::start().await;
        server.push(Reply::text("fine").with_header("retry-after-ms", value));
        server.push(
            Reply::error(429, json!({"error": {"message": "slow down"}}))
                .with_header("retry-after-ms", value)
                .with_header("retry-after", value),
        );
        let mut cfg = openai_config(server.openai_base());
        cfg.max_retries = 0;
        let model = OpenAiChat::new(&cfg).unwrap();
        assert_eq!(model.complete(hello()).await.unwrap().text(), "fine");
        let err = model.complete(hello()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RateLimit, "{value}: {err}");

        let server = ScriptedServer::start().await;
        server.push(Reply::text("fine").with_header("retry-after-ms", value));
        let mut cfg = anthropic_config(server.url());
        cfg.max_retries = 0;
        let model = AnthropicChat::new(&cfg).unwrap();
        assert_eq!(model.complete(hello()).await.unwrap().text(), "fine");
    }
}

/// `[provider] timeout_secs = 1e30` (or any value a file can hold) gives a
/// working client, not a panic.
#[tokio::test]
async fn absurd_timeouts_are_capped() {
    let server = ScriptedServer::start().await;
    for t in [1e30, f64::MAX, f64::INFINITY, -3.0, 0.0, 1e-12] {
        let mut cfg = openai_config(server.openai_base());
        cfg.timeout_secs = t;
        assert!(
            cfg.timeout() <= mnemo_llm::MAX_TIMEOUT && !cfg.timeout().is_zero(),
            "{t}"
        );
        server.push(Reply::text("ok"));
        let model = build_chat_model(&cfg).unwrap();
        assert_eq!(model.complete(hello()).await.unwrap().text(), "ok", "{t}");
    }
}

/// The same for the embedder's `timeout_secs` (a blocking client, so not in
/// an async test).
#[test]
fn absurd_embedder_timeouts_are_capped() {
    let server = ScriptedServer::start_blocking();
    for t in [1e30, f64::INFINITY, -1.0] {
        let mut cfg = OpenAiEmbedderConfig::new(server.openai_base(), "embed-test");
        cfg.dims = Some(8);
        cfg.timeout_secs = t;
        assert!(OpenAiEmbedder::new(cfg).is_ok(), "{t}");
    }
}

/// An answer over `max_response_bytes` is read up to the cap only, refused
/// with an error that names the setting, and not retried (a retry would pay
/// for the same answer again); an answer under the cap is unaffected.
#[tokio::test]
async fn answers_over_the_cap_are_refused_clearly() {
    let server = ScriptedServer::start().await;
    let big = "x".repeat(3 * 1024 * 1024);
    server.push(Reply::text(big.clone()));
    server.push(Reply::text("short"));
    let mut cfg = openai_config(server.openai_base());
    cfg.max_response_bytes = 1024 * 1024;
    let model = OpenAiChat::new(&cfg).unwrap();
    let err = model.complete(hello()).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::TooLarge {
                limit: 1_048_576,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("max_response_bytes"), "{err}");
    assert_eq!(server.request_count(), 1, "not retried");
    assert_eq!(model.complete(hello()).await.unwrap().text(), "short");

    // The default cap keeps whatever is read under the session log's line
    // limit, so an answer that is accepted can always be logged.
    assert!(
        mnemo_llm::DEFAULT_MAX_RESPONSE_BYTES
            < mnemo_store::SessionOptions::default().max_line_bytes as u64
    );
    let server = ScriptedServer::start().await;
    server.push(Reply::text(big));
    let cfg = openai_config(server.openai_base());
    assert_eq!(
        OpenAiChat::new(&cfg)
            .unwrap()
            .complete(hello())
            .await
            .unwrap()
            .text()
            .len(),
        3 * 1024 * 1024
    );
}

/// An error answer over the cap is still classified from its first part.
#[tokio::test]
async fn long_error_answers_keep_their_start() {
    let server = ScriptedServer::start().await;
    let message = format!("model not found {}", "y".repeat(2 * 1024 * 1024));
    server.push(Reply::error(400, json!({"error": {"message": message}})));
    let mut cfg = openai_config(server.openai_base());
    cfg.max_response_bytes = 64 * 1024;
    let err = OpenAiChat::new(&cfg)
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadRequest, "{err}");
    assert!(err.to_string().contains("model not found"), "{err}");
}
