//! What each checked fact does to the facts file: said again (a source
//! added), a retraction, a supersession by subject and attribute, or a new
//! fact; the yes/no questions for the pairs the rules cannot decide.

use std::collections::{HashMap, HashSet};

use mnemo_store::memory::facts::{Fact, FactsFile};
use serde::Serialize;

use super::keys::{fact_keys, inferred_attribute, same_subject, similar_attribute, Keys};
use super::words::{content, flat, has_phrase, CHANGE_CUES, CORRECT_CUES};
use super::{Checked, Kind, MAX_PAIRS, MAX_QUESTIONS};
use crate::extract::Question;

/// What to do with one checked fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Decision {
    /// A new current fact.
    Add {
        /// Why it ends nothing.
        why: String,
    },
    /// A new current fact that ends these (same subject and attribute).
    Supersede {
        /// The facts it replaces.
        ends: Vec<String>,
        /// Why.
        why: String,
    },
    /// Ends these facts (no new fact).
    Retract {
        /// The facts ended.
        ends: Vec<String>,
        /// Why.
        why: String,
    },
    /// A current fact says it already: it gains this source.
    Confirm {
        /// That fact.
        id: String,
    },
    /// A retraction that names no current fact.
    Unmatched,
}

/// A question the decisions needed and could not answer by rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pair {
    /// Which question.
    pub question: QuestionKind,
    /// The saved fact's text.
    pub old: String,
    /// The new fact (or the words of the retraction).
    pub new: String,
}

/// [`Question`], hashable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionKind {
    /// See [`Question::Replaces`].
    Replaces,
    /// See [`Question::Retracts`].
    Retracts,
}

impl From<QuestionKind> for Question {
    fn from(q: QuestionKind) -> Question {
        match q {
            QuestionKind::Replaces => Question::Replaces,
            QuestionKind::Retracts => Question::Retracts,
        }
    }
}

/// The model's answers so far, and the questions still open.
#[derive(Debug, Default, Clone)]
pub struct Answers {
    /// Answered pairs.
    pub known: HashMap<Pair, bool>,
    /// Pairs asked for in the last pass and not answered yet.
    pub open: Vec<Pair>,
    /// Questions asked in all.
    pub asked: usize,
}

impl Answers {
    fn ask(&mut self, pair: Pair) -> Option<bool> {
        if let Some(a) = self.known.get(&pair) {
            return Some(*a);
        }
        if self.asked + self.open.len() < MAX_QUESTIONS && !self.open.contains(&pair) {
            self.open.push(pair);
        }
        None
    }
}

fn value_held(value: &str, text: &str) -> bool {
    let v = content(value);
    if v.is_empty() {
        return false;
    }
    let t: HashSet<String> = content(text).into_iter().collect();
    v.iter().all(|w| t.contains(w))
}

/// Decides what each checked fact does to `file` and applies it there
/// (so a later fact of the round sees an earlier one), with the model's
/// `answers` for the pairs the rules cannot decide (unknown pairs are
/// recorded in `answers.open` and decided as "no" this pass). `sources`
/// names each fact's message. Returns one decision per fact and the ids
/// the new facts got (`None` for a fact that adds nothing).
pub fn decide(
    file: &mut FactsFile,
    facts: &[Checked],
    names: &[String],
    now: chrono::DateTime<chrono::Utc>,
    sources: &[Option<String>],
    answers: &mut Answers,
) -> mnemo_store::Result<Vec<(Decision, Option<String>)>> {
    answers.open.clear();
    let mut out = Vec::new();
    for (n, c) in facts.iter().enumerate() {
        let source = sources.get(n).and_then(|s| s.as_deref());
        out.push(decide_one(file, c, names, now, source, answers)?);
    }
    Ok(out)
}

