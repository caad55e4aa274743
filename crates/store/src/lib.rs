//! The truth of a mnemo workspace, everything else is derived from:
//! per-session JSONL logs ([`session`]) and the Markdown long-term memory
//! ([`memory`]), kept by a [`Storage`] ([`storage`]): the workspace folder,
//! written with atomic replaces and single-write appends ([`fsutil`]), or
//! rows in a database.
#![cfg_attr(not(test), forbid(unsafe_code))]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]
// Everything here reads text a user or a model wrote: no byte-offset
// slicing or indexing that could land inside a character or past the end.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

pub mod error;
pub mod failpoint;
pub mod fsutil;
pub mod memory;
pub mod session;
pub mod storage;

#[cfg(test)]
mod fuzz_tests;

pub use error::{Error, Result};
pub use memory::{
    AppendOutcome, DailyLog, FrontMatter, MemoryFileHeader, MemoryLock, MemorySettings,
    MemoryStore, MemoryType, RenderedMemory, SaveAction, SaveMode, SavedMemory, SectionWrite,
    TypedMemory,
};
pub use session::{
    CompactionRecord, FsyncPolicy, LoadWarning, LoadedSession, Record, SessionInfo, SessionLog,
    SessionMetadata, SessionOptions, SessionStore,
};
pub use storage::{
    is_state_rel, Document, Entry, Expect, FileStorage, Held, SessionWriter, SharedStorage,
    Storage, Version, STATE_DIR,
};
