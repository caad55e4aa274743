//! The PostgreSQL [`IndexStore`]: an index's generations as schemas of one
//! database, the live one named by a row, writers locked by an advisory
//! lock.
//!
//! Given the base name `mnemo` (`[index] schema`), the schema `mnemo` holds
//! only the table `generation`, whose one row names the live generation:
//! `mnemo_1` at first, then `mnemo_<ms>` for each full rebuild. A rebuild
//! fills its schema while searches read the old one, then changes the row
//! in one committed statement and drops the old schema; a process still
//! holding the old one finds it gone, and its search retries on the live
//! one (as SQLite's readers do across a swap). A rebuild killed before its
//! swap leaves its schema behind; the next rebuild drops it (under the
//! writer lock, so never a rebuild that is still running).
//!
//! The writer lock is a session-level advisory lock held on a connection
//! of its own for as long as the [`WriterLock`] lives: the server releases
//! it when that connection ends, so a writer killed with `kill -9` leaves
//! no lock behind.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use mnemo_core::EmbedderId;
use mnemo_index::{Generation, IndexBackend, IndexError, IndexStore, LockWait, Result, WriterLock};
use tokio_postgres::error::SqlState;

use crate::pool::{self, Pool, Runtime};
use crate::{client_config, PostgresBackend, PostgresOptions};

/// How often a writer that may not wait forever asks for the lock again.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// One index in a PostgreSQL database: its generations and writer lock.
pub struct PostgresStore(Arc<Shared>);

struct Shared {
    /// The database and the base schema name.
    opts: PostgresOptions,
    embedder: Option<(EmbedderId, usize)>,
    rt: Runtime,
    pool: Arc<Pool>,
    /// The writer lock's key: the base name's.
    lock_key: i64,
    /// The live generation as last seen: its schema and backend.
    current: RwLock<(String, Arc<PostgresBackend>)>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.0.pool.location)
            .field("schema", &self.0.opts.schema)
            .finish_non_exhaustive()
    }
}

