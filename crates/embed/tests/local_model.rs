//! The local model on real weights: reference similarity, batching,
//! token limits, prefixes, and agreement of the fast path with candle's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::OnceLock;

use common::{cos, model_dir, sentences, REF_A, REF_B, REF_COS};
use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{Engine, LocalEmbedder, LocalModelSpec};

fn with_engine(engine: Engine) -> LocalEmbedder {
    let dir = model_dir();
    let spec = LocalModelSpec {
        engine,
        ..LocalModelSpec::from_path(&dir)
    };
    LocalEmbedder::load_with(&dir, &spec).unwrap()
}

fn candle() -> &'static LocalEmbedder {
    static M: OnceLock<LocalEmbedder> = OnceLock::new();
    M.get_or_init(|| with_engine(Engine::Candle))
}

fn fast() -> &'static LocalEmbedder {
    static M: OnceLock<LocalEmbedder> = OnceLock::new();
    M.get_or_init(|| with_engine(Engine::Fast))
}

fn both() -> [&'static LocalEmbedder; 2] {
    [candle(), fast()]
}

#[test]
fn reference_cosine_matches_sentence_transformers() {
    for m in both() {
        let v = m.embed(&[REF_A, REF_B], EmbedKind::Document).unwrap();
        let c = cos(&v[0], &v[1]);
        assert!(
            (c - REF_COS).abs() <= 0.001,
            "{:?}: cos = {c}, want {REF_COS} ± 0.001",
            m.engine()
        );
    }
}

#[test]
fn default_load_uses_the_fast_path_and_reports_the_model() {
    let m = LocalEmbedder::load(&model_dir()).unwrap();
    assert_eq!(m.engine(), Engine::Fast);
    assert_eq!(m.dims(), 384);
    assert_eq!(m.max_input_tokens(), Some(256));
    let id = m.id();
    assert_eq!(id.provider, "local");
    assert_eq!(id.model, "all-MiniLM-L6-v2");
    assert_eq!(id.provider_key.len(), 64);
    assert_eq!(m.pooling(), mnemo_embed::Pooling::Mean);
}

#[test]
fn vectors_are_unit_length_with_384_dims_and_blank_text_is_refused() {
    for m in both() {
        let err = m
            .embed(&["", "hello", "   "], EmbedKind::Document)
            .unwrap_err();
        assert!(matches!(err, mnemo_core::EmbedError::Invalid(_)), "{err}");
        let v = m
            .embed(&["?", "hello", "a b"], EmbedKind::Document)
            .unwrap();
        assert_eq!(v.len(), 3);
        for x in &v {
            assert_eq!(x.len(), 384);
            let n: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-4, "norm {n}");
            assert!(x.iter().all(|a| a.is_finite()));
        }
        assert!(m.embed(&[], EmbedKind::Query).unwrap().is_empty());
    }
}

#[test]
fn batch_results_equal_single_results_in_input_order() {
    let texts = sentences();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for m in both() {
        let batch = m.embed(&refs, EmbedKind::Document).unwrap();
        assert_eq!(batch.len(), refs.len());
        for (i, t) in refs.iter().enumerate() {
            let single = m.embed(&[t], EmbedKind::Document).unwrap();
            let c = cos(&single[0], &batch[i]);
            assert!(
                c > 0.9999,
                "{:?}: text {i} ({t:?}) batch vs single cos = {c}",
                m.engine()
            );
        }
        // Reversing the input reverses the output.
        let rev: Vec<&str> = refs.iter().rev().copied().collect();
        let back = m.embed(&rev, EmbedKind::Document).unwrap();
        for (i, v) in back.iter().rev().enumerate() {
            assert!(cos(v, &batch[i]) > 0.9999);
        }
    }
}

#[test]
fn fast_path_agrees_with_candle() {
    let mut texts = sentences();
    let long =
        "We talked about the trip to the mountains, the lake, and the old bookshop in town. "
            .repeat(30);
    texts.push(long);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert!(refs.len() >= 36);
    let a = candle().embed(&refs, EmbedKind::Document).unwrap();
    let b = fast().embed(&refs, EmbedKind::Document).unwrap();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let c = cos(x, y);
        assert!(c >= 0.9999, "text {i} ({:?}): cos = {c}", refs[i]);
    }
}

#[test]
fn token_counts_and_the_limit() {
    let m = fast();
    assert_eq!(m.max_input_tokens(), Some(256));
    // [CLS] hello world [SEP]
    assert_eq!(m.count_tokens("hello world"), Some(4));
    assert_eq!(m.count_tokens(""), Some(2));
    let long = "word ".repeat(1000);
    assert_eq!(
        m.count_tokens(&long),
        Some(1002),
        "counting must not truncate"
    );
    // Past the limit the model truncates: the tail does not change the vector.
    let head = "alpha beta gamma delta. ".repeat(100);
    let v1 = m.embed(&[head.as_str()], EmbedKind::Document).unwrap();
    let longer = format!("{head} completely different ending about volcanoes");
    let v2 = m.embed(&[longer.as_str()], EmbedKind::Document).unwrap();
    assert!(cos(&v1[0], &v2[0]) > 0.9999);
}

#[test]
fn prefixes_apply_by_kind() {
    let dir = model_dir();
    let spec = LocalModelSpec {
        query_prefix: Some("query: ".into()),
        document_prefix: Some("passage: ".into()),
        ..LocalModelSpec::from_path(&dir)
    };
    let m = LocalEmbedder::load_with(&dir, &spec).unwrap();
    let plain = fast();
    let q = m.embed(&["where is the key"], EmbedKind::Query).unwrap();
    let d = m.embed(&["where is the key"], EmbedKind::Document).unwrap();
    let pq = plain
        .embed(&["query: where is the key"], EmbedKind::Query)
        .unwrap();
    let pd = plain
        .embed(&["passage: where is the key"], EmbedKind::Document)
        .unwrap();
    assert!(cos(&q[0], &pq[0]) > 0.9999);
    assert!(cos(&d[0], &pd[0]) > 0.9999);
    assert!(cos(&q[0], &d[0]) < 0.999);
    // The document prefix counts toward the limit.
    assert_eq!(
        m.count_tokens("hello"),
        plain.count_tokens("passage: hello")
    );
    assert_ne!(m.id().provider_key, plain.id().provider_key);
}

#[test]
fn similar_texts_rank_above_unrelated_ones() {
    let m = fast();
    let v = m
        .embed(
            &[
                "How do I rotate the staging deploy key?",
                "The deploy key for staging is rotated monthly.",
                "A monkey is playing drums.",
            ],
            EmbedKind::Document,
        )
        .unwrap();
    assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2);
}
