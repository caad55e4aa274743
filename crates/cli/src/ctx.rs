//! What every command needs: the workspace and its configuration, resolved
//! from flags, then the environment, then defaults.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::output::UsageError;
use clap::Args;
use std::sync::Arc;

use mnemo::core::{Config, Workspace};
use mnemo::Mnemo;
use mnemo_service::tenants::DatabaseWorkspace;
use mnemo_service::Service;

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// The workspace folder [default: $MNEMO_WORKSPACE, else ~/.mnemo]
    #[arg(long, short = 'w', global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Override a configuration value, e.g. `--set session.fsync=always`
    /// (repeatable; wins over mnemo.toml and MNEMO_<SECTION>__<KEY> variables)
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,

    /// Use workspace --id of this PostgreSQL database (with pgvector)
    /// instead of a folder: every command reads and writes its rows, as
    /// `mnemo serve --database` does; the --workspace folder then holds
    /// only mnemo.toml and caches
    #[arg(
        long,
        global = true,
        env = "MNEMO_DATABASE",
        hide_env_values = true,
        value_name = "URL"
    )]
    pub database: Option<String>,

    /// With --database: the workspace's id (`mnemo --database URL --id ID
    /// init` creates it)
    #[arg(long, global = true, env = "MNEMO_WORKSPACE_ID", value_name = "ID")]
    pub id: Option<String>,

    /// With --database: the schema of the workspaces' rows (their indexes
    /// are the schemas SCHEMA_ix<n>) [default: mnemo_store]
    #[arg(long, global = true, value_name = "SCHEMA")]
    pub schema: Option<String>,
}

/// The schema of a database's workspace rows unless `--schema` says otherwise.
pub const DEFAULT_SCHEMA: &str = "mnemo_store";

impl GlobalArgs {
    /// Every `--set`, before and after the subcommand, in the order given:
    /// clap keeps only the last place a global option appeared
    /// (`mnemo --set a=1 search --set b=2 q` would lose `a=1`), so the
    /// command line is read again for them.
    pub(crate) fn all_overrides(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            if a == "--" {
                break;
            }
            if a == "--set" {
                found.extend(args.next());
            } else if let Some(v) = a.strip_prefix("--set=") {
                found.push(v.to_string());
            }
        }
        // A library caller (or a test) builds GlobalArgs itself.
        if self.overrides.iter().all(|o| found.contains(o)) && !found.is_empty() {
            found
        } else {
            self.overrides.clone()
        }
    }
}

/// A resolved workspace plus its configuration.
pub struct Ctx {
    /// The workspace folder; with a database, the folder of mnemo.toml
    /// and this machine's caches.
    pub workspace: Workspace,
    pub config: Config,
    /// `--database`: the workspaces are rows of this database.
    pub database: Option<DatabaseTarget>,
}

/// Where `--database`, `--schema` and `--id` point.
pub struct DatabaseTarget {
    pub url: String,
    pub schema: String,
    /// The workspace; `mnemo serve --database` without one serves them all.
    pub id: Option<String>,
}

impl DatabaseTarget {
    /// The workspace id, which every command but `serve` needs.
    pub fn id(&self) -> Result<&str> {
        self.id.as_deref().ok_or_else(|| {
            UsageError(
                "--database needs --id, the workspace to use (or set MNEMO_WORKSPACE_ID); `mnemo --database URL --id ID init` creates one".into(),
            )
            .into()
        })
    }
}

impl GlobalArgs {
    /// Resolves the workspace and loads its configuration.
    pub fn ctx(&self) -> Result<Ctx> {
        let env = std::env::var(mnemo::core::workspace::WORKSPACE_ENV).ok();
        let workspace = Workspace::resolve(self.workspace.as_deref(), env.as_deref()).context(
            "no workspace: pass --workspace DIR or set MNEMO_WORKSPACE (no home folder was found)",
        )?;
        let mut config = Config::load(&workspace.config_path())?;
        config.apply_env(std::env::vars());
        for o in self.all_overrides() {
            let (k, v) = o.split_once('=').ok_or_else(|| {
                UsageError(format!(
                    "--set {o:?} is not KEY=VALUE: write it like --set session.fsync=always"
                ))
            })?;
            mnemo::check_setting(k.trim()).map_err(|e| UsageError(format!("--set {o}: {e}")))?;
            config.set(k.trim(), v.trim());
        }
        let database = self.database.clone().map(|url| DatabaseTarget {
            url,
            schema: self
                .schema
                .clone()
                .unwrap_or_else(|| DEFAULT_SCHEMA.to_string()),
            id: self.id.clone(),
        });
        Ok(Ctx {
            workspace,
            config,
            database,
        })
    }
}

impl Ctx {
    /// The workspace, opened: the folder, or with `--database` the
    /// workspace `--id` of the database. Every command that reads or
    /// writes a workspace opens it here, so each works on both.
    pub fn open(self) -> Result<Arc<Mnemo>> {
        let config = self.config.clone();
        self.open_with(config)
    }

    /// [`Ctx::open`] for a server: a folder need not have been
    /// initialised, it becomes a workspace as the server writes (the
    /// clients' libraries start `mnemo serve` on a new folder).
    pub fn open_to_serve(self) -> Result<Arc<Mnemo>> {
        if self.database.is_none() {
            return Ok(Arc::new(Mnemo::open(self.workspace, self.config)?));
        }
        self.open()
    }