/// A stable 64-bit key for an advisory lock (FNV-1a): the same in every
/// process and every mnemo version, unlike Rust's hasher.
fn lock_key(text: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

impl PostgresStore {
    /// Opens the index whose base schema is `opts.schema` (creating it and
    /// its first generation if needed), for `embedder`'s vectors. Errors
    /// say what to fix: an unreachable server, a database without
    /// pgvector, a schema of a newer mnemo.
    pub fn open(opts: &PostgresOptions, embedder: Option<(EmbedderId, usize)>) -> Result<Self> {
        if !mnemo_index::valid_schema_name(&opts.schema) {
            return Err(IndexError::Config(format!(
                "`{}` cannot name an index in PostgreSQL: use 1 to 40 lower-case letters, \
                 digits and _, starting with a letter, not ending in _ and digits",
                opts.schema
            )));
        }
        let (config, location) = client_config(&opts.url)?;
        let base = opts.schema.clone();
        let rt = Runtime::shared().map_err(|e| {
            IndexError::database(&location, format!("cannot start the client's runtime: {e}"))
        })?;
        let pool = Arc::new(Pool::any_path(config, location));
        let init_key = lock_key(&format!("mnemo-index-init:{base}"));
        let p = pool.clone();
        let live = rt.run(async move {
            let mut c = p.get().await?;
            let r = async {
                // An index that exists: one statement, without the lock
                // below (a server of many workspaces opens them all the
                // time). Its schema is in the statement: the simple
                // protocol, one round trip, nothing prepared.
                let read = format!("SELECT live FROM \"{base}\".generation");
                match mnemo_postgres::simple_row(&c, &read).await {
                    Ok(row) => {
                        if let Some(live) = row.and_then(|r| r.into_iter().next().flatten()) {
                            return Ok(live);
                        }
                    }
                    // Not made yet: made below.
                    Err(e)
                        if e.code().is_some_and(|c| {
                            *c == SqlState::UNDEFINED_TABLE || *c == SqlState::INVALID_SCHEMA_NAME
                        }) => {}
                    Err(e) => return Err(p.db(e)),
                }
                // Two first openers at once: one creates, the other reads.
                // The lock is taken before the transaction that looks, not
                // in it: PostgreSQL takes in other sessions' catalog
                // changes when a transaction starts, not when an advisory
                // lock is granted, so a transaction that waited for the
                // creator would still believe the schema missing (its own
                // lock statement looked the name up through the search
                // path before the wait), create it again and fail on a
                // duplicate key. Held by the session: released below, or
                // with the connection, which a failed open drops.
                c.batch_execute(&mnemo_postgres::session_lock(init_key))
                    .await
                    .map_err(|e| p.db(e))?;
                let tx = c.transaction().await.map_err(|e| p.db(e))?;
                // DDL only for a new index: a read-only database serves
                // searches of one made before.
                let exists: bool = tx
                    .query_one(
                        "SELECT to_regclass($1) IS NOT NULL",
                        &[&format!("\"{base}\".generation")],
                    )
                    .await
                    .map_err(|e| p.db(e))?
                    .get(0);
                if !exists {
                    tx.batch_execute(&format!(
                        "CREATE SCHEMA IF NOT EXISTS \"{base}\";
                         CREATE TABLE IF NOT EXISTS \"{base}\".generation (
                             one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
                             live TEXT NOT NULL)"
                    ))
                    .await
                    .map_err(|e| p.db(e))?;
                }
                let row = tx
                    .query_opt(&format!("SELECT live FROM \"{base}\".generation"), &[])
                    .await
                    .map_err(|e| p.db(e))?;
                let live = match row {
                    Some(r) => r.get::<_, String>(0),
                    None => {
                        let first = format!("{base}_1");
                        tx.execute(
                            &format!(
                                "INSERT INTO \"{base}\".generation(one, live) VALUES (true, $1)"
                            ),
                            &[&first],
                        )
                        .await
                        .map_err(|e| p.db(e))?;
                        first
                    }
                };
                tx.commit().await.map_err(|e| p.db(e))?;
                // Not before the commit: the next opener must find the
                // schema made.
                c.execute("SELECT pg_advisory_unlock($1)", &[&init_key])
                    .await
                    .map_err(|e| p.db(e))?;
                Ok(live)
            }
            .await;
            p.put(c, r)
        })?;
        let backend = Arc::new(PostgresBackend::open(
            &PostgresOptions {
                url: opts.url.clone(),
                schema: live.clone(),
            },
            embedder.clone(),
        )?);
        Ok(PostgresStore(Arc::new(Shared {
            lock_key: lock_key(&format!("mnemo-index-writer:{}", opts.schema)),
            opts: opts.clone(),
            embedder,
            rt,
            pool,
            current: RwLock::new((live, backend)),
        })))
    }

    /// Drops the index whose base schema is `opts.schema`: the base and
    /// every generation, with their chunks, vectors and cached
    /// embeddings. Returns how many schemas went (0 when there was no
    /// such index). An index still open elsewhere fails its next search
    /// with an error rather than answering from what was dropped.
    pub fn drop_index(opts: &PostgresOptions) -> Result<usize> {
        if !mnemo_index::valid_schema_name(&opts.schema) {
            return Err(IndexError::Config(format!(
                "`{}` cannot name an index in PostgreSQL",
                opts.schema
            )));
        }
        let (config, location) = client_config(&opts.url)?;
        let rt = Runtime::shared().map_err(|e| IndexError::database(&location, e))?;
        let base = opts.schema.clone();
        let p = Arc::new(Pool::any_path(config, location));
        let writer = lock_key(&format!("mnemo-index-writer:{base}"));
        rt.run(async move {
            let mut c = p.get().await?;
            let r = async {
                let tx = c.transaction().await.map_err(|e| p.db(e))?;
                // Not under a rebuild's feet: it holds the writer lock.
                // A wait for another writer has no statement timeout.
                tx.batch_execute(&mnemo_postgres::xact_lock(writer))
                    .await
                    .map_err(|e| p.db(e))?;
                let pattern = format!("^{base}(_[0-9]+)?$");
                let schemas: Vec<String> = tx
                    .query(
                        "SELECT nspname::text FROM pg_namespace WHERE nspname ~ $1",
                        &[&pattern],
                    )
                    .await
                    .map_err(|e| p.db(e))?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                for s in &schemas {
                    tx.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{s}\" CASCADE"))
                        .await
                        .map_err(|e| p.db(e))?;
                }
                tx.commit().await.map_err(|e| p.db(e))?;
                Ok(schemas.len())
            }
            .await;
            p.put(c, r)
        })
    }

    /// The base schemas of indexes whose names start with `prefix` (those
    /// that hold a `generation` table), by name.
    pub fn indexes_like(url: &str, prefix: &str) -> Result<Vec<String>> {
        let (config, location) = client_config(url)?;
        let rt = Runtime::shared().map_err(|e| IndexError::database(&location, e))?;
        let p = Arc::new(Pool::any_path(config, location));
        let prefix = prefix.to_string();
        rt.run(async move {
            let mut c = p.get().await?;
            let r = c
                .query(
                    "SELECT table_schema::text FROM information_schema.tables \
                     WHERE table_name = 'generation' AND starts_with(table_schema, $1) ORDER BY 1",
                    &[&prefix],
                )
                .await
                .map(|rows| rows.iter().map(|r| r.get(0)).collect())
                .map_err(|e| p.db(e));
            p.put(c, r)
        })
    }

    /// The schema of the live generation.
    pub fn live_schema(&self) -> Result<String> {
        self.0.live().map(|(name, _)| name)
    }
}

