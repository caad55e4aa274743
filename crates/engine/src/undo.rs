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

/// A fact-level round (a consolidation in `facts` mode, or a memory flush)
/// as its entry in the history records it: what it did to
/// `memory/facts.md`, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FactsRound {
    /// Its entry's place among the history's entries (1 for the oldest,
    /// each stamped line starting one).
    pub entry: usize,
    /// Which round: `<session> messages <from>..<to>`, or `memory flush
    /// of <session> messages <from>..<to>`.
    pub label: String,
    /// Facts it added (a replacement's new fact among them).
    pub added: Vec<String>,
    /// Facts it replaced, each `(old, new)`.
    pub replaced: Vec<(String, String)>,
    /// Facts it ended without a replacement (retracted).
    pub ended: Vec<String>,
}

/// What [`undo_facts_round`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactsUndone {
    /// Which round (see [`FactsRound::label`]).
    pub round: String,
    /// Facts removed: the round added them.
    pub removed: Vec<String>,
    /// Facts current again: the round ended them.
    pub restored: Vec<String>,
    /// Facts it said again, which no longer name its messages as a source.
    pub unsaid: Vec<String>,
}

const FACTS_UNDO: &str = "[memory/facts.md] undo of the facts round of ";
const PROPOSED: &str = " fact(s) proposed";

/// The round `header` (an entry's stamped first line) and `body` (its next
/// lines) record, when they record one that changed a fact: its label and
/// what it did (`entry` left 0).
pub fn facts_round(header: &str, body: &str) -> Option<FactsRound> {
    if !mnemo_store::memory::has_stamp(header) {
        return None;
    }
    // The stamp is ASCII: 18 bytes with the space after it.
    let title = header.get(18..)?.trim();
    let (label, count) = title.rsplit_once(": ")?;
    count
        .strip_suffix(PROPOSED)?
        .parse::<usize>()
        .ok()
        .filter(|_| label.contains(" messages "))?;
    let prefix = format!("[{}: ", mnemo_store::memory::facts::FACTS_FILE);
    let what = body
        .lines()
        .next()?
        .strip_prefix(&prefix)?
        .strip_suffix(']')?;
    let mut round = FactsRound {
        label: label.to_string(),
        ..Default::default()
    };
    let ids = |s: &str| -> Vec<String> { s.split(", ").map(|i| i.trim().to_string()).collect() };
    for part in what.split("; ") {
        if let Some(rest) = part.strip_prefix("added ") {
            round.added.extend(ids(rest));
        } else if let Some(rest) = part.strip_prefix("replaced ") {
            for pair in rest.split(", ") {
                if let Some((old, new)) = pair.split_once(" by ") {
                    round.replaced.push((old.trim().into(), new.trim().into()));
                }
            }
        } else if let Some(rest) = part.strip_prefix("ended ") {
            round.ended.extend(ids(rest));
        }
    }
    for (_, new) in &round.replaced {
        if !round.added.contains(new) {
            round.added.push(new.clone());
        }
    }
    (!round.added.is_empty() || !round.ended.is_empty()).then_some(round)
}

