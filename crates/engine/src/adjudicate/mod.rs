//! What the code decides on the write path, so that a small model's
//! answer is only ever a proposal ([`crate::extract`] asks for it):
//!
//! - **Evidence** ([`check`]): a proposed fact is stored only when a
//!   message of the round says it. Its quote must be in a message (the
//!   model's pointer; the code finds which), its value's words must be in
//!   that message (or in the assistant message a user's "yes" confirms),
//!   and every number and name of its sentence must be there too. A
//!   sentence that drifts from the message (first person, a copy of the
//!   message, words the message does not say) is written again from the
//!   subject, attribute and value, which were checked; a fact that cannot
//!   be is refused, with why.
//! - **Junk**: greetings and thanks, the assistant talking about itself,
//!   what the assistant said that the user never confirmed, questions, and
//!   states that hold for a moment ("is typing", "the build passed") are
//!   not stored.
//! - **Kind by cue words**: a quote that asks to forget or says something
//!   is not true is a retraction, one that says "now", "moved", "no
//!   longer" is a change, "actually", "I meant" a correction, whatever the
//!   model labelled it; a quote that negates what its fact says ("I no
//!   longer eat meat" -> "The user eats meat") retracts the fact instead
//!   of storing it.
//! - **Dates** ([`crate::dates`]): relative expressions ("last week",
//!   上周) are resolved against the message's own timestamp; the fact
//!   carries absolute dates and starts (`since`) on the day it names.
//! - **Who**: what the user says of themselves in the first person,
//!   naming nobody, is the user's whoever the model named ("I live in
//!   Tallinn" is not the other speaker's); "my sister Ana" is the
//!   sister's; a relation no message of the round says ("Melanie (the
//!   user's sister)") is the model's guess, and the person goes by name.
//! - **Keys** ([`subject_key`], [`attribute_key`]): who a fact is about
//!   ("user" for the user, whatever the model called them) and which of
//!   their attributes, normalised with a table of common attributes
//!   (home city = lives = residence = 住在 ...) and word stems.
//! - **Decisions** ([`decide`]): a fact that says what a current fact says
//!   adds its source to that fact; a retraction ends the current facts of
//!   its subject and attribute; a change or correction, or a new value of
//!   an attribute that holds one value (a home city, a job, a number),
//!   ends the current facts of the same subject and attribute, replaced by
//!   it; an attribute that holds many values (pets, hobbies) gains one.
//!   Only where the code cannot tell (an attribute it does not know,
//!   facts of the same subject whose attributes are alike but not the
//!   same) does the model answer one yes/no question per pair, and only
//!   those pairs can be ended. A fact about someone else never ends a
//!   fact about the user.

mod decide;
mod keys;
mod unproposed;
mod words;

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate};
use mnemo_core::{Message, Role};
use mnemo_store::memory::facts::one_line;
use serde::Serialize;

use crate::extract::Proposed;
pub use decide::{decide, Answers, Decision, Pair, QuestionKind};
pub use keys::{attribute_key, fact_keys, same_subject, subject_key, Keys};
pub use unproposed::{gives_way, unproposed};
use words::*;
pub use words::{content, words};

/// Judge questions one round may ask at most (each is a model call).
pub const MAX_QUESTIONS: usize = 8;
/// Pairs asked about per new fact at most.
const MAX_PAIRS: usize = 3;

/// What a fact does, as the code reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A fact.
    States,
    /// A new value that replaces an earlier one.
    Changes,
    /// A fix of something said wrongly.
    Corrects,
    /// Asks to forget something, or says it is not true.
    Retracts,
}

