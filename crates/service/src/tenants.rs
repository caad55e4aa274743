//! Many workspaces behind one server: [`Tenants`] keeps a registry of
//! workspaces in PostgreSQL, each with its own token, and opens a
//! [`Service`] per workspace whose sessions and memory are rows of the
//! same database ([`mnemo::store_postgres`]) and whose index is a schema
//! of its own there ([`mnemo::index_postgres`]).
//!
//! Any number of servers may share one database: every request looks its
//! workspace up in the registry (so a workspace deleted through one server
//! is refused by all at once), the stores take their locks in the
//! database, and a server keeps nothing of a workspace but caches and
//! derived state, in a folder named after the registration (`<id>-<seq>`)
//! so that a workspace created again under a deleted one's id never sees
//! its predecessor's. A service's rows are bound to the registration it
//! was opened for, so a request that outlives a delete writes nothing
//! into the workspace created again under the id.
//!
//! Tokens are random, shown once, and stored as their SHA-256. A missing
//! token is 401, and a token that does not open the workspace asked for
//! is 403 with the same answer whether or not that workspace exists.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use mnemo::index_postgres::{PostgresOptions, PostgresStore};
use mnemo::store_postgres::{Database, Tenant, HOME};
use mnemo::{EmbedderChoice, Mnemo};
use mnemo_core::{Config, Workspace};
use mnemo_engine::MemoryWorkers;
use mnemo_llm::ProviderOverrides;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::guard::constant_time_eq;
use crate::service::blocking;
use crate::Service;

mod placement;

pub use placement::{
    AddServerArgs, MoveArgs, MovedOutput, Placement, Places, ServerInfo, ServersOutput,
};

/// The longest base schema: the index schemas append `_ix` and a number,
/// and PostgreSQL index names stay under 40 characters.
const MAX_SCHEMA: usize = 24;

/// How long after a delete its second sweep runs: longer than any
/// request that was under way takes (the clients' timeouts).
const SWEEP_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Workspaces a server holds open at once by default (each with its
/// index handle and engine); past that, the one used longest ago is let go, and opened
/// again (from the database, its folder kept) when next asked for.
pub const MAX_OPEN: usize = 512;

/// One open workspace: the registration and placement it was opened
/// for, the service, and when it was last used (a counter).
struct Held {
    placed: Placement,
    service: Arc<Service>,
    used: u64,
}

/// The open workspaces, by id.
#[derive(Default)]
struct Open {
    by_id: HashMap<String, Held>,
    clock: u64,
}

/// What a multi-tenant server is started with.
pub struct TenantsConfig {
    /// The database (`postgres://…`), with pgvector.
    pub url: String,
    /// The schema of the workspaces' rows and the registry; each
    /// workspace's index is the schema `<schema>_ix<seq>`.
    pub schema: String,
    /// The folder of the workspaces' derived state (`<id>-<seq>` each).
    pub data: PathBuf,
    /// The configuration every workspace is opened with (the index
    /// settings are replaced by the workspace's own schema).
    pub template: Config,
    /// Flags naming the chat model, over the configuration's.
    pub overrides: ProviderOverrides,
    /// The token that creates, lists and deletes workspaces over HTTP;
    /// without one, [`Tenants::admin`] refuses every request.
    pub admin_token: Option<String>,
    /// Workspaces held open at once ([`MAX_OPEN`] unless a caller knows
    /// better).
    pub max_open: usize,
}

/// The body of `POST /v1/workspaces`.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkspaceArgs {
    /// The new workspace's id: 1 to 64 letters, digits, `.`, `_` and `-`,
    /// not starting with `.`.
    pub id: String,
}

/// A created workspace and its token (shown this once).
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CreatedOutput {
    /// The workspace id.
    pub id: String,
    /// The bearer token that opens this workspace and nothing else.
    pub token: String,
}

