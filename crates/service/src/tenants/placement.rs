//! Workspaces on several PostgreSQL servers: the registry's database
//! (`--database`) lists the other servers and places each workspace on
//! one of them; every request reads the placement with the workspace's
//! registration (one primary-key read), so a move is seen by every
//! `mnemo serve` at once. New workspaces go to the server holding the
//! fewest; a workspace moves while in use
//! ([`mnemo::store_postgres::MoveReport`] says how).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mnemo::index_postgres::PostgresStore;
use mnemo::store_postgres::{Database, Tenant, HOME};
use serde::Serialize;

use super::{blocking, connect, index_options, valid_id, Tenants};
use crate::error::{Error, Result};

/// How long a request that met its workspace's old copy waits for the
/// registry to name the new one before its answer stands: longer than
/// a move's switch takes.
const SWITCH_WAIT: Duration = Duration::from_secs(10);

/// The registry and the database servers it places workspaces on.
pub struct Places {
    /// The registry's database: the tenants, their placement, the list
    /// of servers, and the rows of the workspaces placed on it.
    pub(super) db: Arc<Database>,
    pub(super) url: String,
    /// The other servers, by name, connected on first use.
    servers: Mutex<HashMap<String, (Arc<Database>, String)>>,
}

/// A database server and how many workspaces it holds.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ServerInfo {
    /// Its name (`home`: the registry's own database).
    pub name: String,
    /// Where it is, without a password.
    pub location: String,
    /// Workspaces placed on it.
    pub workspaces: i64,
}

/// The database servers of a registry.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ServersOutput {
    /// `home` first, then by name.
    pub servers: Vec<ServerInfo>,
}

/// The body of `POST /v1/servers`.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddServerArgs {
    /// The server's name: 1 to 32 lower-case letters, digits, `-` and `_`.
    pub name: String,
    /// Its URL (`postgres://…`, with pgvector); mnemo creates its tables
    /// there under the registry's schema.
    pub url: String,
}

/// The body of `POST /v1/workspaces/{id}/move`.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveArgs {
    /// The server to move the workspace to (`home`: the registry's own).
    pub to: String,
}

/// Where a workspace was placed when a request was authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub(super) seq: i64,
    pub(super) server: Option<String>,
}

impl Placement {
    /// Where registration `t` is placed.
    pub(super) fn of(t: &Tenant) -> Placement {
        Placement {
            seq: t.seq,
            server: t.server.clone(),
        }
    }
}

/// What a move did.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct MovedOutput {
    /// The workspace id.
    pub id: String,
    /// The server it was on.
    pub from: String,
    /// The server it is on now.
    pub to: String,
    /// Documents copied (again when they changed during the copy).
    pub documents: usize,
    /// Sessions copied.
    pub sessions: usize,
    /// Session lines copied.
    pub lines: usize,
    /// Catch-up passes before the switch.
    pub passes: usize,
    /// The whole move, in seconds.
    pub seconds: f64,
    /// How long writes to the workspace were held back at the switch, in
    /// milliseconds (requests wait, then go to the new server).
    pub pause_ms: f64,
}

fn name_of(server: Option<&str>) -> String {
    server.unwrap_or(HOME).to_string()
}

impl Places {
    pub(super) fn new(db: Arc<Database>, url: String) -> Places {
        Places {
            db,
            url,
            servers: Mutex::default(),
        }
    }

    /// The database holding `t`'s rows, and its URL.
    pub fn placed(&self, t: &Tenant) -> Result<(Arc<Database>, String)> {
        self.server(t.server.as_deref())
    }

