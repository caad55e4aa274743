//! Dream (`mnemo dream`): tidies the facts file between conversations.
//! Exact duplicates among the current facts (same words, any case or
//! punctuation) and near duplicates (one says everything the other says, in
//! at least three words, or nine tenths of their words are shared) are
//! merged by supersession: the fuller fact stays, the other ends, replaced
//! by it. Daily logs older than `[engine] dream_fold_days` are folded in:
//! each of their items not already a fact becomes one, dated by its log
//! (the log itself stays: it is append-only).
//!
//! A loss guard checks the result before anything is written: every fact
//! that was current is still current or ends replaced by a current fact,
//! and every other line of the file is still there; a dream that would
//! drop anything it cannot account for is refused with what it would have
//! lost. The change goes into `memory/HISTORY.md` as a diff before the
//! file is replaced atomically, so a dream killed at any point leaves the
//! file as it was before or after, and [`undo_dream`] reverses the newest.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_store::memory::facts::{AuditRecord, FactsFile, FACTS_FILE};
use mnemo_store::MemoryStore;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::merge;

const DREAM: &str = "] [memory/facts.md] dream ";
const UNDO: &str = "] [memory/facts.md] undo of dream ";
const FOLDED: &str = "[folded ";

/// What a dream did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DreamReport {
    /// The dream's id (its time), for the history and undo.
    pub id: String,
    /// Duplicates merged: `(ended, kept)` ids.
    pub merged: Vec<(String, String)>,
    /// Daily logs folded in.
    pub folded_logs: Vec<String>,
    /// Facts added from them.
    pub added: Vec<String>,
    /// Current facts after the dream.
    pub current: usize,
    /// False when there was nothing to do (nothing written).
    pub changed: bool,
}

/// What [`undo_dream`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DreamUndone {
    /// The dream undone.
    pub id: String,
    /// Lines of the facts file changed back.
    pub lines: usize,
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .flat_map(|w| {
            if w.is_ascii() {
                vec![w.to_lowercase()]
            } else {
                w.chars().map(|c| c.to_lowercase().to_string()).collect()
            }
        })
        .collect()
}

/// True when `a` and `b` say the same thing: the same words, or one holds
/// every word of the other (at least three), or nine tenths shared.
pub fn near_duplicate(a: &str, b: &str) -> bool {
    let (wa, wb): (HashSet<String>, HashSet<String>) = (
        words(a).into_iter().collect(),
        words(b).into_iter().collect(),
    );
    if wa.is_empty() || wb.is_empty() {
        return false;
    }
    if wa == wb {
        return true;
    }
    let shared = wa.intersection(&wb).count();
    let small = wa.len().min(wb.len());
    (shared == small && small >= 3) || shared * 10 >= wa.union(&wb).count() * 9
}

/// The loss guard: every fact current in `before` is current in `after`
/// or ended there, replaced by a fact current in `after`; every line of
/// `before` that is not a fact is still in `after`. Returns what would be
/// lost.
pub fn unaccounted(
    before: &FactsFile,
    after: &FactsFile,
    before_text: &str,
    after_text: &str,
) -> Vec<String> {
    let mut lost = Vec::new();
    for f in before.current() {
        match after.get(&f.id) {
            Some(g) if g.is_current() => {}
            Some(g) => match g.superseded_by.as_deref().and_then(|s| after.get(s)) {
                Some(by) if by.is_current() => {}
                _ => lost.push(format!(
                    "{} ({}) ends without a current replacement",
                    f.id, f.text
                )),
            },
            None => lost.push(format!("{} ({}) is gone", f.id, f.text)),
        }
    }
    let fact_lines: HashSet<String> = before.facts().iter().map(|f| f.render()).collect();
    let kept: HashSet<&str> = after_text.lines().collect();
    for line in before_text.lines() {
        if !line.trim().is_empty() && !fact_lines.contains(line) && !kept.contains(line) {
            lost.push(format!("the line {line:?} is gone"));
        }
    }
    lost
}

