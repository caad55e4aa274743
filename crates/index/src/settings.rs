//! `IndexSettings`: the `[index]` and `[search]` sections of `mnemo.toml`.

use std::borrow::Cow;

use mnemo_core::Config;
use serde::{Deserialize, Serialize};

use crate::error::{IndexError, Result};

/// Which scan answers vector search (`[index] vector_scan`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorScan {
    /// int8 scan of every row, exact f32 re-rank of a candidate pool.
    /// recall@10 against `Exact` measured at 1.0 (random and real vectors).
    #[default]
    Int8,
    /// f32 dot product with every row (slower, for comparison).
    Exact,
    /// As `Int8`, but a set that keeps codes only skips its 4-bit first
    /// pass and scores every row in int8 (for comparison).
    FullInt8,
}

/// All settings of the index and of search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexSettings {
    /// `[index]`: what is indexed and how it is chunked.
    pub index: IndexOptions,
    /// `[search]`: how results are scored and cut.
    pub search: SearchOptions,
}

impl IndexSettings {
    /// Reads `[index]` and `[search]` from the configuration (defaults for
    /// anything missing) and validates them.
    pub fn from_config(config: &Config) -> Result<Self> {
        let mut s = IndexSettings {
            index: config.section("index")?,
            search: config.section("search")?,
        };
        if s.index.backend == BackendKind::POSTGRES && s.index.url.is_none() {
            s.index.url = std::env::var("DATABASE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .map(DatabaseUrl);
        }
        s.validate()?;
        Ok(s)
    }

    /// Checks ranges; the message names the setting to fix.
    pub fn validate(&self) -> Result<()> {
        let i = &self.index;
        if i.chunk_tokens < 16 {
            return Err(IndexError::Config(format!(
                "[index] chunk_tokens = {} is too small: use at least 16",
                i.chunk_tokens
            )));
        }
        if i.chunk_overlap * 2 > i.chunk_tokens {
            return Err(IndexError::Config(format!(
                "[index] chunk_overlap = {} must be at most half of chunk_tokens = {}",
                i.chunk_overlap, i.chunk_tokens
            )));
        }
        for p in &i.extra_paths {
            let path = std::path::Path::new(p);
            if path.is_absolute() || p.split(['/', '\\']).any(|c| c == "..") {
                return Err(IndexError::Config(format!(
                    "[index] extra_paths entry `{p}` must be relative to the workspace and stay inside it \
                     (move or link the folder into the workspace)"
                )));
            }
        }
        if i.backend == BackendKind::POSTGRES {
            if i.url.is_none() {
                return Err(IndexError::Config(
                    "[index] backend = \"postgres\" needs the database: set [index] url \
                     (or MNEMO_INDEX__URL, or DATABASE_URL) to postgres://user:password@host:5432/database"
                        .into(),
                ));
            }
            if !valid_schema_name(&i.schema) {
                return Err(IndexError::Config(format!(
                    "[index] schema = \"{}\" is not a usable PostgreSQL schema name: use 1 to 40 \
                     lower-case letters, digits and _, starting with a letter, not ending in _ \
                     and digits (those name the index's generations)",
                    i.schema
                )));
            }
        }
        let s = &self.search;
        if !(s.vector_weight >= 0.0
            && s.text_weight >= 0.0
            && s.vector_weight + s.text_weight > 0.0)
        {
            return Err(IndexError::Config(
                "[search] vector_weight and text_weight must be >= 0 and not both 0".into(),
            ));
        }
        if !(0.0..=1.0).contains(&s.message_focus) {
            return Err(IndexError::Config(
                "[search] message_focus must be within 0..=1 (0 gives every message its chunk's score)"
                    .into(),
            ));
        }
        if !(0.0..=1.0).contains(&s.mmr_lambda) {
            return Err(IndexError::Config(
                "[search] mmr_lambda must be within 0..=1".into(),
            ));
        }
        if !(0.0..=1.0).contains(&s.answer_lift) {
            return Err(IndexError::Config(
                "[search] answer_lift must be within 0..=1 (0 turns it off)".into(),
            ));
        }
        if !(0.0..=1.0).contains(&s.dialogue_focus) {
            return Err(IndexError::Config(
                "[search] dialogue_focus must be within 0..=1 (0 reads dialogue as one text)"
                    .into(),
            ));
        }
        if !(0.0..1.0).contains(&s.expansion_weight) {
            return Err(IndexError::Config(
                "[search] expansion_weight must be within 0..1 (0 ignores expansions; the query itself must weigh something)"
                    .into(),
            ));
        }
        if !(0.0..=4.0).contains(&s.file_context) {
            return Err(IndexError::Config(
                "[search] file_context must be within 0..=4 (0 turns it off)".into(),
            ));
        }
        if !(0.0..=4.0).contains(&s.date_boost) {
            return Err(IndexError::Config(
                "[search] date_boost must be within 0..=4 (0 turns it off)".into(),
            ));
        }
        if s.half_life_days <= 0.0 {
            return Err(IndexError::Config(
                "[search] half_life_days must be > 0".into(),
            ));
        }
        if s.candidate_multiplier == 0 {
            return Err(IndexError::Config(
                "[search] candidate_multiplier must be >= 1".into(),
            ));
        }
        Ok(())
    }
}

/// `[index]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexOptions {
    /// Target chunk size in embedding-model tokens. It is further capped by the
    /// embedder's `max_input_tokens` so the model never truncates a chunk.
    pub chunk_tokens: usize,
    /// Tokens of trailing lines repeated at the start of the next chunk.
    pub chunk_overlap: usize,
    /// Index session transcripts under `sessions/`.
    pub sessions: bool,
    /// Include tool results in transcripts (they are long and noisy).
    pub session_tool_results: bool,
    /// Replace secrets (API keys, tokens, private keys, passwords in URLs
    /// and assignments) in the index's copy of session transcripts; the
    /// session logs keep every word.
    pub redact_transcripts: bool,
    /// More Markdown files or folders to index, relative to the workspace
    /// and inside it (absolute paths and `..` are refused: link the folder
    /// into the workspace instead). They are also readable by `memory_get`.
    pub extra_paths: Vec<String>,
    /// Debounce of `watch()` in milliseconds.
    pub watch_debounce_ms: u64,
    /// Every file is compared with the index at least this often: by the
    /// first search after this many seconds since the last full comparison
    /// (one-shot commands such as `mnemo search`), or in the background
    /// (`serve`, `mcp`, `chat`, `index --watch`). Between two, a search
    /// checks folder times, the change journal and MEMORY.md, whose cost
    /// does not grow with the number of files; a file edited in place by
    /// another program is then seen by processes that watch the workspace
    /// at once and by one-shot commands at the next full comparison.
    /// 0: every search compares every file.
    pub reconcile_secs: u64,
    /// How vector search scans the vectors: `"int8"` (default: int8 pass
    /// over every vector, exact f32 re-rank of the best candidates, same
    /// top-10 as `"exact"` in the tests and benchmarks at about a third of
    /// the time) or `"exact"` (f32 dot product with every vector).
    pub vector_scan: VectorScan,
    /// Most rows the embedding cache keeps. Vectors that no chunk uses any
    /// more (an edited paragraph, a transcript's old tail, another model's)
    /// are deleted beyond this many, oldest first, by the sync that finds
    /// 1,024 rows (or a tenth of this bound) added since the process last
    /// pruned; vectors in use always stay. About 1.6 KB per 384-dimension row.
    pub embedding_cache_max: usize,
    /// Where the index lives: `"sqlite"` (default: `.mnemo/` in the
    /// workspace) or `"postgres"` (the database at `url`).
    pub backend: BackendKind,
    /// The PostgreSQL database of `backend = "postgres"`:
    /// `postgres://user:password@host:5432/database`; also
    /// `MNEMO_INDEX__URL`, or `DATABASE_URL` when unset.
    pub url: Option<DatabaseUrl>,
    /// The PostgreSQL schema whose name the index's tables live under
    /// (`backend = "postgres"`): one per workspace when several share a
    /// database. Each full rebuild makes a schema `<schema>_<n>`, swapped
    /// in when complete.
    pub schema: String,
}

