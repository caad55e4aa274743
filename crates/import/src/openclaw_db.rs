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
//! for writing, and a running OpenClaw is not disturbed.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

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

/// What an agent database holds of its conversations.
#[derive(Debug, Default)]
pub(crate) struct AgentDb {
    /// Windows in creation order, then every session id that has events but
    /// no window row.
    pub windows: Vec<Window>,
    /// Session id → its rows in `seq` order.
    pub events: BTreeMap<String, Vec<Event>>,
    /// Session id → the session keys whose current window it is.
    pub current: BTreeMap<String, Vec<String>>,
    /// The OpenClaw version that created the database, when recorded.
    pub app_version: Option<String>,
}

/// Reads the transcripts of the database at `path` (from a copy).
pub(crate) fn read(path: &Path) -> Result<AgentDb, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a scratch folder ({e})"))?;
    let copy = dir.path().join("agent.sqlite");
    std::fs::copy(path, &copy).map_err(|e| format!("cannot copy the database ({e})"))?;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = Path::new(&wal);
    if wal.is_file() {
        std::fs::copy(wal, dir.path().join("agent.sqlite-wal"))
            .map_err(|e| format!("cannot copy its write-ahead log ({e})"))?;
    }
    // Read-write on the copy: SQLite replays the write-ahead log into it.
    let conn = Connection::open_with_flags(
        &copy,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("not an SQLite database ({e})"))?;
    read_conn(&conn)
}

fn read_conn(conn: &Connection) -> Result<AgentDb, String> {
    let sql_err = |e: rusqlite::Error| format!("cannot read it ({e})");
    let tables = table_names(conn).map_err(sql_err)?;
    if !tables.iter().any(|t| t == "transcript_events") {
        return Err(
            "it has no transcript_events table: not an agent database of OpenClaw 2026.9 or later"
                .into(),
        );
    }
    let mut db = AgentDb::default();
    if tables.iter().any(|t| t == "schema_meta") {
        db.app_version = conn
            .query_row(
                "SELECT app_version FROM schema_meta WHERE role = 'agent' LIMIT 1",
                [],
                |r| r.get::<_, Option<String>>(0),
            )
            .ok()
            .flatten();
    }
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
            db.windows.push(w.map_err(sql_err)?);
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
            db.current.entry(id).or_default().push(key);
        }
    }
    let columns = column_names(conn, "transcript_events").map_err(sql_err)?;
    let compressed = columns.iter().any(|c| c == "event_zstd");
    let query = if compressed {
        "SELECT session_id, seq, event_json, event_zstd, event_utf8_bytes FROM transcript_events ORDER BY session_id, seq"
    } else {
        "SELECT session_id, seq, event_json, NULL, NULL FROM transcript_events ORDER BY session_id, seq"
    };
    let mut stmt = conn.prepare(query).map_err(sql_err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<Vec<u8>>>(3)?,
                r.get::<_, Option<i64>>(4)?,
            ))
        })
        .map_err(sql_err)?;
    for row in rows {
        let (id, seq, json, zstd, bytes) = row.map_err(sql_err)?;
        let json = match (json, zstd) {
            (Some(j), _) => Ok(j),
            (None, Some(z)) => decompress(&z, bytes),
            (None, None) => Err("the row holds no event".to_string()),
        };
        db.events.entry(id).or_default().push(Event { seq, json });
    }
    let known: Vec<String> = db.windows.iter().map(|w| w.session_id.clone()).collect();
    for id in db.events.keys() {
        if !known.contains(id) {
            db.windows.push(Window {
                session_id: id.clone(),
                session_key: None,
                previous: None,
                reason: None,
                created_at: None,
            });
        }
    }
    Ok(db)
}

/// A zstd-compressed row, checked against its recorded UTF-8 length.
fn decompress(data: &[u8], expected: Option<i64>) -> Result<String, String> {
    let mut out = Vec::new();
    ruzstd::decoding::StreamingDecoder::new(data)
        .map_err(|e| format!("compressed row does not decode ({e})"))?
        .read_to_end(&mut out)
        .map_err(|e| format!("compressed row does not decode ({e})"))?;
    if let Some(n) = expected {
        if usize::try_from(n).ok() != Some(out.len()) {
            return Err(format!(
                "compressed row decodes to {} bytes where {n} were recorded",
                out.len()
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
