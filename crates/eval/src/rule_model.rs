//! The rule-based model of `mnemo eval write-path`: a deterministic
//! stand-in for the model, answering the requests of mnemo's write path
//! from the request body alone: the forced `extract_facts` call (facts
//! with the words that say them, who and what they are about, a value and
//! a kind), the forced `judge` call (one yes or no for a pair of facts),
//! `save_memory` (MEMORY.md rewritten) and the memory flush to the daily
//! log (bullet lines). It is meant to be served over the real OpenAI wire
//! protocol on loopback (the eval crate's `rule_model_server` example, or
//! a test's scripted server), so the numbers it gives measure mnemo's
//! bookkeeping (the checks, supersession, history, caps) and never a
//! model's judgement: it is the eval's ceiling, not a model.
//!
//! It knows the shapes of the statements the write-path suite scripts into
//! its conversations ([`crate::write_path`]) and nothing else:
//!
//! - `my SUBJECT is (now) VALUE` (the value one word): a fact about the
//!   user (a change with `now` or `update`, a retraction with `forget`);
//!   `my SUBJECT is in VALUE`, `I have a pet ANIMAL called VALUE`;
//! - `I live in VALUE`, `We're in VALUE these days` (a change without the
//!   usual words): the user's home city;
//! - `My sister NAME lives in VALUE`, `NAME moved to VALUE last month`:
//!   someone else's home city;
//! - `the wedding is in VALUE` with `sorry` / `wrong` / `after all`: a
//!   correction; `Scratch what I told you about the iguana`: a retraction
//!   in other words (what `the wedding` and `the iguana` are is the one
//!   thing it is told, [`ANAPHORA`]);
//! - an assistant's `Shall I switch your SUBJECT to VALUE?` answered by the
//!   user's `Yes, ...`: a change the user confirmed;
//! - in Chinese, a message `我(的)SUBJECT是VALUE。`, `请忘掉我的SUBJECT是VALUE。`
//!   (a retraction), and the shapes of [`ZH_SHAPES`] (`其实我现在最喜欢VALUE了。`,
//!   a change of the favourite colour; `我住在VALUE。`; the consolidation
//!   eval's others) and `我妹妹NAME住在VALUE。` / `NAME上个月搬到了VALUE。`.
//!
//! Facts are written in the third person (`The user's SUBJECT is VALUE.`,
//! `The user lives in VALUE.`, `用户最喜欢的颜色是VALUE。`); [`fact_key`]
//! reads them back, which is how it keeps MEMORY.md one line per subject
//! and answers `judge` (yes when both sentences name the same subject).

use mnemo_core::Role;
use mnemo_index::is_cjk;
use serde_json::{json, Value};

/// What the rule-based model answers.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleAnswer {
    /// A call of the tool `name` with these arguments.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments (a JSON object).
        arguments: Value,
    },
    /// A plain text answer (the flush, or a request it does not know).
    Text(String),
}

/// What a statement does, as `extract_facts` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A fact.
    States,
    /// A new value replacing an earlier one.
    Changes,
    /// A fix of something said wrongly.
    Corrects,
    /// Asks to forget something, or says it is not true.
    Retracts,
}

impl Kind {
    /// The name `extract_facts` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::States => "states",
            Kind::Changes => "changes",
            Kind::Corrects => "corrects",
            Kind::Retracts => "retracts",
        }
    }
}

/// The scripted words that stand for an attribute said before (`the
/// wedding`: the cousin's wedding), the one piece of context the model is
/// given instead of a memory of earlier sessions.
pub const ANAPHORA: &[(&str, &str)] = &[("wedding", "cousin's wedding"), ("iguana", "pet iguana")];

/// One statement found in a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The words of the user's message that say it (a sentence of it).
    pub quote: String,
    /// Who it is about: `user`, or the person as named (`the user's
    /// sister Ana`, `Ana`).
    pub subject: String,
    /// What about them (`gym locker number`, `home city`, `车位号码`).
    pub attribute: String,
    /// The value, `None` for a retraction that names none.
    pub value: Option<String>,
    /// What it does.
    pub kind: Kind,
    /// The fact, one sentence in the third person.
    pub fact: String,
}

