//! mnemo-index-postgres: the PostgreSQL + pgvector implementation of
//! mnemo's [`IndexBackend`], for indexes that outgrow one machine and one
//! file.
//!
//! One index is one PostgreSQL schema (default `mnemo`) in a database with
//! the `vector` extension: files, chunks, mnemo's own BM25 postings (see
//! [`keyword`](crate::keyword): the same ranking as SQLite's FTS5 over the
//! same tokens), the chunk vectors with an HNSW index (cosine), the
//! embedding cache and metadata. The schema is created and migrated by
//! mnemo (`mnemo_schema` holds its version). Writes are short transactions
//! serialised by an advisory lock on the schema, so two writers (two
//! `mnemo index` processes) never duplicate or lose a chunk.
//!
//! ```no_run
//! use mnemo_index::IndexBackend;
//! use mnemo_index_postgres::{PostgresBackend, PostgresOptions};
//!
//! let opts = PostgresOptions::new("postgres://mnemo:secret@db.example:5432/mnemo");
//! let backend = PostgresBackend::open(&opts, None)?;
//! println!("{} chunks", backend.counts()?.chunks);
//! # Ok::<(), mnemo_index::IndexError>(())
//! ```

mod keyword;
mod pool;
mod schema;
mod store;

pub use store::{Postgres, PostgresStore};

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::NaiveDate;
use mnemo_core::EmbedderId;
use mnemo_index::backend::{
    diff_chunks, keyword_plan, tokens_of, ChunkDiff, ChunkKey, ChunkRecord, Counts, FileRecord,
    KeywordPlan, NewChunk,
};
use mnemo_index::chunk::MessagePart;
use mnemo_index::{IndexBackend, IndexError, Result, Source};
use mnemo_postgres::Target;
use pgvector::Vector;
use rustc_hash::FxHashMap;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

use crate::pool::{Pool, Runtime};

/// Where an index lives in PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// `postgres://user:password@host:port/database` (or a libpq key=value
    /// string), with libpq's `sslmode` and `sslrootcert` for TLS
    /// (`?sslmode=verify-full` checks the server's certificate and name).
    pub url: String,
    /// The schema holding the index's tables (created if missing): several
    /// indexes can share a database. Lower-case letters, digits and `_`.
    pub schema: String,
}

impl PostgresOptions {
    /// `url` with the default schema, `mnemo`.
    pub fn new(url: impl Into<String>) -> Self {
        PostgresOptions {
            url: url.into(),
            schema: "mnemo".into(),
        }
    }
}

/// The client's settings for `url` (mnemo's defaults and libpq's TLS
/// settings, see [`mnemo_postgres::Target`]), and its location.
pub(crate) fn client_config(url: &str) -> Result<(Target, String)> {
    let target = Target::parse(url)
        .map_err(|e| IndexError::Config(format!("[index] url: {e}")))?
        .named("index database");
    let location = target.location().to_string();
    Ok((target, location))
}

/// The model key vectors are stored under.
fn model_key(id: &EmbedderId) -> String {
    format!("{}/{}/{}", id.provider, id.model, id.provider_key)
}

/// A stored source name (as [`Source::as_str`] wrote it).
fn source_of(s: &str) -> Source {
    match s {
        "sessions" => Source::Sessions,
        _ => Source::Memory,
    }
}

/// The sources of a filter, `None` for all (an empty filter or both).
fn source_list(sources: &[Source]) -> Option<Vec<String>> {
    let set: HashSet<&str> = sources.iter().map(|s| s.as_str()).collect();
    (!set.is_empty() && set.len() < 2).then(|| set.into_iter().map(String::from).collect())
}

/// One index in a PostgreSQL schema.
pub struct PostgresBackend {
    rt: Runtime,
    pool: Arc<Pool>,
    /// The model served and its dimension.
    embedder: Option<(String, usize)>,
    /// The advisory lock key of the schema (its writers' lock).
    lock_key: i64,
    /// Chunks this process wrote since it last re-packed the word lists
    /// (see `after_writes`).
    written: AtomicUsize,
    /// How this process's writes since the last `after_writes` treat the
    /// HNSW graph.
    graph: Mutex<Graph>,
    /// The keyword search's statistics, for one revision of the index.
    stats: Arc<Mutex<keyword::Stats>>,
    /// The index's chunks as the last search saw them (-1: not yet), for
    /// the HNSW search breadth ([`ef_search`]).
    size: Arc<AtomicI64>,
}

/// Chunks written before `after_writes` looks at re-packing the word
/// lists at all.
const REPACK_MIN: usize = 1000;

/// Chunks a load of an empty index writes before its HNSW graph is
/// dropped, to be built when the load is done (see [`Graph`]).
const LOAD_MIN: usize = 256;

/// What this process's writes do with the HNSW graph of the chunk
/// vectors. Inserting vectors into the graph one at a time was most of a
/// first build's time; building the graph once over the loaded vectors,
/// with parallel workers, is several times faster (100,000 chunks: 748 s
/// before, 124 s in all, against 23 s for SQLite: docs/BENCHMARKS-LOG.md
/// item 55). Meanwhile a vector
/// search scans exactly: slower, never wrong. So a load of an empty index
/// (a first build, or a rebuild's new generation) drops the graph once it
/// has written [`LOAD_MIN`] chunks, and `after_writes` builds it again;
/// `after_writes` also builds a graph found missing (a load stopped before
/// its end), whoever dropped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Graph {
    /// Not looked at since the last `after_writes`.
    #[default]
    Unknown,
    /// The index held vectors at this process's first write (or serves no
    /// model): each vector goes into the graph as it is written.
    Kept,
    /// The index held no vectors at the first write: a load, of this many
    /// chunks so far.
    Loading(usize),
    /// This process dropped the graph, to build it after the load.
    Deferred,
}

impl Graph {
    /// A load of an empty index: its writes may skip what only protects
    /// an index in use (see `upsert`).
    fn loading(self) -> bool {
        matches!(self, Graph::Loading(_) | Graph::Deferred)
    }
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("location", &self.pool.location)
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Connects to the database, checks for pgvector, creates or migrates
    /// the schema, and binds the chunk vectors to `embedder`'s model (its
    /// id and dimension): vectors of another model or dimension are never
    /// mixed with them (the chunk vectors are made anew from the embedding
    /// cache when the model changes).
    pub fn open(opts: &PostgresOptions, embedder: Option<(EmbedderId, usize)>) -> Result<Self> {
        let (config, location) = client_config(&opts.url)?;
        if !mnemo_core::schema::valid_schema_name(&opts.schema) {
            return Err(IndexError::Config(format!(
                "PostgreSQL schema name `{}` for the index: use lower-case letters, digits and _",
                opts.schema
            )));
        }
        let rt = Runtime::shared().map_err(|e| {
            IndexError::database(
                location.clone(),
                format!("cannot start the client's runtime: {e}"),
            )
        })?;
        let schema = opts.schema.clone();
        let model = embedder.map(|(id, dims)| (model_key(&id), dims));
        // On a connection of the process's shared idle ones: a server of
        // many workspaces opens indexes all the time, and a new session
        // costs the database server a process.
        let setup = Arc::new(Pool::any_path(config.clone(), location.clone()));
        let (loc, m) = (location.clone(), model.clone());
        let (search_path, lock_key) = rt.run(async move {
            let mut c = setup.get().await?;
            let r = prepare(&mut c, &loc, &schema, m).await;
            setup.put(c, r)
        })?;
        let pool = Arc::new(Pool::new(config, location, search_path));
        Ok(PostgresBackend {
            rt,
            pool,
            embedder: model,
            lock_key,
            written: AtomicUsize::new(0),
            graph: Mutex::new(Graph::Unknown),
            stats: Arc::default(),
            size: Arc::new(AtomicI64::new(-1)),
        })
    }

    /// Lays the word lists out word by word (`CLUSTER`) and counts the
    /// writes afresh: written file by file, a word's rows lie scattered
    /// over the table, and a common word's thousand rows cost a page each
    /// (keyword search over 100,000 chunks: 25 ms scattered, 9.6 ms
    /// packed; docs/BENCHMARKS-LOG.md item 42).
    pub(crate) fn repack(&self) -> Result<()> {
        self.with(|pool, c| async move {
            let r = c
                .batch_execute(&format!(
                    "{}; ANALYZE word_lists",
                    cluster_word_lists("word_lists")
                ))
                .await
                .map_err(|e| pool.db(e));
            (c, r)
        })?;
        self.written.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Whether this process wrote chunks since the word lists were last
    /// re-packed.
    pub(crate) fn written_since_repack(&self) -> bool {
        self.written.load(Ordering::Relaxed) > 0
    }

    /// Builds the HNSW graph of the chunk vectors when it is missing: a
    /// load dropped it (see [`Graph`]), or one was stopped before building
    /// it again. The next write of this process looks at the index afresh.
    pub(crate) fn build_graph(&self) -> Result<()> {
        *self.graph.lock().unwrap_or_else(|e| e.into_inner()) = Graph::Unknown;
        let Some((_, dims)) = self.model() else {
            return Ok(());
        };
        if dims > schema::HNSW_MAX_DIMS {
            return Ok(());
        }
        let key = self.lock_key;
        self.with(move |pool, mut c| async move {
            let r = build_graph(&mut c, key, dims).await.map_err(|e| pool.db(e));
            (c, r)
        })
    }

    /// Deletes the index's schema and everything in it.
    pub fn drop_schema(opts: &PostgresOptions) -> Result<()> {
        if !mnemo_core::schema::valid_schema_name(&opts.schema) {
            return Err(IndexError::Config(format!(
                "PostgreSQL schema name `{}`: use lower-case letters, digits and _",
                opts.schema
            )));
        }
        let (config, location) = client_config(&opts.url)?;
        let rt = Runtime::shared().map_err(|e| IndexError::database(location.clone(), e))?;
        let schema = opts.schema.clone();
        rt.run(async move {
            let c = pool::connect(&config).await?;
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
                .await
                .map_err(|e| IndexError::database(location.clone(), pool::describe(&e)))
        })
    }

    /// Where the index is: the URL without its password.
    pub fn location(&self) -> &str {
        &self.pool.location
    }

    /// Runs `f` with a pooled connection on the private runtime.
    fn with<T, F, Fut>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Arc<Pool>, pool::Pooled) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (pool::Pooled, Result<T>)> + Send + 'static,
    {
        let pool = self.pool.clone();
        self.rt.run(async move {
            let c = pool.get().await?;
            let (c, r) = f(pool.clone(), c).await;
            pool.put(c, r)
        })
    }