impl Shared {
    /// Runs one statement batch on a pooled connection.
    fn execute(&self, sql: String) -> Result<()> {
        let p = self.pool.clone();
        self.rt.run(async move {
            let c = p.get().await?;
            let r = c.batch_execute(&sql).await.map_err(|e| p.db(e));
            p.put(c, r)
        })
    }

    /// The live generation's name, as the database says now.
    fn live_name(&self) -> Result<String> {
        let p = self.pool.clone();
        let sql = format!("SELECT live FROM \"{}\".generation", self.opts.schema);
        self.rt.run(async move {
            let c = p.get().await?;
            let r = match mnemo_postgres::simple_row(&c, &sql).await {
                Ok(row) => row
                    .and_then(|r| r.into_iter().next().flatten())
                    .ok_or_else(|| p.error("the index's generation table has no row")),
                Err(e) => Err(p.db(e)),
            };
            p.put(c, r)
        })
    }

    /// The live generation, switching to a newer one if another process
    /// swapped one in.
    fn live(&self) -> Result<(String, Arc<PostgresBackend>)> {
        let name = self.live_name()?;
        {
            let cur = self.current.read().unwrap_or_else(|e| e.into_inner());
            if cur.0 == name {
                return Ok(cur.clone());
            }
        }
        let fresh = Arc::new(self.open_generation(&name)?);
        let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
        *cur = (name, fresh);
        Ok(cur.clone())
    }

    fn open_generation(&self, schema: &str) -> Result<PostgresBackend> {
        PostgresBackend::open(
            &PostgresOptions {
                url: self.opts.url.clone(),
                schema: schema.to_string(),
            },
            self.embedder.clone(),
        )
    }

    /// Drops the generations that are not `live`: those a killed rebuild
    /// left behind. Only under the writer lock.
    fn collect_stale(&self, live: &str) -> Result<()> {
        let p = self.pool.clone();
        let pattern = format!("^{}_[0-9]+$", self.opts.schema);
        let live = live.to_string();
        let stale: Vec<String> = self.rt.run(async move {
            let mut c = p.get().await?;
            let r = c
                .query(
                    "SELECT nspname::text FROM pg_namespace WHERE nspname ~ $1 AND nspname <> $2",
                    &[&pattern, &live],
                )
                .await
                .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
                .map_err(|e| p.db(e));
            p.put(c, r)
        })?;
        for schema in stale {
            tracing::info!("dropping the index generation {schema} a stopped rebuild left");
            self.execute(format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))?;
        }
        Ok(())
    }
}

/// The writers' lock, held by a pooled connection's session: released
/// when dropped, and the connection given back; a connection whose
/// release fails is closed, and its session's end releases the lock.
struct HeldLock {
    rt: Runtime,
    pool: Arc<Pool>,
    conn: Option<pool::Pooled>,
    key: i64,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let Some(mut c) = self.conn.take() else {
            return;
        };
        let (pool, key) = (self.pool.clone(), self.key);
        let _ = self.rt.run(async move {
            let r = match c.query_one("SELECT pg_advisory_unlock($1)", &[&key]).await {
                Ok(row) if row.get::<_, bool>(0) => Ok(()),
                Ok(_) => Err(pool.error("the writers' lock was not held by its connection")),
                Err(e) => Err(pool.db(e)),
            };
            pool.put(c, r)
        });
    }
}

