//! The rules the passes judge lines by, without a model (see the module
//! docs): near duplicates, a fact's subject, retractions and what they
//! name, MEMORY.md's bullets.

use std::collections::HashSet;

use super::words;

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
/// longer than eight words, or when the key names the user and nothing of
/// them ("The user is in Ghent", "The user is reading a novel": the user
/// is many things at once, and one of them does not end another).
pub fn subject(text: &str) -> Option<String> {
    let lower = text.trim().to_lowercase();
    let short_value = |v: &str| (1..=8).contains(&words(v).len());
    let names_something = |key: &[String]| !core_words(&key.join(" ")).is_empty();
    if let Some((k, v)) = lower.split_once([':', '\u{ff1a}']) {
        let key = words(k);
        return ((1..=6).contains(&key.len()) && short_value(v) && names_something(&key))
            .then(|| key.join(" "));
    }
    let cut = [" is ", " are "]
        .iter()
        .filter_map(|sep| lower.find(sep).map(|i| (i, sep.len())))
        .min();
    let (i, n) = cut?;
    let (key, value) = (words(&lower[..i]), &lower[i + n..]);
    ((2..=6).contains(&key.len()) && short_value(value) && names_something(&key))
        .then(|| key.join(" "))
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

/// The text of a MEMORY.md bullet line (`- text` or `* text`).
pub(crate) fn bullet_text(line: &str) -> Option<&str> {
    let t = line.trim_start();
    t.strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
