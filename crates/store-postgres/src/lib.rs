//! Workspaces in PostgreSQL: the session logs and memory documents of many
//! workspaces as rows of one database, behind mnemo's [`Storage`] trait,
//! so [`SessionStore`](mnemo_store::SessionStore) and
//! [`MemoryStore`](mnemo_store::MemoryStore) work on them exactly as on a
//! workspace folder (both run `mnemo_test_support::conformance::storage`).
//!
//! - A session log is one row per JSONL line, `(workspace, session, seq)`,
//!   kept byte for byte: a replay gives exactly what the file would, and an
//!   export writes the same file. An append is one transaction that locks
//!   the session's row, so appenders in any number of processes and
//!   servers never interleave or take one sequence number; it is
//!   acknowledged once committed.
//! - A document is one row `(workspace, path)` with a version counter:
//!   a compare-and-swap write names the version it read and fails with
//!   [`Error::Conflict`] when another writer got there first. Appends
//!   (the history, daily logs, the audit log) concatenate in the server.
//! - The memory lock is a session advisory lock per workspace, on a
//!   connection of its own: the server frees it when the holder dies.
//!
//! - A tenant's storage ([`Database::registered`]) is bound to its
//!   registration: every statement checks it, a write holding the
//!   registration's row shared until it commits, and a delete takes that
//!   row first. A request still running when its workspace is deleted
//!   (and perhaps created again) writes nothing and reads nothing of the
//!   successor.
//!
//! Every table leads with the workspace id, so a distributed PostgreSQL
//! (Citus) can shard by it; [`Database::delete_workspace`] removes every
//! row a workspace owns.
//!
//! ```no_run
//! use mnemo_store::{MemoryStore, MemorySettings};
//! use mnemo_store_postgres::Database;
//!
//! let db = Database::connect("postgres://mnemo:secret@db.example/mnemo", "mnemo_store")?;
//! let storage = std::sync::Arc::new(db.workspace("alice")?);
//! let ws = mnemo_core::Workspace::new("/var/lib/mnemo/alice");
//! let memory = MemoryStore::with_storage(&ws, MemorySettings::default(), storage);
//! println!("{}", memory.read_memory_md()?);
//! # Ok::<(), mnemo_store::Error>(())
//! ```

mod moving;
mod placement;
mod schema;

pub use moving::MoveReport;
pub use placement::{valid_server_name, ServerEntry, HOME};

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use mnemo_postgres::{Pool, Pooled, Runtime};
use mnemo_store::session::{self, LoadedSession, Record, SessionInfo, SessionOptions};
use mnemo_store::{Document, Entry, Error, Expect, Held, Result, SessionWriter, Storage, Version};

/// What the paths of the engine's state documents begin with in the
/// `documents` table, where this storage keeps them ([`Storage::read_state`]'s
/// default): `.mnemo/`.
fn state_prefix() -> String {
    format!("{}/", mnemo_store::STATE_DIR)
}

/// Connections kept for statements, at most.
const POOL_SIZE: usize = 8;
/// Connections kept for held memory locks, at most (each holder has one
/// of its own, so waiting holders never starve the statements).
const LOCK_POOL_SIZE: usize = 64;

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One database holding workspaces, in one schema.
pub struct Database {
    rt: Runtime,
    pool: Arc<Pool>,
    locks: Arc<Pool>,
    schema: String,
    location: String,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("location", &self.location)
            .field("schema", &self.schema)
            .finish()
    }
}

/// The store's error for a failure at `location`.
fn failed(location: &str, message: impl Into<String>) -> Error {
    Error::Storage {
        location: location.to_string(),
        message: message.into(),
    }
}

/// A client error at `location`, with the server's words; a read of a
/// workspace's old copy (the fence raising [`schema::MOVED_SQLSTATE`]) is
/// the busy answer of [`moved`].
fn db_err(location: &str) -> impl Fn(tokio_postgres::Error) -> Error + '_ {
    move |e| match e.as_db_error() {
        Some(db) if db.code().code() == schema::MOVED_SQLSTATE => {
            moved(db.message(), db.detail().unwrap_or("another"))
        }
        _ => failed(location, mnemo_postgres::describe(&e)),
    }
}

impl Database {
    /// Connects to `url` and creates or migrates the store's tables in
    /// `schema`. Errors say what to fix: an unreachable server, a wrong
    /// URL, a schema written by a newer mnemo.
    pub fn connect(url: &str, schema: &str) -> Result<Arc<Database>> {
        if !mnemo_core::schema::valid_schema_name(schema) {
            return Err(Error::Invalid(format!(
                "{schema:?} cannot name the store's schema: use lower-case letters, digits and _"
            )));
        }
        let target = mnemo_postgres::Target::parse(url).map_err(|m| failed("postgres", m))?;
        let location = target.location().to_string();
        let rt = Runtime::start().map_err(|m| failed(&location, m))?;
        let setup = format!("SET search_path TO {schema}");
        let db = Arc::new(Database {
            rt,
            pool: Pool::new(target.clone(), setup.clone(), POOL_SIZE),
            locks: Pool::new(target, setup, LOCK_POOL_SIZE),
            schema: schema.to_string(),
            location,
        });
        let schema = db.schema.clone();
        let loc = db.location.clone();
        let pool = db.pool.clone();
        db.rt
            .run(async move {
                let p = pool.get().await.map_err(|m| failed(&loc, m))?;
                schema::migrate(&p.client, &schema, &loc).await?;
                pool.put(p);
                Ok::<_, Error>(())
            })
            .map_err(|s| failed(&db.location, s.to_string()))??;
        Ok(db)
    }

