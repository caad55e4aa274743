//! OpenClaw's agent database, where 2026.9 keeps transcripts:
//! `agents/<agent>/agent/openclaw-agent.sqlite`.
//!
//! Each conversation window (`session_windows`: a session id, the session
//! key it belongs to, the window before it) has its transcript in
//! `transcript_events`, one entry per row in the shape of the old JSONL
//! lines, ordered by `seq`. Rows of 1 KiB or more are usually stored
//! zstd-compressed (`event_zstd`, with their UTF-8 length beside them).
//! `session_nodes` maps each session key to its current window.
//!
//! The database is read from a private copy (with its write-ahead log, where
//! OpenClaw's latest writes often still are), so the source is never opened
//! for writing, and a running OpenClaw is not disturbed. A write-ahead log
//! that is a link is never followed: the database is read without it.
//!
//! A compressed row is a small input that can expand without end (a
//! "decompression bomb": a 213-byte frame of a true 4 MiB event), so what
//! compressed rows decode to is bounded three times, and a row over any
//! bound is an error of that row (its place kept in the log) while the rest
//! of the import goes on:
//!
//! - a row: its recorded length, OpenClaw's own 4 MiB row limit and the
//!   session line limit, whichever is least ([`MAX_ROW_BYTES`]);
//! - a conversation window: [`MAX_WINDOW_DECODED_BYTES`] in all, since a
//!   window is held in memory while it is converted and written;
//! - an import: [`IMPORT_DECODED_FLOOR`] plus [`MAX_COMPRESSION_RATIO`]
//!   times the compressed bytes of the databases read ([`DecodeBudget`]),
//!   so what an import decodes and writes stays in proportion to its
//!   source however many conversations that holds.
//!
//! A row of known length is judged before anything of it is decoded; one
//! without is decoded up to the least bound and one byte more, never past.
//! Rows are read one conversation at a time, so memory holds one
//! conversation, not the whole database.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

const MIB: u64 = 1024 * 1024;

/// OpenClaw's own limit on one transcript row (its schema's
/// `CHECK (event_utf8_bytes BETWEEN 1 AND 4194304)`), which a database
/// need not carry: no row is decoded past it.
pub(crate) const MAX_ROW_BYTES: usize = 4 * 1024 * 1024;

/// What the compressed rows of one conversation window may decode to in
/// all. Each row is capped, but a window of many rows of a few hundred bytes
/// each, every one decoding to 4 MiB, would still take gigabytes; and a
/// window is held in memory while it is converted (its messages keep their
/// original entry beside their content, about twice the decoded bytes), so
/// this bounds the import's memory. OpenClaw itself reads a whole window
/// into memory on each turn, so real windows stay far below it.
pub(crate) const MAX_WINDOW_DECODED_BYTES: u64 = 64 * MIB;

/// What the compressed rows of one import may decode to whatever their
/// compressed size: room for a conversation at the window limit, or a few
/// rows of a text so repetitive that it compresses past
/// [`MAX_COMPRESSION_RATIO`].
pub(crate) const IMPORT_DECODED_FLOOR: u64 = 64 * MIB;

/// How many bytes each compressed byte of the databases read may decode to,
/// over [`IMPORT_DECODED_FLOOR`]. zstd compresses OpenClaw's JSON rows a few
/// times over (each row is its own frame, without a dictionary); a frame of
/// zeros or a repeated text goes past 10 000 times, which is how a database
/// of under a megabyte became gigabytes of session logs.
pub(crate) const MAX_COMPRESSION_RATIO: u64 = 32;

/// What the compressed rows of one import may still decode to:
/// [`IMPORT_DECODED_FLOOR`] plus [`MAX_COMPRESSION_RATIO`] times the
/// compressed bytes of every database read so far. Every decoded byte
/// counts, a row refused after decoding included, so a source of many bad
/// rows does not make the import decode without end either. A new one
/// (`default()`) holds the floor alone, for an import's first database.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DecodeBudget {
    /// The `event_zstd` bytes of the databases read.
    compressed: u64,
    /// Bytes decoded so far.
    decoded: u64,
}

impl DecodeBudget {
    /// The most this import decodes, with the databases read so far.
    pub(crate) fn allowed(&self) -> u64 {
        IMPORT_DECODED_FLOOR.saturating_add(self.compressed.saturating_mul(MAX_COMPRESSION_RATIO))
    }

