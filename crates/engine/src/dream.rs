//! Dream (`mnemo dream`): tidies long-term memory between conversations.
//! It owns these passes, each of which only ends, adds or moves lines:
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
//!   log itself stays: it is append-only), except retractions.
//! - Retractions ([`retraction`], by rule like the subjects): an item that
//!   asks to forget something ("Please forget that my city is Paris",
//!   "The user asked to forget their city") is an instruction, not a fact:
//!   folded from a log it ends the current facts it names (the same
//!   statement, or the same [`subject`]) that began on or before the log's
//!   day, on that day, `retracted by` the log, and is not added; found
//!   among the current facts (a fold from before retractions were read)
//!   it ends them `retracted by` its own id, then ends itself. An item
//!   that says something is "no longer" so is a fact, and supersedes the
//!   facts that say it without "no longer". A retraction also ends the
//!   dated lines a dream wrote into typed memories (`- text (since DAY;
//!   from memory/DAY.md)`, [`DatedLine`]) that it names by the same rule
//!   ([`statement_words`], or the same [`subject`]) and that began on or
//!   before its day: each moves, in the same file, under a `## No longer
//!   true` section (made at the end of the body when missing), dated as
//!   an ended fact is (`- ~~text~~ (since DAY; until DAY; retracted by
//!   ID; from memory/DAY.md)`). The lines a person or an agent wrote into
//!   a typed memory (no such dating) are never cut by rule, whatever they
//!   say. Nothing is deleted: the ended facts and lines stay under "No
//!   longer true", and a retraction that names nothing current changes
//!   nothing (the report lists it); forgetting a whole typed memory stays
//!   `mnemo memory forget`.
//! - Typed memories: one home per folded item. A fact about a topic that
//!   has a typed memory (`memory/<name>.md`, user / feedback / project /
//!   reference) would otherwise be said twice, once in the facts file and
//!   once in the topic file the recall side query picks, so an item goes
//!   to exactly one of them ([`typed_home`]): when its key (the words
//!   before a colon, or its [`subject`]) is an existing typed memory's
//!   name (compared by [`core_words`]), it is appended to that memory's
//!   body as a dated line (`- text (since DAY; from memory/DAY.md)`, the
//!   file otherwise untouched); when it carries a type tag (`[feedback]
//!   Code review: ...`), it goes into the typed memory of that key, or
//!   `<Type> notes` without one, made when missing (front matter from the
//!   item, its index line added to MEMORY.md's `## Memory files`); every
//!   other item is a fact. An item the memory holds already is accounted
//!   for, not written again. Only the facts file supersedes and dates
//!   facts; a typed memory's lines are dated so a reader sees the newest
//!   (and so that a retraction can end them, see above).
//!   (The types are never guessed from an untagged item's words: a rule
//!   that misfiles is worse than a fact in the facts file.)
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
//! that was current is still current, ends replaced by a current fact, or
//! ends `retracted by` a retraction the dream read,
//! every other line of the facts file is still there, and every line of
//! MEMORY.md is still there or is a current fact now ([`unaccounted`],
//! [`unaccounted_memory_md`]); a dream that would drop anything it cannot
//! account for is refused with what it would have lost. It also checks
//! that every folded item has a home (a fact, current or not, or a typed
//! memory's line) and that a typed memory the dream writes keeps every
//! line it had, or has it under "No longer true", ended `retracted by` a
//! retraction the dream read ([`unaccounted_typed`]). The change goes into
//! `memory/HISTORY.md` as a diff (one per file; a typed memory the dream
//! makes is listed `[created path]`) before the files are replaced
//! atomically (typed memories first, then the facts file, then
//! MEMORY.md), and a last `dream applied: ID` line follows them. A dream
//! killed at any point leaves each file as it was before or after (an
//! item or a moved line at worst in two places, never in none); a dream
//! without its `applied` line marks no daily log folded, so the next
//! dream folds them again and finishes its work (what is held already is
//! not written twice). [`undo_dream`] reverses the newest dream, in every
//! file it changed (a typed memory it made is removed); one killed before
//! its `applied` line is undone only if every file is as it left it.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_store::memory::facts::{
    AuditRecord, DatedLine, Fact, FactsFile, FACTS_FILE, PAST_HEADING,
};
use mnemo_store::memory::{
    render_front_matter, split_front_matter, upsert_index_line, FrontMatter, MemoryType,
};
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
/// The line a dream appends once all its files are written.
const APPLIED: &str = "] [memory/facts.md] dream applied: ";
/// In the entry of a dream whose `applied` line says it landed.
const WRITE_AHEAD: &str = " into typed memories, ";
const CREATED: &str = "[created ";

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
    /// Facts and typed memories' dated lines ended by a retraction:
    /// `(ended, by)`, `ended` a fact id or `path: text` for a dated line,
    /// `by` the retraction's fact id or its daily log.
    pub retracted: Vec<(String, String)>,
    /// Retractions that named no current fact or dated line (left
    /// alone): their text.
    pub retractions_unmatched: Vec<String>,
    /// Folded items whose home is a typed memory: `(item, memory path)`.
    pub typed: Vec<(String, String)>,
    /// Typed memories the dream made (their index lines added to
    /// MEMORY.md).
    pub typed_created: Vec<String>,
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