/// A schema name a database index store accepts as the base of its
/// generations' names (`<name>_<n>`): mnemo's one schema rule
/// ([`mnemo_core::schema::valid_schema_name`]), narrowed to leave room for
/// the suffix within PostgreSQL's 63 bytes and so that no base looks like
/// another's generation.
pub fn valid_schema_name(name: &str) -> bool {
    let ends_like_generation = name
        .rsplit_once('_')
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    mnemo_core::schema::valid_schema_name(name)
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !ends_like_generation
}

/// A database URL, which may hold a password: shown without it in debug
/// output (logs, panics), kept whole everywhere else.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(pub String);

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `scheme://user:password@host...`: the part between the first `:`
        // after `//` and the last `@` of the authority is the password.
        let u = &self.0;
        let shown = match u.split_once("://") {
            Some((scheme, rest)) => {
                let authority_end = rest.find('/').unwrap_or(rest.len());
                let (authority, path) = rest.split_at(authority_end);
                match authority
                    .rsplit_once('@')
                    .and_then(|(creds, host)| Some((creds.split_once(':')?.0, host)))
                {
                    Some((user, host)) => format!("{scheme}://{user}:***@{host}{path}"),
                    None => u.clone(),
                }
            }
            None => "***".to_string(),
        };
        write!(f, "{shown:?}")
    }
}

