//! The index's tables in its PostgreSQL schema, created and migrated by
//! mnemo: `mnemo_schema` holds the version, [`MIGRATIONS`] lead from each
//! version to the next, and a schema written by a newer mnemo is refused.
//!
//! The chunk vectors' table is not a migration: its column has the
//! dimension of the model the index serves (pgvector's HNSW index needs a
//! fixed one), so it is made by [`bind_model`] when a model is first seen,
//! and made anew from the embedding cache when the model changes.

use tokio_postgres::Transaction;

/// Each migration, in order: migration `i` takes the schema from version
/// `i` to `i + 1`. Append only; never edit a released one.
pub(crate) const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    path TEXT PRIMARY KEY, source TEXT NOT NULL, hash TEXT NOT NULL,
    mtime_ms BIGINT NOT NULL, size BIGINT NOT NULL, embedded BOOLEAN NOT NULL,
    session_key TEXT);
CREATE TABLE chunks (
    id BIGSERIAL PRIMARY KEY, path TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
    source TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    hash TEXT NOT NULL, text TEXT NOT NULL, msg_start INTEGER, msg_end INTEGER,
    day_first DATE, day_last DATE, parts TEXT, ntokens INTEGER NOT NULL);
CREATE INDEX chunks_path ON chunks(path);
CREATE INDEX chunks_hash ON chunks(hash);
CREATE INDEX chunks_days ON chunks(day_first, day_last);
-- BM25's inputs, kept by mnemo (see keyword.rs): one row per token and chunk.
CREATE TABLE postings (
    token TEXT NOT NULL, chunk_id BIGINT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
    source TEXT NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, positions INTEGER[] NOT NULL,
    PRIMARY KEY (token, chunk_id));
CREATE INDEX postings_chunk ON postings(chunk_id);
-- Chunks and tokens of the whole index (FTS5's row count and total size).
CREATE TABLE totals (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    chunks BIGINT NOT NULL, tokens BIGINT NOT NULL);
INSERT INTO totals(one, chunks, tokens) VALUES (true, 0, 0);
-- Vectors by model and chunk hash, of any dimension.
CREATE TABLE embedding_cache (
    model TEXT NOT NULL, hash TEXT NOT NULL, dims INTEGER NOT NULL,
    embedding vector NOT NULL, updated_at BIGINT NOT NULL,
    PRIMARY KEY (model, hash));
-- The model whose vectors chunk_vectors holds.
CREATE TABLE vector_model (
    one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    model TEXT NOT NULL, dims INTEGER NOT NULL);
",
    "
-- A word's postings with what BM25 and phrases read, in the index: a
-- keyword search reads them in an index-only scan instead of one heap page
-- per posting (the table is in chunk order: 700 -> 86 ms for three common
-- words over 100,000 chunks, docs/BENCHMARKS.md).
CREATE INDEX postings_cover ON postings (token) INCLUDE (chunk_id, tf, len, source, positions);
",
    "
-- A chunk's postings by word, with what BM25 reads: a search past the
-- keyword budget looks up the common words of the chunks holding a rare
-- one, each in one step of an index-only scan, instead of reading the
-- common words' whole posting lists (docs/BENCHMARKS.md). It serves the
-- cascade from chunks as the chunk_id index did.
CREATE INDEX postings_by_chunk ON postings (chunk_id, token) INCLUDE (tf, len);
DROP INDEX postings_chunk;
",
    "
-- Each word's number of chunks (a BM25 input), kept by the writers: a
-- search reads a row per word instead of counting its postings (22 ms
-- for five everyday words over 100,000 chunks, docs/BENCHMARKS.md).
CREATE TABLE vocab (token TEXT PRIMARY KEY, docs BIGINT NOT NULL);
INSERT INTO vocab(token, docs) SELECT token, count(*) FROM postings GROUP BY token;
",
    "
-- A word's postings grouped by file, one row per (word, file) with the
-- file's chunks in id order: a common word of 100,000 chunks is a
-- thousand rows read in one index scan and scored by mnemo, not 18,000
-- rows through the executor (docs/BENCHMARKS.md). The lists are packed
-- big-endian integers (`int8send` / `int4send`), read without decoding an
-- array element by element; `positions` holds each chunk's positions one
-- after the other (`tfs` says how many are each chunk's).
CREATE TABLE word_lists (
    token TEXT NOT NULL, path TEXT NOT NULL, source TEXT NOT NULL,
    chunk_ids BYTEA NOT NULL, tfs BYTEA NOT NULL, lens BYTEA NOT NULL, positions BYTEA NOT NULL,
    PRIMARY KEY (token, path));
CREATE INDEX word_lists_path ON word_lists(path);
INSERT INTO word_lists(token, path, source, chunk_ids, tfs, lens, positions)
SELECT p.token, c.path, min(p.source),
       string_agg(int8send(p.chunk_id), ''::bytea ORDER BY p.chunk_id),
       string_agg(int4send(p.tf), ''::bytea ORDER BY p.chunk_id),
       string_agg(int4send(p.len), ''::bytea ORDER BY p.chunk_id),
       string_agg(pp.packed, ''::bytea ORDER BY p.chunk_id)
FROM postings p JOIN chunks c ON c.id = p.chunk_id
CROSS JOIN LATERAL (SELECT string_agg(int4send(x), ''::bytea ORDER BY o) AS packed
                    FROM unnest(p.positions) WITH ORDINALITY AS u(x, o)) AS pp
GROUP BY p.token, c.path;
DROP TABLE postings;
",
    "
-- The HNSW graph built with twice pgvector's default breadth
-- (ef_construction 128): over 100,000 chunks of real dialogue its top 10
-- at ef_search 200 agree with the exact scan at recall@10 0.993 instead of
-- 0.977, and answer faster (docs/BENCHMARKS.md). Rebuilt here when the
-- vectors' table exists (bind_model makes it later otherwise).
DO $$
BEGIN
  IF to_regclass('chunk_vectors_hnsw') IS NOT NULL THEN
    DROP INDEX chunk_vectors_hnsw;
    CREATE INDEX chunk_vectors_hnsw ON chunk_vectors
        USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);
  END IF;
END $$;
",
];