/// One registered workspace.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct WorkspaceInfo {
    /// The workspace id.
    pub id: String,
    /// When it was created (RFC 3339).
    #[schemars(with = "String")]
    pub created: DateTime<Utc>,
    /// The database server its rows are on (`home`: the registry's own;
    /// `GET /v1/servers` lists them).
    pub server: String,
}

/// The registered workspaces.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct WorkspacesOutput {
    /// By id.
    pub workspaces: Vec<WorkspaceInfo>,
}

/// What deleting a workspace removed.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct DeletedOutput {
    /// The workspace id.
    pub id: String,
    /// Rows removed: messages, sessions, documents (history included) and
    /// the registration.
    pub rows: u64,
    /// Index schemas dropped (chunks, vectors, cached embeddings).
    pub index_schemas: usize,
}

/// The workspaces of a multi-tenant server.
pub struct Tenants {
    /// The registry and the database servers it places workspaces on.
    places: placement::Places,
    data: PathBuf,
    template: Config,
    overrides: ProviderOverrides,
    admin_sha256: Option<[u8; 32]>,
    max_open: usize,
    /// Built once and shared by every workspace: a model loaded per
    /// workspace would not fit.
    embedder: EmbedderChoice,
    /// The workspaces this server holds open, at most [`MAX_OPEN`].
    open: Mutex<Open>,
    /// The memory work the turns of every workspace left running, those
    /// let go of since included: the server waits for it as it stops.
    workers: Arc<MemoryWorkers>,
}

/// True for an id a workspace may have: 1 to 64 ASCII letters, digits,
/// `.`, `_` and `-`, not starting with `.` (it names a folder and a path
/// segment).
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

fn missing_token(what: &str) -> Error {
    Error::Unauthorized {
        message: format!(
            "missing bearer token: send the header `Authorization: Bearer <token>` with {what}"
        ),
        denied: false,
    }
}