    /// Where the database is, without a password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The storage of workspace `id` (nothing is written until it is used).
    pub fn workspace(self: &Arc<Self>, id: &str) -> Result<PgStorage> {
        if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
            return Err(Error::Invalid(format!(
                "{id:?} cannot name a workspace: use 1 to 200 printable characters"
            )));
        }
        Ok(PgStorage {
            db: self.clone(),
            workspace: id.to_string(),
            registration: None,
        })
    }

    /// The storage of tenant `t`, bound to its registration: once the
    /// workspace is deleted, its writes fail with [`Error::NotFound`]
    /// and its reads find nothing, even after the id is registered again.
    pub fn registered(self: &Arc<Self>, t: &Tenant) -> Result<PgStorage> {
        let mut storage = self.workspace(&t.id)?;
        storage.registration = Some(t.seq);
        Ok(storage)
    }

    /// The workspaces that hold any row, by id.
    pub fn workspaces(&self) -> Result<Vec<String>> {
        self.call(|c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT workspace FROM documents UNION SELECT workspace FROM sessions \
                         ORDER BY 1",
                        &[],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(|r| r.get(0)).collect())
            })
        })
    }

    /// Removes every row workspace `id` owns (documents, sessions and their
    /// lines, its tenant registration) in one transaction; returns how
    /// many rows went.
    pub fn delete_workspace(&self, id: &str) -> Result<u64> {
        self.delete_rows(id, false)
    }

    /// Removes the rows of workspace `id` unless it is registered as a
    /// tenant (checked in the same transaction): what a request already
    /// under way wrote after the workspace was deleted. Returns how many
    /// rows went.
    pub fn delete_unregistered(&self, id: &str) -> Result<u64> {
        self.delete_rows(id, true)
    }

    /// Every row of `id`, in one transaction; none when `unless_registered`
    /// and the workspace is a registered tenant.
    fn delete_rows(&self, id: &str, unless_registered: bool) -> Result<u64> {
        let id = id.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                c.batch_execute("BEGIN").await.map_err(db_err(&loc))?;
                if !unless_registered {
                    // The registration's row lock first: a write of the
                    // workspace holds it shared for its statement or
                    // transaction, so one under way commits before the
                    // rows below are deleted (and goes with them), and
                    // one that comes later finds the registration gone.
                    c.execute(
                        "SELECT 1 FROM tenants WHERE workspace = $1 FOR UPDATE",
                        &[&id],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                }
                let keep = unless_registered
                    && c.query_opt(
                        "SELECT 1 FROM tenants WHERE workspace = $1 FOR SHARE",
                        &[&id],
                    )
                    .await
                    .map_err(db_err(&loc))?
                    .is_some();
                let mut n = 0;
                if !keep {
                    for table in schema::TABLES {
                        n += c
                            .execute(&format!("DELETE FROM {table} WHERE workspace = $1"), &[&id])
                            .await
                            .map_err(db_err(&loc))?;
                    }
                }
                c.batch_execute("COMMIT").await.map_err(db_err(&loc))?;
                Ok(n)
            })
        })
    }

    /// Registers workspace `id` as a tenant whose token hashes to
    /// `token_sha256`, its rows in this database; `None` when it is
    /// registered already.
    pub fn register(&self, id: &str, token_sha256: &[u8]) -> Result<Option<Tenant>> {
        self.register_on(id, token_sha256, None)
    }

    /// Registers workspace `id` with its rows on the database server
    /// `server` of [`Database::servers`] (`None`: this database), which
    /// must then [`adopt`](Database::adopt) it before it is used.
    pub fn register_on(
        &self,
        id: &str,
        token_sha256: &[u8],
        server: Option<&str>,
    ) -> Result<Option<Tenant>> {
        let (id, hash, server) = (
            id.to_string(),
            token_sha256.to_vec(),
            server.map(str::to_string),
        );
        self.call(move |c, loc| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        &format!(
                            "INSERT INTO tenants (workspace, token_sha256, server) \
                             VALUES ($1, $2, $3) ON CONFLICT (workspace) DO NOTHING \
                             RETURNING {TENANT_COLUMNS}"
                        ),
                        &[&id, &hash, &server],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(row.map(|r| tenant_of(&r)))
            })
        })
    }

    /// The registered tenant `id`, if there is one.
    pub fn tenant(&self, id: &str) -> Result<Option<Tenant>> {
        let id = id.to_string();
        self.call(move |c, loc| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        &format!("SELECT {TENANT_COLUMNS} FROM tenants WHERE workspace = $1"),
                        &[&id],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(row.map(|r| tenant_of(&r)))
            })
        })
    }

    /// Every registered tenant, by id.
    pub fn tenants(&self) -> Result<Vec<Tenant>> {
        self.call(|c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!("SELECT {TENANT_COLUMNS} FROM tenants ORDER BY 1"),
                        &[],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(tenant_of).collect())
            })
        })
    }

    /// The tables of the store, qualified by its schema, for a caller
    /// that must prove a workspace left no row behind.
    pub fn tables(&self) -> Vec<String> {
        schema::TABLES
            .iter()
            .map(|t| format!("{}.{t}", self.schema))
            .collect()
    }

    /// The schema the store's tables are in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Runs `f` on a pooled connection and waits for it. The connection
    /// goes back to the pool after a success only: after an error it may
    /// be broken or inside an aborted transaction.
    fn call<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c Pooled, String) -> BoxFuture<'c, Result<T>> + Send + 'static,
    {
        let pool = self.pool.clone();
        let loc = self.location.clone();
        self.rt
            .run(async move {
                let p = pool.get().await.map_err(|m| failed(&loc, m))?;
                let result = f(&p, loc).await;
                if result.is_ok() {
                    pool.put(p);
                }
                result
            })
            .map_err(|s| failed(&self.location, s.to_string()))?
    }
}