impl Statement {
    fn new(quote: &str, subject: &str, attribute: &str, value: Option<&str>, kind: Kind) -> Self {
        let fact = match (kind, value) {
            (Kind::Retracts, _) => retraction_sentence(attribute, value),
            (_, Some(v)) => fact_sentence(subject, attribute, v),
            (_, None) => String::new(),
        };
        Statement {
            quote: quote.trim().to_string(),
            subject: subject.to_string(),
            attribute: attribute.to_string(),
            value: value.map(str::to_string),
            kind,
            fact,
        }
    }

    /// Which subject it is about: see [`key`].
    pub fn key(&self) -> String {
        key(&self.subject, &self.attribute)
    }

    /// The statement as one bullet of the daily-log flush.
    pub fn item(&self) -> String {
        match (&self.kind, &self.value) {
            (Kind::Retracts, Some(v)) if !self.attribute.chars().any(is_cjk) => format!(
                "The user asked to forget that their {} is {v}.",
                self.attribute
            ),
            _ => self.fact.clone(),
        }
    }

    /// The statement as one `extract_facts` item.
    pub fn extracted(&self) -> Value {
        json!({
            "quote": self.quote,
            "subject": self.subject,
            "attribute": self.attribute,
            "value": self.value.clone().unwrap_or_default(),
            "kind": self.kind.as_str(),
            "fact": self.fact,
        })
    }
}

/// Who and what a statement or fact is about, as one string: the person's
/// name (the last capitalised word of the subject; `user` for the user)
/// and the attribute, lower case.
pub fn key(subject: &str, attribute: &str) -> String {
    let s = subject.trim();
    let who = if s.eq_ignore_ascii_case("user") || s == "用户" {
        "user".to_string()
    } else {
        // A name written without capitals (玛丽索尔) is the name itself.
        s.split_whitespace()
            .rev()
            .find(|w| w.chars().next().is_some_and(char::is_uppercase))
            .unwrap_or(s)
            .to_lowercase()
    };
    format!("{who}: {}", attribute.trim().to_lowercase())
}

/// The sentence of a fact (see the module docs).
pub fn fact_sentence(subject: &str, attribute: &str, value: &str) -> String {
    if attribute.chars().any(is_cjk) {
        let who = if key(subject, "").starts_with("user:") {
            "用户"
        } else {
            subject
        };
        let of = if attribute.starts_with(['最', '住']) || who != "用户" {
            ""
        } else {
            "的"
        };
        return format!("{who}{of}{attribute}是{value}。");
    }
    let user = subject.eq_ignore_ascii_case("user");
    let who = if user {
        "The user".to_string()
    } else {
        let mut c = subject.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect())
            .unwrap_or_default()
    };
    match attribute {
        "home city" => format!("{who} lives in {value}."),
        a if a.ends_with("wedding") => format!("{who}'s {a} is in {value}."),
        a if a.starts_with("pet ") => format!("{who} has a {a} called {value}."),
        a => format!("{who}'s {a} is {value}."),
    }
}

fn retraction_sentence(attribute: &str, value: Option<&str>) -> String {
    if attribute.chars().any(is_cjk) {
        return format!("用户要求忘掉其{attribute}。");
    }
    let word = ANAPHORA
        .iter()
        .find(|(_, a)| *a == attribute)
        .map(|(w, _)| *w);
    match (value, word) {
        (Some(v), _) => format!("The user asked to forget that their {attribute} is {v}."),
        (None, Some(w)) => format!("The user said that what they told about the {w} isn't true."),
        (None, None) => format!("The user asked to forget their {attribute}."),
    }
}