    /// [`Ctx::open`] with `config` in place of the workspace's.
    pub fn open_with(&self, config: Config) -> Result<Arc<Mnemo>> {
        let Some(db) = &self.database else {
            self.require_initialised()?;
            return Ok(Arc::new(Mnemo::open(self.workspace.clone(), config)?));
        };
        let id = db.id()?;
        let workspaces = self.database_workspaces()?;
        match workspaces.open(id, config) {
            Ok(mnemo) => Ok(Arc::new(mnemo)),
            // The same exit code and `--json` code as a missing folder.
            Err(mnemo_service::Error::NotFound(why)) => Err(NoWorkspace(why).into()),
            Err(e) => Err(e.into()),
        }
    }

    /// The workspaces of `--database`, their caches kept under this
    /// machine's workspace folder.
    pub fn database_workspaces(&self) -> Result<DatabaseWorkspace> {
        let db = self.database.as_ref().ok_or_else(|| {
            UsageError("this command needs --database URL (or MNEMO_DATABASE)".into())
        })?;
        Ok(DatabaseWorkspace::connect(
            &db.url,
            &db.schema,
            &self.workspace.state_dir().join("tenants"),
        )?)
    }

    /// Fails when the workspace is a database's: for the commands that
    /// work on a folder alone, with what to do instead.
    pub fn require_folder(&self, what: &str) -> Result<()> {
        if self.database.is_some() {
            return Err(UsageError(format!(
                "{what} works on a workspace folder, not a database's: leave out --database (and MNEMO_DATABASE)"
            ))
            .into());
        }
        Ok(())
    }

    /// The service over this workspace, with the chat model `model` names
    /// (else the configuration's); the workspace must exist.
    pub fn service(self, model: &crate::cmd::ModelArgs) -> Result<Arc<Service>> {
        let overrides = model.overrides();
        Ok(Service::with_provider(self.open()?, overrides))
    }

    /// Fails with [`NoWorkspace`] when the workspace folder was never
    /// initialised (a database's workspace is looked up when opened).
    pub fn require_initialised(&self) -> Result<()> {
        if self.database.is_none() && !self.workspace.root().exists() {
            let dir = self.workspace.root().display();
            return Err(NoWorkspace(format!(
                "workspace {dir} does not exist: run `mnemo init --workspace {dir}` to create it, \
                 or point --workspace (or MNEMO_WORKSPACE) at an existing workspace"
            ))
            .into());
        }
        Ok(())
    }
}

/// The workspace folder does not exist. Its own exit code
/// ([`NoWorkspace::EXIT_CODE`]) and `--json` code (`no_workspace`): a
/// script tells "run `mnemo init` first" from a failure of the command.
#[derive(Debug)]
pub struct NoWorkspace(pub String);

impl NoWorkspace {
    /// The exit code of a command run on a workspace that does not exist.
    pub const EXIT_CODE: i32 = 8;
    /// Its `code` in a `--json` error.
    pub const CODE: &'static str = "no_workspace";
}

impl std::fmt::Display for NoWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoWorkspace {}

/// The async runtime for commands that serve or call models.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    /// The calls that open a workspace's stores, and the places allowed
    /// to make them: every command opens its workspace through
    /// [`super::Ctx::open`], so each works on a folder and on a database
    /// alike. The others work on something that is not the user's
    /// workspace, and say so.
    const OPENERS: &[(&str, &[(&str, &str)])] = &[
        ("Mnemo::open", &[("ctx.rs", "the one place")]),
        ("open_with_storage", &[]),
        ("SessionStore::from_config", &[]),
        ("MemoryStore::from_config", &[]),
        ("SessionStore::with_storage", &[]),
        ("MemoryStore::with_storage", &[]),
        ("DatabaseWorkspace::connect", &[("ctx.rs", "the one place")]),
        (
            "Tenants::connect",
            &[(
                "serve.rs",
                "every workspace of a database, each by its token",
            )],
        ),
        (
            "SessionStore::new",
            &[("bench.rs", "the append benchmark's scratch logs")],
        ),
        (
            "FileStorage::new",
            &[(
                "import.rs",
                "the folder side of a copy to or from a database",
            )],
        ),
        (
            "Database::connect",
            &[("import.rs", "the database side of that copy")],
        ),
        (
            "open_index(",
            &[
                (
                    "recall.rs",
                    "`index --copy-to`: a copy of the index in a database",
                ),
                ("eval.rs", "the benchmarks' scratch workspaces"),
            ],
        ),
    ];

    #[test]
    fn no_command_opens_a_store_but_through_ctx() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        let mut dirs = vec![src];
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 10, "the sources were not found");
        let mut found = Vec::new();
        for f in &files {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(f).unwrap();
            // This file's own list is not a call.
            let code = if name == "ctx.rs" {
                text.split("#[cfg(test)]").next().unwrap_or("").to_string()
            } else {
                text
            };
            for (call, allowed) in OPENERS {
                let n = code.matches(call).count();
                if n > 0 && !allowed.iter().any(|(file, _)| *file == name) {
                    found.push(format!("{name}: {call} ({n}x)"));
                }
            }
        }
        assert!(
            found.is_empty(),
            "commands that open a store themselves (open the workspace with Ctx::open, \
             or add the place to OPENERS with why it is not the user's workspace): {found:?}"
        );
    }
}
