//! Dream (`mnemo dream`): tidies long-term memory between conversations.
//! It owns four passes, each of which only ends, adds or moves lines:
//!
//! - Duplicates: exact duplicates among the current facts (same words, any
//!   case or punctuation) and near duplicates (one says everything the
//!   other says, in at least three words, or nine tenths of their words are
//!   shared) are merged by supersession: the fuller fact stays, the other
//!   ends, replaced by it.
//! - Contradictions: two current facts about the same subject with
//!   different values are resolved by supersession: the newer (later
//!   `since`, then the later id) stays, the older ends on the newer's date,
//!   replaced by it. "Same subject" is decided conservatively, by rule and
//!   without a model (a model's judgement would make the dream neither
//!   repeatable nor free): both facts must have the same leading key
//!   ([`subject`]): the words before a colon (`Employer: Acme`), or before
//!   the first ` is ` / ` are ` when that key has two to six words (`The
//!   user's city is Paris`; a one-word key such as `Caroline is ...` says
//!   too little to tell two facts apart), and both values must be short
//!   (at most eight words). Anything else is left alone.
//! - Daily logs older than `[engine] dream_fold_days` are folded in: each
//!   of their items not already a fact becomes one, dated by its log (the
//!   log itself stays: it is append-only).
//! - MEMORY.md over its caps (the smaller of `[memory] memory_md_max_lines`
//!   / `memory_md_max_bytes`, what the prompt shows, and `[engine]
//!   memory_max_lines` / `memory_max_bytes`, what consolidation keeps):
//!   bullet lines are moved into the facts file, as current facts, until it
//!   fits. The lines consolidation wrote go first, then the others, oldest
//!   (highest in the file) first; index lines of typed memories, headings
//!   and prose never move. (mnemo keeps no use counts of MEMORY.md lines,
//!   so "least used" is not a criterion.)
//!
//! A loss guard checks the result before anything is written: every fact
//! that was current is still current or ends replaced by a current fact,
//! every other line of the facts file is still there, and every line of
//! MEMORY.md is still there or is a current fact now ([`unaccounted`],
//! [`unaccounted_memory_md`]); a dream that would drop anything it cannot
//! account for is refused with what it would have lost. The change goes
//! into `memory/HISTORY.md` as a diff (one per file) before the files are
//! replaced atomically (the facts file first, then MEMORY.md), so a dream
//! killed at any point leaves each file as it was before or after (a moved
//! line at worst in both), and [`undo_dream`] reverses the newest.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_store::memory::facts::{AuditRecord, FactsFile, FACTS_FILE};
use mnemo_store::MemoryStore;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::merge;

/// A current fact as the contradiction pass orders it: its day, its id's
/// number, its id and its text.
type Dated = (Option<NaiveDate>, u64, String, String);

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
    /// Contradictions resolved: `(ended, kept)` ids, the older fact ended
    /// in favour of the newer one about the same subject.
    pub superseded: Vec<(String, String)>,
    /// MEMORY.md lines moved into the facts file to bring it under its
    /// caps: `(line, fact id)`.
    pub moved: Vec<(String, String)>,
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

