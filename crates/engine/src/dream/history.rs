//! A dream's record in `memory/HISTORY.md` (see the module docs): the
//! entry a dream writes, and the dreams the history holds.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use mnemo_store::memory::facts::FACTS_FILE;

use super::{DreamReport, Files};
use crate::merge;

pub(super) const DREAM: &str = "] [memory/facts.md] dream ";
pub(super) const UNDO: &str = "] [memory/facts.md] undo of dream ";
pub(super) const FOLDED: &str = "[folded ";
/// The line a dream appends once all its files are written.
pub(super) const APPLIED: &str = "] [memory/facts.md] dream applied: ";
/// In the entry of a dream whose `applied` line says it landed.
pub(super) const WRITE_AHEAD: &str = " into typed memories, ";
pub(super) const CREATED: &str = "[created ";

/// A dream recorded in the history and not undone.
#[derive(Debug, Default)]
pub(super) struct Recorded {
    pub(super) id: String,
    /// Its files were all written: a dream's entry is written first, then
    /// its files, then its `applied` line (entries from before that line
    /// existed, and entries with nothing to change, count as applied).
    pub(super) applied: bool,
    pub(super) logs: Vec<String>,
    pub(super) created: Vec<String>,
    pub(super) diff: String,
}

/// The id after `marker` in `line`, up to a colon.
fn id_after(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    Some(
        rest.split(':')
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
    )
}

/// The dreams of `history` that are not undone, oldest first.
pub(super) fn recorded_dreams(history: &str) -> Vec<Recorded> {
    let mut out: Vec<Recorded> = Vec::new();
    let mut lines = history.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(id) = id_after(line, UNDO) {
            if let Some(i) = out.iter().rposition(|d| d.id == id) {
                out.remove(i);
            }
        } else if let Some(id) = id_after(line, APPLIED) {
            if let Some(d) = out.iter_mut().rev().find(|d| d.id == id) {
                d.applied = true;
            }
        } else if let Some(id) = id_after(line, DREAM) {
            let mut d = Recorded {
                id,
                applied: !line.contains(WRITE_AHEAD),
                ..Default::default()
            };
            while let Some(l) = lines.next_if(|l| !l.trim().is_empty()) {
                if let Some(p) = l.strip_prefix(CREATED).and_then(|r| r.strip_suffix(']')) {
                    d.created.push(p.to_string());
                } else if let Some(p) = l.strip_prefix(FOLDED).and_then(|r| r.strip_suffix(']')) {
                    d.logs.push(p.to_string());
                } else {
                    d.diff.push_str(l);
                    d.diff.push('\n');
                }
            }
            out.push(d);
        }
    }
    out
}

/// The daily logs folded by dreams that are applied and not undone.
pub(super) fn folded_logs(history: &str) -> HashSet<String> {
    recorded_dreams(history)
        .into_iter()
        .filter(|d| d.applied)
        .flat_map(|d| d.logs)
        .collect()
}

/// `before` to `after` as a unified diff headed by `path`.
pub(super) fn file_diff(path: &str, before: &str, after: &str) -> String {
    merge::unified_diff(before, after).replacen(
        "--- MEMORY.md\n+++ MEMORY.md",
        &format!("--- {path}\n+++ {path}"),
        1,
    )
}

/// The history entry of a dream with nothing to change that folded
/// daily logs (their items were all facts already): it remembers them.
pub(super) fn nothing_entry(report: &DreamReport, now: DateTime<Utc>) -> String {
    let marks: Vec<String> = report
        .folded_logs
        .iter()
        .map(|l| format!("{FOLDED}{l}]"))
        .collect();
    format!(
        "[{}{DREAM}{}: nothing to change\n{}",
        now.format("%Y-%m-%d %H:%M"),
        report.id,
        marks.join("\n")
    )
}

/// The history entry of a dream that changes `files`: what it did, the
/// logs it folded, the typed memories it made, and a diff per file.
pub(super) fn dream_entry(report: &DreamReport, now: DateTime<Utc>, files: &Files) -> String {
    let mut entry = format!(
        "[{}{DREAM}{}: {} merged, {} superseded, {} retracted, {} added from {} daily log(s), {} into typed memories, {} moved from MEMORY.md; to undo it, run `mnemo dream --undo`\n",
        now.format("%Y-%m-%d %H:%M"),
        report.id,
        report.merged.len(),
        report.superseded.len(),
        report.retracted.len(),
        report.added.len(),
        report.folded_logs.len(),
        report.typed.len(),
        report.moved.len()
    );
    for l in &report.folded_logs {
        entry.push_str(&format!("{FOLDED}{l}]\n"));
    }
    for p in &report.typed_created {
        entry.push_str(&format!("{CREATED}{p}]\n"));
    }
    let (facts_before, facts_after) = &files.facts;
    let (md_before, md_after) = &files.memory_md;
    let mut diffs = vec![
        file_diff(FACTS_FILE, facts_before, facts_after),
        file_diff("MEMORY.md", md_before, md_after),
    ];
    for (path, before, after) in &files.typed {
        diffs.push(file_diff(path, before, after));
    }
    let diffs: Vec<&str> = diffs
        .iter()
        .map(|d| d.trim_end())
        .filter(|d| !d.is_empty())
        .collect();
    entry.push_str(&diffs.join("\n"));
    entry
}
