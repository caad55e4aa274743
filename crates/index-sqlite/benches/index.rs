//! Benchmarks of the SQLite index, on generated data (seeded RNG):
//!
//! - `vector_top10_100k_x_384`: the in-memory exact f32 scan and the int8
//!   scan with exact re-rank (what search uses by default) against a plain
//!   memory-bandwidth pass over the same f32 buffer (same kernels family and
//!   thread count as the scans) and sqlite-vec's `vec0`, in one run; recall@10
//!   of the int8 scan against the exact one is printed first.
//! - `search`: end-to-end `MemoryIndex::search` latency (p50/p95 printed) at
//!   1k, 10k and 100k chunks, with the hashing embedder so the model's cost
//!   does not hide the engine's.
//! - `indexing`: sync throughput with the hashing embedder, and with the real
//!   local model on a smaller set.
//! - after each search size, the cold start: a fresh `MemoryIndex` and its
//!   first search (which loads the vectors), printed.
//!
//! `MNEMO_BENCH_SIZES=1000,10000` limits the search sizes; `MNEMO_BENCH_MODEL=0`
//! skips the real-model indexing run; `MNEMO_BENCH_SCAN=exact` makes search
//! use the exact f32 scan instead of the default int8 one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use mnemo_core::{Embedder, Workspace};
use mnemo_embed::{HashEmbedder, LocalEmbedder};
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};
use mnemo_index_sqlite::vectors::{
    bandwidth_baseline, kernel_name, rerank_pool, scan_threads, VectorScan, VectorSet,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

#[path = "corpus.rs"]
mod corpus;
use corpus::{sentence, write_corpus};

const DIMS: usize = 384;
fn unit(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
}

fn random_vectors(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let mut data = vec![0f32; n * DIMS];
    for row in data.chunks_exact_mut(DIMS) {
        for x in row.iter_mut() {
            *x = rng.random::<f32>() - 0.5;
        }
        unit(row);
    }
    data
}

fn bench_settings() -> IndexSettings {
    let mut s = IndexSettings::default();
    s.index.chunk_tokens = 80;
    s.index.chunk_overlap = 0;
    s.search.sync_on_search = false;
    if std::env::var("MNEMO_BENCH_SCAN").as_deref() == Ok("exact") {
        s.index.vector_scan = VectorScan::Exact;
    }
    s
}

fn vector_scan(c: &mut Criterion) {
    let n = 100_000;
    let mut rng = StdRng::seed_from_u64(7);
    let data = random_vectors(&mut rng, n);
    let mut set = VectorSet::new(DIMS);
    for (i, row) in data.chunks_exact(DIMS).enumerate() {
        set.push(i as i64, 0, row);
    }
    let queries: Vec<Vec<f32>> = (0..16).map(|_| random_vectors(&mut rng, 1)).collect();

    // sqlite-vec, loaded as an auto extension into an in-memory database.
    unsafe {
        rusqlite::ffi::sqlite3_auto_extension(Some(std::mem::transmute::<
            *const (),
            unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> i32,
        >(
            sqlite_vec::sqlite3_vec_init as *const ()
        )));
    }
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch(&format!(
        "CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIMS}] distance_metric=cosine)"
    ))
    .unwrap();
    {
        let tx = db.unchecked_transaction().unwrap();
        let mut ins = tx
            .prepare("INSERT INTO v(rowid, embedding) VALUES (?1, ?2)")
            .unwrap();
        for (i, row) in data.chunks_exact(DIMS).enumerate() {
            let blob: Vec<u8> = row.iter().flat_map(|x| x.to_le_bytes()).collect();
            ins.execute(rusqlite::params![i as i64, blob]).unwrap();
        }
        drop(ins);
        tx.commit().unwrap();
    }
    let vec0 = |q: &[f32]| -> Vec<(i64, f64)> {
        let blob: Vec<u8> = q.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut st = db
            .prepare_cached("SELECT rowid, distance FROM v WHERE embedding MATCH ?1 AND k = 10 ORDER BY distance")
            .unwrap();
        st.query_map([blob], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    // Same answers: the scan is exact, so vec0's top-10 must match it.
    let mut agree = 0;
    for q in &queries {
        let a: Vec<i64> = set.top_k(q, 10, None).into_iter().map(|x| x.0).collect();
        let b: Vec<i64> = vec0(q).into_iter().map(|x| x.0).collect();
        agree += a.iter().filter(|x| b.contains(x)).count();
    }
    println!(
        "vector: top-10 overlap mnemo scan vs vec0 = {agree}/{}",
        queries.len() * 10
    );
    println!(
        "vector: kernels {}, {} thread(s) for the f32 scan and the baseline, {} for the int8 scan",
        kernel_name(),
        scan_threads(set.data().len() * 4),
        scan_threads(set.data().len())
    );
    let recall_queries: Vec<Vec<f32>> = (0..100).map(|_| random_vectors(&mut rng, 1)).collect();
    for rerank in [40, rerank_pool(10)] {
        let mut hit = 0;
        for q in &recall_queries {
            let a: Vec<i64> = set.top_k(q, 10, None).into_iter().map(|x| x.0).collect();
            let b: Vec<i64> = set
                .top_k_int8(q, 10, rerank, None)
                .into_iter()
                .map(|x| x.0)
                .collect();
            hit += a.iter().filter(|x| b.contains(x)).count();
        }
        println!(
            "vector: int8 + exact re-rank of {rerank}: recall@10 vs exact = {:.4}",
            hit as f64 / 1000.0
        );
    }

    let mut g = c.benchmark_group("vector_top10_100k_x_384");
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    g.bench_function("bandwidth_baseline_sum", |b| {
        b.iter(|| black_box(bandwidth_baseline(black_box(set.data()))))
    });
    let mut qi = 0;
    g.bench_function("mnemo_scan", |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(set.search(VectorScan::Exact, &queries[qi], 10, None))
        })
    });
    g.bench_function("mnemo_int8_rerank100", |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(set.search(VectorScan::Int8, &queries[qi], 10, None))
        })
    });
    g.bench_function("sqlite_vec_vec0", |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(vec0(&queries[qi]))
        })
    });
    g.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The time of one search per query, sorted.
