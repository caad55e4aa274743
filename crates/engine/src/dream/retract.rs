//! Pass 2, carry out the retractions (see the module docs): those among
//! the current facts here, those of a daily log as the fold reads it
//! ([`retract_from_log`]); each ends the facts and the typed memories'
//! dated lines it names.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use mnemo_store::memory::facts::{Fact, FactsFile};

use super::rules::{retraction, Retraction};
use super::state::DreamState;
use super::typed::{TypedHome, TypedPlan};
use crate::error::Result;

/// Pass 2: the retractions among the current facts (a flush's "The user
/// asked to forget ...", a dream's fold before retractions were read):
/// each ends what it names, then itself (an instruction carried out); one
/// that names nothing stays as it is.
pub(super) fn carry_out_retractions(state: &mut DreamState) -> Result<()> {
    let pending: Vec<(String, String, Option<NaiveDate>, Retraction)> = state
        .file
        .current()
        .filter_map(|f| retraction(&f.text).map(|r| (f.id.clone(), f.text.clone(), f.since, r)))
        .collect();
    for (rid, text, since, r) in pending {
        if !state.file.get(&rid).is_some_and(Fact::is_current) {
            continue;
        }
        carry_out(state, &rid, &text, since, &r)?;
    }
    Ok(())
}

/// Carries out the retraction `r`, the current fact `rid` (`text`, since
/// `since`): ends what it names (for a "no longer" fact, supersedes the
/// facts it names), then, when it named something, ends itself (a "no
/// longer" fact stays: it is a fact).
fn carry_out(
    state: &mut DreamState,
    rid: &str,
    text: &str,
    since: Option<NaiveDate>,
    r: &Retraction,
) -> Result<()> {
    let today = state.today;
    let ended = apply_retraction(&mut state.file, r, (since, today), rid, Some(rid))?;
    let lines = match r {
        Retraction::NoLonger(_) => Vec::new(),
        _ => retract_typed(r, (since, today), rid, &state.typed_all, &mut state.plans),
    };
    for (path, name, line) in &lines {
        state.audit.record("retract", name, None, Some(line), None);
        state
            .report
            .retracted
            .push((format!("{path}: {line}"), rid.to_string()));
    }
    for e in &ended {
        let old = state.file.get(e).map(|f| f.text.clone());
        let (op, sup) = match r {
            Retraction::NoLonger(_) => ("supersede", Some(e.as_str())),
            _ => ("retract", None),
        };
        let memory = if sup.is_some() { rid } else { e.as_str() };
        state
            .audit
            .record(op, memory, sup, old.as_deref(), sup.map(|_| text));
        match r {
            Retraction::NoLonger(_) => state.report.superseded.push((e.clone(), rid.to_string())),
            _ => state.report.retracted.push((e.clone(), rid.to_string())),
        }
    }
    let carried_out = !ended.is_empty() || !lines.is_empty();
    if carried_out && !matches!(r, Retraction::NoLonger(_)) {
        let until = since.or(Some(today));
        state.file.retract(rid, until, rid)?;
        state.audit.record("retract", rid, None, Some(text), None);
        state
            .report
            .retracted
            .push((rid.to_string(), rid.to_string()));
    }
    Ok(())
}

/// Carries out the retraction `item` (`r`, a statement or a subject) of
/// the daily log `log` of `date`, as the fold reads it: an instruction,
/// not a fact, it ends what it names, among the facts and the typed
/// memories' dated lines; one that names nothing is reported unmatched.
pub(super) fn retract_from_log(
    state: &mut DreamState,
    r: &Retraction,
    item: &str,
    (date, log): (NaiveDate, &str),
) -> Result<()> {
    let on = (Some(date), state.today);
    let ended = apply_retraction(&mut state.file, r, on, log, None)?;
    let lines = retract_typed(r, on, log, &state.typed_all, &mut state.plans);
    if ended.is_empty() && lines.is_empty() {
        state.report.retractions_unmatched.push(item.to_string());
    }
    for e in ended {
        let old = state.file.get(&e).map(|f| f.text.clone());
        state
            .audit
            .record("retract", &e, None, old.as_deref(), None);
        state.report.retracted.push((e, log.to_string()));
    }
    for (path, name, text) in lines {
        state
            .audit
            .record("retract", &name, None, Some(&text), None);
        state
            .report
            .retracted
            .push((format!("{path}: {text}"), log.to_string()));
    }
    Ok(())
}

/// Ends the current facts `r` names that began on or before `on` (or have
/// no start), except `except` (the retraction's own fact), on `on` (else
/// `today`): retracted by `by`, or superseded by `by` for a "no longer"
/// fact. Returns the ids ended.
pub(super) fn apply_retraction(
    file: &mut FactsFile,
    r: &Retraction,
    (on, today): (Option<NaiveDate>, NaiveDate),
    by: &str,
    except: Option<&str>,
) -> Result<Vec<String>> {
    let named: Vec<String> = file
        .current()
        .filter(|f| Some(f.id.as_str()) != except && retraction(&f.text).is_none())
        .filter(|f| match (f.since, on) {
            (Some(s), Some(d)) => s <= d,
            _ => true,
        })
        .filter(|f| r.names(&f.text))
        .map(|f| f.id.clone())
        .collect();
    let until = on.or(Some(today));
    for id in &named {
        match r {
            Retraction::NoLonger(_) => file.end(id, until, Some(by))?,
            _ => file.retract(id, until, by)?,
        };
    }
    Ok(named)
}

/// Ends the current dated lines of the typed memories (`homes`, and those
/// this dream makes, in `plans`) that `r` names and that began on or
/// before `on` (any, without a day), on `on` (else `today`), `retracted by`
/// `by`, in the memories' plans. A person's lines (no dating) are never
/// ended by rule. Returns `(path, memory name, line text)` for each.
fn retract_typed(
    r: &Retraction,
    (on, today): (Option<NaiveDate>, NaiveDate),
    by: &str,
    homes: &[TypedHome],
    plans: &mut BTreeMap<String, TypedPlan>,
) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let made: Vec<TypedHome> = plans
        .iter()
        .filter(|(_, p)| p.before.is_none())
        .map(|(path, p)| (path.clone(), p.front.clone(), None))
        .collect();
    for (path, front, before) in homes.iter().chain(&made) {
        let plan = plans.entry(path.clone()).or_insert_with(|| TypedPlan {
            before: before.clone(),
            front: front.clone(),
            lines: Vec::new(),
            items: Vec::new(),
            ends: Vec::new(),
        });
        for (line, d) in plan.current_lines() {
            if on.is_some_and(|day| d.since > day)
                || retraction(&d.text).is_some()
                || !r.names(&d.text)
            {
                continue;
            }
            out.push((path.clone(), plan.front.name.clone(), d.text.clone()));
            plan.ends.push((line, d.retracted(on.unwrap_or(today), by)));
        }
    }
    // A memory nothing was written into or ended in is left alone.
    plans.retain(|_, p| !(p.lines.is_empty() && p.ends.is_empty() && p.before.is_some()));
    out
}
