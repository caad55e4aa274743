//! `mnemo memory show | add | list | forget | undo`.

use std::io::Read;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::sync::Arc;

use mnemo_service::args::{WriteArgs, WriteMode};
use mnemo_service::output::{SaveActionOut, WriteOutput};
use mnemo_service::Service;

use crate::ctx::{Ctx, GlobalArgs};
use crate::output::UsageError;

/// Memory commands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Print exactly the memory block that is injected into a prompt:
    /// MEMORY.md within its cap, then today's and yesterday's daily logs
    Show,
    /// Save a typed memory file (body on stdin) and its index line in MEMORY.md
    ///
    /// A name that is already taken is refused unless --replace is given.
    ///
    /// Example: echo "Prefers answers in French." | mnemo memory add --type user
    ///   --name "Language" --description "answer in French"
    Add(AddArgs),
    /// List typed memory files (files whose front matter is broken too, with
    /// the line to fix)
    List(ListArgs),
    /// Remove a typed memory file and its index line, or a fact of
    /// memory/facts.md by its id (f12) (the history, daily logs and session
    /// notes are append-only and never removed)
    Forget(ForgetArgs),
    /// Every recorded change of a memory (a fact's id in memory/facts.md,
    /// such as f12, or a typed memory's name): what was done, the old and
    /// new text, when, and which session and messages caused it
    History(HistoryArgs),
    /// Undo the newest consolidation's change to MEMORY.md, or with --facts
    /// the newest round of memory/facts.md (run it again to go further
    /// back); each change and each undo is in memory/HISTORY.md
    Undo(UndoArgs),
}

/// Arguments of `mnemo memory undo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// Undo the newest round of facts (a facts-mode consolidation or a
    /// memory flush): the facts it added go, the facts it ended are current
    /// again. Refused, changing nothing, when one of them changed since
    #[arg(long)]
    pub facts: bool,
    /// Print the answer as one JSON object: {"consolidation", "lines"}, or
    /// with --facts {"round", "removed", "restored", "unsaid"}
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo memory add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// user (who the user is), feedback (how to work), project (who/what/when)
    /// or reference (pointers to outside resources)
    #[arg(long = "type", value_name = "TYPE")]
    pub kind: String,
    /// Short name; also the file name (memory/<name>.md) and the index title
    #[arg(long)]
    pub name: String,
    /// One specific line saying what the memory is about (used for relevance)
    #[arg(long)]
    pub description: String,
    /// Update the memory of this name if there is one (without it, a taken
    /// name is an error and nothing is written)
    #[arg(long)]
    pub replace: bool,
    /// Print the answer as one JSON object (memory_write's)
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo memory list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// One JSON object per line
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo memory forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The memory's name or its path (memory/<name>.md)
    pub name: String,
    /// Print the answer as one JSON object (memory_forget's)
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo memory history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The fact's id (f12) or the typed memory's name
    pub name: String,
    /// Print the answer as one JSON object (memory_history's): {"name",
    /// "fact"?, "changes": [{"at", "op", "memory", "supersedes"?, "old"?,
    /// "new"?, "session"?, "messages"?, "by"}]}
    #[arg(long)]
    pub json: bool,
}

/// What a forget removed, said as it was: a typed memory's file and its
/// index line in MEMORY.md, or a fact (`memory/facts.md#f12`), which has
/// no index line.
pub(crate) fn forgot(removed: &str) -> String {
    match removed.split_once('#') {
        Some((file, id)) => format!("removed fact {id} from {file}"),
        None => format!("removed {removed} and its index line in MEMORY.md"),
    }
}

/// The service over the workspace (no embedder: writes need none) and a
/// runtime to call it on.
pub(crate) fn service(mut ctx: Ctx) -> Result<(Arc<Service>, tokio::runtime::Runtime)> {
    ctx.config.set("embedder.kind", "none");
    Ok((Service::new(ctx.open()?), crate::ctx::runtime()?))
}

