//! Search at scale, on generated notes (seeded): builds (or reuses) an
//! index of N chunks with the hashing embedder, then times searches and
//! reports resident memory.
//!
//! ```sh
//! cargo run --release -p mnemo-index-sqlite --example scale -- --chunks 100000 --dir /some/scratch/ws
//! cargo run --release -p mnemo-index-sqlite --example scale -- --chunks 1000000 --per-file 100 --dir D --build-only
//! cargo run --release -p mnemo-index-sqlite --example scale -- --dir D --search-only   # a fresh process: its RSS is the search's
//! ```
//!
//! Options: `--chunks N` (100,000), `--per-file K` chunks per daily-log
//! file (100; 1 gives one file per chunk), `--queries Q` (300), `--dims D`
//! (384), `--fresh` keeps `sync_on_search` on (the default setting; off
//! measures the search alone), `--scan exact|int8`, `--keyword` (no
//! embedder), `--recall Q` (after the searches: recall@10 of the vector
//! scan against an exact f32 scan, over Q queries, on the index's own
//! stored vectors, all loaded in f32 for the comparison). Each search's
//! time is split into the query's embedding (the embedder is wrapped and
//! timed) and the rest. A baseline (a fixed sum over a 64 MB buffer) is
//! timed between the searches, so that runs on a loaded machine compare
//! by ratio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId, Workspace};
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, SearchRequest};
use mnemo_index_sqlite::vectors::VectorScan;
use rand::rngs::StdRng;
use rand::SeedableRng;

#[path = "../benches/corpus.rs"]
mod corpus;
use corpus::{sentence, write_corpus};

/// The hashing embedder, with the time spent embedding queries counted.
struct Timed {
    inner: HashEmbedder,
    query_ns: AtomicU64,
}