/// The words of `text` as the dream compares them (the write path's).
pub(crate) use crate::adjudicate::words;

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

/// What a retraction names (see [`retraction`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retraction {
    /// "Please forget that my city is Paris": the current facts that say
    /// exactly this (the same [`statement_words`]) are retracted.
    Statement(String),
    /// "The user asked to forget their city": the current facts whose
    /// [`subject`] is this (its [`core_words`]) are retracted.
    Subject(String),
    /// "The user's city is no longer Paris", "No longer works at Acme": a
    /// fact of its own, which supersedes the current facts that say the
    /// statement without "no longer" (the same [`statement_words`]).
    NoLonger(String),
}

/// The words of a fact or subject as retractions compare them: [`words`]
/// without a leading "the user('s)" or "the" (`The user's city is Paris`
/// and `City is Paris` compare equal, so do `the user s city` and `city`).
pub fn core_words(text: &str) -> String {
    let w = words(text);
    let skip = match w.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["the", "user", "s", ..] => 3,
        ["the", "user", ..] | ["user", "s", ..] => 2,
        ["the", ..] | ["user", ..] => 1,
        _ => 0,
    };
    w[skip.min(w.len())..].join(" ")
}

/// The words of a statement as retractions compare them: [`core_words`],
/// with `Key: value` read as `Key is value` (`Hobby: chess` and `The
/// user's hobby is chess` compare equal).
pub fn statement_words(text: &str) -> String {
    match text.split_once([':', '\u{ff1a}']) {
        Some((k, v)) => core_words(&format!("{k} is {v}")),
        None => core_words(text),
    }
}

/// The retraction `text` makes, decided by rule (never by a model, see
/// the module docs), or `None` when it is not one:
///
/// - `forget …` at the start (after an optional `please`), or after `asked
///   (me) to` / `want(s) (me) to` (`The user asked to forget their city`):
///   what follows (without `that` / `about`; `my` / `their` / `his` / `her`
///   read as `the user's`) is a statement when it has a value (` is `, `
///   are `, a colon), else a subject of one to six words;
/// - `no longer` anywhere: the statement without those two words.
pub fn retraction(text: &str) -> Option<Retraction> {
    let lower = mnemo_store::memory::facts::one_line(text).to_lowercase();
    let lower = lower.trim().trim_end_matches(['.', '!']).trim();
    if let Some(i) = lower.find("no longer ") {
        if i == 0 || lower[..i].ends_with(' ') {
            let said = format!("{}{}", &lower[..i], &lower[i + "no longer ".len()..]);
            let core = statement_words(&said);
            return (words(&core).len() >= 2).then_some(Retraction::NoLonger(core));
        }
    }
    let i = lower
        .match_indices("forget ")
        .map(|(i, _)| i)
        .find(|&i| i == 0 || lower[..i].ends_with(' '))?;
    let before = lower[..i].trim();
    let asked = before.ends_with(" to") && (before.contains("asked") || before.contains("want"));
    if !(before.is_empty() || before == "please" || asked) {
        return None;
    }
    let mut t = lower[i + "forget ".len()..].trim();
    for p in ["that ", "about "] {
        t = t.strip_prefix(p).unwrap_or(t).trim();
    }
    let t = ["my ", "their ", "his ", "her "]
        .iter()
        .find_map(|p| t.strip_prefix(p))
        .map_or_else(|| t.to_string(), |rest| format!("the user's {rest}"));
    let has_value = t.contains(" is ") || t.contains(" are ") || t.contains([':', '\u{ff1a}']);
    if has_value {
        let core = statement_words(&t);
        (words(&core).len() >= 2).then_some(Retraction::Statement(core))
    } else {
        let core = core_words(&t);
        (1..=6)
            .contains(&words(&core).len())
            .then_some(Retraction::Subject(core))
    }
}

