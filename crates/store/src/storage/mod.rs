//! The seam under the workspace stores: where session logs and memory
//! documents are kept. [`SessionStore`](crate::SessionStore) and
//! [`MemoryStore`](crate::MemoryStore) hold every rule (the record format,
//! the tool-result budget, MEMORY.md's caps, typed memories, the history);
//! a [`Storage`] only keeps bytes, in one of two shapes:
//!
//! - **documents**, named by workspace-relative `/`-separated paths
//!   (`MEMORY.md`, `memory/…`, `sessions/<key>.tool-results/…`), read with
//!   a [`Version`], replaced whole (compare-and-swap with [`Expect`]) or
//!   appended to, listed and removed;
//! - **session logs**, sequences of whole JSONL lines per session key,
//!   appended under the session's own lock and read back in order;
//! - **state documents** under [`STATE_DIR`] (`.mnemo/engine/…`): what the
//!   engine keeps between turns that no log or memory file holds (its
//!   breaker, a round under way, the merge guard's lines). They are part
//!   of the workspace's truth, so every process and server on it shares
//!   them, but they are never memory: no listing, export or index sees them.
//!
//! [`FileStorage`] is a workspace folder (the default); the PostgreSQL
//! implementation lives in `mnemo-store-postgres`. Both run the suite in
//! `mnemo_test_support::conformance::storage`.

mod copy;
mod files;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::session::{LoadedSession, SessionInfo, SessionOptions};

pub use copy::{copy_workspace, CopyReport, CopyStep};
pub use files::FileStorage;

/// A document's version: it changes whenever the document does. Opaque to
/// callers (a content hash for files, a counter in a database).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version(pub String);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A document read with its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The text (documents are UTF-8; invalid bytes are an error naming the file).
    pub text: String,
    /// Its version, for a compare-and-swap write.
    pub version: Version,
}

/// What a write expects to find in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// Replace whatever is there (the caller holds the memory lock).
    Any,
    /// Create the document; it must not exist.
    Absent,
    /// Replace exactly this version of the document.
    Version(Version),
}

/// One document of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Workspace-relative, `/`-separated.
    pub rel: String,
    /// When it was last written.
    pub modified: DateTime<Utc>,
    /// Its size in bytes.
    pub len: u64,
}

/// A held lock; released when dropped (and by the storage when the holder
/// dies: a file lock by the OS, an advisory lock by the database).
pub struct Held {
    _guard: Box<dyn Send>,
}

impl Held {
    /// Wraps whatever keeps the lock held.
    pub fn new(guard: impl Send + 'static) -> Self {
        Held {
            _guard: Box::new(guard),
        }
    }
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Held")
    }
}

/// Where a workspace's session logs and memory documents are kept.
pub trait Storage: Send + Sync + fmt::Debug {
    /// `files` or `postgres`: for status lines.
    fn kind(&self) -> &'static str;

    /// Where the workspace is, for messages (a folder, or a database and
    /// workspace id; never a password).
    fn location(&self) -> String;

    /// The workspace folder, when the storage is one.
    fn root(&self) -> Option<&Path> {
        None
    }

    // ----- documents -----

    /// The document at `rel`, or `None` when there is none.
    fn read(&self, rel: &str) -> Result<Option<Document>>;

    /// The first `max` bytes of the document at `rel` (less when it is
    /// shorter), or `None` when there is none: a cheap look at a header.
    fn read_head(&self, rel: &str, max: usize) -> Result<Option<Vec<u8>>> {
        Ok(self.read(rel)?.map(|d| {
            let mut b = d.text.into_bytes();
            b.truncate(max);
            b
        }))
    }

    /// Replaces (or creates) the document at `rel` with `text`, atomically:
    /// a reader sees the old text or the new, never a mix. When `expect`
    /// does not hold, nothing is written and the error is
    /// [`Error::Conflict`](crate::Error::Conflict). Returns the new version.
    fn write(&self, rel: &str, text: &str, expect: Expect) -> Result<Version>;

    /// Appends `text` to the document at `rel` (created when missing) in one
    /// durable step: two appenders never interleave inside an append.
    fn append(&self, rel: &str, text: &str) -> Result<()>;

    /// Removes the document at `rel`; false when there was none.
    fn remove(&self, rel: &str) -> Result<bool>;

    /// True when a document exists at `rel`.
    fn exists(&self, rel: &str) -> Result<bool>;

    /// The `.md` documents under the folder `dir` (`memory`), at any depth,
    /// sorted by path.
    fn list(&self, dir: &str) -> Result<Vec<Entry>>;

    /// Every document of the workspace (memory files of any kind, persisted
    /// tool results), sorted by path: what an export copies.
    fn documents(&self) -> Result<Vec<Entry>>;

