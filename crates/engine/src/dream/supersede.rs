//! Pass 4, supersede the contradictions (see the module docs).

use std::collections::HashMap;

use chrono::NaiveDate;

use super::rules::subject;
use super::state::DreamState;
use crate::error::Result;

/// A current fact as the contradiction pass orders it: its day, its id's
/// number, its id and its text.
type Dated = (Option<NaiveDate>, u64, String, String);

/// Pass 4: contradictions: per [`subject`], the newest current fact
/// stays; the others end on its day, replaced by it.
pub(super) fn supersede_contradictions(state: &mut DreamState) -> Result<()> {
    let mut by_subject: HashMap<String, Vec<Dated>> = HashMap::new();
    for f in state.file.current() {
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
            state
                .file
                .end(&drop, since.or(Some(state.today)), Some(&keep))?;
            state.audit.record(
                "supersede",
                &keep,
                Some(&drop),
                Some(&text),
                Some(&kept_text),
            );
            state.report.superseded.push((drop, keep.clone()));
        }
    }
    Ok(())
}
