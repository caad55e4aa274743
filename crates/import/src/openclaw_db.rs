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
//! "decompression bomb"), so each row is decoded up to a limit, never past
//! it: its recorded length, OpenClaw's own 4 MiB row limit and the session
//! line limit, whichever is least. A row over it is an error of that row,
//! and the rest of the import goes on. Rows are read one conversation at a
//! time, so memory holds one conversation, not the whole database.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// OpenClaw's own limit on one transcript row (its schema's
/// `CHECK (event_utf8_bytes BETWEEN 1 AND 4194304)`), which a database
/// need not carry: no row is decoded past it.
pub(crate) const MAX_ROW_BYTES: usize = 4 * 1024 * 1024;

/// What the compressed rows of one conversation window may decode to in
/// all: each row is capped, but a window of many rows of a few KiB each,
/// every one decoding to 4 MiB, would still take gigabytes. Rows past it
/// are errors of their own.
pub(crate) const MAX_WINDOW_DECODED_BYTES: usize = 256 * 1024 * 1024;

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
    pub json: Result<String, String>,
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
    row_limit: usize,
    /// Bytes the compressed rows of one window may decode to.
    window_limit: usize,
    /// The scratch folder of the copy; removed when this is dropped.
    _dir: tempfile::TempDir,
}

/// Opens the database at `path` (from a copy). A compressed row decodes to
/// at most `row_limit` bytes (and never past [`MAX_ROW_BYTES`]).
pub(crate) fn read(path: &Path, row_limit: usize) -> Result<AgentDb, String> {
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
    let mut db = AgentDb {
        windows: Vec::new(),
        current: BTreeMap::new(),
        app_version: None,
        conn,
        compressed: false,
        row_limit: row_limit.min(MAX_ROW_BYTES),
        window_limit: MAX_WINDOW_DECODED_BYTES,
        _dir: dir,
    };
    db.read_windows()?;
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

    /// The rows of one conversation window, in `seq` order.
    pub(crate) fn events(&self, session_id: &str) -> Result<Vec<Event>, String> {
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
        let mut decoded = 0usize;
        for row in rows {
            let (seq, json, zstd, bytes) = row.map_err(sql_err)?;
            let json = match (json, zstd) {
                (Some(j), _) => Ok(j),
                (None, Some(_)) if decoded >= self.window_limit => Err(format!(
                    "the compressed rows before it in this conversation already decode to {decoded} bytes, the most one conversation may (256 MiB): not decompressed"
                )),
                (None, Some(z)) => {
                    let limit = self.row_limit.min(self.window_limit - decoded);
                    let json = decompress(&z, bytes, limit);
                    if let Ok(j) = &json {
                        decoded += j.len();
                    }
                    json
                }
                (None, None) => Err("the row holds no event".to_string()),
            };
            out.push(Event { seq, json });
        }
        Ok(out)
    }
}

/// A zstd-compressed row, decoded up to `limit` bytes (and its recorded
/// UTF-8 length, when that is less) and checked against that length. A row
/// that would decode past the limit is an error, found after decoding at
/// most one byte more than the limit.
fn decompress(data: &[u8], expected: Option<i64>, limit: usize) -> Result<String, String> {
    let limit_u64 = u64::try_from(limit).unwrap_or(u64::MAX);
    let over = |what: String| {
        format!(
            "compressed row {what}, over the limit of {limit} bytes a row may hold \
             (OpenClaw's own 4 MiB, or [session] max_line_bytes when that is less): \
             not decompressed further"
        )
    };
    let cap = match expected {
        Some(n) if n < 0 => {
            return Err(format!(
                "compressed row records a length of {n} bytes: not decompressed"
            ))
        }
        Some(n) if n.unsigned_abs() > limit_u64 => {
            return Err(over(format!("records {n} bytes")));
        }
        Some(n) => n.unsigned_abs(),
        None => limit_u64,
    };
    let mut out = Vec::new();
    ruzstd::decoding::StreamingDecoder::new(data)
        .map_err(|e| format!("compressed row does not decode ({e})"))?
        .take(cap.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("compressed row does not decode ({e})"))?;
    let got = u64::try_from(out.len()).unwrap_or(u64::MAX);
    if got > cap {
        return Err(match expected {
            Some(n) => format!(
                "compressed row decodes to more than the {n} bytes recorded: not decompressed further"
            ),
            None => over("decodes to more bytes".to_string()),
        });
    }
    if let Some(n) = expected {
        if got != n.unsigned_abs() {
            return Err(format!(
                "compressed row decodes to {got} bytes where {n} were recorded"
            ));
        }
    }
    String::from_utf8(out).map_err(|_| "compressed row is not UTF-8".to_string())
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
    /// `size` bytes of JSON.
    fn database(dir: &Path, n: i64, size: usize) -> std::path::PathBuf {
        let path = dir.join("agent.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, \
             event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER)",
        )
        .unwrap();
        let json = serde_json::json!({"type": "custom", "data": "z".repeat(size - 30)}).to_string();
        let frame = ruzstd::encoding::compress_to_vec(
            json.as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        for seq in 0..n {
            conn.execute(
                "INSERT INTO transcript_events VALUES ('w1', ?1, NULL, 0, ?2, ?3)",
                rusqlite::params![seq, frame, i64::try_from(json.len()).unwrap()],
            )
            .unwrap();
        }
        path
    }

    #[test]
    fn the_rows_of_a_window_decode_to_a_bounded_total() {
        let dir = tempfile::tempdir().unwrap();
        let path = database(dir.path(), 5, 4096);
        let mut db = read(&path, MAX_ROW_BYTES).unwrap();
        assert!(db.events("w1").unwrap().iter().all(|e| e.json.is_ok()));
        // Room for two and a half rows: two decode, the rest are errors
        // found without decoding past the bound.
        db.window_limit = 4096 * 5 / 2;
        let events = db.events("w1").unwrap();
        let ok = events.iter().filter(|e| e.json.is_ok()).count();
        assert_eq!(ok, 2, "{events:?}");
        assert!(events[2..].iter().all(|e| e.json.is_err()));
    }
}
