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

use mnemo_core::{Embedder, EmbedderId, Workspace};
use mnemo_index::{IndexBackendKind, IndexSettings, IndexStore, MemoryIndex, Result};

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

/// The SQLite backend as a build registers it (`[index] backend =
/// "sqlite"`, the default): its store under the workspace's `.mnemo/`,
/// scanning vectors as `[index] vector_scan` says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sqlite;

impl IndexBackendKind for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn open(
        &self,
        ws: &Workspace,
        settings: &IndexSettings,
        model: Option<(EmbedderId, usize)>,
    ) -> Result<Arc<dyn IndexStore>> {
        let store = SqliteStore::open(&ws.state_dir(), model, settings.index.vector_scan)?;
        Ok(Arc::new(store))
    }
}

/// Opens (creating if needed) the SQLite index of `ws` under `.mnemo/`.
/// Nothing is indexed yet (see [`MemoryIndex::with_store`]). Settings that
/// name another backend are refused: this knows the embedded index only
/// (`mnemo::open_index` opens whichever backend the settings name).
pub fn open(
    ws: &Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<MemoryIndex> {
    mnemo_index::open_index_with(&[&Sqlite], ws, settings, embedder, None)
}