    fn remaining(&self) -> u64 {
        self.allowed().saturating_sub(self.decoded)
    }

    fn over(&self) -> RowError {
        RowError::OverImport {
            allowed: Bytes(self.allowed()),
            compressed: self.compressed,
            before: self.decoded,
        }
    }
}

/// A byte count as the report shows a limit: in MiB when it is a whole
/// number of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= MIB && self.0.is_multiple_of(MIB) {
            write!(f, "{} MiB", self.0 / MIB)
        } else {
            write!(f, "{} bytes", self.0)
        }
    }
}

/// Why one transcript row could not be read. The row is left out (an
/// `import_unparsed` record marks its place) and the rest goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RowError {
    /// Neither `event_json` nor `event_zstd`.
    #[error("the row holds no event")]
    Empty,
    /// A recorded length below zero.
    #[error("compressed row records a length of {0} bytes: not decompressed")]
    BadLength(i64),
    /// A recorded length over the row limit.
    #[error(
        "compressed row records {recorded} bytes, over the limit of {limit} bytes a row may hold \
         (OpenClaw's own 4 MiB, or [session] max_line_bytes when that is less): not decompressed"
    )]
    RecordsOverRow { recorded: u64, limit: u64 },
    /// No recorded length, and it decodes past the row limit.
    #[error(
        "compressed row decodes to more bytes, over the limit of {limit} bytes a row may hold \
         (OpenClaw's own 4 MiB, or [session] max_line_bytes when that is less): \
         not decompressed further"
    )]
    DecodesOverRow { limit: u64 },
    /// It decodes past its recorded length.
    #[error(
        "compressed row decodes to more than the {recorded} bytes recorded: not decompressed further"
    )]
    DecodesOverRecorded { recorded: u64 },
    /// It decodes to fewer bytes than recorded.
    #[error("compressed row decodes to {got} bytes where {recorded} were recorded")]
    LengthMismatch { got: u64, recorded: u64 },
    /// The conversation's compressed rows would decode past the window limit.
    #[error(
        "the compressed rows of this conversation would decode to more than {limit}, the most \
         one conversation may ({before} bytes before this row): not decompressed"
    )]
    OverWindow { limit: Bytes, before: u64 },
    /// The import's compressed rows would decode past its budget.
    #[error(
        "the compressed rows of this import would decode to more than {allowed}, the most one \
         import may ({floor}, plus {ratio} times the {compressed} compressed bytes of the agent \
         databases read; {before} bytes decoded before this row): not decompressed",
        floor = Bytes(IMPORT_DECODED_FLOOR),
        ratio = MAX_COMPRESSION_RATIO
    )]
    OverImport {
        allowed: Bytes,
        compressed: u64,
        before: u64,
    },
    /// Not a zstd frame, or a damaged one.
    #[error("compressed row does not decode ({0})")]
    Corrupt(String),
    /// It decodes to bytes that are not UTF-8.
    #[error("compressed row is not UTF-8")]
    NotUtf8,
}

/// One conversation window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub session_id: String,
    pub session_key: Option<String>,
    pub previous: Option<String>,
    pub reason: Option<String>,
    pub created_at: Option<i64>,
}

/// One transcript row: its JSON, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub seq: i64,
    pub json: Result<String, RowError>,
}

/// An agent database opened from its private copy: what it holds of its
/// conversations, and their rows on demand ([`AgentDb::events`]).
#[derive(Debug)]
pub(crate) struct AgentDb {
    /// Windows in creation order, then every session id that has events but
    /// no window row.
    pub windows: Vec<Window>,
    /// Session id → the session keys whose current window it is.
    pub current: BTreeMap<String, Vec<String>>,
    /// The OpenClaw version that created the database, when recorded.
    pub app_version: Option<String>,
    conn: Connection,
    compressed: bool,
    /// Bytes one row may decode to.
    row_limit: u64,
    /// Bytes the compressed rows of one window may decode to.
    window_limit: u64,
    /// The scratch folder of the copy; removed when this is dropped.
    _dir: tempfile::TempDir,
}

