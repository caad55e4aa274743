//! The bridge between the synchronous [`IndexBackend`] trait and the async
//! `tokio-postgres` client: mnemo-postgres's runtime, shared by every index
//! of the process, owns the connections (a small pool), callers hand it a
//! future and wait on a standard channel for the answer.
//!
//! Why not the blocking `postgres` crate: it runs its own runtime with
//! `block_on`, which panics when called from inside a tokio runtime (the
//! servers and `mnemo chat` call the index from async code). Spawning onto
//! another runtime's handle and waiting on a `std::sync::mpsc` channel is
//! safe from any thread, async or not; like a SQLite call, it blocks the
//! calling thread for the statement's time.
//!
//! [`IndexBackend`]: mnemo_index::IndexBackend

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use mnemo_index::{DbFailure, IndexError};
use mnemo_postgres::Target;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

/// Connections a backend keeps open at most.
const POOL_SIZE: usize = 4;

/// mnemo-postgres's runtime, shared by every index of the process, with
/// its answers as the index's errors.
#[derive(Clone)]
pub(crate) struct Runtime(Arc<mnemo_postgres::Runtime>);

impl Runtime {
    /// The process's shared runtime ([`mnemo_postgres::Runtime::shared`]).
    pub(crate) fn shared() -> Result<Runtime, String> {
        mnemo_postgres::Runtime::shared().map(Runtime)
    }

    /// Runs `fut` on the runtime and waits for its result.
    pub(crate) fn run<T, F>(&self, fut: F) -> Result<T, IndexError>
    where
        F: Future<Output = Result<T, IndexError>> + Send + 'static,
        T: Send + 'static,
    {
        self.0
            .run(fut)
            .map_err(|stopped| IndexError::database("postgres", stopped.to_string()))?
    }
}

/// Idle connections this process keeps to one database, for all its
/// indexes together: a server of many workspaces (one index schema each)
/// would otherwise hold a few connections per workspace it ever served.
/// Enough for a busy server's requests at once: a connection closed for
/// want of room is one the next request opens again, and a new
/// PostgreSQL session costs the server a process.
const IDLE_MAX: usize = 32;

/// An idle connection, the `search_path` it has set and its HNSW search
/// breadth.
struct Idle {
    client: Client,
    statements: Statements,
    search_path: String,
    ef_search: Option<i64>,
}

type Shared = Arc<Mutex<Vec<Idle>>>;

/// The idle connections made with `target`'s settings, shared by every
/// pool of this process. Keyed by all the settings, not the location
/// alone: two URLs of one database may differ in what their sessions
/// allow (`options=-c default_transaction_read_only=on`), and a pool that
/// takes any connection as it is must get one made like its own.
fn shared_idle(target: &Target) -> Shared {
    static ALL: std::sync::OnceLock<Mutex<HashMap<String, Shared>>> = std::sync::OnceLock::new();
    // The client's `Debug` of its settings leaves the password out; the
    // TLS checks are part of the key, so a connection made under
    // `verify-ca` never serves a target that asks for `verify-full`.
    let key = target.key();
    ALL.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(key)
        .or_default()
        .clone()
}

/// The connections of one index: at most [`POOL_SIZE`] out at once, each
/// with the index's `search_path` set, taken from and given back to the
/// idle connections every index of this process shares.
pub(crate) struct Pool {
    config: Target,
    /// The URL without its password, for messages.
    pub(crate) location: String,
    /// `None` for a pool whose statements name their schema: it takes any
    /// idle connection as it is.
    search_path: Option<String>,
    idle: Shared,
    permits: Arc<Semaphore>,
}

impl Pool {
    pub(crate) fn new(config: Target, location: String, search_path: String) -> Pool {
        Pool {
            idle: shared_idle(&config),
            config,
            location,
            search_path: Some(search_path),
            permits: Arc::new(Semaphore::new(POOL_SIZE)),
        }
    }