/// A workspace registered as a tenant of a multi-tenant server: its
/// token's SHA-256 (the token itself is never stored) and a number the
/// database gave it, unique for ever, which names the tenant's other
/// parts (its index schema) so that a workspace deleted and created
/// again under the same id shares nothing with its predecessor.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// The workspace id.
    pub id: String,
    /// SHA-256 of the workspace's token.
    pub token_sha256: Vec<u8>,
    /// The database's number for this registration.
    pub seq: i64,
    /// When it was registered.
    pub created: DateTime<Utc>,
    /// The database server its rows are on, by the name the registry
    /// lists it under ([`Database::servers`]); `None`: this database.
    pub server: Option<String>,
}

/// The columns [`tenant_of`] reads, in order.
const TENANT_COLUMNS: &str = "workspace, token_sha256, seq, created, server";

fn tenant_of(r: &tokio_postgres::Row) -> Tenant {
    Tenant {
        id: r.get(0),
        token_sha256: r.get(1),
        seq: r.get(2),
        created: r.get(3),
        server: r.get(4),
    }
}

/// One workspace's rows in a [`Database`], as [`Storage`].
#[derive(Debug, Clone)]
pub struct PgStorage {
    db: Arc<Database>,
    workspace: String,
    /// The tenant registration this storage was opened for
    /// ([`Database::registered`]): every statement then touches the rows
    /// only while the id is registered under this number, so a request
    /// still running when its workspace is deleted (and perhaps created
    /// again) writes nothing and reads nothing of the successor.
    registration: Option<i64>,
}

impl PgStorage {
    /// Takes the workspace's advisory lock `name` on a connection of its
    /// own (waiting for it with `wait`; else `None` when it is held).
    fn advisory_lock(&self, name: &str, wait: bool) -> Result<Option<Held>> {
        // A registration's locks are its own: a request of a deleted
        // workspace never holds up its successor's.
        let key = match self.registration {
            Some(seq) => mnemo_postgres::lock_key(&[
                &self.db.schema,
                &self.workspace,
                &seq.to_string(),
                name,
            ]),
            None => mnemo_postgres::lock_key(&[&self.db.schema, &self.workspace, name]),
        };
        let locks = self.db.locks.clone();
        let loc = self.db.location.clone();
        let conn = self
            .db
            .rt
            .run(async move {
                let p = locks.get().await.map_err(|m| failed(&loc, m))?;
                // One round trip each, nothing prepared (`key` is a
                // number). The wait lasts as long as the holder's work (a
                // consolidation's model call): no statement timeout. The
                // lock is the session's and outlives the commit.
                let got = if wait {
                    p.client
                        .batch_execute(&mnemo_postgres::session_lock(key))
                        .await
                        .map_err(db_err(&loc))?;
                    true
                } else {
                    let row = mnemo_postgres::simple_row(
                        &p.client,
                        &format!("SELECT pg_try_advisory_lock({key})"),
                    )
                    .await
                    .map_err(db_err(&loc))?;
                    row.and_then(|r| r.into_iter().next().flatten()).as_deref() == Some("t")
                };
                if got {
                    Ok::<_, Error>(Some(p))
                } else {
                    locks.put(p);
                    Ok(None)
                }
            })
            .map_err(|s| failed(&self.db.location, s.to_string()))??;
        Ok(conn.map(|conn| {
            Held::new(AdvisoryLock {
                db: self.db.clone(),
                conn: Some(conn),
                key,
            })
        }))
    }

    /// The workspace id.
    pub fn id(&self) -> &str {
        &self.workspace
    }