/// Opens the database at `path` (from a copy) and adds its compressed
/// bytes to `budget`. A compressed row decodes to at most `row_limit` bytes
/// (and never past [`MAX_ROW_BYTES`]).
pub(crate) fn read(
    path: &Path,
    row_limit: usize,
    budget: &mut DecodeBudget,
) -> Result<AgentDb, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder ({e})"))?;
    let copy = dir.path().join("agent.sqlite");
    std::fs::copy(path, &copy).map_err(|e| format!("cannot copy the database ({e})"))?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = Path::new(&wal);
    // `is_file` and `copy` follow links: the link is looked at itself, so a
    // log linked in from elsewhere (another database's) is never read.
    if std::fs::symlink_metadata(wal).is_ok_and(|m| m.file_type().is_file()) {
        std::fs::copy(wal, dir.path().join("agent.sqlite-wal"))
            .map_err(|e| format!("cannot copy its write-ahead log ({e})"))?;
    }
    // Read-write on the copy: SQLite replays the write-ahead log into it.
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("not an SQLite database ({e})"))?;
    let row_limit = row_limit.min(MAX_ROW_BYTES);
    let mut db = AgentDb {
        windows: Vec::new(),
        current: BTreeMap::new(),
        app_version: None,
        conn,
        compressed: false,
        row_limit: u64::try_from(row_limit).unwrap_or(u64::MAX),
        window_limit: MAX_WINDOW_DECODED_BYTES,
        _dir: dir,
    };
    db.read_windows()?;
    if db.compressed {
        // `length` of a blob is read from the row's header: the frames
        // themselves are not loaded.
        let bytes: i64 = db
            .conn
            .query_row(
                "SELECT coalesce(sum(length(event_zstd)), 0) FROM transcript_events",
                [],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        budget.compressed = budget
            .compressed
            .saturating_add(u64::try_from(bytes).unwrap_or(0));
    }
    Ok(db)
}

fn sql_err(e: rusqlite::Error) -> String {
    format!("cannot read it ({e})")
}