/// Which store holds the index (`[index] backend`): the name a backend
/// registers under ([`crate::IndexBackendKind::name`]). mnemo ships
/// [`BackendKind::SQLITE`] and [`BackendKind::POSTGRES`]; a library user
/// may register a backend of their own under another name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BackendKind(pub Cow<'static, str>);

impl BackendKind {
    /// One SQLite file per index generation in `.mnemo/` (the default).
    pub const SQLITE: BackendKind = BackendKind(Cow::Borrowed("sqlite"));
    /// A PostgreSQL database with pgvector.
    pub const POSTGRES: BackendKind = BackendKind(Cow::Borrowed("postgres"));

    /// The name, as `[index] backend` gives it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for BackendKind {
    fn default() -> Self {
        BackendKind::SQLITE
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            // Measured on LoCoMo (2 conversations, hybrid): 128/16 beat
            // 64/8, 200/32 and 256/32 on session any@5/all@10 and turn MRR
            // (docs/BENCHMARKS.md).
            chunk_tokens: 128,
            chunk_overlap: 16,
            sessions: true,
            session_tool_results: false,
            redact_transcripts: true,
            extra_paths: Vec::new(),
            watch_debounce_ms: 1500,
            reconcile_secs: 60,
            vector_scan: VectorScan::Int8,
            // OpenClaw's cap: room for edits and reverts without growing
            // forever (about 80 MB of 384-d rows at the cap).
            embedding_cache_max: 50_000,
            backend: BackendKind::SQLITE,
            url: None,
            schema: "mnemo".into(),
        }
    }
}

/// How keyword and vector scores are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// `vector_weight * cosine + text_weight * normalised BM25` (weights
    /// normalised to sum to 1).
    Weighted,
    /// Reciprocal rank fusion: `sum(w / (k + rank))`, scaled so the best
    /// possible score is 1.
    Rrf,
}

/// How cosine similarity enters the weighted sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorScale {
    /// Similarity above the query's background: `(cos - floor) / (1 - floor)`,
    /// where `floor` is the cosine of the query's 50th best chunk. Models
    /// whose cosines crowd into a narrow band (e5: unrelated texts at 0.8)
    /// then weigh as much as models that spread them (MiniLM).
    Floor,
    /// The raw cosine.
    Raw,
}

