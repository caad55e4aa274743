//! Throughput of the local model (candle path vs fast path) and of the
//! hashing embedder, in sentences per second, on the first N turn texts of
//! LoCoMo (read at run time from `../shared/data/locomo_en.json`, or
//! `MNEMO_DATA_DIR`). The same sentences feed `benches/st_baseline.py`.
//!
//! `cargo bench -p mnemo-embed --bench embed`; `MNEMO_BENCH_N` sets N (default 512).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{Engine, HashEmbedder, LocalEmbedder, LocalModelSpec};

fn model_dir() -> PathBuf {
    let dir = match std::env::var_os("MNEMO_TEST_MODEL_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.mnemo-models/all-MiniLM-L6-v2")
        }
    };
    assert!(
        dir.join("model.safetensors").is_file(),
        "model missing from {}: run scripts/fetch-models.sh",
        dir.display()
    );
    dir
}

/// The first `n` turn texts of LoCoMo, in file order.
fn sentences(n: usize) -> Vec<String> {
    let data = match std::env::var_os("MNEMO_DATA_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    };
    let path = data.join("locomo_en.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}): set MNEMO_DATA_DIR to the folder holding locomo_en.json",
            path.display()
        )
    });
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = Vec::new();
    'outer: for conv in json["conversations"].as_array().unwrap() {
        for session in conv["sessions"].as_array().unwrap() {
            for turn in session["turns"].as_array().unwrap() {
                out.push(turn["text"].as_str().unwrap_or_default().to_string());
                if out.len() == n {
                    break 'outer;
                }
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("MNEMO_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    let texts = sentences(n);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let dir = model_dir();
    let mut g = c.benchmark_group("embed");
    g.throughput(Throughput::Elements(refs.len() as u64));
    g.sample_size(10);
    for engine in [Engine::Fast, Engine::Candle] {
        let spec = LocalModelSpec {
            engine,
            ..LocalModelSpec::from_path(&dir)
        };
        let m = LocalEmbedder::load_with(&dir, &spec).unwrap();
        let name = format!("{engine:?}").to_lowercase();
        g.bench_function(format!("local_{name}_{}_sentences", refs.len()), |b| {
            // One call over all texts, as sentence-transformers' `encode`
            // is called: both sort by length and run batches of 32.
            b.iter(|| std::hint::black_box(m.embed(&refs, EmbedKind::Document).unwrap()))
        });
    }
    let h = HashEmbedder::default();
    g.bench_function(format!("hash_{}_sentences", refs.len()), |b| {
        b.iter(|| std::hint::black_box(h.embed(&refs, EmbedKind::Document).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
