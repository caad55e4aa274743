//! Search at scale on PostgreSQL, beside SQLite in the same run: builds an
//! index of N generated chunks (seeded, the corpus of mnemo-index's
//! benchmarks) in both backends with the hashing embedder, then times warm
//! hybrid searches (the query embedded each time), the same searches from
//! 8 threads at once, and the HNSW vector search's recall@10 against an
//! exact scan of the same vectors.
//!
//! ```sh
//! scripts/postgres.sh start     # prints URL
//! cargo run --release -p mnemo-index-postgres --example pg_scale -- --url URL --chunks 100000
//! ```
//!
//! Options: `--url URL` (else `MNEMO_TEST_POSTGRES_URL`), `--chunks N`
//! (100,000), `--per-file K` (100), `--queries Q` (300), `--clients C`
//! (8), `--recall Q` (100), `--dir D` (a workspace to reuse; the corpus is
//! written once), `--schema S` (`mnemo_scale`, reused when it holds the
//! corpus: the build is then skipped), `--sqlite-too` (also build and time
//! the SQLite index of the same workspace), `--model DIR` (embed with this
//! local model instead of the hashing embedder: the default model is
//! `.mnemo-models/multilingual-e5-small-q4`), `--int8` (that model on int8
//! products, as the default model runs on CPUs with VNNI), `--vectors FILE`
//! (each text's vector computed once and kept in FILE: a build then times
//! the index's work, not the model's), `--no-phrases` (no search for the
//! query's adjacent word pairs: `[search] phrase_weight = 0`), `--dialogue DATA` (instead of
//! generated notes, real dialogue: notes of two short turns each, a pair
//! drawn at random from the dev sets' conversations in the folder DATA and
//! never drawn twice, with the dev sets' questions as the queries; the
//! files are read where they are, never copied; the chunker packs some
//! notes together, so `--chunks 110000` makes about 100,000 chunks), `--ef-sweep
//! 100,200,400` (the recall queries again straight in SQL at each
//! `hnsw.ef_search`, the 40 nearest re-ranked as the backend does: recall@10
//! and time per query), `--hnsw M,EFC` (first rebuild the live HNSW index
//! with `m` M and `ef_construction` EFC, timed; the sweep then measures it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use mnemo_core::{EmbedKind, Embedder, Workspace};
use mnemo_embed::{Engine, HashEmbedder, LocalEmbedder};
use mnemo_index::backend::{ChunkRecord, Counts, FileRecord, NewChunk};
use mnemo_index::{
    Generation, IndexBackend, IndexSettings, IndexStore, LockWait, MemoryIndex, SearchRequest,
    Source, WriterLock,
};
use mnemo_index_postgres::{PostgresOptions, PostgresStore};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

#[path = "../../index-sqlite/benches/corpus.rs"]
mod corpus;
use corpus::{sentence, write_corpus};