impl IndexStore for PostgresStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn schema_version(&self) -> String {
        crate::schema::current().to_string()
    }

    fn location(&self) -> String {
        let schema = self
            .0
            .live()
            .map(|(name, _)| name)
            .unwrap_or_else(|_| self.0.opts.schema.clone());
        format!("{} (schema {schema})", self.0.pool.location)
    }

    fn live(&self) -> Result<Arc<dyn IndexBackend>> {
        Ok(self.0.live()?.1)
    }

    fn lock(&self, wait: LockWait) -> Result<Option<WriterLock>> {
        let (pool, key) = (self.0.pool.clone(), self.0.lock_key);
        let p = pool.clone();
        let held = self.0.rt.run(async move {
            // A pooled connection: a sync takes the lock before each
            // search that finds something changed, and a new session
            // costs the server a process. The lock is the session's, so
            // it outlives the transaction that waits for it.
            let mut c = p.get().await?;
            let r = async {
                match wait {
                    LockWait::Forever => {
                        // As long as the holder's work takes: no
                        // statement timeout for the wait.
                        c.batch_execute(&mnemo_postgres::session_lock(key))
                            .await
                            .map_err(|e| p.db(e))?;
                        Ok(true)
                    }
                    LockWait::Until(deadline) => loop {
                        let got: bool = c
                            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                            .await
                            .map_err(|e| p.db(e))?
                            .get(0);
                        if got || Instant::now() >= deadline {
                            break Ok(got);
                        }
                        tokio::time::sleep(LOCK_POLL).await;
                    },
                }
            }
            .await;
            match r {
                Ok(true) => Ok(Some(c)),
                // Not held: the connection goes back as it is.
                Ok(false) => p.put(c, Ok(None)),
                Err(e) => Err(e),
            }
        })?;
        Ok(held.map(|conn| {
            WriterLock::new(HeldLock {
                rt: self.0.rt.clone(),
                pool,
                conn: Some(conn),
                key,
            })
        }))
    }

    fn lock_location(&self) -> String {
        format!(
            "advisory lock of index {} at {}",
            self.0.opts.schema, self.0.pool.location
        )
    }

    fn new_generation(&self) -> Result<Box<dyn Generation>> {
        let (old, _) = self.0.live()?;
        self.0.collect_stale(&old)?;
        let mut ms = chrono::Utc::now().timestamp_millis();
        let mut name = format!("{}_{ms}", self.0.opts.schema);
        if name == old {
            ms += 1;
            name = format!("{}_{ms}", self.0.opts.schema);
        }
        let backend = Arc::new(self.0.open_generation(&name)?);
        let generation = PostgresGeneration {
            shared: self.0.clone(),
            name: name.clone(),
            backend,
            swapped: false,
        };
        // The old generation's vectors, so the rebuild embeds only what
        // changed.
        self.0.execute(format!(
            "INSERT INTO \"{name}\".embedding_cache(model, hash, dims, embedding, updated_at)
             SELECT model, hash, dims, embedding, updated_at FROM \"{old}\".embedding_cache
             ON CONFLICT DO NOTHING"
        ))?;
        Ok(Box::new(generation))
    }

    fn scrub(&self) -> Result<()> {
        let (live, _) = self.0.live()?;
        let p = self.0.pool.clone();
        let vectors = format!("\"{live}\".chunk_vectors");
        let has_vectors: bool = self.0.rt.run(async move {
            let mut c = p.get().await?;
            let r = c
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&vectors])
                .await
                .map(|r| r.get(0))
                .map_err(|e| p.db(e));
            p.put(c, r)
        })?;
        // CLUSTER rewrites as VACUUM FULL does, and leaves each word's rows
        // together (see `PostgresBackend::repack`).
        self.0
            .execute(crate::cluster_word_lists(&format!("\"{live}\".word_lists")))?;
        let mut tables = ["chunks", "vocab", "embedding_cache", "files"].to_vec();
        if has_vectors {
            tables.push("chunk_vectors");
        }
        let list: Vec<String> = tables.iter().map(|t| format!("\"{live}\".{t}")).collect();
        // VACUUM FULL rewrites the tables, so deleted text leaves no dead
        // rows in their pages.
        self.0.execute(format!("VACUUM FULL {}", list.join(", ")))
    }
}

/// A rebuild's schema, dropped unless swapped in.
struct PostgresGeneration {
    shared: Arc<Shared>,
    name: String,
    backend: Arc<PostgresBackend>,
    swapped: bool,
}

impl Generation for PostgresGeneration {
    fn backend(&self) -> Arc<dyn IndexBackend> {
        self.backend.clone()
    }

