//! Moving a workspace's rows to another database server while it is in
//! use: copy, catch up, switch, and leave the old copy to be deleted.
//!
//! 1. The target takes the workspace in ([`Database::adopt`]) and gets a
//!    copy of its rows, read from one snapshot of the source.
//! 2. Catch-up passes copy what changed since (documents and sessions
//!    whose version moved, those removed), until a pass finds little.
//! 3. The switch: the source's registration row is locked `FOR UPDATE`.
//!    Every write of the workspace holds that row `FOR KEY SHARE` until it
//!    commits, so the lock waits for the writes under way and holds back
//!    new ones. The last changes are copied, the source's row is marked
//!    moved (in the same transaction, so no write commits in between),
//!    and the registry places the workspace on the target. Writes held
//!    back then find the workspace moved and write nothing; reads of the
//!    old copy fail the same way, so no request is
//!    answered from it after the switch. The time from the lock to the
//!    registry's commit is the move's write pause.
//! 4. The caller deletes the old copy's rows ([`Database::drop_rows`]).
//!
//! A move that fails before its switch leaves the workspace where it was
//! (the target's partial copy is removed on the next attempt). One that
//! fails between the source's commit and the registry's puts the source
//! back before it returns.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use mnemo_store::{Error, Result};
use tokio_postgres::Client;

use crate::placement::HOME;
use crate::{db_err, failed, Database, Tenant};

/// A catch-up pass that finds at most this many changed documents and
/// sessions is the last before the switch.
const SMALL_DELTA: usize = 16;
/// Catch-up passes at most before the switch, however busy the workspace.
const MAX_PASSES: usize = 6;

/// What a move did.
#[derive(Debug, Clone, Default)]
pub struct MoveReport {
    /// Documents copied (counted again when copied again).
    pub documents: usize,
    /// Sessions copied.
    pub sessions: usize,
    /// Session lines copied.
    pub lines: usize,
    /// Catch-up passes before the switch.
    pub passes: usize,
    /// The whole move, in seconds.
    pub seconds: f64,
    /// Writes held back: from the source's lock to the registry's switch.
    pub pause_ms: f64,
}

/// The versions a copy holds: documents by path, sessions by key.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Versions {
    documents: HashMap<String, i64>,
    sessions: HashMap<String, i64>,
}

impl Versions {
    /// What `now` has that this copy does not: changed or new, and gone.
    fn delta(&self, now: &Versions) -> Delta {
        fn side(
            held: &HashMap<String, i64>,
            now: &HashMap<String, i64>,
        ) -> (Vec<String>, Vec<String>) {
            let changed = now
                .iter()
                .filter(|(k, v)| held.get(*k) != Some(v))
                .map(|(k, _)| k.clone())
                .collect();
            let gone = held
                .keys()
                .filter(|k| !now.contains_key(*k))
                .cloned()
                .collect();
            (changed, gone)
        }
        let (documents, documents_gone) = side(&self.documents, &now.documents);
        let (sessions, sessions_gone) = side(&self.sessions, &now.sessions);
        Delta {
            documents,
            documents_gone,
            sessions,
            sessions_gone,
        }
    }
}

#[derive(Debug, Default)]
struct Delta {
    documents: Vec<String>,
    documents_gone: Vec<String>,
    sessions: Vec<String>,
    sessions_gone: Vec<String>,
}

impl Delta {
    fn len(&self) -> usize {
        self.documents.len()
            + self.documents_gone.len()
            + self.sessions.len()
            + self.sessions_gone.len()
    }
}

async fn versions(c: &Client, loc: &str, ws: &str) -> Result<Versions> {
    let mut by_key = Vec::new();
    for sql in [
        "SELECT path, version FROM documents WHERE workspace = $1",
        "SELECT key, version FROM sessions WHERE workspace = $1",
    ] {
        let rows = c.query(sql, &[&ws]).await.map_err(db_err(loc))?;
        by_key.push(rows.iter().map(|r| (r.get(0), r.get(1))).collect());
    }
    let sessions = by_key.pop().unwrap_or_default();
    let documents = by_key.pop().unwrap_or_default();
    Ok(Versions {
        documents,
        sessions,
    })
}

