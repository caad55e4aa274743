//! The command tree. Each group is a module with its own `clap` types and a
//! `run` function; nothing here does work of its own.

mod bench;
mod init;
mod log;
mod memory;
mod session;

use anyhow::Result;
use clap::Subcommand;

use crate::ctx::GlobalArgs;

/// Every `mnemo` command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a workspace: MEMORY.md, memory/, sessions/, mnemo.toml, .mnemo/
    ///
    /// Safe to run again: existing files are never overwritten.
    Init(init::InitArgs),
    /// Record and read conversations (one append-only JSONL log per session key)
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// Read and write long-term memory (MEMORY.md and typed memory files)
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Append a line to today's daily log, memory/YYYY-MM-DD.md
    Log(log::LogArgs),
    /// Measure mnemo's speed on this machine
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// Runs one command.
pub fn run(command: Command, global: &GlobalArgs) -> Result<()> {
    match command {
        Command::Init(args) => init::run(args, global),
        Command::Session(c) => session::run(c, global),
        Command::Memory(c) => memory::run(c, global),
        Command::Log(args) => log::run(args, global),
        Command::Bench(c) => bench::run(c, global),
    }
}
