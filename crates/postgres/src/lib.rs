//! The PostgreSQL plumbing mnemo's backends share (the workspace store in
//! `mnemo-store-postgres`; the index in `mnemo-index-postgres` has its own
//! copy of the runtime bridge, to be moved here).
//!
//! - [`Runtime`]: the bridge between synchronous callers and the async
//!   `tokio-postgres` client. A private tokio runtime on its own thread
//!   owns the connections; a caller hands it a future and waits on a
//!   standard channel. Unlike the blocking `postgres` crate (whose
//!   `block_on` panics inside a tokio runtime), this is safe from any
//!   thread, async or not.
//! - [`Target`]: a URL read with mnemo's defaults and libpq's TLS
//!   settings ([`tls`]), named without its password.
//! - [`Pool`]: a few connections kept open, a broken one never reused,
//!   each with the statements it has prepared ([`Pooled::query`]).
//! - [`lock_key`]: advisory-lock keys that every process agrees on.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::future::Future;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::collections::HashMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::config::Host;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

pub use tokio_postgres;

pub mod tls;

/// A private runtime on a thread of its own; stopped when dropped.
pub struct Runtime {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The runtime's thread is gone: a bug, reported as such.
#[derive(Debug, Clone, Copy)]
pub struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the PostgreSQL client's thread stopped (a bug: see the log)")
    }
}

impl Runtime {
    /// The runtime every index of this process shares: its connections'
    /// I/O runs there, so an idle connection can serve any index (a
    /// server of many workspaces would otherwise run two threads per
    /// workspace and could not share connections between them).
    pub fn shared() -> Result<Arc<Runtime>, String> {
        static SHARED: std::sync::OnceLock<Result<Arc<Runtime>, String>> =
            std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| Runtime::start().map(Arc::new))
            .clone()
    }

    /// Starts the runtime's thread (one of its own; see [`Runtime::shared`]).
    pub fn start() -> Result<Runtime, String> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("mnemo-postgres".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("mnemo-postgres-io")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = tx.send(Ok(rt.handle().clone()));
                // The runtime lives until its owner is dropped, and is
                // dropped here, on its own thread, never in an async context.
                rt.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| e.to_string())?;
        let handle = rx
            .recv()
            .map_err(|_| "the runtime thread stopped".to_string())??;
        Ok(Runtime {
            handle,
            stop: Some(stop),
        })
    }

    /// Runs `fut` on the runtime and waits for its output.
    pub fn run<T, F>(&self, fut: F) -> Result<T, Stopped>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| Stopped)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// How long connecting may take, the TCP, TLS and startup handshakes
/// together, unless the URL's `connect_timeout` says otherwise.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may run unless the URL's `options` set
/// `statement_timeout` (`options=-c%20statement_timeout%3D30s`; `0` for
/// none): longer than any statement of mnemo takes on a healthy server,
/// short enough that a stuck one gives its request back. Waits for
/// mnemo's own locks are exempt ([`WAIT_WITHOUT_TIMEOUT`]).
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// Run in a transaction before a wait for an advisory lock: such a wait
/// lasts as long as the other holder's work (a consolidation, an index
/// build), which no statement timeout can know.
pub const WAIT_WITHOUT_TIMEOUT: &str = "SET LOCAL statement_timeout = 0";

/// A transaction's wait for mnemo's advisory lock `key`, sent as one
/// batch (one round trip): [`WAIT_WITHOUT_TIMEOUT`], then the lock, held
/// until the transaction ends. `key` is a number, safe to format into
/// the batch.
pub fn xact_lock(key: i64) -> String {
    format!("{WAIT_WITHOUT_TIMEOUT}; SELECT pg_advisory_xact_lock({key})")
}

/// The first row of `sql` run by the simple protocol, its columns as
/// text: one round trip, nothing prepared. For statements whose text
/// names a schema (a server of many workspaces would otherwise hold one
/// prepared statement per workspace) or a lock key.
pub async fn simple_row(
    c: &tokio_postgres::Client,
    sql: &str,
) -> Result<Option<Vec<Option<String>>>, tokio_postgres::Error> {
    let rows = c.simple_query(sql).await?;
    Ok(rows.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => {
            Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
        }
        _ => None,
    }))
}