/// Time spent in each backend call, by method, over a timed round.
#[derive(Default)]
struct Calls(Mutex<BTreeMap<&'static str, (u32, Duration)>>);

impl Calls {
    fn time<T>(&self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        let mut m = self.0.lock().unwrap();
        let e = m.entry(name).or_default();
        e.0 += 1;
        e.1 += t.elapsed();
        out
    }
    fn report(&self, searches: usize) -> String {
        let m = self.0.lock().unwrap();
        m.iter()
            .map(|(k, (n, d))| {
                format!(
                    "{k} {:.2} ms x{:.1}",
                    d.as_secs_f64() * 1e3 / searches as f64,
                    *n as f64 / searches as f64
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// A store whose backend times every call (what a search spends where).
struct Timed<S> {
    inner: S,
    calls: Arc<Calls>,
}

struct TimedBackend {
    inner: Arc<dyn IndexBackend>,
    calls: Arc<Calls>,
}

impl<S: IndexStore> IndexStore for Timed<S> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn schema_version(&self) -> String {
        self.inner.schema_version()
    }
    fn location(&self) -> String {
        self.inner.location()
    }
    fn live(&self) -> mnemo_index::Result<Arc<dyn IndexBackend>> {
        let inner = self.calls.time("live", || self.inner.live())?;
        Ok(Arc::new(TimedBackend {
            inner,
            calls: self.calls.clone(),
        }))
    }
    fn lock(&self, wait: LockWait) -> mnemo_index::Result<Option<WriterLock>> {
        self.inner.lock(wait)
    }
    fn lock_location(&self) -> String {
        self.inner.lock_location()
    }
    fn new_generation(&self) -> mnemo_index::Result<Box<dyn Generation>> {
        self.inner.new_generation()
    }
    fn scrub(&self) -> mnemo_index::Result<()> {
        self.inner.scrub()
    }
}

type R<T> = mnemo_index::Result<T>;

impl IndexBackend for TimedBackend {
    fn meta(&self) -> R<HashMap<String, String>> {
        self.calls.time("meta", || self.inner.meta())
    }
    fn set_meta(&self, e: &[(&str, String)]) -> R<()> {
        self.inner.set_meta(e)
    }
    fn files(&self) -> R<Vec<FileRecord>> {
        self.calls.time("files", || self.inner.files())
    }
    fn upsert_file(&self, f: &FileRecord, c: &[NewChunk], v: Option<&[Vec<f32>]>) -> R<()> {
        self.inner.upsert_file(f, c, v)
    }
    fn touch_file(&self, p: &str, m: i64, s: u64) -> R<()> {
        self.inner.touch_file(p, m, s)
    }
    fn delete_file(&self, p: &str) -> R<()> {
        self.inner.delete_file(p)
    }
    fn keyword_search(&self, t: &[String], l: usize, s: &[Source]) -> R<Vec<(i64, f64)>> {
        self.calls
            .time("keyword", || self.inner.keyword_search(t, l, s))
    }
    fn keyword_searches(&self, t: &[&[String]], l: usize, s: &[Source]) -> R<Vec<Vec<(i64, f64)>>> {
        self.calls
            .time("keyword", || self.inner.keyword_searches(t, l, s))
    }
    fn concurrent_sides(&self) -> bool {
        self.inner.concurrent_sides()
    }
    fn vector_search(&self, q: &[f32], k: usize, s: &[Source]) -> R<Vec<(i64, f32)>> {
        self.calls
            .time("vector", || self.inner.vector_search(q, k, s))
    }
    fn chunks_in_days(&self, a: NaiveDate, b: NaiveDate, l: usize, s: &[Source]) -> R<Vec<i64>> {
        self.calls
            .time("days", || self.inner.chunks_in_days(a, b, l, s))
    }
    fn day_range(&self) -> R<Option<(NaiveDate, NaiveDate)>> {
        self.calls.time("day_range", || self.inner.day_range())
    }
    fn prune_embedding_cache(&self, keep: usize) -> R<usize> {
        self.inner.prune_embedding_cache(keep)
    }
    fn chunks(&self, ids: &[i64]) -> R<Vec<ChunkRecord>> {
        self.calls.time("chunks", || self.inner.chunks(ids))
    }
    fn cached_embeddings(&self, h: &[&str]) -> R<HashMap<String, Vec<f32>>> {
        self.inner.cached_embeddings(h)
    }
    fn counts(&self) -> R<Counts> {
        self.calls.time("counts", || self.inner.counts())
    }
    fn embedding_cache_page(&self, a: &str, l: usize) -> R<Vec<(String, Vec<f32>)>> {
        self.inner.embedding_cache_page(a, l)
    }
    fn put_cached_embeddings(&self, r: &[(String, Vec<f32>)]) -> R<()> {
        self.inner.put_cached_embeddings(r)
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// p50 and p99 of one client's searches, and of `clients` at once.
fn time_searches(index: &Arc<MemoryIndex>, qs: &[String], clients: usize) -> String {
    for q in qs.iter().take(20) {
        index.search(&SearchRequest::new(q.as_str())).unwrap();
    }
    let mut one: Vec<Duration> = qs
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.search(&SearchRequest::new(q.as_str())).unwrap());
            t.elapsed()
        })
        .collect();
    one.sort();
    let t = Instant::now();
    let mut many: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let index = index.clone();
                s.spawn(move || {
                    qs.iter()
                        .skip(c)
                        .step_by(clients)
                        .chain(qs.iter().skip(c).step_by(clients))
                        .map(|q| {
                            let t = Instant::now();
                            std::hint::black_box(
                                index.search(&SearchRequest::new(q.as_str())).unwrap(),
                            );
                            t.elapsed()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let wall = t.elapsed();
    many.sort();
    format!(
        "1 client: p50 {:.2?} p99 {:.2?}; {clients} clients: p50 {:.2?} p99 {:.2?}, {:.0} searches/s",
        pct(&one, 0.5),
        pct(&one, 0.99),
        pct(&many, 0.5),
        pct(&many, 0.99),
        many.len() as f64 / wall.as_secs_f64()
    )
}

/// A plain client of the test server on a runtime of its own.
fn connect(url: &str) -> (tokio::runtime::Runtime, tokio_postgres::Client) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (client, conn) = rt
        .block_on(tokio_postgres::connect(url, tokio_postgres::NoTls))
        .unwrap();
    rt.spawn(conn);
    (rt, client)
}

/// A recall query: its vector and the exact scan's ten (chunk id, cosine
/// distance), nearest first.
type Asked = (Vec<f32>, Vec<(i64, f64)>);

/// How many of the exact top 10 the search found: its results as near as
/// the exact 10th (with a rounding margin; the backend's scores are
/// `real`) count, so that a chunk tied with one of the exact ten (the same
/// turn drawn into two notes) is not a miss.
fn hits(got: &[(i64, f64)], exact: &[(i64, f64)]) -> usize {
    let Some(&(_, tenth)) = exact.last() else {
        return 0;
    };
    let near = got.iter().filter(|(_, d)| *d <= tenth + 1e-6).count();
    near.min(exact.len())
}

/// Recall@10 and time per query of the HNSW search at each `ef_search`,
/// for query vectors with their exact top 10; first, with `hnsw`, the live
/// schema's HNSW index rebuilt with those `m` and `ef_construction`.
fn sweep(url: &str, live: &str, hnsw: Option<(u32, u32)>, efs: &[i64], asked: &[Asked]) {
    let (rt, client) = connect(url);
    rt.block_on(async {
        if let Some((m, efc)) = hnsw {
            let t = Instant::now();
            client
                .batch_execute(&format!(
                    "SET maintenance_work_mem = '1GB'; \
                     DROP INDEX IF EXISTS \"{live}\".chunk_vectors_hnsw; \
                     CREATE INDEX chunk_vectors_hnsw ON \"{live}\".chunk_vectors \
                     USING hnsw (embedding vector_cosine_ops) \
                     WITH (m = {m}, ef_construction = {efc})"
                ))
                .await
                .unwrap();
            println!(
                "HNSW rebuilt with m {m}, ef_construction {efc} in {:.1?}",
                t.elapsed()
            );
        }
        let sql = format!(
            "SELECT chunk_id, embedding <=> $1 FROM \"{live}\".chunk_vectors \
             ORDER BY embedding <=> $1 LIMIT 40"
        );
        for &ef in efs {
            client
                .batch_execute(&format!("SET hnsw.ef_search = {ef}"))
                .await
                .unwrap();
            // Warm the pages and the plan once.
            for (v, _) in asked.iter().take(10) {
                client
                    .query(&sql, &[&pgvector::Vector::from(v.clone())])
                    .await
                    .unwrap();
            }
            let (mut hit, mut total) = (0usize, 0usize);
            let t = Instant::now();
            for (v, exact) in asked {
                let rows = client
                    .query(&sql, &[&pgvector::Vector::from(v.clone())])
                    .await
                    .unwrap();
                let mut got: Vec<(i64, f64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
                got.sort_by(|a, b| a.1.total_cmp(&b.1));
                got.truncate(10);
                total += exact.len();
                hit += hits(&got, exact);
            }
            println!(
                "ef_search {ef}: recall@10 {:.4} ({hit}/{total}), {:.2?} per query",
                hit as f64 / total.max(1) as f64,
                t.elapsed() / asked.len().max(1) as u32
            );
        }
    });
}

/// A line every 20 files of a build, which takes an hour with a model.
fn progress(p: mnemo_index::SyncProgress) {
    if let mnemo_index::SyncProgress::File { done, total, .. } = p {
        if done % 20 == 0 || done == total {
            eprintln!("  {done}/{total} files");
        }
    }
}

/// The dev sets' short turns and their questions, read from their folder.
struct DevSets {
    /// Turns short enough that two fit in one chunk, with their speaker.
    turns: Vec<String>,
    questions: Vec<String>,
}

impl DevSets {
    fn load(dir: &std::path::Path) -> Self {
        let mut turns = Vec::new();
        let mut questions = Vec::new();
        for (name, max_chars) in [
            ("locomo_en.json", 120),
            ("memorybank_en.json", 120),
            ("memorybank_zh.json", 40),
        ] {
            let text = std::fs::read_to_string(dir.join(name)).expect("a dev set file");
            let v: serde_json::Value = serde_json::from_str(&text).expect("the dev sets' schema");
            let list =
                |v: &serde_json::Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
            for conv in list(&v, "conversations") {
                for session in list(&conv, "sessions") {
                    for t in list(&session, "turns") {
                        let text = t["text"].as_str().unwrap_or("").trim();
                        if text.is_empty() || text.chars().count() > max_chars {
                            continue;
                        }
                        turns.push(match t["speaker"].as_str().unwrap_or("") {
                            "" => text.to_string(),
                            who => format!("{who}: {text}"),
                        });
                    }
                }
            }
            for q in list(&v, "questions") {
                questions.extend(q["question"].as_str().map(str::to_string));
            }
        }
        DevSets { turns, questions }
    }

    /// `chunks` notes of two different short turns each (one chunk a
    /// note; no pair twice, so no two chunks alike), `per_file` to a daily
    /// log, in the generated corpus's layout.
    fn write_corpus(&self, root: &std::path::Path, chunks: usize, per_file: usize, seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut used = std::collections::HashSet::new();
        let dir = root.join("memory");
        std::fs::create_dir_all(&dir).unwrap();
        let n = self.turns.len();
        for f in 0..chunks.div_ceil(per_file) {
            let date = NaiveDate::from_ymd_opt(2020, 1, 1).unwrap() + chrono::Days::new(f as u64);
            let mut text = String::new();
            for s in 0..per_file.min(chunks - f * per_file) {
                let (a, b) = loop {
                    let pair = (rng.random_range(0..n), rng.random_range(0..n));
                    if pair.0 != pair.1 && used.insert(pair) {
                        break pair;
                    }
                };
                let (a, b) = (&self.turns[a], &self.turns[b]);
                text.push_str(&format!("## Note {s}\n{a}\n{b}\n"));
            }
            std::fs::write(dir.join(format!("{}.md", date.format("%Y-%m-%d"))), text).unwrap();
        }
    }
}

fn main() {
    let mut url = std::env::var("MNEMO_TEST_POSTGRES_URL").ok();
    let mut chunks = 100_000usize;
    let mut per_file = 100usize;
    let mut queries = 300usize;
    let mut clients = 8usize;
    let mut recall = 100usize;
    let mut dir: Option<PathBuf> = None;
    let mut schema = "mnemo_scale".to_string();
    let mut sqlite_too = false;
    let mut model: Option<PathBuf> = None;
    let mut int8 = false;
    let mut memo: Option<PathBuf> = None;
    let mut phrases = true;
    let mut dialogue: Option<PathBuf> = None;
    let mut ef_sweep: Vec<i64> = Vec::new();
    let mut hnsw: Option<(u32, u32)> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--url" => url = Some(val()),
            "--chunks" => chunks = val().parse().unwrap(),
            "--per-file" => per_file = val().parse::<usize>().unwrap().max(1),
            "--queries" => queries = val().parse().unwrap(),
            "--clients" => clients = val().parse::<usize>().unwrap().max(1),
            "--recall" => recall = val().parse().unwrap(),
            "--dir" => dir = Some(PathBuf::from(val())),
            "--schema" => schema = val(),
            "--sqlite-too" => sqlite_too = true,
            "--model" => model = Some(PathBuf::from(val())),
            "--int8" => int8 = true,
            "--vectors" => memo = Some(PathBuf::from(val())),
            "--no-phrases" => phrases = false,
            "--dialogue" => dialogue = Some(PathBuf::from(val())),
            "--ef-sweep" => ef_sweep = val().split(',').map(|v| v.parse().unwrap()).collect(),
            "--hnsw" => {
                let v = val();
                let (m, efc) = v.split_once(',').expect("--hnsw M,EFC");
                hnsw = Some((m.parse().unwrap(), efc.parse().unwrap()));
            }
            other => panic!("unknown argument {other}"),
        }
    }
    let url = url.expect("--url or MNEMO_TEST_POSTGRES_URL");
    let tmp;
    let root = match dir {
        Some(d) => d,
        None => {
            tmp = tempfile::tempdir().unwrap();
            tmp.path().to_path_buf()
        }
    };
    let dev = dialogue.as_deref().map(DevSets::load);
    if !root.join("memory").exists() {
        let t = Instant::now();
        match &dev {
            Some(dev) => dev.write_corpus(&root, chunks, per_file, 11),
            None => write_corpus(&root, chunks, per_file, 11),
        }
        println!("wrote {chunks} chunks in {:.1?}", t.elapsed());
    }
    let ws = Workspace::new(&root);
    let mut settings = IndexSettings::default();
    settings.index.chunk_tokens = 80;
    settings.index.chunk_overlap = 0;
    settings.search.sync_on_search = false;
    if !phrases {
        settings.search.phrase_weight = 0.0;
    }
    let emb: Arc<dyn Embedder> = match &model {
        Some(dir) => {
            let engine = if int8 { Engine::Int8 } else { Engine::Auto };
            Arc::new(
                LocalEmbedder::load_on(dir, engine).expect("the model (scripts/fetch-models.sh)"),
            )
        }
        None => Arc::new(HashEmbedder::new(384)),
    };
    let emb: Arc<dyn Embedder> = match &memo {
        Some(path) => {
            let memo = mnemo_test_support::Memo::with_file(emb, path).unwrap();
            println!("{} vectors read from {}", memo.len(), path.display());
            Arc::new(memo)
        }
        None => emb,
    };
    let mut rng = StdRng::seed_from_u64(3);
    let qs: Vec<String> = match &dev {
        Some(dev) => {
            let mut qs = dev.questions.clone();
            qs.shuffle(&mut rng);
            qs.truncate(queries);
            qs
        }
        None => (0..queries).map(|_| sentence(&mut rng, 5)).collect(),
    };

    let opts = PostgresOptions {
        url: url.clone(),
        schema,
    };
    let store = Arc::new(PostgresStore::open(&opts, Some((emb.id(), emb.dims()))).unwrap());
    let calls = Arc::new(Calls::default());
    let timed = Arc::new(Timed {
        inner: PostgresStore::open(&opts, Some((emb.id(), emb.dims()))).unwrap(),
        calls: calls.clone(),
    });
    let pg = Arc::new(
        MemoryIndex::with_store(&ws, settings.clone(), Some(emb.clone()), store.clone()).unwrap(),
    );
    let t = Instant::now();
    let r = pg.sync(&progress).unwrap();
    println!(
        "postgres build: {} files, {} chunks written in {:.1?} ({:.0} chunks/s)",
        r.indexed.len(),
        r.chunks_written,
        t.elapsed(),
        r.chunks_written as f64 / t.elapsed().as_secs_f64().max(1e-9)
    );
    let st = pg.status().unwrap();
    println!(
        "postgres: {} chunks, {} vectors at {}",
        st.chunks, st.vectors, st.location
    );
    println!(
        "postgres search ({} queries, hybrid, query embedded): {}",
        qs.len(),
        time_searches(&pg, &qs, clients)
    );
    // Where a search's time goes: the same searches over a store that
    // times each backend call.
    let traced = MemoryIndex::with_store(&ws, settings.clone(), Some(emb.clone()), timed).unwrap();
    for q in qs.iter().take(20) {
        traced.search(&SearchRequest::new(q.as_str())).unwrap();
    }
    calls.clear();
    let t = Instant::now();
    for q in &qs {
        traced.search(&SearchRequest::new(q.as_str())).unwrap();
    }
    println!(
        "postgres, per search ({:.2} ms in all): {}",
        t.elapsed().as_secs_f64() * 1e3 / qs.len() as f64,
        calls.report(qs.len())
    );

    let mut asked: Vec<Asked> = Vec::new();
    if recall > 0 {
        let backend = store.live().unwrap();
        let live = store.live_schema().unwrap();
        let (rt, client) = connect(&url);
        let mut hit = 0usize;
        let mut total = 0usize;
        let mut exact_time = Duration::ZERO;
        for q in qs.iter().take(recall) {
            let v = emb
                .embed(&[q.as_str()], EmbedKind::Query)
                .unwrap()
                .remove(0);
            // Cosine distances, as the exact scan reports them.
            let got: Vec<(i64, f64)> = backend
                .vector_search(&v, 10, &[])
                .unwrap()
                .into_iter()
                .map(|(id, sim)| (id, 1.0 - f64::from(sim)))
                .collect();
            let t = Instant::now();
            // An exact scan: the index switched off for this transaction.
            let exact: Vec<(i64, f64)> = rt.block_on(async {
                client
                    .batch_execute("BEGIN; SET LOCAL enable_indexscan = off")
                    .await
                    .unwrap();
                let rows = client
                    .query(
                        &format!(
                            "SELECT chunk_id, embedding <=> $1 FROM \"{live}\".chunk_vectors \
                             ORDER BY embedding <=> $1 LIMIT 10"
                        ),
                        &[&pgvector::Vector::from(v.clone())],
                    )
                    .await
                    .unwrap();
                client.batch_execute("COMMIT").await.unwrap();
                rows.iter().map(|r| (r.get(0), r.get(1))).collect()
            });
            exact_time += t.elapsed();
            total += exact.len();
            hit += hits(&got, &exact);
            asked.push((v, exact));
        }
        println!(
            "HNSW recall@10 against the exact scan: {:.4} over {recall} queries ({hit}/{total}); \
             exact scan {:.1?} per query",
            hit as f64 / total.max(1) as f64,
            exact_time / recall.max(1) as u32
        );
    }

    if !ef_sweep.is_empty() || hnsw.is_some() {
        let live = store.live_schema().unwrap();
        sweep(&url, &live, hnsw, &ef_sweep, &asked);
    }

    if sqlite_too {
        let sqlite = Arc::new(mnemo_index_sqlite::open(&ws, settings, Some(emb)).unwrap());
        let t = Instant::now();
        let r = sqlite.sync(&|_| {}).unwrap();
        println!(
            "sqlite build: {} chunks written in {:.1?} ({:.0} chunks/s)",
            r.chunks_written,
            t.elapsed(),
            r.chunks_written as f64 / t.elapsed().as_secs_f64().max(1e-9)
        );
        println!(
            "sqlite search ({} queries, hybrid, query embedded): {}",
            qs.len(),
            time_searches(&sqlite, &qs, clients)
        );
    }
}
