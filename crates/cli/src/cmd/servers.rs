//! `mnemo servers`: the PostgreSQL servers a database of workspaces
//! places them on, and moving a workspace between them while it is in use.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::ctx::GlobalArgs;

/// `mnemo servers …` (with `--database`: the registry's database).
#[derive(Debug, Subcommand)]
pub enum ServersCommand {
    /// The database servers and how many workspaces each holds (`home`:
    /// the --database one, which keeps the registry)
    List(JsonArgs),
    /// List a PostgreSQL server (with pgvector) to place new workspaces on
    ///
    /// mnemo creates its tables there first, under the same schema, so a
    /// wrong URL is refused now. New workspaces go to the server holding
    /// the fewest. Every `mnemo serve --database` of the registry sees the
    /// list at once.
    Add(AddArgs),
    /// Take a server off the list (refused while it holds a workspace)
    Remove(RemoveArgs),
    /// Move a workspace to another server while it is in use
    ///
    /// Its rows are copied, then what changed meanwhile, until little is
    /// left; then writes wait (the pause is reported, usually some
    /// milliseconds) while the last changes are copied and the registry
    /// points at the new copy. Requests that met the old copy are run
    /// again on the new one by `mnemo serve`; the old copy's rows and
    /// index are deleted.
    Move(MoveArgs),
}

/// `--json`.
#[derive(Debug, Args)]
pub struct JsonArgs {
    /// Print the answer as JSON
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo servers add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name: lower-case letters, digits, `-` and `_`
    pub name: String,
    /// Its URL: postgres://user:password@host:port/database
    pub url: String,
    #[command(flatten)]
    pub out: JsonArgs,
}

/// Arguments of `mnemo servers remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The server's name
    pub name: String,
    #[command(flatten)]
    pub out: JsonArgs,
}

/// Arguments of `mnemo servers move`.
#[derive(Debug, Args)]
pub struct MoveArgs {
    /// The workspace id
    pub id: String,
    /// The server to move it to (`home`: the --database one)
    #[arg(long)]
    pub to: String,
    #[command(flatten)]
    pub out: JsonArgs,
}

pub fn run(command: ServersCommand, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    let places = ctx.database_workspaces()?;
    let places = places.places();
    let (listed, json) = match command {
        ServersCommand::List(out) => (places.servers()?, out.json),
        ServersCommand::Add(a) => (places.add_server(&a.name, &a.url)?, a.out.json),
        ServersCommand::Remove(a) => (places.remove_server(&a.name)?, a.out.json),
        ServersCommand::Move(a) => {
            let moved = places.move_workspace(&a.id, &a.to)?;
            if a.out.json {
                outln!("{}", serde_json::to_string(&moved)?);
            } else {
                let plural = |n: usize, one: &str, many: &str| {
                    format!("{n} {}", if n == 1 { one } else { many })
                };
                outln!(
                    "moved {} from {} to {} in {:.2} s: {}, {} ({}), {}; writes waited {:.0} ms \
                     at the switch",
                    moved.id,
                    moved.from,
                    moved.to,
                    moved.seconds,
                    plural(moved.documents, "document", "documents"),
                    plural(moved.sessions, "session", "sessions"),
                    plural(moved.lines, "line", "lines"),
                    plural(moved.passes, "catch-up pass", "catch-up passes"),
                    moved.pause_ms
                );
            }
            return Ok(());
        }
    };
    if json {
        outln!("{}", serde_json::to_string(&listed)?);
    } else {
        for s in &listed.servers {
            outln!(
                "{:<12} {:>6} workspaces  {}",
                s.name,
                s.workspaces,
                s.location
            );
        }
    }
    Ok(())
}
