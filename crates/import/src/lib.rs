//! Brings existing memory from nanobot, OpenClaw and Claude Code into a mnemo
//! workspace without loss, from where the current release of each tool keeps
//! it and from where earlier releases kept it: session transcripts become
//! session logs (every field kept), MEMORY.md files are merged under a
//! heading, history and daily logs keep their form, typed memory files keep
//! their front matter, a USER.md profile becomes a typed `user` memory and
//! the tools' persona files are kept under `imported/`. The other way,
//! [`export_nanobot`] writes session logs nanobot loads.
//!
//! An import never modifies its source, never writes outside the
//! workspace, never follows a link out of the source, and is idempotent:
//! running it twice changes nothing. Everything found is reported: imported,
//! skipped with the reason, or not understood. A bad source file is reported
//! and skipped; the rest goes on. With `dry_run` the [`Report`] lists what
//! would be done and nothing is written.
//!
//! ```no_run
//! use mnemo_core::Workspace;
//! use mnemo_import::{import, ImportOptions, Tool};
//!
//! let ws = Workspace::new("my-workspace");
//! let report = import(&ws, Tool::Nanobot, "/home/me/.nanobot".as_ref(), &ImportOptions::default())?;
//! for action in &report.actions {
//!     println!("{action}");
//! }
//! println!("{}", report.summary());
//! # Ok::<(), mnemo_import::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod claude_code;
mod claude_code_live;
mod claude_code_transcript;
pub mod error;
mod export;
mod importer;
mod manifest;
mod nanobot;
mod openclaw;
mod openclaw_db;
mod profile;
pub mod report;
mod source;
mod units;

use std::path::Path;

use mnemo_core::Workspace;
use mnemo_store::{SessionOptions, SessionStore};

pub use claude_code_live::{claude_code_session_key, record_claude_code, RecordOptions, Recorded};
pub use error::{Error, Result};
pub use export::{export_nanobot, ExportOptions};
pub use report::{Action, Kind, Report, Verb, Watch};

/// The tools whose memory can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// nanobot: its data folder (`~/.nanobot`: sessions under
    /// `sessions/<workspace id>/`, one folder per workspace) or a workspace
    /// (`memory/MEMORY.md`, the history, `USER.md`, `SOUL.md`, …; sessions in
    /// `sessions/` before 0.3.5).
    Nanobot,
    /// OpenClaw: its state folder (`~/.openclaw`: transcripts in
    /// `agents/<agent>/agent/openclaw-agent.sqlite`, earlier in
    /// `agents/<agent>/sessions/*.jsonl`; a workspace per agent) or an agent
    /// workspace (`MEMORY.md`, `memory/**/*.md`, `USER.md`, `SOUL.md`, …).
    OpenClaw,
    /// Claude Code: `~/.claude`, its `projects/` folder, one project folder
    /// (transcripts `<session>.jsonl`, subagents, the `memory/` folder) or a
    /// memory folder.
    ClaudeCode,
}

impl Tool {
    /// The name used on the command line, in headings and in the manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Nanobot => "nanobot",
            Tool::OpenClaw => "openclaw",
            Tool::ClaudeCode => "claude-code",
        }
    }

    /// What one importable unit of this tool is called (a nanobot
    /// workspace, an OpenClaw agent, a Claude Code project).
    pub fn unit_name(self) -> &'static str {
        match self {
            Tool::Nanobot => "workspace",
            Tool::OpenClaw => "agent",
            Tool::ClaudeCode => "project",
        }
    }
}

impl std::str::FromStr for Tool {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "nanobot" => Ok(Tool::Nanobot),
            "openclaw" => Ok(Tool::OpenClaw),
            "claude-code" | "claude_code" | "claudecode" => Ok(Tool::ClaudeCode),
            other => Err(format!(
                "unknown tool `{other}`: use nanobot, openclaw or claude-code"
            )),
        }
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of several workspaces, agents or projects to import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Select {
    /// The only one there is; with several the import stops and lists them.
    #[default]
    Single,
    /// Every one found.
    All,
    /// These, by name (as the error listing them shows them).
    Named(Vec<String>),
}

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// List what would be done and write nothing.
    pub dry_run: bool,
    /// Options of the workspace's session store (the `[session]` section of
    /// `mnemo.toml`), used when appending to an existing log.
    pub session: SessionOptions,
    /// Which workspaces, agents or projects to import.
    pub select: Select,
    /// Import memory even when no conversation is found where the tool keeps
    /// them; without it that is a problem of the report.
    pub allow_no_sessions: bool,
}

/// Imports the memory of `tool` found in the folder `source` into
/// `workspace`.
///
/// Fails only when the import cannot start (the source is missing or holds
/// nothing this tool writes, several workspaces, agents or projects were
/// found and none chosen, the manifest is unreadable); problems with single
/// files are `error`/`refuse` actions of the report.
pub fn import(
    workspace: &Workspace,
    tool: Tool,
    source: &Path,
    options: &ImportOptions,
) -> Result<Report> {
    import_watched(workspace, tool, source, options, None)
}

/// [`import`], telling `watch` of each action as it is recorded (for a
/// progress display: a large history takes a while).
pub fn import_watched(
    workspace: &Workspace,
    tool: Tool,
    source: &Path,
    options: &ImportOptions,
    watch: Option<report::Watch>,
) -> Result<Report> {
    let src = source::Source::open(source)?;
    // Another tool's folder is refused before anything is written: a
    // nanobot data folder also has a `workspace/` with a MEMORY.md, which
    // an OpenClaw import would take for its own and copy.
    if !src.marked_as(tool) {
        let others = [Tool::Nanobot, Tool::OpenClaw, Tool::ClaudeCode];
        if let Some(other) = others.into_iter().find(|t| *t != tool && src.marked_as(*t)) {
            return Err(Error::Source {
                path: source.to_path_buf(),
                message: format!(
                    "this looks like {}'s folder, not {}'s: nothing was written; import it with `mnemo import {} {}`",
                    other.as_str(),
                    tool.as_str(),
                    other.as_str(),
                    source.display()
                ),
            });
        }
    }
    let manifest = manifest::Manifest::load(workspace)?;
    let sessions = SessionStore::new(workspace, options.session.clone());
    let mut imp = importer::Importer::new(
        workspace,
        sessions,
        tool,
        src.root().display().to_string(),
        options.dry_run,
        manifest,
    );
    imp.report.watcher = report::Watcher(watch);
    let looked_in = match tool {
        Tool::Nanobot => nanobot::run(&mut imp, src, &options.select)?,
        Tool::OpenClaw => openclaw::run(&mut imp, src, &options.select)?,
        Tool::ClaudeCode => claude_code::run(&mut imp, src, &options.select)?,
    };
    if imp.report.conversations == 0 {
        imp.no_conversations(&looked_in, options.allow_no_sessions);
    }
    imp.finish()
}
