//! `mnemo import nanobot|openclaw|claude-code PATH`, `mnemo export
//! nanobot DEST`, and the moves between this folder and a database
//! workspace (`mnemo export database URL --id ID`, `mnemo import database
//! URL --id ID`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use mnemo_import::{
    export_nanobot, import_watched, ExportOptions, ImportOptions, Report, Select, Tool, Verb,
};

use mnemo::store::storage::copy_workspace;
use mnemo::store::{FileStorage, Storage};
use mnemo::store_postgres::Database;

use crate::ctx::GlobalArgs;
use crate::output::{stderr_bar, UsageError};

/// Arguments of `mnemo import`.
#[derive(Debug, Args)]
#[command(after_long_help = IMPORT_HELP)]
pub struct ImportArgs {
    /// nanobot, openclaw or claude-code; or database (PATH is then its
    /// postgres:// URL, with --id)
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// The folder to import from (see below); it is only read
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// List what would be done (create/append/skip, with paths and counts) and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Import only this nanobot workspace, OpenClaw agent or Claude Code project
    /// (repeat for several; Claude Code's project names start with `-`, as in
    /// `--only -home-you-src-app`); the import lists the names when it finds several
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "all",
        allow_hyphen_values = true
    )]
    pub only: Vec<String>,
    /// Import every workspace, agent or project found
    #[arg(long)]
    pub all: bool,
    /// Import the memory files even when no conversation is found where the tool
    /// keeps them (otherwise that is reported as a problem)
    #[arg(long)]
    pub allow_no_sessions: bool,
    /// Print the report as one JSON object (actions, counts, problems)
    #[arg(long)]
    pub json: bool,
}