impl Tenants {
    /// Connects to the database, creates or migrates its tables, builds
    /// the shared embedder and sweeps what deleted workspaces left in
    /// `data`.
    pub fn connect(config: TenantsConfig) -> Result<Arc<Tenants>> {
        if config
            .admin_token
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(Error::Invalid(
                "the admin token is empty: pass --admin-token or set MNEMO_ADMIN_TOKEN".into(),
            ));
        }
        let places = placement::Places::new(connect(&config.url, &config.schema)?, config.url);
        let embedder = mnemo::build_embedder(&config.template)?;
        let tenants = Arc::new(Tenants {
            places,
            data: config.data,
            template: config.template,
            overrides: config.overrides,
            admin_sha256: config.admin_token.as_deref().map(sha256),
            max_open: config.max_open.max(1),
            embedder,
            open: Mutex::default(),
            workers: MemoryWorkers::new(),
        });
        tenants.sweep_folders();
        tenants.sweep_indexes()?;
        Ok(tenants)
    }

    /// Checks the admin token: 401 without one, 403 with another.
    pub fn admin(&self, token: Option<&str>) -> Result<()> {
        let token = token.ok_or_else(|| missing_token("the server's --admin-token"))?;
        if self
            .admin_sha256
            .is_some_and(|admin| constant_time_eq(&sha256(token), &admin))
        {
            Ok(())
        } else {
            Err(Error::Unauthorized {
                message: "this token does not manage workspaces: send the server's --admin-token"
                    .into(),
                denied: true,
            })
        }
    }

    /// Creates workspace `id` and answers with its token.
    pub async fn create(self: &Arc<Self>, id: String) -> Result<CreatedOutput> {
        if !valid_id(&id) {
            return Err(invalid_id(&id));
        }
        let token = new_token();
        let hash = sha256(&token);
        let me = self.clone();
        let registered = {
            let id = id.clone();
            blocking(move || me.places.register(&id, &hash)).await?
        };
        match registered {
            Some(t) => {
                let me = self.clone();
                blocking(move || {
                    write_first_memory(&me.places.placed(&t)?.0, &t)?;
                    // The index (its schema, tables and the first sync) is
                    // built now, not by the workspace's first search. It is
                    // derived: if it cannot be built here, that search
                    // builds it, so the workspace is created all the same.
                    let built = me.service(&t).and_then(|service| {
                        service.mnemo().index()?.sync(&|_| {})?;
                        Ok(())
                    });
                    if let Err(e) = built {
                        tracing::warn!(
                            "workspace {}: its index is left to its first search: {e}",
                            t.id
                        );
                    }
                    Ok(())
                })
                .await?;
                Ok(CreatedOutput { id, token })
            }
            None => Err(exists(&id)),
        }
    }

    /// The registered workspaces.
    pub async fn list(self: &Arc<Self>) -> Result<WorkspacesOutput> {
        let me = self.clone();
        let all = blocking(move || Ok(me.places.db.tenants()?)).await?;
        Ok(WorkspacesOutput {
            workspaces: all
                .into_iter()
                .map(|t| WorkspaceInfo {
                    server: t.server.unwrap_or_else(|| HOME.to_string()),
                    id: t.id,
                    created: t.created,
                })
                .collect(),
        })
    }

    /// Deletes workspace `id`: every row it owns, its index schemas, and
    /// this server's derived state of it.
    pub async fn delete(self: &Arc<Self>, id: String) -> Result<DeletedOutput> {
        let me = self.clone();
        blocking(move || {
            let Some(t) = valid_id(&id)
                .then(|| me.places.db.tenant(&id))
                .transpose()?
                .flatten()
            else {
                return Err(Error::NotFound(format!(
                    "no workspace {id:?}: GET /v1/workspaces lists them"
                )));
            };
            me.forget_open(&id);
            // The rows (and with them the registration) first: from then
            // on every server refuses the workspace, so nothing can index
            // it again once its index is gone. Where the workspace is
            // placed on another server, its rows there go first: a delete
            // cut short leaves it registered, to be deleted again.
            let (data, url) = me.places.placed(&t)?;
            let mut rows = 0;
            if t.server.is_some() {
                rows += data.delete_workspace(&id)?;
            }
            rows += me.places.db.delete_workspace(&id)?;
            me.places.drop_moved_marks(&t);
            let index_schemas =
                PostgresStore::drop_index(&index_options(&me.places.db, &url, t.seq))?;
            remove_folder(&me.folder(&t));
            me.sweep_later(id.clone(), t.seq, (data, url));
            Ok(DeletedOutput {
                id,
                rows,
                index_schemas,
            })
        })
        .await
    }

    /// The service of workspace `id` when `token` opens it. The service
    /// knows the registration it was opened for
    /// ([`Service::deregistered`]).
    pub async fn authorize(
        self: &Arc<Self>,
        id: &str,
        token: Option<&str>,
    ) -> Result<Arc<Service>> {
        Ok(self.authorize_placed(id, token).await?.0)
    }

    /// [`Tenants::authorize`], and where the workspace was placed when
    /// the service was opened, for [`Tenants::moved_away`].
    pub async fn authorize_placed(
        self: &Arc<Self>,
        id: &str,
        token: Option<&str>,
    ) -> Result<(Arc<Service>, Placement)> {
        let token = token.ok_or_else(|| missing_token("the workspace's token"))?;
        let hash = sha256(token);
        let (me, id) = (self.clone(), id.to_string());
        blocking(move || {
            let tenant = if valid_id(&id) { me.places.db.tenant(&id)? } else { None };
            match tenant {
                Some(t) if constant_time_eq(&t.token_sha256, &hash) => {
                    Ok((me.service(&t)?, Placement::of(&t)))
                }
                found => {
                    if found.is_none() {
                        // Deleted through another server: let go of it here too.
                        me.forget_open(&id);
                    }
                    // Not a word on whether the workspace exists.
                    Err(Error::Unauthorized {
                        message: "this token does not open this workspace: send the token its creation answered with".into(),
                        denied: true,
                    })
                }
            }
        })
        .await
    }

    /// The opened service of `t`, opening it on first use.
    fn service(&self, t: &Tenant) -> Result<Arc<Service>> {
        if let Some(s) = self.held(t) {
            return Ok(s);
        }
        // Opened without the lock, so that one workspace's first request
        // never waits for another's.
        let (data, url) = self.places.placed(t)?;
        let mnemo = open_registered(&data, &url, &self.data, t, self.template.clone())?
            .with_embedder(self.embedder.clone());
        let service = Service::with_memory_workers(
            Arc::new(mnemo),
            self.overrides.clone(),
            self.workers.clone(),
        );
        let (db, id, seq) = (self.places.db.clone(), t.id.clone(), t.seq);
        // A registry that cannot be read says nothing either way: the
        // request's own error stands.
        service.bind_registration(move || {
            db.tenant(&id)
                .map_or(true, |now| now.is_some_and(|now| now.seq == seq))
        });

        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.clock += 1;
        let now = open.clock;
        match open.by_id.get(&t.id) {
            // Another request opened it meanwhile: one service per workspace.
            Some(h) if h.placed == Placement::of(t) => return Ok(h.service.clone()),
            Some(_) => {}
            None if open.by_id.len() >= self.max_open => {
                let oldest = open
                    .by_id
                    .iter()
                    .min_by_key(|(_, h)| h.used)
                    .map(|(id, _)| id.clone());
                if let Some(id) = oldest {
                    open.by_id.remove(&id);
                }
            }
            None => {}
        }
        let replaced = open.by_id.insert(
            t.id.clone(),
            Held {
                placed: Placement::of(t),
                service: service.clone(),
                used: now,
            },
        );
        if let Some(old) = replaced.filter(|old| old.placed.seq != t.seq) {
            // A workspace deleted and created again elsewhere (a moved one
            // keeps its folder: the same registration's derived state).
            remove_folder(&self.data.join(format!("{}-{}", t.id, old.placed.seq)));
        }
        Ok(service)
    }

    /// The open service of `t`, marked as used now, if this server holds one.
    fn held(&self, t: &Tenant) -> Option<Arc<Service>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.clock += 1;
        let now = open.clock;
        let h = open.by_id.get_mut(&t.id)?;
        if h.placed != Placement::of(t) {
            return None;
        }
        h.used = now;
        Some(h.service.clone())
    }

    /// Once the requests that were under way when workspace `id` was
    /// deleted are over (on any server), removes what they wrote: rows
    /// (unless the id was registered again meanwhile) and the index they
    /// may have created again.
    fn sweep_later(self: &Arc<Self>, id: String, seq: i64, (data, url): (Arc<Database>, String)) {
        let me = Arc::downgrade(self);
        std::thread::spawn(move || {
            std::thread::sleep(SWEEP_AFTER);
            let Some(me) = me.upgrade() else { return };
            if let Err(e) = data.delete_unregistered(&id) {
                tracing::warn!("cannot sweep the deleted workspace {id:?}: {e}");
            }
            if let Err(e) = PostgresStore::drop_index(&index_options(&me.places.db, &url, seq)) {
                tracing::warn!("cannot sweep the index of the deleted workspace {id:?}: {e}");
            }
        });
    }

    /// Drops the index schemas of workspaces no longer registered: a
    /// delete cut short between its rows and its index.
    fn sweep_indexes(&self) -> Result<()> {
        // The indexes first: a workspace is registered before its index
        // is made, so one made while this runs is not taken for an orphan.
        let prefix = format!("{}_ix", self.places.db.schema());
        let indexes = PostgresStore::indexes_like(&self.places.url, &prefix)?;
        let live: std::collections::HashSet<i64> =
            self.places.db.tenants()?.iter().map(|t| t.seq).collect();
        for base in indexes {
            let seq = base
                .strip_prefix(&prefix)
                .and_then(|n| n.parse::<i64>().ok());
            if let Some(seq) = seq.filter(|s| !live.contains(s)) {
                tracing::info!("dropping the index {base} of a deleted workspace");
                PostgresStore::drop_index(&self.index_options(seq))?;
            }
        }
        Ok(())
    }

    /// Drops the opened service of `id`, and its folder.
    fn forget_open(&self, id: &str) {
        let gone = self
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .remove(id);
        if let Some(h) = gone {
            remove_folder(&self.data.join(format!("{id}-{}", h.placed.seq)));
        }
    }

    fn index_options(&self, seq: i64) -> PostgresOptions {
        index_options(&self.places.db, &self.places.url, seq)
    }

    fn folder(&self, t: &Tenant) -> PathBuf {
        folder(&self.data, t)
    }

    /// Removes the folders of workspaces no longer registered (deleted
    /// through another server while this one was down).
    fn sweep_folders(&self) {
        // Listed before the registry is read, as the indexes are.
        let Ok(entries) = std::fs::read_dir(&self.data) else {
            return;
        };
        let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
        let Ok(live) = self.places.db.tenants() else {
            return;
        };
        let live: std::collections::HashSet<String> =
            live.iter().map(|t| format!("{}-{}", t.id, t.seq)).collect();
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = name
                .rsplit_once('-')
                .is_some_and(|(id, seq)| valid_id(id) && seq.parse::<i64>().is_ok());
            if ours && !live.contains(&name) {
                remove_folder(&e.path());
            }
        }
    }

    /// True while `service` is the one this server holds open for `id`.
    pub fn holds(&self, id: &str, service: &Arc<Service>) -> bool {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .get(id)
            .is_some_and(|h| Arc::ptr_eq(&h.service, service))
    }

    /// The memory work the turns of every workspace left running.
    pub fn memory_workers(&self) -> &Arc<MemoryWorkers> {
        &self.workers
    }

    /// How many workspaces this server holds open at most.
    pub fn max_open(&self) -> usize {
        self.max_open
    }

    /// The registry's database, for tests that look at every table.
    pub fn database(&self) -> &Arc<Database> {
        &self.places.db
    }
}

