//! Undoing a consolidation. Every consolidation that changed MEMORY.md
//! left its change in `memory/HISTORY.md` as a diff; [`undo_consolidation`]
//! reverses the newest one not undone yet, under the memory lock, and
//! records the undo in the history as well (which stays append-only:
//! nothing is erased, and undoing again goes one consolidation further
//! back) and in the audit log (`memory/audit.jsonl`, op `undo`), so the
//! history of MEMORY.md shows it beside the changes it took back.

use chrono::{DateTime, Utc};
use mnemo_store::memory::facts::AuditRecord;
use mnemo_store::MemoryStore;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::merge;

/// What [`undo_consolidation`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Undone {
    /// Which consolidation: `<session> messages <from>..<to>`.
    pub consolidation: String,
    /// Lines of MEMORY.md that changed back.
    pub lines: usize,
}

const CHANGE: &str = "] [MEMORY.md] consolidation of ";
const UNDO: &str = "] [MEMORY.md] undo of the consolidation of ";

/// The consolidations recorded in `history` that are not undone, oldest
/// first, each with its diff.
pub fn undoable(history: &str) -> Vec<(String, String)> {
    let mut open: Vec<(String, String)> = Vec::new();
    let mut lines = history.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('[') {
            continue;
        }
        if let Some(label) = label_after(line, UNDO) {
            if let Some(i) = open.iter().rposition(|(l, _)| *l == label) {
                open.remove(i);
            }
        } else if let Some(label) = label_after(line, CHANGE) {
            let mut diff = String::new();
            while let Some(l) = lines.next_if(|l| !l.trim().is_empty()) {
                diff.push_str(l);
                diff.push('\n');
            }
            open.push((label, diff));
        }
    }
    open
}

/// Which consolidation a history line records a change of MEMORY.md for
/// (`<session> messages <from>..<to>`); `None` for any other line.
pub fn consolidation_label(line: &str) -> Option<String> {
    label_after(line, CHANGE)
}

/// The audit record of the undo of the consolidation `label`
/// (`<session> messages <from>..<to>`): what it undid, and the messages
/// whose consolidation it was.
fn undo_record(now: DateTime<Utc>, label: &str, lines: usize) -> AuditRecord {
    let (session, messages) = match label.rsplit_once(" messages ") {
        Some((s, m)) => (Some(s.to_string()), Some(m.to_string())),
        None => (None, None),
    };
    AuditRecord {
        session,
        messages,
        why: Some(format!(
            "undo of the consolidation of {label}: {lines} line(s) of MEMORY.md changed back"
        )),
        ..AuditRecord::change(now, "undo", "undo", "MEMORY.md", None, None, None)
    }
}

/// `<session> messages <from>..<to>` from a history line made with
/// `marker`.
fn label_after(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let at = rest.find(" messages ")? + " messages ".len();
    let end = rest[at..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(rest.len(), |i| at + i);
    Some(rest[..end].to_string())
}

/// Reverses the newest consolidation of MEMORY.md that is not undone yet
/// and records the undo in the history. Fails, changing nothing, when
/// there is none or when MEMORY.md changed since in the lines it touched.
pub fn undo_consolidation(memory: &MemoryStore, now: DateTime<Utc>) -> Result<Undone> {
    let _lock = memory.lock()?;
    let history = memory.read_history()?;
    let Some((label, diff)) = undoable(&history).pop() else {
        return Err(mnemo_store::Error::NotFound(
            "no consolidation to undo: none changed MEMORY.md, or all were undone \
             (memory/HISTORY.md records each one)"
                .into(),
        )
        .into());
    };
    let current = memory.read_memory_md()?;
    let old = merge::reverse_diff(&current, &diff).map_err(|e| {
        Error::Invalid(format!(
            "cannot undo the consolidation of {label}: {e}. Its diff is in memory/HISTORY.md; \
             edit MEMORY.md by hand to take back what you want"
        ))
    })?;
    memory.write_memory_md(&old)?;
    let change = merge::unified_diff(&current, &old);
    let lines = change
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++") && !l.starts_with("@@"))
        .count();
    memory.append_history(
        &format!(
            "[{}{UNDO}{label}\n{}",
            now.format("%Y-%m-%d %H:%M"),
            change.trim_end()
        ),
        now,
    )?;
    memory.append_audit(&[undo_record(now, &label, lines)])?;
    Ok(Undone {
        consolidation: label,
        lines,
    })
}