const IMPORT_HELP: &str = "\
Where each tool keeps things (give the first folder; the others work too):
  nanobot      ~/.nanobot: sessions in sessions/<workspace id>/ (0.3.5; before, in the
               workspace's sessions/), memory and USER.md in the workspace
               (~/.nanobot/workspace, which leads to its sessions too)
  openclaw     ~/.openclaw: transcripts in agents/<agent>/agent/openclaw-agent.sqlite
               (2026.9; earlier agents/<agent>/sessions/*.jsonl), memory and USER.md in
               each agent's workspace (workspace/ or workspace-<agent>/)
  claude-code  ~/.claude: transcripts in projects/<project>/*.jsonl with their
               subagents, memory in projects/<project>/memory/; also one project
               folder, or a memory folder alone (with --allow-no-sessions)

USER.md becomes a typed `user` memory; persona files (SOUL.md, IDENTITY.md,
AGENTS.md, ...) are kept under imported/<tool>/<name>/. Every file found is
listed: imported, skipped with the reason, or `unknown`. The exit code is
non-zero when something needs a look (an `error` or `refuse` line, or no
conversations found). Running it again imports only what is new.

  database     postgres://user:password@host/db with --id ID: the workspace ID of a
               database (see `mnemo serve --database`) copied byte for byte into this
               folder, which must hold no memory files or sessions yet, e.g.
               mnemo --workspace ./alice import database postgres://db.example/mnemo --id alice";

/// `mnemo export`.
#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Write this workspace's session logs where nanobot 0.3.5 loads them
    ///
    /// Each session goes to DEST/sessions/<workspace id>/<base64url of the key>.jsonl
    /// with nanobot's metadata line and every message as mnemo's log holds it;
    /// records nanobot cannot read (mnemo's compaction records, records kept by
    /// imports) are left out and counted. Stop nanobot first. mnemo's logs are
    /// only read.
    ///
    /// Example: mnemo export nanobot ~/.nanobot --session telegram:123
    Nanobot(ExportNanobotArgs),
    /// Copy this workspace into a database workspace, byte for byte
    ///
    /// Every memory file (MEMORY.md, memory/**), persisted tool result and
    /// session log goes into workspace ID of the database, which must hold
    /// nothing yet; this folder is only read. `mnemo import database` copies
    /// it back. mnemo.toml and .mnemo/ (derived state) stay here.
    ///
    /// Example: mnemo export database postgres://mnemo@db.example/mnemo --id alice
    Database(ExportDatabaseArgs),
}

/// Arguments of `mnemo export database`.
#[derive(Debug, Args)]
pub struct ExportDatabaseArgs {
    /// postgres://user:password@host:5432/database
    #[arg(value_name = "URL")]
    pub url: String,
    /// Print what was copied as one JSON object
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo export nanobot`.
#[derive(Debug, Args)]
pub struct ExportNanobotArgs {
    /// nanobot's data folder (~/.nanobot)
    #[arg(value_name = "DEST")]
    pub dest: PathBuf,
    /// Export only this session (repeat for several; default: all)
    #[arg(long, value_name = "KEY")]
    pub session: Vec<String>,
    /// The nanobot workspace the sessions belong to (default: DEST/workspace)
    #[arg(long, value_name = "DIR")]
    pub nanobot_workspace: Option<PathBuf>,
    /// Replace nanobot's log of a session when it differs (its later turns there are lost)
    #[arg(long)]
    pub overwrite: bool,
    /// List what would be written and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the report as one JSON object (actions, counts, problems)
    #[arg(long)]
    pub json: bool,
}

/// The workspace `--id` and `--schema` name in the database at `url`,
/// for the copies between it and the workspace folder.
fn database_workspace(
    url: &str,
    global: &GlobalArgs,
    verb: &str,
) -> Result<(mnemo::store_postgres::PgStorage, String, String)> {
    if global.database.is_some() {
        return Err(UsageError(format!(
            "`mnemo {verb} database URL` copies between a database and the workspace folder: leave out --database (and MNEMO_DATABASE)"
        ))
        .into());
    }
    let id = global.id.clone().ok_or_else(|| {
        UsageError(format!(
            "`mnemo {verb} database URL` needs --id, the workspace in the database"
        ))
    })?;
    let schema = global
        .schema
        .clone()
        .unwrap_or_else(|| crate::ctx::DEFAULT_SCHEMA.to_string());
    let db = Database::connect(url, &schema)?;
    let location = db.location().to_string();
    Ok((
        db.workspace(&id)?,
        id,
        format!("{location} (schema {schema})"),
    ))
}

pub fn run(args: ImportArgs, global: &GlobalArgs) -> Result<()> {
    if args.tool == "database" {
        let url = args.path.to_string_lossy().into_owned();
        let (from, id, location) = database_workspace(&url, global, "import")?;
        let ctx = global.ctx()?;
        if from.session_files()?.is_empty() && from.documents()?.is_empty() {
            return Err(UsageError(format!(
                "the database at {location} has no workspace {id:?}: nothing to import"
            ))
            .into());
        }
        return copy(
            &from,
            &FileStorage::new(&ctx.workspace),
            "importing",
            args.json,
        );
    }
    let tool: Tool = args.tool.parse().map_err(UsageError)?;
    let ctx = global.ctx()?;
    ctx.require_folder("`mnemo import` (it writes the workspace folder: import there, then `mnemo export database`)")?;
    ctx.require_initialised()?;
    let select = if args.all {
        Select::All
    } else if args.only.is_empty() {
        Select::Single
    } else {
        Select::Named(args.only)
    };
    let options = ImportOptions {
        dry_run: args.dry_run,
        session: ctx.config.section("session")?,
        select,
        allow_no_sessions: args.allow_no_sessions,
    };
    // The number of files is not known before the source is read: a
    // spinner that counts what was handled, with the latest target (on
    // stderr, so it never mixes with --json).
    let bar = stderr_bar("{spinner} importing: {pos} done {elapsed} {wide_msg}");
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let ticks = bar.clone();
    let watch = std::sync::Arc::new(move |a: &mnemo_import::Action| {
        ticks.inc(1);
        ticks.set_message(if a.target.is_empty() {
            a.source.clone()
        } else {
            a.target.clone()
        });
    });
    let result = import_watched(&ctx.workspace, tool, &args.path, &options, Some(watch));
    bar.finish_and_clear();
    let report = result.map_err(library_error)?;
    print_report(&report, args.json, "the import finished with problems (the `error` and `refuse` lines of the report); what could be imported was")
}

pub fn export(command: ExportCommand, global: &GlobalArgs) -> Result<()> {
    let args = match command {
        ExportCommand::Nanobot(args) => args,
        ExportCommand::Database(args) => {
            let (to, ..) = database_workspace(&args.url, global, "export")?;
            let ctx = global.ctx()?;
            ctx.require_initialised()?;
            return copy(
                &FileStorage::new(&ctx.workspace),
                &to,
                "exporting",
                args.json,
            );
        }
    };
    let ctx = global.ctx()?;
    ctx.require_folder("`mnemo export nanobot`")?;
    ctx.require_initialised()?;
    let options = ExportOptions {
        dry_run: args.dry_run,
        keys: args.session,
        nanobot_workspace: args.nanobot_workspace,
        overwrite: args.overwrite,
    };
    let report = export_nanobot(&ctx.workspace, &args.dest, &options).map_err(library_error)?;
    print_report(&report, args.json, "the export finished with problems (the `error` lines of the report); the other sessions were exported")
}

/// Copies a whole workspace with a bar, then says what was copied.
fn copy(from: &dyn Storage, to: &dyn Storage, verb: &str, json: bool) -> Result<()> {
    let bar = stderr_bar(&format!("{verb} {{bar:30}} {{pos}}/{{len}} {{wide_msg}}"));
    let report = copy_workspace(from, to, &mut |step| {
        bar.set_length(step.total as u64);
        bar.set_position(step.done as u64);
        bar.set_message(step.rel.to_string());
    });
    bar.finish_and_clear();
    let report = report?;
    if json {
        let out = serde_json::json!({
            "documents": report.documents,
            "sessions": report.sessions,
            "bytes": report.bytes,
            "from": from.location(),
            "to": to.location(),
        });
        outln!("{out}");
        return Ok(());
    }
    outln!(
        "copied {} document(s) and {} session log(s), {} bytes, from {} to {}",
        report.documents,
        report.sessions,
        report.bytes,
        from.location(),
        to.location()
    );
    Ok(())
}

fn library_error(e: mnemo_import::Error) -> anyhow::Error {
    match e {
        // The store's errors carry their own exit codes.
        mnemo_import::Error::Store(inner) => anyhow::Error::new(inner),
        other => anyhow::Error::new(UsageError(other.to_string())),
    }
}

/// Prints the report: one line per action and the summary, or with `json`
/// one object (the report's actions and counts, the number of problems and
/// of things not understood). Problems make the command fail either way;
/// with `json` the error follows the report as its own object, as for
/// every command.
fn print_report(report: &Report, json: bool, problems: &str) -> Result<()> {
    if json {
        let mut out = serde_json::to_value(report)?;
        if let Some(map) = out.as_object_mut() {
            map.insert(
                "problems".into(),
                (report.count(Verb::Error) + report.count(Verb::Refuse)).into(),
            );
            map.insert("unknown".into(), report.count(Verb::Unknown).into());
        }
        outln!("{out}");
    } else {
        for action in &report.actions {
            outln!("{action}");
        }
        outln!("{}", report.summary());
    }
    if report.has_problems() {
        anyhow::bail!("{problems}");
    }
    Ok(())
}