/// Copies `delta` from `src` to `dst` (one transaction there) and records
/// in `held` the versions copied. `src` must read one state throughout:
/// a snapshot, or a transaction that holds the writers back.
async fn copy(
    src: &Client,
    dst: &Client,
    (sl, dl): (&str, &str),
    ws: &str,
    delta: &Delta,
    held: &mut Versions,
    report: &mut MoveReport,
) -> Result<()> {
    let docs = src
        .query(
            "SELECT path, body, version, modified FROM documents \
             WHERE workspace = $1 AND path = ANY($2)",
            &[&ws, &delta.documents],
        )
        .await
        .map_err(db_err(sl))?;
    let sessions = src
        .query(
            "SELECT key, stem, lines, bytes, version, created, updated FROM sessions \
             WHERE workspace = $1 AND key = ANY($2)",
            &[&ws, &delta.sessions],
        )
        .await
        .map_err(db_err(sl))?;
    let lines = src
        .query(
            "SELECT key, seq, line FROM session_lines WHERE workspace = $1 AND key = ANY($2)",
            &[&ws, &delta.sessions],
        )
        .await
        .map_err(db_err(sl))?;

    let paths: Vec<String> = docs.iter().map(|r| r.get(0)).collect();
    let bodies: Vec<Vec<u8>> = docs.iter().map(|r| r.get(1)).collect();
    let doc_versions: Vec<i64> = docs.iter().map(|r| r.get(2)).collect();
    let modified: Vec<DateTime<Utc>> = docs.iter().map(|r| r.get(3)).collect();
    let keys: Vec<String> = sessions.iter().map(|r| r.get(0)).collect();
    let stems: Vec<String> = sessions.iter().map(|r| r.get(1)).collect();
    let counts: Vec<i64> = sessions.iter().map(|r| r.get(2)).collect();
    let bytes: Vec<i64> = sessions.iter().map(|r| r.get(3)).collect();
    let session_versions: Vec<i64> = sessions.iter().map(|r| r.get(4)).collect();
    let created: Vec<DateTime<Utc>> = sessions.iter().map(|r| r.get(5)).collect();
    let updated: Vec<DateTime<Utc>> = sessions.iter().map(|r| r.get(6)).collect();
    let line_keys: Vec<String> = lines.iter().map(|r| r.get(0)).collect();
    let seqs: Vec<i64> = lines.iter().map(|r| r.get(1)).collect();
    let line_bodies: Vec<Vec<u8>> = lines.iter().map(|r| r.get(2)).collect();
    // Whatever the delta named and the source no longer has goes too.
    let mut documents_gone = delta.documents_gone.clone();
    documents_gone.extend(
        delta
            .documents
            .iter()
            .filter(|p| !paths.contains(p))
            .cloned(),
    );
    let mut sessions_gone = delta.sessions_gone.clone();
    sessions_gone.extend(delta.sessions.iter().filter(|k| !keys.contains(k)).cloned());
    let every_session: Vec<String> = delta
        .sessions
        .iter()
        .chain(&delta.sessions_gone)
        .cloned()
        .collect();

    dst.batch_execute("BEGIN").await.map_err(db_err(dl))?;
    let written = async {
        dst.execute(
            "DELETE FROM documents WHERE workspace = $1 AND path = ANY($2)",
            &[&ws, &documents_gone],
        )
        .await?;
        dst.execute(
            "INSERT INTO documents (workspace, path, body, version, modified) \
             SELECT $1, p, b, v, m FROM unnest($2::text[], $3::bytea[], $4::bigint[], \
             $5::timestamptz[]) AS t(p, b, v, m) \
             ON CONFLICT (workspace, path) DO UPDATE SET body = EXCLUDED.body, \
             version = EXCLUDED.version, modified = EXCLUDED.modified",
            &[&ws, &paths, &bodies, &doc_versions, &modified],
        )
        .await?;
        // A session is copied whole: a fold rewrites its lines' numbers.
        dst.execute(
            "DELETE FROM session_lines WHERE workspace = $1 AND key = ANY($2)",
            &[&ws, &every_session],
        )
        .await?;
        dst.execute(
            "DELETE FROM sessions WHERE workspace = $1 AND key = ANY($2)",
            &[&ws, &every_session],
        )
        .await?;
        dst.execute(
            "INSERT INTO sessions (workspace, key, stem, lines, bytes, version, created, updated) \
             SELECT $1, k, s, n, b, v, c, u FROM unnest($2::text[], $3::text[], $4::bigint[], \
             $5::bigint[], $6::bigint[], $7::timestamptz[], $8::timestamptz[]) AS t(k, s, n, b, v, c, u)",
            &[&ws, &keys, &stems, &counts, &bytes, &session_versions, &created, &updated],
        )
        .await?;
        dst.execute(
            "INSERT INTO session_lines (workspace, key, seq, line) \
             SELECT $1, k, s, l FROM unnest($2::text[], $3::bigint[], $4::bytea[]) AS t(k, s, l)",
            &[&ws, &line_keys, &seqs, &line_bodies],
        )
        .await?;
        dst.batch_execute("COMMIT").await
    }
    .await;
    if let Err(e) = written {
        let _ = dst.batch_execute("ROLLBACK").await;
        return Err(db_err(dl)(e));
    }
    for p in &documents_gone {
        held.documents.remove(p);
    }
    for k in &sessions_gone {
        held.sessions.remove(k);
    }
    held.documents.extend(paths.into_iter().zip(doc_versions));
    held.sessions.extend(keys.into_iter().zip(session_versions));
    report.documents += docs.len();
    report.sessions += sessions.len();
    report.lines += lines.len();
    Ok(())
}