impl AgentDb {
    fn read_windows(&mut self) -> Result<(), String> {
        let conn = &self.conn;
        let tables = table_names(conn).map_err(sql_err)?;
        if !tables.iter().any(|t| t == "transcript_events") {
            return Err(
                "it has no transcript_events table: not an agent database of OpenClaw 2026.9 or later"
                    .into(),
            );
        }
        if tables.iter().any(|t| t == "schema_meta") {
            self.app_version = conn
                .query_row(
                    "SELECT app_version FROM schema_meta WHERE role = 'agent' LIMIT 1",
                    [],
                    |r| r.get::<_, Option<String>>(0),
                )
                .ok()
                .flatten();
        }
        let mut windows = Vec::new();
        if tables.iter().any(|t| t == "session_windows") {
            let mut stmt = conn
                .prepare(
                    "SELECT session_id, session_key, previous_session_id, reason, created_at \
                     FROM session_windows ORDER BY created_at, session_id",
                )
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok(Window {
                        session_id: r.get(0)?,
                        session_key: r.get(1)?,
                        previous: r.get(2)?,
                        reason: r.get(3)?,
                        created_at: r.get(4)?,
                    })
                })
                .map_err(sql_err)?;
            for w in rows {
                windows.push(w.map_err(sql_err)?);
            }
        }
        if tables.iter().any(|t| t == "session_nodes") {
            let mut stmt = conn
                .prepare(
                    "SELECT session_key, current_session_id FROM session_nodes ORDER BY session_key",
                )
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(sql_err)?;
            for row in rows {
                let (key, id) = row.map_err(sql_err)?;
                self.current.entry(id).or_default().push(key);
            }
        }
        let columns = column_names(conn, "transcript_events").map_err(sql_err)?;
        self.compressed = columns.iter().any(|c| c == "event_zstd");
        let mut stmt = conn
            .prepare("SELECT DISTINCT session_id FROM transcript_events ORDER BY session_id")
            .map_err(sql_err)?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(sql_err)?;
        let mut with_events = Vec::new();
        for id in ids {
            with_events.push(id.map_err(sql_err)?);
        }
        for id in with_events {
            if !windows.iter().any(|w| w.session_id == id) {
                windows.push(Window {
                    session_id: id,
                    session_key: None,
                    previous: None,
                    reason: None,
                    created_at: None,
                });
            }
        }
        self.windows = windows;
        Ok(())
    }

    /// The rows of one conversation window, in `seq` order. What their
    /// compressed rows decode to counts against the window's limit and
    /// against `budget`, the import's.
    pub(crate) fn events(
        &self,
        session_id: &str,
        budget: &mut DecodeBudget,
    ) -> Result<Vec<Event>, String> {
        let query = if self.compressed {
            "SELECT seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events WHERE session_id = ?1 ORDER BY seq"
        } else {
            "SELECT seq, event_json, NULL, NULL FROM transcript_events WHERE session_id = ?1 ORDER BY seq"
        };
        let mut stmt = self.conn.prepare(query).map_err(sql_err)?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<Vec<u8>>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .map_err(sql_err)?;
        let mut out = Vec::new();
        let mut window = 0u64;
        for row in rows {
            let (seq, json, zstd, bytes) = row.map_err(sql_err)?;
            let json = match (json, zstd) {
                (Some(j), _) => Ok(j),
                (None, Some(z)) => self.decode_row(&z, bytes, &mut window, budget),
                (None, None) => Err(RowError::Empty),
            };
            out.push(Event { seq, json });
        }
        Ok(out)
    }

    /// One compressed row, within the row limit, what is left of the
    /// window's limit (`window` bytes are used) and what is left of
    /// `budget`. A row of known length is judged before it is decoded; one
    /// without is decoded up to the least of the three and one byte more.
    fn decode_row(
        &self,
        frame: &[u8],
        recorded: Option<i64>,
        window: &mut u64,
        budget: &mut DecodeBudget,
    ) -> Result<String, RowError> {
        let window_left = self.window_limit.saturating_sub(*window);
        let over_window = RowError::OverWindow {
            limit: Bytes(self.window_limit),
            before: *window,
        };
        let recorded = match recorded {
            Some(n) => Some(u64::try_from(n).map_err(|_| RowError::BadLength(n))?),
            None => None,
        };
        let cap = match recorded {
            Some(n) if n > self.row_limit => {
                return Err(RowError::RecordsOverRow {
                    recorded: n,
                    limit: self.row_limit,
                })
            }
            Some(n) if n > window_left => return Err(over_window),
            Some(n) if n > budget.remaining() => return Err(budget.over()),
            Some(n) => n,
            None if window_left == 0 => return Err(over_window),
            None if budget.remaining() == 0 => return Err(budget.over()),
            None => self.row_limit.min(window_left).min(budget.remaining()),
        };
        let mut out = Vec::new();
        // A known length (within the limits already) is reserved at once
        // rather than grown into, which would take up to twice the row.
        if let Some(n) = recorded.and_then(|n| usize::try_from(n).ok()) {
            out.reserve_exact(n.saturating_add(1));
        }
        let decoded = decompress(frame, cap, &mut out);
        let got = u64::try_from(out.len()).unwrap_or(u64::MAX);
        // Counted whether or not the row is kept: the work is done.
        let over_import = budget.over();
        budget.decoded = budget.decoded.saturating_add(got);
        decoded?;
        if got > cap {
            return Err(match recorded {
                Some(n) => RowError::DecodesOverRecorded { recorded: n },
                None if cap == self.row_limit => RowError::DecodesOverRow {
                    limit: self.row_limit,
                },
                None if cap == window_left => over_window,
                None => over_import,
            });
        }
        if let Some(n) = recorded {
            if got != n {
                return Err(RowError::LengthMismatch { got, recorded: n });
            }
        }
        let mut json = String::from_utf8(out).map_err(|_| RowError::NotUtf8)?;
        // The window is held until it is written: no room to spare.
        json.shrink_to_fit();
        *window = window.saturating_add(got);
        Ok(json)
    }
}

/// Decodes a zstd frame into `out`, stopping after `cap + 1` bytes: more
/// than `cap` in `out` means the frame goes past it.
fn decompress(frame: &[u8], cap: u64, out: &mut Vec<u8>) -> Result<(), RowError> {
    ruzstd::decoding::StreamingDecoder::new(frame)
        .map_err(|e| RowError::Corrupt(e.to_string()))?
        .take(cap.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| RowError::Corrupt(e.to_string()))?;
    Ok(())
}

fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

