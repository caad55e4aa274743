//! mnemo-index: chunking, the sync and the hybrid search policy behind
//! `memory_search` and `memory_get`, over an [`IndexStore`]. The stores
//! are backend crates: SQLite's (the default) in mnemo-index-sqlite,
//! PostgreSQL's in mnemo-index-postgres; this crate holds no database.
//!
//! What is indexed: `MEMORY.md`, `memory/**/*.md`, the `[index] extra_paths`
//! (relative to the workspace and inside it; absolute paths are refused so
//! that `memory_get` can never be pointed outside), and session transcripts
//! `sessions/*.jsonl` rendered as `User: …` / `Assistant: …` lines. The
//! index lives in `.mnemo/` and is derived data: it can always be rebuilt.
//!
//! ```no_run
//! use mnemo_core::Workspace;
//! use mnemo_index::{IndexSettings, SearchRequest};
//!
//! let ws = Workspace::new("my-workspace");
//! let index = mnemo_index_sqlite::open(&ws, IndexSettings::default(), None)?;
//! index.sync(&|_| {})?;
//! let found = index.search(&SearchRequest::new("ERR-4711"))?;
//! for hit in found.results {
//!     println!("{} {:.2} {}", hit.citation, hit.score, hit.snippet);
//! }
//! # Ok::<(), mnemo_index::IndexError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod backend;
pub mod chunk;
mod dialogue;
mod error;
mod fresh;
mod index;
// Shared with the raw consolidation archive: one set of rules.
use mnemo_core::redact;
mod scan;
mod search;
mod settings;
pub mod source;
pub mod store;
mod text;
mod transcript;
mod types;
mod when;

#[cfg(test)]
mod fuzz_tests;

/// The crate's private text readers, for the coverage-guided fuzz targets
/// in `fuzz/` (outside the workspace), which drive the same functions the
/// `fuzz_*` tests do. Only with the `fuzzing` feature: not an API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::text::{identifiers, index_text, query_phrases, query_tokens, snippet};
    pub use crate::transcript::{parse as parse_transcript, Transcript};
    pub use crate::when::{affinity, date_in_path, dates, Dates, Period};

    use crate::chunk::{self, ChunkLimits, MessagePart};

    /// The chunker's checks on `doc` (chunk size from `data`'s first
    /// byte), for the `fuzz_markdown_chunker` test and the fuzz target
    /// alike: chunks cover the file's lines in order, within its line
    /// count; block parts lie inside the chunk's text on character
    /// boundaries and survive their encoding. Returns the chunk count.
    pub fn check_markdown_chunker(doc: &str, data: &[u8]) -> usize {
        let max_tokens = 8 + usize::from(data.first().copied().unwrap_or(0) % 120);
        let count = |s: &str| chunk::estimate_tokens(s);
        let limits = ChunkLimits {
            max_tokens,
            overlap_tokens: max_tokens / 4,
            count: &count,
        };
        let chunks = chunk::chunk_markdown(doc, &limits);
        let lines = doc.lines().count().max(1);
        for c in &chunks {
            assert!(
                1 <= c.start_line && c.start_line <= c.end_line && c.end_line <= lines,
                "chunk {}..{} of {lines} lines",
                c.start_line,
                c.end_line
            );
            let parts = chunk::markdown_parts(&c.text, c.start_line);
            for i in 0..parts.len() {
                let _ = MessagePart::text_of(&parts, i, &c.text);
            }
            for p in &parts {
                assert!(p.offset <= c.text.len() && c.text.is_char_boundary(p.offset));
            }
            assert_eq!(MessagePart::decode(&MessagePart::encode(&parts)), parts);
        }
        let _ = chunk::front_matter(doc);
        chunks.len()
    }

    /// The key the transcript reader's seeds hold.
    const KEY: &str = "sk-proj-Wm4nQx7Tz1Vb9Lc3Rd8Ke2Jf6Hs0Gp5Y";

    /// The seed's key is gone from `text` wherever it stands as a word of
    /// its own: glued to ASCII letters or digits ("Tsk-proj-…") it is
    /// another word, which no rule can tell from an identifier.
    fn assert_no_key(text: &str) {
        for (at, _) in text.match_indices(KEY) {
            let before = text.get(..at).and_then(|b| b.bytes().last());
            assert!(
                before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_'),
                "a key survived redaction at byte {at}: {text:?}"
            );
        }
    }

    /// The session reader's checks on `doc` (tool calls included when
    /// `data`'s first byte is odd), for the `fuzz_transcript_reader` test
    /// and the fuzz target alike: messages with sane lines and days,
    /// chunks whose parts read, and no secret left that a rule recognises.
    pub fn check_transcript_reader(doc: &str, data: &[u8]) -> Transcript {
        let include_tools = data.first().is_some_and(|b| b & 1 == 1);
        let t = parse_transcript(doc, include_tools, true);
        let lines = doc.lines().count();
        for m in &t.messages {
            assert!(m.line >= 1 && m.line <= lines.max(1), "{m:?}");
            assert_no_key(&m.text);
        }
        if !t.messages.is_empty() {
            let _ = t.days_between(0, t.messages.len() + 3);
            let count = |s: &str| chunk::estimate_tokens(s);
            let limits = ChunkLimits {
                max_tokens: 32,
                overlap_tokens: 8,
                count: &count,
            };
            for c in chunk::chunk_transcript(&t.messages, &limits) {
                for i in 0..c.parts.len() {
                    let _ = MessagePart::text_of(&c.parts, i, &c.text);
                }
            }
        }
        assert_no_key(&crate::redact::redact(doc));
        t
    }
}

pub use backend::IndexBackend;
pub use dialogue::need_of;
pub use error::{DbFailure, IndexError, Result};
pub use index::{MemoryIndex, WatchHandle};
pub use settings::{
    valid_schema_name, BackendKind, DatabaseUrl, Fusion, IndexOptions, IndexSettings,
    SearchOptions, VectorScale, VectorScan,
};
pub use source::{SourceDoc, SourceTree};
pub use store::{open_index_with, Generation, IndexBackendKind, IndexStore, LockWait, WriterLock};
pub use text::is_cjk;
pub use types::{
    FileIssue, GetResponse, IndexStatus, ScoreTrace, SearchHit, SearchMode, SearchRequest,
    SearchResponse, Source, SyncProgress, SyncReport,
};