impl Database {
    /// Moves tenant `t` (as this registry places it) from `from` to `to`,
    /// the server named `to_name` (`None`: this registry's own database).
    /// `to` must have adopted `t` already unless it is this registry. The
    /// old copy's rows are left for [`Database::drop_rows`].
    pub fn move_rows(
        self: &Arc<Self>,
        t: &Tenant,
        from: &Arc<Database>,
        to: &Arc<Database>,
        to_name: Option<&str>,
    ) -> Result<MoveReport> {
        if t.server.as_deref() == to_name {
            return Err(Error::Invalid(format!(
                "the workspace {:?} is on {} already",
                t.id,
                to_name.unwrap_or(HOME)
            )));
        }
        let started = Instant::now();
        let (registry, from, to) = (self.clone(), from.clone(), to.clone());
        let (t, to_name) = (t.clone(), to_name.map(str::to_string));
        let loc = self.location.clone();
        let mut report = self
            .rt
            .run(async move { switch(&registry, &from, &to, &t, to_name.as_deref()).await })
            .map_err(|s| failed(&loc, s.to_string()))??;
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Deletes workspace `id`'s documents and sessions here, keeping its
    /// registration row: the old copy a move left behind.
    pub fn drop_rows(&self, id: &str) -> Result<u64> {
        let id = id.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                let mut n = 0;
                for table in ["session_lines", "sessions", "documents"] {
                    n += c
                        .execute(&format!("DELETE FROM {table} WHERE workspace = $1"), &[&id])
                        .await
                        .map_err(db_err(&loc))?;
                }
                Ok(n)
            })
        })
    }
}

