//! Moving a workspace between storages (a folder and a database), whole
//! and byte for byte: every document and every session log is read from
//! one and written into the other, which must be empty. Exports and
//! imports of database workspaces run here.

use super::{Expect, Storage};
use crate::error::{Error, Result};
use crate::session;

/// What a copy did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// Documents written (memory files, persisted tool results).
    pub documents: usize,
    /// Session logs written.
    pub sessions: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// One step of a copy, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyStep<'a> {
    /// Items copied so far (this one included).
    pub done: usize,
    /// Items in all.
    pub total: usize,
    /// The document or session log just copied.
    pub rel: &'a str,
}

/// Copies every document and session log of `from` into `to`, which must
/// hold none yet (nothing is ever overwritten). Session logs keep their
/// bytes: their own metadata record leads, and lines a load skips
/// (malformed, invalid UTF-8) are kept too. A log's file name follows its
/// key in `to`, as in `from` unless two keys' names collide differently.
pub fn copy_workspace(
    from: &dyn Storage,
    to: &dyn Storage,
    progress: &mut dyn FnMut(CopyStep<'_>),
) -> Result<CopyReport> {
    let held = to.documents()?.len() + to.session_files()?.len();
    if held > 0 {
        return Err(Error::Exists(format!(
            "{} already holds {held} document(s) or session(s): copy into an empty workspace \
             (nothing was written)",
            to.location()
        )));
    }
    let documents = from.documents()?;
    let sessions = from.session_files()?;
    let total = documents.len() + sessions.len();
    let mut report = CopyReport::default();
    for (i, e) in documents.iter().enumerate() {
        let Some(doc) = from.read(&e.rel)? else {
            continue;
        };
        to.write(&e.rel, &doc.text, Expect::Absent)?;
        report.documents += 1;
        report.bytes += doc.text.len() as u64;
        progress(CopyStep {
            done: i + 1,
            total,
            rel: &e.rel,
        });
    }
    for (i, e) in sessions.iter().enumerate() {
        let Some(mut bytes) = from.read_session_file(&e.rel)? else {
            continue;
        };
        if bytes.is_empty() {
            continue;
        }
        if !bytes.ends_with(b"\n") {
            // A torn last line (a crash mid-append) becomes a line of its
            // own: kept, and reported as malformed by loads.
            bytes.push(b'\n');
        }
        let key = session::parse_session_bytes(std::path::Path::new(&e.rel), &bytes)
            .meta
            .key;
        let mut writer = to.open_session(&key, &session::SessionOptions::default())?;
        writer.append_lines(&bytes, true)?;
        report.sessions += 1;
        report.bytes += bytes.len() as u64;
        progress(CopyStep {
            done: documents.len() + i + 1,
            total,
            rel: &e.rel,
        });
    }
    Ok(report)
}
