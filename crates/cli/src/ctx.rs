//! What every command needs: the workspace and its configuration, resolved
//! from flags, then the environment, then defaults.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::output::UsageError;
use clap::Args;
use std::sync::Arc;

use mnemo::core::{Config, Workspace};
use mnemo::Mnemo;
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
}

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
    pub workspace: Workspace,
    pub config: Config,
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
        Ok(Ctx { workspace, config })
    }
}

impl Ctx {
    /// The service over this workspace, with the chat model `model` names
    /// (else the configuration's); the workspace must exist.
    pub fn service(self, model: &crate::cmd::ModelArgs) -> Result<Arc<Service>> {
        self.require_initialised()?;
        let mnemo = Arc::new(Mnemo::open(self.workspace, self.config)?);
        Ok(Service::with_provider(mnemo, model.overrides()))
    }

    /// Fails with [`NoWorkspace`] when the workspace was never initialised.
    pub fn require_initialised(&self) -> Result<()> {
        if !self.workspace.root().exists() {
            return Err(NoWorkspace(self.workspace.root().to_path_buf()).into());
        }
        Ok(())
    }
}

/// The workspace folder does not exist. Its own exit code
/// ([`NoWorkspace::EXIT_CODE`]) and `--json` code (`no_workspace`): a
/// script tells "run `mnemo init` first" from a failure of the command.
#[derive(Debug)]
pub struct NoWorkspace(pub PathBuf);

impl NoWorkspace {
    /// The exit code of a command run on a workspace that does not exist.
    pub const EXIT_CODE: i32 = 8;
    /// Its `code` in a `--json` error.
    pub const CODE: &'static str = "no_workspace";
}

impl std::fmt::Display for NoWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.0.display();
        write!(
            f,
            "workspace {dir} does not exist: run `mnemo init --workspace {dir}` to create it, \
             or point --workspace (or MNEMO_WORKSPACE) at an existing workspace"
        )
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