/// A wait for mnemo's advisory lock `key`, held by the session (until
/// unlocked or disconnected), sent as one batch: a transaction of its own
/// for [`WAIT_WITHOUT_TIMEOUT`], committed once the lock is granted. Not
/// for a connection already in a transaction.
pub fn session_lock(key: i64) -> String {
    format!("BEGIN; {WAIT_WITHOUT_TIMEOUT}; SELECT pg_advisory_lock({key}); COMMIT")
}

/// A database to reach: the client's settings (a connect timeout and
/// mnemo's application name unless the URL sets them), its TLS (libpq's
/// `sslmode` and `sslrootcert`, see [`tls`]), its statement timeout and
/// its [`location`].
#[derive(Clone)]
pub struct Target {
    config: Config,
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// The TLS settings `tls` was made from.
    tls_settings: tls::Tls,
    location: String,
    /// What messages call it ("database", "index database").
    what: &'static str,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("location", &self.location)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Target {
    /// Reads `url` (`postgres://…` or libpq `key=value` pairs); the error
    /// says how to write it.
    pub fn parse(url: &str) -> Result<Target, String> {
        let (rest, tls) = tls::split(url)?;
        let mut config = Config::from_str(&rest).map_err(|e| {
            format!(
                "the PostgreSQL URL is not valid ({e}); write it as \
                 postgres://user:password@host:5432/database"
            )
        })?;
        config.ssl_mode(tls.ssl_mode());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("mnemo");
        }
        let location = location(&config);
        Ok(Target {
            config,
            tls: tls.connector()?,
            tls_settings: tls,
            location,
            what: "database",
        })
    }

    /// The same target, called `what` in messages.
    pub fn named(mut self, what: &'static str) -> Target {
        self.what = what;
        self
    }

    /// The client's settings.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// All that makes a connection to this target what it is (the
    /// server, the client's settings, the TLS checks), without the
    /// password: connections made for two targets of one key are
    /// interchangeable.
    pub fn key(&self) -> String {
        format!(
            "{} {:?} {:?}",
            self.location, self.config, self.tls_settings
        )
    }

    /// Where the database is, without a password.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// One new connection, its I/O driven by a task of the current
    /// runtime, with mnemo's statement timeout unless the URL sets one;
    /// the error names the server and what to check. The whole handshake
    /// is bounded by the connect timeout: the client's own bounds only
    /// the TCP connect, and a server that accepts and never answers (a
    /// stuck server, a dead proxy, another service on the port) would
    /// hold the caller for ever.
    pub async fn connect(&self) -> Result<Client, String> {
        let limit = self
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        let client = match tokio::time::timeout(limit, self.handshake()).await {
            Ok(client) => client?,
            Err(_) => {
                return Err(format!(
                    "cannot connect to the {} at {}: the server did not answer within {} s \
                     (is a PostgreSQL server listening on that port, and is it up? a slow one \
                     needs a larger connect_timeout in the URL)",
                    self.what,
                    self.location,
                    limit.as_secs_f64()
                ))
            }
        };
        if !self
            .config
            .get_options()
            .is_some_and(|o| o.contains("statement_timeout"))
        {
            let set = format!("SET statement_timeout = {}", STATEMENT_TIMEOUT.as_millis());
            // The server answered the handshake; one more statement is
            // bounded as well.
            match tokio::time::timeout(limit, client.batch_execute(&set)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(format!(
                        "cannot set up the connection to the {} at {}: {}",
                        self.what,
                        self.location,
                        describe(&e)
                    ))
                }
                Err(_) => {
                    return Err(format!(
                        "cannot set up the connection to the {} at {}: the server did not \
                         answer within {} s",
                        self.what,
                        self.location,
                        limit.as_secs_f64()
                    ))
                }
            }
        }
        Ok(client)
    }

    /// The client's connect: TCP, TLS and the startup handshake.
    async fn handshake(&self) -> Result<Client, String> {
        let failed = |e: tokio_postgres::Error| {
            let why = describe(&e);
            let check = if why.contains("TLS") || why.contains("certificate") {
                "check sslmode and sslrootcert in the URL: sslmode=disable for a server \
                 without TLS, sslrootcert=PATH for the CA that signed its certificate"
            } else {
                "is the server running, and are the URL, user and password right?"
            };
            format!(
                "cannot connect to the {} at {}: {why} ({check})",
                self.what, self.location
            )
        };
        let client = match &self.tls {
            None => {
                let (client, conn) = self.config.connect(NoTls).await.map_err(failed)?;
                tokio::spawn(drive(conn));
                client
            }
            Some(tls) => {
                let (client, conn) = self.config.connect(tls.clone()).await.map_err(failed)?;
                tokio::spawn(drive(conn));
                client
            }
        };
        Ok(client)
    }
}

