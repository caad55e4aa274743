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

use crate::backend::IndexBackend;
use crate::error::Result;

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
