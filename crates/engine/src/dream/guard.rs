//! The loss guard: what a dream would lose, checked before anything is
//! written (see the module docs).

use std::collections::{BTreeMap, HashSet};

use mnemo_store::memory::facts::{DatedLine, FactsFile, PAST_HEADING};

use super::rules::bullet_text;
use super::typed::TypedPlan;
use super::{words, DreamReport, Files};

/// What the dream that leaves `after` (the facts file parsed from
/// `files`' after text) would lose: [`unaccounted`] in the facts file,
/// [`unaccounted_memory_md`] in MEMORY.md, [`unaccounted_typed`] in each
/// typed memory it writes (`plans`, in `files`' order), and each of the
/// `folded` daily-log items that has no home.
pub(super) fn loss_guard(
    before: &FactsFile,
    after: &FactsFile,
    files: &Files,
    plans: &BTreeMap<String, TypedPlan>,
    folded: &[String],
    report: &DreamReport,
) -> Vec<String> {
    let (before_text, after_text) = &files.facts;
    let (md_before, md_after) = &files.memory_md;
    let mut lost = unaccounted(before, after, before_text, after_text);
    lost.extend(unaccounted_memory_md(md_before, md_after, after));
    for (plan, (path, before, text)) in plans.values().zip(&files.typed) {
        lost.extend(unaccounted_typed(path, before, text, &plan.items, after));
    }
    // Every folded item has a home: a fact (current or not), a typed
    // memory, or it was a retraction.
    let facts_said: HashSet<String> = after
        .facts()
        .iter()
        .map(|f| words(&f.text).join(" "))
        .collect();
    for item in folded {
        if !facts_said.contains(&words(item).join(" "))
            && !report.typed.iter().any(|(i, _)| i == item)
        {
            lost.push(format!("the daily-log item {item:?} has no home"));
        }
    }
    lost
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
            // Retracted for a retraction the dream read, which it names.
            Some(g)
                if g.retracted
                    && g.retracted_by
                        .as_deref()
                        .is_some_and(|by| known_retraction(by, after)) => {}
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

/// True when `by`, what a fact or a dated line says retracted it, is a
/// retraction the dream can have read: a fact of `file`, or a daily log.
fn known_retraction(by: &str, file: &FactsFile) -> bool {
    file.get(by).is_some() || (by.starts_with("memory/") && by.ends_with(".md"))
}

/// The loss guard of a typed memory the dream writes: every line of
/// `before` is still in `after`, or (a dated line a retraction ended) is
/// under "No longer true" there, ended `retracted by` a retraction the
/// dream read (a fact of `facts`, the facts file after the dream, or a
/// daily log); and every item routed to it is in one of its lines.
/// Returns what would be lost.
pub fn unaccounted_typed(
    path: &str,
    before: &str,
    after: &str,
    items: &[String],
    facts: &FactsFile,
) -> Vec<String> {
    let kept: HashSet<&str> = after.lines().collect();
    let past: Vec<DatedLine> = after
        .lines()
        .skip_while(|l| l.trim() != PAST_HEADING)
        .filter_map(DatedLine::parse)
        .filter(|d| {
            d.retracted_by
                .as_deref()
                .is_some_and(|by| known_retraction(by, facts))
        })
        .collect();
    let ended = |l: &str| {
        DatedLine::parse(l).is_some_and(|d| {
            d.is_current()
                && past.iter().any(|e| {
                    (&e.text, e.since, &e.from) == (&d.text, d.since, &d.from)
                        && e.until.is_some_and(|u| u >= d.since)
                })
        })
    };
    let mut lost: Vec<String> = before
        .lines()
        .filter(|l| !l.trim().is_empty() && !kept.contains(l) && !ended(l))
        .map(|l| format!("the {path} line {l:?} is gone"))
        .collect();
    for item in items {
        if !after.lines().any(|l| l.contains(item.as_str())) {
            lost.push(format!("the item {item:?} is not in {path}"));
        }
    }
    lost
}
