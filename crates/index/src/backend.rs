//! The storage seam: what the indexer and search need from a backend
//! (SQLite in `sqlite`, PostgreSQL + pgvector in the crate
//! mnemo-index-postgres).

use std::collections::HashMap;

use chrono::NaiveDate;

use crate::chunk::MessagePart;
use crate::error::Result;
use crate::types::Source;

/// A file as recorded in the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Workspace-relative path with `/` separators.
    pub path: String,
    /// Memory or sessions.
    pub source: Source,
    /// sha256 of the content, hex.
    pub hash: String,
    /// Modification time in milliseconds since the epoch.
    pub mtime_ms: i64,
    /// Size in bytes.
    pub size: u64,
    /// True when every chunk has a vector for the index's model (false when
    /// the embedder failed: the next sync retries).
    pub embedded: bool,
    /// Session key, for transcripts.
    pub session_key: Option<String>,
}

/// A chunk to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChunk {
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// sha256 of the text, hex: the embedding-cache key.
    pub hash: String,
    /// The text.
    pub text: String,
    /// FTS5 column (pre-tokenised text).
    pub tokens: String,
    /// Message ordinals for transcripts.
    pub messages: Option<(usize, usize)>,
    /// Where each message starts in `text` (transcripts; empty for Markdown).
    pub parts: Vec<MessagePart>,
    /// First and last day the chunk speaks from: its messages' timestamps,
    /// or the date in a daily log's file name.
    pub days: Option<(NaiveDate, NaiveDate)>,
}

/// A stored chunk, as search reads it back.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRecord {
    /// Chunk id.
    pub id: i64,
    /// File path.
    pub path: String,
    /// Memory or sessions.
    pub source: Source,
    /// First line.
    pub start_line: usize,
    /// Last line.
    pub end_line: usize,
    /// Text.
    pub text: String,
    /// Message ordinals for transcripts.
    pub messages: Option<(usize, usize)>,
    /// Where each message starts in `text` (transcripts; empty for Markdown
    /// and for chunks indexed before schema 3).
    pub parts: Vec<MessagePart>,
    /// Session key for transcripts.
    pub session_key: Option<String>,
    /// The file's modification time (ms), for temporal decay.
    pub mtime_ms: i64,
    /// First and last day the chunk speaks from (see [`NewChunk::days`]).
    pub days: Option<(NaiveDate, NaiveDate)>,
}

/// Counts for status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Files.
    pub files: usize,
    /// Chunks.
    pub chunks: usize,
    /// Chunks with a vector for the backend's model.
    pub vectors: usize,
}

