//! What a new process pays before its first query vector: loading the
//! default model (multilingual-e5-small, 4-bit) and embedding one query,
//! each timed, over several rounds (each round a fresh load).
//!
//! `cargo run --release -p mnemo-embed --example cold_start -- MODEL [ROUNDS]`
//!
//! MODEL is `e5-small-q4.bin` or its folder (`.mnemo-models/multilingual-e5-small-q4`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::{E5Q4Embedder, LocalModelSpec};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(model) = args.first() else {
        eprintln!("usage: cold_start MODEL [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let spec = LocalModelSpec {
        model: mnemo_embed::DEFAULT_MODEL.into(),
        ..LocalModelSpec::from_path(model)
    };
    for round in 0..rounds {
        let t = Instant::now();
        let m = E5Q4Embedder::load_with(Path::new(model), &spec).unwrap();
        let load = t.elapsed();
        let t = Instant::now();
        let v = m
            .embed(&["where does the deploy key live?"], EmbedKind::Query)
            .unwrap();
        let first = t.elapsed();
        let t = Instant::now();
        m.embed(&["what did we decide about the trip?"], EmbedKind::Query)
            .unwrap();
        let second = t.elapsed();
        println!(
            "round {round}: load {load:.1?} ({:?}), first query {first:.1?}, second query {second:.1?} ({} dims)",
            m.engine(),
            v[0].len()
        );
    }
}
