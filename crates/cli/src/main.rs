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
    max_term_width = 100,
    after_help = EXIT_CODES
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// What each exit code means (the servers' error `code`s, and the CLI's
/// own `no_workspace`).
const EXIT_CODES: &str = "Exit codes: 0 done; 1 I/O or internal error (io, internal); 2 invalid input or a \
path outside the workspace (invalid_input, forbidden); 3 not found (not_found); 4 stored data could \
not be read (corrupt); 5 another writer holds it, retry (busy); 6 the model provider failed (provider); \
7 configuration missing or wrong (config); 8 the workspace does not exist: run `mnemo init` \
(no_workspace). With --json, an error is also printed on stdout as \
{\"error\": {\"code\", \"message\"}}.";

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A hook's command line that does not parse (written by another
        // release, edited by hand) must not block the agent: exit 2 would
        // stop a Claude Code prompt. It says why on stderr and exits 0.
        Err(e) if is_hook_call() && e.use_stderr() => {
            eprintln!("mnemo hook: {e}the session goes on without the hook");
            return ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    // A command asked for JSON gets its error as JSON too.
    let json = std::env::args()
        .take_while(|a| a != "--")
        .any(|a| a == "--json");
    match cmd::run(cli.command, &cli.global) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader had what it wanted (`mnemo get … | head -1`).
        Err(err) if output::is_stdout_closed(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let code = output::report_error(&err, json);
            ExitCode::from(code as u8)
        }
    }
}

/// True when the command line runs `mnemo [global options] hook …`, a
/// hook an agent calls.
fn is_hook_call() -> bool {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // The global options that take a value.
            "--workspace" | "-w" | "--set" => {
                args.next();
            }
            a if a.starts_with('-') => {}
            a => return a == "hook",
        }
    }
    false
}