/// Storage of one index: files, chunks, keyword index, vectors, embedding
/// cache and metadata. Every write method is one short transaction.
pub trait IndexBackend: Send + Sync {
    /// All metadata.
    fn meta(&self) -> Result<HashMap<String, String>>;
    /// Sets metadata keys.
    fn set_meta(&self, entries: &[(&str, String)]) -> Result<()>;
    /// All indexed files.
    fn files(&self) -> Result<Vec<FileRecord>>;
    /// Replaces a file's chunks (and vectors, aligned with `chunks`, when
    /// given) in one transaction. A backend should keep the stored chunks
    /// a new chunk matches ([`diff_chunks`]) and write only the others:
    /// the result must be the same as writing every chunk afresh.
    fn upsert_file(
        &self,
        file: &FileRecord,
        chunks: &[NewChunk],
        vectors: Option<&[Vec<f32>]>,
    ) -> Result<()>;
    /// Records a new mtime/size for a file whose content did not change.
    fn touch_file(&self, path: &str, mtime_ms: i64, size: u64) -> Result<()>;
    /// Removes a file and its chunks.
    fn delete_file(&self, path: &str) -> Result<()>;
    /// Keyword candidates for query tokens (OR-ed, ranked by BM25):
    /// `(chunk id, -bm25)`, best first (higher is better). In a large index
    /// a backend may score only the chunks that hold the query's rarer
    /// terms (SQLite: see `fts`), never fewer than all of the rarest one's.
    fn keyword_search(
        &self,
        tokens: &[String],
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<(i64, f64)>>;
    /// The keyword candidates of several queries, each as
    /// [`keyword_search`](Self::keyword_search) would give them, in order.
    /// A search asks for its words and its adjacent word pairs together: a
    /// backend across a network answers both from one read of their word
    /// lists.
    fn keyword_searches(
        &self,
        queries: &[&[String]],
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<Vec<(i64, f64)>>> {
        queries
            .iter()
            .map(|q| self.keyword_search(q, limit, sources))
            .collect()
    }
    /// Whether a search may ask for its keyword and vector candidates at
    /// once, from two threads. A backend whose searches run elsewhere (a
    /// database server's processes) answers sooner; one whose vector scan
    /// already uses every core of this machine (SQLite's) answers later.
    fn concurrent_sides(&self) -> bool {
        false
    }
    /// Vector candidates: `(chunk id, cosine)`, best first.
    fn vector_search(&self, query: &[f32], k: usize, sources: &[Source])
        -> Result<Vec<(i64, f32)>>;
    /// Up to `limit` chunks that speak from a day within `first..=last`
    /// (see [`NewChunk::days`]), earliest first. A backend may leave out
    /// chunks whose days begin more than a month before `first`.
    fn chunks_in_days(
        &self,
        first: NaiveDate,
        last: NaiveDate,
        limit: usize,
        sources: &[Source],
    ) -> Result<Vec<i64>>;
    /// The earliest and latest day chunks begin to speak from.
    fn day_range(&self) -> Result<Option<(NaiveDate, NaiveDate)>>;
    /// Deletes embedding-cache rows that no chunk uses, least recently
    /// written first, until at most `keep` rows remain (rows in use always
    /// stay). Returns how many were deleted.
    fn prune_embedding_cache(&self, keep: usize) -> Result<usize>;
    /// Upkeep after a sync that wrote or removed chunks (its embedding
    /// cache pruned): a backend may re-pack what its writes scattered.
    /// Nothing by default.
    fn after_writes(&self) -> Result<()> {
        Ok(())
    }
    /// Chunks by id (any order).
    fn chunks(&self, ids: &[i64]) -> Result<Vec<ChunkRecord>>;
    /// Cached vectors of the backend's model for these chunk hashes.
    fn cached_embeddings(&self, hashes: &[&str]) -> Result<HashMap<String, Vec<f32>>>;
    /// File, chunk and vector counts.
    fn counts(&self) -> Result<Counts>;
    /// A page of the embedding cache of the backend's model, by hash:
    /// up to `limit` rows whose hash sorts after `after` (`""` for the
    /// first page), in hash order. Copying an index to another backend
    /// reads it page by page, so nothing is embedded again.
    fn embedding_cache_page(&self, after: &str, limit: usize) -> Result<Vec<(String, Vec<f32>)>>;
    /// Adds vectors of the backend's model to the embedding cache (a hash
    /// already cached keeps its row; vectors of another dimension are
    /// skipped). Chunk vectors are not touched: the next sync takes them
    /// from the cache.
    fn put_cached_embeddings(&self, rows: &[(String, Vec<f32>)]) -> Result<()>;
}

/// What makes a stored chunk the same as a new one: its source, place,
/// text (by hash), messages, days and parts (encoded, as backends store
/// them). A file written again keeps the stored chunks whose key a new
/// chunk has (see [`diff_chunks`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChunkKey {
    /// Memory or sessions.
    pub source: Source,
    /// First line.
    pub start_line: usize,
    /// Last line.
    pub end_line: usize,
    /// sha256 of the text, hex.
    pub hash: String,
    /// Message ordinals for transcripts.
    pub messages: Option<(usize, usize)>,
    /// First and last day.
    pub days: Option<(NaiveDate, NaiveDate)>,
    /// [`MessagePart::encode`] of the parts; `None` when there are none.
    pub parts: Option<String>,
}

impl ChunkKey {
    /// The key of a new chunk of a file of `source`.
    pub fn of(chunk: &NewChunk, source: Source) -> Self {
        ChunkKey {
            source,
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            hash: chunk.hash.clone(),
            messages: chunk.messages,
            days: chunk.days,
            parts: (!chunk.parts.is_empty()).then(|| MessagePart::encode(&chunk.parts)),
        }
    }
}

/// A file's new chunks against its stored ones (see [`diff_chunks`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChunkDiff {
    /// For each new chunk, whether a stored chunk with its key is kept in
    /// its place (it is then not written again).
    pub kept: Vec<bool>,
    /// The stored chunks no new chunk matches, by id: they go.
    pub gone: Vec<i64>,
}