/// The words of `text` as the dream compares them: lower-cased runs of
/// letters and digits, and each character of scripts without spaces.
pub(crate) fn words(text: &str) -> Vec<String> {
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

/// The subject of a fact when it has a clear one (see the module docs):
/// the words of the key before a colon, or before the first ` is ` / ` are `
/// when that key has two to six words; `None` when the value is missing or
/// longer than eight words.
pub fn subject(text: &str) -> Option<String> {
    let lower = text.trim().to_lowercase();
    let short_value = |v: &str| (1..=8).contains(&words(v).len());
    if let Some((k, v)) = lower.split_once([':', '\u{ff1a}']) {
        let key = words(k);
        return ((1..=6).contains(&key.len()) && short_value(v)).then(|| key.join(" "));
    }
    let cut = [" is ", " are "]
        .iter()
        .filter_map(|sep| lower.find(sep).map(|i| (i, sep.len())))
        .min();
    let (i, n) = cut?;
    let (key, value) = (words(&lower[..i]), &lower[i + n..]);
    ((2..=6).contains(&key.len()) && short_value(value)).then(|| key.join(" "))
}

/// The loss guard of MEMORY.md: every line of `before` that is not blank
/// is still in `after`, or (a bullet moved by the dream) its text is a
/// current fact of `facts`. Returns what would be lost.
pub fn unaccounted_memory_md(before: &str, after: &str, facts: &FactsFile) -> Vec<String> {
    let kept: HashSet<&str> = after.lines().collect();
    let current: HashSet<String> = facts.current().map(|f| words(&f.text).join(" ")).collect();
    before
        .lines()
        .filter(|l| !l.trim().is_empty() && !kept.contains(l))
        .filter(|l| !current.contains(&words(bullet_text(l).unwrap_or(l)).join(" ")))
        .map(|l| format!("the MEMORY.md line {l:?} is gone"))
        .collect()
}

/// The text of a MEMORY.md bullet line (`- text` or `* text`).
pub(crate) fn bullet_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    t.strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
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
        // Contradictions: per subject, the newest current fact stays.
        let mut by_subject: HashMap<String, Vec<Dated>> = HashMap::new();
        for f in file.current() {
            if let Some(key) = subject(&f.text) {
                let n = f.id.trim_start_matches('f').parse().unwrap_or(0);
                by_subject
                    .entry(key)
                    .or_default()
                    .push((f.since, n, f.id.clone(), f.text.clone()));
            }
        }
        let mut subjects: Vec<_> = by_subject
            .into_iter()
            .filter(|(_, v)| v.len() > 1)
            .collect();
        subjects.sort();
        for (_, mut group) in subjects {
            group.sort();
            let Some((since, _, keep, kept_text)) = group.pop() else {
                continue;
            };
            for (_, _, drop, text) in group {
                file.end(&drop, since.or(Some(today)), Some(&keep))?;
                audit.push(record(
                    "supersede",
                    &keep,
                    Some(&drop),
                    Some(&text),
                    Some(&kept_text),
                ));
                report.superseded.push((drop, keep.clone()));
            }
        }

        // MEMORY.md over its caps: bullet lines move into the facts file.
        let md_before = self.memory.read_memory_md()?;
        let md_after = self.fit_memory_md(&md_before, &mut file, now, &mut report, &mut audit);

        report.current = file.current().count();
        let after_text = file.render();
        let nothing = report.merged.is_empty()
            && report.added.is_empty()
            && report.superseded.is_empty()
            && report.moved.is_empty();
        if (after_text == before_text && md_after == md_before) || nothing {
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
        let mut lost = unaccounted(&before, &after, &before_text, &after_text);
        lost.extend(unaccounted_memory_md(&md_before, &md_after, &after));
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
        let md_diff = merge::unified_diff(&md_before, &md_after);
        let mut entry = format!(
            "[{}{DREAM}{id}: {} merged, {} superseded, {} added from {} daily log(s), {} moved from MEMORY.md; to undo it, run `mnemo dream --undo`\n",
            now.format("%Y-%m-%d %H:%M"),
            report.merged.len(),
            report.superseded.len(),
            report.added.len(),
            report.folded_logs.len(),
            report.moved.len()
        );
        for l in &report.folded_logs {
            entry.push_str(&format!("{FOLDED}{l}]\n"));
        }
        entry.push_str(diff.trim_end());
        if !md_diff.is_empty() {
            if !diff.is_empty() {
                entry.push('\n');
            }
            entry.push_str(md_diff.trim_end());
        }
        // The diffs first, then the files (each atomic): killed anywhere,
        // each file is as before or as after, and the history says what
        // the dream was. Facts before MEMORY.md: a moved line is at worst
        // in both, never in neither.
        self.memory.append_history(&entry, now)?;
        mnemo_store::failpoint::hit("dream.after_history");
        if after_text != before_text {
            mnemo_store::fsutil::atomic_write(&path, after_text.as_bytes())?;
        }
        mnemo_store::failpoint::hit("dream.after_facts");
        if md_after != md_before {
            self.memory.write_memory_md(&md_after)?;
        }
        self.memory.append_audit(&audit)?;
        report.changed = true;
        Ok(report)
    }
}

