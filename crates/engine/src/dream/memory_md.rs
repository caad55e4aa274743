//! Pass 5, fit MEMORY.md within its caps (see the module docs).

use std::collections::{BTreeMap, HashSet};

use mnemo_store::memory::upsert_index_line;

use super::rules::bullet_text;
use super::state::DreamState;
use super::typed::TypedPlan;
use super::words;
use crate::merge;

/// MEMORY.md's caps as the dream keeps them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Caps {
    pub(super) max_lines: usize,
    pub(super) max_bytes: usize,
}

/// MEMORY.md (`text`) with the index lines of the typed memories the
/// dream makes (in `plans`).
pub(super) fn index_new_typed(text: &str, plans: &BTreeMap<String, TypedPlan>) -> String {
    let mut md = text.to_string();
    for (path, plan) in plans.iter().filter(|(_, p)| p.before.is_none()) {
        md = upsert_index_line(&md, path, &plan.front);
    }
    md
}

/// Pass 5: MEMORY.md (`text`) brought under its `caps` by moving bullet
/// lines into the facts file (see the module docs), the lines
/// consolidation wrote (`consolidated`, asked only when over the caps)
/// first; `text` as it is when it fits.
pub(super) fn fit_memory_md(
    state: &mut DreamState,
    text: &str,
    caps: Caps,
    consolidated: impl FnOnce() -> merge::LineSet,
) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let (mut n, mut bytes) = (
        lines.len(),
        lines.iter().map(|l| l.len() + 1).sum::<usize>(),
    );
    let fits = |n: usize, bytes: usize| n <= caps.max_lines && bytes <= caps.max_bytes;
    if fits(n, bytes) {
        return text.to_string();
    }
    let consolidated = consolidated();
    let movable = |l: &str| bullet_text(l).is_some() && !merge::is_index_line(l);
    let mut order: Vec<usize> = (0..lines.len()).filter(|i| movable(lines[*i])).collect();
    // Consolidation's own lines first, then the others, top first.
    order.sort_by_key(|i| {
        let mine = merge::line_key(lines[*i]).is_some_and(|k| consolidated.contains(&k));
        (!mine, *i)
    });
    let mut moved = HashSet::new();
    for i in order {
        if fits(n, bytes) {
            break;
        }
        let line = lines[i];
        let Some(t) = bullet_text(line) else { continue };
        let id = into_facts(state, t);
        state.report.moved.push((line.to_string(), id));
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

/// The id of the current fact that says the MEMORY.md bullet text `t`:
/// one that says it already, else a fact added for it.
fn into_facts(state: &mut DreamState, t: &str) -> String {
    let t = mnemo_store::memory::facts::one_line(t);
    let key = words(&t).join(" ");
    let known = state
        .file
        .current()
        .find(|f| words(&f.text).join(" ") == key)
        .map(|f| f.id.clone());
    match known {
        Some(id) => id,
        None => {
            let id = state
                .file
                .add(&t, None, state.now, Some("dream MEMORY.md".into()));
            state.audit.record("add", &id, None, None, Some(&t));
            id
        }
    }
}