    /// The database.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// The file stem the log of `key` has (or would get): the file's when
    /// the key's own stem is not taken by another key of the workspace.
    async fn stem(c: &Pooled, loc: &str, ws: &str, key: &str) -> Result<String> {
        if let Some(row) = c
            .query_opt(
                "SELECT stem FROM sessions WHERE workspace = $1 AND key = $2",
                &[&ws, &key],
            )
            .await
            .map_err(db_err(loc))?
        {
            return Ok(row.get(0));
        }
        let stem = session::file_stem(key)?;
        let taken = c
            .query_opt(
                "SELECT 1 FROM sessions WHERE workspace = $1 AND stem = $2",
                &[&ws, &stem],
            )
            .await
            .map_err(db_err(loc))?
            .is_some();
        if taken {
            session::disambiguated_stem(key)
        } else {
            Ok(stem)
        }
    }
}

/// The condition that keeps a read of workspace `$1` to the registration
/// `$n` (always true for a storage opened without one, `$n` NULL): false
/// once the workspace is deleted, and the statement fails with [`moved`]
/// once it moved to another server (`held_here`, evaluated once per
/// statement).
fn registered(n: u8) -> String {
    format!("(${n}::bigint IS NULL OR (SELECT held_here($1, ${n})))")
}

/// The head of a write of workspace `$1`: a CTE `reg` that holds the row
/// of registration `$n` shared until the statement commits (a delete
/// takes it exclusively first, see [`Database::delete_workspace`]).
fn hold_registration(n: u8) -> String {
    format!(
        "WITH reg AS (SELECT 1 FROM tenants \
         WHERE ${n}::bigint IS NOT NULL AND workspace = $1 AND seq = ${n} AND server IS NULL \
         FOR KEY SHARE) "
    )
}

/// The condition of a write headed by [`hold_registration`]`(n)`.
fn held(n: u8) -> String {
    format!("(${n}::bigint IS NULL OR EXISTS (SELECT 1 FROM reg))")
}

/// Where a registration stands in this database.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Standing {
    /// Registered, and its rows are here (or the storage has no registration).
    Here,
    /// Moved to the database server named (its rows here are an old copy).
    Moved(String),
    /// Not registered any more: the workspace was deleted.
    Gone,
}

/// Where workspace `ws`'s `registration` stands.
async fn standing(c: &Pooled, loc: &str, ws: &str, registration: Option<i64>) -> Result<Standing> {
    let Some(seq) = registration else {
        return Ok(Standing::Here);
    };
    let row = c
        .query_opt(
            "SELECT server FROM tenants WHERE workspace = $1 AND seq = $2",
            &[&ws, &seq],
        )
        .await
        .map_err(db_err(loc))?;
    Ok(match row.map(|r| r.get::<_, Option<String>>(0)) {
        None => Standing::Gone,
        Some(None) => Standing::Here,
        Some(Some(server)) => Standing::Moved(server),
    })
}

/// Ok while registration `registration` of `ws` is here; else the error of
/// a write that found it deleted or moved to another server (nothing was
/// written either way).
async fn here(c: &Pooled, loc: &str, ws: &str, registration: Option<i64>) -> Result<()> {
    match standing(c, loc, ws, registration).await? {
        Standing::Here => Ok(()),
        Standing::Moved(to) => Err(moved(ws, &to)),
        Standing::Gone => Err(deleted(ws)),
    }
}

/// Refuses a session key PostgreSQL's `text` cannot hold (a NUL), as a
/// bad key rather than a failure of the database.
fn storable_key(key: &str) -> Result<()> {
    if key.contains('\0') {
        return Err(Error::BadKey {
            key: key.to_string(),
            reason: "a NUL character cannot be stored in the database; leave it out",
        });
    }
    Ok(())
}

/// The error of a request that reached a workspace's old copy after it
/// moved to another database server. A busy answer: the same request,
/// sent again, is served from the new copy.
fn moved(ws: &str, to: &str) -> Error {
    Error::Conflict(format!(
        "the workspace {ws:?} moved to the database server {to:?} while this request ran; \
         nothing was read or written here: send the request again"
    ))
}

/// The error of a write whose workspace was deleted while it ran.
fn deleted(ws: &str) -> Error {
    Error::NotFound(format!(
        "the workspace {ws:?} was deleted while this request ran; nothing was written \
         (a workspace created again under its id starts empty and has a new token)"
    ))
}

fn version(v: i64) -> Version {
    Version(v.to_string())
}

fn text_of(rel: &str, body: Vec<u8>) -> Result<String> {
    String::from_utf8(body).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes().iter().take(valid).filter(|b| **b == b'\n').count() + 1;
        Error::Corrupt {
            path: PathBuf::from(rel),
            line,
            message: format!(
                "invalid UTF-8 at byte {valid}: the document was left unchanged; write it again as UTF-8"
            ),
        }
    })
}

impl Storage for PgStorage {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn location(&self) -> String {
        format!(
            "{} (schema {}, workspace {})",
            self.db.location, self.db.schema, self.workspace
        )
    }

