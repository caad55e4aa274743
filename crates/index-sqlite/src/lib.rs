//! mnemo-index-sqlite: the embedded index backend, the default. One
//! workspace's index lives in SQLite files under its `.mnemo/` folder.
//!
//! This crate owns everything SQLite about the index, so that
//! `mnemo-index` (chunking, the search policy, the sync) holds no database
//! and no `unsafe`:
//! - [`SqliteStore`]: the index's generations as database files, the
//!   pointer naming the live one, and the writers' lock (`store`);
//! - [`SqliteBackend`]: files, chunks, the FTS5 keyword index, vectors and
//!   the embedding cache in one database (`backend`);
//! - the keyword side: FTS5 MATCH expressions and mnemo's own BM25 as an
//!   FTS5 auxiliary function over per-query term statistics (`fts`,
//!   `fts_rank`, through SQLite's C API);
//! - the vector side: every vector in memory, int8 and 4-bit copies, and
//!   the SIMD scans over them ([`vectors`]).
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
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::sync::Arc;

use mnemo_core::{Embedder, Workspace};
use mnemo_index::{BackendKind, IndexError, IndexSettings, MemoryIndex, Result};

mod backend;
mod fts;
mod fts_rank;
mod store;
pub mod vectors;

#[cfg(test)]
mod fuzz_tests;

pub use backend::SqliteBackend;
pub use store::SqliteStore;

/// The FTS5 query builder, for the coverage-guided fuzz target in `fuzz/`
/// (outside the workspace). Only with the `fuzzing` feature: not an API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::fts::fts_query;
}

/// Opens (creating if needed) the SQLite index of `ws` under `.mnemo/`.
/// Nothing is indexed yet (see [`MemoryIndex::with_store`]). Settings that
/// name another backend are refused: this opens the embedded index only
/// (`mnemo::open_index` opens whichever the settings name).
pub fn open(
    ws: &Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<MemoryIndex> {
    // Checked before any file is touched (`with_store` checks again: cheap).
    settings.validate()?;
    if settings.index.backend != BackendKind::Sqlite {
        return Err(IndexError::Config(format!(
            "[index] backend = \"{}\": mnemo_index_sqlite::open opens the embedded SQLite \
             index only; open the index with `mnemo::open_index` (or \
             `MemoryIndex::with_store` and that backend's store)",
            format!("{:?}", settings.index.backend).to_lowercase()
        )));
    }
    let model = embedder.as_ref().map(|e| (e.id(), e.dims()));
    let store = SqliteStore::open(&ws.state_dir(), model, settings.index.vector_scan)?;
    MemoryIndex::with_store(ws, settings, embedder, Arc::new(store))
}
