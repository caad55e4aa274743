//! `mnemo init`.

use std::fs;

use anyhow::{Context, Result};
use clap::Args;

use crate::ctx::GlobalArgs;

/// Arguments of `mnemo init`.
#[derive(Debug, Args)]
pub struct InitArgs {}

const MNEMO_TOML: &str = include_str!("../../templates/mnemo.toml");

pub fn run(_args: InitArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    if let Some(db) = &ctx.database {
        return init_database(&ctx, db.id()?);
    }
    let ws = &ctx.workspace;
    let created = create(ws)?;
    if created.is_empty() {
        outln!(
            "workspace {} is already initialised; nothing changed",
            ws.root().display()
        );
    } else {
        outln!("initialised workspace {}", ws.root().display());
        for c in created {
            outln!("  created {c}");
        }
        outln!("next: `mnemo session append cli:direct --role user --content \"hello\"`, then `mnemo memory show`");
    }
    Ok(())
}

/// `mnemo --database URL --id ID init`: registers the workspace in the
/// database (its MEMORY.md and index, as `POST /v1/workspaces` makes
/// them) and shows its token for HTTP and MCP, once.
fn init_database(ctx: &crate::ctx::Ctx, id: &str) -> Result<()> {
    // The folder keeps this machine's settings and caches: its mnemo.toml
    // as a folder's `init` writes it.
    let config = ctx.workspace.config_path();
    if !config.exists() {
        fs::create_dir_all(ctx.workspace.state_dir())
            .with_context(|| format!("cannot create {}", ctx.workspace.state_dir().display()))?;
        mnemo::store::fsutil::atomic_write(&config, MNEMO_TOML.as_bytes())?;
    }
    let workspaces = ctx.database_workspaces()?;
    let location = workspaces.database().location().to_string();
    match workspaces.create(id) {
        Ok(created) => {
            outln!("initialised workspace {id} in {location}");
            outln!(
                "its token for `mnemo serve --database` (shown this once): {}",
                created.token
            );
            outln!("next: `mnemo --database URL --id {id} session append cli:direct --role user --content \"hello\"`");
            Ok(())
        }
        Err(mnemo_service::Error::Exists(_)) => {
            outln!("workspace {id} in {location} is already initialised; nothing changed");
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Creates what of the workspace `ws` is missing (never overwriting a
/// file) and returns what it created.
pub(crate) fn create(ws: &mnemo::core::Workspace) -> Result<Vec<String>> {
    let mut created = Vec::new();
    for dir in [
        ws.root().to_path_buf(),
        ws.memory_dir(),
        ws.sessions_dir(),
        ws.state_dir(),
    ] {
        if !dir.exists() {
            fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            created.push(format!("{}/", dir.display()));
        }
    }
    for (path, text) in [
        (ws.memory_md(), mnemo::store::memory::INITIAL_MEMORY_MD),
        (ws.config_path(), MNEMO_TOML),
    ] {
        if !path.exists() {
            mnemo::store::fsutil::atomic_write(&path, text.as_bytes())?;
            created.push(path.display().to_string());
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The commented file `init` writes states the defaults, not other values.
    #[test]
    fn template_states_the_defaults() {
        let config = mnemo::core::Config::parse(MNEMO_TOML).unwrap();
        let index = mnemo::index::IndexSettings::from_config(&config).unwrap();
        assert_eq!(index.index, mnemo::index::IndexOptions::default());
        assert_eq!(index.search, mnemo::index::SearchOptions::default());
        let engine: mnemo::engine::EngineSettings = config.section("engine").unwrap();
        assert_eq!(engine, mnemo::engine::EngineSettings::default());
        assert!(
            config.table().get("provider").is_none(),
            "no model is chosen for the user"
        );
    }

    /// A key the file sets wins over the `[memory] profile`, so the
    /// template leaves the profile's keys out: a workspace switched to
    /// `profile = "openclaw"` must stop consolidating.
    #[test]
    fn template_leaves_the_profile_keys_to_the_profile() {
        let config = mnemo::core::Config::parse(MNEMO_TOML).unwrap();
        let engine = config.table().get("engine").and_then(|e| e.as_table());
        for key in mnemo::engine::settings::PROFILE_KEYS {
            assert!(
                engine.is_none_or(|e| !e.contains_key(*key)),
                "the template sets [engine] {key}"
            );
        }
    }
}
