//! The command tree. Each group is a module with its own `clap` types and a
//! `run` function; nothing here does work of its own.

mod bench;
mod bench_tenants;
mod chat;
mod engine;
mod eval;
pub(crate) mod hook;
mod import;
mod init;
mod log;
mod mcp;
mod memory;
mod recall;
mod serve;
mod servers;
mod session;
mod setup;
mod warm;

use anyhow::Result;
use clap::Subcommand;

use crate::ctx::GlobalArgs;

pub use engine::ModelArgs;

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
    /// Bring existing nanobot, OpenClaw or Claude Code memory and conversations into this workspace
    Import(import::ImportArgs),
    /// Write this workspace's sessions where another tool reads them (nanobot)
    #[command(subcommand)]
    Export(import::ExportCommand),
    /// Index memory and session files for search (incremental; --watch keeps it current)
    Index(recall::IndexArgs),
    /// Search memory and past sessions (hybrid BM25 + vectors; keyword-only without a model)
    Search(recall::SearchArgs),
    /// Print lines of a memory file (MEMORY.md or memory/…md); paths cannot leave the workspace
    Get(recall::GetArgs),
    /// Show the index: files, chunks, model, dimensions and search mode
    Status(recall::StatusArgs),
    /// Distil everything past the cursor into long-term memory now (as /new does)
    Consolidate(engine::ConsolidateArgs),
    /// Tidy long-term memory (memory/facts.md): merge duplicate facts, fold
    /// old daily logs in; refused when it would lose anything; --undo
    /// reverses the newest dream
    Dream(engine::DreamArgs),
    /// Run the compaction pipeline (or one level of it) on a session
    Compact(engine::CompactArgs),
    /// Show the request that would be sent for a message, with the tokens of each part
    ///
    /// Needs no chat model: without one the prompt is shown all the same
    /// (model "none"), only the recall side query is skipped, as over HTTP.
    Context(engine::ContextArgs),
    /// Close a session: consolidate its tail and write a session note memory/DATE-slug.md
    New(engine::NewArgs),
    /// Talk to an agent that uses this memory (interactive; /help lists the commands)
    ///
    /// Each turn runs the whole engine: consolidation, flush and compaction before
    /// the turn (reported with the tokens they freed), the recall side query, then
    /// the model with the memory tools (memory_search, memory_get, memory_write),
    /// called again after each tool result up to --max-iterations times. Every
    /// message, tool call and tool result goes to the session log. Reads plain lines
    /// from stdin, so it also works piped or under tmux.
    Chat(chat::ChatArgs),
    /// Run one agent turn non-interactively: the answer on stdout, notices on stderr
    ///
    /// The same turn as in `mnemo chat`: engine, recall, memory tools, session log.
    /// With --json, one object with the answer, the tool calls and the engine events.
    ///
    /// Example: mnemo run --session cli:direct "what did we decide about deploys?"
    Run(chat::RunArgs),
    /// Measure retrieval and write-path quality on conversation benchmarks
    #[command(subcommand)]
    Eval(eval::EvalCommand),
    /// Measure mnemo's speed on this machine
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Serve the memory tools over MCP (stdio, or streamable HTTP with --http ADDR)
    ///
    /// Tools: memory_search, memory_get, memory_write, memory_forget,
    /// session_append and session_context. On stdio (the default) a client
    /// starts it as a subprocess, e.g. in Claude Code:
    /// `claude mcp add mnemo -- mnemo --workspace ~/notes mcp`.
    /// With --http the endpoint is http://ADDR/mcp; off loopback it needs --token.
    Mcp(mcp::McpArgs),
    /// Serve the HTTP API (JSON; the OpenAPI description at /openapi.json)
    ///
    /// Every endpoint answers JSON, and errors are {"error": {"code",
    /// "message"}} (the codes of `mnemo --help`). Consolidate, compact,
    /// close and turn need a chat model (501 without one). Off loopback every
    /// request needs `Authorization: Bearer TOKEN` (--token).
    #[command(after_long_help = serve::endpoints_help())]
    Serve(serve::ServeArgs),
    /// See what the agent remembers, and why: the memory inspector in a browser
    ///
    /// Serves the workspace's API and the inspector page on loopback behind
    /// a token made for this run, and prints the address that opens it
    /// (the token is in the address's #fragment, which the browser never
    /// sends). Views: memory (every fact with where it came from and each
    /// later change; memory as of a day), changes to review (each
    /// consolidation and dream as a diff, with undo; the facts the write
    /// path refused, and why), sessions (timeline, compactions, the prompt's
    /// size over the session), the prompt of the next turn part by part,
    /// search with the parts of each score, the index and saved eval
    /// reports. `mnemo serve` serves the same page at /.
    Inspect(serve::InspectArgs),
    /// Connect an agent to this workspace's memory (Claude Code: the MCP
    /// server and the hooks, merged into the project's settings; --undo
    /// takes them out)
    #[command(subcommand)]
    Setup(setup::SetupCommand),
    /// The hooks `mnemo setup` installs, run by the agent with the event's JSON on stdin
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// The PostgreSQL servers a database of workspaces spreads them over, and
    /// moving a workspace between them while it is in use (with --database)
    #[command(subcommand)]
    Servers(servers::ServersCommand),
}

/// Runs one command.
pub fn run(command: Command, global: &GlobalArgs) -> Result<()> {
    match command {
        Command::Init(args) => init::run(args, global),
        Command::Session(c) => session::run(c, global),
        Command::Memory(c) => memory::run(c, global),
        Command::Log(args) => log::run(args, global),
        Command::Import(args) => import::run(args, global),
        Command::Export(c) => import::export(c, global),
        Command::Bench(c) => bench::run(c, global),
        Command::Mcp(args) => mcp::run(args, global),
        Command::Serve(args) => serve::run(args, global),
        Command::Inspect(args) => serve::inspect(args, global),
        Command::Eval(c) => eval::run(c, global),
        Command::Consolidate(a) => engine::consolidate(a, global),
        Command::Compact(a) => engine::compact(a, global),
        Command::Dream(a) => engine::dream(a, global),
        Command::Context(a) => engine::context(a, global),
        Command::New(a) => engine::new_session(a, global),
        Command::Chat(a) => chat::chat(a, global),
        Command::Run(a) => chat::run(a, global),
        Command::Index(a) => recall::index(a, global),
        Command::Search(a) => recall::search(a, global),
        Command::Get(a) => recall::get(a, global),
        Command::Status(a) => recall::status(a, global),
        Command::Setup(c) => setup::run(c, global),
        Command::Hook(c) => hook::run(c, global),
        Command::Servers(c) => servers::run(c, global),
    }
}