    fn read(&self, rel: &str) -> Result<Option<Document>> {
        let (ws, rel, reg) = (self.workspace.clone(), rel.to_string(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        &format!(
                            "SELECT body, version FROM documents WHERE workspace = $1 AND path = $2 \
                             AND {}",
                            registered(3)
                        ),
                        &[&ws, &rel, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                row.map(|r| {
                    Ok(Document {
                        text: text_of(&rel, r.get(0))?,
                        version: version(r.get(1)),
                    })
                })
                .transpose()
            })
        })
    }

    fn read_head(&self, rel: &str, max: usize) -> Result<Option<Vec<u8>>> {
        let (ws, rel, reg) = (self.workspace.clone(), rel.to_string(), self.registration);
        let max = i32::try_from(max).unwrap_or(i32::MAX);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        &format!(
                            "SELECT substring(body FROM 1 FOR $3) FROM documents \
                             WHERE workspace = $1 AND path = $2 AND {}",
                            registered(4)
                        ),
                        &[&ws, &rel, &max, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(row.map(|r| r.get(0)))
            })
        })
    }

    fn write(&self, rel: &str, text: &str, expect: Expect) -> Result<Version> {
        let (ws, rel, body, reg) = (
            self.workspace.clone(),
            rel.to_string(),
            text.as_bytes().to_vec(),
            self.registration,
        );
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let (head, held) = (hold_registration(4), held(4));
                let row = match &expect {
                    Expect::Any => {
                        c.query_opt(
                            &format!(
                                "{head}INSERT INTO documents (workspace, path, body, version) \
                                 SELECT $1, $2, $3, 1 WHERE {held} \
                                 ON CONFLICT (workspace, path) DO UPDATE \
                                 SET body = EXCLUDED.body, version = documents.version + 1, \
                                 modified = now() RETURNING version"
                            ),
                            &[&ws, &rel, &body, &reg],
                        )
                        .await
                    }
                    Expect::Absent => {
                        c.query_opt(
                            &format!(
                                "{head}INSERT INTO documents (workspace, path, body, version) \
                                 SELECT $1, $2, $3, 1 WHERE {held} \
                                 ON CONFLICT (workspace, path) DO NOTHING RETURNING version"
                            ),
                            &[&ws, &rel, &body, &reg],
                        )
                        .await
                    }
                    Expect::Version(v) => {
                        let Ok(v) = v.0.parse::<i64>() else {
                            return Err(Error::Conflict(format!(
                                "{rel}: version {v} was not read from this database"
                            )));
                        };
                        c.query_opt(
                            &format!(
                                "{head}UPDATE documents SET body = $3, version = version + 1, \
                                 modified = now() \
                                 WHERE workspace = $1 AND path = $2 AND version = $5 AND {held} \
                                 RETURNING version"
                            ),
                            &[&ws, &rel, &body, &reg, &v],
                        )
                        .await
                    }
                }
                .map_err(db_err(&loc))?;
                match row {
                    Some(r) => Ok(version(r.get(0))),
                    None => {
                        here(c, &loc, &ws, reg).await?;
                        Err(Error::Conflict(if expect == Expect::Absent {
                            format!("{rel} already exists; nothing was written")
                        } else {
                            format!(
                                "{rel} changed since it was read; nothing was written: read it again"
                            )
                        }))
                    }
                }
            })
        })
    }

    fn append(&self, rel: &str, text: &str) -> Result<()> {
        let (ws, rel, body, reg) = (
            self.workspace.clone(),
            rel.to_string(),
            text.as_bytes().to_vec(),
            self.registration,
        );
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let n = c
                    .execute(
                        &format!(
                            "{}INSERT INTO documents (workspace, path, body, version) \
                             SELECT $1, $2, $3, 1 WHERE {} \
                             ON CONFLICT (workspace, path) DO UPDATE \
                             SET body = documents.body || EXCLUDED.body, \
                             version = documents.version + 1, modified = now()",
                            hold_registration(4),
                            held(4)
                        ),
                        &[&ws, &rel, &body, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                // An insert-or-update writes a row whenever the
                // registration holds.
                if n == 0 {
                    here(c, &loc, &ws, reg).await?;
                    return Err(deleted(&ws));
                }
                Ok(())
            })
        })
    }

    fn remove(&self, rel: &str) -> Result<bool> {
        let (ws, rel, reg) = (self.workspace.clone(), rel.to_string(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let n = c
                    .execute(
                        &format!(
                            "{}DELETE FROM documents WHERE workspace = $1 AND path = $2 AND {}",
                            hold_registration(3),
                            held(3)
                        ),
                        &[&ws, &rel, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                if n == 0 {
                    here(c, &loc, &ws, reg).await?;
                }
                Ok(n > 0)
            })
        })
    }

    fn exists(&self, rel: &str) -> Result<bool> {
        let (ws, rel, reg) = (self.workspace.clone(), rel.to_string(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                Ok(c.query_opt(
                    &format!(
                        "SELECT 1 FROM documents WHERE workspace = $1 AND path = $2 AND {}",
                        registered(3)
                    ),
                    &[&ws, &rel, &reg],
                )
                .await
                .map_err(db_err(&loc))?
                .is_some())
            })
        })
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let (ws, prefix, reg) = (
            self.workspace.clone(),
            format!("{}/", dir.trim_end_matches('/')),
            self.registration,
        );
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!(
                            "SELECT path, modified, octet_length(body)::bigint FROM documents \
                             WHERE workspace = $1 AND starts_with(path, $2) \
                             AND right(path, 3) = '.md' AND {} ORDER BY path",
                            registered(3)
                        ),
                        &[&ws, &prefix, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(entry).collect())
            })
        })
    }

    fn documents(&self) -> Result<Vec<Entry>> {
        let (ws, reg, state) = (self.workspace.clone(), self.registration, state_prefix());
        self.db.call(move |c, loc| {
            Box::pin(async move {
                // The engine's state documents (`.mnemo/…`, kept in this
                // table by `read_state`/`write_state`) are not memory: an
                // export, the index and a copy see what a folder's
                // `documents` lists, which leaves `.mnemo/` out too.
                let rows = c
                    .query(
                        &format!(
                            "SELECT path, modified, octet_length(body)::bigint FROM documents \
                             WHERE workspace = $1 AND NOT starts_with(path, $3) AND {} \
                             ORDER BY path",
                            registered(2)
                        ),
                        &[&ws, &reg, &state],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(entry).collect())
            })
        })
    }

    fn lock_memory(&self) -> Result<Held> {
        self.advisory_lock("memory", true)?.ok_or_else(|| {
            failed(
                &self.db.location,
                "the memory lock was not granted (a bug: see the log)",
            )
        })
    }

    fn try_lock(&self, name: &str) -> Result<Option<Held>> {
        self.advisory_lock(name, false)
    }

    fn lock_location(&self, name: &str) -> String {
        format!("the advisory lock {name:?} of {}", self.location())
    }

    fn session_rel(&self, key: &str) -> Result<String> {
        storable_key(key)?;
        let (ws, key) = (self.workspace.clone(), key.to_string());
        self.db.call(move |c, loc| {
            Box::pin(async move {
                Ok(format!(
                    "sessions/{}.jsonl",
                    Self::stem(c, &loc, &ws, &key).await?
                ))
            })
        })
    }

    fn open_session(&self, key: &str, _options: &SessionOptions) -> Result<Box<dyn SessionWriter>> {
        Ok(Box::new(PgSession {
            location: PathBuf::from(self.session_rel(key)?),
            storage: self.clone(),
            key: key.to_string(),
        }))
    }

    fn session_exists(&self, key: &str) -> Result<bool> {
        storable_key(key)?;
        let (ws, key, reg) = (self.workspace.clone(), key.to_string(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                Ok(c.query_opt(
                    &format!(
                        "SELECT 1 FROM sessions WHERE workspace = $1 AND key = $2 AND lines > 0 \
                         AND {}",
                        registered(3)
                    ),
                    &[&ws, &key, &reg],
                )
                .await
                .map_err(db_err(&loc))?
                .is_some())
            })
        })
    }

    fn load_session(&self, key: &str) -> Result<Option<LoadedSession>> {
        storable_key(key)?;
        let (ws, key, reg) = (self.workspace.clone(), key.to_string(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let Some(row) = c
                    .query_opt(
                        &format!(
                            "SELECT stem FROM sessions WHERE workspace = $1 AND key = $2 AND {}",
                            registered(3)
                        ),
                        &[&ws, &key, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?
                else {
                    return Ok(None);
                };
                let stem: String = row.get(0);
                let rows = c
                    .query(
                        &format!(
                            "SELECT line FROM session_lines WHERE workspace = $1 AND key = $2 \
                             AND {} ORDER BY seq",
                            registered(3)
                        ),
                        &[&ws, &key, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                let path = PathBuf::from(format!("sessions/{stem}.jsonl"));
                Ok(log_bytes(&rows).map(|bytes| session::parse_session_bytes(&path, &bytes)))
            })
        })
    }

    fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let (ws, reg) = (self.workspace.clone(), self.registration);
        let rows: Vec<(String, String, DateTime<Utc>)> = self.db.call(move |c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!(
                            "SELECT key, stem, updated FROM sessions WHERE workspace = $1 AND {}",
                            registered(2)
                        ),
                        &[&ws, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect())
            })
        })?;
        let mut out = Vec::new();
        for (key, stem, updated) in rows {
            let Some(loaded) = self.load_session(&key)? else {
                continue;
            };
            out.push(SessionInfo {
                key: loaded.meta.key.clone(),
                file: format!("sessions/{stem}.jsonl"),
                created_at: loaded.meta.created_at.clone(),
                updated_at: DateTime::<chrono::Local>::from(updated)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
                messages: loaded.messages.len(),
                last_consolidated: loaded.meta.last_consolidated,
            });
        }
        session::sort_sessions(&mut out);
        Ok(out)
    }

    fn session_files(&self) -> Result<Vec<Entry>> {
        let (ws, reg) = (self.workspace.clone(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!(
                            "SELECT 'sessions/' || stem || '.jsonl', updated, bytes FROM sessions \
                             WHERE workspace = $1 AND lines > 0 AND {} ORDER BY 1",
                            registered(2)
                        ),
                        &[&ws, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(rows.iter().map(entry).collect())
            })
        })
    }

    fn read_session_file(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        let Some(stem) = rel
            .strip_prefix("sessions/")
            .and_then(|n| n.strip_suffix(".jsonl"))
            .map(str::to_string)
        else {
            return Ok(None);
        };
        let (ws, reg) = (self.workspace.clone(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                let rows = c
                    .query(
                        &format!(
                            "SELECT l.line FROM session_lines l JOIN sessions s \
                             ON s.workspace = l.workspace AND s.key = l.key \
                             WHERE s.workspace = $1 AND s.stem = $2 AND {} ORDER BY l.seq",
                            registered(3)
                        ),
                        &[&ws, &stem, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(log_bytes(&rows))
            })
        })
    }

    fn revision(&self) -> Result<Option<String>> {
        let (ws, state, reg) = (self.workspace.clone(), state_prefix(), self.registration);
        self.db.call(move |c, loc| {
            Box::pin(async move {
                // Every write adds to a version, an insert or a delete moves
                // a count, and the times move on: a change shows in one.
                // State documents (`.mnemo/…`) are left out, as `documents`
                // leaves them out: the engine writes them every turn, and
                // the index must not look for changes each time. The last
                // column is the fence alone: an old copy's revision would
                // have the index follow rows no longer the workspace's.
                let row = c
                    .query_one(
                        &format!("SELECT (SELECT count(*)::text || ':' || COALESCE(sum(version), 0)::text || ':' \
                                 || COALESCE(max(modified)::text, '') FROM documents \
                                 WHERE workspace = $1 AND NOT starts_with(path, $2)), \
                                (SELECT count(*)::text || ':' || COALESCE(sum(version), 0)::text || ':' \
                                 || COALESCE(max(updated)::text, '') FROM sessions WHERE workspace = $1), \
                                {}",
                        registered(3)),
                        &[&ws, &state, &reg],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                Ok(Some(format!("{}/{}", row.get::<_, String>(0), row.get::<_, String>(1))))
            })
        })
    }
}

