//! The OpenAI-compatible embedder against the scripted server (blocking).

use mnemo_core::{EmbedError, EmbedKind, Embedder};
use mnemo_llm::{ErrorKind, OpenAiEmbedder, OpenAiEmbedderConfig};
use mnemo_test_support::{hashed_embedding, Reply, ScriptedServer};
use pretty_assertions::assert_eq;
use serde_json::json;

fn config(server: &ScriptedServer, dims: Option<usize>) -> OpenAiEmbedderConfig {
    let mut c = OpenAiEmbedderConfig::new(server.openai_base(), "embed-test");
    c.dims = dims;
    c.retry_backoff_ms = 1;
    c
}

fn assert_close(a: &[Vec<f32>], b: &[Vec<f32>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() < 1e-6, "{p} vs {q}");
        }
    }
}

#[test]
fn batches_by_count_and_keeps_order() {
    let server = ScriptedServer::start_blocking();
    let mut cfg = config(&server, Some(64));
    cfg.max_batch = 3;
    let emb = OpenAiEmbedder::new(cfg).unwrap();
    assert_eq!(server.request_count(), 0, "configured dims need no probe");
    assert_eq!(emb.max_batch(), 3);

    let texts: Vec<String> = (0..10)
        .map(|i| format!("note number {i} about topic {}", i % 3))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let got = emb.embed(&refs, EmbedKind::Document).unwrap();
    let want: Vec<Vec<f32>> = refs.iter().map(|t| hashed_embedding(t, 64)).collect();
    assert_close(&got, &want);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "ceil(10 / 3) requests");
    let sizes: Vec<usize> = reqs
        .iter()
        .map(|r| r.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![3, 3, 3, 1]);
    assert_eq!(reqs[0].path, "/v1/embeddings");
    assert_eq!(
        reqs[0].body,
        json!({"model": "embed-test", "input": [refs[0], refs[1], refs[2]]})
    );
}

#[test]
fn batches_by_estimated_tokens() {
    let server = ScriptedServer::start_blocking();
    let mut cfg = config(&server, Some(64));
    cfg.max_batch_tokens = 30;
    let emb = OpenAiEmbedder::new(cfg).unwrap();
    let long = "word ".repeat(20); // 100 chars, 25 tokens
    let texts = [long.as_str(), long.as_str(), "short", long.as_str()];
    emb.embed(&texts, EmbedKind::Document).unwrap();
    let sizes: Vec<usize> = server
        .requests()
        .iter()
        .map(|r| r.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, vec![1, 2, 1]);
}

#[test]
fn reorders_by_index_and_normalises() {
    let server = ScriptedServer::start_blocking();
    let emb = OpenAiEmbedder::new(config(&server, Some(2))).unwrap();
    server.push(Reply::embeddings(vec![vec![3.0, 4.0], vec![0.0, 2.0], vec![5.0, 0.0]]).reversed());
    let got = emb.embed(&["a", "b", "c"], EmbedKind::Query).unwrap();
    assert_eq!(got, vec![vec![0.6, 0.8], vec![0.0, 1.0], vec![1.0, 0.0]]);
    let raw = &server.requests()[0].body;
    assert_eq!(raw["input"], json!(["a", "b", "c"]));
}

#[test]
fn retries_429_and_5xx() {
    let server = ScriptedServer::start_blocking();
    let emb = OpenAiEmbedder::new(config(&server, Some(64))).unwrap();
    server.push(Reply::error(500, json!({"error": {"message": "boom"}})));
    server.push(
        Reply::error(429, json!({"error": {"message": "slow"}})).with_header("retry-after", "0"),
    );
    let got = emb.embed(&["hello world"], EmbedKind::Document).unwrap();
    assert_close(&got, &[hashed_embedding("hello world", 64)]);
    assert_eq!(server.request_count(), 3);
}

#[test]
fn bad_request_is_not_retried() {
    let server = ScriptedServer::start_blocking();
    let emb = OpenAiEmbedder::new(config(&server, Some(64))).unwrap();
    server.push(Reply::error(
        400,
        json!({"error": {"message": "model not found"}}),
    ));
    let err = emb.embed(&["x"], EmbedKind::Document).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Provider { status: Some(400), message } if message.contains("model not found")),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 1);
}

#[test]
fn timeout_is_reported_after_retries() {
    let server = ScriptedServer::start_blocking();
    let mut cfg = config(&server, Some(64));
    cfg.timeout_secs = 0.3;
    cfg.max_retries = 1;
    let emb = OpenAiEmbedder::new(cfg).unwrap();
    let slow = Reply::delay(
        std::time::Duration::from_secs(5),
        Reply::hashed_embeddings(),
    );
    server.push_all([slow.clone(), slow]);
    let err = emb.embed(&["x"], EmbedKind::Document).unwrap_err();
    assert!(matches!(err, EmbedError::Timeout(_)), "{err:?}");
    assert_eq!(server.request_count(), 2);
}

#[test]
fn discovers_dims_with_one_probe() {
    let server = ScriptedServer::start_blocking();
    server.set_embedding_dims(16);
    let emb = OpenAiEmbedder::new(config(&server, None)).unwrap();
    assert_eq!(emb.dims(), 16);
    assert_eq!(server.request_count(), 1);
    assert_eq!(emb.embed(&["abc"], EmbedKind::Query).unwrap()[0].len(), 16);
}

#[test]
fn wrong_dims_are_refused() {
    let server = ScriptedServer::start_blocking();
    server.set_embedding_dims(16);
    let emb = OpenAiEmbedder::new(config(&server, Some(32))).unwrap();
    let err = emb
        .embed(&["abc"], EmbedKind::Query)
        .unwrap_err()
        .to_string();
    assert!(err.contains("16 dimensions where 32"), "{err}");
}

#[test]
fn count_mismatch_and_empty_inputs_are_errors() {
    let server = ScriptedServer::start_blocking();
    let emb = OpenAiEmbedder::new(config(&server, Some(2))).unwrap();
    server.push(Reply::embeddings(vec![vec![1.0, 0.0]]));
    let err = emb
        .embed(&["a", "b"], EmbedKind::Query)
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 vectors for 2 inputs"), "{err}");
    let err = emb.embed(&["a", "  "], EmbedKind::Query).unwrap_err();
    assert!(matches!(err, EmbedError::Invalid(_)), "{err:?}");
    assert_eq!(
        emb.embed(&[], EmbedKind::Query).unwrap(),
        Vec::<Vec<f32>>::new()
    );
}

#[test]
fn id_and_key_handling() {
    let server = ScriptedServer::start_blocking();
    let mut cfg = config(&server, Some(64));
    cfg.api_key = Some("secret".into());
    let emb = OpenAiEmbedder::new(cfg.clone()).unwrap();
    let id = emb.id();
    assert_eq!(
        (id.provider.as_str(), id.model.as_str()),
        ("openai", "embed-test")
    );
    assert_eq!(id.provider_key, cfg.provider_key());
    assert!(emb.config().api_key.is_none());
    emb.embed(&["x"], EmbedKind::Query).unwrap();
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer secret")
    );

    let remote = OpenAiEmbedderConfig::new("https://embeddings.example.com/v1", "m");
    let err = OpenAiEmbedder::with_env(remote, &|_| None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
}
