//! `mnemo log`: one entry (or one per line of stdin) in today's daily log.

use std::io::{IsTerminal, Read};

use anyhow::{Context, Result};
use clap::Args;
use mnemo_service::args::WriteArgs;
use mnemo_service::output::WriteOutput;

use crate::ctx::GlobalArgs;
use crate::output::UsageError;

/// Arguments of `mnemo log`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  mnemo log \"deploy moved to Thursday\"\n  \
printf 'first entry\\nsecond entry\\n' | mnemo log")]
pub struct LogArgs {
    /// The text to append, as one argument (quote it): each of its lines
    /// becomes a `- [HH:MM] …` item, and lines the log already holds are
    /// skipped. Without it, or with `-`, the text is read from stdin.
    /// Several arguments are refused rather than joined: quote the text, or
    /// pipe one entry per line
    #[arg(value_name = "TEXT")]
    pub text: Vec<String>,
    /// Print the answer as one JSON object (memory_write's)
    #[arg(long)]
    pub json: bool,
}

/// The text to log: the one argument, or stdin for `-` or none.
fn text_of(args: &LogArgs) -> Result<String> {
    let text = match args.text.as_slice() {
        [one] if one != "-" => one.clone(),
        [] | [_] => {
            let stdin = std::io::stdin();
            // Waiting on a terminal for text no one knows to type helps no one.
            if args.text.is_empty() && stdin.is_terminal() {
                return Err(UsageError(
                    "nothing to log: give the text (mnemo log \"deploy moved to Thursday\"), \
                     or pipe it on stdin, one entry per line"
                        .into(),
                )
                .into());
            }
            let mut s = String::new();
            stdin
                .lock()
                .read_to_string(&mut s)
                .context("cannot read the text to log from stdin")?;
            s
        }
        several => {
            return Err(UsageError(format!(
                "mnemo log takes the text as one argument, and got {}: quote it \
                 (mnemo log \"{}\" for one entry), or pipe one entry per line on stdin",
                several.len(),
                several.join(" ")
            ))
            .into())
        }
    };
    if text.trim().is_empty() {
        return Err(UsageError(
            "nothing to log: the text is empty (give it as one argument, or pipe it on stdin)"
                .into(),
        )
        .into());
    }
    Ok(text)
}

pub fn run(args: LogArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let text = text_of(&args)?;
    let (service, rt) = super::memory::service(ctx)?;
    let out = rt.block_on(service.write(WriteArgs::daily(text)))?;
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
