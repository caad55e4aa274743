//! The SQLite implementation of [`IndexBackend`]: one database file per index
//! generation, WAL mode, short write transactions, FTS5 over pre-tokenised
//! text, an embedding cache, and the vectors mirrored in memory.
//!
//! The vectors live in SQLite only as the embedding cache (little-endian f32
//! blobs keyed by model and chunk hash). Search reads them from an in-memory
//! [`VectorSet`] (f32 rows plus their int8 copy, see `vectors` for the memory
//! cost and the scans), loaded on the first vector search of a process and
//! then kept current: this process's own writes are applied to it directly,
//! and a change of the database's `rev` by another process triggers a
//! reload. The load reads two tables sequentially (chunk ids and hashes,
//! then the cache rows of the model) and joins them in a hash map, instead
//! of one B-tree lookup per chunk, which made a cold 10,000-chunk load
//! take ~100 ms.
//!
//! A fresh process (`mnemo search`) would still pay that SQLite pass on its
//! first vector search, so the loaded set is also written to
//! `.mnemo/vectors.cache` (f32 rows, int8 rows, ids: 1.25x the f32 size) and
//! read back in one `read` by the next process. The cache is only a copy:
//! it is used when its header matches the live database exactly (file name,
//! the random `instance` id stored in `meta` when the database was created,
//! `rev`, model, dims, row count) and its checksum matches its content;
//! anything else (another generation, a write since, a torn or damaged file)
//! and the vectors are read from SQLite and the cache rewritten (temporary
//! file + rename, so readers see the old or the new file, never half).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, RwLock};
use std::time::Duration;

use chrono::NaiveDate;

use mnemo_core::EmbedderId;
use rusqlite::{params, params_from_iter, Connection, OpenFlags, OptionalExtension};

use mnemo_index::backend::{
    diff_chunks, ChunkKey, ChunkRecord, Counts, FileRecord, IndexBackend, NewChunk,
};
use mnemo_index::chunk::MessagePart;
use mnemo_index::{DbFailure, IndexError, Result};
use mnemo_index::{Source, VectorScan};

use crate::vectors::VectorSet;

/// SQLite's failures in the shared terms: a locked database is busy, a
/// damaged file corrupt. The shared error type names no SQLite type, so
/// another backend fits it as well.
pub(crate) fn db(e: rusqlite::Error) -> IndexError {
    let failure = match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            DbFailure::Busy
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase) => {
            DbFailure::Corrupt
        }
        _ => DbFailure::Other,
    };
    IndexError::Database {
        location: "the SQLite index in .mnemo/".into(),
        message: e.to_string(),
        failure,
    }
}

/// The chunks stored for `path` with their keys (see
/// [`mnemo_index::backend::diff_chunks`]), and whether the file was
/// stored with all its vectors.
fn stored_chunks(c: &Connection, path: &str) -> rusqlite::Result<(Vec<(i64, ChunkKey)>, bool)> {
    let complete = c
        .query_row(
            "SELECT embedded FROM files WHERE path = ?1",
            params![path],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .is_some_and(|e| e != 0);
    let mut stmt = c.prepare_cached(
        "SELECT id, source, start_line, end_line, hash, msg_start, msg_end, day_first, day_last,
                parts
         FROM chunks WHERE path = ?1",
    )?;
    let day = |s: Option<String>| s.and_then(|d| d.parse::<NaiveDate>().ok());
    let rows = stmt.query_map(params![path], |r| {
        let ms: Option<i64> = r.get(5)?;
        let me: Option<i64> = r.get(6)?;
        Ok((
            r.get(0)?,
            ChunkKey {
                source: Source::parse(&r.get::<_, String>(1)?),
                start_line: r.get::<_, i64>(2)? as usize,
                end_line: r.get::<_, i64>(3)? as usize,
                hash: r.get(4)?,
                messages: ms.zip(me).map(|(a, b)| (a as usize, b as usize)),
                days: day(r.get(7)?).zip(day(r.get(8)?)),
                parts: r.get(9)?,
            },
        ))
    })?;
    Ok((rows.collect::<rusqlite::Result<_>>()?, complete))
}

/// How long a connection waits for another one's lock before it reports
/// the index busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// How much of the database a reading connection maps.
const READER_MMAP_BYTES: i64 = 256 << 20;

/// Version of the tables below; a change forces a full rebuild.
pub(crate) const SCHEMA_VERSION: &str = "3";

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, source TEXT NOT NULL, hash TEXT NOT NULL,
    mtime INTEGER NOT NULL, size INTEGER NOT NULL, embedded INTEGER NOT NULL,
    session_key TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
    text TEXT NOT NULL, msg_start INTEGER, msg_end INTEGER, day_first TEXT, day_last TEXT,
    parts TEXT);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(hash);
CREATE INDEX IF NOT EXISTS chunks_days ON chunks(day_first, day_last);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    tokens, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, row);
CREATE TABLE IF NOT EXISTS embedding_cache (
    provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL,
    hash TEXT NOT NULL, dims INTEGER NOT NULL, embedding BLOB NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (provider, model, provider_key, hash));
