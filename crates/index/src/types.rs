//! The request and response records of search, `memory_get`, status and sync,
//! serialised in snake_case as the `memory_search` / `memory_get` tool results.

use serde::{Deserialize, Serialize};

/// Where an indexed chunk comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `MEMORY.md`, `memory/**` and configured extra paths.
    Memory,
    /// Session transcripts under `sessions/`.
    Sessions,
}

impl Source {
    /// Name stored in the index and shown on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Memory => "memory",
            Source::Sessions => "sessions",
        }
    }

    /// The source [`Source::as_str`] names (anything else reads as memory).
    pub fn parse(s: &str) -> Source {
        if s == "sessions" {
            Source::Sessions
        } else {
            Source::Memory
        }
    }
}

/// How a search was answered (and, in a request, how it is asked to be).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Keyword (BM25) and vector similarity fused.
    Hybrid,
    /// Keyword (BM25) only: asked for, or no embedder, or the stored
    /// vectors do not match it.
    Keyword,
    /// Vector similarity only (the keyword side weighs nothing), as
    /// asked for; a search that cannot use vectors answers by keywords.
    Vector,
}

/// A `memory_search` request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    /// Free text; words are OR-ed and ranked by BM25, and embedded as a whole.
    pub query: String,
    /// Maximum hits; `None` takes `[search] max_results` (default 6).
    pub max_results: Option<usize>,
    /// Minimum score; `None` takes `[search] min_score`. A hit is kept when its
    /// fused, vector or keyword score reaches it, so keyword-only hits can pass;
    /// a message hit scoring below the best message of its chunk must reach it
    /// with its own score.
    pub min_score: Option<f32>,
    /// Only these sources; `None` or empty means all.
    pub sources: Option<Vec<Source>>,
    /// The signals to rank by: `Hybrid` (and `None`) fuses them with the
    /// configured `[search]` weights, `Keyword` uses BM25 alone, `Vector`
    /// cosine alone (as `mnemo eval --mode` sets the weights).
    pub mode: Option<SearchMode>,
    /// Other wordings of the need, searched beside the query and blended
    /// with it (a model's hypothetical answer, a rewrite): together they
    /// weigh `[search] expansion_weight`. Dates are read from the query
    /// only.
    pub expansions: Vec<String>,
}

impl SearchRequest {
    /// A request for `query` with the configured defaults.
    pub fn new(query: impl Into<String>) -> Self {
        SearchRequest {
            query: query.into(),
            ..Default::default()
        }
    }

    /// Sets the maximum number of hits.
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = Some(n);
        self
    }

    /// Sets the minimum score.
    pub fn min_score(mut self, s: f32) -> Self {
        self.min_score = Some(s);
        self
    }

    /// Adds other wordings of the need (see [`SearchRequest::expansions`]).
    pub fn expansions(mut self, texts: Vec<String>) -> Self {
        self.expansions = texts;
        self
    }

    /// Restricts the sources searched.
    pub fn sources(mut self, sources: &[Source]) -> Self {
        self.sources = Some(sources.to_vec());
        self
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// Workspace-relative path with `/` separators.
    pub path: String,
    /// First line of the chunk (1-based). For a transcript: the JSONL line of
    /// its first message, or of the message itself for a message hit
    /// (`[search] message_hits`).
    pub start_line: usize,
    /// Last line of the chunk (1-based, inclusive); a message hit's own line.
    pub end_line: usize,
    /// Final score in [0, 1] after fusion, decay and MMR ordering; for a
    /// message hit, its chunk's score lowered by `[search] message_focus`
    /// when other messages of the chunk share more of the query's words.
    pub score: f32,
    /// Cosine similarity, when the chunk was a vector candidate (for a
    /// message hit: its chunk's).
    pub vector_score: Option<f32>,
    /// Normalised BM25 score in [0, 1] (1 = best keyword hit of this query),
    /// when the chunk matched the keywords (for a message hit: its chunk's).
    pub text_score: Option<f32>,
    /// Up to `snippet_chars` characters around the best-matching lines.
    pub snippet: String,
    /// Memory files or session transcripts.
    pub source: Source,
    /// `path#Lx-Ly`.
    pub citation: String,
    /// Session key (from the log's metadata record) for transcript hits.
    pub session_key: Option<String>,
    /// Message ordinals covered by the hit, `(first, last)` inclusive and
    /// 0-based among the log's message lines, for transcript hits (`(i, i)`
    /// for a message hit).
    pub message_range: Option<(usize, usize)>,
    /// The day the hit speaks from (`YYYY-MM-DD`), or its first and last
    /// day as an ISO 8601 interval (`2026-03-01/2026-03-02`): a message's
    /// timestamp (a whole transcript chunk: its messages' days), the date
    /// in the file name for daily logs and session notes; none for undated
    /// files. An agent reads it to answer "when".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// How the score was made, step by step (the index fills it; a hit
    /// made elsewhere has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<ScoreTrace>,
}