/// A proposed fact that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    /// The sentence to store (third person, absolute dates).
    pub text: String,
    /// Who, as the model named them (`user` for the user).
    pub subject: String,
    /// Who, normalised.
    pub subject_key: String,
    /// What about them, as the model named it.
    pub attribute: String,
    /// What about them, normalised.
    pub attribute_key: String,
    /// Whether the attribute holds one value (`None`: unknown).
    pub single: Option<bool>,
    /// The value.
    pub value: String,
    /// What it does.
    pub kind: Kind,
    /// The message (index into the round's messages) that says it.
    pub message: usize,
    /// The words of that message that say it.
    pub evidence: String,
    /// The day it became true.
    pub since: NaiveDate,
    /// The day it was said.
    pub said: NaiveDate,
    /// The model's sentence was replaced by one made from the checked
    /// parts.
    pub rewritten: bool,
}

/// A proposal that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The proposed sentence (or value).
    pub fact: String,
    /// Why it was not stored.
    pub why: String,
    /// The message it names, when one was found.
    pub message: Option<usize>,
    /// The words the model quoted for it.
    pub quote: String,
}

/// The day of a message: its timestamp's, else `fallback`.
pub fn message_day(m: &Message, fallback: NaiveDate) -> NaiveDate {
    m.timestamp
        .as_deref()
        .and_then(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|d| d.date_naive())
                .ok()
                .or_else(|| t.get(..10).and_then(|d| d.parse().ok()))
        })
        .unwrap_or(fallback)
}

/// The names a round's user messages go by (`Caroline: ...` in a
/// transcript of two people).
pub fn user_names(messages: &[Message]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::User) {
        if let Some(name) = speaker_name(&m.text()) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The name a message opens with ("Nate: ..."), as transcripts of
/// conversations between people write the speaker.
fn speaker_name(text: &str) -> Option<String> {
    let (name, _) = text.split_once(": ")?;
    let name = name.trim();
    ((1..=3).contains(&name.split_whitespace().count())
        && name.chars().next().is_some_and(char::is_uppercase))
    .then(|| name.to_string())
}

/// Who an assistant message is when a person, not the agent, speaks in the
/// assistant's place (a transcript of two people names each line's
/// speaker): what they say about themselves is about them, not the user.
pub(crate) fn assistant_person(m: &Message, user_names: &[String]) -> Option<String> {
    if m.role != Role::Assistant {
        return None;
    }
    speaker_name(&m.text()).filter(|n| !user_names.iter().any(|u| u.eq_ignore_ascii_case(n)))
}

/// `fact` with "the user" made `name` (the person who said it of
/// themselves).
fn about_person(fact: &str, name: &str) -> String {
    let mut out = fact.to_string();
    for (from, to) in [
        ("The user's ", format!("{name}'s ")),
        ("the user's ", format!("{name}'s ")),
        ("The user ", format!("{name} ")),
        ("the user ", format!("{name} ")),
    ] {
        out = out.replace(from, &to);
    }
    out
}

/// `fact` with the person `name` made "the user" (the model named the
/// wrong speaker).
fn as_user(fact: &str, name: &str) -> String {
    let mut out = format!(" {}", fact.trim());
    for (from, to) in [
        (format!(" {name}'s "), " the user's "),
        (format!(" {name} "), " the user "),
    ] {
        out = out.replace(&from, to);
    }
    capitalised(out.trim_start())
}

/// The relation of `subject` ("Melanie (the user's sister)") that no
/// message of `texts` says, and the name to call them by instead.
fn guessed_relation(
    subject: &str,
    texts: &[(usize, String, HashSet<String>)],
) -> Option<(String, String)> {
    let rel = words(subject)
        .into_iter()
        .find(|w| RELATIONS.contains(&w.as_str()) && !w.chars().any(is_cjk))?;
    if texts.iter().any(|(_, _, said)| {
        said.contains(&rel)
            || said.contains(&format!("{rel}s"))
            || said.contains(&format!("{rel}'s"))
    }) {
        return None;
    }
    let name: Vec<&str> = subject
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && !matches!(w.to_lowercase().as_str(), "the" | "user" | "user's")
        })
        .collect();
    (!name.is_empty()).then(|| (rel, name.join(" ")))
}