";

/// Columns added after schema 1. An older database gets them (empty) so
/// searches keep working until the rebuild its schema version asks for.
/// Runs before `SCHEMA`, whose indexes name them.
fn add_missing_columns(conn: &Connection) -> Result<()> {
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_info('chunks')")
        .map_err(db)?;
    let have: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .map_err(db)?
        .collect::<rusqlite::Result<_>>()
        .map_err(db)?;
    if have.is_empty() {
        return Ok(()); // a new database: SCHEMA creates the table whole
    }
    for col in ["day_first", "day_last", "parts"] {
        if !have.iter().any(|h| h == col) {
            match conn.execute_batch(&format!("ALTER TABLE chunks ADD COLUMN {col} TEXT")) {
                // Another process opening the same old database got there first.
                Err(e) if e.to_string().contains("duplicate column") => {}
                r => r.map_err(db)?,
            }
        }
    }
    Ok(())
}

/// The SQL list of `sources` for an `IN (...)` filter; `None` for all.
fn source_filter(sources: &[Source]) -> Option<String> {
    match sources {
        [] => None,
        s => Some(
            s.iter()
                .map(|x| format!("'{}'", x.as_str()))
                .collect::<Vec<_>>()
                .join(","),
        ),
    }
}

/// A stored `YYYY-MM-DD` day.
fn day(s: Option<String>) -> Option<NaiveDate> {
    s.and_then(|s| s.parse().ok())
}

fn source_tag(s: Source) -> u8 {
    match s {
        Source::Memory => 0,
        Source::Sessions => 1,
    }
}

/// Little-endian f32 blob.
pub(crate) fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn from_blob(b: &[u8]) -> Option<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

/// A chunk hash (hex sha256) as 32 bytes, the key of the load's hash join.
fn hash_key(hex_hash: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    hex::decode_to_slice(hex_hash, &mut out).ok()?;
    Some(out)
}

/// Every chunk vector of model `id` in one pass over `chunks` and one over
/// the model's rows of `embedding_cache` (a full scan, `NOT INDEXED`: the
/// primary-key index would add a row lookup per vector), joined by hash.
fn load_vectors(c: &Connection, id: &EmbedderId, dims: usize) -> rusqlite::Result<VectorSet> {
    // Chunks by hash as chains through one vector (most hashes have one
    // chunk): a `Vec` per hash cost a small allocation each, which at a
    // million chunks left about 100 MB of heap behind after the load.
    // Each hash maps to its chain's first and last chunk, so the chunks of a
    // hash keep the order of the scan.
    const END: u32 = u32::MAX;
    let mut first: HashMap<[u8; 32], (u32, u32)> = HashMap::new();
    let mut chunks: Vec<(i64, u8, u32)> = Vec::new();
    {
        let mut stmt = c.prepare("SELECT id, source, hash FROM chunks")?;
        let mut q = stmt.query([])?;
        while let Some(r) = q.next()? {
            let Some(key) = hash_key(r.get_ref(2)?.as_str()?) else {
                continue;
            };
            let tag = source_tag(Source::parse(r.get_ref(1)?.as_str()?));
            let at = chunks.len() as u32;
            match first.entry(key) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert((at, at));
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    chunks[o.get().1 as usize].2 = at;
                    o.get_mut().1 = at;
                }
            }
            chunks.push((r.get(0)?, tag, END));
        }
    }
    let mut set = VectorSet::sized_for(dims, chunks.len());
    let mut stmt = c.prepare(
        "SELECT hash, embedding FROM embedding_cache NOT INDEXED
         WHERE provider = ?1 AND model = ?2 AND provider_key = ?3",
    )?;
    let mut q = stmt.query(params![id.provider, id.model, id.provider_key])?;
    while let Some(r) = q.next()? {
        let Some(key) = hash_key(r.get_ref(0)?.as_str()?) else {
            continue;
        };
        let Some(&(head, _)) = first.get(&key) else {
            continue;
        };
        let blob = r.get_ref(1)?.as_blob()?;
        let mut at = head;
        while at != END {
            let (cid, tag, next) = chunks[at as usize];
            set.push_le_bytes(cid, tag, blob);
            at = next;
        }
    }
    drop((first, chunks));
    set.finish_loading();
    Ok(set)
}

/// Name of the vector cache file, next to the database.
const VECTOR_CACHE: &str = "vectors.cache";
/// First bytes of the cache file; the number is the layout version.
const CACHE_MAGIC: &[u8; 8] = b"MNEMOVC1";

/// What a vector cache file must match to be used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct CacheKey {
    db: String,
    instance: String,
    rev: i64,
    model: String,
    dims: usize,
}

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct CacheHeader {
    key: CacheKey,
    rows: usize,
    checksum: u64,
    /// Whether the f32 rows follow the codes (a large set keeps codes only).
    #[serde(default = "yes")]
    exact: bool,
}

fn yes() -> bool {
    true
}