/// Runs a connection's I/O until it closes.
async fn drive<F: Future<Output = Result<(), tokio_postgres::Error>>>(conn: F) {
    if let Err(e) = conn.await {
        tracing::debug!("PostgreSQL connection closed: {e}");
    }
}

/// The URL of `config` without its password, for messages.
fn location(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            Host::Tcp(s) => s.clone(),
            Host::Unix(p) => p.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{db}")
}

/// A client's error with the server's message and detail, when it has them.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(d) => format!("{} ({d})", db.message()),
            None => db.message().to_string(),
        },
        None => {
            // The client's own errors keep the cause apart ("error
            // performing TLS handshake" / "invalid peer certificate: …").
            let mut out = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                out.push_str(": ");
                out.push_str(&c.to_string());
                cause = c.source();
            }
            out
        }
    }
}

/// True when the server refused for a reason worth a retry: a lock not
/// granted, a deadlock, a serialisation failure.
pub fn is_busy(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    e.code().is_some_and(|c| {
        *c == SqlState::LOCK_NOT_AVAILABLE
            || *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::T_R_SERIALIZATION_FAILURE
    })
}

/// A few connections to one database, each set up by a statement (its
/// `search_path`) when opened.
pub struct Pool {
    target: Target,
    setup: String,
    idle: Mutex<Vec<(Client, Statements)>>,
    permits: Arc<Semaphore>,
}

/// Statements a connection has prepared, by their text: each is parsed
/// once per connection rather than in a round trip of its own per call.
type Statements = HashMap<String, Statement>;

/// Most statements kept per connection; past that the cache starts again.
const STATEMENTS_MAX: usize = 64;

/// A connection borrowed from the [`Pool`]: give it back with
/// [`Pool::put`] after a success; dropped (closed) otherwise, so a broken
/// connection or an aborted transaction never goes back.
pub struct Pooled {
    /// The connection.
    pub client: Client,
    statements: Mutex<Statements>,
    _permit: OwnedSemaphorePermit,
}

impl Pooled {
    /// `sql` prepared on this connection, once.
    async fn statement(&self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        let known = self
            .statements
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(sql)
            .cloned();
        if let Some(st) = known {
            return Ok(st);
        }
        let st = self.client.prepare(sql).await?;
        let mut all = self.statements.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() >= STATEMENTS_MAX {
            all.clear();
        }
        all.insert(sql.to_string(), st.clone());
        Ok(st)
    }

    /// Runs `sql` (prepared once per connection) and returns its rows.
    pub async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let st = self.statement(sql).await?;
        self.client.query(&st, params).await
    }

    /// Runs `sql` and returns its one row, or `None`; more than one is an error.
    pub async fn query_opt(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let st = self.statement(sql).await?;
        self.client.query_opt(&st, params).await
    }

    /// Runs `sql` and returns its one row.
    pub async fn query_one(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, tokio_postgres::Error> {
        let st = self.statement(sql).await?;
        self.client.query_one(&st, params).await
    }

    /// Runs `sql` and returns how many rows it changed.
    pub async fn execute(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        let st = self.statement(sql).await?;
        self.client.execute(&st, params).await
    }

    /// Runs statements without parameters (`BEGIN`, `COMMIT`, DDL) in the
    /// simple protocol: one round trip, nothing prepared.
    pub async fn batch_execute(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute(sql).await
    }
}