/// The current facts of `c`'s subject whose attribute is `c`'s (`exact`)
/// and those whose attribute is alike, or (for a retraction) that hold its
/// value (`alike`), none begun after `c` was said.
fn candidates<'a>(current: &'a [(Fact, Keys)], c: &Checked) -> (Vec<&'a Fact>, Vec<&'a Fact>) {
    // A plan ("next month we move the warehouse to DuckDB") is not true
    // yet: what is true today stays current.
    if c.since > c.said && c.kind != Kind::Retracts {
        return (Vec::new(), Vec::new());
    }
    let not_later = |f: &&Fact| f.since.is_none_or(|s| s <= c.since.max(c.said));
    let same = || {
        current
            .iter()
            .filter(|(f, (s, _, _))| same_subject(s, &c.subject_key) || same_event(f, c))
    };
    let exact = same()
        .filter(|(_, (_, a, _))| !a.is_empty() && *a == c.attribute_key)
        .map(|(f, _)| f)
        .filter(not_later)
        .collect();
    let alike = same()
        .filter(|(f, (_, a, _))| {
            *a != c.attribute_key
                && (similar_attribute(a, &c.attribute_key)
                    || same_event(f, c)
                    || (a.is_empty()
                        && !c.attribute_key.is_empty()
                        && inferred_attribute(&f.text).0 == c.attribute_key)
                    || (c.kind == Kind::Retracts && value_held(&c.value, &f.text))
                    || (c.kind == Kind::Retracts && words_named(&f.text, &c.evidence) > 0.0))
        })
        .map(|(f, _)| f)
        .filter(not_later);
    // For a request to forget, the facts it names most words of first.
    let mut alike: Vec<(f32, &Fact)> = alike
        .map(|f| {
            let named = if c.kind == Kind::Retracts {
                words_named(&f.text, &c.evidence)
            } else {
                0.0
            };
            (named, f)
        })
        .collect();
    // Stable: equal shares keep the file's order.
    alike.sort_by(|a, b| b.0.total_cmp(&a.0));
    (
        exact,
        alike.into_iter().take(MAX_PAIRS).map(|(_, f)| f).collect(),
    )
}

/// A current fact that says what `c` says already: the same sentence, or
/// the same subject and attribute (or a fact without one) holding its
/// value.
fn said_already<'a>(current: &'a [(Fact, Keys)], c: &Checked) -> Option<&'a Fact> {
    current
        .iter()
        .find(|(f, (s, a, _))| {
            crate::dream::near_duplicate(&f.text, &c.text)
                || (same_event(f, c) && value_held(&c.value, &f.text))
                || (same_subject(s, &c.subject_key)
                    && (*a == c.attribute_key || a.is_empty())
                    && !c.attribute_key.is_empty()
                    && value_held(&c.value, &f.text))
        })
        .map(|(f, _)| f)
}

/// True when `c` places an event ("the wedding is in Nantes") that `f`
/// speaks of too, whoever's it is ("my cousin's wedding is in Lyon"): an
/// event named without its owner is the one named before.
fn same_event(f: &Fact, c: &Checked) -> bool {
    super::words::placed_event(&c.text)
        .is_some_and(|e| super::words::placed_event(&f.text) == Some(e))
}

/// True when the words `c` was said in say something changed or was
/// wrong ("now", "moved", "actually").
fn cued(c: &Checked) -> bool {
    has_phrase(&flat(&c.evidence), &[CHANGE_CUES, CORRECT_CUES].concat())
}

/// The share of `fact`'s words (but "user") that `request` says.
fn words_named(fact: &str, request: &str) -> f32 {
    let asked: HashSet<String> = content(request).into_iter().collect();
    let own: Vec<String> = content(fact).into_iter().filter(|w| w != "user").collect();
    if own.is_empty() {
        return 0.0;
    }
    own.iter().filter(|w| asked.contains(*w)).count() as f32 / own.len() as f32
}

/// Ends `ends` as retracted by `c` (nothing to end: unmatched).
fn retract(
    file: &mut FactsFile,
    c: &Checked,
    source: Option<&str>,
    ends: Vec<String>,
    why: &str,
) -> mnemo_store::Result<(Decision, Option<String>)> {
    if ends.is_empty() {
        return Ok((Decision::Unmatched, None));
    }
    for id in &ends {
        match source {
            Some(src) => file.retract(id, Some(c.said), src)?,
            None => file.end(id, Some(c.said), None)?,
        };
    }
    Ok((
        Decision::Retract {
            ends,
            why: why.into(),
        },
        None,
    ))
}