/// The set stored in `path` if its header matches `key` and its checksum its
/// content; `None` otherwise (missing, stale or damaged: reload).
fn read_cache(path: &Path, key: &CacheKey) -> Option<VectorSet> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let total = file.metadata().ok()?.len();
    let mut head = [0u8; 12];
    file.read_exact(&mut head).ok()?;
    let (magic, len) = head.split_at(8);
    if magic != CACHE_MAGIC {
        return None;
    }
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as u64;
    if len > 64 * 1024 || 12 + len > total {
        return None;
    }
    let mut json = vec![0u8; len as usize];
    file.read_exact(&mut json).ok()?;
    let header: CacheHeader = serde_json::from_slice(&json).ok()?;
    // The length is checked before anything is allocated for the rows.
    if &header.key != key
        || header.rows as u64 > total
        || total != 12 + len + VectorSet::encoded_len(key.dims, header.rows, header.exact) as u64
    {
        return None;
    }
    let set = VectorSet::read_from(&mut file, key.dims, header.rows, header.exact).ok()?;
    (set.checksum() == header.checksum).then_some(set)
}

/// Writes the cache through a temporary file renamed into place.
fn write_cache(path: &Path, key: &CacheKey, set: &VectorSet) -> std::io::Result<()> {
    use std::io::Write;
    let header = serde_json::to_vec(&CacheHeader {
        key: key.clone(),
        rows: set.len(),
        checksum: set.checksum(),
        exact: set.has_exact_rows(),
    })?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let res = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        w.write_all(CACHE_MAGIC)?;
        w.write_all(&(header.len() as u32).to_le_bytes())?;
        w.write_all(&header)?;
        set.write_to(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// The query re-scoring a pool of `n` chunk ids with their stored vectors.
fn rescore_sql(n: usize) -> String {
    format!(
        // CROSS JOIN keeps the pool's chunks (by id) as the outer loop. With
        // a plain JOIN and a pool of 200 ids, SQLite's plan walks the
        // model's whole embedding cache and looks each row's chunk up by
        // hash: a profile of searches over a million chunks spent nearly
        // all their time there (docs/BENCHMARKS-LOG.md, item 26).
        "SELECT c.id, e.embedding FROM chunks c CROSS JOIN embedding_cache e
           ON e.provider = ?1 AND e.model = ?2 AND e.provider_key = ?3 AND e.hash = c.hash
         WHERE c.id IN ({})",
        vec!["?"; n].join(",")
    )
}

fn meta_value(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
        r.get(0)
    })
    .optional()
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(db)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(db)?;
    Ok(())
}

/// Opens the database at `path` and brings its tables up to date, trying
/// again while another opener holds it: a database that does not exist
/// yet is in rollback mode until the first opener has switched it to WAL,
/// and two connections that both read it there and then want to write
/// deadlock; SQLite answers one of them SQLITE_BUSY at once, without
/// waiting for the busy timeout.
fn open_connection(path: &Path) -> Result<Connection> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match try_open_connection(path) {
            Err(IndexError::Database {
                failure: DbFailure::Busy,
                ..
            }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            r => return r,
        }
    }
}

fn try_open_connection(path: &Path) -> Result<Connection> {
    let mut conn = Connection::open(path).map_err(db)?;
    configure(&conn)?;
    // Every write transaction of this connection reads before it
    // writes. A deferred one that another connection wrote under in the
    // meantime fails at once with SQLITE_BUSY, without waiting: taking
    // the write lock at BEGIN makes it wait its turn instead.
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
    add_missing_columns(&conn)?;
    conn.execute_batch(SCHEMA).map_err(db)?;
    // A random id of this database, so a vector cache written for an
    // earlier database of the same name (deleted and rebuilt) never
    // matches. Checked first: the insert takes the write lock.
    if meta_value(&conn, "instance").map_err(db)?.is_none() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        conn.execute(
            "INSERT OR IGNORE INTO meta(key, value) VALUES ('instance', ?1)",
            params![format!("{nanos:x}-{:x}", std::process::id())],
        )
        .map_err(db)?;
    }
    Ok(conn)
}

struct Mirror {
    /// Value of meta `rev` the vectors were loaded at; `None` = reload.
    rev: Option<i64>,
    set: VectorSet,
}

/// One SQLite index database.
pub struct SqliteBackend {
    path: PathBuf,
    embedder: Option<(EmbedderId, usize)>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    mirror: RwLock<Mirror>,
    scan: VectorScan,
    /// Chunk and term counts for keyword search, per revision.
    terms: crate::fts::StatsCache,
}