impl Embedder for Timed {
    fn id(&self) -> EmbedderId {
        self.inner.id()
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn max_batch(&self) -> usize {
        self.inner.max_batch()
    }
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let t = Instant::now();
        let out = self.inner.embed(texts, kind);
        if kind == EmbedKind::Query {
            self.query_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        out
    }
}

/// Resident and peak resident memory of this process, in MB (Linux).
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
            .unwrap_or(0.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time of this process so far (user + system), Linux; what a search
/// costs whatever else the machine runs.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map(|x| x.1).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15, in ticks of 1/100 s.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let mut chunks = 100_000usize;
    let mut per_file = 100usize;
    let mut queries = 300usize;
    let mut dims = 384usize;
    let mut dir: Option<PathBuf> = None;
    let mut fresh = false;
    let mut keyword = false;
    let mut build_only = false;
    let mut search_only = false;
    let mut scan = VectorScan::Int8;
    let mut recall = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--chunks" => chunks = val().parse().unwrap(),
            "--per-file" => per_file = val().parse::<usize>().unwrap().max(1),
            "--queries" => queries = val().parse().unwrap(),
            "--dims" => dims = val().parse().unwrap(),
            "--dir" => dir = Some(PathBuf::from(val())),
            "--fresh" => fresh = true,
            "--keyword" => keyword = true,
            "--build-only" => build_only = true,
            "--search-only" => search_only = true,
            "--recall" => recall = val().parse().unwrap(),
            "--scan" => {
                scan = match val().as_str() {
                    "exact" => VectorScan::Exact,
                    "full_int8" => VectorScan::FullInt8,
                    _ => VectorScan::Int8,
                }
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let tmp;
    let root = match dir {
        Some(d) => d,
        None => {
            tmp = tempfile::tempdir().unwrap();
            tmp.path().to_path_buf()
        }
    };
    let mut settings = IndexSettings::default();
    settings.index.chunk_tokens = 80;
    settings.index.chunk_overlap = 0;
    settings.index.vector_scan = scan;
    settings.search.sync_on_search = fresh;
    let timed = Arc::new(Timed {
        inner: HashEmbedder::new(dims),
        query_ns: AtomicU64::new(0),
    });
    let emb: Option<Arc<dyn Embedder>> = (!keyword).then(|| timed.clone() as Arc<dyn Embedder>);
    let ws = Workspace::new(&root);
    if !search_only {
        if !root.join("memory").exists() {
            let t = Instant::now();
            write_corpus(&root, chunks, per_file, 11);
            println!("wrote {chunks} chunks in {:.1?}", t.elapsed());
        }
        let index = mnemo_index_sqlite::open(&ws, settings.clone(), emb.clone()).unwrap();
        let t = Instant::now();
        let r = index.sync(&|_| {}).unwrap();
        let took = t.elapsed();
        let (now, peak) = rss();
        println!(
            "index build: {} files, {} chunks written in {:.1?} ({:.0} chunks/s); RSS {now:.0} MB, peak {peak:.0} MB",
            r.indexed.len(),
            r.chunks_written,
            took,
            r.chunks_written as f64 / took.as_secs_f64().max(1e-9)
        );
        if build_only {
            return;
        }
    }
    let t = Instant::now();
    let index = mnemo_index_sqlite::open(&ws, settings, emb).unwrap();
    let status = index.status().unwrap();
    println!(
        "opened: {} files, {} chunks, {} vectors in {:.1?}",
        status.files,
        status.chunks,
        status.vectors,
        t.elapsed()
    );
    let mut rng = StdRng::seed_from_u64(3);
    let qs: Vec<String> = (0..queries).map(|_| sentence(&mut rng, 5)).collect();
    let t = Instant::now();
    index.search(&SearchRequest::new(qs[0].as_str())).unwrap();
    println!("first search (loads the vectors): {:.1?}", t.elapsed());
    // Warm-up, then the timed round.
    for q in qs.iter().take(20) {
        index.search(&SearchRequest::new(q.as_str())).unwrap();
    }
    timed.query_ns.store(0, Ordering::Relaxed);
    let mut lat = Vec::with_capacity(qs.len());
    let mut base = Vec::with_capacity(qs.len());
    let buf: Vec<f32> = (0..16 << 20).map(|i| (i % 7) as f32).collect();
    let mut search_cpu = Duration::ZERO;
    let mut base_cpu = Duration::ZERO;
    for q in &qs {
        let c = cpu();
        let t = Instant::now();
        let r = index.search(&SearchRequest::new(q.as_str())).unwrap();
        lat.push(t.elapsed());
        search_cpu += cpu() - c;
        std::hint::black_box(r);
        // The baseline: one thread, a fixed amount of arithmetic and memory.
        let c = cpu();
        let t = Instant::now();
        std::hint::black_box(buf.iter().sum::<f32>());
        base.push(t.elapsed());
        base_cpu += cpu() - c;
    }
    let cpu_ms = search_cpu.as_secs_f64() * 1e3 / qs.len() as f64;
    let base_cpu_ms = base_cpu.as_secs_f64() * 1e3 / qs.len() as f64;
    lat.sort();
    base.sort();
    let embed_ms = timed.query_ns.load(Ordering::Relaxed) as f64 / 1e6 / qs.len() as f64;
    let (now, peak) = rss();
    println!(
        "search ({} chunks, {}, sync_on_search {fresh}, {} queries): p50 {:.2?} p95 {:.2?} p99 {:.2?}; \
         query embedding {embed_ms:.3} ms of it on average; CPU {cpu_ms:.1} ms per search (both cores); \
         RSS {now:.0} MB, peak {peak:.0} MB",
        status.chunks,
        if keyword { "keyword" } else { "hybrid" },
        qs.len(),
        pct(&lat, 0.5),
        pct(&lat, 0.95),
        pct(&lat, 0.99),
    );
    println!(
        "baseline (sum of 64 MB, one thread), same loop: p50 {:.2?}, CPU {base_cpu_ms:.1} ms; \
         search p50 / baseline p50 = {:.2}, search CPU / baseline CPU = {:.2}",
        pct(&base, 0.5),
        pct(&lat, 0.5).as_secs_f64() / pct(&base, 0.5).as_secs_f64(),
        cpu_ms / base_cpu_ms.max(1e-9)
    );
    if recall > 0 && !keyword {
        vector_recall(&root, &timed.inner, &qs[..recall.min(qs.len())]);
    }
}

/// recall@10 of the vector scans against the exact f32 scan, on the
/// stored vectors of the index: the `Int8` scan of a set with its f32 rows
/// (the int8 pass, the exact re-rank of its pool) and of a codes-only set
/// (the 4-bit first pass, the int8 pass over what it keeps, then the pool
/// re-scored exactly, as the SQLite backend does), and the codes-only set's
/// int8 pass over every row.
fn vector_recall(root: &std::path::Path, emb: &HashEmbedder, qs: &[String]) {
    use mnemo_index_sqlite::vectors::{dot, first_pass_kernel_name, VectorSet};
    let db = root.join(".mnemo").join("index.sqlite");
    let c = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let n: usize = c
        .query_row("SELECT count(*) FROM chunks", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let d = emb.dims();
    let t = Instant::now();
    let mut set = VectorSet::with_capacity(d, n);
    let mut lean = VectorSet::codes_only(d, n);
    let mut stmt = c
        .prepare("SELECT c.id, e.embedding FROM chunks c JOIN embedding_cache e ON e.hash = c.hash")
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut row_of = std::collections::HashMap::new();
    while let Some(r) = rows.next().unwrap() {
        let id: i64 = r.get(0).unwrap();
        let blob = r.get_ref(1).unwrap().as_blob().unwrap();
        row_of.insert(id, set.len());
        set.push_le_bytes(id, 0, blob);
        lean.push_le_bytes(id, 0, blob);
    }
    let t_load = t.elapsed();
    let t = Instant::now();
    lean.finish_loading();
    println!(
        "recall: {} vectors loaded in f32 in {t_load:.1?}; the 4-bit copy built in {:.1?} ({})",
        set.len(),
        t.elapsed(),
        first_pass_kernel_name(),
    );
    let k = 50; // the candidates a default search asks the vector side for
                // Re-scores a codes-only pool exactly, as `SqliteBackend::rescore` does.
    let rescore = |pool: Vec<(i64, f32)>, q: &[f32]| -> Vec<i64> {
        let mut exact: Vec<(i64, f32)> = pool
            .into_iter()
            .map(|(id, _)| {
                let r = row_of[&id];
                (id, dot(&set.data()[r * d..(r + 1) * d], q))
            })
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.into_iter().take(10).map(|x| x.0).collect()
    };
    let mut hits = [0usize; 3];
    let mut times = [Duration::ZERO; 4];
    let mut total = 0usize;
    for q in qs {
        let v = emb
            .embed(&[q.as_str()], EmbedKind::Query)
            .unwrap()
            .remove(0);
        let t = Instant::now();
        let want: Vec<i64> = set.top_k(&v, 10, None).into_iter().map(|x| x.0).collect();
        times[0] += t.elapsed();
        let t = Instant::now();
        let got = set.search(VectorScan::Int8, &v, k, None);
        times[1] += t.elapsed();
        let t = Instant::now();
        let first = lean.search(VectorScan::Int8, &v, k, None);
        times[2] += t.elapsed();
        let t = Instant::now();
        let full = lean.search(VectorScan::FullInt8, &v, k, None);
        times[3] += t.elapsed();
        let lists = [
            got.iter().take(10).map(|x| x.0).collect::<Vec<_>>(),
            rescore(first, &v),
            rescore(full, &v),
        ];
        for (h, l) in hits.iter_mut().zip(&lists) {
            *h += l.iter().filter(|id| want.contains(id)).count();
        }
        total += want.len();
    }
    let per = |t: Duration| t / qs.len().max(1) as u32;
    let r = |h: usize| h as f64 / total.max(1) as f64;
    println!(
        "recall@10 against the exact scan over {} queries (exact scan {:.2?} a query):\n  \
         int8 scan, f32 rows (pool {}): {:.4} ({:.2?})\n  \
         codes only, 4-bit first pass (keeps {}), int8, exact re-score: {:.4} ({:.2?} before the re-score)\n  \
         codes only, int8 over every row, exact re-score: {:.4} ({:.2?} before the re-score)",
        qs.len(),
        per(times[0]),
        mnemo_index_sqlite::vectors::rerank_pool(k),
        r(hits[0]),
        per(times[1]),
        mnemo_index_sqlite::vectors::first_pass_pool(mnemo_index_sqlite::vectors::rerank_pool(k)),
        r(hits[1]),
        per(times[2]),
        r(hits[2]),
        per(times[3]),
    );
}