    /// The model served and its dimension, or `None`.
    fn model(&self) -> Option<(String, usize)> {
        self.embedder.clone()
    }
}

/// What [`PostgresBackend::open`] does on the server: the `vector`
/// extension, the schema and its migrations, the model's vectors. Returns
/// the search path and the advisory lock key.
async fn prepare(
    c: &mut pool::Pooled,
    location: &str,
    schema: &str,
    model: Option<(String, usize)>,
) -> Result<(String, i64)> {
    let db = |e: tokio_postgres::Error| pool::db_error(location, &e);
    let ext =
        "SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
               WHERE e.extname = 'vector'";
    // The extension's schema, once per process and database: planning
    // this catalog join costs the server several milliseconds.
    static VECTOR_SCHEMA: std::sync::OnceLock<Mutex<HashMap<String, String>>> =
        std::sync::OnceLock::new();
    let known = VECTOR_SCHEMA.get_or_init(Default::default);
    let cached = known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(location)
        .cloned();
    let mut vector_schema = match cached {
        Some(s) => Some(s),
        None => c.query_opt(ext, &[]).await.map_err(db)?.map(|r| r.get(0)),
    };
    if vector_schema.is_none() {
        // Allowed for a superuser or the database's owner on PostgreSQL 13+
        // when pgvector is installed on the server.
        if c.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
            .await
            .is_ok()
        {
            vector_schema = c.query_opt(ext, &[]).await.map_err(db)?.map(|r| r.get(0));
        }
    }
    let Some(vector_schema) = vector_schema else {
        return Err(IndexError::Config(format!(
            "the database at {location} has no `vector` extension (pgvector), and mnemo may not \
             create it: install pgvector on the server and run `CREATE EXTENSION vector;` in the \
             database as a superuser"
        )));
    };
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(location.to_string(), vector_schema.clone());
    let search_path = format!("\"{schema}\", \"{vector_schema}\"");
    if let Some(lock_key) = ready(c, schema, model.as_ref()).await {
        return Ok((search_path, lock_key));
    }
    let lock_key: i64 = c
        .query_one(
            "SELECT hashtextextended('mnemo-index:' || $1, 0)",
            &[&schema],
        )
        .await
        .map_err(db)?
        .get(0);
    let tx = c.transaction().await.map_err(db)?;
    // One opener at a time migrates; writers wait for the same lock.
    // A wait for another writer has no statement timeout.
    tx.batch_execute(&mnemo_postgres::xact_lock(lock_key))
        .await
        .map_err(db)?;
    // DDL only where something is missing: a read-only database serves
    // searches of an index made before.
    let exists = tx
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .await
        .map_err(db)?
        .is_some();
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await
            .map_err(db)?;
    }
    tx.batch_execute(&format!("SET LOCAL search_path TO {search_path}"))
        .await
        .map_err(db)?;
    match schema::migrate(&tx).await {
        Ok(()) => {}
        Err(schema::Migration::Newer(v)) => {
            return Err(IndexError::Config(format!(
                "the index in schema `{schema}` at {location} has version {v}, written by a newer \
                 mnemo (this one knows versions up to {}): upgrade mnemo, or point it at another \
                 schema or database",
                schema::current()
            )))
        }
        Err(schema::Migration::Db(e)) => return Err(db(e)),
    }
    if let Some((model, dims)) = &model {
        if schema::bind_model(&tx, model, *dims).await.map_err(db)? {
            tracing::info!("index at {location}: chunk vectors now of {model} ({dims} dimensions)");
        }
    }
    tx.commit().await.map_err(db)?;
    Ok((search_path, lock_key))
}

/// The lock key of an index that needs nothing of [`prepare`]'s: its
/// schema at this mnemo's version, its vectors of `model`. One round trip,
/// without the lock (a server of many workspaces opens their indexes all
/// the time); `None` sends the open the whole way, as does any error (a
/// schema not made yet). `schema` is a valid name, safe to format in.
async fn ready(c: &Client, schema: &str, model: Option<&(String, usize)>) -> Option<i64> {
    let sql = format!(
        "SELECT hashtextextended('mnemo-index:{schema}', 0), \
                (SELECT version FROM \"{schema}\".mnemo_schema), \
                (SELECT model FROM \"{schema}\".vector_model), \
                (SELECT dims FROM \"{schema}\".vector_model)"
    );
    let row = mnemo_postgres::simple_row(c, &sql).await.ok()??;
    let [key, version, bound, dims] = <[Option<String>; 4]>::try_from(row).ok()?;
    let current = version?.parse::<i32>().ok()? == schema::current();
    let same_model = model.is_none_or(|(m, d)| {
        bound.as_deref() == Some(m.as_str()) && dims.as_deref() == Some(d.to_string().as_str())
    });
    (current && same_model).then_some(key?.parse().ok()?)
}

/// Checks, inside a write transaction, that the chunk vectors are still
/// those of `model`: another process may have bound them to another model
/// since this one opened.
fn check_model(
    bound: Option<&tokio_postgres::Row>,
    pool: &Pool,
    model: &str,
    dims: usize,
) -> Result<()> {
    let bound = bound.map(|r| (r.get::<_, String>(0), r.get::<_, i32>(1) as usize));
    match bound {
        Some((m, d)) if m == model && d == dims => Ok(()),
        Some((m, d)) => Err(IndexError::Config(format!(
            "the index at {} now holds vectors of {m} ({d} dimensions), not of {model} \
             ({dims}): another mnemo with another embedding model opened it; reopen the index \
             (vectors of two models are never mixed)",
            pool.location
        ))),
        None => Err(pool.error("the index has no vector model recorded: reopen it")),
    }
}

/// [`PostgresBackend::build_graph`] on the server: `CREATE INDEX` under
/// the writers' lock when the graph is missing, with the memory to build
/// it in one pass.
async fn build_graph(
    c: &mut pool::Pooled,
    lock_key: i64,
    dims: usize,
) -> std::result::Result<(), tokio_postgres::Error> {
    let missing: bool = c
        .query_one(
            "SELECT to_regclass('chunk_vectors') IS NOT NULL
                    AND to_regclass('chunk_vectors_hnsw') IS NULL",
            &[],
        )
        .await?
        .get(0);
    if !missing {
        return Ok(());
    }
    let tx = c.transaction().await?;
    // The wait for another writer, and the build itself (minutes for
    // millions of vectors), have no statement timeout.
    tx.batch_execute(&mnemo_postgres::xact_lock(lock_key))
        .await?;
    // pgvector builds the graph in memory when it fits in
    // `maintenance_work_mem`, else on disk, far slower (1,000,000 vectors
    // of 384 dimensions: 20,000 a minute once past 1 GiB, against 120,000
    // in memory, docs/BENCHMARKS-LOG.md item 67). So the setting is raised
    // for this build only to about the vectors and their neighbour lists,
    // never lowered, at most [`GRAPH_MEMORY_MAX_KB`]; a server that cannot
    // give that much (its shared memory for the parallel build is smaller)
    // builds with its own setting instead.
    let rows: i64 = tx
        .query_one("SELECT count(*) FROM chunk_vectors", &[])
        .await?
        .get(0);
    let want_kb = (rows.max(0) as u64)
        .saturating_mul(dims as u64 * 4 + 1024)
        .saturating_mul(5)
        / 4
        / 1024;
    let want_kb = want_kb.clamp(64 * 1024, GRAPH_MEMORY_MAX_KB) as i64;
    tx.batch_execute("SAVEPOINT graph_memory").await?;
    tx.execute(
        "SELECT set_config('maintenance_work_mem', GREATEST(setting::bigint, $1)::text || 'kB', true)
         FROM pg_settings WHERE name = 'maintenance_work_mem'",
        &[&want_kb],
    )
    .await?;
    if let Err(e) = tx.batch_execute(schema::HNSW_INDEX).await {
        // Class 53: out of memory, or of the disk behind shared memory.
        if !e.code().is_some_and(|c| c.code().starts_with("53")) {
            return Err(e);
        }
        tracing::warn!(
            "the HNSW graph did not get {want_kb} kB to build in ({e}); building it with the \
             server's maintenance_work_mem"
        );
        tx.batch_execute("ROLLBACK TO SAVEPOINT graph_memory")
            .await?;
        tx.batch_execute(schema::HNSW_INDEX).await?;
    }
    tx.commit().await
}

/// The most memory asked for a graph's build: enough for about 1,300,000
/// vectors of 384 dimensions in one pass.
const GRAPH_MEMORY_MAX_KB: u64 = 4 * 1024 * 1024;

/// A statement's parameters, `N` of them.
type Params<'a, const N: usize> = [&'a (dyn tokio_postgres::types::ToSql + Sync); N];

/// The most word lists a file's write sends as one statement; more go
/// by COPY.
const LISTS_COPY_FROM: usize = 512;

/// One chunk's row as written.
struct ChunkRow {
    id: i64,
    chunk: NewChunk,
    postings: keyword::Postings,
    len: i32,
}