    /// The database server `name` (`None`: the registry's), and its URL.
    fn server(&self, name: Option<&str>) -> Result<(Arc<Database>, String)> {
        let Some(name) = name else {
            return Ok((self.db.clone(), self.url.clone()));
        };
        if let Some(found) = self.lock().get(name) {
            return Ok(found.clone());
        }
        let entry = self
            .db
            .servers()?
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "the registry lists no database server {name:?}: `mnemo servers list` shows \
                     them, `mnemo servers add {name} URL` adds one"
                ))
            })?;
        let db = connect(&entry.url, self.db.schema())?;
        let found = (db, entry.url);
        self.lock().insert(name.to_string(), found.clone());
        Ok(found)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Arc<Database>, String)>> {
        self.servers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers workspace `id` on the server holding the fewest
    /// workspaces (the registry's own on a tie); `None` when the id is
    /// taken.
    pub(super) fn register(&self, id: &str, token_sha256: &[u8]) -> Result<Option<Tenant>> {
        let counts = self.db.placement_counts()?;
        let least = counts
            .iter()
            .min_by_key(|(name, n)| (*n, name != HOME, name.clone()))
            .map(|(name, _)| name.clone())
            .filter(|name| name != HOME);
        let Some(t) = self.db.register_on(id, token_sha256, least.as_deref())? else {
            return Ok(None);
        };
        if t.server.is_some() {
            let adopted = self.placed(&t).and_then(|(db, _)| Ok(db.adopt(&t)?));
            if let Err(e) = adopted {
                // Not created at all rather than registered with no rows.
                let _ = self.db.delete_workspace(id);
                return Err(e);
            }
        }
        Ok(Some(t))
    }

    /// Removes the marks moves of a deleted workspace left on the servers
    /// it was on before (best effort: a server that cannot be reached
    /// keeps its mark, a row that serves nothing).
    pub(super) fn drop_moved_marks(&self, t: &Tenant) {
        let Ok(servers) = self.db.servers() else {
            return;
        };
        for s in servers
            .iter()
            .filter(|s| Some(&s.name) != t.server.as_ref())
        {
            let dropped = self
                .server(Some(&s.name))
                .and_then(|(db, _)| Ok(db.drop_moved_mark(&t.id, t.seq)?));
            if let Err(e) = dropped {
                tracing::warn!("workspace {}: its mark on {} is left: {e}", t.id, s.name);
            }
        }
    }

    /// The servers and how many workspaces each holds.
    pub fn servers(&self) -> Result<ServersOutput> {
        let counts: HashMap<String, i64> = self.db.placement_counts()?.into_iter().collect();
        let mut servers = vec![ServerInfo {
            name: HOME.into(),
            location: self.db.location().to_string(),
            workspaces: counts.get(HOME).copied().unwrap_or(0),
        }];
        for s in self.db.servers()? {
            let location = s.location();
            servers.push(ServerInfo {
                workspaces: counts.get(&s.name).copied().unwrap_or(0),
                name: s.name,
                location,
            });
        }
        Ok(ServersOutput { servers })
    }

    /// Lists the server `name` at `url`, after creating mnemo's tables
    /// there (so a wrong URL is refused now, not at the first workspace).
    pub fn add_server(&self, name: &str, url: &str) -> Result<ServersOutput> {
        if !mnemo::store_postgres::valid_server_name(name) {
            return Err(Error::Invalid(format!(
                "{name:?} cannot name a database server: use 1 to 32 lower-case letters, \
                 digits, `-` and `_`, and not {HOME:?} (the registry's own database)"
            )));
        }
        connect(url, self.db.schema())?;
        self.db.add_server(name, url)?;
        self.lock().remove(name);
        self.servers()
    }

    /// Takes the server `name` off the list (refused while it holds a
    /// workspace).
    pub fn remove_server(&self, name: &str) -> Result<ServersOutput> {
        if !self.db.remove_server(name)? {
            return Err(Error::NotFound(format!(
                "the registry lists no database server {name:?}: `mnemo servers list` shows them"
            )));
        }
        self.lock().remove(name);
        self.servers()
    }

    /// Moves workspace `id` to the server `to` while it is in use (see
    /// [`mnemo::store_postgres::MoveReport`]), then deletes the old copy's
    /// rows and index.
    pub fn move_workspace(&self, id: &str, to: &str) -> Result<MovedOutput> {
        let t = valid_id(id)
            .then(|| self.db.tenant(id))
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no workspace {id:?}: GET /v1/workspaces lists them"
                ))
            })?;
        let to_name = (to != HOME).then_some(to);
        let (from_db, from_url) = self.placed(&t)?;
        let (to_db, _) = self.server(to_name)?;
        if t.server.as_deref() == to_name {
            return Err(Error::Invalid(format!(
                "the workspace {id:?} is on {to} already: `mnemo servers list` shows the others"
            )));
        }
        if to_name.is_some() {
            to_db.adopt(&t)?;
        }
        let report = self.db.move_rows(&t, &from_db, &to_db, to_name)?;
        // The old copy answers nothing any more: its rows and index go.
        if let Err(e) = from_db.drop_rows(id) {
            tracing::warn!("workspace {id}: its old copy's rows are left: {e}");
        }
        if let Err(e) = PostgresStore::drop_index(&index_options(&self.db, &from_url, t.seq)) {
            tracing::warn!("workspace {id}: its old copy's index is left: {e}");
        }
        Ok(MovedOutput {
            id: id.to_string(),
            from: name_of(t.server.as_deref()),
            to: to.to_string(),
            documents: report.documents,
            sessions: report.sessions,
            lines: report.lines,
            passes: report.passes,
            seconds: report.seconds,
            pause_ms: report.pause_ms,
        })
    }
}

