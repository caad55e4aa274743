//! all-mpnet-base-v2 on real weights: vectors match an independent NumPy
//! forward pass (scripts/mpnet_reference.py) on short texts and on one long
//! enough to be truncated, whose attention spans every distance bucket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::OnceLock;

use common::{cos, mpnet_model_dir, sentences, REF_A, REF_B};
use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{Engine, LocalEmbedder, LocalModelSpec};

fn model() -> &'static LocalEmbedder {
    static M: OnceLock<LocalEmbedder> = OnceLock::new();
    M.get_or_init(|| LocalEmbedder::load(&mpnet_model_dir()).unwrap())
}

/// The test's long text: the first fifteen test sentences (sixteen with the
/// blank one the reference was made with, which adds only white space),
/// three times over (about 540 word pieces, cut to the model's 384).
fn long_text() -> String {
    vec![sentences()[..15].join(" "); 3].join(" ")
}

/// From scripts/mpnet_reference.py: the first 8 values of each vector.
const REFERENCE: [(&str, [f32; 8]); 4] = [
    (
        REF_A,
        [
            0.035501, -0.008432, 0.022024, 0.016263, -0.005402, 0.006836, -0.096077, 0.026986,
        ],
    ),
    (
        REF_B,
        [
            0.017861, -0.033348, -0.005989, 0.041599, -0.041972, -0.012709, -0.090679, -0.012212,
        ],
    ),
    (
        "Hello",
        [
            0.030640, -0.006230, -0.002122, 0.013879, 0.026487, 0.004066, -0.003871, 0.035270,
        ],
    ),
    (
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        [
            -0.060616, 0.044908, -0.016630, 0.012616, 0.037830, 0.033735, 0.004722, -0.035790,
        ],
    ),
];
const LONG_REFERENCE: [f32; 8] = [
    0.075459, 0.032364, -0.022251, 0.016803, 0.023234, 0.013868, -0.002971, 0.004791,
];
/// cos(REF_A, REF_B) in the reference.
const REF_COS: f32 = 0.660113;

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-5,
            "{what}: value {i} is {g}, the reference {w}"
        );
    }
}

#[test]
fn vectors_match_the_reference_implementation() {
    let m = model();
    let long = long_text();
    let mut texts: Vec<&str> = REFERENCE.iter().map(|(t, _)| *t).collect();
    texts.push(&long);
    let v = m.embed(&texts, EmbedKind::Document).unwrap();
    for ((text, want), got) in REFERENCE.iter().zip(&v) {
        assert_close(&got[..8], want, text);
    }
    assert_close(&v[4][..8], &LONG_REFERENCE, "the long text");
    let c = cos(&v[0], &v[1]);
    assert!(
        (c - REF_COS).abs() <= 1e-4,
        "cos = {c}, the reference {REF_COS}"
    );
    let n = m.count_tokens(&long).unwrap_or(0);
    assert!(
        n > 384,
        "the long text has {n} word pieces: it must be cut to be a test of the cut"
    );
}

#[test]
fn the_folder_describes_a_768_dimension_english_model() {
    let m = model();
    assert_eq!(m.dims(), 768);
    assert_eq!(m.max_input_tokens(), Some(384));
    assert_eq!(m.engine(), Engine::Fast);
    assert_eq!(m.id().model, "all-mpnet-base-v2");
    assert_eq!(m.multilingual(), Some(false));
}

#[test]
fn a_batch_gives_each_text_its_own_vector() {
    let m = model();
    let all = sentences();
    let texts: Vec<&str> = all.iter().map(String::as_str).collect();
    let batch = m.embed(&texts, EmbedKind::Document).unwrap();
    for (t, b) in texts.iter().zip(&batch).step_by(5) {
        let one = m.embed(&[t], EmbedKind::Document).unwrap();
        assert!(
            cos(&one[0], b) > 0.99999,
            "{t:?} differs alone and in a batch"
        );
    }
}

#[test]
fn the_candle_engine_is_refused_with_the_fix() {
    let dir = mpnet_model_dir();
    let spec = LocalModelSpec {
        engine: Engine::Candle,
        ..LocalModelSpec::from_path(&dir)
    };
    let err = LocalEmbedder::load_with(&dir, &spec)
        .unwrap_err()
        .to_string();
    assert!(err.contains("MPNet") && err.contains("engine"), "{err}");
}