/// `fact` calling `name` by name where the model wrote the relation
/// `rel` it guessed.
fn without_relation(fact: &str, rel: &str, name: &str) -> String {
    let mut out = fact.to_string();
    for from in [
        format!("{name} (the user's {rel})"),
        format!("The user's {rel} {name}"),
        format!("the user's {rel} {name}"),
        format!("The user's {rel}"),
        format!("the user's {rel}"),
    ] {
        out = out.replace(&from, name);
    }
    out
}

/// The message that holds `quote` best: the whole quote inside it (its
/// words in order), else the most of its words (at least four in five);
/// the later message on a tie. Returns its index and the share found.
fn locate(quote: &str, texts: &[(usize, String, HashSet<String>)]) -> Option<(usize, f32)> {
    let q = words(quote);
    if q.is_empty() {
        return None;
    }
    let qf = flat(quote);
    let mut best: Option<(usize, f32)> = None;
    for (i, text, set) in texts {
        let score = if flat(text).contains(&qf)
            || (quote.chars().any(is_cjk) && flat(text).contains(qf.trim()))
        {
            1.0
        } else {
            q.iter().filter(|w| set.contains(*w)).count() as f32 / q.len() as f32
        };
        if best.is_none_or(|(_, s)| score >= s) && score > 0.0 {
            best = Some((*i, score));
        }
    }
    best.filter(|(_, s)| *s >= 0.8).or_else(|| {
        // A quote half translated ("I actually最喜欢靛青色了"): its longest
        // run of CJK characters, when a message holds it.
        let run = quote
            .split(|c: char| !is_cjk(c))
            .max_by_key(|r| r.chars().count())
            .filter(|r| r.chars().count() >= 4)?;
        texts
            .iter()
            .rev()
            .find(|(_, text, _)| text.contains(run))
            .map(|(i, _, _)| (*i, 0.8))
    })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A sentence made from the checked parts, for a model's sentence that
/// could not be stored as it was.
fn compose(
    subject: &str,
    subject_key: &str,
    attribute: &str,
    value: &str,
    kind: Kind,
    cjk: bool,
) -> Option<String> {
    let attribute = attribute.trim();
    if cjk {
        let who = if subject_key == "user" {
            "用户"
        } else {
            subject.trim()
        };
        return match kind {
            Kind::Retracts => Some(format!("{who}要求忘记其{attribute}。")),
            _ if value.trim().is_empty() || attribute.is_empty() => None,
            // One language in a sentence, in the words a question asks
            // with (住在, not "home city").
            _ if !attribute.chars().any(is_cjk) && attribute_key(attribute).0 == "home city" => {
                Some(format!("{who}住在{}。", value.trim()))
            }
            _ if attribute.starts_with('最') || attribute.starts_with('的') => {
                Some(format!("{who}{attribute}是{}。", value.trim()))
            }
            _ => Some(format!("{who}的{attribute}是{}。", value.trim())),
        };
    }
    let who = if subject_key == "user" {
        "The user".to_string()
    } else {
        capitalised(subject.trim())
    };
    let whose = if who.ends_with('s') {
        format!("{who}'")
    } else {
        format!("{who}'s")
    };
    match kind {
        Kind::Retracts if !attribute.is_empty() => {
            Some(format!("{who} asked to forget their {attribute}."))
        }
        Kind::Retracts => None,
        _ if value.trim().is_empty() || attribute.is_empty() => None,
        _ => Some(format!(
            "{whose} {attribute} is {}.",
            value.trim().trim_end_matches('.')
        )),
    }
}

/// Checks the model's proposals against the round's `messages` (see the
/// module docs). `today` dates messages without a timestamp.
pub fn check(
    proposed: &[Proposed],
    messages: &[Message],
    today: NaiveDate,
) -> (Vec<Checked>, Vec<Refusal>) {
    let names = user_names(messages);
    let texts: Vec<(usize, String, HashSet<String>)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m.role, Role::User | Role::Assistant))
        .map(|(i, m)| {
            let t = m.text();
            let set = words(&t).into_iter().collect();
            (i, t, set)
        })
        .filter(|(_, t, _)| !t.trim().is_empty())
        .collect();
    let mut out: Vec<Checked> = Vec::new();
    let mut refused = Vec::new();
    for p in proposed {
        let label = if p.fact.is_empty() {
            p.value.clone()
        } else {
            p.fact.clone()
        };
        let refuse = |why: &str, message: Option<usize>| Refusal {
            fact: label.clone(),
            why: why.to_string(),
            message,
            quote: p.quote.clone(),
        };
        match check_one(p, messages, &texts, &names, today) {
            Ok(c) => {
                let dup = out.iter().any(|o| {
                    o.subject_key == c.subject_key
                        && o.attribute_key == c.attribute_key
                        && o.kind == c.kind
                        && content(&o.value) == content(&c.value)
                });
                if !dup {
                    out.push(c);
                }
            }
            Err((why, message)) => refused.push(refuse(&why, message)),
        }
    }
    (out, refused)
}