/// The statements of [`upsert`] (and [`delete_chunks`]'s), prepared once per
/// connection (see [`pool::Pooled::query`]): a statement given as text is
/// parsed in a round trip of its own each time, and a file's write runs a
/// dozen of them.
mod sql {
    pub(crate) const GRAPH_EMPTY: &str = "SELECT NOT EXISTS (SELECT 1 FROM chunk_vectors)";
    pub(crate) const VOCAB_OUT: &str = "UPDATE vocab v SET docs = v.docs - length(w.chunk_ids) / 8
         FROM word_lists w WHERE w.path = $1 AND v.token = w.token";
    /// A word no chunk holds any more leaves the vocabulary: a row kept at
    /// zero would keep a forgotten word (a name, a code) in the database.
    /// Its row is locked by [`VOCAB_OUT`] already, so no new lock is taken.
    pub(crate) const VOCAB_EMPTY: &str = "DELETE FROM vocab v USING word_lists w
         WHERE w.path = $1 AND v.token = w.token AND v.docs <= 0";
    pub(crate) const LISTS_OUT: &str = "DELETE FROM word_lists WHERE path = $1";
    pub(crate) const CHUNKS_OUT: &str = "DELETE FROM chunks WHERE path = $1 RETURNING ntokens";
    pub(crate) const FILE: &str =
        "INSERT INTO files(path, source, hash, mtime_ms, size, embedded, session_key)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (path) DO UPDATE SET source = EXCLUDED.source, hash = EXCLUDED.hash,
             mtime_ms = EXCLUDED.mtime_ms, size = EXCLUDED.size, embedded = EXCLUDED.embedded,
             session_key = EXCLUDED.session_key";
    pub(crate) const IDS: &str = "SELECT nextval(pg_get_serial_sequence('chunks', 'id'))
         FROM generate_series(1::bigint, $1::bigint)";
    pub(crate) const CHUNKS: &str =
        "INSERT INTO chunks(id, path, source, start_line, end_line, hash, text, msg_start, msg_end,
                            day_first, day_last, parts, ntokens)
         SELECT id, $12, $13, sl, el, h, t, ms, me, df, dl, pa, nt
         FROM unnest($1::bigint[], $2::integer[], $3::integer[], $4::text[], $5::text[],
                     $6::integer[], $7::integer[], $8::date[], $9::date[], $10::text[],
                     $11::integer[])
              AS u(id, sl, el, h, t, ms, me, df, dl, pa, nt)";
    pub(crate) const LISTS: &str =
        "COPY word_lists(token, path, source, chunk_ids, tfs, lens, positions) FROM STDIN (FORMAT binary)";
    /// A file's few word lists in one statement that a pipeline can
    /// carry (a COPY cannot): up to [`super::LISTS_COPY_FROM`] rows.
    pub(crate) const LISTS_ROWS: &str =
        "INSERT INTO word_lists(token, path, source, chunk_ids, tfs, lens, positions)
         SELECT t, $1, $2, i, f, l, p
         FROM unnest($3::text[], $4::bytea[], $5::bytea[], $6::bytea[], $7::bytea[])
              AS u(t, i, f, l, p)";
    pub(crate) const VOCAB: &str = "INSERT INTO vocab(token, docs) SELECT t, d FROM unnest($1::text[], $2::bigint[]) AS u(t, d)
         ORDER BY t
         ON CONFLICT (token) DO UPDATE SET docs = vocab.docs + EXCLUDED.docs";
    pub(crate) const CACHE: &str =
        "INSERT INTO embedding_cache(model, hash, dims, embedding, updated_at)
         SELECT $1, h, $2, e, $3 FROM unnest($4::text[], $5::vector[]) AS u(h, e)
         ON CONFLICT (model, hash) DO UPDATE SET dims = EXCLUDED.dims,
             embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at";
    pub(crate) const TOTALS: &str = "UPDATE totals SET chunks = chunks + $1, tokens = tokens + $2";
    pub(crate) const MODEL: &str = "SELECT model, dims FROM vector_model";
    /// A file's stored chunks, by what [`mnemo_index::backend::ChunkKey`]
    /// compares, and whether the file was stored with all its vectors.
    pub(crate) const STORED: &str =
        "SELECT c.id, c.source, c.start_line, c.end_line, c.hash, c.msg_start, c.msg_end,
                c.day_first, c.day_last, c.parts, f.embedded
         FROM files f JOIN chunks c ON c.path = f.path WHERE f.path = $1";
    pub(crate) const GONE_TEXTS: &str = "SELECT id, text FROM chunks WHERE id = ANY($1)";
    pub(crate) const LISTS_OF: &str =
        "SELECT token, chunk_ids, tfs, lens, positions FROM word_lists
         WHERE path = $1 AND token = ANY($2)";
    pub(crate) const CHUNKS_GONE: &str = "DELETE FROM chunks WHERE id = ANY($1) RETURNING ntokens";
    pub(crate) const LISTS_GONE: &str =
        "DELETE FROM word_lists WHERE path = $1 AND token = ANY($2)";
    /// Words whose last chunk went (see [`VOCAB_EMPTY`]).
    pub(crate) const VOCAB_ZERO: &str = "DELETE FROM vocab WHERE token = ANY($1) AND docs <= 0";

    /// The chunks written (by id) get the model's cached vectors of their
    /// hashes, given now or earlier (as SQLite joins the cache by hash).
    pub(crate) fn vectors_from_cache(dims: usize) -> String {
        format!(
            "INSERT INTO chunk_vectors(chunk_id, source, embedding)
             SELECT c.id, c.source, e.embedding::vector({dims}) FROM chunks c
             JOIN embedding_cache e ON e.model = $1 AND e.hash = c.hash AND e.dims = $2
             WHERE c.id = ANY($3)"
        )
    }

    /// The file's chunks get the vectors given with them: what the join
    /// above finds when every chunk has one (the cache has just taken
    /// them), without a lookup per chunk.
    pub(crate) fn vectors_given(dims: usize) -> String {
        format!(
            "INSERT INTO chunk_vectors(chunk_id, source, embedding)
             SELECT i, $3, e::vector({dims}) FROM unnest($1::bigint[], $2::vector[]) AS u(i, e)"
        )
    }
}

/// A file's write, worked out before anything is written: which stored
/// chunks stay (see [`diff_chunks`]) and, when some do, what the word
/// lists of the words that change hold without the chunks that go.
struct Rewrite {
    diff: ChunkDiff,
    /// `None`: every stored chunk goes, and the file's rows are deleted by
    /// its path.
    lists: Option<(Vec<String>, keyword::Remaining)>,
}

/// Compares `chunks` with what `path` holds, and reads the word lists an
/// update in place changes; a file none of whose chunks stay, or whose
/// rows disagree with its chunks' texts, is written whole.
/// `rows` are [`sql::STORED`]'s for `path`.
async fn plan_rewrite(
    tx: &Client,
    st: &impl Fn(&str) -> Result<tokio_postgres::Statement>,
    pool: &Pool,
    rows: Vec<tokio_postgres::Row>,
    source: Source,
    path: &str,
    chunks: &[NewChunk],
) -> Result<Rewrite> {
    let db = |e| pool.db(e);
    let complete = rows.first().is_none_or(|r| r.get::<_, bool>(10));
    let stored: Vec<(i64, ChunkKey)> = rows
        .iter()
        .map(|r| {
            let ms: Option<i32> = r.get(5);
            let me: Option<i32> = r.get(6);
            let first: Option<NaiveDate> = r.get(7);
            let last: Option<NaiveDate> = r.get(8);
            let key = ChunkKey {
                source: source_of(r.get::<_, &str>(1)),
                start_line: r.get::<_, i32>(2) as usize,
                end_line: r.get::<_, i32>(3) as usize,
                hash: r.get(4),
                messages: ms.zip(me).map(|(a, b)| (a as usize, b as usize)),
                days: first.zip(last),
                parts: r.get(9),
            };
            (r.get(0), key)
        })
        .collect();
    let all: Vec<i64> = stored.iter().map(|(id, _)| *id).collect();
    let keys: Vec<ChunkKey> = chunks.iter().map(|c| ChunkKey::of(c, source)).collect();
    let diff = diff_chunks(stored, &keys, complete);
    if !diff.keeps_any() {
        // Every stored chunk goes: `diff.gone` is all of them.
        return Ok(Rewrite { diff, lists: None });
    }
    // The words the gone chunks held, from their texts as the indexer
    // tokenised them (NUL was stored as a space: both separate words).
    let texts = tx
        .query(&st(sql::GONE_TEXTS)?, &[&diff.gone])
        .await
        .map_err(db)?;
    let gone: Vec<(i64, keyword::Postings)> = texts
        .iter()
        .map(|r| (r.get(0), keyword::postings(&tokens_of(r.get(1))).0))
        .collect();
    let mut words: Vec<String> = gone
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(w, _)| w.clone()))
        .chain(
            chunks
                .iter()
                .zip(&diff.kept)
                .filter(|(_, kept)| !**kept)
                .flat_map(|(c, _)| keyword::words(&c.tokens)),
        )
        .collect();
    words.sort_unstable();
    words.dedup();
    let rows = tx
        .query(&st(sql::LISTS_OF)?, &[&path, &words])
        .await
        .map_err(db)?;
    let stored_lists: HashMap<String, keyword::List> = rows
        .iter()
        .map(|r| {
            let mut l = keyword::List::default();
            l.extend([r.get(1), r.get(2), r.get(3), r.get(4)], 0);
            (r.get(0), l)
        })
        .collect();
    Ok(match keyword::WordLists::remaining(stored_lists, &gone) {
        Some(rest) => Rewrite {
            diff,
            lists: Some((words, rest)),
        },
        // Written whole, as if nothing were kept.
        None => Rewrite {
            diff: ChunkDiff {
                kept: vec![false; chunks.len()],
                gone: all,
            },
            lists: None,
        },
    })
}