/// A fact written by [`fact_sentence`] (or a retraction written by this
/// model) read back: its [`key`], its value, and whether it is a
/// retraction. `None` for any other sentence.
pub fn fact_key(text: &str) -> Option<(String, Option<String>, bool)> {
    let t = text.trim();
    let t = t.strip_prefix("- ").unwrap_or(t).trim();
    let t = t.trim_end_matches(['.', '。']).trim();
    if let Some(rest) = t.strip_prefix("用户") {
        if let Some(a) = rest.strip_prefix("要求忘掉其") {
            return Some((key("user", a), None, true));
        }
        let rest = rest.strip_prefix('的').unwrap_or(rest);
        let (a, v) = rest.rsplit_once('是')?;
        return Some((key("user", a), Some(v.to_string()), false));
    }
    if t.chars().any(is_cjk) {
        // Someone else's: `NAME` and one of the shapes' attributes.
        let (head, v) = t.rsplit_once('是')?;
        let (who, a) = ZH_SHAPES
            .iter()
            .find_map(|(_, _, a, _)| Some((head.strip_suffix(a)?, *a)))?;
        return Some((key(who, a), Some(v.to_string()), false));
    }
    if let Some(rest) = t.strip_prefix("The user asked to forget that their ") {
        let (a, v) = rest.split_once(" is ")?;
        return Some((key("user", a), Some(v.to_string()), true));
    }
    if let Some(rest) = t.strip_prefix("The user asked to forget their ") {
        return Some((key("user", rest), None, true));
    }
    if let Some(rest) = t.strip_prefix("The user said that what they told about the ") {
        let w = rest.split_whitespace().next()?;
        let a = ANAPHORA
            .iter()
            .find(|(x, _)| *x == w)
            .map_or(w, |(_, a)| *a);
        return Some((key("user", a), None, true));
    }
    if let Some((who, v)) = t.split_once(" lives in ") {
        let who = if who == "The user" { "user" } else { who };
        return Some((key(who, "home city"), Some(v.to_string()), false));
    }
    if let Some(rest) = t.strip_prefix("The user has a ") {
        let (a, v) = rest.split_once(" called ")?;
        return Some((key("user", a), Some(v.to_string()), false));
    }
    let rest = t.strip_prefix("The user's ")?;
    let (a, v) = rest
        .split_once(" is in ")
        .or_else(|| rest.split_once(" is "))?;
    Some((key("user", a), Some(v.to_string()), false))
}

fn is_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '\'' | '-' | '_' | '@'))
}

/// `sentence[from..]` in its own case where lower-casing kept the byte
/// offsets, else in lower case.
fn original<'a>(sentence: &'a str, lower: &'a str, from: usize) -> &'a str {
    if sentence.len() == lower.len() {
        sentence.get(from..).unwrap_or(&lower[from..])
    } else {
        &lower[from..]
    }
}

/// The text after the words `phrase` (lower case) at a word's start, in
/// its own case.
fn after<'a>(sentence: &'a str, lower: &'a str, phrase: &str) -> Option<&'a str> {
    let at = lower
        .match_indices(phrase)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || !lower[..i].chars().last().is_some_and(char::is_alphanumeric))?;
    Some(original(sentence, lower, at + phrase.len()))
}

/// The first word of `text`, when it is a whole value (one word).
fn first_word(text: &str) -> Option<&str> {
    let w = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':'))
        .next()?
        .trim_end_matches(['.', '!', '?']);
    is_word(w).then_some(w)
}