impl std::fmt::Debug for SqliteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteBackend")
            .field("path", &self.path)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave SQLite state half-written
    // (transactions roll back), so the poisoned guard is safe to reuse.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SqliteBackend {
    /// Opens (creating if needed) the database at `path`. `embedder` is the
    /// model whose vectors this index serves (with its dimension).
    pub fn open(path: &Path, embedder: Option<(EmbedderId, usize)>) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        }
        let conn = open_connection(path)?;
        let dims = embedder.as_ref().map(|e| e.1).unwrap_or(0);
        Ok(SqliteBackend {
            path: path.to_path_buf(),
            embedder,
            writer: Mutex::new(conn),
            readers: Mutex::new(Vec::new()),
            mirror: RwLock::new(Mirror {
                rev: None,
                set: VectorSet::new(dims),
            }),
            scan: VectorScan::default(),
            terms: crate::fts::StatsCache::new(),
        })
    }

    /// Sets the scan vector search uses (`[index] vector_scan`).
    pub fn with_vector_scan(mut self, scan: VectorScan) -> Self {
        self.scan = scan;
        self
    }

    /// The scan vector search uses.
    pub fn vector_scan(&self) -> VectorScan {
        self.scan
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model and dimension this backend serves vectors for.
    pub fn embedder(&self) -> Option<&(EmbedderId, usize)> {
        self.embedder.as_ref()
    }

    fn with_reader<T>(&self, f: impl Fn(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let conn = match lock(&self.readers).pop() {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_WRITE
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX
                        | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(db)?;
                c.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
                c.pragma_update(None, "query_only", true).map_err(db)?;
                // Pages read through the map rather than copied by a read
                // call each: a keyword search touches hundreds of them.
                // Capped, so a large index does not count against the
                // process's memory beyond it.
                c.pragma_update(None, "mmap_size", READER_MMAP_BYTES)
                    .map_err(db)?;
                crate::fts_rank::register(&c, self.terms.lens()).map_err(db)?;
                // Room for the padded row lists of `chunks` beside the rest.
                c.set_prepared_statement_cache_capacity(32);
                c
            }
        };
        let out = f(&conn);
        if out.is_ok() {
            lock(&self.readers).push(conn);
        }
        out.map_err(db)
    }

    fn rev(conn: &Connection) -> rusqlite::Result<i64> {
        Ok(conn
            .query_row("SELECT value FROM meta WHERE key = 'rev'", [], |r| {
                r.get::<_, String>(0)
            })
            .optional()?
            .and_then(|s| s.parse().ok())
            .unwrap_or(0))
    }

    /// Bumps `rev` inside a write transaction; returns (old, new).
    fn bump_rev(tx: &Connection) -> rusqlite::Result<(i64, i64)> {
        let old = Self::rev(tx)?;
        tx.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('rev', ?1)",
            params![(old + 1).to_string()],
        )?;
        Ok((old, old + 1))
    }

    /// Applies an in-process change to the vector mirror when it was current,
    /// otherwise marks it for reload.
    fn mirror_apply(&self, old_rev: i64, new_rev: i64, f: impl FnOnce(&mut VectorSet)) {
        let mut m = self.mirror.write().unwrap_or_else(|e| e.into_inner());
        if m.rev == Some(old_rev) {
            f(&mut m.set);
            m.rev = Some(new_rev);
        } else {
            m.rev = None;
        }
    }

    fn ensure_mirror(&self) -> Result<()> {
        let Some((id, dims)) = self.embedder.clone() else {
            return Ok(());
        };
        let rev = self.with_reader(Self::rev)?;
        {
            let m = self.mirror.read().unwrap_or_else(|e| e.into_inner());
            if m.rev == Some(rev) {
                return Ok(());
            }
        }
        let cache = self.path.with_file_name(VECTOR_CACHE);
        let db = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (rev, set, key) = self.with_reader(|c| {
            // Read rev and vectors in one read transaction so they agree
            // (the cache is checked against the rev of this transaction).
            c.execute_batch("BEGIN")?;
            let res = (|| {
                let rev = Self::rev(c)?;
                let key = CacheKey {
                    db: db.clone(),
                    instance: meta_value(c, "instance")?.unwrap_or_default(),
                    rev,
                    model: format!("{}/{}/{}", id.provider, id.model, id.provider_key),
                    dims,
                };
                if let Some(set) = read_cache(&cache, &key) {
                    return Ok((rev, set, None));
                }
                let set = load_vectors(c, &id, dims)?;
                Ok((rev, set, Some(key)))
            })();
            let _ = c.execute_batch("COMMIT");
            res
        })?;
        if let Some(key) = key.filter(|k| !set.is_empty() && !k.instance.is_empty()) {
            // The cache only speeds up the next process: failing to write it
            // (read-only or full disk) costs nothing but that.
            if let Err(e) = write_cache(&cache, &key, &set) {
                tracing::debug!("could not write the vector cache {}: {e}", cache.display());
            }
        }
        let mut m = self.mirror.write().unwrap_or_else(|e| e.into_inner());
        m.rev = Some(rev);
        m.set = set;
        Ok(())
    }

    /// Re-scores an int8 candidate pool with the stored vectors (for a set
    /// that keeps codes only) and returns its best `k`, exact cosines.
    fn rescore(&self, query: &[f32], pool: Vec<(i64, f32)>, k: usize) -> Result<Vec<(i64, f32)>> {
        let Some((id, dims)) = self.embedder.clone() else {
            return Ok(Vec::new());
        };
        let mut scored: Vec<(i64, f32)> = Vec::with_capacity(pool.len());
        for batch in pool.chunks(500) {
            let sql = rescore_sql(batch.len());
            let rows: Vec<(i64, Vec<u8>)> = self.with_reader(|c| {
                let mut stmt = c.prepare_cached(&sql)?;
                let mut p: Vec<&dyn rusqlite::ToSql> =
                    vec![&id.provider, &id.model, &id.provider_key];
                p.extend(batch.iter().map(|(cid, _)| cid as &dyn rusqlite::ToSql));
                let rows = stmt.query_map(p.as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            })?;
            for (cid, blob) in rows {
                if let Some(v) = from_blob(&blob).filter(|v| v.len() == dims) {
                    scored.push((cid, crate::vectors::dot(&v, query)));
                }
            }
        }
        // As the in-memory scan orders them: best first, ties by pool rank.
        let rank: HashMap<i64, usize> =
            pool.iter().enumerate().map(|(i, (c, _))| (*c, i)).collect();
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(rank.get(&a.0).cmp(&rank.get(&b.0)))
        });
        scored.truncate(k);
        Ok(scored)
    }

    /// Drops the in-memory vectors and loads them again (from the vector
    /// cache when it is current, else from SQLite); returns their number.
    pub fn reload_vectors(&self) -> Result<usize> {
        self.mirror.write().unwrap_or_else(|e| e.into_inner()).rev = None;
        self.ensure_mirror()?;
        Ok(self
            .mirror
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .len())
    }

    /// Copies another database's embedding cache into this one, so a full
    /// rebuild re-embeds only chunks never seen before.
    pub fn import_cache_from(&self, other: &Path) -> Result<usize> {
        if !other.exists() {
            return Ok(0);
        }
        let conn = lock(&self.writer);
        conn.execute(
            "ATTACH DATABASE ?1 AS old",
            params![other.to_string_lossy()],
        )
        .map_err(db)?;
        let n = conn.execute(
            "INSERT OR IGNORE INTO embedding_cache SELECT * FROM old.embedding_cache",
            [],
        );
        conn.execute("DETACH DATABASE old", []).map_err(db)?;
        n.map_err(db)
    }

    /// Rewrites the database so that no deleted row survives in it: FTS5
    /// segments merged (a contentless table keeps deleted tokens until
    /// then), free pages dropped by `VACUUM`, the write-ahead log
    /// checkpointed and truncated. For a forget; it costs a full rewrite.
    pub fn scrub(&self) -> Result<()> {
        let conn = lock(&self.writer);
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')", [])
            .map_err(db)?;
        conn.execute("VACUUM", []).map_err(db)?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(db)?;
        Ok(())
    }

    /// Runs a WAL checkpoint (after a full rebuild, before the swap).
    pub fn checkpoint(&self) -> Result<()> {
        let conn = lock(&self.writer);
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(db)?;
        Ok(())
    }
}

