//! Per-session JSONL logs: append-only, crash-safe, safe under concurrent
//! writers, and readable by nanobot's format.
//!
//! A log is a metadata record followed by one message per line. Appends are
//! O(1): one `write` of whole lines under an advisory lock, never a rewrite.
//! Moving the consolidation cursor appends a new metadata record (the last
//! one wins); an occasional atomic rewrite folds them. After a crash, a torn
//! last line is detected, copied to a sidecar file (`<name>.jsonl.torn`) and
//! cut off before the next append, so everything before it loads.

mod budget;
mod key;
pub(crate) mod log;
mod record;
mod replay;

pub use budget::{cut_at_byte_boundary, persisted_path, spill_name, ToolResultBudget};
pub use key::{disambiguated_stem, file_stem};
pub use log::{
    first_record_line, opens_with_metadata, parse_session_bytes, read_log_lines, read_session_file,
    sort_sessions, FsyncPolicy, LineRead, LoadWarning, LoadedSession, SessionInfo, SessionLog,
    SessionOptions, SessionStore, WarningKind,
};
pub use record::{now_iso, CompactionRecord, Record, SessionMetadata};
pub use replay::{replay, strip};