/// `[search]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchOptions {
    /// Hits returned when the request does not say.
    pub max_results: usize,
    /// Minimum score when the request does not say. A hit passes when its
    /// fused score, its vector similarity (on `vector_scale`) or its keyword
    /// score reaches it. 0.2: on LoCoMo with 6 results it trims the tail of
    /// 4% of the questions and keeps 99.6% of the evidence found without it
    /// (0.3 trimmed 18% and lost 4.5%; docs/BENCHMARKS.md).
    pub min_score: f32,
    /// Weight of vector similarity (0 = keyword only).
    pub vector_weight: f32,
    /// Weight of BM25 (0 = vector only).
    pub text_weight: f32,
    /// Weighted sum or reciprocal rank fusion.
    pub fusion: Fusion,
    /// How cosine similarity enters the weighted sum.
    pub vector_scale: VectorScale,
    /// The `k` of reciprocal rank fusion.
    pub rrf_k: f32,
    /// Candidates taken from each side: `max_results * candidate_multiplier`
    /// (at least 50, at most 1000).
    pub candidate_multiplier: usize,
    /// Snippet length in characters.
    pub snippet_chars: usize,
    /// Re-rank with maximal marginal relevance (diversity).
    pub mmr: bool,
    /// MMR trade-off: 1 = relevance only.
    pub mmr_lambda: f32,
    /// Lower scores of older dated files.
    pub temporal_decay: bool,
    /// Half-life of the decay in days.
    pub half_life_days: f32,
    /// Sync before a search when files changed (found by the check of
    /// `[index] reconcile_secs`, whose cost does not grow with the number
    /// of files between two full comparisons).
    pub sync_on_search: bool,
    /// Document context: how much the best other hit of the same file (a
    /// session, a daily log) lifts a chunk, 0 = off. Scores stay in 0..=1.
    pub file_context: f32,
    /// Dates in the query ("on 3 June", "in May 2023", "2026-01-31",
    /// "5月2日", "yesterday"): a chunk from that time (its messages'
    /// timestamps, a daily log's file name) has its score multiplied by up
    /// to `1 + date_boost`, less the further it lies outside, 0 = off.
    pub date_boost: f32,
    /// Word order: query words that stand side by side in a chunk too ("ice
    /// cream", "support group") add this much of their phrase BM25 to the
    /// chunk's keyword score, 0 = off.
    pub phrase_weight: f32,
    /// Transcript hits are single messages: each transcript chunk found is
    /// split into its messages, and every message is a hit with its own line
    /// and snippet. Off: hits are whole chunks. (Markdown: `block_hits`.)
    pub message_hits: bool,
    /// Markdown hits are single blocks: a list item with the lines under
    /// it, a paragraph, a heading with the block after it, a fenced code
    /// block; split and scored within their chunk like messages
    /// (`message_focus`). Off: hits are whole chunks.
    pub block_hits: bool,
    /// How far a message that shares fewer of the query's words than the
    /// best message of its chunk falls below the chunk's score: a message
    /// scores `chunk * (1 - message_focus + message_focus * share / best)`,
    /// where `share` is the fraction of the query's words it contains. So
    /// the best message of a chunk keeps the chunk's score, and a chunk
    /// without any query word keeps it for all its messages. A lesser
    /// message must reach `min_score` with its own score. 0..=1.
    pub message_focus: f32,
    /// A message that replies to a question (the message before it ends
    /// with "?") counts `answer_lift` times the question's share of the
    /// query's words when that is more than its own: "What do you all
    /// enjoy doing together?" is what matches, "Hikes, picnics, board
    /// games" is the answer. 0 = off, 0..=1.
    pub answer_lift: f32,
    /// A query whose lines are speaker-tagged turns (`Alice: …`) is read as
    /// dialogue: searched once for its latest turn (the focus) and once for
    /// all its turns, newest first (the context), and the two rankings are
    /// blended, the focus weighing `dialogue_focus`. 0 searches the whole
    /// text as one query, as any other. 0..=1.
    pub dialogue_focus: f32,
    /// How much a request's expansions (a model's hypothetical answer, a
    /// rewrite) weigh together against the query itself, 0..1.
    pub expansion_weight: f32,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            max_results: 6,
            min_score: 0.2,
            vector_weight: 0.7,
            text_weight: 0.3,
            fusion: Fusion::Weighted,
            vector_scale: VectorScale::Floor,
            rrf_k: 60.0,
            candidate_multiplier: 4,
            snippet_chars: 700,
            mmr: false,
            mmr_lambda: 0.7,
            temporal_decay: false,
            half_life_days: 30.0,
            sync_on_search: true,
            file_context: 0.25,
            date_boost: 1.0,
            // LoCoMo, e5 and MiniLM hybrid, keyword-only: small gains on
            // every metric at 0.5, MemoryBank unchanged (docs/BENCHMARKS.md).
            phrase_weight: 0.5,
            // LoCoMo turn recall@10 0.766 -> 0.796 and turn MRR 0.448 ->
            // 0.563 with session metrics unchanged; 0.3 and 0.7 measured
            // within 0.005 of 0.5 (docs/BENCHMARKS.md).
            message_hits: true,
            // LoCoMo written as Markdown notes: turn recall@10 0.768 ->
            // 0.792, any@1 0.260 -> 0.425, session metrics up to @10
            // unchanged (docs/BENCHMARKS.md).
            block_hits: true,
            message_focus: 0.5,
            // LoCoMo turn recall@10 0.795 -> 0.799, MemoryBank en and zh
            // turn MRR +0.012 and +0.025 (docs/BENCHMARKS.md).
            answer_lift: 1.0,
            dialogue_focus: 0.5,
            // LoCoMo (300 questions) session all@10 +0.010 at 0.2, any@5
            // -0.007 at 0.3 and -0.010 at 0.45; turn MRR +0.03 at each;
            // MemoryBank within noise (docs/BENCHMARKS-LOG.md, item 64).
            expansion_weight: 0.2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_settings_name_the_setting() {
        assert!(IndexSettings::default().validate().is_ok());
        let mut s = IndexSettings::default();
        s.search.message_focus = 1.5;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("message_focus"), "{e}");
        s.search.message_focus = 0.0;
        s.search.answer_lift = -0.5;
        let e = s.validate().unwrap_err().to_string();
        assert!(e.contains("answer_lift"), "{e}");
        s.search.answer_lift = 0.0;
        s.search.message_hits = false;
        assert!(s.validate().is_ok());
        s.search.mmr_lambda = -0.1;
        assert!(s.validate().unwrap_err().to_string().contains("mmr_lambda"));
    }

    #[test]
    fn a_postgres_backend_needs_a_url_and_a_usable_schema() {
        let mut s = IndexSettings::default();
        s.index.backend = BackendKind::POSTGRES;
        let e = s.validate().unwrap_err().to_string();
        assert!(
            e.contains("[index] url") && e.contains("DATABASE_URL"),
            "{e}"
        );
        s.index.url = Some(DatabaseUrl("postgres://u:p@127.0.0.1/db".into()));
        let shown = format!("{:?}", s.index);
        assert!(shown.contains("postgres://u:***@127.0.0.1/db"), "{shown}");
        assert!(s.validate().is_ok());
        for bad in ["", "Mnemo", "1ws", "pg_x", "ws_12", "a-b", &"x".repeat(41)] {
            s.index.schema = bad.to_string();
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains("[index] schema"), "{bad}: {e}");
        }
        for good in ["mnemo", "ws_alice", "team2"] {
            s.index.schema = good.to_string();
            assert!(s.validate().is_ok(), "{good}");
        }
        let c = Config::parse(
            "[index]\nbackend = \"postgres\"\nurl = \"postgres://h/db\"\nschema = \"w1\"",
        )
        .unwrap();
        let s = IndexSettings::from_config(&c).unwrap();
        assert_eq!(s.index.schema, "w1");
    }
}