fn decide_one(
    file: &mut FactsFile,
    c: &Checked,
    names: &[String],
    now: chrono::DateTime<chrono::Utc>,
    source: Option<&str>,
    answers: &mut Answers,
) -> mnemo_store::Result<(Decision, Option<String>)> {
    let current: Vec<(Fact, Keys)> = file
        .current()
        .map(|f| (f.clone(), fact_keys(f, names)))
        .collect();
    if c.kind != Kind::Retracts {
        if let Some(f) = said_already(&current, c) {
            if let Some(src) = source {
                file.add_source(&f.id, src)?;
            }
            return Ok((Decision::Confirm { id: f.id.clone() }, None));
        }
    }
    let (exact, alike) = candidates(&current, c);
    let mut ask = |q: QuestionKind, old: &Fact, new: &str| {
        answers.ask(Pair {
            question: q,
            old: old.text.clone(),
            new: new.to_string(),
        })
    };
    let ids = |facts: &[&Fact]| facts.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    if c.kind == Kind::Retracts {
        // The facts of its subject and attribute (holding its value, when
        // it names one) by rule; else, of those alike, the ones the model
        // says it names.
        let named: Vec<&Fact> = exact
            .iter()
            .copied()
            .filter(|f| c.value.trim().is_empty() || value_held(&c.value, &f.text))
            .collect();
        let (ends, why) = if named.is_empty() {
            // A request that says a fact's words ("forget that my hotel
            // room number is 512") ends it; of the others, only a fact it
            // names a word of is asked about: "forget what I said about
            // the iguana" is no question about the user's home.
            let said: Vec<&Fact> = alike
                .iter()
                .copied()
                .filter(|f| words_named(&f.text, &c.evidence) >= 0.6)
                .collect();
            if !said.is_empty() {
                return retract(file, c, source, ids(&said), "the request says its words");
            }
            // Asked: the facts it names most words of (of its attribute,
            // or any when its attribute matches none).
            let pool: Vec<&Fact> = exact.iter().chain(alike.iter()).copied().collect();
            let best = pool
                .iter()
                .map(|f| words_named(&f.text, &c.evidence))
                .fold(0.0_f32, f32::max);
            let yes: Vec<&Fact> = pool
                .into_iter()
                .filter(|f| best > 0.0 && words_named(&f.text, &c.evidence) >= best)
                .take(MAX_PAIRS)
                .filter(|f| ask(QuestionKind::Retracts, f, &c.evidence) == Some(true))
                .collect();
            (ids(&yes), "the model answered yes")
        } else {
            (ids(&named), "same subject and attribute")
        };
        return retract(file, c, source, ends, why);
    }
    // What it replaces: another value of the same attribute when the
    // attribute holds one value or the words say it changed (asking where
    // the code cannot tell); of an alike attribute, only what the model
    // says.
    let differs: Vec<&Fact> = exact
        .iter()
        .copied()
        .filter(|f| !value_held(&c.value, &f.text))
        .collect();
    let (ends, why) = if !differs.is_empty() {
        match (c.kind, c.single) {
            // A new value of a many-valued attribute replaces one only
            // when its words say so ("I no longer have a cat"), not because
            // the model labelled it a change.
            (Kind::Changes | Kind::Corrects, Some(false)) if !cued(c) => {
                (Vec::new(), "the attribute holds many values")
            }
            (Kind::Changes | Kind::Corrects, Some(false)) | (Kind::States, None) => {
                let yes: Vec<&Fact> = differs
                    .iter()
                    .copied()
                    .take(MAX_PAIRS)
                    .filter(|f| ask(QuestionKind::Replaces, f, &c.text) == Some(true))
                    .collect();
                (
                    ids(&yes),
                    "same subject and attribute; the model answered yes",
                )
            }
            (Kind::States, Some(false)) => (Vec::new(), "the attribute holds many values"),
            _ => (ids(&differs), "same subject and attribute, another value"),
        }
    } else if matches!(c.kind, Kind::Changes | Kind::Corrects)
        && !alike.is_empty()
        // Of another attribute, only a change its words say: a small
        // model labels plain statements "changes", and then answers yes
        // to "does the dentist's name replace the user's name?".
        && cued(c)
    {
        // An event has one place: "the wedding is in Lyon after all" moves
        // the wedding named before, by rule.
        let (event, other): (Vec<&Fact>, Vec<&Fact>) = alike
            .iter()
            .copied()
            .filter(|f| !value_held(&c.value, &f.text))
            .partition(|f| same_event(f, c));
        if event.is_empty() {
            let yes: Vec<&Fact> = other
                .into_iter()
                .filter(|f| ask(QuestionKind::Replaces, f, &c.text) == Some(true))
                .collect();
            (ids(&yes), "a like attribute; the model answered yes")
        } else {
            (ids(&event), "the same event, another place")
        }
    } else {
        (
            Vec::new(),
            "no current fact of the same subject and attribute",
        )
    };
    let since = match c.kind {
        // A correction says what was true all along.
        Kind::Corrects => ends
            .iter()
            .filter_map(|id| file.get(id).and_then(|f| f.since))
            .min()
            .unwrap_or(c.since),
        _ => c.since,
    };
    let id = file.add_fact(
        Fact::new(
            String::new(),
            &c.text,
            Some(since),
            now,
            source.map(str::to_string),
        )
        .about(&c.subject, &c.attribute),
    );
    if ends.is_empty() {
        let why = if why.contains("model answered") {
            "the model answered no".to_string()
        } else {
            why.to_string()
        };
        return Ok((Decision::Add { why }, Some(id)));
    }
    // A change ends the old value on the day it happened; a correction on
    // the day it was said.
    let until = match c.kind {
        Kind::Corrects => c.said,
        _ => c.since,
    };
    for old in &ends {
        file.end(old, Some(until), Some(&id))?;
    }
    Ok((
        Decision::Supersede {
            ends,
            why: why.into(),
        },
        Some(id),
    ))
}