/// Why a proposal is not stored, and the message it named.
type Reject = (String, Option<usize>);

/// Where a proposal comes from: the message holding its quote, else the
/// one that says most of its words; and whether the quote was found.
fn source_of(
    p: &Proposed,
    fact: &str,
    texts: &[(usize, String, HashSet<String>)],
) -> std::result::Result<(usize, bool), Reject> {
    if let Some((at, _)) = locate(&p.quote, texts) {
        return Ok((at, true));
    }
    let needed = content(&format!("{} {fact}", p.value));
    texts
        .iter()
        .map(|(i, t, _)| {
            let have: HashSet<String> = content(t).into_iter().collect();
            (*i, support(&needed, &have))
        })
        .filter(|(_, s)| *s >= 0.75)
        .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(at, _)| (at, false))
        .ok_or_else(|| {
            let why = if p.quote.trim().is_empty() {
                "no message says it".into()
            } else {
                format!("the quoted words {:?} are in no message", p.quote)
            };
            (why, None)
        })
}

/// Why a proposal is not memory at all, if it is not: a greeting or
/// thanks, a question, the assistant talking about itself, or a state that
/// holds for a moment.
fn junk(p: &Proposed, fact: &str, quote: Option<&str>) -> Option<&'static str> {
    let attribute: HashSet<String> = words(&p.attribute).into_iter().collect();
    let labelled = |names: &[&str]| names.iter().any(|w| attribute.contains(*w));
    let said = if p.value.trim().is_empty() {
        fact
    } else {
        &p.value
    };
    if has_phrase(&flat(said), SMALL_TALK)
        || labelled(&["greeting", "greetings", "thanks", "farewell", "small"])
    {
        return Some("small talk");
    }
    let asks = |t: &str| t.trim_end().ends_with(['?', '？']);
    if asks(fact)
        || quote.is_some_and(asks)
        || labelled(&["question", "questions", "request", "asked"])
    {
        return Some("a question states nothing");
    }
    let fact_flat = flat(fact);
    let opens_with = |openings: &[&str]| openings.iter().any(|o| fact_flat.starts_with(&flat(o)));
    if ASSISTANT_SUBJECTS.contains(&p.subject.trim().to_lowercase().as_str())
        || opens_with(MACHINE_OPENINGS)
        || has_phrase(&fact_flat, USER_AS_MACHINE)
    {
        return Some("about the assistant, not the user");
    }
    if has_phrase(&fact_flat, TRANSIENT) || has_phrase(&flat(&p.value), TRANSIENT) {
        return Some("true only for the moment");
    }
    None
}