impl Engine {
    /// One dream (see the module docs), under the memory lock.
    pub fn dream(&self) -> Result<DreamReport> {
        let now = self.now();
        let _lock = self.memory.lock()?;
        let path = self.memory.facts_path()?;
        let before_text = mnemo_store::fsutil::read_text_opt(&path)?.unwrap_or_default();
        let before = FactsFile::parse(&before_text);
        let mut file = before.clone();
        let id = now.format("%Y%m%dT%H%M%S").to_string();
        let mut report = DreamReport {
            id: id.clone(),
            ..Default::default()
        };
        let mut audit = Vec::new();
        let record = |op: &str,
                      memory: &str,
                      supersedes: Option<&str>,
                      old: Option<&str>,
                      new: Option<&str>| {
            AuditRecord::change(now, "dream", op, memory, supersedes, old, new)
        };

        // Fold old daily logs not folded yet.
        let folded = folded_logs(&self.memory.read_history()?);
        let today = self.memory.today(now);
        for (date, rel) in daily_logs(&self.memory)? {
            if (today - date).num_days() < self.settings.dream_fold_days as i64
                || folded.contains(&rel)
            {
                continue;
            }
            let Some(log) = self.memory.read_daily(date)? else {
                continue;
            };
            let known: HashSet<String> = file
                .facts()
                .iter()
                .map(|f| words(&f.text).join(" "))
                .collect();
            for item in log.text.lines().filter_map(daily_item) {
                if known.contains(&words(&item).join(" ")) || words(&item).is_empty() {
                    continue;
                }
                let fid = file.add(&item, Some(date), now, Some(format!("dream {rel}")));
                audit.push(record("add", &fid, None, None, Some(&item)));
                report.added.push(fid);
            }
            report.folded_logs.push(rel);
        }

        // Merge duplicates: the fuller (then the older) fact stays.
        let current: Vec<(String, String)> = file
            .current()
            .map(|f| (f.id.clone(), f.text.clone()))
            .collect();
        let mut ended: HashMap<String, String> = HashMap::new();
        for (i, (a, ta)) in current.iter().enumerate() {
            if ended.contains_key(a) {
                continue;
            }
            for (b, tb) in current.iter().skip(i + 1) {
                if ended.contains_key(b) || !near_duplicate(ta, tb) {
                    continue;
                }
                let (keep, drop, dropped_text) = if words(tb).len() > words(ta).len() {
                    (b, a, ta)
                } else {
                    (a, b, tb)
                };
                let since = file.get(keep).and_then(|f| f.since);
                file.end(drop, since.or(Some(today)), Some(keep))?;
                audit.push(record(
                    "merge",
                    keep,
                    Some(drop),
                    Some(dropped_text),
                    file.get(keep).map(|f| f.text.as_str()),
                ));
                report.merged.push((drop.clone(), keep.clone()));
                ended.insert(drop.clone(), keep.clone());
                if drop == a {
                    break;
                }
            }
        }
        report.current = file.current().count();
        let after_text = file.render();
        if after_text == before_text || (report.merged.is_empty() && report.added.is_empty()) {
            if !report.folded_logs.is_empty() {
                // Logs whose items were all facts already: remember them.
                let marks: Vec<String> = report
                    .folded_logs
                    .iter()
                    .map(|l| format!("{FOLDED}{l}]"))
                    .collect();
                self.memory.append_history(
                    &format!(
                        "[{}{DREAM}{id}: nothing to change\n{}",
                        now.format("%Y-%m-%d %H:%M"),
                        marks.join("\n")
                    ),
                    now,
                )?;
            }
            return Ok(report);
        }
        let after = FactsFile::parse(&after_text);
        let lost = unaccounted(&before, &after, &before_text, &after_text);
        if !lost.is_empty() {
            return Err(Error::Invalid(format!(
                "dream refused, nothing written: it would lose {}",
                lost.join("; ")
            )));
        }
        let diff = merge::unified_diff(&before_text, &after_text).replacen(
            "--- MEMORY.md\n+++ MEMORY.md",
            &format!("--- {FACTS_FILE}\n+++ {FACTS_FILE}"),
            1,
        );
        let mut entry = format!(
            "[{}{DREAM}{id}: {} merged, {} added from {} daily log(s); to undo it, run `mnemo dream --undo`\n",
            now.format("%Y-%m-%d %H:%M"),
            report.merged.len(),
            report.added.len(),
            report.folded_logs.len()
        );
        for l in &report.folded_logs {
            entry.push_str(&format!("{FOLDED}{l}]\n"));
        }
        entry.push_str(diff.trim_end());
        // The diff first, then the file (atomic): killed anywhere, the file
        // is as before or as after, and the history says what the dream was.
        self.memory.append_history(&entry, now)?;
        mnemo_store::failpoint::hit("dream.after_history");
        mnemo_store::fsutil::atomic_write(&path, after_text.as_bytes())?;
        self.memory.append_audit(&audit)?;
        report.changed = true;
        Ok(report)
    }
}