/// A session log's bytes from its rows of lines, in order (`None`: no line).
fn log_bytes(rows: &[tokio_postgres::Row]) -> Option<Vec<u8>> {
    if rows.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    for r in rows {
        bytes.extend_from_slice(r.get::<_, &[u8]>(0));
        bytes.push(b'\n');
    }
    Some(bytes)
}

/// An [`Entry`] from a row of (path, time, size).
fn entry(r: &tokio_postgres::Row) -> Entry {
    Entry {
        rel: r.get(0),
        modified: r.get::<_, DateTime<Utc>>(1),
        len: u64::try_from(r.get::<_, i64>(2)).unwrap_or(0),
    }
}

/// A held lock: the connection that holds the advisory lock.
struct AdvisoryLock {
    db: Arc<Database>,
    conn: Option<Pooled>,
    key: i64,
}

impl Drop for AdvisoryLock {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let (locks, key) = (self.db.locks.clone(), self.key);
        // An unlock that fails closes the connection instead, and the
        // server frees the lock with it.
        let _ = self.db.rt.run(async move {
            if conn
                .client
                .batch_execute(&format!("SELECT pg_advisory_unlock({key})"))
                .await
                .is_ok()
            {
                locks.put(conn);
            }
        });
    }
}

/// The open log of one session in the database.
#[derive(Debug)]
struct PgSession {
    storage: PgStorage,
    key: String,
    location: PathBuf,
}