impl IndexBackend for SqliteBackend {
    fn meta(&self) -> Result<HashMap<String, String>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare("SELECT key, value FROM meta")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
    }

    fn set_meta(&self, entries: &[(&str, String)]) -> Result<()> {
        let mut conn = lock(&self.writer);
        let tx = conn.transaction().map_err(db)?;
        for (k, v) in entries {
            tx.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)",
                params![k, v],
            )
            .map_err(db)?;
        }
        tx.commit().map_err(db)?;
        Ok(())
    }

    fn files(&self) -> Result<Vec<FileRecord>> {
        self.with_reader(|c| {
            let mut stmt = c.prepare(
                "SELECT path, source, hash, mtime, size, embedded, session_key FROM files",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(FileRecord {
                    path: r.get(0)?,
                    source: Source::parse(&r.get::<_, String>(1)?),
                    hash: r.get(2)?,
                    mtime_ms: r.get(3)?,
                    size: r.get::<_, i64>(4)? as u64,
                    embedded: r.get::<_, i64>(5)? != 0,
                    session_key: r.get(6)?,
                })
            })?;
            rows.collect()
        })
    }

    fn upsert_file(
        &self,
        file: &FileRecord,
        chunks: &[NewChunk],
        vectors: Option<&[Vec<f32>]>,
    ) -> Result<()> {
        let now = chrono::Utc::now().timestamp();
        let mut conn = lock(&self.writer);
        let tx = conn.transaction().map_err(db)?;
        // The stored chunks a new one matches stay as they are: an
        // appended log rewrites only its last chunks.
        let (stored, complete) = stored_chunks(&tx, &file.path).map_err(db)?;
        let keys: Vec<ChunkKey> = chunks
            .iter()
            .map(|c| ChunkKey::of(c, file.source))
            .collect();
        let diff = diff_chunks(stored, &keys, complete);
        {
            let mut fts = tx
                .prepare_cached("DELETE FROM chunks_fts WHERE rowid = ?1")
                .map_err(db)?;
            let mut chunk = tx
                .prepare_cached("DELETE FROM chunks WHERE id = ?1")
                .map_err(db)?;
            for id in &diff.gone {
                fts.execute(params![id]).map_err(db)?;
                chunk.execute(params![id]).map_err(db)?;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO files(path, source, hash, mtime, size, embedded, session_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                file.path,
                file.source.as_str(),
                file.hash,
                file.mtime_ms,
                file.size as i64,
                file.embedded as i64,
                file.session_key
            ],
        )
        .map_err(db)?;
        let mut new_rows: Vec<(i64, Vec<f32>)> = Vec::new();
        {
            let mut ins = tx.prepare(
                "INSERT INTO chunks(path, source, start_line, end_line, hash, text, msg_start, msg_end,
                                    day_first, day_last, parts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            ).map_err(db)?;
            let mut fts = tx
                .prepare("INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)")
                .map_err(db)?;
            let mut cache = tx.prepare(
                "INSERT OR REPLACE INTO embedding_cache(provider, model, provider_key, hash, dims, embedding, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            ).map_err(db)?;
            for (i, c) in chunks.iter().enumerate() {
                if diff.kept[i] {
                    continue;
                }
                ins.execute(params![
                    file.path,
                    file.source.as_str(),
                    c.start_line as i64,
                    c.end_line as i64,
                    c.hash,
                    c.text,
                    c.messages.map(|m| m.0 as i64),
                    c.messages.map(|m| m.1 as i64),
                    c.days.map(|d| d.0.to_string()),
                    c.days.map(|d| d.1.to_string()),
                    (!c.parts.is_empty()).then(|| MessagePart::encode(&c.parts)),
                ])
                .map_err(db)?;
                let id = tx.last_insert_rowid();
                fts.execute(params![id, c.tokens]).map_err(db)?;
                if let (Some(vs), Some((eid, dims))) = (vectors, self.embedder.as_ref()) {
                    if let Some(v) = vs.get(i).filter(|v| v.len() == *dims) {
                        cache
                            .execute(params![
                                eid.provider,
                                eid.model,
                                eid.provider_key,
                                c.hash,
                                *dims as i64,
                                to_blob(v),
                                now
                            ])
                            .map_err(db)?;
                        new_rows.push((id, v.clone()));
                    }
                }
            }
        }
        let (old_rev, new_rev) = Self::bump_rev(&tx).map_err(db)?;
        tx.commit().map_err(db)?;
        let tag = source_tag(file.source);
        self.mirror_apply(old_rev, new_rev, |set| {
            set.remove(&diff.gone.iter().copied().collect());
            for (id, v) in &new_rows {
                set.push(*id, tag, v);
            }
        });
        Ok(())
    }

    fn touch_file(&self, path: &str, mtime_ms: i64, size: u64) -> Result<()> {
        let conn = lock(&self.writer);
        conn.execute(
            "UPDATE files SET mtime = ?2, size = ?3 WHERE path = ?1",
            params![path, mtime_ms, size as i64],
        )
        .map_err(db)?;
        Ok(())
    }

    fn delete_file(&self, path: &str) -> Result<()> {
        let mut conn = lock(&self.writer);
        let tx = conn.transaction().map_err(db)?;
        let ids: Vec<i64> = {
            let mut stmt = tx
                .prepare("SELECT id FROM chunks WHERE path = ?1")
                .map_err(db)?;
            let rows = stmt.query_map(params![path], |r| r.get(0)).map_err(db)?;
            rows.collect::<rusqlite::Result<_>>().map_err(db)?
        };
        for id in &ids {
            tx.execute("DELETE FROM chunks_fts WHERE rowid = ?1", params![id])
                .map_err(db)?;
        }
        tx.execute("DELETE FROM chunks WHERE path = ?1", params![path])
            .map_err(db)?;
        tx.execute("DELETE FROM files WHERE path = ?1", params![path])
            .map_err(db)?;
        let (old_rev, new_rev) = Self::bump_rev(&tx).map_err(db)?;
        tx.commit().map_err(db)?;
        self.mirror_apply(old_rev, new_rev, |set| {
            set.remove(&ids.into_iter().collect())
        });
        Ok(())
    }

    fn prune_embedding_cache(&self, keep: usize) -> Result<usize> {
        let mut conn = lock(&self.writer);
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM embedding_cache", [], |r| r.get(0))
            .map_err(db)?;
        let excess = rows.saturating_sub(i64::try_from(keep).unwrap_or(i64::MAX));
        if excess <= 0 {
            return Ok(0);
        }
        let tx = conn.transaction().map_err(db)?;
        let deleted = tx
            .execute(
                "DELETE FROM embedding_cache WHERE rowid IN (
                 SELECT e.rowid FROM embedding_cache e
                 WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.hash = e.hash)
                 ORDER BY e.updated_at LIMIT ?1)",
                params![excess],
            )
            .map_err(db)?;
        tx.commit().map_err(db)?;
        Ok(deleted)
    }

    fn keyword_search(
        &self,
        tokens: &[String],
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<(i64, f64)>> {
        let filter = source_filter(sources);
        self.with_reader(|c| {
            let rev = Self::rev(c)?;
            crate::fts::search(c, &self.terms, rev, tokens, limit, filter.as_deref())
        })
    }

    fn vector_search(
        &self,
        query: &[f32],
        k: usize,
        sources: &[Source],
    ) -> Result<Vec<(i64, f32)>> {
        self.ensure_mirror()?;
        let m = self.mirror.read().unwrap_or_else(|e| e.into_inner());
        let tags: HashSet<u8> = sources.iter().map(|s| source_tag(*s)).collect();
        let allow = |t: u8| tags.contains(&t);
        let filter: Option<&(dyn Fn(u8) -> bool + Sync)> = if tags.is_empty() || tags.len() == 2 {
            None
        } else {
            Some(&allow)
        };
        let found = m.set.search(self.scan, query, k, filter);
        if m.set.has_exact_rows() {
            return Ok(found);
        }
        drop(m);
        self.rescore(query, found, k)
    }

    fn chunks_in_days(
        &self,
        first: NaiveDate,
        last: NaiveDate,
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<i64>> {
        let filter = source_filter(sources);
        let sql = format!(
            // The lower bound keeps the range scan on `chunks_days` short in a
            // large index; a chunk whose messages span more than a month
            // before the window is left to the other signals.
            "SELECT id FROM chunks
             WHERE day_first BETWEEN date(?1, '-31 days') AND ?2 AND day_last >= ?1 {}
             ORDER BY day_first LIMIT ?3",
            filter
                .map(|f| format!("AND source IN ({f})"))
                .unwrap_or_default()
        );
        self.with_reader(|c| {
            let mut stmt = c.prepare_cached(&sql)?;
            let rows = stmt.query_map(
                params![first.to_string(), last.to_string(), limit as i64],
                |r| r.get(0),
            )?;
            rows.collect()
        })
    }

    fn day_range(&self) -> Result<Option<(NaiveDate, NaiveDate)>> {
        self.with_reader(|c| {
            c.query_row(
                // Both ends from the `chunks_days` index: max(day_last) would
                // scan the table. The latest chunk starts its last day there.
                "SELECT min(day_first), max(day_first) FROM chunks",
                [],
                |r| Ok(day(r.get(0)?).zip(day(r.get(1)?))),
            )
        })
    }

    fn chunks(&self, ids: &[i64]) -> Result<Vec<ChunkRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(ids.len());
        for batch in ids.chunks(512) {
            // The list is padded with an id no chunk has (ids start at 1) to
            // a multiple of 64, so a few statements are prepared once and
            // cached instead of one parsed for every search (a few percent
            // of a search at 100,000 chunks).
            let slots = batch.len().next_multiple_of(64);
            let sql = format!(
                "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.msg_start, c.msg_end,
                        f.session_key, f.mtime, c.day_first, c.day_last, c.parts
                 FROM chunks c LEFT JOIN files f ON f.path = c.path WHERE c.id IN ({})",
                vec!["?"; slots].join(",")
            );
            let padded = batch
                .iter()
                .copied()
                .chain(std::iter::repeat(0i64))
                .take(slots);
            let part = self.with_reader(|c| {
                let mut stmt = c.prepare_cached(&sql)?;
                let rows = stmt.query_map(params_from_iter(padded.clone()), |r| {
                    let ms: Option<i64> = r.get(6)?;
                    let me: Option<i64> = r.get(7)?;
                    Ok(ChunkRecord {
                        id: r.get(0)?,
                        path: r.get(1)?,
                        source: Source::parse(&r.get::<_, String>(2)?),
                        start_line: r.get::<_, i64>(3)? as usize,
                        end_line: r.get::<_, i64>(4)? as usize,
                        text: r.get(5)?,
                        messages: ms.zip(me).map(|(a, b)| (a as usize, b as usize)),
                        session_key: r.get(8)?,
                        mtime_ms: r.get::<_, Option<i64>>(9)?.unwrap_or(0),
                        days: day(r.get(10)?).zip(day(r.get(11)?)),
                        parts: r
                            .get::<_, Option<String>>(12)?
                            .map(|p| MessagePart::decode(&p))
                            .unwrap_or_default(),
                    })
                })?;
                rows.collect::<rusqlite::Result<Vec<_>>>()
            })?;
            out.extend(part);
        }
        Ok(out)
    }

    fn cached_embeddings(&self, hashes: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let Some((id, dims)) = self.embedder.clone() else {
            return Ok(HashMap::new());
        };
        let mut out = HashMap::new();
        for batch in hashes.chunks(500) {
            let sql = format!(
                "SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ? AND provider_key = ?
                 AND hash IN ({})",
                vec!["?"; batch.len()].join(",")
            );
            let rows: Vec<(String, Vec<u8>)> = self.with_reader(|c| {
                let mut stmt = c.prepare(&sql)?;
                let mut p: Vec<&dyn rusqlite::ToSql> =
                    vec![&id.provider, &id.model, &id.provider_key];
                p.extend(batch.iter().map(|h| h as &dyn rusqlite::ToSql));
                let rows = stmt.query_map(p.as_slice(), |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect()
            })?;
            for (h, b) in rows {
                if let Some(v) = from_blob(&b).filter(|v| v.len() == dims) {
                    out.insert(h, v);
                }
            }
        }
        Ok(out)
    }

    fn embedding_cache_page(&self, after: &str, limit: usize) -> Result<Vec<(String, Vec<f32>)>> {
        let Some((id, dims)) = self.embedder.clone() else {
            return Ok(Vec::new());
        };
        let rows: Vec<(String, Vec<u8>)> = self.with_reader(|c| {
            let mut stmt = c.prepare(
                "SELECT hash, embedding FROM embedding_cache
                 WHERE provider = ?1 AND model = ?2 AND provider_key = ?3 AND dims = ?4 AND hash > ?5
                 ORDER BY hash LIMIT ?6",
            )?;
            let rows = stmt.query_map(
                params![
                    id.provider,
                    id.model,
                    id.provider_key,
                    dims as i64,
                    after,
                    limit as i64
                ],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            rows.collect()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(h, b)| from_blob(&b).filter(|v| v.len() == dims).map(|v| (h, v)))
            .collect())
    }

    fn put_cached_embeddings(&self, rows: &[(String, Vec<f32>)]) -> Result<()> {
        let Some((id, dims)) = self.embedder.clone() else {
            return Ok(());
        };
        let now = chrono::Utc::now().timestamp_millis();
        let mut conn = lock(&self.writer);
        let tx = conn.transaction().map_err(db)?;
        {
            let mut ins = tx.prepare(
                "INSERT OR IGNORE INTO embedding_cache(provider, model, provider_key, hash, dims, embedding, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            ).map_err(db)?;
            for (hash, v) in rows.iter().filter(|(_, v)| v.len() == dims) {
                ins.execute(params![
                    id.provider,
                    id.model,
                    id.provider_key,
                    hash,
                    dims as i64,
                    to_blob(v),
                    now
                ])
                .map_err(db)?;
            }
        }
        tx.commit().map_err(db)?;
        Ok(())
    }

    fn counts(&self) -> Result<Counts> {
        let (files, chunks) = self.with_reader(|c| {
            let f: i64 = c.query_row("SELECT count(*) FROM files", [], |r| r.get(0))?;
            let ch: i64 = c.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
            Ok((f as usize, ch as usize))
        })?;
        self.ensure_mirror()?;
        let vectors = self
            .mirror
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .set
            .len();
        Ok(Counts {
            files,
            chunks,
            vectors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The re-score of a large set's pool looks its chunks up by id, then
    /// their vectors by key; it never walks the embedding cache.
    #[test]
    fn the_pool_rescore_looks_up_rows_and_never_walks_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let b = SqliteBackend::open(&dir.path().join("i.sqlite"), None).unwrap();
        let conn = lock(&b.writer);
        for n in [1, 200, 500] {
            let sql = format!("EXPLAIN QUERY PLAN {}", rescore_sql(n));
            let mut stmt = conn.prepare(&sql).unwrap();
            let mut p: Vec<Box<dyn rusqlite::ToSql>> =
                vec![Box::new("p"), Box::new("m"), Box::new("k")];
            p.extend((1..=n as i64).map(|i| Box::new(i) as Box<dyn rusqlite::ToSql>));
            let plan: Vec<String> = stmt
                .query_map(params_from_iter(p.iter()), |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert_eq!(plan.len(), 2, "{plan:?}");
            assert!(
                plan[0].starts_with("SEARCH c USING INTEGER PRIMARY KEY"),
                "{plan:?}"
            );
            assert!(
                plan[1].starts_with("SEARCH e USING INDEX") && plan[1].contains("hash=?"),
                "{plan:?}"
            );
        }
    }

    #[test]
    fn a_schema_1_database_gets_the_new_columns_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE chunks (
                    id INTEGER PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL,
                    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
                    text TEXT NOT NULL, msg_start INTEGER, msg_end INTEGER);
                 INSERT INTO chunks(path, source, start_line, end_line, hash, text)
                    VALUES ('MEMORY.md', 'memory', 1, 2, 'h', 'old text');",
            )
            .unwrap();
        }
        let backend = SqliteBackend::open(&path, None).unwrap();
        let rows = backend.chunks(&[1]).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].text, "old text");
        assert_eq!(rows[0].days, None);
        assert!(rows[0].parts.is_empty());
        // A second open finds the columns in place.
        drop(backend);
        SqliteBackend::open(&path, None).unwrap();
    }

    /// Openers racing on a database that does not exist yet (a server's
    /// first search beside its watcher, two commands started together) all
    /// get it: before the first of them has switched the file to WAL, two
    /// readers that both want to write deadlock, and SQLite answers one of
    /// them SQLITE_BUSY at once, without waiting.
    #[test]
    fn openers_racing_on_a_new_database_all_succeed() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.sqlite");
            let barrier = std::sync::Barrier::new(6);
            std::thread::scope(|s| {
                let opens: Vec<_> = (0..6)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            SqliteBackend::open(&path, None).map(|_| ())
                        })
                    })
                    .collect();
                for o in opens {
                    let r = o.join().unwrap();
                    assert!(r.is_ok(), "round {round}: {r:?}");
                }
            });
        }
    }
}