impl Tenants {
    /// The database servers and how many workspaces each holds.
    pub async fn servers(self: &Arc<Self>) -> Result<ServersOutput> {
        let me = self.clone();
        blocking(move || me.places.servers()).await
    }

    /// Lists a database server to place workspaces on.
    pub async fn add_server(self: &Arc<Self>, args: AddServerArgs) -> Result<ServersOutput> {
        let me = self.clone();
        blocking(move || me.places.add_server(&args.name, &args.url)).await
    }

    /// Moves workspace `id` to the server `to` while it is in use.
    pub async fn move_workspace(self: &Arc<Self>, id: String, to: String) -> Result<MovedOutput> {
        let me = self.clone();
        let moved = blocking(move || me.places.move_workspace(&id, &to)).await?;
        self.sweep_old_copy_later(&moved);
        Ok(moved)
    }

    /// Once the requests that were under way on the old copy are over,
    /// drops its index schema again: one of them may have opened it anew
    /// after the move dropped it (its rows are fenced; an index is not).
    fn sweep_old_copy_later(self: &Arc<Self>, moved: &MovedOutput) {
        let me = Arc::downgrade(self);
        let (id, from) = (moved.id.clone(), moved.from.clone());
        std::thread::spawn(move || {
            std::thread::sleep(super::SWEEP_AFTER);
            let Some(me) = me.upgrade() else { return };
            let Ok(Some(t)) = me.places.db.tenant(&id) else {
                return;
            };
            let from = (from != HOME).then_some(from.as_str());
            if t.server.as_deref() == from {
                return; // moved back meanwhile: that copy is the live one
            }
            let dropped = me.places.server(from).and_then(|(_, url)| {
                Ok(PostgresStore::drop_index(&index_options(
                    &me.places.db,
                    &url,
                    t.seq,
                ))?)
            });
            if let Err(e) = dropped {
                tracing::warn!("workspace {id}: cannot sweep its old copy's index: {e}");
            }
        });
    }

    /// True when the workspace `id`, placed as `was` when its request
    /// was authorized, is placed elsewhere now: a request that failed on
    /// its old copy may be sent again, to the new one (a write the old
    /// copy refused wrote nothing). While a switch is under way (the old
    /// copy fenced, the registry not yet told) this waits for it.
    pub async fn moved_away(self: &Arc<Self>, id: &str, was: &Placement) -> bool {
        let started = Instant::now();
        loop {
            let (me, id1) = (self.clone(), id.to_string());
            let now = blocking(move || Ok(me.places.db.tenant(&id1)?)).await;
            match now {
                Ok(Some(t)) if t.seq == was.seq && t.server != was.server => return true,
                Ok(Some(t)) if t.seq == was.seq => {
                    // Still placed there: a switch under way if that copy
                    // no longer holds the workspace.
                    let me = self.clone();
                    let held =
                        blocking(move || Ok(me.places.placed(&t)?.0.holds(&t.id, t.seq)?)).await;
                    if !matches!(held, Ok(false)) || started.elapsed() > SWITCH_WAIT {
                        return false;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                _ => return false,
            }
        }
    }
}