/// One workspace of a database, for a caller that holds the database's
/// credentials and so needs no workspace token: the CLI's `mnemo
/// --database URL --id ID`. Nothing is swept and no embedder is shared:
/// each [`Mnemo`] builds its own on first use, so a command that embeds
/// nothing loads no model.
pub struct DatabaseWorkspace {
    places: placement::Places,
    data: PathBuf,
}

impl DatabaseWorkspace {
    /// Connects to the workspaces of `url` whose rows are in `schema`
    /// (created or migrated if needed); `data` is the folder of their
    /// caches and derived state on this machine.
    pub fn connect(url: &str, schema: &str, data: &Path) -> Result<DatabaseWorkspace> {
        Ok(DatabaseWorkspace {
            places: placement::Places::new(connect(url, schema)?, url.to_string()),
            data: data.to_path_buf(),
        })
    }

    /// Opens workspace `id` with `config` (its index settings replaced by
    /// the workspace's own schema).
    pub fn open(&self, id: &str, config: Config) -> Result<Mnemo> {
        let t = valid_id(id)
            .then(|| self.places.db.tenant(id))
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no workspace {id:?} in {}: create it with `mnemo init --database URL --id {id}`",
                    self.places.db.location()
                ))
            })?;
        let (db, url) = self.places.placed(&t)?;
        open_registered(&db, &url, &self.data, &t, config)
    }

    /// Creates workspace `id` with its first MEMORY.md and answers with
    /// its token for HTTP and MCP. Its index is left to its first search
    /// or `mnemo index`, as a folder's `mnemo init` leaves it: built here,
    /// it would be built with this command's embedder, which the next
    /// command may not share.
    pub fn create(&self, id: &str) -> Result<CreatedOutput> {
        if !valid_id(id) {
            return Err(invalid_id(id));
        }
        let token = new_token();
        let t = self
            .places
            .register(id, &sha256(&token))?
            .ok_or_else(|| exists(id))?;
        write_first_memory(&self.places.placed(&t)?.0, &t)?;
        Ok(CreatedOutput {
            id: id.to_string(),
            token,
        })
    }

    /// The registry's database.
    pub fn database(&self) -> &Arc<Database> {
        &self.places.db
    }

    /// The registry and the servers it places workspaces on.
    pub fn places(&self) -> &placement::Places {
        &self.places
    }
}

