//! `mnemo`: durable memory for LLM agents, from the command line. This file
//! only parses arguments and maps errors to exit codes; each command group
//! lives in `cmd/`.

#![forbid(unsafe_code)]

#[macro_use]
mod output;
mod cmd;
mod ctx;

use std::process::ExitCode;

use clap::Parser;

use crate::cmd::Command;
use crate::ctx::GlobalArgs;

/// mnemo: durable, searchable memory for LLM agents, kept as plain files.
///
/// A workspace holds MEMORY.md (core facts, always in the prompt), memory/
/// (history, daily logs, session notes, typed memories), sessions/ (one JSONL
/// log per conversation) and mnemo.toml. Start with `mnemo init`.
#[derive(Debug, Parser)]
#[command(
    name = "mnemo",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cmd::run(cli.command, &cli.global) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader had what it wanted (`mnemo get … | head -1`).
        Err(err) if output::is_stdout_closed(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = output::report_error(&err);
            ExitCode::from(code as u8)
        }
    }
}
