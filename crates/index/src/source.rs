//! Where the index reads what it indexes when the workspace is not a
//! folder it can walk: a [`SourceTree`] lists the documents (memory files
//! and session logs, by workspace-relative path), reads one, and names a
//! revision that changes whenever any of them does, so that the freshness
//! check before a search costs one question instead of a walk. A folder
//! workspace needs none: the index walks it (`scan`) and watches it.

use crate::types::Source;

/// One document of a [`SourceTree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceDoc {
    /// Workspace-relative, `/`-separated (`MEMORY.md`, `memory/a.md`,
    /// `sessions/cli_demo.jsonl`).
    pub rel: String,
    /// Memory or sessions.
    pub source: Source,
    /// When it last changed, ms since the epoch.
    pub mtime_ms: i64,
    /// Its size in bytes.
    pub size: u64,
}

/// The documents of a workspace kept elsewhere than in a folder (rows of a
/// database). Errors are messages for a person; the index reports them as
/// database errors of [`location`](SourceTree::location).
pub trait SourceTree: Send + Sync {
    /// Where the documents are, for messages.
    fn location(&self) -> String;

    /// Every document the index should hold.
    fn documents(&self) -> Result<Vec<SourceDoc>, String>;

    /// The bytes of the document `rel`, or `None` when it is gone.
    fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, String>;

    /// A text that changes whenever any document changes, appears or goes.
    fn revision(&self) -> Result<String, String>;
}
