//! Undo of a dream (`mnemo dream --undo`, see the module docs): the
//! newest dream not undone yet is reversed from its history entry.

use chrono::{DateTime, Utc};
use mnemo_store::memory::facts::{AuditRecord, FactsFile, FACTS_FILE};
use mnemo_store::memory::split_front_matter;
use mnemo_store::MemoryStore;

use super::history::{file_diff, recorded_dreams, Recorded, UNDO};
use super::DreamUndone;
use crate::error::{Error, Result};
use crate::merge;

/// Reverses the newest dream that is not undone yet, under the memory
/// lock: every file its history entry has a diff for (the facts file,
/// MEMORY.md, typed memories; a typed memory the dream made is removed).
/// Nothing is written unless every file can be reversed.
pub fn undo_dream(memory: &MemoryStore, now: DateTime<Utc>) -> Result<DreamUndone> {
    let _lock = memory.lock()?;
    let history = memory.read_history()?;
    // Newest first. A dream without its `applied` line was killed: undone
    // when every file it has a diff for is as it left it (killed after its
    // last file), skipped when not (it never landed whole, and the next
    // dream finished its work).
    let mut found = None;
    for d in recorded_dreams(&history).into_iter().rev() {
        if d.diff.is_empty() {
            continue;
        }
        match reversed(memory, &d) {
            Ok(changes) => {
                found = Some((d, changes));
                break;
            }
            Err(e) if d.applied => return Err(e),
            Err(_) => continue,
        }
    }
    let Some((Recorded { id, created, .. }, changes)) = found else {
        return Err(mnemo_store::Error::NotFound(
            "no dream to undo: none changed memory, or all were undone (memory/HISTORY.md records each one)".into(),
        )
        .into());
    };
    let mut change = String::new();
    for (file, current, old) in &changes {
        change.push_str(&file_diff(file, current, old));
    }
    let lines_changed = change
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++") && !l.starts_with("@@"))
        .count();
    memory.append_history(
        &format!(
            "[{}{UNDO}{id}\n{}",
            now.format("%Y-%m-%d %H:%M"),
            change.trim_end()
        ),
        now,
    )?;
    for (file, current, old) in &changes {
        if old == current {
            continue;
        }
        if file == "MEMORY.md" {
            memory.write_memory_md(old)?;
        } else if old.is_empty() && created.contains(file) {
            memory.remove_document(file)?;
        } else {
            memory.write_document(file, old)?;
        }
    }
    // After the files, as a dream writes its own: the audit log says what
    // happened to each memory, so a fact's history ends with its undo.
    memory.append_audit(&undo_audit(&id, &changes, now))?;
    Ok(DreamUndone {
        id,
        lines: lines_changed,
    })
}

/// The audit records of the undo of dream `id`: one per fact it removed,
/// put back or changed back, one per typed memory, one for MEMORY.md.
fn undo_audit(
    id: &str,
    changes: &[(String, String, String)],
    now: DateTime<Utc>,
) -> Vec<AuditRecord> {
    let record = |memory: &str, old: Option<&str>, new: Option<&str>, why: String| AuditRecord {
        why: Some(why),
        ..AuditRecord::change(now, "undo", "undo", memory, None, old, new)
    };
    let mut out = Vec::new();
    for (file, current, old) in changes {
        if old == current {
            continue;
        }
        if file == FACTS_FILE {
            out.extend(undo_audit_facts(id, current, old, record));
        } else if file == "MEMORY.md" {
            out.push(record(
                "MEMORY.md",
                None,
                None,
                format!("undo of dream {id}: MEMORY.md changed back"),
            ));
        } else {
            // A typed memory, known in the audit log by its name.
            let what = if old.is_empty() {
                "the dream made it; removed"
            } else {
                "changed back as it was before the dream"
            };
            out.push(record(
                &typed_memory_name(file, current, old),
                None,
                None,
                format!("undo of dream {id}: {what}"),
            ));
        }
    }
    out
}

/// The audit records (made by `record`) of the undo of dream `id` in the
/// facts file, `current` put back to `old`: one per fact it removed, put
/// back or changed back.
fn undo_audit_facts(
    id: &str,
    current: &str,
    old: &str,
    record: impl Fn(&str, Option<&str>, Option<&str>, String) -> AuditRecord,
) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    let (now_file, then) = (FactsFile::parse(current), FactsFile::parse(old));
    for f in now_file.facts() {
        match then.get(&f.id) {
            None => out.push(record(
                &f.id,
                Some(&f.text),
                None,
                format!("undo of dream {id}: the dream added it; removed"),
            )),
            Some(b) if b != f => {
                let what = if b.is_current() && !f.is_current() {
                    "the dream ended it; current again"
                } else {
                    "changed back as it was before the dream"
                };
                out.push(record(
                    &f.id,
                    (b.text != f.text).then_some(f.text.as_str()),
                    (b.text != f.text).then_some(b.text.as_str()),
                    format!("undo of dream {id}: {what}"),
                ));
            }
            Some(_) => {}
        }
    }
    for b in then
        .facts()
        .iter()
        .filter(|b| now_file.get(&b.id).is_none())
    {
        out.push(record(
            &b.id,
            None,
            Some(&b.text),
            format!("undo of dream {id}: put back"),
        ));
    }
    out
}

/// The name of the typed memory `file` (its front matter's, in `current`
/// or `old`, else its file name).
fn typed_memory_name(file: &str, current: &str, old: &str) -> String {
    [current, old]
        .into_iter()
        .find_map(|t| split_front_matter(t).0.and_then(Result::ok).map(|f| f.name))
        .unwrap_or_else(|| {
            file.rsplit('/')
                .next()
                .unwrap_or(file)
                .trim_end_matches(".md")
                .to_string()
        })
}

/// Each file dream `d` has a diff for, as `(file, now, before the dream)`;
/// an error (naming what to do) when one cannot be reversed.
fn reversed(memory: &MemoryStore, d: &Recorded) -> Result<Vec<(String, String, String)>> {
    let cannot = |e: String, file: &str| {
        Error::Invalid(format!(
            "cannot undo dream {}: {e}. Its diff is in memory/HISTORY.md; edit {file} by hand to take back what you want",
            d.id
        ))
    };
    let mut changes = Vec::new();
    for (file, file_diff) in split_diffs(&d.diff) {
        let current = memory.read_document(&file)?.unwrap_or_default();
        let old = merge::reverse_diff(&current, &file_diff).map_err(|e| cannot(e, &file))?;
        changes.push((file, current, old));
    }
    Ok(changes)
}

/// A dream's recorded change split by file, in the order recorded: each
/// `--- path` / `+++ path` header starts a file (lines before any header
/// are the facts file's, as dreams before MEMORY.md was tidied wrote them).
fn split_diffs(diff: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut lines = diff.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(file) = l.strip_prefix("--- ") {
            if lines.peek() == Some(&format!("+++ {file}").as_str()) {
                out.push((file.to_string(), String::new()));
            }
        }
        if out.is_empty() {
            out.push((FACTS_FILE.to_string(), String::new()));
        }
        if let Some((_, d)) = out.last_mut() {
            d.push_str(l);
            d.push('\n');
        }
    }
    out
}
