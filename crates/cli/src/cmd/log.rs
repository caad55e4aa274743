//! `mnemo log`.

use anyhow::Result;
use clap::Args;
use mnemo_service::args::WriteArgs;
use mnemo_service::output::WriteOutput;

use crate::ctx::GlobalArgs;

/// Arguments of `mnemo log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The text to append; each line becomes a `- [HH:MM] …` item. Lines the
    /// log already holds are skipped.
    #[arg(required = true, num_args = 1..)]
    pub text: Vec<String>,
    /// Print the answer as one JSON object (memory_write's)
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: LogArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let (service, rt) = super::memory::service(ctx)?;
    let out = rt.block_on(service.write(WriteArgs::daily(args.text.join(" "))))?;
    if args.json {
        outln!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    if let WriteOutput::Daily { path, written, .. } = &out {
        if *written == 0 {
            outln!("{path} already has this; nothing appended");
        } else {
            outln!("appended {written} line(s) to {path}");
        }
    }
    Ok(())
}