    fn swap_in(mut self: Box<Self>) -> Result<()> {
        // Each word's rows in one run of pages, unless the build's last
        // sync packed them already (`after_writes`).
        if self.backend.written_since_repack() {
            self.backend.repack()?;
        }
        // The HNSW graph, unless the build's last sync built it already
        // (`after_writes`): a build drops it while it loads.
        self.backend.build_graph()?;
        // Statistics for the planner and the visibility map for index-only
        // scans, before the first search reads the new generation.
        self.shared.execute(format!(
            "VACUUM ANALYZE \"{0}\".word_lists, \"{0}\".vocab, \"{0}\".chunks, \"{0}\".files",
            self.name
        ))?;
        let (old, _) = self.shared.live()?;
        let base = self.shared.opts.schema.clone();
        let p = self.shared.pool.clone();
        let name = self.name.clone();
        self.shared.rt.run(async move {
            let c = p.get().await?;
            let r = c
                .execute(
                    &format!("UPDATE \"{base}\".generation SET live = $1"),
                    &[&name],
                )
                .await
                .map(|_| ())
                .map_err(|e| p.db(e));
            p.put(c, r)
        })?;
        self.swapped = true;
        *self
            .shared
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = (self.name.clone(), self.backend.clone());
        if old != self.name {
            if let Err(e) = self
                .shared
                .execute(format!("DROP SCHEMA IF EXISTS \"{old}\" CASCADE"))
            {
                // Harmless: the next rebuild drops it.
                tracing::warn!("cannot drop the replaced index generation {old}: {e}");
            }
        }
        Ok(())
    }
}

impl Drop for PostgresGeneration {
    fn drop(&mut self) {
        if !self.swapped {
            if let Err(e) = self
                .shared
                .execute(format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.name))
            {
                tracing::warn!(
                    "cannot drop the abandoned index generation {}: {e}",
                    self.name
                );
            }
        }
    }
}

/// The PostgreSQL backend as a build registers it (`[index] backend =
/// "postgres"`): its store from `[index] url` and `schema`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Postgres;

impl mnemo_index::IndexBackendKind for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn open(
        &self,
        _ws: &mnemo_core::Workspace,
        settings: &mnemo_index::IndexSettings,
        model: Option<(EmbedderId, usize)>,
    ) -> Result<Arc<dyn IndexStore>> {
        let url = settings.index.url.clone().ok_or_else(|| {
            IndexError::Config("[index] backend = \"postgres\" needs [index] url".into())
        })?;
        let opts = PostgresOptions {
            url: url.0,
            schema: settings.index.schema.clone(),
        };
        Ok(Arc::new(PostgresStore::open(&opts, model)?))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use mnemo_test_support::postgres::scalar;

    /// The backend pid holding `key` as a session advisory lock, if any.
    fn holder(url: &str, key: i64) -> Option<i64> {
        scalar(
            url,
            "SELECT pid::bigint FROM pg_locks WHERE locktype = 'advisory' AND granted
               AND classid = (($1::bigint >> 32) & 4294967295)::oid
               AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1",
            key,
        )
    }

    fn alive(url: &str, pid: i64) -> bool {
        let sql = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::bigint";
        scalar(url, sql, pid) == Some(1)
    }

    /// A sync takes the writers' lock before every search that finds a
    /// change: releasing it gives the connection back rather than ending
    /// its session (a new session costs the server a process).
    #[test]
    fn the_writer_lock_is_released_without_closing_its_connection() {
        let Some(url) = mnemo_test_support::postgres::test_url() else {
            return;
        };
        let opts = PostgresOptions {
            url: url.clone(),
            schema: mnemo_test_support::postgres::fresh_schema(),
        };
        let store = PostgresStore::open(&opts, None).unwrap();
        let key = store.0.lock_key;
        for wait in [
            LockWait::Forever,
            LockWait::Until(Instant::now() + Duration::from_secs(5)),
        ] {
            let lock = store.lock(wait).unwrap().expect("the lock is free");
            let pid = holder(&url, key).expect("the lock is held");
            drop(lock);
            assert_eq!(holder(&url, key), None, "released");
            // A closed session leaves pg_stat_activity within moments.
            std::thread::sleep(Duration::from_millis(300));
            assert!(
                alive(&url, pid),
                "the connection that held the lock was closed"
            );
        }
        PostgresStore::drop_index(&opts).unwrap();
    }
}