/// Who a proposal is about, as said and as a key: the model's subject,
/// except that "my sister Ana lives in Madrid" is the sister's whatever
/// the model named (unless the attribute is the relation itself, "my
/// sister is Ana"), and that what the user says of themselves ("I live
/// in Tallinn", naming nobody) is the user's whoever the model named.
fn who(
    p: &Proposed,
    fact: &str,
    (quote, said): (&str, &str),
    from_user: bool,
    names: &[String],
) -> (String, String) {
    let mut subject = p.subject.trim().to_string();
    let mut key = subject_key(&subject, names);
    if key != "user" {
        let sentence = sentence_of(said, quote);
        let spoken: HashSet<String> = content(&sentence).into_iter().collect();
        let named = content(&subject).iter().any(|w| spoken.contains(w));
        if !(from_user && first_person(&sentence)) || named {
            return (subject, key);
        }
        subject = "user".into();
        key = "user".into();
    }
    // The message's own clause last: a model may quote "你妹妹" for "我妹妹".
    let Some(rel) = relation_subject(fact)
        .or_else(|| relation_subject(&clause_of(quote, &p.value)))
        .or_else(|| relation_subject(&clause_of(said, &p.value)))
    else {
        return (subject, key);
    };
    let attribute: HashSet<String> = words(&p.attribute).into_iter().collect();
    // Past "the user's" (or 用户的): the relation and the name.
    if words(&rel).iter().skip(3).any(|w| attribute.contains(w)) {
        return (subject, key);
    }
    let key = subject_key(&rel, names);
    (rel, key)
}

/// The words that count as evidence for a proposal from message `at`:
/// that message, and the exchange a confirmation joins. What the
/// assistant said counts for the user only when the user's next message
/// confirms it; a user's "Yes, do that" brings in the assistant's
/// proposal before it.
fn evidence(
    messages: &[Message],
    at: usize,
    about_user: bool,
) -> std::result::Result<String, Reject> {
    let spoken = |m: &&Message| matches!(m.role, Role::User | Role::Assistant);
    let confirms = |m: &Message| {
        let t = m.text();
        m.role == Role::User && words(&t).len() <= 12 && has_phrase(&flat(&t), CONFIRMATIONS)
    };
    let msg = &messages[at];
    let mut text = msg.text();
    if msg.role == Role::Assistant && about_user {
        match messages.iter().skip(at + 1).find(spoken) {
            Some(next) if confirms(next) => {
                text.push('\n');
                text.push_str(&next.text());
            }
            _ => {
                return Err((
                    "the assistant said it and the user did not confirm it".into(),
                    Some(at),
                ))
            }
        }
    } else if confirms(msg) {
        if let Some(prev) = messages[..at].iter().rev().find(spoken) {
            if prev.role == Role::Assistant {
                text.push('\n');
                text.push_str(&prev.text());
            }
        }
    }
    Ok(text)
}

/// The sentences of `text` that hold `quote`, else the quote.
fn sentence_of(text: &str, quote: &str) -> String {
    let q = flat(quote);
    let found: Vec<&str> = crate::extract::sentences(text)
        .into_iter()
        .filter(|s| flat(s).contains(&q))
        .collect();
    if found.is_empty() {
        quote.to_string()
    } else {
        found.join(" ")
    }
}

