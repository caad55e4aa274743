//! Brings existing memory from nanobot, OpenClaw and Claude Code into a mnemo
//! workspace without loss: session transcripts become session logs (every
//! field kept), MEMORY.md files are merged under a heading, history and
//! daily logs keep their form, typed memory files keep their front matter.
//!
//! An import never modifies its source, never writes outside the
//! workspace, never follows a link out of the source, and is idempotent:
//! running it twice changes nothing. A bad source file is reported and
//! skipped; the rest goes on. With `dry_run` the [`Report`] lists what would
//! be done and nothing is written.
//!
//! ```no_run
//! use mnemo_core::Workspace;
//! use mnemo_import::{import, ImportOptions, Tool};
//!
//! let ws = Workspace::new("my-workspace");
//! let report = import(&ws, Tool::Nanobot, "/home/me/.nanobot/workspace".as_ref(), &ImportOptions::default())?;
//! for action in &report.actions {
//!     println!("{action}");
//! }
//! println!("{}", report.summary());
//! # Ok::<(), mnemo_import::Error>(())
//! ```
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod claude_code;
pub mod error;
mod importer;
mod manifest;
mod nanobot;
mod openclaw;
pub mod report;
mod source;

use std::path::Path;

use mnemo_core::Workspace;
use mnemo_store::{SessionOptions, SessionStore};

pub use error::{Error, Result};
pub use report::{Action, Kind, Report, Verb};

/// The tools whose memory can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// nanobot: `sessions/*.jsonl`, `memory/MEMORY.md`, `memory/HISTORY.md`
    /// or `memory/history.jsonl`.
    Nanobot,
    /// OpenClaw: `MEMORY.md` (or `memory.md`), `memory/**/*.md`,
    /// `agents/<agent>/sessions/*.jsonl`.
    OpenClaw,
    /// Claude Code auto memory: a folder with a `MEMORY.md` index and typed
    /// topic files.
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

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// List what would be done and write nothing.
    pub dry_run: bool,
    /// Options of the workspace's session store (the `[session]` section of
    /// `mnemo.toml`), used when appending to an existing log.
    pub session: SessionOptions,
}

/// Imports the memory of `tool` found in the folder `source` into
/// `workspace`.
///
/// Fails only when the import cannot start (the source is missing or holds
/// nothing this tool writes, the manifest is unreadable); problems with
/// single files are `error`/`refuse` actions of the report.
pub fn import(
    workspace: &Workspace,
    tool: Tool,
    source: &Path,
    options: &ImportOptions,
) -> Result<Report> {
    let src = source::Source::open(source)?;
    let manifest = manifest::Manifest::load(workspace)?;
    let sessions = SessionStore::new(workspace, options.session.clone());
    let display = src.root().display().to_string();
    let mut imp = importer::Importer::new(
        workspace,
        sessions,
        tool,
        display,
        options.dry_run,
        manifest,
    );
    match tool {
        Tool::Nanobot => nanobot::run(&mut imp, &src)?,
        Tool::OpenClaw => openclaw::run(&mut imp, &src)?,
        Tool::ClaudeCode => claude_code::run(&mut imp, &src)?,
    }
    imp.finish()
}