impl Engine {
    /// MEMORY.md brought under its caps by moving bullet lines into the
    /// facts file (see the module docs); `text` as it is when it fits.
    fn fit_memory_md(
        &self,
        text: &str,
        file: &mut FactsFile,
        now: DateTime<Utc>,
        report: &mut DreamReport,
        audit: &mut Vec<AuditRecord>,
    ) -> String {
        let ms = self.memory.settings();
        let max_lines = ms.memory_md_max_lines.min(self.settings.memory_max_lines);
        let max_bytes = ms.memory_md_max_bytes.min(self.settings.memory_max_bytes);
        let lines: Vec<&str> = text.lines().collect();
        let (mut n, mut bytes) = (
            lines.len(),
            lines.iter().map(|l| l.len() + 1).sum::<usize>(),
        );
        if n <= max_lines && bytes <= max_bytes {
            return text.to_string();
        }
        let consolidated = crate::consolidate::read_provenance(&self.provenance_path());
        let movable = |l: &str| bullet_text(l).is_some() && !merge::is_index_line(l);
        let mut order: Vec<usize> = (0..lines.len()).filter(|i| movable(lines[*i])).collect();
        // Consolidation's own lines first, then the others, top first.
        order.sort_by_key(|i| {
            let mine = merge::line_key(lines[*i]).is_some_and(|k| consolidated.contains(&k));
            (!mine, *i)
        });
        let mut moved = HashSet::new();
        for i in order {
            if n <= max_lines && bytes <= max_bytes {
                break;
            }
            let line = lines[i];
            let Some(t) = bullet_text(line) else { continue };
            let t = mnemo_store::memory::facts::one_line(t);
            let key = words(&t).join(" ");
            let known = file
                .current()
                .find(|f| words(&f.text).join(" ") == key)
                .map(|f| f.id.clone());
            let id = match known {
                Some(id) => id,
                None => {
                    let id = file.add(&t, None, now, Some("dream MEMORY.md".into()));
                    audit.push(AuditRecord::change(
                        now,
                        "dream",
                        "add",
                        &id,
                        None,
                        None,
                        Some(&t),
                    ));
                    id
                }
            };
            report.moved.push((line.to_string(), id));
            moved.insert(i);
            n -= 1;
            bytes -= line.len() + 1;
        }
        let mut out: Vec<&str> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if !moved.contains(&i) {
                out.push(l);
            }
        }
        let mut s = out.join("\n");
        if !s.is_empty() {
            s.push('\n');
        }
        s
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
    let (facts_diff, md_diff) = split_diffs(&diff);
    let cannot = |e: String, file: &str| {
        Error::Invalid(format!(
            "cannot undo dream {id}: {e}. Its diff is in memory/HISTORY.md; edit {file} by hand to take back what you want"
        ))
    };
    let path = memory.facts_path()?;
    let current = mnemo_store::fsutil::read_text_opt(&path)?.unwrap_or_default();
    let old = merge::reverse_diff(&current, &facts_diff).map_err(|e| cannot(e, FACTS_FILE))?;
    let md_current = memory.read_memory_md()?;
    let md_old = if md_diff.is_empty() {
        md_current.clone()
    } else {
        merge::reverse_diff(&md_current, &md_diff).map_err(|e| cannot(e, "MEMORY.md"))?
    };
    let mut change = merge::unified_diff(&current, &old).replacen(
        "--- MEMORY.md\n+++ MEMORY.md",
        &format!("--- {FACTS_FILE}\n+++ {FACTS_FILE}"),
        1,
    );
    change.push_str(&merge::unified_diff(&md_current, &md_old));
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
    if old != current {
        mnemo_store::fsutil::atomic_write(&path, old.as_bytes())?;
    }
    if md_old != md_current {
        memory.write_memory_md(&md_old)?;
    }
    Ok(DreamUndone {
        id,
        lines: lines_changed,
    })
}

/// A dream's recorded change split by file: the facts file's diff and
/// MEMORY.md's (lines before any file header are the facts file's, as
/// dreams before MEMORY.md was tidied wrote them).
fn split_diffs(diff: &str) -> (String, String) {
    let facts_header = format!("--- {FACTS_FILE}");
    let (mut facts, mut md) = (String::new(), String::new());
    let mut into_md = false;
    let mut lines = diff.lines().peekable();
    while let Some(l) = lines.next() {
        if l == facts_header && lines.peek() == Some(&format!("+++ {FACTS_FILE}").as_str()) {
            into_md = false;
        } else if l == "--- MEMORY.md" && lines.peek() == Some(&"+++ MEMORY.md") {
            into_md = true;
        }
        let out = if into_md { &mut md } else { &mut facts };
        out.push_str(l);
        out.push('\n');
    }
    (facts, md)
}