/// The fact-level rounds recorded in `history` that changed a fact and
/// are not undone, oldest first.
pub fn undoable_facts_rounds(history: &str) -> Vec<FactsRound> {
    // Each entry: its stamped line and the lines after it.
    let mut entries: Vec<(&str, String)> = Vec::new();
    for line in history.lines() {
        if mnemo_store::memory::has_stamp(line) {
            entries.push((line, String::new()));
        } else if let Some((_, body)) = entries.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let mut open: Vec<FactsRound> = Vec::new();
    for (n, (header, body)) in entries.iter().enumerate() {
        let undo = header
            .get(18..)
            .and_then(|t| t.trim_start().strip_prefix(FACTS_UNDO));
        if let Some(label) = undo {
            if let Some(i) = open.iter().rposition(|r| r.label == label.trim()) {
                open.remove(i);
            }
        } else if let Some(mut round) = facts_round(header, body) {
            round.entry = n + 1;
            open.push(round);
        }
    }
    open
}

/// The session and messages `<session> messages <from>..<to>` of a round's
/// label names (a flush's `memory flush of ` before it).
fn round_messages(label: &str) -> Option<(&str, usize, usize)> {
    let label = label.strip_prefix("memory flush of ").unwrap_or(label);
    let (key, range) = label.rsplit_once(" messages ")?;
    let (a, b) = range.split_once("..")?;
    Some((key, a.parse().ok()?, b.parse().ok()?))
}

/// True when `source` (`<session> <from>..<to>`) is one of the round's
/// messages.
fn of_round(source: &str, key: &str, from: usize, to: usize) -> bool {
    source
        .strip_prefix(key)
        .and_then(|r| r.strip_prefix(' '))
        .and_then(|r| r.split_once(".."))
        .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
        .is_some_and(|(a, b)| from <= a && b <= to)
}

/// Reverses the newest fact-level round that changed a fact and is not
/// undone yet, under the memory lock: the facts it added are removed
/// from `memory/facts.md`, and the facts it ended (replaced or retracted)
/// are current again, back among the current facts. A fact it only said
/// again keeps its source (those messages did say it); a fact forgotten
/// since is left gone. The undo is recorded in the history (which stays
/// append-only: undoing again goes one round further back) and in the
/// audit log (op `undo`, one record per fact). Fails, changing nothing,
/// when there is no round to undo, or when a fact the round touched
/// changed since: a fact it added was ended or said again by something
/// else, or a fact it ended was ended again by something else.
pub fn undo_facts_round(memory: &MemoryStore, now: DateTime<Utc>) -> Result<FactsUndone> {
    use mnemo_store::memory::facts::{Fact, FactsFile, FACTS_FILE};
    let _lock = memory.lock()?;
    let history = memory.read_history()?;
    let Some(round) = undoable_facts_rounds(&history).pop() else {
        return Err(mnemo_store::Error::NotFound(
            "no facts round to undo: none changed memory/facts.md, or all were undone \
             (memory/HISTORY.md records each one)"
                .into(),
        )
        .into());
    };
    let label = round.label.clone();
    let cannot = |why: String| {
        Error::Invalid(format!(
            "cannot undo the facts round of {label}: {why}. Nothing was changed; \
             forget or edit the facts from the memory view (or in {FACTS_FILE}) instead"
        ))
    };
    let text = memory.read_document(FACTS_FILE)?.unwrap_or_default();
    let file = FactsFile::parse(&text);
    let (key, from, to) = round_messages(&label).unwrap_or(("", 0, 0));
    let mut removed: Vec<&Fact> = Vec::new();
    for id in &round.added {
        let Some(f) = file.get(id) else { continue };
        if !f.is_current() {
            return Err(cannot(format!(
                "{} was ended since ({})",
                f.id,
                f.superseded_by
                    .as_deref()
                    .map_or("retracted".to_string(), |b| format!("replaced by {b}"))
            )));
        }
        if let Some(other) = f
            .sources()
            .into_iter()
            .find(|s| !of_round(s, key, from, to))
        {
            return Err(cannot(format!(
                "{} was said again since ({other}), so it stays true without this round",
                f.id
            )));
        }
        removed.push(f);
    }
    let mut restored: Vec<Fact> = Vec::new();
    let ended = round
        .replaced
        .iter()
        .map(|(old, new)| (old, Some(new)))
        .chain(round.ended.iter().map(|old| (old, None)));
    for (id, by) in ended {
        let Some(f) = file.get(id) else { continue };
        if f.is_current() {
            continue;
        }
        let ours = match by {
            Some(new) => f
                .superseded_by
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(new)),
            None => f.retracted && f.superseded_by.is_none(),
        };
        if !ours {
            return Err(cannot(format!(
                "{} was ended again since ({})",
                f.id,
                f.superseded_by
                    .as_deref()
                    .map_or("retracted".to_string(), |b| format!("replaced by {b}"))
            )));
        }
        // The same fact, current: every part of it kept but its ending.
        let mut again = fresh(f, f.by.clone(), now);
        again.until = None;
        again.superseded_by = None;
        again.retracted = false;
        again.retracted_by = None;
        restored.push(again);
    }
    // A fact it said again loses the round's sources, unless they are all
    // it has (another round over the same messages, a flush's, added it).
    let mut unsaid: Vec<Fact> = Vec::new();
    for f in file.current() {
        if removed.iter().any(|r| r.id == f.id) {
            continue;
        }
        let sources = f.sources();
        let (ours, others): (Vec<&str>, Vec<&str>) =
            sources.iter().partition(|s| of_round(s, key, from, to));
        if !ours.is_empty() && !others.is_empty() {
            unsaid.push(fresh(f, Some(others.join(", ")), now));
        }
    }
    let removed_ids: Vec<String> = removed.iter().map(|f| f.id.clone()).collect();
    let restored_ids: Vec<String> = restored.iter().map(|f| f.id.clone()).collect();
    if !removed.is_empty() || !restored.is_empty() || !unsaid.is_empty() {
        let after = without_and_with(&text, &file, &removed_ids, &unsaid, &restored);
        memory.write_document(FACTS_FILE, &after)?;
    }
    let mut parts = Vec::new();
    if !removed_ids.is_empty() {
        parts.push(format!("removed {}", removed_ids.join(", ")));
    }
    if !restored_ids.is_empty() {
        parts.push(format!("current again {}", restored_ids.join(", ")));
    }
    if !unsaid.is_empty() {
        let ids: Vec<&str> = unsaid.iter().map(|f| f.id.as_str()).collect();
        parts.push(format!("its sources taken from {}", ids.join(", ")));
    }
    if parts.is_empty() {
        parts.push("nothing left to change (its facts were forgotten since)".into());
    }
    memory.append_history(
        &format!(
            "[{}] {FACTS_UNDO}{label}\n[{FACTS_FILE}: {}]",
            now.format("%Y-%m-%d %H:%M"),
            parts.join("; ")
        ),
        now,
    )?;
    let session = round_messages(&label).map(|(k, a, b)| (k.to_string(), format!("{a}..{b}")));
    let record = |id: &str, old: Option<&str>, what: &str| AuditRecord {
        session: session.as_ref().map(|s| s.0.clone()),
        messages: session.as_ref().map(|s| s.1.clone()),
        why: Some(format!("undo of the facts round of {label}: {what}")),
        ..AuditRecord::change(now, "undo", "undo", id, None, old, None)
    };
    let mut audit: Vec<AuditRecord> = removed
        .iter()
        .map(|f| record(&f.id, Some(&f.text), "the round added it; removed"))
        .collect();
    audit.extend(
        restored
            .iter()
            .map(|f| record(&f.id, None, "the round ended it; current again")),
    );
    audit.extend(unsaid.iter().map(|f| {
        record(
            &f.id,
            None,
            "the round said it again; its messages are no longer among its sources",
        )
    }));
    memory.append_audit(&audit)?;
    Ok(FactsUndone {
        round: label,
        removed: removed_ids,
        restored: restored_ids,
        unsaid: unsaid.iter().map(|f| f.id.clone()).collect(),
    })
}