/// Writes one file's chunks in one transaction; `graph` says how this
/// process's writes treat the HNSW graph, and the state after this write
/// is returned (see [`Graph`]). The stored chunks a new one matches stay
/// as they are, with their words and vectors: an appended session log
/// writes its last chunks, not all of them again.
#[allow(clippy::too_many_arguments)]
async fn upsert(
    pool: &Pool,
    c: &mut pool::Pooled,
    lock_key: i64,
    model: Option<(String, usize)>,
    graph: Graph,
    file: FileRecord,
    chunks: Vec<NewChunk>,
    vectors: Option<Vec<Vec<f32>>>,
) -> Result<Graph> {
    let db = |e| pool.db(e);
    let now = chrono::Utc::now().timestamp();
    // Every chunk with a vector of the model's: they go into the table as
    // given (see `sql::vectors_given`).
    let all_given = match (&model, &vectors) {
        (Some((_, dims)), Some(vs)) => {
            vs.len() == chunks.len() && vs.iter().all(|v| v.len() == *dims)
        }
        _ => false,
    };
    let vector_sql = model.as_ref().map(|(_, dims)| match all_given {
        true => sql::vectors_given(*dims),
        false => sql::vectors_from_cache(*dims),
    });
    let mut st = HashMap::new();
    for text in [
        sql::GRAPH_EMPTY,
        sql::MODEL,
        sql::STORED,
        sql::GONE_TEXTS,
        sql::LISTS_OF,
        sql::CHUNKS_GONE,
        sql::LISTS_GONE,
        sql::VOCAB_ZERO,
        sql::VOCAB_OUT,
        sql::VOCAB_EMPTY,
        sql::LISTS_OUT,
        sql::CHUNKS_OUT,
        sql::FILE,
        sql::IDS,
        sql::CHUNKS,
        sql::LISTS_ROWS,
        sql::VOCAB,
        sql::CACHE,
        sql::TOTALS,
    ]
    .into_iter()
    .chain(vector_sql.as_deref())
    {
        if text == sql::GRAPH_EMPTY && !(graph == Graph::Unknown && model.is_some()) {
            continue;
        }
        if model.is_none() && (text == sql::CACHE || text == sql::MODEL) {
            continue;
        }
        st.insert(text, c.prepared(text).await.map_err(db)?);
    }
    let st = |text: &str| {
        st.get(text)
            .cloned()
            .ok_or_else(|| pool.error("a statement was not prepared (a bug)"))
    };
    // The statements go in three round trips, each a pipeline (see
    // `pool::pipeline`): what is stored, what goes, what comes. An error
    // leaves the transaction open on a connection the pool then closes,
    // and the server rolls it back.
    let client: &Client = c;
    let begin = format!("START TRANSACTION; {}", mnemo_postgres::xact_lock(lock_key));
    let look_empty = graph == Graph::Unknown && model.is_some();
    let stored_st = st(sql::STORED)?;
    let model_st = model.as_ref().map(|_| st(sql::MODEL)).transpose()?;
    let empty_st = look_empty.then(|| st(sql::GRAPH_EMPTY)).transpose()?;
    let by_path: Params<1> = [&file.path];
    let mut steps = vec![
        pool::batch_step(client, &begin),
        pool::step(client, &stored_st, &by_path),
    ];
    steps.extend(
        model_st
            .iter()
            .chain(&empty_st)
            .map(|s| pool::step(client, s, &[])),
    );
    let mut first = pool::pipeline(steps).await.map_err(db)?.into_iter().skip(1);
    let stored = first.next().unwrap_or_default();
    if let Some((m, d)) = &model {
        let bound = first.next().unwrap_or_default();
        check_model(bound.first(), pool, m, *d)?;
    }
    let empty = match look_empty {
        true => first
            .next()
            .and_then(|rows| rows.first().map(|r| r.get::<_, bool>(0))),
        false => None,
    };
    let Rewrite { diff, lists: rest } =
        plan_rewrite(client, &st, pool, stored, file.source, &file.path, &chunks).await?;
    // What is written: the chunks no stored one matches, with their vectors.
    let (chunks, vectors): (Vec<NewChunk>, Option<Vec<Vec<f32>>>) = {
        let keep = |i: &usize| !diff.kept[*i];
        let vectors = vectors.map(|vs| {
            vs.into_iter()
                .enumerate()
                .filter(|(i, _)| keep(i))
                .map(|(_, v)| v)
                .collect()
        });
        let chunks = chunks
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep(i))
            .map(|(_, c)| c)
            .collect();
        (chunks, vectors)
    };
    let graph = match graph {
        Graph::Unknown if model.is_some() => match empty.unwrap_or(false) {
            true => Graph::Loading(0),
            false => Graph::Kept,
        },
        Graph::Unknown => Graph::Kept,
        g => g,
    };
    let graph = match graph {
        Graph::Loading(n) if n + chunks.len() >= LOAD_MIN => {
            client
                .batch_execute("DROP INDEX IF EXISTS chunk_vectors_hnsw")
                .await
                .map_err(db)?;
            Graph::Deferred
        }
        Graph::Loading(n) => Graph::Loading(n + chunks.len()),
        g => g,
    };
    if graph.loading() {
        // A load's file is written again by the next sync when the server
        // loses this commit in a crash (its `files` row goes with it), so
        // the commit need not wait for the disk.
        client
            .batch_execute("SET LOCAL synchronous_commit = off")
            .await
            .map_err(db)?;
    }
    // What goes, the file's row and the new chunks' ids: one round trip.
    let (size, count) = (file.size as i64, chunks.len() as i64);
    let source_name = file.source.as_str();
    let file_row: Params<7> = [
        &file.path,
        &source_name,
        &file.hash,
        &file.mtime_ms,
        &size,
        &file.embedded,
        &file.session_key,
    ];
    let by_count: Params<1> = [&count];
    let (out_st, file_st, ids_st) = match &rest {
        None => (
            vec![
                st(sql::VOCAB_OUT)?,
                st(sql::VOCAB_EMPTY)?,
                st(sql::LISTS_OUT)?,
                st(sql::CHUNKS_OUT)?,
            ],
            st(sql::FILE)?,
            st(sql::IDS)?,
        ),
        Some(_) => (
            vec![st(sql::LISTS_GONE)?, st(sql::CHUNKS_GONE)?],
            st(sql::FILE)?,
            st(sql::IDS)?,
        ),
    };
    let gone_lists: Params<2>;
    let gone_ids: Params<1>;
    let mut steps: Vec<pool::Step<'_>> = match &rest {
        None => out_st
            .iter()
            .map(|s| pool::step(client, s, &by_path))
            .collect(),
        Some((words, _)) => {
            gone_lists = [&file.path, words];
            gone_ids = [&diff.gone];
            vec![
                pool::step(client, &out_st[0], &gone_lists),
                pool::step(client, &out_st[1], &gone_ids),
            ]
        }
    };
    steps.push(pool::step(client, &file_st, &file_row));
    steps.push(pool::step(client, &ids_st, &by_count));
    let mut second = pool::pipeline(steps).await.map_err(db)?;
    let ids_rows = second.pop().unwrap_or_default();
    second.pop();
    let gone = second.pop().unwrap_or_default();
    let gone_tokens: i64 = gone.iter().map(|r| r.get::<_, i32>(0) as i64).sum();
    let gone_chunks = gone.len() as i64;
    // Ids first, so the postings can be written in one statement.
    let ids: Vec<i64> = ids_rows.iter().map(|r| r.get(0)).collect();
    let rows: Vec<ChunkRow> = chunks
        .into_iter()
        .zip(ids)
        .map(|(chunk, id)| {
            let (postings, len) = keyword::postings(&chunk.tokens);
            ChunkRow {
                id,
                chunk,
                postings,
                len,
            }
        })
        .collect();
    let source = file.source.as_str();
    // One statement for all the file's chunks (one round trip, not one per
    // chunk), as for the postings below.
    let col = |f: &dyn Fn(&ChunkRow) -> i32| rows.iter().map(f).collect::<Vec<i32>>();
    let opt = |f: &dyn Fn(&ChunkRow) -> Option<i32>| rows.iter().map(f).collect::<Vec<_>>();
    let day = |f: &dyn Fn(&ChunkRow) -> Option<NaiveDate>| rows.iter().map(f).collect::<Vec<_>>();
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let hashes: Vec<&str> = rows.iter().map(|r| r.chunk.hash.as_str()).collect();
    // PostgreSQL's text refuses NUL, which a file or a message may hold: a
    // space in its place keeps every byte offset of the chunk's parts.
    let texts: Vec<std::borrow::Cow<'_, str>> = rows
        .iter()
        .map(|r| match r.chunk.text.contains('\0') {
            true => std::borrow::Cow::Owned(r.chunk.text.replace('\0', " ")),
            false => std::borrow::Cow::Borrowed(r.chunk.text.as_str()),
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
    let parts: Vec<Option<String>> = rows
        .iter()
        .map(|r| (!r.chunk.parts.is_empty()).then(|| MessagePart::encode(&r.chunk.parts)))
        .collect();
    let (starts, ends) = (
        col(&|r| r.chunk.start_line as i32),
        col(&|r| r.chunk.end_line as i32),
    );
    let (msg_starts, msg_ends) = (
        opt(&|r| r.chunk.messages.map(|m| m.0 as i32)),
        opt(&|r| r.chunk.messages.map(|m| m.1 as i32)),
    );
    let (firsts, lasts) = (
        day(&|r| r.chunk.days.map(|d| d.0)),
        day(&|r| r.chunk.days.map(|d| d.1)),
    );
    let lens = col(&|r| r.len);
    let chunk_rows: Params<13> = [
        &ids,
        &starts,
        &ends,
        &hashes,
        &texts,
        &msg_starts,
        &msg_ends,
        &firsts,
        &lasts,
        &parts,
        &lens,
        &file.path,
        &source,
    ];
    let lists = keyword::WordLists::of(rows.iter().map(|r| (r.id, r.len, r.postings.as_slice())));
    // The rows to write, and each word's change in its number of chunks.
    let (lists, docs): (keyword::WordLists, Vec<(String, i64)>) = match rest {
        None => {
            let docs = lists
                .words()
                .zip(lists.docs())
                .map(|(w, d)| (w.to_string(), d));
            let docs = docs.collect();
            (lists, docs)
        }
        Some((_, rest)) => lists.merged(rest),
    };
    let (tok, list_ids, tfs, list_lens, pos) = lists.columns();
    let copied = tok.len() > LISTS_COPY_FROM;
    if copied {
        // Thousands of rows a file: streamed in COPY's binary format, not
        // unpacked from arrays by the executor; the chunks they name are
        // written in the same transaction, after them.
        let sink = client.copy_in(sql::LISTS).await.map_err(db)?;
        let writer = BinaryCopyInWriter::new(
            sink,
            &[
                Type::TEXT,
                Type::TEXT,
                Type::TEXT,
                Type::BYTEA,
                Type::BYTEA,
                Type::BYTEA,
                Type::BYTEA,
            ],
        );
        let mut writer = std::pin::pin!(writer);
        for i in 0..tok.len() {
            writer
                .as_mut()
                .write(&[
                    &tok[i],
                    &file.path,
                    &source,
                    &list_ids[i],
                    &tfs[i],
                    &list_lens[i],
                    &pos[i],
                ])
                .await
                .map_err(db)?;
        }
        writer.finish().await.map_err(db)?;
    }
    // The words in order, as every writer takes them.
    let (words, counts): (Vec<&str>, Vec<i64>) = docs.iter().map(|(w, d)| (w.as_str(), *d)).unzip();
    let emptied: Vec<&str> = docs
        .iter()
        .filter(|(_, d)| *d < 0)
        .map(|(w, _)| w.as_str())
        .collect();
    let dims_i32 = model.as_ref().map_or(0, |(_, d)| *d as i32);
    let mut cached: (Vec<&str>, Vec<Vector>) = (Vec::new(), Vec::new());
    let mut given: Vec<Vector> = Vec::new();
    if let (Some((_, dims)), Some(vs)) = (&model, &vectors) {
        // A text repeated in the file is one cache row: one statement
        // may not update a row twice.
        let mut seen = HashSet::new();
        cached = rows
            .iter()
            .zip(vs)
            .filter(|(r, v)| v.len() == *dims && seen.insert(r.chunk.hash.as_str()))
            .map(|(r, v)| (r.chunk.hash.as_str(), Vector::from(v.clone())))
            .unzip();
        if all_given {
            // Each chunk its hash's row of the cache, as the join would
            // give: a repeated text's first vector.
            let mut first: HashMap<&str, &Vec<f32>> = HashMap::new();
            for (r, v) in rows.iter().zip(vs) {
                first.entry(r.chunk.hash.as_str()).or_insert(v);
            }
            given = rows
                .iter()
                .zip(vs)
                .map(|(r, v)| {
                    let v = first.get(r.chunk.hash.as_str()).copied().unwrap_or(v);
                    Vector::from(v.clone())
                })
                .collect();
        }
    }
    let model_name = model.as_ref().map(|(m, _)| m.as_str()).unwrap_or_default();
    let new_tokens: i64 = rows.iter().map(|r| r.len as i64).sum();
    let (added_chunks, added_tokens) = (rows.len() as i64 - gone_chunks, new_tokens - gone_tokens);
    // The rest, and the commit: one round trip.
    let list_rows: Params<7> = [&file.path, &source, &tok, &list_ids, &tfs, &list_lens, &pos];
    let vocab_rows: Params<2> = [&words, &counts];
    let by_emptied: Params<1> = [&emptied];
    let cache_rows: Params<5> = [&model_name, &dims_i32, &now, &cached.0, &cached.1];
    let given_rows: Params<3> = [&ids, &given, &source];
    let cache_join: Params<3> = [&model_name, &dims_i32, &ids];
    let totals: Params<2> = [&added_chunks, &added_tokens];
    let vectors_st = match &vector_sql {
        Some(text) if !ids.is_empty() => Some(st(text)?),
        _ => None,
    };
    let last = [
        (sql::CHUNKS, &chunk_rows[..], true),
        (sql::LISTS_ROWS, &list_rows[..], !copied && !tok.is_empty()),
        (sql::VOCAB, &vocab_rows[..], !docs.is_empty()),
        (sql::VOCAB_ZERO, &by_emptied[..], !emptied.is_empty()),
        (sql::CACHE, &cache_rows[..], !cached.0.is_empty()),
    ];
    let mut statements = Vec::new();
    for (text, params, wanted) in last {
        if wanted {
            statements.push((st(text)?, params));
        }
    }
    if let Some(vectors_st) = vectors_st {
        let params: &[&(dyn tokio_postgres::types::ToSql + Sync)] = match all_given {
            true => &given_rows,
            false => &cache_join,
        };
        statements.push((vectors_st, params));
    }
    statements.push((st(sql::TOTALS)?, &totals[..]));
    let mut steps: Vec<pool::Step<'_>> = statements
        .iter()
        .map(|(s, params)| pool::step(client, s, params))
        .collect();
    steps.push(pool::batch_step(client, "COMMIT"));
    pool::pipeline(steps).await.map_err(db)?;
    Ok(graph)
}

/// Deletes the chunks of `path` (their vectors cascade) and their word
/// lists, and takes their words out of the vocabulary's counts; returns each gone
/// chunk's `ntokens`. Inside a writer's transaction.
async fn delete_chunks(
    tx: &tokio_postgres::Transaction<'_>,
    path: &str,
) -> std::result::Result<Vec<tokio_postgres::Row>, tokio_postgres::Error> {
    tx.execute(sql::VOCAB_OUT, &[&path]).await?;
    tx.execute(sql::VOCAB_EMPTY, &[&path]).await?;
    tx.execute(sql::LISTS_OUT, &[&path]).await?;
    tx.query(sql::CHUNKS_OUT, &[&path]).await
}

async fn delete(pool: &Pool, c: &mut Client, lock_key: i64, path: String) -> Result<()> {
    let db = |e| pool.db(e);
    let tx = c.transaction().await.map_err(db)?;
    // A wait for another writer has no statement timeout.
    tx.batch_execute(&mnemo_postgres::xact_lock(lock_key))
        .await
        .map_err(db)?;
    let gone = delete_chunks(&tx, &path).await.map_err(db)?;
    let tokens: i64 = gone.iter().map(|r| r.get::<_, i32>(0) as i64).sum();
    tx.execute("DELETE FROM files WHERE path = $1", &[&path])
        .await
        .map_err(db)?;
    tx.execute(
        "UPDATE totals SET chunks = chunks - $1, tokens = tokens - $2",
        &[&(gone.len() as i64), &tokens],
    )
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)
}