/// The version this mnemo writes.
pub(crate) fn current() -> i32 {
    MIGRATIONS.len() as i32
}

/// pgvector's HNSW index takes vectors of at most this many dimensions;
/// larger ones are searched by an exact scan.
pub(crate) const HNSW_MAX_DIMS: usize = 2000;

/// The HNSW graph of the chunk vectors, as mnemo builds it (see migration
/// 6 for its breadth); `IF NOT EXISTS`, so a graph another writer built
/// meanwhile is kept.
pub(crate) const HNSW_INDEX: &str = "CREATE INDEX IF NOT EXISTS chunk_vectors_hnsw ON chunk_vectors
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)";

/// Creates `schema` if needed and brings it to [`current`]; `Err` names
/// the version when the schema is newer than this mnemo.
pub(crate) async fn migrate(tx: &Transaction<'_>) -> Result<(), Migration> {
    // No DDL for a schema that is up to date: a search must work in a
    // read-only database (a standby, a database made read-only), where
    // even `CREATE … IF NOT EXISTS` is refused.
    let exists: bool = tx
        .query_one("SELECT to_regclass('mnemo_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        tx.batch_execute("CREATE TABLE IF NOT EXISTS mnemo_schema (version INTEGER NOT NULL)")
            .await?;
    }
    let row = tx
        .query_opt("SELECT version FROM mnemo_schema", &[])
        .await?;
    let have: i32 = match row {
        Some(r) => r.get(0),
        None => {
            tx.execute("INSERT INTO mnemo_schema(version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    if have > current() {
        return Err(Migration::Newer(have));
    }
    if have == current() {
        return Ok(());
    }
    for sql in &MIGRATIONS[have as usize..] {
        tx.batch_execute(sql).await?;
    }
    tx.execute("UPDATE mnemo_schema SET version = $1", &[&current()])
        .await?;
    Ok(())
}

/// Why a migration did not happen.
#[derive(Debug)]
pub(crate) enum Migration {
    /// The schema's version, newer than this mnemo's.
    Newer(i32),
    /// The server refused a statement.
    Db(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Migration {
    fn from(e: tokio_postgres::Error) -> Self {
        Migration::Db(e)
    }
}

/// Makes `chunk_vectors` hold the vectors of `model` (`dims` wide): kept
/// when it already does, else made anew and filled from the embedding
/// cache (the model's vectors of the chunks' hashes), so vectors of two
/// models or dimensions are never searched together. Returns whether it
/// was rebuilt.
pub(crate) async fn bind_model(
    tx: &Transaction<'_>,
    model: &str,
    dims: usize,
) -> Result<bool, tokio_postgres::Error> {
    let bound = tx
        .query_opt("SELECT model, dims FROM vector_model", &[])
        .await?
        .map(|r| (r.get::<_, String>(0), r.get::<_, i32>(1)));
    if bound.as_ref().map(|(m, d)| (m.as_str(), *d as usize)) == Some((model, dims)) {
        return Ok(false);
    }
    // `dims` is a number: safe to format into the statement.
    tx.batch_execute(&format!(
        "DROP TABLE IF EXISTS chunk_vectors;
         CREATE TABLE chunk_vectors (
             chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
             source TEXT NOT NULL, embedding vector({dims}) NOT NULL);"
    ))
    .await?;
    tx.execute(
        &format!(
            "INSERT INTO chunk_vectors(chunk_id, source, embedding)
             SELECT c.id, c.source, e.embedding::vector({dims}) FROM chunks c
             JOIN embedding_cache e ON e.model = $1 AND e.hash = c.hash AND e.dims = $2"
        ),
        &[&model, &(dims as i32)],
    )
    .await?;
    // The graph after its vectors: built in one pass, not a vector at a
    // time.
    if dims <= HNSW_MAX_DIMS {
        tx.batch_execute(HNSW_INDEX).await?;
    }
    tx.execute("DELETE FROM vector_model", &[]).await?;
    tx.execute(
        "INSERT INTO vector_model(one, model, dims) VALUES (true, $1, $2)",
        &[&model, &(dims as i32)],
    )
    .await?;
    Ok(true)
}