/// `f` written anew (its line as read forgotten) with the sources `by`.
fn fresh(
    f: &mnemo_store::memory::facts::Fact,
    by: Option<String>,
    now: DateTime<Utc>,
) -> mnemo_store::memory::facts::Fact {
    let mut out = mnemo_store::memory::facts::Fact::new(f.id.clone(), &f.text, f.since, now, by);
    out.until = f.until;
    out.superseded_by.clone_from(&f.superseded_by);
    out.retracted = f.retracted;
    out.retracted_by.clone_from(&f.retracted_by);
    out.recorded.clone_from(&f.recorded);
    out.subject.clone_from(&f.subject);
    out.attribute.clone_from(&f.attribute);
    out
}

/// The facts file `text` (parsed as `file`) without the facts `remove`,
/// with each of `rewrite` written anew where it stands, and each of
/// `restore` moved from where it stands to after the last current fact
/// (else before the "No longer true" heading, else the end), as a current
/// fact. Every other line stays as it is; a "No longer true" heading left
/// with nothing under it goes.
fn without_and_with(
    text: &str,
    file: &mnemo_store::memory::facts::FactsFile,
    remove: &[String],
    rewrite: &[mnemo_store::memory::facts::Fact],
    restore: &[mnemo_store::memory::facts::Fact],
) -> String {
    use mnemo_store::memory::facts::PAST_HEADING;
    let gone = |id: &str| {
        remove
            .iter()
            .chain(restore.iter().map(|f| &f.id))
            .any(|g| g.eq_ignore_ascii_case(id))
    };
    // Each line kept, and whether it holds a current fact.
    let mut kept: Vec<(String, bool)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match file.fact_at_line(i + 1) {
            Some(f) if gone(&f.id) => {}
            Some(f) => {
                let line = rewrite
                    .iter()
                    .find(|r| r.id == f.id)
                    .map_or_else(|| line.to_string(), |r| r.render());
                kept.push((line, f.is_current()));
            }
            None => kept.push((line.to_string(), false)),
        }
    }
    let back: Vec<String> = restore.iter().map(|f| f.render()).collect();
    let mut out: Vec<String> = kept.iter().map(|(l, _)| l.clone()).collect();
    let last_current = kept.iter().rposition(|(_, current)| *current);
    let past = out.iter().position(|l| l.trim() == PAST_HEADING);
    match (back.is_empty(), last_current, past) {
        (true, _, _) => {}
        (false, Some(last), _) => {
            out.splice(last + 1..last + 1, back);
        }
        (false, None, Some(past)) => {
            let mut block = back;
            block.push(String::new());
            out.splice(past..past, block);
        }
        (false, None, None) => {
            while out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            out.extend(back);
        }
    }
    if let Some(past) = out.iter().position(|l| l.trim() == PAST_HEADING) {
        if out[past + 1..].iter().all(|l| l.trim().is_empty()) {
            out.truncate(past);
        }
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_rounds_are_read_from_their_entries_and_undos() {
        let history = "[2026-03-01 10:00] chat:1 messages 0..2: 2 fact(s) proposed\n\
            [memory/facts.md: added f1, f2; 1 refused (why: memory/audit.jsonl)]\n\
            [consolidated from chat:1 messages 0..2]\n\n\
            [2026-03-01 10:05] Ada said hi.\n\n\
            [2026-03-02 10:00] chat:1 messages 2..4: 1 fact(s) proposed\n\
            [memory/facts.md: 1 said again]\n\n\
            [2026-03-03 10:00] memory flush of chat:1 messages 4..6: 2 fact(s) proposed\n\
            [memory/facts.md: replaced f1 by f3; ended f2]\n\n\
            [2026-03-04 10:00] [memory/facts.md] undo of the facts round of memory flush of chat:1 messages 4..6\n\
            [memory/facts.md: removed f3; current again f1, f2]\n\n\
            [2026-03-05 10:00] chat:2 messages 0..3: 1 fact(s) proposed\n\
            [memory/facts.md: ended f9]\n";
        let open = undoable_facts_rounds(history);
        let got: Vec<(usize, &str, Vec<String>, Vec<String>)> = open
            .iter()
            .map(|r| (r.entry, r.label.as_str(), r.added.clone(), r.ended.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    1,
                    "chat:1 messages 0..2",
                    vec!["f1".into(), "f2".into()],
                    vec![]
                ),
                (6, "chat:2 messages 0..3", vec![], vec!["f9".into()]),
            ]
        );
        // The flush, before its undo: a replacement's new fact is added.
        let flush = facts_round(
            "[2026-03-03 10:00] memory flush of chat:1 messages 4..6: 2 fact(s) proposed",
            "[memory/facts.md: replaced f1 by f3; ended f2]",
        )
        .unwrap();
        assert_eq!(flush.added, ["f3"]);
        assert_eq!(flush.replaced, [("f1".to_string(), "f3".to_string())]);
        assert_eq!(round_messages(&flush.label), Some(("chat:1", 4, 6)));
        assert!(of_round("chat:1 4..5", "chat:1", 4, 6));
        assert!(!of_round("chat:10 4..5", "chat:1", 4, 6));
        assert!(!of_round("chat:1 6..7", "chat:1", 4, 6));
    }
}