/// The steps of a hit's score after its keyword and vector scores: what
/// the inspector and `mnemo search --explain` show.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreTrace {
    /// The keyword and vector scores fused (with the lift of the file's
    /// other matching chunks), before dates, age and exact matches.
    pub fused: f32,
    /// How closely the chunk's days fall in a period the query named
    /// (0..=1; 0 when the query named none or the chunk is from another time).
    pub date: f32,
    /// The age decay the score was multiplied by (1: none, an evergreen file).
    pub decay: f32,
    /// It holds one of the query's identifiers, or the whole query word
    /// for word: ranked above the rest.
    pub exact: bool,
}

impl Default for ScoreTrace {
    fn default() -> Self {
        ScoreTrace {
            fused: 0.0,
            date: 0.0,
            decay: 1.0,
            exact: false,
        }
    }
}

/// A `memory_search` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// Hybrid, or keyword-only (stated so callers know vectors were not used).
    pub mode: SearchMode,
    /// Hits, best first.
    pub results: Vec<SearchHit>,
    /// Anything the caller should know (stale index, embedder failure, …).
    pub warnings: Vec<String>,
    /// The periods the query named, as understood ("2023-06-03", "June of
    /// any year"); chunks from then were lifted. Absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<String>,
    /// The query's focus when it was read as dialogue (speaker-tagged
    /// turns): its latest turn (or two), which weighed `[search]
    /// dialogue_focus` of the ranking. Absent for any other query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

impl SearchResponse {
    /// The files of the hits, each once, in the order of their best hit.
    pub fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for hit in &self.results {
            if !files.contains(&hit.path) {
                files.push(hit.path.clone());
            }
        }
        files
    }
}

/// A `memory_get` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetResponse {
    /// The path as requested (normalised to `/`).
    pub path: String,
    /// The selected lines, joined with `\n`; empty when the file is missing.
    pub text: String,
    /// First line returned (1-based).
    pub from: usize,
    /// Number of lines returned.
    pub lines: usize,
    /// Lines in the whole file (0 when missing).
    pub total_lines: usize,
}

/// State of the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// Indexed files.
    pub files: usize,
    /// Indexed chunks.
    pub chunks: usize,
    /// Chunks that have a vector for the current model.
    pub vectors: usize,
    /// `provider/model` of the vectors, or `None` in keyword-only mode.
    pub model: Option<String>,
    /// Vector dimension, or `None` in keyword-only mode.
    pub dims: Option<usize>,
    /// The mode searches run in.
    pub mode: SearchMode,
    /// What holds the index: `"sqlite"` or `"postgres"`.
    pub backend: String,
    /// Where the live index is (the SQLite file, or a database URL without
    /// its password).
    pub location: String,
    /// True when files changed since the last sync (or the index was built
    /// with other settings and needs a full reindex).
    pub dirty: bool,
    /// True when the stored model or chunking differs from the current one.
    pub needs_full_reindex: bool,
}

/// A progress event of a sync, for progress bars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SyncProgress {
    /// The walk found `total` indexable files.
    Started {
        /// Files to consider.
        total: usize,
        /// True when this is a full rebuild into a new database.
        full: bool,
    },
    /// One file is done (changed or not).
    File {
        /// Files done so far.
        done: usize,
        /// Files to consider.
        total: usize,
        /// The file.
        path: String,
    },
    /// Chunks embedded so far (cache misses sent to the embedder).
    Embedded {
        /// Chunks embedded so far in this sync.
        chunks: usize,
    },
    /// Sync finished.
    Finished,
}

/// One file the sync could not index fully.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIssue {
    /// Workspace-relative path.
    pub path: String,
    /// What happened and what was done about it.
    pub message: String,
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// True when the sync rebuilt the index into a new database and swapped it in.
    pub full_rebuild: bool,
    /// Files found by the walk.
    pub files_scanned: usize,
    /// Files whose chunks were (re)written, sorted.
    pub indexed: Vec<String>,
    /// Files removed from the index (deleted or renamed away), sorted.
    pub removed: Vec<String>,
    /// Files whose mtime changed but whose content did not.
    pub touched: usize,
    /// Chunks written.
    pub chunks_written: usize,
    /// Chunks sent to the embedder (embedding-cache misses).
    pub chunks_embedded: usize,
    /// Chunks whose vector came from the embedding cache.
    pub cache_hits: usize,
    /// Unused vectors deleted from the embedding cache to keep it within
    /// `[index] embedding_cache_max`.
    pub cache_pruned: usize,
    /// Files with problems (lossy UTF-8, unreadable, embedder failure). The
    /// sync went on with the other files.
    pub issues: Vec<FileIssue>,
}
