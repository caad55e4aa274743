//! A search right after an append to a long session, on SQLite and on
//! PostgreSQL in the same run: what an agent's recall pays when its
//! session log grew since the last search. Writes a session log of N
//! messages (seeded sentences of the index benchmarks' vocabulary), builds
//! both indexes, then R times appends one message and times the search
//! that brings the index up to date first, beside warm searches (nothing
//! appended) of the same queries. Hashing embedder, default index
//! settings.
//!
//! ```sh
//! scripts/postgres.sh start     # prints URL
//! cargo run --release -p mnemo-index-postgres --example pg_append -- --url URL --messages 1000
//! ```
//!
//! Options: `--url URL` (else `MNEMO_TEST_POSTGRES_URL`), `--messages N`
//! (1,000), `--rounds R` (100), `--schema S` (`mnemo_append`, emptied
//! first).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_core::{Embedder, Workspace};
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};
use mnemo_index_postgres::{PostgresOptions, PostgresStore};
use rand::rngs::StdRng;
use rand::SeedableRng;

#[path = "../../index-sqlite/benches/corpus.rs"]
mod corpus;
use corpus::sentence;

const LOG: &str = "sessions/bench_append.jsonl";

fn line(rng: &mut StdRng, i: usize) -> String {
    let role = if i.is_multiple_of(2) {
        "user"
    } else {
        "assistant"
    };
    let ts = format!(
        "2026-03-{:02}T{:02}:{:02}:00",
        1 + (i / 600) % 28,
        (i / 60) % 10 + 8,
        i % 60
    );
    serde_json::json!({"role": role, "content": sentence(rng, 18), "timestamp": ts}).to_string()
        + "\n"
}

/// Appends to the log and notes it in the workspace's journal, as
/// mnemo's session writer does (the journal is how a search finds an
/// appended log without a walk).
fn append(ws: &Workspace, text: &str) {
    let path = ws.root().join(LOG);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
    mnemo_core::journal::note(ws, &path);
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn summary(mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "p50 {:.2?} p90 {:.2?} p99 {:.2?}",
        pct(&times, 0.5),
        pct(&times, 0.9),
        pct(&times, 0.99)
    )
}

/// Appends a message and searches, `rounds` times; then the same searches
/// warm. Returns (after an append, warm).
fn rounds(
    index: &MemoryIndex,
    ws: &Workspace,
    rng: &mut StdRng,
    next: &mut usize,
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>) {
    let queries: Vec<String> = (0..rounds).map(|_| sentence(rng, 4)).collect();
    let mut after = Vec::new();
    for q in &queries {
        append(ws, &line(rng, *next));
        *next += 1;
        let t = Instant::now();
        std::hint::black_box(index.search(&SearchRequest::new(q.as_str())).unwrap());
        after.push(t.elapsed());
    }
    let warm = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.search(&SearchRequest::new(q.as_str())).unwrap());
            t.elapsed()
        })
        .collect();
    (after, warm)
}

fn main() {
    let mut url = std::env::var("MNEMO_TEST_POSTGRES_URL").ok();
    let mut messages = 1000usize;
    let mut n_rounds = 100usize;
    let mut schema = "mnemo_append".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--url" => url = Some(val()),
            "--messages" => messages = val().parse().unwrap(),
            "--rounds" => n_rounds = val().parse::<usize>().unwrap().max(1),
            "--schema" => schema = val(),
            other => panic!("unknown argument {other}"),
        }
    }
    let url = url.expect("--url or MNEMO_TEST_POSTGRES_URL");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    let mut rng = StdRng::seed_from_u64(5);
    let log: String = (0..messages).map(|i| line(&mut rng, i)).collect();
    let ws = Workspace::new(root);
    append(&ws, &log);
    let settings = IndexSettings::default();
    let emb: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(384));
    let opts = PostgresOptions { url, schema };
    PostgresStore::drop_index(&opts).unwrap();
    let store = Arc::new(PostgresStore::open(&opts, Some((emb.id(), emb.dims()))).unwrap());
    let pg = MemoryIndex::with_store(&ws, settings.clone(), Some(emb.clone()), store).unwrap();
    let sqlite = mnemo_index_sqlite::open(&ws, settings, Some(emb)).unwrap();
    for (name, index) in [("sqlite", &sqlite), ("postgres", &pg)] {
        let t = Instant::now();
        let r = index.sync(&|_| {}).unwrap();
        println!(
            "{name}: {messages} messages, {} chunks indexed in {:.1?}",
            r.chunks_written,
            t.elapsed()
        );
    }
    // Both indexes see the same appends: each backend's rounds in turn,
    // the log growing by `n_rounds` messages per backend.
    let mut next = messages;
    for (name, index) in [("sqlite", &sqlite), ("postgres", &pg)] {
        // The other backend's appends first, untimed.
        index.sync(&|_| {}).unwrap();
        let (after, warm) = rounds(index, &ws, &mut rng, &mut next, n_rounds);
        println!(
            "{name}: search after an append {}; warm {}",
            summary(after),
            summary(warm)
        );
    }
}