/// What a proposal does, by the words of the clause that says its value
/// first, the model's label second; "I no longer eat meat" proposed as
/// "The user eats meat" retracts that fact.
fn kind_of(p: &Proposed, fact: &str, quote: &str) -> Kind {
    let quote_flat = flat(quote);
    let clause_flat = flat(&clause_of(quote, &p.value));
    let model = match p.kind.as_str() {
        "changes" => Kind::Changes,
        "corrects" => Kind::Corrects,
        "retracts" => Kind::Retracts,
        _ => Kind::States,
    };
    // A "retraction" that states a value its quote says, with no word of
    // forgetting ("Sorry, I got that wrong: the wedding is in Nantes"), is
    // a correction or a fact, not a request to forget.
    let states_value = {
        let v = content(&p.value);
        let q: HashSet<String> = content(quote).into_iter().collect();
        !v.is_empty() && v.iter().all(|w| q.contains(w))
    };
    // The model's retraction stands on words that ask to forget, or, with
    // no value of its own, on words that name what it ends: "I went to a
    // support group" retracts no gym locker number.
    let names_it = {
        let q: HashSet<String> = content(quote).into_iter().collect();
        content(&format!("{} {} {fact}", p.attribute, p.value))
            .iter()
            .any(|w| w != "user" && q.contains(w))
    };
    let model_retracts = model == Kind::Retracts
        && (has_phrase(&quote_flat, RETRACT_CUES) || (!states_value && names_it));
    let kind = if has_phrase(&clause_flat, RETRACT_CUES) || model_retracts {
        Kind::Retracts
    } else if has_phrase(&quote_flat, CORRECT_CUES) || model == Kind::Corrects {
        Kind::Corrects
    } else if has_phrase(&quote_flat, CHANGE_CUES) || model == Kind::Changes {
        Kind::Changes
    } else {
        Kind::States
    };
    let ends_it = has_phrase(&clause_flat, NEGATIONS)
        && !has_phrase(&flat(fact), NEGATIONS)
        && has_phrase(&quote_flat, &["no longer", "anymore", "any more", "不再"])
        && states_value;
    if ends_it {
        Kind::Retracts
    } else {
        kind
    }
}

/// The sentence to store: the model's when the evidence (`have`)
/// supports it and it speaks in the third person, else one made from the
/// checked parts; `true` when it was made.
fn sentence(
    fact: &str,
    (subject, key, attribute, value): (&str, &str, &str, &str),
    kind: Kind,
    said: &str,
    have: &HashSet<String>,
) -> std::result::Result<(String, bool), String> {
    let attr_words: HashSet<String> = content(attribute).into_iter().collect();
    let supported = !fact.trim().is_empty()
        && !first_person(fact)
        && flat(fact) != flat(said)
        && hard_words(fact).iter().all(|w| have.contains(w))
        && {
            let needed: Vec<String> = content(fact)
                .into_iter()
                .filter(|w| !attr_words.contains(w))
                .collect();
            support(&needed, have) >= 0.5
        };
    if supported {
        let t = fact.trim();
        // "The user最喜欢的颜色是蓝色": one language in a sentence.
        let t = match t
            .strip_prefix("The user's ")
            .or_else(|| t.strip_prefix("The user"))
        {
            Some(rest) if t.chars().any(is_cjk) => format!("用户{}", rest.trim_start()),
            _ => t.to_string(),
        };
        return Ok((t, false));
    }
    compose(
        subject,
        key,
        attribute,
        value,
        kind,
        said.chars().any(is_cjk),
    )
    .map(|t| (t, true))
    .ok_or_else(|| {
        if first_person(fact) {
            "written in the first person, and without an attribute and value to write it again"
                .into()
        } else {
            "the message does not say what the sentence says".into()
        }
    })
}

/// A fact without "now" and "currently": what is true now is stored, and
/// the word would read wrong once it is not ("The user now lives in
/// Berlin", 用户现在最喜欢绿色).
fn timeless(text: &str) -> String {
    let mut t = format!(" {} ", text.trim());
    for w in ["now", "currently", "Now", "Currently"] {
        for (from, to) in [
            (format!(" {w} "), " "),
            (format!(" {w}."), "."),
            (format!(" {w},"), ","),
            (format!(" {w}!"), "!"),
        ] {
            t = t.replace(&from, to);
        }
    }
    let t = t.replace("现在", "").replace("目前", "");
    let t = t.trim();
    // Capitalised again when the sentence began with the word.
    capitalised(t)
}

