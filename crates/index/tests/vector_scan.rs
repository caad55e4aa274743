//! The two vector scans (`[index] vector_scan = "int8" | "exact"`) give the
//! same top-10 on real embeddings (the local model), before and after
//! incremental changes, and the setting parses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{model, Fixture, TOPICS};
use mnemo_core::Config;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest, VectorScan};

/// Vector-only ranking (no BM25), so the hits are exactly the scan's order.
fn settings(scan: VectorScan) -> IndexSettings {
    let mut s = IndexSettings::default();
    s.index.vector_scan = scan;
    s.search.vector_weight = 1.0;
    s.search.text_weight = 0.0;
    s.search.sync_on_search = false;
    s
}

const QUERIES: &[&str] = &[
    "which instrument does someone practise?",
    "money spent on advertising",
    "running and a sore knee",
    "a trip to Portugal",
    "cooking a vegetarian soup",
    "tests that fail sometimes",
    "a book about boats",
    "ancient Rome",
    "who is responsible for the design review",
    "a leak in the image cache",
    "booking a hotel",
    "what did we eat at the Thai restaurant",
];

fn top10(index: &MemoryIndex, q: &str) -> Vec<(String, f32)> {
    index
        .search(&SearchRequest::new(q).max_results(10).min_score(-1.0))
        .unwrap()
        .results
        .into_iter()
        .map(|h| (h.path, h.vector_score.unwrap()))
        .collect()
}

fn assert_same(a: &MemoryIndex, b: &MemoryIndex) {
    for q in QUERIES {
        let (x, y) = (top10(a, q), top10(b, q));
        assert_eq!(x.len(), 10, "{q}");
        assert_eq!(x, y, "int8 and exact disagree on {q:?}");
    }
}

#[test]
fn int8_and_exact_scans_agree_on_real_embeddings() {
    let f = Fixture::new();
    // 264 distinct notes of three topic lines each: more chunks than the
    // int8 re-rank pool of a 10-hit search (4 x 50 candidates = 200), so the
    // int8 pass really has to choose.
    let mut files = 0;
    let triples = TOPICS.iter().enumerate().flat_map(|(a, ta)| {
        TOPICS.iter().enumerate().flat_map(move |(b, tb)| {
            TOPICS
                .iter()
                .enumerate()
                .filter(move |(c, _)| a != b && b != *c && a != *c)
                .map(move |(_, tc)| (*ta, *tb, *tc))
        })
    });
    for (a, b, c) in triples.take(264) {
        f.write(
            &format!("memory/notes/n{files:03}.md"),
            format!("# Note {files}\n\n- {a}\n- {b}\n- {c}\n"),
        );
        files += 1;
    }
    assert_eq!(files, 264);
    let int8 = mnemo_index_sqlite::open(&f.ws, settings(VectorScan::Int8), Some(model())).unwrap();
    int8.sync(&|_| {}).unwrap();
    let exact =
        mnemo_index_sqlite::open(&f.ws, settings(VectorScan::Exact), Some(model())).unwrap();
    assert!(exact.status().unwrap().vectors >= 264);
    assert_same(&int8, &exact);

    // Incremental changes through the int8 index (applied to its in-memory
    // f32 and int8 copies directly); the exact index reloads from SQLite.
    for i in 0..40 {
        f.remove(&format!("memory/notes/n{:03}.md", i * 3));
    }
    f.write(
        "memory/notes/n001.md",
        "# Lena\n\nLena has been taking piano lessons every Tuesday since March.\n",
    );
    int8.sync(&|_| {}).unwrap();
    assert_same(&int8, &exact);
    let r = top10(&int8, "which instrument does someone practise?");
    assert_eq!(r[0].0, "memory/notes/n001.md", "{r:?}");
}

#[test]
fn vector_scan_setting_parses_and_defaults_to_int8() {
    assert_eq!(IndexSettings::default().index.vector_scan, VectorScan::Int8);
    let c = Config::parse("[index]\nvector_scan = \"exact\"\n").unwrap();
    assert_eq!(
        IndexSettings::from_config(&c).unwrap().index.vector_scan,
        VectorScan::Exact
    );
    let c = Config::parse("[index]\nvector_scan = \"full_int8\"\n").unwrap();
    assert_eq!(
        IndexSettings::from_config(&c).unwrap().index.vector_scan,
        VectorScan::FullInt8
    );
    let c = Config::parse("[index]\nvector_scan = \"int4\"\n").unwrap();
    assert!(IndexSettings::from_config(&c).is_err());
}