fn column_names(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({table})"))?;
    let names = stmt.query_map([], |r| r.get::<_, String>(1))?;
    names.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database of one window whose `n` compressed rows each decode to
    /// `size` bytes of JSON, recording their length when `recorded`.
    fn database(dir: &Path, name: &str, n: i64, size: usize, recorded: bool) -> std::path::PathBuf {
        let path = dir.join(name);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, \
             event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER)",
        )
        .unwrap();
        let frame_of = |n: usize| serde_json::json!({"type": "custom", "data": "z".repeat(n)});
        let json = frame_of(size - frame_of(0).to_string().len()).to_string();
        assert_eq!(json.len(), size);
        let frame = ruzstd::encoding::compress_to_vec(
            json.as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let len = recorded.then(|| i64::try_from(json.len()).unwrap());
        for seq in 0..n {
            conn.execute(
                "INSERT INTO transcript_events VALUES ('w1', ?1, NULL, 0, ?2, ?3)",
                rusqlite::params![seq, frame, len],
            )
            .unwrap();
        }
        path
    }

    fn kept(events: &[Event]) -> usize {
        events.iter().filter(|e| e.json.is_ok()).count()
    }

    #[test]
    fn the_rows_of_a_window_decode_to_a_bounded_total() {
        let dir = tempfile::tempdir().unwrap();
        for recorded in [true, false] {
            let name = format!("agent-{recorded}.sqlite");
            let path = database(dir.path(), &name, 5, 4096, recorded);
            let mut budget = DecodeBudget::default();
            let mut db = read(&path, MAX_ROW_BYTES, &mut budget).unwrap();
            assert_eq!(kept(&db.events("w1", &mut budget).unwrap()), 5);
            // Room for two and a half rows: two decode, the rest are errors
            // found without decoding past the bound.
            db.window_limit = 4096 * 5 / 2;
            let before = budget.decoded;
            let events = db.events("w1", &mut budget).unwrap();
            assert_eq!(kept(&events), 2, "{events:?}");
            assert!(events[2..]
                .iter()
                .all(|e| matches!(e.json, Err(RowError::OverWindow { .. }))));
            // Two rows, and (without a recorded length) each row after
            // them tried up to the half row left and one byte more.
            let tried = if recorded { 0 } else { 3 * (4096 / 2 + 1) };
            assert_eq!(budget.decoded - before, 2 * 4096 + tried);
        }
    }

    #[test]
    fn the_rows_of_an_import_decode_to_a_total_bounded_by_its_compressed_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let row = 1024 * 1024;
        let a = database(dir.path(), "a.sqlite", 3, row, true);
        let b = database(dir.path(), "b.sqlite", 3, row, false);
        let mut budget = DecodeBudget::default();
        let db_a = read(&a, MAX_ROW_BYTES, &mut budget).unwrap();
        let compressed_a = budget.compressed;
        assert!(
            compressed_a > 0 && compressed_a < 3 * 4096,
            "{compressed_a}"
        );
        assert_eq!(
            budget.allowed(),
            IMPORT_DECODED_FLOOR + MAX_COMPRESSION_RATIO * compressed_a
        );
        // Spent all but a row and a half: one more row decodes, then the
        // import is over its budget in this database and the next.
        budget.decoded = budget.allowed() - row as u64 * 3 / 2;
        let events = db_a.events("w1", &mut budget).unwrap();
        assert_eq!(kept(&events), 1, "{events:?}");
        assert!(matches!(events[1].json, Err(RowError::OverImport { .. })));
        let db_b = read(&b, MAX_ROW_BYTES, &mut budget).unwrap();
        assert!(budget.compressed > compressed_a);
        let events = db_b.events("w1", &mut budget).unwrap();
        assert_eq!(kept(&events), 0, "{events:?}");
        assert!(events
            .iter()
            .all(|e| matches!(e.json, Err(RowError::OverImport { .. }))));
        // Never past the budget, the bytes of rows refused included.
        assert!(budget.decoded <= budget.allowed() + 1, "{budget:?}");
        let text = events[2].json.clone().unwrap_err().to_string();
        assert!(
            text.contains("the most one import may (64 MiB, plus 32 times"),
            "{text}"
        );
    }

    #[test]
    fn rows_that_fail_after_decoding_count_against_the_import() {
        let dir = tempfile::tempdir().unwrap();
        // No recorded length, each decoding past a row limit of 1000 bytes.
        let path = database(dir.path(), "agent.sqlite", 4, 4096, false);
        let mut budget = DecodeBudget::default();
        let db = read(&path, 1000, &mut budget).unwrap();
        let events = db.events("w1", &mut budget).unwrap();
        assert!(events
            .iter()
            .all(|e| matches!(e.json, Err(RowError::DecodesOverRow { limit: 1000 }))));
        assert_eq!(budget.decoded, 4 * 1001);
    }
}
