//! `mnemo import nanobot|openclaw|claude-code PATH [--dry-run]`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use mnemo_import::{import, ImportOptions, Tool};

use crate::ctx::GlobalArgs;
use crate::output::UsageError;

/// Arguments of `mnemo import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// nanobot (a workspace with sessions/ and memory/), openclaw (a workspace
    /// or the state folder ~/.openclaw) or claude-code (a memory folder,
    /// ~/.claude/projects/<project>/memory)
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The folder to import from; it is only read
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// List what would be done (create/append/skip, with paths and counts) and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(args: ImportArgs, global: &GlobalArgs) -> Result<()> {
    let tool: Tool = args.tool.parse().map_err(UsageError)?;
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let options = ImportOptions {
        dry_run: args.dry_run,
        session: ctx.config.section("session")?,
    };
    let report = import(&ctx.workspace, tool, &args.path, &options).map_err(|e| match e {
        // The store's errors carry their own exit codes.
        mnemo_import::Error::Store(inner) => anyhow::Error::new(inner),
        other => anyhow::Error::new(UsageError(other.to_string())),
    })?;
    for action in &report.actions {
        outln!("{action}");
    }
    outln!("{}", report.summary());
    if report.has_problems() {
        anyhow::bail!(
            "the import finished with problems (the `error` and `refuse` lines above); what could be imported was"
        );
    }
    Ok(())
}