    /// A pool for statements that name their schema (an index's store:
    /// its generations, its lock). Its connections keep the `search_path`
    /// and prepared statements they had: a search asks the store for the
    /// live generation, then its backend for the rest, and a store pool
    /// with a path of its own would set the path back and forth on one
    /// connection, each time dropping the backend's prepared statements
    /// (23 writes to the server per search instead of 9:
    /// docs/BENCHMARKS-LOG.md item 58).
    pub(crate) fn any_path(config: Target, location: String) -> Pool {
        Pool {
            idle: shared_idle(&config),
            config,
            location,
            search_path: None,
            permits: Arc::new(Semaphore::new(POOL_SIZE)),
        }
    }

    /// A connection: an idle one, or a new one while fewer than
    /// [`POOL_SIZE`] are out.
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Pooled, IndexError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| self.error("the connection pool was closed"))?;
        let idle = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.retain(|i| !i.client.is_closed());
            // One of this index's own first: its statements are prepared.
            let at = self
                .search_path
                .as_ref()
                .and_then(|p| idle.iter().rposition(|i| i.search_path == *p))
                .or_else(|| idle.len().checked_sub(1));
            at.map(|at| idle.swap_remove(at))
        };
        let wanted = self.search_path.as_ref();
        let (client, statements, search_path, ef_search) = match idle {
            Some(i) if wanted.is_none_or(|p| *p == i.search_path) => {
                (i.client, i.statements, i.search_path, i.ef_search)
            }
            Some(i) => {
                // Another index's. Its prepared statements serve this one
                // too: PostgreSQL parses a prepared statement again when
                // the search_path changed since its last use, on the
                // server, without the round trip a new PREPARE costs.
                let path = wanted.cloned().unwrap_or_default();
                i.client
                    .batch_execute(&format!("SET search_path TO {path}"))
                    .await
                    .map_err(|e| self.db(e))?;
                (i.client, i.statements, path, i.ef_search)
            }
            None => {
                let c = connect(&self.config).await?;
                let path = match wanted {
                    Some(p) => format!("SET search_path TO {p}; "),
                    None => String::new(),
                };
                c.batch_execute(&format!("{path}SET hnsw.iterative_scan = relaxed_order"))
                    .await
                    .map_err(|e| self.db(e))?;
                let path = wanted.cloned().unwrap_or_default();
                (c, Statements::default(), path, None)
            }
        };
        Ok(Pooled {
            client,
            statements,
            search_path,
            ef_search,
            _permit: permit,
        })
    }

    /// Gives `c` back when `result` is a success, and passes `result` on.
    pub(crate) fn put<T>(&self, c: Pooled, result: Result<T, IndexError>) -> Result<T, IndexError> {
        if result.is_ok() && !c.client.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_MAX {
                idle.push(Idle {
                    client: c.client,
                    statements: c.statements,
                    search_path: c.search_path,
                    ef_search: c.ef_search,
                });
            }
        }
        result
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> IndexError {
        IndexError::database(self.location.clone(), message)
    }

    pub(crate) fn db(&self, e: tokio_postgres::Error) -> IndexError {
        db_error(&self.location, &e)
    }
}

/// A client's error as the index's error: the server's words, and its
/// SQLSTATE read as busy (a lock not granted, a deadlock, a serialisation
/// failure: worth a retry) or corrupt (damaged data).
pub(crate) fn db_error(location: &str, e: &tokio_postgres::Error) -> IndexError {
    use tokio_postgres::error::SqlState;
    let failure = match e.code() {
        Some(c)
            if *c == SqlState::LOCK_NOT_AVAILABLE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::T_R_SERIALIZATION_FAILURE =>
        {
            DbFailure::Busy
        }
        // Two servers creating the same schema or table at once collide
        // in the system catalog: the other one made it, a retry finds it.
        Some(c)
            if *c == SqlState::UNIQUE_VIOLATION
                && e.as_db_error()
                    .and_then(|d| d.constraint())
                    .is_some_and(|name| name.starts_with("pg_")) =>
        {
            DbFailure::Busy
        }
        Some(c) if *c == SqlState::DATA_CORRUPTED || *c == SqlState::INDEX_CORRUPTED => {
            DbFailure::Corrupt
        }
        Some(c) if unavailable(c.code()) => DbFailure::Unavailable,
        // The client's own: a broken connection, an I/O error.
        None => DbFailure::Unavailable,
        _ => DbFailure::Other,
    };
    IndexError::Database {
        location: location.to_string(),
        message: describe(e),
        failure,
    }
}