impl Pool {
    /// At most `size` connections to `target`, each first running `setup`
    /// (e.g. `SET search_path TO …`; empty for none).
    pub fn new(target: Target, setup: String, size: usize) -> Arc<Pool> {
        Arc::new(Pool {
            target,
            setup,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.max(1))),
        })
    }

    /// Where the database is, without a password.
    pub fn location(&self) -> &str {
        self.target.location()
    }

    /// An idle connection, or a new one; waits while `size` are in use.
    pub async fn get(self: &Arc<Self>) -> Result<Pooled, String> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| "the connection pool is closed".to_string())?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let (client, statements) = match idle {
            Some((c, statements)) if !c.is_closed() => (c, statements),
            _ => {
                let c = self.target.connect().await?;
                if !self.setup.is_empty() {
                    c.batch_execute(&self.setup)
                        .await
                        .map_err(|e| describe(&e))?;
                }
                (c, Statements::new())
            }
        };
        Ok(Pooled {
            client,
            statements: Mutex::new(statements),
            _permit: permit,
        })
    }

    /// Gives `c` back for the next caller.
    pub fn put(&self, c: Pooled) {
        if !c.client.is_closed() {
            let statements = c.statements.into_inner().unwrap_or_else(|e| e.into_inner());
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((c.client, statements));
        }
    }
}

/// A stable 64-bit key for an advisory lock (FNV-1a over the parts, each
/// ended by a 0 byte): the same in every process and every mnemo version,
/// unlike Rust's hasher.
pub fn lock_key(parts: &[&str]) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h as i64
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_tell_parts_apart() {
        assert_ne!(lock_key(&["ab", "c"]), lock_key(&["a", "bc"]));
        assert_eq!(lock_key(&["w", "memory"]), lock_key(&["w", "memory"]));
    }

    /// Issue 43 N4: a server that accepts TCP and never answers is given
    /// up on after the connect timeout, the startup handshake included.
    #[test]
    fn a_server_that_never_answers_times_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts and holds every connection, answering nothing.
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in listener.incoming() {
                held.push(s);
            }
        });
        let t = Target::parse(&format!(
            "postgres://u@127.0.0.1:{port}/x?connect_timeout=1&sslmode=disable"
        ))
        .unwrap();
        // Waited for on a thread of its own, so that a hang fails the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = Runtime::start().unwrap();
            let _ = tx.send(rt.run(async move { t.connect().await.map(|_| ()) }));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("still connecting after 5 s")
            .unwrap()
            .unwrap_err();
        assert!(err.contains("did not answer within 1 s"), "{err}");
    }

    /// Issue 43 N4: connections carry mnemo's statement timeout unless the
    /// URL's `options` set one.
    #[test]
    fn connections_have_a_statement_timeout() {
        let Ok(url) = std::env::var("MNEMO_TEST_POSTGRES_URL") else {
            return;
        };
        let rt = Runtime::start().unwrap();
        let show = |url: String| {
            rt.run(async move {
                let c = Target::parse(&url).unwrap().connect().await.unwrap();
                let row = c.query_one("SHOW statement_timeout", &[]).await.unwrap();
                row.get::<_, String>(0)
            })
            .unwrap()
        };
        assert_eq!(show(url.clone()), "5min");
        let sep = if url.contains('?') { '&' } else { '?' };
        let own = format!("{url}{sep}options=-c%20statement_timeout%3D7s");
        assert_eq!(show(own), "7s");
    }

    #[test]
    fn a_location_never_shows_the_password() {
        let t = Target::parse("postgres://u:secret@db.example:5433/mem?sslmode=require").unwrap();
        assert_eq!(t.location(), "postgres://u@db.example:5433/mem");
    }
}