/// The move itself, on three connections (the registry's is one of the
/// other two when it is the source or the target).
async fn switch(
    registry: &Arc<Database>,
    from: &Arc<Database>,
    to: &Arc<Database>,
    t: &Tenant,
    to_name: Option<&str>,
) -> Result<MoveReport> {
    let (sl, dl) = (from.location.as_str(), to.location.as_str());
    let src = from.pool.get().await.map_err(|m| failed(sl, m))?;
    let dst = to.pool.get().await.map_err(|m| failed(dl, m))?;
    let (s, d) = (&src.client, &dst.client);
    let ws = t.id.as_str();
    let mut report = MoveReport::default();
    let mut held = Versions::default();
    if to_name.is_none() {
        // The registry's own database holds no row of a workspace placed
        // elsewhere but what an earlier move cut short left.
        for table in ["session_lines", "sessions", "documents"] {
            d.execute(&format!("DELETE FROM {table} WHERE workspace = $1"), &[&ws])
                .await
                .map_err(db_err(dl))?;
        }
    }

    // Copy, then catch up, each pass from one snapshot of the source.
    loop {
        s.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(db_err(sl))?;
        let pass = async {
            let now = versions(s, sl, ws).await?;
            let delta = held.delta(&now);
            let n = delta.len();
            copy(s, d, (sl, dl), ws, &delta, &mut held, &mut report).await?;
            Ok::<_, Error>(n)
        }
        .await;
        let _ = s.batch_execute("COMMIT").await;
        let n = pass?;
        if report.passes > 0 && (n <= SMALL_DELTA || report.passes >= MAX_PASSES) {
            break;
        }
        report.passes += 1;
    }

    // The switch: writers held back, the last changes copied, the old
    // copy fenced and the registry pointed at the new one.
    s.batch_execute("BEGIN").await.map_err(db_err(sl))?;
    let paused = Instant::now();
    let fenced = async {
        let locked = s
            .query_opt(
                "SELECT 1 FROM tenants WHERE workspace = $1 AND seq = $2 AND server IS NULL \
                 FOR UPDATE",
                &[&ws, &t.seq],
            )
            .await
            .map_err(db_err(sl))?;
        if locked.is_none() {
            return Err(Error::Conflict(format!(
                "the workspace {ws:?} is not held by the server it is placed on (moved or \
                 deleted meanwhile); nothing was moved"
            )));
        }
        let now = versions(s, sl, ws).await?;
        let delta = held.delta(&now);
        copy(s, d, (sl, dl), ws, &delta, &mut held, &mut report).await?;
        s.execute(
            "UPDATE tenants SET server = $3 WHERE workspace = $1 AND seq = $2",
            &[&ws, &t.seq, &to_name.unwrap_or(HOME)],
        )
        .await
        .map_err(db_err(sl))?;
        s.batch_execute("COMMIT").await.map_err(db_err(sl))
    }
    .await;
    if let Err(e) = fenced {
        let _ = s.batch_execute("ROLLBACK").await;
        return Err(e);
    }
    // When the source is the registry, its commit was the switch.
    if t.server.is_some() {
        let placed = async {
            let other;
            let r: &Client = if to_name.is_none() {
                d
            } else {
                other = registry
                    .pool
                    .get()
                    .await
                    .map_err(|m| failed(&registry.location, m))?;
                &other.client
            };
            r.execute(
                "UPDATE tenants SET server = $3 WHERE workspace = $1 AND seq = $2",
                &[&ws, &t.seq, &to_name],
            )
            .await
            .map_err(db_err(&registry.location))
        }
        .await;
        if let Err(e) = placed {
            // The old copy serves again rather than nobody.
            let _ = s
                .execute(
                    "UPDATE tenants SET server = NULL WHERE workspace = $1 AND seq = $2",
                    &[&ws, &t.seq],
                )
                .await;
            return Err(e);
        }
    }
    report.pause_ms = paused.elapsed().as_secs_f64() * 1000.0;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(docs: &[(&str, i64)], sessions: &[(&str, i64)]) -> Versions {
        Versions {
            documents: docs.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            sessions: sessions.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn a_delta_names_what_changed_and_what_went() {
        let held = v(&[("MEMORY.md", 3), ("memory/a.md", 1)], &[("cli:a", 5)]);
        let now = v(
            &[("MEMORY.md", 4), ("memory/b.md", 1)],
            &[("cli:a", 5), ("cli:b", 1)],
        );
        let mut d = held.delta(&now);
        d.documents.sort();
        assert_eq!(d.documents, ["MEMORY.md", "memory/b.md"]);
        assert_eq!(d.documents_gone, ["memory/a.md"]);
        assert_eq!(d.sessions, ["cli:b"]);
        assert!(d.sessions_gone.is_empty());
        assert_eq!(d.len(), 4);
        assert_eq!(now.delta(&now).len(), 0);
    }
}