pub fn run(command: MemoryCommand, global: &GlobalArgs) -> Result<()> {
    let (service, rt) = service(global.ctx()?)?;
    let store = service.mnemo().memory();
    match command {
        MemoryCommand::Show => {
            out!("{}", store.render_prompt_block(chrono::Utc::now())?);
            Ok(())
        }
        MemoryCommand::Add(args) => {
            let mut body = String::new();
            std::io::stdin()
                .read_to_string(&mut body)
                .context("cannot read the memory body from stdin")?;
            if body.trim().is_empty() {
                return Err(UsageError("the memory body is empty: pipe it on stdin".into()).into());
            }
            let kind = serde_json::from_value(serde_json::json!(args.kind)).map_err(|_| {
                UsageError(format!(
                    "unknown memory type {:?}: use user, feedback, project or reference",
                    args.kind
                ))
            })?;
            let write = WriteArgs {
                text: body,
                mode: Some(WriteMode::Typed),
                name: Some(args.name),
                description: Some(args.description),
                kind: Some(kind),
                heading: None,
                replace: args.replace,
            };
            let out = rt.block_on(service.write(write))?;
            if args.json {
                outln!("{}", serde_json::to_string(&out)?);
                return Ok(());
            }
            if let WriteOutput::Typed { path, action, .. } = &out {
                match action {
                    SaveActionOut::Created => {
                        outln!("saved {path} and its index line in MEMORY.md")
                    }
                    SaveActionOut::Replaced => {
                        outln!("updated {path} and its index line in MEMORY.md")
                    }
                    SaveActionOut::Unchanged => {
                        outln!("{path} already holds this memory; nothing changed")
                    }
                }
            }
            Ok(())
        }
        MemoryCommand::List(args) => {
            let mut broken = 0;
            for h in store.scan_memory_files(usize::MAX, 10)? {
                if let Some(error) = &h.front_error {
                    broken += 1;
                    if args.json {
                        outln!(
                            "{}",
                            serde_json::json!({"path": h.path, "error": format!("broken front matter, {error}"), "modified": h.modified})
                        );
                    } else {
                        outln!("[broken] {}: front matter {error}", h.path);
                    }
                    continue;
                }
                let Some(front) = &h.front else { continue };
                if args.json {
                    outln!(
                        "{}",
                        serde_json::json!({"path": h.path, "name": front.name, "type": front.kind, "description": front.description, "modified": h.modified})
                    );
                } else {
                    outln!(
                        "[{}] {}: {} ({})",
                        front.kind.as_str(),
                        h.path,
                        front.description,
                        front.name
                    );
                }
            }
            if broken > 0 {
                eprintln!(
                    "mnemo: {broken} file(s) with broken front matter: fix the line named, or `mnemo memory forget PATH` to remove one"
                );
            }
            Ok(())
        }
        MemoryCommand::Forget(args) => {
            let out =
                rt.block_on(service.forget(mnemo_service::args::ForgetArgs { name: args.name }))?;
            if args.json {
                outln!("{}", serde_json::to_string(&out)?);
            } else {
                outln!("{}", forgot(&out.removed));
            }
            Ok(())
        }
        MemoryCommand::History(args) => {
            let out = rt.block_on(
                service.memory_history(mnemo_service::args::MemoryHistoryArgs { name: args.name }),
            )?;
            if args.json {
                outln!("{}", serde_json::to_string(&out)?);
                return Ok(());
            }
            if let Some(f) = &out.fact {
                let span = match (&f.valid_from, &f.valid_until) {
                    (Some(a), Some(b)) => format!("{a} to {b}"),
                    (Some(a), None) => format!("since {a}"),
                    (None, Some(b)) => format!("until {b}"),
                    (None, None) => String::new(),
                };
                let state = if f.current {
                    "current"
                } else {
                    "no longer true"
                };
                outln!(
                    "{}: {} ({state}{}{})",
                    f.id,
                    f.text,
                    if span.is_empty() {
                        String::new()
                    } else {
                        format!(", {span}")
                    },
                    f.superseded_by
                        .as_deref()
                        .map(|s| format!(", superseded by {s}"))
                        .unwrap_or_default()
                );
            }
            for c in &out.changes {
                let cause = match (&c.session, &c.messages) {
                    (Some(s), Some(m)) => format!(" ({} of {s}, messages {m})", c.by),
                    _ => format!(" ({})", c.by),
                };
                let what = match (&c.old, &c.new) {
                    (Some(o), Some(n)) => format!("{o:?} -> {n:?}"),
                    (None, Some(n)) => format!("{n:?}"),
                    (Some(o), None) => format!("{o:?}"),
                    (None, None) => String::new(),
                };
                let memory = match &c.supersedes {
                    Some(s) => format!("{} (replacing {s})", c.memory),
                    None => c.memory.clone(),
                };
                outln!("{}  {:<7} {memory} {what}{cause}", c.at, c.op);
            }
            Ok(())
        }
        MemoryCommand::Undo(args) if args.facts => {
            let undone = mnemo::engine::undo_facts_round(store, chrono::Utc::now())?;
            if args.json {
                outln!("{}", serde_json::to_string(&undone)?);
                return Ok(());
            }
            outln!(
                "undid the facts round of {}: {} fact(s) removed, {} current again (recorded in memory/HISTORY.md)",
                undone.round,
                undone.removed.len(),
                undone.restored.len()
            );
            Ok(())
        }
        MemoryCommand::Undo(args) => {
            let undone = mnemo::engine::undo_consolidation(store, chrono::Utc::now())?;
            if args.json {
                outln!("{}", serde_json::to_string(&undone)?);
                return Ok(());
            }
            outln!(
                "undid the consolidation of {}: {} line(s) of MEMORY.md changed back (recorded in memory/HISTORY.md)",
                undone.consolidation, undone.lines
            );
            Ok(())
        }
    }
}