fn connect(url: &str, schema: &str) -> Result<Arc<Database>> {
    if schema.len() > MAX_SCHEMA {
        return Err(Error::Invalid(format!(
            "the schema {schema:?} is too long for a database of workspaces: use at most {MAX_SCHEMA} characters"
        )));
    }
    Ok(Database::connect(url, schema)?)
}

fn invalid_id(id: &str) -> Error {
    Error::Invalid(format!(
        "{id:?} cannot name a workspace: use 1 to 64 letters, digits, `.`, `_` and `-`, not starting with `.`"
    ))
}

fn exists(id: &str) -> Error {
    Error::Exists(format!(
        "the workspace {id:?} exists: pick another id, or delete it first (DELETE /v1/workspaces/{id})"
    ))
}

/// A new workspace's first contents: the MEMORY.md a folder's `mnemo
/// init` writes (a workspace starts alike, and the same lines then score
/// alike).
fn write_first_memory(db: &Arc<Database>, t: &Tenant) -> Result<()> {
    use mnemo_store::Storage as _;
    db.registered(t)?.write(
        "MEMORY.md",
        mnemo_store::memory::INITIAL_MEMORY_MD,
        mnemo_store::Expect::Absent,
    )?;
    Ok(())
}

fn index_options(db: &Database, url: &str, seq: i64) -> PostgresOptions {
    PostgresOptions {
        url: url.to_string(),
        schema: format!("{}_ix{seq}", db.schema()),
    }
}