/// True for an SQLSTATE that says the server cannot serve now, not that
/// the statement or the index is wrong: a broken connection (class 08),
/// a server shutting down or restarting (57P01-57P03), a statement
/// cancelled by its timeout (57014), a read-only transaction (25006),
/// resources exhausted (class 53: disk full, too many connections), and
/// an index schema dropped under the request (42P01, 3F000), as a
/// workspace's delete does.
fn unavailable(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "57014" | "25006" | "42P01" | "3F000"
        )
}

pub(crate) use mnemo_postgres::describe;

/// One statement of a [`pipeline`]: its rows (none for a statement that
/// returns none).
pub(crate) type Step<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Vec<Row>, tokio_postgres::Error>> + Send + 'a>>;

/// A prepared statement as a [`pipeline`] step.
pub(crate) fn step<'a>(
    c: &'a Client,
    st: &'a Statement,
    params: &'a [&'a (dyn ToSql + Sync)],
) -> Step<'a> {
    Box::pin(c.query(st, params))
}

/// Statements run by the simple protocol as a [`pipeline`] step.
pub(crate) fn batch_step<'a>(c: &'a Client, sql: &'a str) -> Step<'a> {
    Box::pin(async move { c.batch_execute(sql).await.map(|()| Vec::new()) })
}

/// Runs `steps` on their connection in one round trip: each is sent when
/// first polled, all in order, and the server runs and answers them in
/// that order. The rows of each, or the first error (in a transaction,
/// the steps after a failed one fail too, and its commit rolls back).
pub(crate) async fn pipeline(steps: Vec<Step<'_>>) -> Result<Vec<Vec<Row>>, tokio_postgres::Error> {
    use std::task::Poll;
    let mut pending: Vec<Option<Step<'_>>> = steps.into_iter().map(Some).collect();
    let mut done: Vec<Vec<Row>> = pending.iter().map(|_| Vec::new()).collect();
    std::future::poll_fn(|cx| {
        for (slot, rows) in pending.iter_mut().zip(done.iter_mut()) {
            if let Some(f) = slot {
                if let Poll::Ready(r) = f.as_mut().poll(cx) {
                    *slot = None;
                    *rows = r?;
                }
            }
        }
        match pending.iter().all(Option::is_none) {
            true => Poll::Ready(Ok(std::mem::take(&mut done))),
            false => Poll::Pending,
        }
    })
    .await
}

/// One new connection, its I/O driven by a task of the runtime.
pub(crate) async fn connect(target: &Target) -> Result<Client, IndexError> {
    target.connect().await.map_err(IndexError::Config)
}

/// A connection borrowed from the pool. [`Pool::put`] gives it back after
/// a statement that succeeded; after an error it is simply dropped (closed),
/// so a broken connection or an aborted transaction never goes back.
pub(crate) struct Pooled {
    client: Client,
    statements: Statements,
    /// The `search_path` the connection has set (`""`: the server's).
    search_path: String,
    /// The `hnsw.ef_search` the connection has set, `None` for the
    /// server's default.
    pub(crate) ef_search: Option<i64>,
    _permit: OwnedSemaphorePermit,
}

/// Statements prepared on one connection, by their text: a search's
/// statements are parsed and planned once per connection instead of once
/// per call (a round trip each). PostgreSQL re-plans them itself when a
/// table they read is made anew.
#[derive(Default)]
pub(crate) struct Statements(HashMap<String, Statement>);

/// Most statements kept per connection (phrase queries make new texts).
const STATEMENTS_MAX: usize = 64;

impl Pooled {
    pub(crate) async fn prepared(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(st) = self.statements.0.get(sql) {
            return Ok(st.clone());
        }
        let st = self.client.prepare(sql).await?;
        if self.statements.0.len() >= STATEMENTS_MAX {
            self.statements.0.clear();
        }
        self.statements.0.insert(sql.to_string(), st.clone());
        Ok(st)
    }