fn check_one(
    p: &Proposed,
    messages: &[Message],
    texts: &[(usize, String, HashSet<String>)],
    names: &[String],
    today: NaiveDate,
) -> std::result::Result<Checked, Reject> {
    let fact = crate::guard::strip_fact_meta(&p.fact);
    // "- ," or "2.0" from a hostile fragment: nothing a reader could use.
    // A letter of any script (CJK included) makes a word; digits alone do
    // not.
    if !fact.chars().any(char::is_alphabetic) && !p.value.chars().any(char::is_alphabetic) {
        return Err(("no words".into(), None));
    }
    let (at, quoted) = source_of(p, &fact, texts)?;
    let said_text = messages[at].text();
    let quote = if quoted {
        p.quote.clone()
    } else {
        said_text.clone()
    };
    if let Some(why) = junk(p, &fact, quoted.then_some(quote.as_str())) {
        return Err((why.into(), Some(at)));
    }
    let from_user = messages[at].role == Role::User;
    let (mut subject, mut subject_key) = who(p, &fact, (&quote, &said_text), from_user, names);
    let mut fact = fact;
    let named = p
        .subject
        .split([' ', '('])
        .next()
        .unwrap_or_default()
        .trim();
    if subject_key == "user" && keys::subject_key(&p.subject, names) != "user" && !named.is_empty()
    {
        fact = as_user(&fact, named);
    }
    if subject_key == "user" {
        if let Some(person) = assistant_person(&messages[at], names) {
            fact = about_person(&fact, &person);
            subject_key = keys::subject_key(&person, names);
            subject = person;
        }
    }
    // A relation no message of the round says ("Melanie (the user's
    // sister)" for what Melanie says of her family) is the model's guess:
    // the person goes by their name.
    if let Some((rel, name)) = guessed_relation(&subject, texts) {
        fact = without_relation(&fact, &rel, &name);
        subject_key = keys::subject_key(&name, names);
        subject = name;
    }
    let mut have: HashSet<String> = content(&evidence(messages, at, subject_key == "user")?)
        .into_iter()
        .collect();
    have.extend(content(&subject));
    for n in names {
        have.extend(content(n));
    }
    // The cue words of the whole sentence count ("Sorry, I got that
    // wrong: the wedding is in Nantes" quoted from its colon on).
    let kind = kind_of(p, &fact, &sentence_of(&said_text, &quote));
    // The value must be in the evidence: a value the messages do not say
    // is made up.
    let value = one_line(&p.value);
    if kind != Kind::Retracts {
        let value_words = content(&value);
        if value_words.is_empty() && fact.trim().is_empty() {
            return Err(("no value".into(), Some(at)));
        }
        if hard_words(&value).iter().any(|w| !have.contains(w))
            || support(&value_words, &have) < 0.6
        {
            return Err((
                format!("the value {value:?} is not in the message"),
                Some(at),
            ));
        }
    }
    let said = message_day(&messages[at], today);
    let mut attribute = one_line(&p.attribute);
    // The user's own "my A is B": said as they said it.
    let own = (subject_key == "user" && messages[at].role == Role::User && kind != Kind::Retracts)
        .then(|| own_statement(&quote, &value, &fact))
        .flatten();
    let mut value = value;
    if let Some((a, f, v)) = own {
        attribute = a;
        fact = f;
        value = v;
    }
    let (text, rewritten) = sentence(
        &fact,
        (&subject, &subject_key, &attribute, &value),
        kind,
        &said_text,
        &have,
    )
    .map_err(|why| (why, Some(at)))?;
    let text = crate::dates::absolutize(&timeless(&text), said);
    let since = match kind {
        Kind::Retracts => said,
        _ => crate::dates::event_day(&quote, said).unwrap_or(said),
    };
    let (attribute_key, single) = keys::keys_of(&attribute, &text);
    Ok(Checked {
        text,
        subject: if subject.is_empty() {
            "user".into()
        } else {
            subject
        },
        subject_key,
        attribute,
        attribute_key,
        single,
        value,
        kind,
        message: at,
        evidence: quote,
        since,
        said,
        rewritten,
    })
}

#[cfg(test)]
mod tests;
