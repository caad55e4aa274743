//! Recording a Claude Code session while it runs (`mnemo hook
//! claude-code`): one transcript file,
//! `~/.claude/projects/<project>/<session id>.jsonl`, brought into the
//! workspace's log of that session with the same conversion as
//! [`crate::import`] of the project, so that the two agree: the log has
//! the key the import gives it (`claude-code:<project>:<session id>`), an
//! import of the project later finds it and appends only what is new, and
//! recording twice appends nothing.
//!
//! A transcript is being written while its hooks run. Claude Code writes
//! one entry per content block of a reply, and a Stop hook can run before
//! the last of them is in the file (anthropics/claude-code#15813,
//! #40655): a reply recorded then would differ from the same reply read
//! later, and the log could not take the rest of it. [`RecordOptions::
//! settled_only`] records the transcript up to its last `user` entry (a
//! prompt or a tool result, which come after the reply before them is
//! whole); the reply after it is recorded by the next hook. A partial last
//! line (a write in progress) is never read.

use std::path::Path;

use mnemo_core::Workspace;
use mnemo_store::{SessionOptions, SessionStore};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::importer::Importer;
use crate::report::{Kind, Report};
use crate::source::Source;
use crate::{claude_code_transcript, manifest, Tool};

/// How to record a transcript.
#[derive(Debug, Clone, Default)]
pub struct RecordOptions {
    /// The workspace's `[session]` options.
    pub session: SessionOptions,
    /// Record only what Claude Code has finished writing: the transcript up
    /// to its last `user` entry. Without it every whole line is recorded
    /// (the session has ended).
    pub settled_only: bool,
}

/// What a recording did.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The key of the log that holds the session: its own
    /// ([`claude_code_session_key`]), or another one when a different
    /// conversation holds that (the report says so); `None` when there was
    /// nothing to record yet or the session could not be recorded.
    pub key: Option<String>,
    /// Messages appended (or written into a new log) by this recording.
    pub messages: usize,
    /// Other records appended (compactions, entries kept as they were).
    pub records: usize,
    /// Every action, as an import reports them.
    pub report: Report,
}

/// The session key of the transcript at `transcript`
/// (`<project>/<session id>.jsonl`): `claude-code:<project>:<session id>`,
/// as an import of the project names it; `None` for a path that is not a
/// `.jsonl` file in a folder.
pub fn claude_code_session_key(transcript: &Path) -> Option<String> {
    let session = transcript.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let project = transcript.parent()?.file_name()?.to_str()?;
    (!session.is_empty() && !project.is_empty()).then(|| format!("claude-code:{project}:{session}"))
}

/// Records the Claude Code transcript at `transcript` into `workspace`:
/// the lines not in the session's log yet are appended (the log is
/// created by the first recording). The transcript is only read.
///
/// Fails when the transcript is not a Claude Code transcript path, its
/// folder cannot be opened or the import manifest cannot be read; a
/// problem with the file itself (unreadable, not UTF-8, another
/// conversation under its key) is an `error` action of the report.
pub fn record_claude_code(
    workspace: &Workspace,
    transcript: &Path,
    options: &RecordOptions,
) -> Result<Recorded> {
    let bad = |message: &str| Error::Source {
        path: transcript.to_path_buf(),
        message: message.to_string(),
    };
    let key = claude_code_session_key(transcript).ok_or_else(|| {
        bad("not a Claude Code transcript: expected <project folder>/<session id>.jsonl")
    })?;
    let dir = transcript
        .parent()
        .ok_or_else(|| bad("the transcript has no folder"))?;
    let name = transcript
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| bad("the transcript's name is not UTF-8"))?;
    let src = Source::open(dir)?;
    let manifest = manifest::Manifest::load(workspace)?;
    let sessions = SessionStore::new(workspace, options.session.clone());
    let mut imp = Importer::new(
        workspace,
        sessions,
        Tool::ClaudeCode,
        src.root().display().to_string(),
        false,
        manifest,
    );
    let mut written = None;
    if let Some(text) = src.read_text(name, Kind::Session, &mut imp.report) {
        let part = settled(&text, options.settled_only);
        if !part.is_empty() {
            claude_code_transcript::import_text(&mut imp, part, name, &key, None);
            written = imp.last_session_key.take();
        }
    }
    let report = imp.finish()?;
    Ok(Recorded {
        key: written,
        messages: report.messages,
        records: report.records,
        report,
    })
}

/// The part of a transcript to record: its whole lines, and with
/// `settled_only` only those up to its last `user` entry.
fn settled(text: &str, settled_only: bool) -> &str {
    let whole = text.rfind('\n').map_or("", |i| &text[..=i]);
    if !settled_only {
        return whole;
    }
    let mut end = 0;
    let mut at = 0;
    for line in whole.split_inclusive('\n') {
        at += line.len();
        if entry_type(line).as_deref() == Some("user") {
            end = at;
        }
    }
    &whole[..end]
}

/// The `type` of a transcript entry (`user`, `assistant`, `system`, …).
fn entry_type(line: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Typed {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    serde_json::from_str::<Typed>(line).ok()?.kind
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_project_and_the_session() {
        assert_eq!(
            claude_code_session_key(Path::new("/h/.claude/projects/-h-src-app/abc.jsonl"))
                .as_deref(),
            Some("claude-code:-h-src-app:abc")
        );
        assert!(claude_code_session_key(Path::new("/h/abc.txt")).is_none());
        assert!(claude_code_session_key(Path::new("abc.jsonl")).is_none());
    }

    #[test]
    fn settles_at_the_last_user_entry_and_never_reads_a_partial_line() {
        let user = "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";
        let reply = "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":\"hello\"}}\n";
        let partial = "{\"type\":\"assistant\",\"mess";
        let text = format!("{user}{reply}{partial}");
        assert_eq!(settled(&text, true), user);
        assert_eq!(settled(&text, false), format!("{user}{reply}"));
        assert_eq!(settled(reply, true), "");
        assert_eq!(settled("", false), "");
    }
}