impl Retraction {
    /// True when the fact (or a typed memory's dated line) `text` is one
    /// this retraction names.
    pub fn names(&self, text: &str) -> bool {
        match self {
            Retraction::Statement(s) | Retraction::NoLonger(s) => statement_words(text) == *s,
            Retraction::Subject(k) => subject(text).is_some_and(|s| core_words(&s) == *k),
        }
    }
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

/// Ends the current facts `r` names that began on or before `on` (or have
/// no start), except `except` (the retraction's own fact), on `on` (else
/// `today`): retracted by `by`, or superseded by `by` for a "no longer"
/// fact. Returns the ids ended.
fn apply_retraction(
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

/// A typed memory as the fold finds it: its path, front matter and text
/// (`None`: made by this dream).
type TypedHome = (String, FrontMatter, Option<String>);

/// A typed memory a dream writes into: its text before (`None`: the dream
/// makes it), its front matter, the lines it adds and the dated lines it
/// ends.
#[derive(Debug, Clone)]
struct TypedPlan {
    before: Option<String>,
    front: FrontMatter,
    lines: Vec<String>,
    /// The items' texts, for the loss guard.
    items: Vec<String>,
    /// Dated lines ended by a retraction: `(line, the line ended)`.
    ends: Vec<(String, DatedLine)>,
}

impl TypedPlan {
    /// The file's text after the dream: the lines appended to the file as
    /// it was (its front matter and body otherwise untouched), or a new
    /// file; then the ended lines moved under "No longer true".
    fn after(&self) -> String {
        let added = self.lines.join("\n");
        let text = match &self.before {
            Some(_) if self.lines.is_empty() => self.before.clone().unwrap_or_default(),
            Some(b) => {
                let body_empty = split_front_matter(b).1.trim().is_empty();
                format!(
                    "{}\n{}{added}\n",
                    b.trim_end_matches('\n'),
                    if body_empty { "\n" } else { "" }
                )
            }
            None => render_front_matter(&self.front, &(added + "\n")),
        };
        end_lines(&text, &self.ends)
    }

    /// Its current dated lines: the file's and the ones added, less the
    /// ones ended.
    fn current_lines(&self) -> Vec<(String, DatedLine)> {
        self.before
            .as_deref()
            .unwrap_or_default()
            .lines()
            .chain(self.lines.iter().map(String::as_str))
            .filter(|l| !self.ends.iter().any(|(e, _)| e == l))
            .filter_map(|l| DatedLine::parse(l).map(|d| (l.to_string(), d)))
            .filter(|(_, d)| d.is_current())
            .collect()
    }
}

/// `text` (a typed memory) with each line of `ends` moved under
/// [`PAST_HEADING`], ended, where the facts file puts the facts that end:
/// right under the heading (in file order), the heading made at the end of
/// the body when missing. Every other line stays where it is.
fn end_lines(text: &str, ends: &[(String, DatedLine)]) -> String {
    if ends.is_empty() {
        return text.to_string();
    }
    let mut out: Vec<String> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    for line in text.lines() {
        match ends.iter().find(|(l, _)| l == line) {
            Some((_, d)) => ended.push(d.render()),
            None => out.push(line.to_string()),
        }
    }
    match out.iter().position(|l| l.trim() == PAST_HEADING) {
        Some(p) => {
            let at = if out.get(p + 1).is_some_and(|l| l.trim().is_empty()) {
                p + 2
            } else {
                p + 1
            };
            out.splice(at..at, ended);
        }
        None => {
            while out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            out.extend([String::new(), PAST_HEADING.to_string(), String::new()]);
            out.extend(ended);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
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

/// The typed memory a folded item names, by rule: `[TYPE] Name: text`
/// (a type tag, `user` / `feedback` / `project` / `reference`), or
/// untagged `Name: text` / a [`subject`] whose [`core_words`] are an
/// existing typed memory's name. Returns the type tag (when tagged), the
/// name (the key, or `<Type> notes` for a tagged item without one) and
/// the item's text without its tag.
pub fn typed_home(item: &str) -> Option<(Option<MemoryType>, String, String)> {
    let t = item.trim();
    let (kind, rest) = match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((tag, rest)) => match tag.parse::<MemoryType>() {
            Ok(k) => (Some(k), rest.trim()),
            Err(_) => (None, t),
        },
        None => (None, t),
    };
    let key = match rest.split_once([':', '\u{ff1a}']) {
        Some((k, v)) if (1..=6).contains(&words(k).len()) && !words(v).is_empty() => {
            Some(k.trim().to_string())
        }
        _ => subject(rest),
    };
    match (kind, key) {
        (k, Some(key)) => Some((k, key, rest.to_string())),
        (Some(k), None) => {
            let mut name = k.as_str().to_string();
            name[..1].make_ascii_uppercase();
            Some((Some(k), format!("{name} notes"), rest.to_string()))
        }
        (None, None) => None,
    }
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

/// The text of a typed memory's dated line (`- text (since …; from …)`),
/// as the fold compares it with an item.
fn typed_line_text(line: &str) -> Option<String> {
    let t = bullet_text(line)?;
    let t = t.rfind(" (since ").map_or(t, |i| &t[..i]);
    Some(words(t).join(" "))
}

impl Engine {
    /// One dream (see the module docs), under the memory lock.
    pub fn dream(&self) -> Result<DreamReport> {
        let now = self.now();
        let _lock = self.memory.lock()?;
        let before_text = self.memory.read_document(FACTS_FILE)?.unwrap_or_default();
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

        // Typed memories by the core words of their names (and all of
        // them, for retractions); the ones the dream writes into, by path.
        let mut typed_by_name: HashMap<String, TypedHome> = HashMap::new();
        let mut typed_all: Vec<TypedHome> = Vec::new();
        for m in self.memory.list_typed()? {
            let text = self.memory.read_document(&m.path)?.unwrap_or_default();
            let home = (m.path, m.front, Some(text));
            typed_all.push(home.clone());
            typed_by_name
                .entry(core_words(&home.1.name))
                .or_insert(home);
        }
        let mut plans: BTreeMap<String, TypedPlan> = BTreeMap::new();
        let mut folded_items: Vec<String> = Vec::new();

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
                let r = retraction(&item);
                if let Some(r @ (Retraction::Statement(_) | Retraction::Subject(_))) = &r {
                    // An instruction, not a fact: it ends what it names,
                    // among the facts and the typed memories' dated lines.
                    let ended = apply_retraction(&mut file, r, (Some(date), today), &rel, None)?;
                    let lines = retract_typed(r, (Some(date), today), &rel, &typed_all, &mut plans);
                    if ended.is_empty() && lines.is_empty() {
                        report.retractions_unmatched.push(item.clone());
                    }
                    for e in ended {
                        let old = file.get(&e).map(|f| f.text.clone());
                        audit.push(record("retract", &e, None, old.as_deref(), None));
                        report.retracted.push((e, rel.clone()));
                    }
                    for (path, name, text) in lines {
                        audit.push(record("retract", &name, None, Some(&text), None));
                        report
                            .retracted
                            .push((format!("{path}: {text}"), rel.clone()));
                    }
                    continue;
                }
                if r.is_none() {
                    if let Some(home) = typed_home(&item) {
                        if self.fold_into_typed(
                            home,
                            &item,
                            date,
                            &rel,
                            &mut typed_by_name,
                            &mut plans,
                            &mut report,
                        )? {
                            folded_items.push(item.clone());
                            continue;
                        }
                    }
                }
                folded_items.push(item.clone());
                let fid = file.add(&item, Some(date), now, Some(format!("dream {rel}")));
                audit.push(record("add", &fid, None, None, Some(&item)));
                report.added.push(fid.clone());
                if let Some(r @ Retraction::NoLonger(_)) = &r {
                    for e in apply_retraction(&mut file, r, (Some(date), today), &fid, Some(&fid))?
                    {
                        let old = file.get(&e).map(|f| f.text.clone());
                        audit.push(record(
                            "supersede",
                            &fid,
                            Some(&e),
                            old.as_deref(),
                            Some(&item),
                        ));
                        report.superseded.push((e, fid.clone()));
                    }
                }
            }
            report.folded_logs.push(rel);
        }

        // Retractions among the current facts (a flush's "The user asked
        // to forget ...", a dream's fold before retractions were read): each
        // ends what it names, then itself (an instruction carried out); one
        // that names nothing stays as it is.
        let pending: Vec<(String, String, Option<NaiveDate>, Retraction)> = file
            .current()
            .filter_map(|f| retraction(&f.text).map(|r| (f.id.clone(), f.text.clone(), f.since, r)))
            .collect();
        for (rid, text, since, r) in pending {
            if !file.get(&rid).is_some_and(Fact::is_current) {
                continue;
            }
            let ended = apply_retraction(&mut file, &r, (since, today), &rid, Some(&rid))?;
            let lines = match r {
                Retraction::NoLonger(_) => Vec::new(),
                _ => retract_typed(&r, (since, today), &rid, &typed_all, &mut plans),
            };
            for (path, name, line) in &lines {
                audit.push(record("retract", name, None, Some(line), None));
                report
                    .retracted
                    .push((format!("{path}: {line}"), rid.clone()));
            }
            for e in &ended {
                let old = file.get(e).map(|f| f.text.clone());
                let (op, sup) = match r {
                    Retraction::NoLonger(_) => ("supersede", Some(e.as_str())),
                    _ => ("retract", None),
                };
                let memory = if sup.is_some() {
                    rid.as_str()
                } else {
                    e.as_str()
                };
                audit.push(record(
                    op,
                    memory,
                    sup,
                    old.as_deref(),
                    sup.map(|_| text.as_str()),
                ));
                match r {
                    Retraction::NoLonger(_) => report.superseded.push((e.clone(), rid.clone())),
                    _ => report.retracted.push((e.clone(), rid.clone())),
                }
            }
            let carried_out = !ended.is_empty() || !lines.is_empty();
            if carried_out && !matches!(r, Retraction::NoLonger(_)) {
                let until = since.or(Some(today));
                file.retract(&rid, until, &rid)?;
                audit.push(record("retract", &rid, None, Some(&text), None));
                report.retracted.push((rid.clone(), rid.clone()));
            }
        }

        // Merge duplicates: the fuller (then the clean, then the older)
        // fact stays. Texts are compared without the metadata a model may
        // have copied into them (`(f2)`, `(since ...)`), so a copy that
        // carries it is the one that ends.
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
        let mut md_indexed = md_before.clone();
        for (path, plan) in plans.iter().filter(|(_, p)| p.before.is_none()) {
            md_indexed = upsert_index_line(&md_indexed, path, &plan.front);
        }
        let md_after = self.fit_memory_md(&md_indexed, &mut file, now, &mut report, &mut audit);
        plans.retain(|_, p| !p.lines.is_empty() || !p.ends.is_empty());
        for plan in plans.values().filter(|p| !p.lines.is_empty()) {
            let op = if plan.before.is_none() {
                "add"
            } else {
                "update"
            };
            audit.push(record(
                op,
                &plan.front.name,
                None,
                None,
                Some(&plan.lines.join("\n")),
            ));
        }

        report.current = file.current().count();
        // Unchanged facts are not rendered again (a missing file stays
        // missing when only typed memories change).
        let after_text = if file == before {
            before_text.clone()
        } else {
            file.render()
        };
        let nothing = report.merged.is_empty()
            && report.added.is_empty()
            && report.retracted.is_empty()
            && plans.is_empty()
            && report.superseded.is_empty()
            && report.moved.is_empty();
        if (after_text == before_text && md_after == md_before && plans.is_empty()) || nothing {
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
        let typed_after: Vec<(String, String)> = plans
            .iter()
            .map(|(p, plan)| (p.clone(), plan.after()))
            .collect();
        for ((path, plan), (_, text)) in plans.iter().zip(&typed_after) {
            let before = plan.before.as_deref().unwrap_or_default();
            lost.extend(unaccounted_typed(path, before, text, &plan.items, &after));
        }
        // Every folded item has a home: a fact (current or not), a typed
        // memory, or it was a retraction.
        let facts_said: HashSet<String> = after
            .facts()
            .iter()
            .map(|f| words(&f.text).join(" "))
            .collect();
        for item in &folded_items {
            if !facts_said.contains(&words(item).join(" "))
                && !report.typed.iter().any(|(i, _)| i == item)
            {
                lost.push(format!("the daily-log item {item:?} has no home"));
            }
        }
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
            "[{}{DREAM}{id}: {} merged, {} superseded, {} retracted, {} added from {} daily log(s), {} into typed memories, {} moved from MEMORY.md; to undo it, run `mnemo dream --undo`\n",
            now.format("%Y-%m-%d %H:%M"),
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
        let mut diffs = vec![diff, md_diff];
        for ((path, plan), (_, text)) in plans.iter().zip(&typed_after) {
            let before = plan.before.as_deref().unwrap_or_default();
            diffs.push(merge::unified_diff(before, text).replacen(
                "--- MEMORY.md\n+++ MEMORY.md",
                &format!("--- {path}\n+++ {path}"),
                1,
            ));
        }
        let diffs: Vec<&str> = diffs
            .iter()
            .map(|d| d.trim_end())
            .filter(|d| !d.is_empty())
            .collect();
        entry.push_str(&diffs.join("\n"));
        // The diffs first, then the files (each atomic): killed anywhere,
        // each file is as before or as after, and the history says what
        // the dream was. Facts before MEMORY.md: a moved line is at worst
        // in both, never in neither.
        self.memory.append_history(&entry, now)?;
        mnemo_store::failpoint::hit("dream.after_history");
        // Typed memories first: an item is at worst in its typed memory
        // and still unfolded in its log (the next dream finds it held).
        for (path, text) in &typed_after {
            self.memory.write_document(path, text)?;
        }
        mnemo_store::failpoint::hit("dream.after_typed");
        if after_text != before_text {
            self.memory.write_document(FACTS_FILE, &after_text)?;
        }
        mnemo_store::failpoint::hit("dream.after_facts");
        if md_after != md_before {
            self.memory.write_memory_md(&md_after)?;
        }
        self.memory.append_audit(&audit)?;
        self.memory.append_history(
            &format!("[{}{APPLIED}{id}", now.format("%Y-%m-%d %H:%M")),
            now,
        )?;
        report.changed = true;
        Ok(report)
    }
}

impl Engine {
    /// Puts the folded `item` (of the daily log `log`, dated `date`) into
    /// the typed memory `home` names when that memory exists or the item
    /// carries a type tag (a new memory then); false when its home is the
    /// facts file. An item the memory holds already is accounted for.
    #[allow(clippy::too_many_arguments)]
    fn fold_into_typed(
        &self,
        (kind, name, text): (Option<MemoryType>, String, String),
        item: &str,
        date: NaiveDate,
        log: &str,
        typed: &mut HashMap<String, TypedHome>,
        plans: &mut BTreeMap<String, TypedPlan>,
        report: &mut DreamReport,
    ) -> Result<bool> {
        let key = core_words(&name);
        if key.is_empty() {
            return Ok(false);
        }
        let (path, front, before) = match typed.get(&key) {
            Some(home) => home.clone(),
            None => {
                let Some(kind) = kind else { return Ok(false) };
                let path = self.memory.free_typed_path(&name);
                if plans.contains_key(&path) {
                    // Another new name with the same letters: facts.
                    return Ok(false);
                }
                let description: String = text.chars().take(120).collect();
                let front = FrontMatter {
                    name: name.trim().to_string(),
                    description,
                    kind,
                };
                let home = (path, front, None);
                typed.insert(key, home.clone());
                home
            }
        };
        let plan = plans.entry(path.clone()).or_insert_with(|| TypedPlan {
            before: before.clone(),
            front,
            lines: Vec::new(),
            items: Vec::new(),
            ends: Vec::new(),
        });
        let said = words(&text).join(" ");
        let held = before
            .as_deref()
            .unwrap_or_default()
            .lines()
            .chain(plan.lines.iter().map(String::as_str))
            .any(|l| typed_line_text(l).is_some_and(|t| t == said));
        if !held {
            plan.lines.push(DatedLine::new(&text, date, log).render());
            plan.items.push(text);
            if plan.before.is_none() && !report.typed_created.contains(&path) {
                report.typed_created.push(path.clone());
            }
        }
        report.typed.push((item.to_string(), path));
        Ok(true)
    }

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
        let consolidated = self.consolidated_lines();
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

/// A dream recorded in the history and not undone.
#[derive(Debug, Default)]
struct Recorded {
    id: String,
    /// Its files were all written: a dream's entry is written first, then
    /// its files, then its `applied` line (entries from before that line
    /// existed, and entries with nothing to change, count as applied).
    applied: bool,
    logs: Vec<String>,
    created: Vec<String>,
    diff: String,
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
fn recorded_dreams(history: &str) -> Vec<Recorded> {
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
fn folded_logs(history: &str) -> HashSet<String> {
    recorded_dreams(history)
        .into_iter()
        .filter(|d| d.applied)
        .flat_map(|d| d.logs)
        .collect()
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

/// Reverses the newest dream that is not undone yet, under the memory
/// lock: every file its history entry has a diff for (the facts file,
/// MEMORY.md, typed memories; a typed memory the dream made is removed).
/// Nothing is written unless every file can be reversed.
pub fn undo_dream(memory: &MemoryStore, now: DateTime<Utc>) -> Result<DreamUndone> {
    let _lock = memory.lock()?;
    let history = memory.read_history()?;
    // Newest first. A dream without its `applied` line was killed: undone
    // when every file it has a diff for is as it left it (killed after its
    // last file), skipped when not (it never landed whole, and the next
    // dream finished its work).
    let mut found = None;
    for d in recorded_dreams(&history).into_iter().rev() {
        if d.diff.is_empty() {
            continue;
        }
        match reversed(memory, &d) {
            Ok(changes) => {
                found = Some((d, changes));
                break;
            }
            Err(e) if d.applied => return Err(e),
            Err(_) => continue,
        }
    }
    let Some((Recorded { id, created, .. }, changes)) = found else {
        return Err(mnemo_store::Error::NotFound(
            "no dream to undo: none changed memory, or all were undone (memory/HISTORY.md records each one)".into(),
        )
        .into());
    };
    let mut change = String::new();
    for (file, current, old) in &changes {
        let d = merge::unified_diff(current, old).replacen(
            "--- MEMORY.md\n+++ MEMORY.md",
            &format!("--- {file}\n+++ {file}"),
            1,
        );
        change.push_str(&d);
    }
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
    for (file, current, old) in &changes {
        if old == current {
            continue;
        }
        if file == "MEMORY.md" {
            memory.write_memory_md(old)?;
        } else if old.is_empty() && created.contains(file) {
            memory.remove_document(file)?;
        } else {
            memory.write_document(file, old)?;
        }
    }
    // After the files, as a dream writes its own: the audit log says what
    // happened to each memory, so a fact's history ends with its undo.
    memory.append_audit(&undo_audit(&id, &changes, now))?;
    Ok(DreamUndone {
        id,
        lines: lines_changed,
    })
}

/// The audit records of the undo of dream `id`: one per fact it removed,
/// put back or changed back, one per typed memory, one for MEMORY.md.
fn undo_audit(
    id: &str,
    changes: &[(String, String, String)],
    now: DateTime<Utc>,
) -> Vec<AuditRecord> {
    let record = |memory: &str, old: Option<&str>, new: Option<&str>, why: String| AuditRecord {
        why: Some(why),
        ..AuditRecord::change(now, "undo", "undo", memory, None, old, new)
    };
    let mut out = Vec::new();
    for (file, current, old) in changes {
        if old == current {
            continue;
        }
        if file == FACTS_FILE {
            let (now_file, then) = (FactsFile::parse(current), FactsFile::parse(old));
            for f in now_file.facts() {
                match then.get(&f.id) {
                    None => out.push(record(
                        &f.id,
                        Some(&f.text),
                        None,
                        format!("undo of dream {id}: the dream added it; removed"),
                    )),
                    Some(b) if b != f => {
                        let what = if b.is_current() && !f.is_current() {
                            "the dream ended it; current again"
                        } else {
                            "changed back as it was before the dream"
                        };
                        out.push(record(
                            &f.id,
                            (b.text != f.text).then_some(f.text.as_str()),
                            (b.text != f.text).then_some(b.text.as_str()),
                            format!("undo of dream {id}: {what}"),
                        ));
                    }
                    Some(_) => {}
                }
            }
            for b in then
                .facts()
                .iter()
                .filter(|b| now_file.get(&b.id).is_none())
            {
                out.push(record(
                    &b.id,
                    None,
                    Some(&b.text),
                    format!("undo of dream {id}: put back"),
                ));
            }
        } else if file == "MEMORY.md" {
            out.push(record(
                "MEMORY.md",
                None,
                None,
                format!("undo of dream {id}: MEMORY.md changed back"),
            ));
        } else {
            // A typed memory, known in the audit log by its name.
            let name = [current, old]
                .into_iter()
                .find_map(|t| split_front_matter(t).0.and_then(Result::ok).map(|f| f.name))
                .unwrap_or_else(|| {
                    file.rsplit('/')
                        .next()
                        .unwrap_or(file)
                        .trim_end_matches(".md")
                        .to_string()
                });
            let what = if old.is_empty() {
                "the dream made it; removed"
            } else {
                "changed back as it was before the dream"
            };
            out.push(record(
                &name,
                None,
                None,
                format!("undo of dream {id}: {what}"),
            ));
        }
    }
    out
}

/// Each file dream `d` has a diff for, as `(file, now, before the dream)`;
/// an error (naming what to do) when one cannot be reversed.
fn reversed(memory: &MemoryStore, d: &Recorded) -> Result<Vec<(String, String, String)>> {
    let cannot = |e: String, file: &str| {
        Error::Invalid(format!(
            "cannot undo dream {}: {e}. Its diff is in memory/HISTORY.md; edit {file} by hand to take back what you want",
            d.id
        ))
    };
    let mut changes = Vec::new();
    for (file, file_diff) in split_diffs(&d.diff) {
        let current = memory.read_document(&file)?.unwrap_or_default();
        let old = merge::reverse_diff(&current, &file_diff).map_err(|e| cannot(e, &file))?;
        changes.push((file, current, old));
    }
    Ok(changes)
}

/// A dream's recorded change split by file, in the order recorded: each
/// `--- path` / `+++ path` header starts a file (lines before any header
/// are the facts file's, as dreams before MEMORY.md was tidied wrote them).
fn split_diffs(diff: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut lines = diff.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(file) = l.strip_prefix("--- ") {
            if lines.peek() == Some(&format!("+++ {file}").as_str()) {
                out.push((file.to_string(), String::new()));
            }
        }
        if out.is_empty() {
            out.push((FACTS_FILE.to_string(), String::new()));
        }
        if let Some((_, d)) = out.last_mut() {
            d.push_str(l);
            d.push('\n');
        }
    }
    out
}