/// A search's statistics: the index's revision (see [`keyword::Stats`]),
/// chunks and tokens, and the document count of each word asked for.
const STATS: &str = "SELECT t.xmin::text, t.chunks, t.tokens, v.token, v.docs FROM totals t
     LEFT JOIN vocab v ON v.token = ANY($1)";

/// A search's word lists: those of $1 whole, those of $4 only for the
/// files $1's lists are in (positions only for the words of phrases, $2),
/// read only at revision $3 (any when null), and a row of the revision,
/// chunks and tokens of the same snapshot, told apart by their nulls.
/// Apart, not joined: the totals repeated on each of thousands of rows,
/// and the revision compared on each, cost a keyword search more than a
/// millisecond. The files are chosen by the server: a common word's rows
/// are skipped there instead of sent (at a million chunks, a word in 40 %
/// of them is 8 MB of lists, docs/BENCHMARKS.md).
const LISTS: &str = "SELECT xmin::text, chunks, tokens, NULL, NULL, NULL::bytea, NULL::bytea,
            NULL::bytea, NULL::bytea FROM totals
     UNION ALL
     SELECT NULL, NULL, NULL, token, source, chunk_ids, tfs, lens,
            CASE WHEN token = ANY($2) THEN positions ELSE ''::bytea END
     FROM word_lists
     WHERE (token = ANY($1)
            OR token = ANY($4) AND path IN (SELECT path FROM word_lists WHERE token = ANY($1)))
       AND ($3::text IS NULL OR $3 = (SELECT xmin::text FROM totals))";