/// The statement one English sentence makes, if it is a scripted one.
fn english(sentence: &str) -> Option<Statement> {
    let s = sentence.trim();
    let lower = s.to_lowercase();
    let has = |w: &str| lower.contains(w);
    if let Some(rest) = after(s, &lower, "scratch what i told you about the ") {
        let w = first_word(rest)?.to_lowercase();
        let attribute = ANAPHORA
            .iter()
            .find(|(x, _)| *x == w)
            .map_or(w.clone(), |(_, a)| a.to_string());
        return Some(Statement::new(s, "user", &attribute, None, Kind::Retracts));
    }
    if let Some(rest) = after(s, &lower, "i have a pet ") {
        let (animal, value) = rest.split_once(" called ")?;
        let attribute = format!("pet {}", animal.to_lowercase());
        return Some(Statement::new(
            s,
            "user",
            &attribute,
            Some(first_word(value)?),
            Kind::States,
        ));
    }
    if let Some(rest) = after(s, &lower, "i live in ") {
        return Some(Statement::new(
            s,
            "user",
            "home city",
            Some(first_word(rest)?),
            Kind::States,
        ));
    }
    for we in ["we're in ", "we are in "] {
        if let Some(rest) = after(s, &lower, we) {
            let value = first_word(rest)?;
            if lower.ends_with(" these days") {
                return Some(Statement::new(
                    s,
                    "user",
                    "home city",
                    Some(value),
                    Kind::Changes,
                ));
            }
        }
    }
    if let Some(rest) = after(s, &lower, "my sister ") {
        let (name, place) = rest.split_once(" lives in ")?;
        let name = first_word(name)?;
        return Some(Statement::new(
            s,
            &format!("the user's sister {name}"),
            "home city",
            Some(first_word(place)?),
            Kind::States,
        ));
    }
    if let Some((name, rest)) = s.split_once(" moved to ") {
        let name = name.trim();
        let person =
            is_word(name) && name != "I" && name.chars().next().is_some_and(char::is_uppercase);
        if person && lower.ends_with(" last month") {
            return Some(Statement::new(
                s,
                name,
                "home city",
                Some(first_word(rest)?),
                Kind::Changes,
            ));
        }
    }
    for (word, attribute) in ANAPHORA {
        if let Some(rest) = after(s, &lower, &format!("the {word} is in ")) {
            let correction = ["sorry", "wrong", "after all", "no wait", "actually"]
                .iter()
                .any(|c| has(c));
            let kind = if correction {
                Kind::Corrects
            } else {
                Kind::Changes
            };
            return Some(Statement::new(
                s,
                "user",
                attribute,
                Some(first_word(rest)?),
                kind,
            ));
        }
    }
    // `my SUBJECT is (in) (now) VALUE`, the last `my` of the sentence.
    let at = lower
        .match_indices("my ")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || !lower[..i].chars().last().is_some_and(char::is_alphanumeric))
        .last()?;
    let rest_lower = &lower[at + 3..];
    let rest = original(s, &lower, at + 3);
    let (subject, value) = match rest_lower.find(" is ") {
        Some(i) => (rest_lower[..i].trim(), Some(&rest[i + 4..])),
        None => (rest_lower.trim(), None),
    };
    let subject_words: Vec<&str> = subject.split_whitespace().collect();
    if subject_words.is_empty()
        || subject_words.len() > 5
        || !subject_words.iter().all(|w| is_word(w))
    {
        return None;
    }
    let subject = subject_words.join(" ");
    let value = value.map(str::trim);
    let (value, place) = match value {
        Some(v) => match v.strip_prefix("in ") {
            Some(p) => (Some(p), true),
            None => (Some(v.strip_prefix("now ").unwrap_or(v).trim()), false),
        },
        None => (None, false),
    };
    let value = value.filter(|v| is_word(v));
    let subject = if place && !subject.ends_with("wedding") {
        return None;
    } else {
        subject
    };
    if has("forget") {
        return Some(Statement::new(s, "user", &subject, value, Kind::Retracts));
    }
    let kind = if has(" now ") || lower.starts_with("update") {
        Kind::Changes
    } else {
        Kind::States
    };
    Some(Statement::new(s, "user", &subject, Some(value?), kind))
}

/// The Chinese statements of fixed shape the suites script (the value
/// between the two parts): the attribute each sets for the user, and its
/// kind. `其实我现在最喜欢VALUE了` names no attribute; the model is told it
/// is the colour.
const ZH_SHAPES: &[(&str, &str, &str, Kind)] = &[
    ("其实我现在最喜欢", "了", "最喜欢的颜色", Kind::Changes),
    ("我们最近住在", "", "住的城市", Kind::Changes),
    ("我住在", "", "住的城市", Kind::States),
    ("等等，婚礼还是在", "举行", "表姐的婚礼地点", Kind::Corrects),
    (
        "不好意思，我说错了：婚礼在",
        "举行",
        "表姐的婚礼地点",
        Kind::Corrects,
    ),
    ("我表姐的婚礼在", "举行", "表姐的婚礼地点", Kind::States),
    ("我养了一只叫", "的鬣蜥", "宠物鬣蜥", Kind::States),
];

/// The statement a Chinese message makes, if it is a scripted one (the
/// whole message is one statement).
fn chinese(text: &str) -> Option<Statement> {
    let t = text.trim();
    if !t.chars().any(is_cjk) {
        return None;
    }
    let quote = t.trim_end_matches(['。', '！', '.', '!']);
    let short = |s: &str| {
        let n = s.chars().count();
        (1..=8).contains(&n)
            && !s
                .chars()
                .any(|c| c.is_whitespace() || "，。！？、,.!?".contains(c))
    };
    for (before, after, attribute, kind) in ZH_SHAPES {
        if let Some(v) = quote
            .strip_prefix(before)
            .and_then(|r| r.strip_suffix(after))
        {
            return short(v).then(|| Statement::new(quote, "user", attribute, Some(v), *kind));
        }
    }
    // Someone else's city: 我妹妹NAME住在VALUE, NAME上个月搬到了VALUE.
    let other = quote
        .strip_prefix("我妹妹")
        .and_then(|r| r.split_once("住在"))
        .map(|(n, v)| (n, v, Kind::States))
        .or_else(|| {
            quote
                .split_once("上个月搬到了")
                .map(|(n, v)| (n, v, Kind::Changes))
        });
    if let Some((name, v, kind)) = other {
        return (short(name) && short(v))
            .then(|| Statement::new(quote, name, "住的城市", Some(v), kind));
    }
    let (said, kind) = match quote
        .strip_prefix("请忘掉")
        .or_else(|| quote.strip_prefix("忘掉"))
    {
        Some(r) => (r, Kind::Retracts),
        None => (quote, Kind::States),
    };
    let rest = said.strip_prefix('我')?;
    let rest = rest.strip_prefix('的').unwrap_or(rest);
    let (attribute, value) = rest.split_once('是')?;
    (short(attribute) && short(value))
        .then(|| Statement::new(quote, "user", attribute, Some(value), kind))
}

