//! `mnemo log`.

use anyhow::Result;
use clap::Args;
use mnemo_store::MemoryStore;

use crate::ctx::GlobalArgs;

/// Arguments of `mnemo log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The text to append; each line becomes a `- [HH:MM] …` item. Lines the
    /// log already holds are skipped.
    #[arg(required = true, num_args = 1..)]
    pub text: Vec<String>,
}

pub fn run(args: LogArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let store = MemoryStore::from_config(&ctx.workspace, &ctx.config)?;
    store.validate()?;
    let outcome = store.append_daily(&args.text.join(" "), chrono::Utc::now(), true)?;
    if outcome.written == 0 {
        outln!("{} already has this; nothing appended", outcome.path);
    } else {
        outln!("appended {} line(s) to {}", outcome.written, outcome.path);
    }
    Ok(())
}
