//! Pass 1, fold the daily logs (see the module docs): each item of a log
//! due to be folded becomes a fact, a typed memory's line, or (a
//! retraction) is carried out.

use std::collections::HashSet;

use chrono::NaiveDate;
use mnemo_store::MemoryStore;

use super::retract::{apply_retraction, retract_from_log};
use super::rules::{retraction, Retraction};
use super::state::DreamState;
use super::typed::{fold_into_typed, typed_home};
use super::words;
use crate::error::Result;

/// A daily log due to be folded: its day, its path and its text.
pub(super) struct DueLog {
    pub(super) date: NaiveDate,
    pub(super) rel: String,
    pub(super) text: String,
}

/// The daily logs due to be folded, read, oldest first: at least
/// `fold_days` old on `today`, and not among the logs `folded` already.
pub(super) fn due_logs(
    memory: &MemoryStore,
    today: NaiveDate,
    fold_days: i64,
    folded: &HashSet<String>,
) -> Result<Vec<DueLog>> {
    let mut out = Vec::new();
    for (date, rel) in daily_logs(memory)? {
        if (today - date).num_days() < fold_days || folded.contains(&rel) {
            continue;
        }
        let Some(log) = memory.read_daily(date)? else {
            continue;
        };
        out.push(DueLog {
            date,
            rel,
            text: log.text,
        });
    }
    Ok(out)
}

/// Pass 1: folds the daily `logs` in, oldest first (a typed memory the
/// fold makes gets the path `free_path` gives its name).
pub(super) fn fold_daily_logs(
    state: &mut DreamState,
    logs: Vec<DueLog>,
    free_path: &dyn Fn(&str) -> String,
) -> Result<()> {
    for log in logs {
        fold_log(state, &log, free_path)?;
        state.report.folded_logs.push(log.rel);
    }
    Ok(())
}

/// Folds the items of one daily log that are not facts already (by their
/// words, as the facts file was before the log).
fn fold_log(
    state: &mut DreamState,
    log: &DueLog,
    free_path: &dyn Fn(&str) -> String,
) -> Result<()> {
    let at = (log.date, log.rel.as_str());
    let known: HashSet<String> = state
        .file
        .facts()
        .iter()
        .map(|f| words(&f.text).join(" "))
        .collect();
    for item in log.text.lines().filter_map(daily_item) {
        if known.contains(&words(&item).join(" ")) || words(&item).is_empty() {
            continue;
        }
        let r = retraction(&item);
        if let Some(r @ (Retraction::Statement(_) | Retraction::Subject(_))) = &r {
            // An instruction, not a fact: it ends what it names, among
            // the facts and the typed memories' dated lines.
            retract_from_log(state, r, &item, at)?;
            continue;
        }
        if r.is_none() {
            if let Some(home) = typed_home(&item) {
                if fold_into_typed(state, home, &item, at, free_path) {
                    state.folded_items.push(item.clone());
                    continue;
                }
            }
        }
        state.folded_items.push(item.clone());
        add_fact(state, &item, r.as_ref(), at)?;
    }
    Ok(())
}

/// Adds the folded `item` as a fact dated by its log; a "no longer" item
/// (`r`) then supersedes the facts that say it without "no longer".
fn add_fact(
    state: &mut DreamState,
    item: &str,
    r: Option<&Retraction>,
    (date, log): (NaiveDate, &str),
) -> Result<()> {
    let fid = state
        .file
        .add(item, Some(date), state.now, Some(format!("dream {log}")));
    state.audit.record("add", &fid, None, None, Some(item));
    state.report.added.push(fid.clone());
    if let Some(r @ Retraction::NoLonger(_)) = r {
        let on = (Some(date), state.today);
        for e in apply_retraction(&mut state.file, r, on, &fid, Some(&fid))? {
            let old = state.file.get(&e).map(|f| f.text.clone());
            state
                .audit
                .record("supersede", &fid, Some(&e), old.as_deref(), Some(item));
            state.report.superseded.push((e, fid.clone()));
        }
    }
    Ok(())
}

/// The daily logs under memory/, oldest first.
fn daily_logs(memory: &MemoryStore) -> Result<Vec<(NaiveDate, String)>> {
    let mut out = Vec::new();
    for e in memory.storage().list("memory")? {
        // Daily logs are at the top of memory/, never in a sub-folder.
        let Some(name) = e.rel.strip_prefix("memory/").filter(|n| !n.contains('/')) else {
            continue;
        };
        if let Some(stem) = name.strip_suffix(".md") {
            if let Ok(d) = NaiveDate::parse_from_str(stem, "%Y-%m-%d") {
                out.push((d, e.rel.clone()));
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