/// The daily logs folded by dreams that are not undone.
fn folded_logs(history: &str) -> HashSet<String> {
    let mut by_dream: Vec<(String, Vec<String>)> = Vec::new();
    for line in history.lines() {
        if let Some(i) = line.find(UNDO) {
            let id = line[i + UNDO.len()..]
                .split(':')
                .next()
                .unwrap_or_default()
                .trim();
            by_dream.retain(|(d, _)| d != id);
        } else if let Some(i) = line.find(DREAM) {
            let id = line[i + DREAM.len()..]
                .split(':')
                .next()
                .unwrap_or_default()
                .trim();
            by_dream.push((id.to_string(), Vec::new()));
        } else if let Some(log) = line.strip_prefix(FOLDED).and_then(|r| r.strip_suffix(']')) {
            if let Some((_, logs)) = by_dream.last_mut() {
                logs.push(log.to_string());
            }
        }
    }
    by_dream.into_iter().flat_map(|(_, l)| l).collect()
}

/// The daily logs under memory/, oldest first.
fn daily_logs(memory: &MemoryStore) -> Result<Vec<(NaiveDate, String)>> {
    let dir = memory.workspace().memory_dir();
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(mnemo_store::Error::io("list", &dir)(e).into()),
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".md") {
            if let Ok(d) = NaiveDate::parse_from_str(stem, "%Y-%m-%d") {
                out.push((d, format!("memory/{name}")));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The text of a daily log's item (`- [HH:MM] text` or `- text`).
fn daily_item(line: &str) -> Option<String> {
    let body = line.strip_prefix("- ")?.trim();
    let body = match body.strip_prefix('[') {
        Some(rest) => rest.split_once("] ").map_or(body, |(_, t)| t),
        None => body,
    };
    let body = mnemo_store::memory::facts::one_line(body);
    (!body.is_empty()).then_some(body)
}

/// Reverses the newest dream that is not undone yet, under the memory lock.
pub fn undo_dream(memory: &MemoryStore, now: DateTime<Utc>) -> Result<DreamUndone> {
    let _lock = memory.lock()?;
    let history = memory.read_history()?;
    let mut open: Vec<(String, String)> = Vec::new();
    let mut lines = history.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.find(UNDO).map(|i| &line[i + UNDO.len()..]) {
            let id = rest
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            if let Some(i) = open.iter().rposition(|(d, _)| *d == id) {
                open.remove(i);
            }
        } else if let Some(rest) = line.find(DREAM).map(|i| &line[i + DREAM.len()..]) {
            let id = rest
                .split(':')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            let mut diff = String::new();
            while let Some(l) = lines.next_if(|l| !l.trim().is_empty()) {
                if !l.starts_with(FOLDED) {
                    diff.push_str(l);
                    diff.push('\n');
                }
            }
            if !diff.is_empty() {
                open.push((id, diff));
            }
        }
    }
    let Some((id, diff)) = open.pop() else {
        return Err(mnemo_store::Error::NotFound(
            "no dream to undo: none changed memory/facts.md, or all were undone (memory/HISTORY.md records each one)".into(),
        )
        .into());
    };
    let path = memory.facts_path()?;
    let current = mnemo_store::fsutil::read_text_opt(&path)?.unwrap_or_default();
    let old = merge::reverse_diff(&current, &diff).map_err(|e| {
        Error::Invalid(format!(
            "cannot undo dream {id}: {e}. Its diff is in memory/HISTORY.md; edit memory/facts.md by hand to take back what you want"
        ))
    })?;
    let change = merge::unified_diff(&current, &old).replacen(
        "--- MEMORY.md\n+++ MEMORY.md",
        &format!("--- {FACTS_FILE}\n+++ {FACTS_FILE}"),
        1,
    );
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
    mnemo_store::fsutil::atomic_write(&path, old.as_bytes())?;
    Ok(DreamUndone {
        id,
        lines: lines_changed,
    })
}