    /// [`Client::query`] on the connection's prepared statement for `sql`.
    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let st = self.prepared(sql).await?;
        self.client.query(&st, params).await
    }

    /// [`Client::query`] on a statement prepared by [`Self::prepared`]:
    /// a future that borrows the connection only, so that another
    /// request can be sent on it in the same round trip.
    pub(crate) fn query_prepared<'a>(
        &'a self,
        st: &'a Statement,
        params: &'a [&'a (dyn ToSql + Sync)],
    ) -> impl Future<Output = Result<Vec<Row>, tokio_postgres::Error>> + 'a {
        self.client.query(st, params)
    }

    /// [`Client::query_one`] on the connection's prepared statement for `sql`.
    pub(crate) async fn query_one(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, tokio_postgres::Error> {
        let st = self.prepared(sql).await?;
        self.client.query_one(&st, params).await
    }
}

impl std::ops::Deref for Pooled {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The test database, a fresh schema's name and a runtime; `None`
    /// without a database to test against.
    fn setup() -> Option<(String, String, tokio::runtime::Runtime)> {
        let url = mnemo_test_support::postgres::test_url()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Some((url, mnemo_test_support::postgres::fresh_schema(), rt))
    }

    /// A pipeline answers its steps in order, and one failed step fails
    /// the whole: the steps after it and its commit do nothing.
    #[test]
    fn a_failed_step_fails_the_pipeline_and_its_commit() {
        let Some((url, schema, rt)) = setup() else {
            return;
        };
        rt.block_on(async {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            c.batch_execute(&format!(
                "CREATE SCHEMA \"{schema}\"; CREATE TABLE \"{schema}\".t (x int PRIMARY KEY)"
            ))
            .await
            .unwrap();
            let insert = c
                .prepare(&format!(
                    "INSERT INTO \"{schema}\".t VALUES ($1) RETURNING x"
                ))
                .await
                .unwrap();
            let (one, two) = (1i32, 2i32);
            let (p1, p2): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 1]) = ([&one], [&two]);
            let rows = pipeline(vec![
                batch_step(&c, "BEGIN"),
                step(&c, &insert, &p1),
                step(&c, &insert, &p2),
                batch_step(&c, "COMMIT"),
            ])
            .await
            .unwrap();
            let got: Vec<Vec<i32>> = rows
                .iter()
                .map(|r| r.iter().map(|r| r.get(0)).collect())
                .collect();
            assert_eq!(got, vec![vec![], vec![1], vec![2], vec![]]);
            // Two is there already: the step fails, and so does the rest.
            let three = 3i32;
            let p3: [&(dyn ToSql + Sync); 1] = [&three];
            let e = pipeline(vec![
                batch_step(&c, "BEGIN"),
                step(&c, &insert, &p3),
                step(&c, &insert, &p2),
                step(&c, &insert, &p3),
                batch_step(&c, "COMMIT"),
            ])
            .await
            .unwrap_err();
            assert_eq!(
                e.code(),
                Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
            );
            let _ = c.batch_execute("ROLLBACK").await;
            let n: i64 = c
                .query_one(&format!("SELECT count(*) FROM \"{schema}\".t"), &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(n, 2, "three was written by a pipeline that failed");
            c.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE"))
                .await
                .unwrap();
        });
    }

    /// A schema two sessions create at once: the loser's unique violation
    /// in the system catalog is "busy, retry", not an internal fault whose
    /// advice is to rebuild the index.
    #[test]
    fn a_catalog_collision_is_busy() {
        let Some((url, schema, rt)) = setup() else {
            return;
        };
        rt.block_on(async {
            let connect = || async {
                let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .unwrap();
                tokio::spawn(conn);
                client
            };
            let (first, second) = (connect().await, connect().await);
            first.batch_execute("BEGIN").await.unwrap();
            first
                .batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
                .await
                .unwrap();
            let sql = format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"");
            let racing = tokio::spawn(async move { second.batch_execute(&sql).await });
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            first.batch_execute("COMMIT").await.unwrap();
            let err = racing.await.unwrap().unwrap_err();
            let mapped = db_error("test", &err);
            assert!(
                matches!(
                    mapped,
                    IndexError::Database {
                        failure: DbFailure::Busy,
                        ..
                    }
                ),
                "{mapped}"
            );
            let _ = first
                .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\""))
                .await;
        });
    }
}
