//! The lifecycle seam: where an index lives, which generation of it is
//! live, how a full rebuild replaces it and who may write. [`IndexBackend`]
//! is one generation's data (files, chunks, vectors, keyword postings);
//! an [`IndexStore`] owns the generations: `MemoryIndex` runs over this
//! trait and never names a database file.
//!
//! SQLite's store (`mnemo_index_sqlite::SqliteStore`) keeps each generation in its own
//! file under `.mnemo/`, names the live one in a pointer file replaced by
//! rename, and locks writers with a file lock; a server database would keep
//! generations as schemas or tables and lock with an advisory lock.

use std::sync::Arc;
use std::time::Instant;

use mnemo_core::{Embedder, EmbedderId, Workspace};

use crate::backend::IndexBackend;
use crate::error::{IndexError, Result};
use crate::index::MemoryIndex;
#[cfg(doc)]
use crate::settings::BackendKind;
use crate::settings::IndexSettings;
use crate::source::SourceTree;

/// How long [`IndexStore::lock`] waits for another writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockWait {
    /// Until the other writer is done.
    Forever,
    /// Until this instant, then gives up (`Ok(None)`).
    Until(Instant),
}

/// The writer lock, released when dropped.
pub struct WriterLock {
    _held: Box<dyn Send>,
}

impl WriterLock {
    /// A lock held for as long as `guard` lives.
    pub fn new(guard: impl Send + 'static) -> Self {
        WriterLock {
            _held: Box::new(guard),
        }
    }
}

impl std::fmt::Debug for WriterLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriterLock")
    }
}

/// A generation being built by a full rebuild: searches do not see it
/// until [`Generation::swap_in`]; dropped without it, it is discarded.
pub trait Generation: Send {
    /// Its data, to fill.
    fn backend(&self) -> Arc<dyn IndexBackend>;
    /// Makes it the live generation (its data durable first) and retires
    /// the one it replaces. Searches that still hold the old one finish on
    /// it.
    fn swap_in(self: Box<Self>) -> Result<()>;
}

/// Where an index lives and how its generations are replaced.
pub trait IndexStore: Send + Sync {
    /// What kind of store, for people: `"sqlite"`, `"postgres"`.
    fn kind(&self) -> &'static str;
    /// The version of this store's own schema, recorded in the index's
    /// metadata: an index written under another version is built anew.
    fn schema_version(&self) -> String;
    /// Where the index is, for people: a file path, or a database URL
    /// without its password.
    fn location(&self) -> String;
    /// The live generation, following a swap made by another process.
    fn live(&self) -> Result<Arc<dyn IndexBackend>>;
    /// Takes the writer lock (between processes: the caller serialises its
    /// own threads). `Ok(None)` when another writer still holds it at the
    /// deadline.
    fn lock(&self, wait: LockWait) -> Result<Option<WriterLock>>;
    /// What [`crate::IndexError::Busy`] names when the lock is held.
    fn lock_location(&self) -> String;
    /// A new, empty generation holding the live one's embedding cache (so a
    /// rebuild re-embeds only what changed).
    fn new_generation(&self) -> Result<Box<dyn Generation>>;
    /// Erases what deleted rows leave behind (free pages, logs), after a
    /// forget.
    fn scrub(&self) -> Result<()>;
}

/// An index backend a build can open, registered under the name
/// `[index] backend` gives it ([`BackendKind`]): mnemo-index-sqlite's and
/// mnemo-index-postgres's, or a library user's own. Its store reports its
/// schema version ([`IndexStore::schema_version`]).
pub trait IndexBackendKind: Send + Sync {
    /// The name `[index] backend` gives this backend.
    fn name(&self) -> &'static str;
    /// The store of `ws`'s index for the embedder `model` (its id and
    /// dimensions; `None` when keyword-only), from the `[index]` settings
    /// this backend reads (SQLite: `vector_scan`; PostgreSQL: `url`,
    /// `schema`).
    fn open(
        &self,
        ws: &Workspace,
        settings: &IndexSettings,
        model: Option<(EmbedderId, usize)>,
    ) -> Result<Arc<dyn IndexStore>>;
}

/// Opens `ws`'s index with the backend of `kinds` that `settings` name,
/// over the workspace's files or, with `source`, over documents read from
/// it (see [`MemoryIndex::with_source`]). A name no backend of `kinds`
/// registered is refused with the names that are.
pub fn open_index_with(
    kinds: &[&dyn IndexBackendKind],
    ws: &Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
    source: Option<Arc<dyn SourceTree>>,
) -> Result<MemoryIndex> {
    settings.validate()?;
    let wanted = settings.index.backend.as_str();
    let Some(kind) = kinds.iter().find(|k| k.name() == wanted) else {
        let known: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(IndexError::Config(format!(
            "[index] backend = \"{wanted}\" is no backend of this build, which has: {}",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )));
    };
    let model = embedder.as_ref().map(|e| (e.id(), e.dims()));
    let store = kind.open(ws, &settings, model)?;
    match source {
        Some(source) => MemoryIndex::with_source(ws, settings, embedder, store, source),
        None => MemoryIndex::with_store(ws, settings, embedder, store),
    }
}