fn latencies(index: &MemoryIndex, queries: &[String]) -> Vec<Duration> {
    let mut lat: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            black_box(
                index
                    .search(&SearchRequest::new(q.as_str()).min_score(0.0))
                    .unwrap(),
            );
            t.elapsed()
        })
        .collect();
    lat.sort();
    lat
}

fn search_latency(c: &mut Criterion) {
    let sizes: Vec<usize> = std::env::var("MNEMO_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let emb: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(DIMS));
    let mut g = c.benchmark_group("search");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        write_corpus(dir.path(), n, 100, 11);
        let index = mnemo_index_sqlite::open(
            &Workspace::new(dir.path()),
            bench_settings(),
            Some(emb.clone()),
        )
        .unwrap();
        let t = Instant::now();
        let report = index.sync(&|_| {}).unwrap();
        let took = t.elapsed();
        println!(
            "indexing (hash embedder): {} files, {} chunks in {:.2?} = {:.0} chunks/s",
            report.indexed.len(),
            report.chunks_written,
            took,
            report.chunks_written as f64 / took.as_secs_f64()
        );
        let mut rng = StdRng::seed_from_u64(3);
        let queries: Vec<String> = (0..200).map(|_| sentence(&mut rng, 5)).collect();
        let lat = latencies(&index, &queries);
        println!(
            "search latency at {} chunks (hybrid, hash embedder, 200 queries): p50 {:.2?} p95 {:.2?}",
            report.chunks_written,
            percentile(&lat, 0.5),
            percentile(&lat, 0.95)
        );
        // The same queries naming a day of the corpus: the date boost and the
        // period's chunks joining the candidates, against the plain search.
        let days = n.div_ceil(100) as i64;
        let dated: Vec<String> = queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let d = chrono::NaiveDate::from_ymd_opt(2020, 1, 1).unwrap()
                    + chrono::Duration::days(i as i64 % days);
                format!("{q} on {}", d.format("%-d %B %Y"))
            })
            .collect();
        let lat_dated = latencies(&index, &dated);
        println!(
            "search latency with a date in the query: p50 {:.2?} p95 {:.2?} ({:.2}x the p50 without)",
            percentile(&lat_dated, 0.5),
            percentile(&lat_dated, 0.95),
            percentile(&lat_dated, 0.5).as_secs_f64() / percentile(&lat, 0.5).as_secs_f64()
        );
        // The same queries as the last of three speaker-tagged turns (what an
        // agent's recall searches with): two readings, so two keyword
        // queries, two embeddings and two vector scans.
        let dialogue: Vec<String> = queries
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let earlier = &queries[(i + 1) % queries.len()];
                let reply = &queries[(i + 2) % queries.len()];
                format!("Ann: {earlier}\nBob: {reply}\nAnn: {q}")
            })
            .collect();
        let lat_dialogue = latencies(&index, &dialogue);
        println!(
            "search latency with the query as dialogue: p50 {:.2?} p95 {:.2?} ({:.2}x the p50 of the question alone)",
            percentile(&lat_dialogue, 0.5),
            percentile(&lat_dialogue, 0.95),
            percentile(&lat_dialogue, 0.5).as_secs_f64() / percentile(&lat, 0.5).as_secs_f64()
        );
        cold_open(dir.path(), &emb, &queries, report.chunks_written);
        let mut qi = 0;
        g.bench_function(format!("hybrid_{n}_chunks"), |b| {
            b.iter(|| {
                qi = (qi + 1) % queries.len();
                black_box(
                    index
                        .search(&SearchRequest::new(queries[qi].as_str()))
                        .unwrap(),
                )
            })
        });
    }
    g.finish();
}