impl PgSession {
    /// Runs `edit` in a transaction holding the session's row lock (the
    /// row is made first when the session is new), with the lines so far
    /// counted.
    fn locked<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c Pooled, String, String, String, i64) -> BoxFuture<'c, Result<T>>
            + Send
            + 'static,
    {
        let (ws, key) = (self.storage.workspace.clone(), self.key.clone());
        let reg = self.storage.registration;
        self.storage.db.call(move |c, loc| {
            Box::pin(async move {
                c.batch_execute("BEGIN").await.map_err(db_err(&loc))?;
                if let Some(seq) = reg {
                    // Held until the commit: a delete waits for this
                    // append, or this append finds the workspace gone.
                    let live = c
                        .query_opt(
                            "SELECT 1 FROM tenants WHERE workspace = $1 AND seq = $2 \
                             AND server IS NULL FOR KEY SHARE",
                            &[&ws, &seq],
                        )
                        .await
                        .map_err(db_err(&loc))?;
                    if live.is_none() {
                        let _ = c.batch_execute("ROLLBACK").await;
                        here(c, &loc, &ws, reg).await?;
                        return Err(deleted(&ws));
                    }
                }
                const LINES: &str =
                    "SELECT lines FROM sessions WHERE workspace = $1 AND key = $2 FOR UPDATE";
                let held = c
                    .query_opt(LINES, &[&ws, &key])
                    .await
                    .map_err(db_err(&loc))?;
                // A new session's row is made first (its stem looked up
                // only then: an append to a session that exists is one
                // statement shorter).
                let lines: i64 = match held {
                    Some(row) => row.get(0),
                    None => {
                        let stem = PgStorage::stem(c, &loc, &ws, &key).await?;
                        c.execute(
                            "INSERT INTO sessions (workspace, key, stem) VALUES ($1, $2, $3) \
                             ON CONFLICT (workspace, key) DO NOTHING",
                            &[&ws, &key, &stem],
                        )
                        .await
                        .map_err(db_err(&loc))?;
                        c.query_one(LINES, &[&ws, &key])
                            .await
                            .map_err(db_err(&loc))?
                            .get(0)
                    }
                };
                let out = f(c, loc.clone(), ws, key, lines).await?;
                c.batch_execute("COMMIT").await.map_err(db_err(&loc))?;
                Ok(out)
            })
        })
    }
}