impl ChunkDiff {
    /// True when at least one stored chunk is kept.
    pub fn keeps_any(&self) -> bool {
        self.kept.iter().any(|k| *k)
    }
}

/// Which stored chunks (`(id, key)`) a file's new chunks (`new`, their keys)
/// keep: each new chunk takes a stored chunk of the same key, if one is
/// left. An appended session log keeps every chunk but its last few; a
/// backend then writes only those, instead of the whole file again.
/// `complete` is whether the file was stored with all its vectors
/// ([`FileRecord::embedded`]): when not, nothing is kept, so every chunk
/// is written with its vector this time.
pub fn diff_chunks(stored: Vec<(i64, ChunkKey)>, new: &[ChunkKey], complete: bool) -> ChunkDiff {
    if !complete {
        return ChunkDiff {
            kept: vec![false; new.len()],
            gone: stored.into_iter().map(|(id, _)| id).collect(),
        };
    }
    let mut by_key: HashMap<ChunkKey, Vec<i64>> = HashMap::new();
    for (id, key) in stored {
        by_key.entry(key).or_default().push(id);
    }
    let kept = new
        .iter()
        .map(|k| by_key.get_mut(k).and_then(Vec::pop).is_some())
        .collect();
    let mut gone: Vec<i64> = by_key.into_values().flatten().collect();
    gone.sort_unstable();
    ChunkDiff { kept, gone }
}

/// The keyword tokens of a chunk's text, as [`NewChunk::tokens`] holds
/// them: a backend that takes a stored chunk out of its own word lists
/// finds the chunk's words here.
pub fn tokens_of(text: &str) -> String {
    crate::text::index_text(text)
}

/// The words of a keyword query worth ranking, with their document counts
/// (`docs`, among `chunks` chunks): a search rule every backend applies to
/// a query of single words before BM25, so that the backends rank alike.
/// Words found in more than half of the chunks are dropped (an IDF of
/// about 0: they change no ranking but cost a pass over long posting
/// lists), always keeping the rarest word found at all; a word no chunk
/// holds must not count as the rare one, or a query whose other words are
/// all common (any query in a tiny index) would find nothing. Phrases are
/// not subject to it.
pub fn informative_terms<T: Copy>(terms: &[(T, i64)], chunks: i64) -> Vec<(T, i64)> {
    let mut with = terms.to_vec();
    if with.len() < 2 {
        return with;
    }
    let present: Vec<(T, i64)> = with.iter().copied().filter(|(_, d)| *d > 0).collect();
    if !present.is_empty() {
        with = present;
    }
    let kept: Vec<(T, i64)> = with
        .iter()
        .copied()
        .filter(|(_, d)| d * 2 <= chunks)
        .collect();
    if kept.is_empty() {
        with.iter()
            .copied()
            .min_by_key(|(_, d)| *d)
            .into_iter()
            .collect()
    } else {
        kept
    }
}

/// Most postings (the summed document counts of a query's terms) a
/// keyword search scores exactly; past it, [`keyword_plan`] bounds the
/// search.
pub const KEYWORD_BUDGET: i64 = 5_000;

/// How a backend runs a keyword query (see [`keyword_plan`]).
#[derive(Debug, PartialEq, Eq)]
pub enum KeywordPlan<T> {
    /// Every chunk holding any of these terms, ranked by their BM25 (exact).
    All(Vec<T>),
    /// Only the chunks holding any of `rare`, each scored with the BM25 of
    /// `rare` and `common` together.
    Bounded {
        /// The terms whose chunks are scored.
        rare: Vec<T>,
        /// The terms that only add to those chunks' scores.
        common: Vec<T>,
    },
}