    /// Takes the workspace's memory lock, waiting for another holder: one
    /// read-modify-write of memory documents at a time, across threads,
    /// processes and (for a database) servers.
    fn lock_memory(&self) -> Result<Held>;

    /// Takes the workspace's lock called `name` (a file name's letters:
    /// one consolidation of a session at a time) unless another holder,
    /// in any process or server, has it: then `None`, at once.
    fn try_lock(&self, name: &str) -> Result<Option<Held>>;

    /// Where the lock called `name` is, for a message naming its holder.
    fn lock_location(&self, name: &str) -> String;

    // ----- session logs -----

    /// Where the log of `key` is, workspace-relative
    /// (`sessions/<file stem>.jsonl`): the name its tool-result folder and
    /// an export use.
    fn session_rel(&self, key: &str) -> Result<String>;

    /// True when the log of `key` holds a record.
    fn session_exists(&self, key: &str) -> Result<bool>;

    /// Opens the log of `key` for appending (created by the first append).
    fn open_session(&self, key: &str, options: &SessionOptions) -> Result<Box<dyn SessionWriter>>;

    /// Reads the log of `key`; `None` when it has no record yet.
    fn load_session(&self, key: &str) -> Result<Option<LoadedSession>>;

    /// Every session, newest first.
    fn list_sessions(&self) -> Result<Vec<SessionInfo>>;

    /// Every session log as a file (`sessions/<stem>.jsonl`), with its
    /// size and time, sorted by path: what the index and an export read.
    fn session_files(&self) -> Result<Vec<Entry>>;

    /// The bytes of the session log `rel` (`sessions/<stem>.jsonl`), as its
    /// file holds them (one record per line), or `None` when there is none.
    fn read_session_file(&self, rel: &str) -> Result<Option<Vec<u8>>>;

    // ----- state documents -----

    /// The state document at `rel` (`.mnemo/engine/<stem>.json`, see
    /// [`STATE_DIR`]), or `None` when there is none. By default it is kept
    /// among the documents, under its path: such a storage leaves
    /// [`STATE_DIR`] out of [`documents`](Self::documents) and
    /// [`revision`](Self::revision) (state is not memory, and its writes
    /// must not send the index to look for changes).
    fn read_state(&self, rel: &str) -> Result<Option<String>> {
        Ok(self.read(state_rel(rel)?)?.map(|d| d.text))
    }

    /// Replaces (or creates) the state document at `rel`, atomically. The
    /// caller holds the lock that orders its writers (the session's, or
    /// the memory lock): the last write wins.
    fn write_state(&self, rel: &str, text: &str) -> Result<()> {
        self.write(state_rel(rel)?, text, Expect::Any)?;
        Ok(())
    }

    /// A text that changes whenever any document or session does; `None`
    /// when the storage has no cheap one (a folder: the index walks and
    /// watches it instead).
    fn revision(&self) -> Result<Option<String>> {
        Ok(None)
    }
}

/// The open log of one session.
pub trait SessionWriter: Send + fmt::Debug {
    /// Where the log is (a file, or its name in a database), for messages.
    fn location(&self) -> &Path;

    /// Appends whole lines (each ending in `\n`) as one unit under the
    /// session's lock; a new log gets its metadata record first, unless
    /// the lines begin with one (a log copied whole). With
    /// `force_sync`, the lines are durable when this returns, whatever the
    /// fsync policy.
    fn append_lines(&mut self, lines: &[u8], force_sync: bool) -> Result<()>;

    /// Makes every append so far durable.
    fn sync(&mut self) -> Result<()>;

    /// Folds the appended metadata records into one at the top; messages
    /// and other records are kept byte for byte.
    fn fold(&mut self) -> Result<()>;

    /// Torn tails set aside before appending, as (offset, bytes).
    fn set_aside(&self) -> &[(u64, usize)] {
        &[]
    }
}

/// Shared handle to a storage.
pub type SharedStorage = Arc<dyn Storage>;

/// The folder of state documents, workspace-relative: the workspace
/// folder's hidden `.mnemo/`, which a folder's state has always been in.
pub const STATE_DIR: &str = ".mnemo";

/// True when `rel` names a state document (it lies under [`STATE_DIR`]).
pub fn is_state_rel(rel: &str) -> bool {
    rel.strip_prefix(STATE_DIR)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// `rel` when it names a state document: under [`STATE_DIR`], every part
/// a plain name (no `..`, no empty part, no NUL).
pub(crate) fn state_rel(rel: &str) -> Result<&str> {
    let plain = |part: &str| {
        !part.is_empty() && part != "." && part != ".." && !part.contains(['\\', '\0'])
    };
    if is_state_rel(rel) && rel.split('/').skip(1).all(plain) {
        Ok(rel)
    } else {
        Err(crate::Error::Invalid(format!(
            "{rel:?} cannot name a state document: use a path under {STATE_DIR}/"
        )))
    }
}