impl SessionWriter for PgSession {
    fn location(&self) -> &Path {
        &self.location
    }

    fn append_lines(&mut self, lines: &[u8], _force_sync: bool) -> Result<()> {
        let mut new: Vec<Vec<u8>> = lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let first = session::first_record_line(&self.key)?;
        let opening = new.first().cloned().unwrap_or_default();
        // A commit is durable (synchronous_commit): the fsync policy is the
        // server's.
        self.locked(move |c, loc, ws, key, count| {
            Box::pin(async move {
                if count == 0 && !session::opens_with_metadata(&opening) {
                    let mut head = first;
                    head.pop();
                    new.insert(0, head);
                }
                let next: i64 = c
                    .query_one(
                        "SELECT COALESCE(max(seq), 0) + 1 FROM session_lines \
                         WHERE workspace = $1 AND key = $2",
                        &[&ws, &key],
                    )
                    .await
                    .map_err(db_err(&loc))?
                    .get(0);
                let n = i64::try_from(new.len()).unwrap_or(i64::MAX);
                let bytes: i64 = new.iter().map(|l| l.len() as i64 + 1).sum();
                let seqs: Vec<i64> = (next..next + n).collect();
                c.execute(
                    "INSERT INTO session_lines (workspace, key, seq, line) \
                     SELECT $1, $2, s, l FROM unnest($3::bigint[], $4::bytea[]) AS t(s, l)",
                    &[&ws, &key, &seqs, &new],
                )
                .await
                .map_err(db_err(&loc))?;
                c.execute(
                    "UPDATE sessions SET lines = lines + $3, bytes = bytes + $4, \
                     version = version + 1, updated = now() WHERE workspace = $1 AND key = $2",
                    &[&ws, &key, &n, &bytes],
                )
                .await
                .map_err(db_err(&loc))?;
                Ok(())
            })
        })
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn fold(&mut self) -> Result<()> {
        self.locked(move |c, loc, ws, key, _| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT seq, line FROM session_lines WHERE workspace = $1 AND key = $2 \
                         ORDER BY seq",
                        &[&ws, &key],
                    )
                    .await
                    .map_err(db_err(&loc))?;
                let Some(first) = rows.first().map(|r| r.get::<_, i64>(0)) else {
                    return Ok(());
                };
                let meta: Vec<(i64, Vec<u8>)> = rows
                    .iter()
                    .map(|r| (r.get::<_, i64>(0), r.get::<_, Vec<u8>>(1)))
                    .filter(|(_, l)| {
                        std::str::from_utf8(l)
                            .is_ok_and(|l| matches!(Record::parse(l), Ok(Record::Metadata(_))))
                    })
                    .collect();
                let Some((_, last)) = meta.last().cloned() else {
                    return Ok(());
                };
                if meta.len() == 1 && meta.first().is_some_and(|(s, _)| *s == first) {
                    return Ok(());
                }
                // The last metadata record wins: it goes to the top, the
                // others go; messages and other records keep their lines.
                let seqs: Vec<i64> = meta.iter().map(|(s, _)| *s).collect();
                c.execute(
                    "DELETE FROM session_lines WHERE workspace = $1 AND key = $2 AND seq = ANY($3)",
                    &[&ws, &key, &seqs],
                )
                .await
                .map_err(db_err(&loc))?;
                c.execute(
                    "INSERT INTO session_lines (workspace, key, seq, line) VALUES ($1, $2, $3, $4)",
                    &[&ws, &key, &(first - 1), &last],
                )
                .await
                .map_err(db_err(&loc))?;
                let n = i64::try_from(seqs.len()).unwrap_or(0) - 1;
                let gone: i64 = meta.iter().map(|(_, l)| l.len() as i64 + 1).sum::<i64>()
                    - (last.len() as i64 + 1);
                c.execute(
                    "UPDATE sessions SET lines = lines - $3, bytes = bytes - $4, \
                     version = version + 1, updated = now() WHERE workspace = $1 AND key = $2",
                    &[&ws, &key, &n, &gone],
                )
                .await
                .map_err(db_err(&loc))?;
                Ok(())
            })
        })
    }
}