/// The plan for a keyword query of `terms` with their document counts (a
/// phrase counts as its rarer word) among `chunks` chunks: a search rule
/// every backend applies, so that their cost is bounded alike as the index
/// grows and they rank alike.
///
/// A query of single words first loses its common words
/// ([`informative_terms`]). When the remaining terms' document counts add
/// up to more than [`KEYWORD_BUDGET`], only the chunks holding the rarest
/// terms (the most that fit the budget, at least one) are scored: chunks
/// holding only the common terms score below them in nearly every query
/// (0.98 of the exact top 10 on the generated 100,000-chunk corpus of
/// docs/BENCHMARKS.md), and everything a rare word or an identifier names
/// is still found. `phrases` says the terms are a query's adjacent pairs:
/// a phrase's BM25 only adds to chunks its words already found, so past
/// the budget the common pairs are simply left out, every one of them when
/// even the rarest is over the budget alone (at a million chunks of
/// dialogue, "John took" read 147,000 chunks' positions for a bonus to
/// chunks the words find anyway, docs/BENCHMARKS-LOG.md item 68).
pub fn keyword_plan<T: Copy>(terms: &[(T, i64)], chunks: i64, phrases: bool) -> KeywordPlan<T> {
    let with = if phrases {
        terms.to_vec()
    } else {
        informative_terms(terms, chunks)
    };
    let all = || KeywordPlan::All(with.iter().map(|(t, _)| *t).collect());
    let total: i64 = with.iter().map(|(_, d)| d).sum();
    if total <= KEYWORD_BUDGET || (with.len() < 2 && !phrases) {
        return all();
    }
    // The rarest terms that fit the budget, in the query's order within
    // each side so that equal scores keep their order.
    let mut by_rarity: Vec<usize> = (0..with.len()).collect();
    by_rarity.sort_by_key(|&i| (with[i].1, i));
    let mut rare_set = vec![false; with.len()];
    let mut spent = 0;
    for (n, &i) in by_rarity.iter().enumerate() {
        // A query of words keeps at least its rarest: it is what is found.
        if (n > 0 || phrases) && spent + with[i].1 > KEYWORD_BUDGET {
            break;
        }
        spent += with[i].1;
        rare_set[i] = true;
    }
    let pick = |rare: bool| -> Vec<T> {
        with.iter()
            .zip(&rare_set)
            .filter(|(_, r)| **r == rare)
            .map(|((t, _), _)| *t)
            .collect()
    };
    let (rare, common) = (pick(true), pick(false));
    if phrases {
        return KeywordPlan::All(rare);
    }
    if rare.is_empty() || common.is_empty() {
        return all();
    }
    KeywordPlan::Bounded { rare, common }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(start: usize, hash: &str) -> ChunkKey {
        ChunkKey {
            source: Source::Sessions,
            start_line: start,
            end_line: start + 1,
            hash: hash.into(),
            messages: Some((start, start + 1)),
            days: None,
            parts: None,
        }
    }

    #[test]
    fn an_appended_log_keeps_all_but_its_grown_last_chunk() {
        let stored = vec![(10, key(1, "a")), (11, key(3, "b")), (12, key(5, "c"))];
        let new = [key(1, "a"), key(3, "b"), key(5, "c2"), key(7, "d")];
        let d = diff_chunks(stored.clone(), &new, true);
        assert_eq!(d.kept, [true, true, false, false]);
        assert_eq!(d.gone, [12]);
        assert!(d.keeps_any());
        // Stored without all its vectors: written whole.
        let d = diff_chunks(stored, &new, false);
        assert_eq!(d.kept, [false; 4]);
        assert_eq!(d.gone, [10, 11, 12]);
    }

    #[test]
    fn the_same_text_elsewhere_is_another_chunk_and_repeats_are_matched_once() {
        // A chunk moved down a line is written again: its place changed.
        let stored = vec![(1, key(1, "a")), (2, key(1, "a"))];
        let d = diff_chunks(stored, &[key(2, "a"), key(1, "a")], true);
        assert_eq!(d.kept, [false, true]);
        assert_eq!(d.gone.len(), 1);
        let d = diff_chunks(Vec::new(), &[key(1, "a")], true);
        assert!(!d.keeps_any());
        assert!(d.gone.is_empty());
    }
}