/// Cold start: a fresh `MemoryIndex` (as in a new `mnemo search` process,
/// minus process start-up) opened on the index built above, then its first
/// search, which loads the vectors, then a second (warm) search. The first
/// search minus the warm one is the load cost. Measured without the vector
/// cache file (deleted before each round: SQLite load + cache write) and with
/// it. Median of 7 rounds each.
fn cold_open(root: &Path, emb: &Arc<dyn Embedder>, queries: &[String], chunks: usize) {
    let cache = root.join(".mnemo/vectors.cache");
    for with_cache in [false, true] {
        let mut open = Vec::new();
        let mut first = Vec::new();
        let mut warm = Vec::new();
        for query in queries.iter().take(7) {
            if !with_cache {
                let _ = std::fs::remove_file(&cache);
            }
            let t = Instant::now();
            let index = mnemo_index_sqlite::open(
                &Workspace::new(root),
                bench_settings(),
                Some(emb.clone()),
            )
            .unwrap();
            open.push(t.elapsed());
            let q = SearchRequest::new(query.as_str());
            let t = Instant::now();
            black_box(index.search(&q).unwrap());
            first.push(t.elapsed());
            let t = Instant::now();
            black_box(index.search(&q).unwrap());
            warm.push(t.elapsed());
        }
        for v in [&mut open, &mut first, &mut warm] {
            v.sort();
        }
        println!(
            "cold start at {chunks} chunks, {} (median of 7): open {:.2?}, first search {:.2?}, same search warm {:.2?}",
            if with_cache { "vector cache present" } else { "no vector cache" },
            open[3],
            first[3],
            warm[3]
        );
    }
}

fn indexing_real_model() {
    if std::env::var("MNEMO_BENCH_MODEL").as_deref() == Ok("0") {
        return;
    }
    let dir = std::env::var("MNEMO_TEST_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.mnemo-models/all-MiniLM-L6-v2")
        });
    let Ok(model) = LocalEmbedder::load(&dir) else {
        println!(
            "indexing (local model): skipped, model not found at {}: run scripts/fetch-models.sh",
            dir.display()
        );
        return;
    };
    let emb: Arc<dyn Embedder> = Arc::new(model);
    let ws = tempfile::tempdir().unwrap();
    write_corpus(ws.path(), 500, 100, 5);
    let index =
        mnemo_index_sqlite::open(&Workspace::new(ws.path()), bench_settings(), Some(emb)).unwrap();
    let t = Instant::now();
    let r = index.sync(&|_| {}).unwrap();
    let took = t.elapsed();
    println!(
        "indexing (all-MiniLM-L6-v2): {} chunks in {:.2?} = {:.1} chunks/s",
        r.chunks_written,
        took,
        r.chunks_written as f64 / took.as_secs_f64()
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    vector_scan(&mut c);
    search_latency(&mut c);
    indexing_real_model();
    c.final_summary();
}
