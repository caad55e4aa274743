//! Pass 3, merge the near-duplicates (see the module docs).

use std::collections::HashMap;

use super::rules::near_duplicate;
use super::state::DreamState;
use super::words;
use crate::error::Result;

/// Pass 3: merges duplicates among the current facts: the fuller (then
/// the clean, then the older) fact stays. Texts are compared without the
/// metadata a model may have copied into them (`(f2)`, `(since ...)`), so
/// a copy that carries it is the one that ends.
pub(super) fn merge_near_duplicates(state: &mut DreamState) -> Result<()> {
    let file = &mut state.file;
    let current: Vec<(String, String)> = file
        .current()
        .map(|f| (f.id.clone(), f.text.clone()))
        .collect();
    let mut ended: HashMap<String, String> = HashMap::new();
    for (i, (a, ta)) in current.iter().enumerate() {
        if ended.contains_key(a) {
            continue;
        }
        let ca = crate::guard::strip_fact_meta(ta);
        for (b, tb) in current.iter().skip(i + 1) {
            let cb = crate::guard::strip_fact_meta(tb);
            if ended.contains_key(b) || !near_duplicate(&ca, &cb) {
                continue;
            }
            let keep_b = match words(&cb).len().cmp(&words(&ca).len()) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => ta.trim() != ca && tb.trim() == cb,
            };
            let (keep, drop, dropped_text) = if keep_b { (b, a, ta) } else { (a, b, tb) };
            let since = file.get(keep).and_then(|f| f.since);
            file.end(drop, since.or(Some(state.today)), Some(keep))?;
            state.audit.record(
                "merge",
                keep,
                Some(drop),
                Some(dropped_text),
                file.get(keep).map(|f| f.text.as_str()),
            );
            state.report.merged.push((drop.clone(), keep.clone()));
            ended.insert(drop.clone(), keep.clone());
            if drop == a {
                break;
            }
        }
    }
    Ok(())
}