/// Which of the words `read` for the `plans` (each its terms, the first
/// `rare` of them choosing the chunks) are read whole, and which only for
/// the files of those lists. Whole: the terms whose chunks are scored, and
/// each phrase's rarest word by `docs` (only its chunks can hold the
/// phrase, so the phrase's count stays exact). Every other word only adds
/// to chunks of those lists; its count comes from the statistics.
fn whole_and_partial<'a>(
    plans: &[(Vec<&'a [String]>, usize)],
    read: &[&'a str],
    docs: impl Fn(&str) -> i64 + Copy,
) -> (Vec<&'a str>, Vec<&'a str>) {
    let mut whole: Vec<&str> = plans
        .iter()
        .flat_map(|(kept, rare)| {
            kept.iter()
                .enumerate()
                .filter_map(move |(i, term)| match term {
                    [w] => (i < *rare).then_some(w.as_str()),
                    _ => term.iter().map(String::as_str).min_by_key(|w| docs(w)),
                })
        })
        .collect();
    whole.sort_unstable();
    whole.dedup();
    let partial = read
        .iter()
        .copied()
        .filter(|w| whole.binary_search(w).is_err())
        .collect();
    (whole, partial)
}

/// Reads the statistics of `words` at the index's current revision into
/// `stats`, and returns them.
async fn read_stats(
    c: &mut pool::Pooled,
    stats: &Mutex<keyword::Stats>,
    words: &[&str],
) -> std::result::Result<(String, i64, FxHashMap<String, i64>), tokio_postgres::Error> {
    let found = c.query(STATS, &[&words]).await?;
    // `totals` always has its one row: a left join keeps it.
    let (rev, chunks, tokens) = found
        .first()
        .map(|r| {
            (
                r.get::<_, String>(0),
                r.get::<_, i64>(1),
                r.get::<_, i64>(2),
            )
        })
        .unwrap_or_default();
    let mut docs: FxHashMap<String, i64> = words.iter().map(|w| (w.to_string(), 0)).collect();
    for r in &found {
        if let (Some(w), Some(d)) = (r.get::<_, Option<String>>(3), r.get::<_, Option<i64>>(4)) {
            docs.insert(w, d);
        }
    }
    stats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .update(&rev, chunks, tokens, &docs);
    Ok((rev, chunks, docs))
}

/// The keyword candidates of each query in `queries` (a query is its
/// terms), in order, from one read of their word lists: a query and its
/// adjacent pairs share their words, and a second statement would read
/// the same lists again.
async fn keyword(
    pool: &Pool,
    c: &mut pool::Pooled,
    stats: &Mutex<keyword::Stats>,
    size: &AtomicI64,
    queries: Vec<Vec<String>>,
    limit: usize,
    sources: Option<Vec<String>>,
) -> Result<Vec<Vec<(i64, f64)>>> {
    let db = |e| pool.db(e);
    let none = || vec![Vec::new(); queries.len()];
    if limit == 0 || queries.iter().all(Vec::is_empty) {
        return Ok(none());
    }
    // Each term as the phrase of words FTS5 would make of it.
    let phrases: Vec<Vec<Vec<String>>> = queries
        .iter()
        .map(|terms| {
            terms
                .iter()
                .map(String::as_str)
                .map(keyword::words)
                .collect()
        })
        .collect();
    let mut words: Vec<&str> = phrases
        .iter()
        .flatten()
        .flatten()
        .map(String::as_str)
        .collect();
    words.sort_unstable();
    words.dedup();
    // The first try reads the lists only at the revision the statistics
    // were read at (the plan depends on them); after a write in between,
    // the second reads both again, and takes the lists of whatever
    // revision follows (as a search did before the statistics were kept).
    for attempt in 0..2 {
        let known = stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .docs_of(&words);
        let (rev, chunks, docs) = match known {
            Some(known) => known,
            None => read_stats(c, stats, &words).await.map_err(db)?,
        };
        // Each query's plan: the terms scored, the first `rare` of them
        // choosing the chunks.
        let plans: Vec<(Vec<&[String]>, usize)> = queries
            .iter()
            .zip(&phrases)
            .map(|(terms, phrases)| {
                // A phrase counts as its rarer word.
                let with: Vec<(usize, i64)> = (0..terms.len())
                    .filter(|&i| !phrases[i].is_empty())
                    .map(|i| {
                        let df = phrases[i].iter().map(|w| docs.get(w).copied().unwrap_or(0));
                        (i, df.min().unwrap_or(0))
                    })
                    .collect();
                // The shared rules (as for SQLite): common words of a query
                // without phrases are dropped, and past the budget only the
                // chunks holding the rarer terms are scored.
                let (terms_of, rare): (Vec<usize>, usize) =
                    match keyword_plan(&with, chunks, terms.iter().any(|t| t.contains(' '))) {
                        KeywordPlan::All(keep) => {
                            let n = keep.len();
                            (keep, n)
                        }
                        KeywordPlan::Bounded { rare, common } => {
                            let n = rare.len();
                            (rare.into_iter().chain(common).collect(), n)
                        }
                    };
                let kept = terms_of.iter().map(|&i| phrases[i].as_slice()).collect();
                (kept, rare)
            })
            .collect();
        // The lists of every word, positions only for the words of phrases.
        let mut read: Vec<&str> = plans
            .iter()
            .flat_map(|(kept, _)| kept.iter().flat_map(|t| t.iter().map(String::as_str)))
            .collect();
        read.sort_unstable();
        read.dedup();
        // Not on the second try: its statistics may be of another revision.
        let doc = |w: &str| docs.get(w).copied().unwrap_or(0);
        let (whole, partial) = match attempt {
            0 => whole_and_partial(&plans, &read, doc),
            _ => (read.clone(), Vec::new()),
        };
        let mut placed: Vec<&str> = plans
            .iter()
            .flat_map(|(kept, _)| kept.iter().filter(|t| t.len() > 1))
            .flat_map(|t| t.iter().map(String::as_str))
            .collect();
        placed.sort_unstable();
        placed.dedup();
        let guard = (attempt == 0).then_some(rev.as_str());
        let found = c
            .query(LISTS, &[&whole, &placed, &guard, &partial])
            .await
            .map_err(db)?;
        let Some(totals) = found
            .iter()
            .find(|r| r.get::<_, Option<String>>(0).is_some())
        else {
            return Ok(none());
        };
        let (now, rows, tokens): (String, i64, i64) = (totals.get(0), totals.get(1), totals.get(2));
        size.store(rows, Ordering::Relaxed);
        if guard.is_some_and(|g| g != now) {
            stats.lock().unwrap_or_else(|e| e.into_inner()).forget();
            continue;
        }
        if rows == 0 {
            return Ok(none());
        }
        let mut names: Vec<String> = Vec::new();
        let mut lists: HashMap<String, keyword::List> = HashMap::new();
        for r in &found {
            let Some(token) = r.get::<_, Option<String>>(3) else {
                continue;
            };
            let source: &str = r.get(4);
            let at = match names.iter().position(|n| n == source) {
                Some(i) => i,
                None => {
                    names.push(source.to_string());
                    names.len() - 1
                }
            };
            lists
                .entry(token)
                .or_default()
                .extend([r.get(5), r.get(6), r.get(7), r.get(8)], at as u32);
        }
        for w in &partial {
            lists.entry(w.to_string()).or_default().docs = Some(doc(w));
        }
        let source_ok = |s: u32| {
            sources
                .as_ref()
                .is_none_or(|f| f.iter().any(|x| Some(x) == names.get(s as usize)))
        };
        return Ok(plans
            .iter()
            .map(|(kept, rare)| {
                keyword::score(
                    kept,
                    &lists,
                    *rare,
                    rows as f64,
                    tokens as f64 / rows as f64,
                    limit,
                    source_ok,
                )
            })
            .collect());
    }
    Err(pool.error("the index changed during the keyword search twice (a bug)"))
}

/// The HNSW search breadth (`hnsw.ef_search`) for an index of `chunks`
/// chunks asked for `candidates` vectors: the smallest that keeps recall@10
/// against the exact scan at 0.98 or more at that size, and never fewer
/// than the candidates (more would come from pgvector's iterative scan,
/// past the breadth). Measured on the graph of [`schema::HNSW_INDEX`]: at
/// 10,068 chunks of real dialogue (the default model) a breadth of 100
/// gives 0.988 (60: 0.977), at 100,207 chunks 200 gives 0.993 (100:
/// 0.955), docs/BENCHMARKS-LOG.md items 42 and 58; at 1,015,067 chunks
/// (all-MiniLM-L6-v2) 400 gives 0.955, 800 0.979 and 1,000 0.982 (item
/// 67). So the breadth doubles for the tenfold from 15,000 chunks, and
/// past 150,000 chunks it is pgvector's largest. Twice the breadth is
/// about twice the time.
pub(crate) fn ef_search(chunks: i64, candidates: i64) -> i64 {
    let by_size = match chunks {
        c if c <= EF_SMALL_UPTO => EF_SMALL,
        c if c <= EF_MID_UPTO => 2 * EF_SMALL,
        _ => EF_MAX,
    };
    by_size.max(candidates).min(EF_MAX)
}

/// The largest index searched with twice [`EF_SMALL`]; past it, with
/// [`EF_MAX`].
const EF_MID_UPTO: i64 = 150_000;
/// The breadth of indexes up to [`EF_SMALL_UPTO`] chunks.
const EF_SMALL: i64 = 100;
/// The largest index searched with [`EF_SMALL`].
const EF_SMALL_UPTO: i64 = 15_000;
/// pgvector's largest `hnsw.ef_search`.
const EF_MAX: i64 = 1000;

/// The index's chunks, read by a backend whose first search asks for
/// vectors only (later searches see them in their own statements).
const SIZE: &str = "SELECT chunks FROM totals";

async fn vectors(
    pool: &Pool,
    c: &mut pool::Pooled,
    size: &AtomicI64,
    query: Vec<f32>,
    k: usize,
    sources: Option<Vec<String>>,
) -> Result<Vec<(i64, f32)>> {
    let db = |e| pool.db(e);
    // Candidates beyond k, ranked again by their exact cosine: HNSW may
    // miss or misorder a few (and returns them loosely ordered when a
    // source filter makes it scan on), the candidates' distances are exact.
    let pool_size = (k * 2).max(40) as i64;
    let mut chunks = size.load(Ordering::Relaxed);
    if chunks < 0 {
        chunks = c.query_one(SIZE, &[]).await.map_err(db)?.get(0);
    }
    let ef = ef_search(chunks, pool_size);
    let q = Vector::from(query);
    // The index's size comes back with the hits, for the next search's
    // breadth: a search that follows a write sees it one search late, as
    // the breadth moves in steps of tenfold sizes.
    let (sql, filtered) = match &sources {
        None => (
            "SELECT chunk_id, (1 - (embedding <=> $1))::real, (SELECT chunks FROM totals)
             FROM chunk_vectors ORDER BY embedding <=> $1 LIMIT $2",
            None,
        ),
        Some(s) => (
            "SELECT chunk_id, (1 - (embedding <=> $1))::real, (SELECT chunks FROM totals)
             FROM chunk_vectors WHERE source = ANY($3) ORDER BY embedding <=> $1 LIMIT $2",
            Some(s),
        ),
    };
    let st = c.prepared(sql).await.map_err(db)?;
    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = match filtered {
        None => vec![&q, &pool_size],
        Some(s) => vec![&q, &pool_size, s],
    };
    let rows = if c.ef_search == Some(ef) {
        c.query_prepared(&st, &params).await.map_err(db)?
    } else {
        // The connection's breadth changes with the index's size, rarely:
        // set for the session, sent with the search in one round trip
        // (pipelined: the server runs the SET first).
        let set = format!("SET hnsw.ef_search = {ef}");
        let (set, rows) =
            tokio::join!(biased; c.batch_execute(&set), c.query_prepared(&st, &params));
        set.map_err(db)?;
        let rows = rows.map_err(db)?;
        c.ef_search = Some(ef);
        rows
    };
    if let Some(r) = rows.first() {
        size.store(r.get(2), Ordering::Relaxed);
    }
    let mut out: Vec<(i64, f32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(k);
    Ok(out)
}

/// An embedding-cache row read as `SELECT hash, embedding`.
fn hash_and_vector(r: &tokio_postgres::Row) -> (String, Vec<f32>) {
    (r.get(0), r.get::<_, Vector>(1).to_vec())
}

fn chunk_record(r: &tokio_postgres::Row) -> ChunkRecord {
    let ms: Option<i32> = r.get(6);
    let me: Option<i32> = r.get(7);
    let first: Option<NaiveDate> = r.get(10);
    let last: Option<NaiveDate> = r.get(11);
    ChunkRecord {
        id: r.get(0),
        path: r.get(1),
        source: source_of(r.get::<_, &str>(2)),
        start_line: r.get::<_, i32>(3) as usize,
        end_line: r.get::<_, i32>(4) as usize,
        text: r.get(5),
        messages: ms.zip(me).map(|(a, b)| (a as usize, b as usize)),
        session_key: r.get(8),
        mtime_ms: r.get::<_, Option<i64>>(9).unwrap_or(0),
        days: first.zip(last),
        parts: r
            .get::<_, Option<&str>>(12)
            .map(MessagePart::decode)
            .unwrap_or_default(),
    }
}

impl IndexBackend for PostgresBackend {
    fn meta(&self) -> Result<HashMap<String, String>> {
        self.with(|pool, mut c| async move {
            let r = c.query("SELECT key, value FROM meta", &[]).await;
            let r = r
                .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn set_meta(&self, entries: &[(&str, String)]) -> Result<()> {
        // One statement (its own transaction): the last value of a key
        // given twice.
        let mut by_key: Vec<(String, String)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            by_key.retain(|(seen, _)| seen != k);
            by_key.push((k.to_string(), v.clone()));
        }
        let (keys, values): (Vec<String>, Vec<String>) = by_key.into_iter().unzip();
        self.with(|pool, mut c| async move {
            let r = c
                .query(
                    "INSERT INTO meta(key, value) SELECT * FROM unnest($1::text[], $2::text[])
                     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    &[&keys, &values],
                )
                .await
                .map(drop)
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn files(&self) -> Result<Vec<FileRecord>> {
        self.with(|pool, mut c| async move {
            let r = c
                .query(
                    "SELECT path, source, hash, mtime_ms, size, embedded, session_key FROM files",
                    &[],
                )
                .await
                .map(|rows| {
                    rows.iter()
                        .map(|r| FileRecord {
                            path: r.get(0),
                            source: source_of(r.get::<_, &str>(1)),
                            hash: r.get(2),
                            mtime_ms: r.get(3),
                            size: r.get::<_, i64>(4) as u64,
                            embedded: r.get(5),
                            session_key: r.get(6),
                        })
                        .collect()
                })
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn upsert_file(
        &self,
        file: &FileRecord,
        chunks: &[NewChunk],
        vectors: Option<&[Vec<f32>]>,
    ) -> Result<()> {
        let (file, chunks, vectors) = (file.clone(), chunks.to_vec(), vectors.map(<[_]>::to_vec));
        let (key, model) = (self.lock_key, self.model());
        let n = chunks.len();
        let graph = *self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let next = self.with(move |pool, mut c| async move {
            let r = upsert(&pool, &mut c, key, model, graph, file, chunks, vectors).await;
            (c, r)
        })?;
        *self.graph.lock().unwrap_or_else(|e| e.into_inner()) = next;
        self.written.fetch_add(n, Ordering::Relaxed);
        Ok(())
    }

    /// Re-packs the word lists (see [`PostgresBackend::repack`]) once
    /// this process has written as many chunks as half the index holds:
    /// CLUSTER holds searches of this generation for its few seconds (4 s
    /// at 100,000 chunks), so it waits for that much change; a first build
    /// always qualifies.
    /// Builds the HNSW graph when it is missing (see [`Graph`]) first.
    fn after_writes(&self) -> Result<()> {
        self.build_graph()?;
        let written = self.written.load(Ordering::Relaxed);
        if written < REPACK_MIN {
            return Ok(());
        }
        let total: i64 = self.with(move |pool, mut c| async move {
            let r = c
                .query_one("SELECT count(*) FROM chunks", &[])
                .await
                .map(|r| r.get(0))
                .map_err(|e| pool.db(e));
            (c, r)
        })?;
        if (written as i64).saturating_mul(2) >= total {
            self.repack()?;
        }
        Ok(())
    }

    fn touch_file(&self, path: &str, mtime_ms: i64, size: u64) -> Result<()> {
        let path = path.to_string();
        self.with(move |pool, c| async move {
            let r = c
                .execute(
                    "UPDATE files SET mtime_ms = $2, size = $3 WHERE path = $1",
                    &[&path, &mtime_ms, &(size as i64)],
                )
                .await
                .map(|_| ())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn delete_file(&self, path: &str) -> Result<()> {
        let (path, key) = (path.to_string(), self.lock_key);
        self.with(move |pool, mut c| async move {
            let r = delete(&pool, &mut c, key, path).await;
            (c, r)
        })
    }

    fn keyword_search(
        &self,
        tokens: &[String],
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<(i64, f64)>> {
        let mut each = self.keyword_searches(&[tokens], limit, sources)?;
        Ok(each.pop().unwrap_or_default())
    }

    fn keyword_searches(
        &self,
        queries: &[&[String]],
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<Vec<(i64, f64)>>> {
        let queries: Vec<Vec<String>> = queries.iter().map(|q| q.to_vec()).collect();
        let filter = source_list(sources);
        let (stats, size) = (self.stats.clone(), self.size.clone());
        self.with(move |pool, mut c| async move {
            let r = keyword(&pool, &mut c, &stats, &size, queries, limit, filter).await;
            (c, r)
        })
    }

    /// The two sides run on two of the server's processes, each on a
    /// pooled connection of its own.
    fn concurrent_sides(&self) -> bool {
        true
    }

    fn vector_search(
        &self,
        query: &[f32],
        k: usize,
        sources: &[Source],
    ) -> Result<Vec<(i64, f32)>> {
        let Some((_, dims)) = self.model() else {
            return Ok(Vec::new());
        };
        if k == 0 {
            return Ok(Vec::new());
        }
        if query.len() != dims {
            return Err(IndexError::InvalidInput(format!(
                "a query vector of {} dimensions for an index of {dims}-dimension vectors",
                query.len()
            )));
        }
        let (q, filter) = (query.to_vec(), source_list(sources));
        let size = self.size.clone();
        self.with(move |pool, mut c| async move {
            let r = vectors(&pool, &mut c, &size, q, k, filter).await;
            (c, r)
        })
    }

    fn chunks_in_days(
        &self,
        first: NaiveDate,
        last: NaiveDate,
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<i64>> {
        let filter = source_list(sources);
        let from = first - chrono::Days::new(31);
        self.with(move |pool, mut c| async move {
            // The lower bound keeps the range scan short, as in SQLite: a
            // chunk whose messages span more than a month before the
            // window is left to the other signals.
            let r = c
                .query(
                    "SELECT id FROM chunks
                     WHERE day_first BETWEEN $1 AND $2 AND day_last >= $3
                       AND ($5::text[] IS NULL OR source = ANY($5))
                     ORDER BY day_first, id LIMIT $4",
                    &[&from, &last, &first, &(limit as i64), &filter],
                )
                .await
                .map(|rows| rows.iter().map(|r| r.get(0)).collect())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn day_range(&self) -> Result<Option<(NaiveDate, NaiveDate)>> {
        self.with(|pool, mut c| async move {
            let r = c
                .query_one("SELECT min(day_first), max(day_first) FROM chunks", &[])
                .await
                .map(|r| {
                    let a: Option<NaiveDate> = r.get(0);
                    let b: Option<NaiveDate> = r.get(1);
                    a.zip(b)
                })
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn prune_embedding_cache(&self, keep: usize) -> Result<usize> {
        let key = self.lock_key;
        self.with(move |pool, mut c| async move {
            let r = async {
                // Most syncs find the cache within its bound: one
                // statement, no lock.
                let rows: i64 = c
                    .query_one("SELECT count(*) FROM embedding_cache", &[])
                    .await?
                    .get(0);
                if rows <= i64::try_from(keep).unwrap_or(i64::MAX) {
                    return Ok(0);
                }
                let tx = c.transaction().await?;
                // A wait for another writer has no statement timeout.
                tx.batch_execute(&mnemo_postgres::xact_lock(key)).await?;
                let rows: i64 = tx
                    .query_one("SELECT count(*) FROM embedding_cache", &[])
                    .await?
                    .get(0);
                let excess = rows.saturating_sub(i64::try_from(keep).unwrap_or(i64::MAX));
                if excess <= 0 {
                    tx.commit().await?;
                    return Ok(0);
                }
                let n = tx
                    .execute(
                        "DELETE FROM embedding_cache WHERE (model, hash) IN (
                             SELECT e.model, e.hash FROM embedding_cache e
                             WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = e.hash)
                             ORDER BY e.updated_at LIMIT $1)",
                        &[&excess],
                    )
                    .await?;
                tx.commit().await?;
                Ok::<_, tokio_postgres::Error>(n as usize)
            }
            .await
            .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn chunks(&self, ids: &[i64]) -> Result<Vec<ChunkRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.with(move |pool, mut c| async move {
            let r = c
                .query(
                    "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.msg_start,
                            c.msg_end, f.session_key, f.mtime_ms, c.day_first, c.day_last, c.parts
                     FROM chunks c LEFT JOIN files f ON f.path = c.path WHERE c.id = ANY($1)",
                    &[&ids],
                )
                .await
                .map(|rows| rows.iter().map(chunk_record).collect())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn cached_embeddings(&self, hashes: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let Some((model, dims)) = self.model() else {
            return Ok(HashMap::new());
        };
        if hashes.is_empty() {
            return Ok(HashMap::new());
        }
        let hashes: Vec<String> = hashes.iter().map(|h| h.to_string()).collect();
        self.with(move |pool, mut c| async move {
            let r = c
                .query(
                    "SELECT hash, embedding FROM embedding_cache
                     WHERE model = $1 AND dims = $2 AND hash = ANY($3)",
                    &[&model, &(dims as i32), &hashes],
                )
                .await
                .map(|rows| rows.iter().map(hash_and_vector).collect())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn embedding_cache_page(&self, after: &str, limit: usize) -> Result<Vec<(String, Vec<f32>)>> {
        let Some((model, dims)) = self.model() else {
            return Ok(Vec::new());
        };
        let after = after.to_string();
        self.with(move |pool, mut c| async move {
            let r = c
                .query(
                    "SELECT hash, embedding FROM embedding_cache
                     WHERE model = $1 AND dims = $2 AND hash > $3 ORDER BY hash LIMIT $4",
                    &[&model, &(dims as i32), &after, &(limit as i64)],
                )
                .await
                .map(|rows| rows.iter().map(hash_and_vector).collect())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn put_cached_embeddings(&self, rows: &[(String, Vec<f32>)]) -> Result<()> {
        let Some((model, dims)) = self.model() else {
            return Ok(());
        };
        let (hashes, vectors): (Vec<String>, Vec<Vector>) = rows
            .iter()
            .filter(|(_, v)| v.len() == dims)
            .map(|(h, v)| (h.clone(), Vector::from(v.clone())))
            .unzip();
        if hashes.is_empty() {
            return Ok(());
        }
        let now = chrono::Utc::now().timestamp_millis();
        self.with(move |pool, c| async move {
            let r = c
                .execute(
                    "INSERT INTO embedding_cache(model, hash, dims, embedding, updated_at)
                     SELECT $1, h, $2, e, $3 FROM unnest($4::text[], $5::vector[]) AS t(h, e)
                     ON CONFLICT DO NOTHING",
                    &[&model, &(dims as i32), &now, &hashes, &vectors],
                )
                .await
                .map(|_| ())
                .map_err(|e| pool.db(e));
            (c, r)
        })
    }

    fn counts(&self) -> Result<Counts> {
        let with_vectors = self.embedder.is_some();
        self.with(move |pool, mut c| async move {
            let r = async {
                let files: i64 = c.query_one("SELECT count(*) FROM files", &[]).await?.get(0);
                let chunks: i64 = c.query_one("SELECT chunks FROM totals", &[]).await?.get(0);
                let vectors: i64 = if with_vectors {
                    c.query_one("SELECT count(*) FROM chunk_vectors", &[])
                        .await?
                        .get(0)
                } else {
                    0
                };
                Ok::<_, tokio_postgres::Error>(Counts {
                    files: files as usize,
                    chunks: chunks as usize,
                    vectors: vectors as usize,
                })
            }
            .await
            .map_err(|e| pool.db(e));
            (c, r)
        })
    }
}

/// The statement that lays the word-list table `table` (its name as SQL,
/// schema-qualified or not) out word by word, in its key's order.
pub(crate) fn cluster_word_lists(table: &str) -> String {
    format!("CLUSTER {table} USING word_lists_pkey")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_search_breadth_follows_the_index_size() {
        // The sizes measured (docs/BENCHMARKS-LOG.md items 42, 58 and 67).
        assert_eq!(ef_search(10_068, 40), 100);
        assert_eq!(ef_search(100_207, 100), 200);
        assert_eq!(ef_search(0, 40), 100);
        assert_eq!(ef_search(15_000, 40), 100);
        assert_eq!(ef_search(15_001, 40), 200);
        assert_eq!(ef_search(150_000, 40), 200);
        assert_eq!(ef_search(150_001, 40), EF_MAX);
        assert_eq!(ef_search(1_015_067, 40), EF_MAX);
        assert_eq!(ef_search(i64::MAX, 40), EF_MAX);
        // Never fewer than the candidates asked for, never past pgvector's
        // largest.
        assert_eq!(ef_search(1_000, 300), 300);
        assert_eq!(ef_search(1_000, 5_000), EF_MAX);
    }

    fn url() -> Option<String> {
        mnemo_test_support::postgres::test_url()
    }

    fn model() -> EmbedderId {
        EmbedderId {
            provider: "test".into(),
            model: "unit".into(),
            provider_key: "3".into(),
        }
    }

    fn chunk(text: &str, line: usize) -> NewChunk {
        NewChunk {
            start_line: line,
            end_line: line,
            hash: format!("{text}/{line}"),
            text: text.into(),
            tokens: text.into(),
            messages: None,
            parts: Vec::new(),
            days: None,
        }
    }

    fn write(b: &PostgresBackend, path: &str, texts: &[&str]) {
        let chunks: Vec<NewChunk> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| chunk(t, i + 1))
            .collect();
        let vectors: Vec<Vec<f32>> = (0..texts.len()).map(|i| vec![1.0, i as f32, 0.5]).collect();
        let file = FileRecord {
            path: path.into(),
            source: Source::Memory,
            hash: format!("h-{path}-{}", texts.len()),
            mtime_ms: 1,
            size: 1,
            embedded: true,
            session_key: None,
        };
        b.upsert_file(&file, &chunks, Some(&vectors)).unwrap();
    }

    /// A vector search sets its connection's breadth by the rule, and the
    /// pool remembers it (the next search sends no `SET`).
    #[test]
    fn a_vector_search_sets_the_breadth_of_its_size() {
        let Some(url) = url() else { return };
        let opts = PostgresOptions {
            url,
            schema: mnemo_test_support::postgres::fresh_schema(),
        };
        let b = PostgresBackend::open(&opts, Some((model(), 3))).unwrap();
        write(&b, "memory/a.md", &["alpha one", "beta two", "gamma three"]);
        let hits = b.vector_search(&[1.0, 1.0, 0.5], 10, &[]).unwrap();
        assert_eq!(hits.len(), 3);
        let (set, tracked) = b
            .with(|pool, mut c| async move {
                let r = c
                    .query_one("SELECT current_setting('hnsw.ef_search')::bigint", &[])
                    .await
                    .map(|r| r.get::<_, i64>(0))
                    .map_err(|e| pool.db(e));
                let tracked = c.ef_search;
                (c, r.map(|set| (set, tracked)))
            })
            .unwrap();
        assert_eq!(set, ef_search(3, 40));
        assert_eq!(tracked, Some(set));
        PostgresBackend::drop_schema(&opts).unwrap();
    }

    /// A reader's keyword statistics follow another process's writes: the
    /// ranking after the write is that of a reader that never saw the
    /// index before. The write makes `beta` a word of over half the
    /// chunks, which the plan then drops: with the counts of before, it
    /// would still score.
    #[test]
    fn keyword_statistics_follow_another_writer() {
        let Some(url) = url() else { return };
        let opts = PostgresOptions {
            url,
            schema: mnemo_test_support::postgres::fresh_schema(),
        };
        let reader = PostgresBackend::open(&opts, None).unwrap();
        let writer = PostgresBackend::open(&opts, None).unwrap();
        write(
            &writer,
            "memory/a.md",
            &["alpha beta", "alpha gamma", "delta", "epsilon"],
        );
        let terms = vec!["alpha".to_string(), "beta".to_string()];
        let before = reader.keyword_search(&terms, 10, &[]).unwrap();
        assert_eq!(before.len(), 2);
        // The same answer again, from the kept statistics.
        assert_eq!(reader.keyword_search(&terms, 10, &[]).unwrap(), before);
        write(
            &writer,
            "memory/b.md",
            &["beta", "beta zeta", "beta eta", "beta theta"],
        );
        let after = reader.keyword_search(&terms, 10, &[]).unwrap();
        let fresh = PostgresBackend::open(&opts, None).unwrap();
        assert_eq!(after, fresh.keyword_search(&terms, 10, &[]).unwrap());
        // `beta` (5 of 8 chunks) is dropped: only `alpha`'s chunks score.
        assert_eq!(after.len(), 2);
        assert_ne!(after, before);
        PostgresBackend::drop_schema(&opts).unwrap();
    }
}