/// The statements one user message makes, in order.
pub fn statements(text: &str) -> Vec<Statement> {
    if let Some(s) = chinese(text) {
        return vec![s];
    }
    text.split(['.', '!', '?', '\n'])
        .filter_map(english)
        .collect()
}

/// An assistant's `Shall I switch your SUBJECT to VALUE?`.
fn proposal(text: &str) -> Option<(String, String)> {
    let lower = text.to_lowercase();
    let rest = after(text, &lower, "shall i switch your ")?;
    let (attribute, value) = rest.rsplit_once(" to ")?;
    Some((attribute.to_lowercase(), first_word(value)?.to_string()))
}

/// A user's short yes.
fn confirms(text: &str) -> bool {
    let lower = text.trim().to_lowercase();
    lower.split_whitespace().count() <= 8
        && [
            "yes",
            "yeah",
            "sure",
            "ok",
            "okay",
            "please do",
            "do that",
            "go ahead",
        ]
        .iter()
        .any(|c| lower.starts_with(c))
}

/// The statements of a conversation (`(role, text)` in order): each user
/// message's, and an assistant's proposal the next user message confirms
/// (quoted from the confirmation), without repeats.
pub fn conversation_statements(turns: &[(Role, String)]) -> Vec<Statement> {
    let mut out: Vec<Statement> = Vec::new();
    for (i, (role, text)) in turns.iter().enumerate() {
        if *role != Role::User {
            continue;
        }
        let mut found = statements(text);
        if confirms(text) {
            let proposed = i
                .checked_sub(1)
                .and_then(|j| turns.get(j))
                .filter(|(r, _)| *r == Role::Assistant)
                .and_then(|(_, t)| proposal(t));
            if let Some((attribute, value)) = proposed {
                let quote = text.trim().trim_end_matches(['.', '!']);
                found.push(Statement::new(
                    quote,
                    "user",
                    &attribute,
                    Some(&value),
                    Kind::Changes,
                ));
            }
        }
        for s in found {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// The messages of a transcript as mnemo shows them to a model, one a
/// line: `[1] USER: text` (extraction) or `[2026-01-01 10:00] USER: text`
/// (consolidation).
fn transcript_turns(lines: &str) -> Vec<(Role, String)> {
    lines
        .lines()
        .filter_map(|l| l.strip_prefix('[')?.split_once("] "))
        .filter_map(|(_, rest)| {
            let (who, text) = rest.split_once(": ")?;
            let role = match who.split_whitespace().next()? {
                "USER" => Role::User,
                "ASSISTANT" => Role::Assistant,
                _ => return None,
            };
            Some((role, text.to_string()))
        })
        .collect()
}

/// The time of a transcript's first line, for a history entry.
fn first_time(lines: &str) -> String {
    lines
        .lines()
        .find_map(|l| l.strip_prefix('[').and_then(|r| r.split_once(']')))
        .map(|(t, _)| t.to_string())
        .filter(|t| t.len() >= 16)
        .unwrap_or_else(|| "1970-01-01 00:00".into())
}

fn content(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The tool a request asks for: the forced choice, else its only tool.
fn wanted_tool(body: &Value) -> Option<String> {
    if let Some(name) = body
        .pointer("/tool_choice/function/name")
        .or_else(|| body.pointer("/tool_choice/name"))
        .and_then(Value::as_str)
    {
        return Some(name.to_string());
    }
    let tools = body.get("tools")?.as_array()?;
    tools.first().and_then(|t| {
        t.pointer("/function/name")
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// The answer to one chat request body (OpenAI or Anthropic shape).
pub fn answer(body: &Value) -> RuleAnswer {
    let messages: Vec<&Value> = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| content(m))
        .unwrap_or_default();
    match wanted_tool(body).as_deref() {
        Some("extract_facts") => extract(&last_user),
        Some("judge") => judge(&last_user),
        Some("save_memory") => save(&last_user),
        Some(other) => RuleAnswer::Text(format!("the rule-based model does not know {other}")),
        None => flush(&messages),
    }
}

fn extract(user: &str) -> RuleAnswer {
    let facts: Vec<Value> = conversation_statements(&transcript_turns(user))
        .iter()
        .map(Statement::extracted)
        .collect();
    RuleAnswer::Tool {
        name: "extract_facts".into(),
        arguments: json!({ "facts": facts }),
    }
}

/// The text between the last `label"` and the closing `"` at the end of
/// its line (a prompt's examples come before the question).
fn quoted<'a>(user: &'a str, label: &str) -> Option<&'a str> {
    let rest = user.rsplit_once(label)?.1.strip_prefix('"')?;
    let line = rest.lines().next()?;
    line.strip_suffix('"')
}

fn judge(user: &str) -> RuleAnswer {
    let old = quoted(user, "Saved memory: ")
        .and_then(fact_key)
        .map(|(k, _, _)| k);
    let new = quoted(user, "New fact: ")
        .or_else(|| quoted(user, "The user said: "))
        .and_then(|t| {
            fact_key(t)
                .map(|(k, _, _)| k)
                .or_else(|| statements(t).first().map(Statement::key))
        });
    let yes = old.is_some() && old == new;
    RuleAnswer::Tool {
        name: "judge".into(),
        arguments: json!({ "answer": if yes { "yes" } else { "no" } }),
    }
}

fn save(user: &str) -> RuleAnswer {
    let memory = user
        .split_once("## Current long-term memory (MEMORY.md)")
        .map_or("", |(_, r)| r);
    let (memory, excerpt) = memory
        .split_once("## Conversation excerpt to consolidate")
        .unwrap_or((memory, ""));
    let memory = memory.trim();
    let mut lines: Vec<String> = if memory == "(empty)" {
        Vec::new()
    } else {
        memory.lines().map(str::to_string).collect()
    };
    let said = conversation_statements(&transcript_turns(excerpt));
    for s in &said {
        let k = s.key();
        let at = lines
            .iter()
            .position(|l| fact_key(l).is_some_and(|(lk, _, _)| lk == k));
        match (s.kind, at) {
            (Kind::Retracts, Some(i)) => {
                lines.remove(i);
            }
            (Kind::Retracts, None) => {}
            (_, Some(i)) => lines[i] = format!("- {}", s.fact),
            (_, None) => lines.push(format!("- {}", s.fact)),
        }
    }
    let mut update = lines.join("\n");
    if !update.is_empty() {
        update.push('\n');
    }
    RuleAnswer::Tool {
        name: "save_memory".into(),
        arguments: json!({
            "history_entry": format!("[{}] {} statement(s) about the user", first_time(excerpt), said.len()),
            "memory_update": update,
        }),
    }
}

fn flush(messages: &[&Value]) -> RuleAnswer {
    let turns: Vec<(Role, String)> = messages
        .iter()
        .filter_map(|m| {
            let role = match m.get("role").and_then(Value::as_str)? {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                _ => return None,
            };
            let text = content(m);
            (!text.starts_with("[memory flush]")).then_some((role, text))
        })
        .collect();
    let mut items: Vec<String> = Vec::new();
    for s in conversation_statements(&turns) {
        let item = format!("- {}", s.item());
        if !items.contains(&item) {
            items.push(item);
        }
    }
    if items.is_empty() {
        RuleAnswer::Text("NO_REPLY".into())
    } else {
        RuleAnswer::Text(items.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Statement {
        let mut s = statements(text);
        assert_eq!(s.len(), 1, "{text}: {s:?}");
        s.remove(0)
    }

    #[test]
    fn finds_the_scripted_statements_only() {
        let s = one("By the way, my gym locker number is 14. I love it!");
        assert_eq!(
            (s.attribute.as_str(), s.value.as_deref(), s.kind),
            ("gym locker number", Some("14"), Kind::States)
        );
        assert_eq!(s.quote, "By the way, my gym locker number is 14");
        assert_eq!(s.fact, "The user's gym locker number is 14.");
        let s = one("Update: my parking spot is now C9.");
        assert_eq!((s.value.as_deref(), s.kind), (Some("C9"), Kind::Changes));
        let s = one("Please forget that my spare key spot is flowerpot.");
        assert_eq!(
            (s.value.as_deref(), s.kind),
            (Some("flowerpot"), Kind::Retracts)
        );
        assert_eq!(
            s.item(),
            "The user asked to forget that their spare key spot is flowerpot."
        );
        assert!(statements("My mom is so happy that I got the job").is_empty());
        assert!(statements("Tommy is great.").is_empty());
        assert!(statements(
            "No, I didn't make it. This is actually a pic from my cousin's wedding."
        )
        .is_empty());
    }

    #[test]
    fn reads_the_harder_statements() {
        let s = one("I live in Tallinn.");
        assert_eq!(
            (s.key(), s.fact.as_str(), s.kind),
            (
                "user: home city".into(),
                "The user lives in Tallinn.",
                Kind::States
            )
        );
        let s = one("We're in Porto these days.");
        assert_eq!(
            (s.key(), s.value.as_deref(), s.kind),
            ("user: home city".into(), Some("Porto"), Kind::Changes)
        );
        let s = one("My sister Ana lives in Valencia.");
        assert_eq!(
            (s.key(), s.fact.as_str()),
            (
                "ana: home city".into(),
                "The user's sister Ana lives in Valencia."
            )
        );
        let s = one("Ana moved to Seville last month.");
        assert_eq!(
            (s.key(), s.fact.as_str(), s.kind),
            (
                "ana: home city".into(),
                "Ana lives in Seville.",
                Kind::Changes
            )
        );
        let s = one("My cousin's wedding is in Lyon.");
        assert_eq!(
            (s.key(), s.fact.as_str(), s.kind),
            (
                "user: cousin's wedding".into(),
                "The user's cousin's wedding is in Lyon.",
                Kind::States
            )
        );
        let s = one("Sorry, I got that wrong: the wedding is in Nantes.");
        assert_eq!(
            (s.key(), s.value.as_deref(), s.kind),
            (
                "user: cousin's wedding".into(),
                Some("Nantes"),
                Kind::Corrects
            )
        );
        let s = one("No wait, the wedding is in Lyon after all.");
        assert_eq!((s.value.as_deref(), s.kind), (Some("Lyon"), Kind::Corrects));
        let s = one("I have a pet iguana called Zorba.");
        assert_eq!(
            (s.key(), s.fact.as_str()),
            (
                "user: pet iguana".into(),
                "The user has a pet iguana called Zorba."
            )
        );
        let s = one("Scratch what I told you about the iguana, that isn't true.");
        assert_eq!(
            (s.key(), s.value, s.kind),
            ("user: pet iguana".into(), None, Kind::Retracts)
        );
        let s = one("我最喜欢的颜色是蓝色。");
        assert_eq!(
            (s.key(), s.fact.as_str(), s.quote.as_str()),
            (
                "user: 最喜欢的颜色".into(),
                "用户最喜欢的颜色是蓝色。",
                "我最喜欢的颜色是蓝色"
            )
        );
        let s = one("其实我现在最喜欢绿色了。");
        assert_eq!(
            (s.key(), s.value.as_deref(), s.kind),
            ("user: 最喜欢的颜色".into(), Some("绿色"), Kind::Changes)
        );
        let s = one("我的车位号码是B7。");
        assert_eq!(s.fact, "用户的车位号码是B7。");
        let s = one("请忘掉我的车位号码是B7。");
        assert_eq!(
            (s.key(), s.kind, s.fact.as_str()),
            (
                "user: 车位号码".into(),
                Kind::Retracts,
                "用户要求忘掉其车位号码。"
            )
        );
        // A real turn of the Chinese set is not a statement.
        assert!(statements("张曼婷: 我的梦想是成为画家。\nAI: 真好").is_empty());
        // Every fact reads back to the key it was written for.
        for text in [
            "By the way, my gym locker number is 14.",
            "I live in Tallinn.",
            "My sister Ana lives in Valencia.",
            "Ana moved to Seville last month.",
            "My cousin's wedding is in Lyon.",
            "I have a pet iguana called Zorba.",
            "Scratch what I told you about the iguana, that isn't true.",
            "Please forget that my spare key spot is flowerpot.",
            "我最喜欢的颜色是蓝色。",
            "请忘掉我的车位号码是B7。",
        ] {
            let s = one(text);
            let (k, v, retract) = fact_key(&s.fact).unwrap_or_else(|| panic!("{}", s.fact));
            assert_eq!(k, s.key(), "{}", s.fact);
            assert_eq!(retract, s.kind == Kind::Retracts, "{}", s.fact);
            if !retract {
                assert_eq!(v, s.value, "{}", s.fact);
            }
            assert_eq!(
                fact_key(&s.item()).map(|x| x.0),
                Some(s.key()),
                "{}",
                s.item()
            );
        }
    }

    #[test]
    fn a_proposal_counts_when_the_user_confirms_it() {
        let turns = |yes: &str| {
            vec![
                (Role::User, "My preferred airline is Lufthansa.".to_string()),
                (
                    Role::Assistant,
                    "Shall I switch your preferred airline to KLM?".to_string(),
                ),
                (Role::User, yes.to_string()),
            ]
        };
        let found = conversation_statements(&turns("Yes, do that."));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[1].quote, "Yes, do that");
        assert_eq!(found[1].fact, "The user's preferred airline is KLM.");
        assert_eq!(found[1].kind, Kind::Changes);
        assert_eq!(
            conversation_statements(&turns("No, keep it as it is.")).len(),
            1
        );
    }

    #[test]
    fn extracts_and_judges_over_the_wire_shapes() {
        let user = "## Conversation (4 messages)\n\n[1] USER: Caroline: hi there\n[2] USER: We're in Porto these days.\n[3] ASSISTANT: Shall I switch your preferred airline to KLM?\n[4] USER: Yes, do that.";
        let RuleAnswer::Tool { name, arguments } = extract(user) else {
            panic!("no tool call")
        };
        assert_eq!(name, "extract_facts");
        let facts = arguments["facts"].as_array().unwrap();
        assert_eq!(facts.len(), 2, "{arguments}");
        assert_eq!(facts[0]["quote"], "We're in Porto these days");
        assert_eq!(facts[0]["kind"], "changes");
        assert_eq!(facts[0]["subject"], "user");
        assert_eq!(facts[0]["attribute"], "home city");
        assert_eq!(facts[1]["value"], "KLM");
        let ask = |old: &str, new: &str, label: &str| {
            let body = format!("Saved memory: \"{old}\"\n{label}\"{new}\"\n\nAnswer.");
            match judge(&body) {
                RuleAnswer::Tool { arguments, .. } => {
                    arguments["answer"].as_str().unwrap().to_string()
                }
                RuleAnswer::Text(t) => t,
            }
        };
        assert_eq!(
            ask(
                "The user lives in Tallinn.",
                "The user lives in Porto.",
                "New fact: "
            ),
            "yes"
        );
        assert_eq!(
            ask(
                "The user lives in Porto.",
                "Ana lives in Seville.",
                "New fact: "
            ),
            "no"
        );
        assert_eq!(
            ask(
                "The user has a pet iguana called Zorba.",
                "Scratch what I told you about the iguana, that isn't true",
                "The user said: "
            ),
            "yes"
        );
        assert_eq!(
            ask(
                "Caroline likes tea.",
                "Caroline likes coffee.",
                "New fact: "
            ),
            "no"
        );
    }

    #[test]
    fn keeps_memory_md_one_line_a_subject() {
        let user = "## Current long-term memory (MEMORY.md)\n\n- The user lives in Tallinn.\n- The user's spare key spot is flowerpot.\n\n## Conversation excerpt to consolidate (3 messages)\n\n[2023-05-01 10:00] USER: We're in Porto these days.\n[2023-05-01 10:01] ASSISTANT: Noted.\n[2023-05-01 10:02] USER: Please forget that my spare key spot is flowerpot.";
        let RuleAnswer::Tool { arguments, .. } = save(user) else {
            panic!("no tool call")
        };
        assert_eq!(arguments["memory_update"], "- The user lives in Porto.\n");
        assert!(arguments["history_entry"]
            .as_str()
            .unwrap()
            .starts_with("[2023-05-01 10:00] 2 statement(s)"));
    }
}