/// The workspace `t` of `db`: its rows as storage, bound to this
/// registration (a request that outlives a delete writes nothing into a
/// workspace created again under the id), its index in its own schema,
/// its derived state in `data/<id>-<seq>`.
fn open_registered(
    db: &Arc<Database>,
    url: &str,
    data: &Path,
    t: &Tenant,
    mut config: Config,
) -> Result<Mnemo> {
    let index = index_options(db, url, t.seq);
    config.set("index.backend", "postgres");
    config.set("index.url", &index.url);
    config.set("index.schema", &index.schema);
    let root = folder(data, t);
    std::fs::create_dir_all(&root).map_err(|source| Error::Io {
        op: format!("cannot create {}", root.display()),
        source,
    })?;
    let storage = Arc::new(db.registered(t)?);
    Ok(Mnemo::open_with_storage(
        Workspace::new(root),
        config,
        storage,
    )?)
}

/// The folder of `t`'s derived state, named after its registration.
fn folder(data: &Path, t: &Tenant) -> PathBuf {
    data.join(format!("{}-{}", t.id, t.seq))
}

fn remove_folder(path: &Path) {
    match std::fs::remove_dir_all(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
    }
}

/// A fresh token: 32 random bytes from the operating system's generator.
pub fn new_token() -> String {
    use rand::RngExt as _;
    let bytes: [u8; 32] = rand::rng().random();
    format!("mnemo_{}", hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_name_a_folder_and_a_path_segment() {
        for ok in ["alice", "team-7", "a.b_c", "A1"] {
            assert!(valid_id(ok), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "..", "a b", "é", &"x".repeat(65)] {
            assert!(!valid_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), "mnemo_".len() + 64);
    }
}
