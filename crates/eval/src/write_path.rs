//! `mnemo eval write-path`: the write-path suite. It owns the scenarios,
//! their replay through the real consolidation pipeline of each `[memory]
//! profile`, and the scores.
//!
//! Scripted exchanges with known ground truth are interleaved into the
//! real turns of a benchmark file's conversations (read at run time, never
//! copied), one exchange at a time (a user statement and an
//! acknowledgement, or a few messages), spread over the conversation's
//! sessions. Each scenario kind is scored on its own:
//!
//! - (a) changed: a subject is stated, then changed in a later session
//!   (once or twice, "Update: my ... is now ..."); the last value must be
//!   the current one and the old ones must stay in history;
//! - (b) repeated: the same fact stated in several sessions must end as one
//!   memory;
//! - (c) retracted: a fact stated, then "please forget that ..." later: no
//!   current memory may hold it;
//! - (d) long: the whole conversation plus `fillers` further distinct
//!   facts, with the `[engine]` MEMORY.md caps set to `cap_lines` /
//!   `cap_bytes`: the memory must stay within them;
//! - (e) a change without the usual words ("I live in Tallinn." ... "We're
//!   in Ghent these days."): Ghent current, Tallinn ended;
//! - (f) a correction of a correction ("My cousin's wedding is in Lyon." ->
//!   "Sorry, I got that wrong: the wedding is in Nantes." -> "No wait, the
//!   wedding is in Lyon after all."): Lyon current, Nantes ended;
//! - (g) a retraction in other words ("I have a pet iguana called Zorba."
//!   -> "Scratch what I told you about the iguana, that isn't true.");
//! - (h) a change the assistant proposes and the user confirms ("My
//!   preferred airline is Lufthansa." ... the assistant: "Shall I switch
//!   your preferred airline to KLM?", the user: "Yes, do that.");
//! - (i) two people: the user's sister moves ("My sister Marisol lives in
//!   Valencia." -> "Marisol moved to Bilbao last month."), and the user's
//!   own home (e) must not take her cities;
//! - (j) statements in Chinese: a change (我最喜欢的颜色是琥珀色。 ->
//!   其实我现在最喜欢靛青色了。) and a retraction (我的车位号码是B7。 ->
//!   请忘掉我的车位号码是B7。).
//!
//! The values occur nowhere in the benchmark files, nor in the examples of
//! mnemo's prompts (a model that copies its prompt's example, "The user
//! lives in Porto" or 蓝色, must not score). [`crate::rule_model`]
//! answers every such request right, deterministically: it is the suite's
//! ceiling. For each profile a fresh workspace is made with `[memory]
//! profile` set; every session of the conversation is written as its own
//! session log and, when it ends, the profile's write path runs as mnemo
//! runs it: the memory flush when the profile flushes (`Engine::flush`),
//! then consolidation when it consolidates (`Engine::consolidate_now`). A
//! profile that does neither (claude-code: memory is written by the
//! agent's own tool calls) writes nothing here. With `dream`, one dream
//! pass (`Engine::dream`, at the time the last session ends) runs after
//! the replay, and the scores are those of the memory it leaves.
//!
//! The memory scored is every line a later turn could take as true: the
//! lines of MEMORY.md, the current facts of `memory/facts.md` and the items
//! of the daily logs (append-only journals, searched as they are). History
//! is `memory/HISTORY.md` and the facts no longer true. A line is about a
//! subject when it contains one of the subject's words (for (a)-(d) its
//! whole name, `gym locker number`; for (e)-(j) a word of it or one of its
//! values, which are unique; for the sister, her name alone) and none of
//! the words that name someone else (`Marisol` for the user's own home),
//! and holds a value when it contains the value as a word (as a run of
//! characters in Chinese). A daily-log item is read without its `[10:00]`
//! time. A subject is right when memory holds its current value and no
//! other of its values, nor a value of the other person's (a line about
//! the user's home that holds Bilbao is a contradiction of the user's
//! home). Current value, retractions, duplicates, contradictions and
//! old values in history count every kind; (a)+(b) only those two. Wrong
//! supersessions and invented facts are scored by
//! [`crate::memory_checks`].

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use mnemo_core::{Config, Message, Role, Workspace};
use mnemo_llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelInfo};
use serde::Serialize;

use crate::dataset::{Conversation, Dataset};
use crate::error::{EvalError, Result};
use crate::replay::{check_keep, scratch, session_messages};

/// The profiles scored, in the README's order.
pub const PROFILES: &[&str] = &["mnemo", "nanobot", "openclaw", "claude-code", "mem0"];

/// What to run.
#[derive(Debug, Clone)]
pub struct WritePathOptions {
    /// The benchmark file.
    pub file: PathBuf,
    /// Profiles to score (default: all).
    pub profiles: Vec<String>,
    /// Only the first N conversations (default 1).
    pub limit_conversations: Option<usize>,
    /// Only the first N sessions of each (default: all).
    pub limit_sessions: Option<usize>,
    /// Distinct extra facts of scenario (d).
    pub fillers: usize,
    /// `[engine] memory_max_lines` of the workspaces.
    pub cap_lines: usize,
    /// `[engine] memory_max_bytes` of the workspaces.
    pub cap_bytes: usize,
    /// Run one dream pass at the end of each replay and score after it.
    pub dream: bool,
    /// Keep each replay's workspace in `<keep>/<conv_id>/<profile>`
    /// instead of a temporary folder (must be new or empty).
    pub keep: Option<PathBuf>,
}

impl WritePathOptions {
    /// The defaults for `file`.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        WritePathOptions {
            file: file.into(),
            profiles: PROFILES.iter().map(|p| p.to_string()).collect(),
            limit_conversations: Some(1),
            limit_sessions: None,
            fillers: 40,
            cap_lines: 30,
            cap_bytes: 25_000,
            dream: false,
            keep: None,
        }
    }
}

/// The scenario kind a subject belongs to (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// (a) stated, then changed.
    Changed,
    /// (b) stated several times.
    Repeated,
    /// (c) stated, then retracted.
    Retracted,
    /// (d) one of many distinct facts.
    Filler,
    /// (e) a change without the usual words.
    UnmarkedChange,
    /// (f) a correction of a correction.
    CorrectedTwice,
    /// (g) a retraction in other words.
    RewordedRetraction,
    /// (h) a change the assistant proposed and the user confirmed.
    ConfirmedProposal,
    /// (i) someone else's fact changes, not the user's.
    AnotherPerson,
    /// (j) statements in Chinese.
    Chinese,
}

impl Scenario {
    /// Every kind, in the report's order.
    pub const ALL: [Scenario; 10] = [
        Scenario::Changed,
        Scenario::Repeated,
        Scenario::Retracted,
        Scenario::Filler,
        Scenario::UnmarkedChange,
        Scenario::CorrectedTwice,
        Scenario::RewordedRetraction,
        Scenario::ConfirmedProposal,
        Scenario::AnotherPerson,
        Scenario::Chinese,
    ];

    /// Its column heading: the letter and a few words.
    pub fn title(self) -> &'static str {
        match self {
            Scenario::Changed => "(a) changed",
            Scenario::Repeated => "(b) repeated",
            Scenario::Retracted => "(c) retracted",
            Scenario::Filler => "(d) fillers",
            Scenario::UnmarkedChange => "(e) change, no cue words",
            Scenario::CorrectedTwice => "(f) correction corrected",
            Scenario::RewordedRetraction => "(g) retraction reworded",
            Scenario::ConfirmedProposal => "(h) proposal confirmed",
            Scenario::AnotherPerson => "(i) another person",
            Scenario::Chinese => "(j) Chinese",
        }
    }
}

/// One scripted subject and its ground truth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// Its scenario kind.
    pub scenario: Scenario,
    /// Its name (`gym locker number`, `sister Marisol's home city`).
    pub subject: String,
    /// Who it is about (`user`, `Marisol`) and which of their attributes, as
    /// the rule-based model names them.
    pub who: String,
    /// See [`Subject::who`].
    pub attribute: String,
    /// Words that make a line about it (any one, as whole words in order).
    pub about: Vec<String>,
    /// Words that make a line about someone else instead.
    pub not_about: Vec<String>,
    /// The values stated, in order (the last is current unless retracted).
    pub values: Vec<String>,
    /// Someone else's values, which no line about it may hold.
    pub foreign: Vec<String>,
    /// Retracted at the end.
    pub retracted: bool,
}

impl Subject {
    /// The value that must be current, `None` when retracted.
    pub fn current(&self) -> Option<&str> {
        if self.retracted {
            None
        } else {
            self.values.last().map(String::as_str)
        }
    }

    /// True when the line (its [`words`]) is about this subject.
    pub fn is_about(&self, line: &[String]) -> bool {
        self.about.iter().any(|p| holds(line, p)) && !self.not_about.iter().any(|p| holds(line, p))
    }

    /// Its values that are not current any more (distinct, in order).
    pub fn old_values(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        if self.retracted {
            return out;
        }
        for v in &self.values {
            if Some(v.as_str()) != self.current() && !out.contains(&v.as_str()) {
                out.push(v);
            }
        }
        out
    }
}

/// One scripted exchange: the session it goes into, its messages, and
/// what it makes true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scripted {
    /// Index of the session (after the limits).
    pub session: usize,
    /// Its messages, in order (the user's statement; or a user message, the
    /// assistant's proposal and the user's yes). An acknowledgement follows
    /// when the last is the user's.
    pub turns: Vec<(Role, String)>,
    /// The subject (index into [`Plan::subjects`]).
    pub subject: usize,
    /// The subject's value after it; `None` once retracted.
    pub value: Option<String>,
}

/// The scripted part of one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The subjects and their truth.
    pub subjects: Vec<Subject>,
    /// The exchanges, in the order they are said.
    pub statements: Vec<Scripted>,
}

/// The subjects of scenarios (a) to (c), with their values.
const CHANGED: &[(&str, &[&str])] = &[
    ("gym locker number", &["14", "27", "33"]),
    ("parking spot", &["B4", "C9"]),
    ("favourite tea", &["oolong", "sencha"]),
];
const REPEATED: &[(&str, &str, usize)] = &[
    ("bike lock code", "4417", 5),
    ("dentist's name", "Okafor", 3),
];
const RETRACTED: &[(&str, &str)] = &[
    ("spare key spot", "flowerpot"),
    ("hotel room number", "512"),
];

/// Words naming a place someone lives in, for (e) and (i).
const HOME_WORDS: &[&str] = &[
    "live", "lives", "living", "lived", "home", "moved", "city", "based", "resides",
];

/// One stage of a subject: where in the conversation (a fraction of its
/// sessions), what is said, and the value after it.
type Stage = (f64, Vec<(Role, String)>, Option<String>);

fn user(text: impl Into<String>) -> Vec<(Role, String)> {
    vec![(Role::User, text.into())]
}

fn some(value: &str) -> Option<String> {
    Some(value.to_string())
}

/// A subject of (a)-(d): about the user, named by its own words.
fn plain(scenario: Scenario, subject: &str, values: &[&str], retracted: bool) -> Subject {
    Subject {
        scenario,
        subject: subject.to_string(),
        who: "user".into(),
        attribute: subject.to_string(),
        about: vec![subject.to_string()],
        not_about: Vec::new(),
        values: values.iter().map(|v| v.to_string()).collect(),
        foreign: Vec::new(),
        retracted,
    }
}

/// A subject of (e)-(j): `who`'s `attribute` (as the rule-based model
/// names them), a line about it when it has one of `about` or of its
/// (unique) values.
fn named(
    scenario: Scenario,
    subject: &str,
    (who, attribute): (&str, &str),
    about: &[&str],
    values: &[&str],
) -> Subject {
    Subject {
        who: who.into(),
        attribute: attribute.to_string(),
        about: about.iter().chain(values).map(|w| w.to_string()).collect(),
        ..plain(scenario, subject, values, false)
    }
}

/// The plan for a conversation of `sessions` sessions (see the module
/// docs); stages of one subject go into different sessions when there are
/// at least six.
#[allow(clippy::too_many_lines)]
pub fn plan(sessions: usize, fillers: usize) -> Plan {
    let at = |frac: f64| ((frac * sessions as f64) as usize).min(sessions.saturating_sub(1));
    let mut subjects: Vec<Subject> = Vec::new();
    // (session, order said, exchange)
    let mut said: Vec<(usize, usize, Scripted)> = Vec::new();
    let mut add = |subject: Subject, stages: Vec<Stage>| {
        let index = subjects.len();
        subjects.push(subject);
        for (frac, turns, value) in stages {
            let n = said.len();
            let session = at(frac);
            said.push((
                session,
                n,
                Scripted {
                    session,
                    turns,
                    subject: index,
                    value,
                },
            ));
        }
    };
    let changed_at: [&[f64]; 3] = [&[0.1, 0.5, 0.8], &[0.2, 0.6], &[0.3, 0.9]];
    for ((subject, values), fracs) in CHANGED.iter().zip(changed_at) {
        let stages = values
            .iter()
            .zip(fracs)
            .enumerate()
            .map(|(k, (v, f))| {
                let text = if k == 0 {
                    format!("By the way, my {subject} is {v}.")
                } else {
                    format!("Update: my {subject} is now {v}.")
                };
                (*f, user(text), some(v))
            })
            .collect();
        add(plain(Scenario::Changed, subject, values, false), stages);
    }
    for (subject, value, times) in REPEATED {
        let stages = (0..*times)
            .map(|k| {
                let f = k as f64 / (*times - 1).max(1) as f64;
                (
                    f,
                    user(format!("Just so you know, my {subject} is {value}.")),
                    some(value),
                )
            })
            .collect();
        add(plain(Scenario::Repeated, subject, &[value], false), stages);
    }
    for ((subject, value), (set, forget)) in RETRACTED.iter().zip([(0.15, 0.7), (0.4, 0.95)]) {
        add(
            plain(Scenario::Retracted, subject, &[value], true),
            vec![
                (
                    set,
                    user(format!("By the way, my {subject} is {value}.")),
                    some(value),
                ),
                (
                    forget,
                    user(format!("Please forget that my {subject} is {value}.")),
                    None,
                ),
            ],
        );
    }
    for k in 0..fillers {
        let subject = format!("storage box {} label", k + 1);
        let value = format!("L{}x", k + 1);
        let f = k as f64 / fillers.max(1) as f64;
        let text = format!("Noting it here: my {subject} is {value}.");
        add(
            plain(Scenario::Filler, &subject, &[&value], false),
            vec![(f, user(text), Some(value.clone()))],
        );
    }
    // (e) and (i): the user's home and the sister's, neither taking the
    // other's cities.
    add(
        Subject {
            not_about: vec!["marisol".into(), "sister".into()],
            foreign: vec!["Valencia".into(), "Bilbao".into()],
            ..named(
                Scenario::UnmarkedChange,
                "home city",
                ("user", "home city"),
                HOME_WORDS,
                &["Tallinn", "Ghent"],
            )
        },
        vec![
            (0.1, user("I live in Tallinn."), some("Tallinn")),
            (0.5, user("We're in Ghent these days."), some("Ghent")),
        ],
    );
    add(
        Subject {
            // Her name makes a line hers, not her cities: "The user lives
            // in Bilbao" is a wrong line about the user.
            about: vec!["marisol".into(), "sister".into()],
            foreign: vec!["Tallinn".into(), "Ghent".into()],
            ..named(
                Scenario::AnotherPerson,
                "sister Marisol's home city",
                ("Marisol", "home city"),
                &["marisol"],
                &["Valencia", "Bilbao"],
            )
        },
        vec![
            (
                0.2,
                user("My sister Marisol lives in Valencia."),
                some("Valencia"),
            ),
            (
                0.7,
                user("Marisol moved to Bilbao last month."),
                some("Bilbao"),
            ),
        ],
    );
    add(
        Subject {
            // Lyon, corrected to Nantes, corrected back: Lyon is current.
            values: vec!["Lyon".into(), "Nantes".into(), "Lyon".into()],
            ..named(
                Scenario::CorrectedTwice,
                "cousin's wedding",
                ("user", "cousin's wedding"),
                &["wedding"],
                &["Lyon", "Nantes"],
            )
        },
        vec![
            (0.25, user("My cousin's wedding is in Lyon."), some("Lyon")),
            (
                0.55,
                user("Sorry, I got that wrong: the wedding is in Nantes."),
                some("Nantes"),
            ),
            (
                0.85,
                user("No wait, the wedding is in Lyon after all."),
                some("Lyon"),
            ),
        ],
    );
    add(
        Subject {
            retracted: true,
            ..named(
                Scenario::RewordedRetraction,
                "pet iguana",
                ("user", "pet iguana"),
                &["iguana"],
                &["Zorba"],
            )
        },
        vec![
            (
                0.3,
                user("I have a pet iguana called Zorba."),
                some("Zorba"),
            ),
            (
                0.75,
                user("Scratch what I told you about the iguana, that isn't true."),
                None,
            ),
        ],
    );
    let proposal = vec![
        (
            Role::User,
            "Flights with my usual airline keep getting cancelled.".to_string(),
        ),
        (
            Role::Assistant,
            "Shall I switch your preferred airline to KLM?".to_string(),
        ),
        (Role::User, "Yes, do that.".to_string()),
    ];
    add(
        named(
            Scenario::ConfirmedProposal,
            "preferred airline",
            ("user", "preferred airline"),
            &["airline"],
            &["Lufthansa", "KLM"],
        ),
        vec![
            (
                0.35,
                user("My preferred airline is Lufthansa."),
                some("Lufthansa"),
            ),
            (0.8, proposal, some("KLM")),
        ],
    );
    add(
        named(
            Scenario::Chinese,
            "最喜欢的颜色",
            ("user", "最喜欢的颜色"),
            &["颜色", "colour", "color"],
            &["琥珀色", "靛青色"],
        ),
        vec![
            (0.4, user("我最喜欢的颜色是琥珀色。"), some("琥珀色")),
            (0.9, user("其实我现在最喜欢靛青色了。"), some("靛青色")),
        ],
    );
    add(
        Subject {
            retracted: true,
            ..named(
                Scenario::Chinese,
                "车位号码",
                ("user", "车位号码"),
                &["车位", "parking"],
                &["B7"],
            )
        },
        vec![
            (0.45, user("我的车位号码是B7。"), some("B7")),
            (0.95, user("请忘掉我的车位号码是B7。"), None),
        ],
    );
    said.sort_by_key(|(session, n, _)| (*session, *n));
    Plan {
        subjects,
        statements: said.into_iter().map(|(_, _, s)| s).collect(),
    }
}

/// What a message of a replay is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A turn of the benchmark conversation.
    Real,
    /// A message of the scripted exchange [`Plan::statements`]`[i]`.
    Scripted(usize),
    /// The suite's own acknowledgement or closing message.
    Eval,
}

/// One session of the replay: its key, its day and its messages.
#[derive(Debug, Clone)]
pub struct ReplaySession {
    /// The session key.
    pub key: String,
    /// When it ends.
    pub end: DateTime<Utc>,
    /// Its messages: the real turns with the scripted exchanges spread
    /// among them, and a closing user message (consolidation stops before
    /// the last user turn).
    pub messages: Vec<Message>,
    /// What each message is.
    pub origins: Vec<Origin>,
}

fn timestamp(m: &Message) -> Option<DateTime<Utc>> {
    let t = m.timestamp.as_deref()?;
    DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(t.get(..10)?, "%Y-%m-%d")
                .ok()?
                .and_hms_opt(12, 0, 0)
                .map(|d| d.and_utc())
        })
}

/// `extra` spread evenly among `real`: extra item k goes after real item
/// (k + 1) * n / (m + 1) (those left over at the end).
pub fn spread<T: Clone>(real: &[T], extra: &[Vec<T>]) -> Vec<T> {
    let mut out = Vec::new();
    let mut next = 0;
    for (t, r) in real.iter().enumerate() {
        out.push(r.clone());
        while next < extra.len() && (next + 1) * real.len() / (extra.len() + 1) <= t + 1 {
            out.extend(extra[next].iter().cloned());
            next += 1;
        }
    }
    for e in &extra[next.min(extra.len())..] {
        out.extend(e.iter().cloned());
    }
    out
}

/// The messages of one scripted exchange, with the acknowledgement.
pub fn exchange(turns: &[(Role, String)]) -> Vec<Message> {
    let mut out: Vec<Message> = turns
        .iter()
        .map(|(r, t)| Message::new(*r, t.clone()))
        .collect();
    if turns.last().is_some_and(|(r, _)| *r == Role::User) {
        out.push(Message::assistant("Noted."));
    }
    out
}

/// The sessions of `conv` with `plan`'s exchanges interleaved.
pub fn interleave(conv: &Conversation, plan: &Plan, limit: Option<usize>) -> Vec<ReplaySession> {
    let base = DateTime::parse_from_rfc3339("2023-01-01T12:00:00Z")
        .map(|d| d.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    let mut last = base;
    let sessions = conv.sessions.iter().take(limit.unwrap_or(usize::MAX));
    sessions
        .enumerate()
        .map(|(i, s)| {
            let real = session_messages(conv, s);
            let start = real
                .first()
                .and_then(timestamp)
                .filter(|t| *t > last)
                .unwrap_or(last + Duration::days(1));
            last = start;
            let real: Vec<(Message, Origin)> =
                real.into_iter().map(|m| (m, Origin::Real)).collect();
            let extra: Vec<Vec<(Message, Origin)>> = plan
                .statements
                .iter()
                .enumerate()
                .filter(|(_, p)| p.session == i)
                .map(|(k, p)| {
                    exchange(&p.turns)
                        .into_iter()
                        .enumerate()
                        .map(|(j, m)| {
                            (
                                m,
                                if j < p.turns.len() {
                                    Origin::Scripted(k)
                                } else {
                                    Origin::Eval
                                },
                            )
                        })
                        .collect()
                })
                .collect();
            let mut all = spread(&real, &extra);
            all.push((Message::user("Talk to you later."), Origin::Eval));
            let (mut messages, origins): (Vec<Message>, Vec<Origin>) = all.into_iter().unzip();
            for (k, m) in messages.iter_mut().enumerate() {
                m.timestamp = Some((start + Duration::minutes(k as i64)).to_rfc3339());
            }
            let end = start + Duration::minutes(messages.len() as i64 + 1);
            last = end;
            ReplaySession {
                key: format!("eval:{}-{}", conv.conv_id, s.session_id),
                end,
                messages,
                origins,
            }
        })
        .collect()
}

/// A chat model that counts the calls and tokens of another (the eval's
/// "model calls and tokens per 100 turns").
pub struct Counting {
    inner: Arc<dyn ChatModel>,
    calls: AtomicUsize,
    input: AtomicU64,
    output: AtomicU64,
}

impl Counting {
    /// Counts what `inner` is asked and answers.
    pub fn new(inner: Arc<dyn ChatModel>) -> Self {
        Counting {
            inner,
            calls: AtomicUsize::new(0),
            input: AtomicU64::new(0),
            output: AtomicU64::new(0),
        }
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

impl ChatModel for Counting {
    fn complete(
        &self,
        req: ChatRequest,
    ) -> BoxFuture<'_, std::result::Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let resp = self.inner.complete(req).await?;
            self.input
                .fetch_add(u64::from(resp.usage.input_tokens), Ordering::Relaxed);
            self.output
                .fetch_add(u64::from(resp.usage.output_tokens), Ordering::Relaxed);
            Ok(resp)
        })
    }

    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
}

/// The scores of one profile over the conversations run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProfileReport {
    /// The `[memory] profile`.
    pub profile: String,
    /// How it writes: `facts`, `memory_md`, `flush` (to the daily logs),
    /// `memory_md+facts flush` (the flush through the fact-level
    /// decisions), `memory_md+flush` or `none`.
    pub writes: String,
    /// Messages replayed.
    pub turns: usize,
    /// Subjects whose value must be current (every kind but the
    /// retractions).
    pub subjects: usize,
    /// Of those, the ones memory holds with the current value and no other.
    pub current_correct: usize,
    /// `current_correct / subjects`.
    pub current_value_accuracy: f64,
    /// Subjects of scenarios (a) and (b) alone.
    pub changed_and_repeated: usize,
    /// Of those, the ones held right.
    pub changed_and_repeated_correct: usize,
    /// Retracted subjects ((c), (g) and the Chinese one of (j)).
    pub retracted: usize,
    /// Of those, the ones no memory line holds any more.
    pub retractions_honoured: usize,
    /// Memory lines beyond the first that hold a subject's current value.
    pub duplicates: usize,
    /// Subjects for which memory holds more than one value (its own, or
    /// another person's).
    pub contradictions: usize,
    /// Facts ended while still true, or by a fact about something else
    /// (see [`crate::memory_checks`]).
    pub wrong_supersessions: usize,
    /// Memory lines no message supports (see [`crate::memory_checks`]).
    pub invented_facts: usize,
    /// Each scenario kind's score.
    pub kinds: Vec<KindScore>,
    /// Old values of the subjects that changed (not retracted).
    pub old_values: usize,
    /// Of those, the ones still in history (or in memory).
    pub old_values_in_history: usize,
    /// Bytes of the memory files (MEMORY.md, memory/facts.md, daily logs).
    pub memory_bytes: u64,
    /// Lines scored as memory (see the module docs).
    pub memory_lines: usize,
    /// Lines of MEMORY.md (the largest of the conversations).
    pub memory_md_lines: usize,
    /// Bytes of MEMORY.md (the largest).
    pub memory_md_bytes: u64,
    /// MEMORY.md within the `[engine]` caps in every conversation.
    pub within_caps: bool,
    /// Model calls.
    pub model_calls: usize,
    /// Prompt and output tokens the provider reported.
    pub tokens: u64,
    /// Model calls per 100 messages.
    pub calls_per_100_turns: f64,
    /// Tokens per 100 messages.
    pub tokens_per_100_turns: f64,
    /// Rounds that failed (the model's answer was refused or the call
    /// failed); their messages stay in the session log.
    pub failed_rounds: usize,
    /// Operations of the model refused by the checks (facts mode).
    pub refused_operations: usize,
    /// What the dream passes did (with `dream`): duplicates merged.
    pub dream_merged: usize,
    /// Contradictions resolved by supersession.
    pub dream_superseded: usize,
    /// Facts added from old daily logs.
    pub dream_added: usize,
    /// Daily logs folded.
    pub dream_folded_logs: usize,
    /// MEMORY.md lines moved into the facts file.
    pub dream_moved: usize,
    /// Facts ended by a retraction the dream read.
    pub dream_retracted: usize,
    /// Retractions that named no current fact.
    pub dream_retractions_unmatched: usize,
    /// Dreams refused by the loss guard (or failed).
    pub dream_refused: usize,
    /// The first few errors and refusals, to read.
    pub warnings: Vec<String>,
    /// The first few wrong supersessions and invented facts, to read.
    pub findings: Vec<String>,
    /// Seconds the profile took.
    pub seconds: f64,
}

/// One scenario kind's score: its subjects held right (the current value
/// and no other; for a retracted one, no line holding it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindScore {
    /// The kind.
    pub kind: Scenario,
    /// Its subjects held right.
    pub correct: usize,
    /// Its subjects.
    pub subjects: usize,
}

/// The whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WritePathReport {
    /// The benchmark file's dataset name.
    pub dataset: String,
    /// The chat model's name.
    pub model: String,
    /// Conversations replayed.
    pub conversations: usize,
    /// Sessions replayed (each conversation).
    pub sessions: usize,
    /// Messages per profile.
    pub turns: usize,
    /// Scripted exchanges.
    pub statements: usize,
    /// The caps of scenario (d).
    pub cap_lines: usize,
    /// The caps of scenario (d).
    pub cap_bytes: usize,
    /// Scored after a dream pass.
    pub dream: bool,
    /// One per profile.
    pub profiles: Vec<ProfileReport>,
}

/// Runs the suite with `model` (see the module docs); `progress` hears
/// each profile and conversation as it starts.
pub async fn run_write_path(
    opts: &WritePathOptions,
    model: Arc<dyn ChatModel>,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<WritePathReport> {
    let ds = Dataset::load(&opts.file)?;
    check_keep(opts.keep.as_deref())?;
    for p in &opts.profiles {
        if !PROFILES.contains(&p.as_str()) {
            return Err(EvalError::Options(format!(
                "unknown profile {p:?}: use {}",
                PROFILES.join(", ")
            )));
        }
    }
    let convs: Vec<&Conversation> = ds
        .conversations
        .iter()
        .filter(|c| !c.sessions.is_empty())
        .take(opts.limit_conversations.unwrap_or(usize::MAX))
        .collect();
    let mut report = WritePathReport {
        dataset: ds.dataset.clone().unwrap_or_default(),
        model: format!("{} {}", model.info().provider, model.info().model),
        conversations: convs.len(),
        cap_lines: opts.cap_lines,
        cap_bytes: opts.cap_bytes,
        dream: opts.dream,
        ..Default::default()
    };
    let replays: Vec<(Plan, Vec<ReplaySession>)> = convs
        .iter()
        .map(|c| {
            let n = c
                .sessions
                .len()
                .min(opts.limit_sessions.unwrap_or(usize::MAX));
            let p = plan(n, opts.fillers);
            let s = interleave(c, &p, opts.limit_sessions);
            (p, s)
        })
        .collect();
    report.sessions = replays.iter().map(|(_, s)| s.len()).sum();
    report.statements = replays.iter().map(|(p, _)| p.statements.len()).sum();
    report.turns = replays
        .iter()
        .flat_map(|(_, s)| s.iter().map(|s| s.messages.len()))
        .sum();
    for profile in &opts.profiles {
        let started = Instant::now();
        let counting = Arc::new(Counting::new(model.clone()));
        let mut r = ProfileReport {
            profile: profile.clone(),
            within_caps: true,
            kinds: Scenario::ALL
                .iter()
                .map(|k| KindScore {
                    kind: *k,
                    correct: 0,
                    subjects: 0,
                })
                .collect(),
            ..Default::default()
        };
        for ((plan, sessions), conv) in replays.iter().zip(&convs) {
            progress(&format!("{profile} {}", conv.conv_id));
            let replay = Replay {
                conv_id: &conv.conv_id,
                plan,
                sessions,
                user_names: conv.speakers.iter().take(1).cloned().collect(),
            };
            replay_profile(opts, profile, &replay, counting.clone(), &mut r).await?;
        }
        r.turns = report.turns;
        r.model_calls = counting.calls();
        r.tokens = counting.input.load(Ordering::Relaxed) + counting.output.load(Ordering::Relaxed);
        let per = |x: f64| {
            if r.turns == 0 {
                0.0
            } else {
                x * 100.0 / r.turns as f64
            }
        };
        r.calls_per_100_turns = per(r.model_calls as f64);
        r.tokens_per_100_turns = per(r.tokens as f64);
        r.current_value_accuracy = ratio(r.current_correct, r.subjects);
        r.seconds = started.elapsed().as_secs_f64();
        report.profiles.push(r);
    }
    Ok(report)
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// One conversation as replayed: its plan, its sessions, and the names
/// its user goes by.
pub struct Replay<'a> {
    /// The conversation's id in the benchmark file.
    pub conv_id: &'a str,
    /// The scripted part.
    pub plan: &'a Plan,
    /// The sessions with the exchanges interleaved.
    pub sessions: &'a [ReplaySession],
    /// The user's names (the first speaker of the benchmark file).
    pub user_names: Vec<String>,
}

async fn replay_profile(
    opts: &WritePathOptions,
    profile: &str,
    replay: &Replay<'_>,
    model: Arc<Counting>,
    r: &mut ProfileReport,
) -> Result<()> {
    let sessions = replay.sessions;
    let (_tmp, ws) = scratch(opts.keep.as_deref(), replay.conv_id, profile)?;
    let config = Config::parse(&format!(
        "[memory]\nprofile = \"{profile}\"\ntimezone = \"UTC\"\n\n[engine]\nmemory_max_lines = {}\nmemory_max_bytes = {}\nconsolidation_max_failures = 1\n",
        opts.cap_lines, opts.cap_bytes
    ))
    .map_err(EvalError::Options)?;
    let clock = Arc::new(AtomicI64::new(0));
    let c = clock.clone();
    let engine = mnemo_engine::Engine::new(&ws, &config, model)
        .map_err(|e| EvalError::Options(e.to_string()))?
        .with_clock(Arc::new(move || {
            DateTime::from_timestamp(c.load(Ordering::Relaxed), 0).unwrap_or_default()
        }));
    let s = engine.settings().clone();
    let flush = if s.flush_mode == "facts" {
        "facts flush"
    } else {
        "flush"
    };
    r.writes = match (s.consolidation_enabled, s.flush_enabled) {
        (true, true) => format!("{}+{flush}", s.consolidation_mode),
        (true, false) => s.consolidation_mode.clone(),
        (false, true) => flush.into(),
        (false, false) => "none".into(),
    };
    if opts.dream {
        r.writes.push_str("+dream");
    }
    let warn = |r: &mut ProfileReport, w: String| {
        if r.warnings.len() < 5 {
            r.warnings.push(w);
        }
    };
    for session in sessions {
        clock.store(session.end.timestamp(), Ordering::Relaxed);
        let mut log = engine
            .sessions()
            .open(&session.key)
            .map_err(EvalError::Store)?;
        log.append(&session.messages).map_err(EvalError::Store)?;
        drop(log);
        if s.flush_enabled {
            match engine.flush(&session.key).await {
                Ok(events) => {
                    for e in events {
                        match e {
                            mnemo_engine::EngineEvent::FlushFailed { error } => {
                                r.failed_rounds += 1;
                                warn(r, format!("{}: flush: {error}", session.key));
                            }
                            mnemo_engine::EngineEvent::Flushed(f) => {
                                if let Some(round) = f.facts {
                                    r.refused_operations += round.refused.len();
                                    for x in round.refused {
                                        warn(r, format!("{}: flush: refused {x}", session.key));
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Err(e) => {
                    r.failed_rounds += 1;
                    warn(r, format!("{}: flush: {e}", session.key));
                }
            }
        }
        if s.consolidation_enabled {
            match engine.consolidate_now(&session.key).await {
                Ok(events) => {
                    for e in events {
                        match e {
                            mnemo_engine::EngineEvent::Consolidated(c) => {
                                if c.raw {
                                    r.failed_rounds += 1;
                                }
                                if let Some(f) = c.facts {
                                    r.refused_operations += f.refused.len();
                                    for x in f.refused {
                                        warn(r, format!("{}: refused {x}", session.key));
                                    }
                                }
                            }
                            mnemo_engine::EngineEvent::ConsolidationFailed { error, .. } => {
                                warn(r, format!("{}: {error}", session.key));
                            }
                            _ => {}
                        }
                    }
                }
                Err(e) => {
                    r.failed_rounds += 1;
                    warn(r, format!("{}: {e}", session.key));
                }
            }
        }
    }
    if opts.dream {
        match engine.dream() {
            Ok(d) => {
                r.dream_merged += d.merged.len();
                r.dream_superseded += d.superseded.len();
                r.dream_added += d.added.len();
                r.dream_folded_logs += d.folded_logs.len();
                r.dream_moved += d.moved.len();
                r.dream_retracted += d.retracted.len();
                r.dream_retractions_unmatched += d.retractions_unmatched.len();
            }
            Err(e) => {
                r.dream_refused += 1;
                warn(r, format!("dream: {e}"));
            }
        }
    }
    score(&ws, replay, opts, r)
}

/// Words of a line as subjects and values are matched: lower case, each
/// CJK character a word of its own.
pub fn words(text: &str) -> Vec<String> {
    mnemo_engine::adjudicate::words(text)
}

/// True when `line` (its [`words`]) contains the words of `phrase`, in
/// order and next to each other.
pub fn holds(line: &[String], phrase: &str) -> bool {
    let p = words(phrase);
    !p.is_empty() && line.windows(p.len()).any(|w| w == p.as_slice())
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// What a workspace's memory holds, as the suite scores it.
pub struct Scored {
    /// Every memory line (see the module docs), as written.
    pub memory: Vec<String>,
    /// History: HISTORY.md's lines and the whole facts file.
    pub history: String,
    /// The facts file.
    pub facts: mnemo_store::memory::facts::FactsFile,
    /// The audit log's records.
    pub audit: Vec<mnemo_store::memory::facts::AuditRecord>,
    /// Bytes of MEMORY.md, the facts file and the daily logs.
    pub bytes: u64,
    /// MEMORY.md as it is.
    pub memory_md: String,
}

/// Reads what the suite scores from the workspace at `root`.
pub fn read_memory(root: &std::path::Path) -> Scored {
    let md = read(&root.join("MEMORY.md"));
    let facts_text = read(&root.join(mnemo_store::memory::facts::FACTS_FILE));
    let facts = mnemo_store::memory::facts::FactsFile::parse(&facts_text);
    let mut memory: Vec<String> = md
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(str::to_string)
        .collect();
    memory.extend(facts.current().map(|f| f.text.clone()));
    let mut bytes = (md.len() + facts_text.len()) as u64;
    let mut history = read(&root.join("memory/HISTORY.md"));
    history.push_str(&facts_text);
    if let Ok(entries) = std::fs::read_dir(root.join("memory")) {
        let mut logs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_stem()
                    .and_then(|s| s.to_str())
                    .is_some_and(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok())
            })
            .collect();
        logs.sort();
        for p in logs {
            let text = read(&p);
            bytes += text.len() as u64;
            // `- [10:00] item`: the time is the log's, not the item's.
            memory.extend(
                text.lines()
                    .filter_map(|l| l.strip_prefix("- "))
                    .map(|item| {
                        let stamped = item.strip_prefix('[').and_then(|r| r.split_once("] "));
                        match stamped {
                            Some((time, rest)) if time.len() == 5 && time.as_bytes()[2] == b':' => {
                                rest.to_string()
                            }
                            _ => item.to_string(),
                        }
                    }),
            );
        }
    }
    let audit = mnemo_store::memory::facts::parse_audit(&read(
        &root.join(mnemo_store::memory::facts::AUDIT_FILE),
    ));
    Scored {
        memory,
        history,
        facts,
        audit,
        bytes,
        memory_md: md,
    }
}

fn score(
    ws: &Workspace,
    replay: &Replay<'_>,
    opts: &WritePathOptions,
    r: &mut ProfileReport,
) -> Result<()> {
    let scored = read_memory(ws.root());
    let md = &scored.memory_md;
    let lines: Vec<Vec<String>> = scored.memory.iter().map(|l| words(l)).collect();
    let history_words: Vec<Vec<String>> = scored.history.lines().map(words).collect();
    r.memory_bytes += scored.bytes;
    r.memory_lines += scored.memory.len();
    let md_lines = md.lines().count();
    r.memory_md_lines = r.memory_md_lines.max(md_lines);
    r.memory_md_bytes = r.memory_md_bytes.max(md.len() as u64);
    if md_lines > opts.cap_lines || md.len() > opts.cap_bytes {
        r.within_caps = false;
    }
    let (mut ab, mut ab_ok) = (0usize, 0usize);
    for s in &replay.plan.subjects {
        let mine: Vec<&Vec<String>> = lines.iter().filter(|l| s.is_about(l)).collect();
        let held: HashSet<&str> = s
            .values
            .iter()
            .chain(&s.foreign)
            .map(String::as_str)
            .filter(|v| mine.iter().any(|l| holds(l, v)))
            .collect();
        if held.len() > 1 {
            r.contradictions += 1;
        }
        let ok = match s.current() {
            None => {
                r.retracted += 1;
                let honoured = held.is_empty();
                r.retractions_honoured += usize::from(honoured);
                honoured
            }
            Some(v) => {
                r.subjects += 1;
                let copies = mine.iter().filter(|l| holds(l, v)).count();
                r.duplicates += copies.saturating_sub(1);
                let ok = copies > 0 && held.len() == 1;
                r.current_correct += usize::from(ok);
                if matches!(s.scenario, Scenario::Changed | Scenario::Repeated) {
                    ab += 1;
                    ab_ok += usize::from(ok);
                }
                ok
            }
        };
        if let Some(k) = r.kinds.iter_mut().find(|k| k.kind == s.scenario) {
            k.subjects += 1;
            k.correct += usize::from(ok);
        }
        for old in s.old_values() {
            r.old_values += 1;
            let kept = history_words
                .iter()
                .chain(lines.iter())
                .any(|l| s.is_about(l) && holds(l, old));
            r.old_values_in_history += usize::from(kept);
        }
    }
    r.changed_and_repeated += ab;
    r.changed_and_repeated_correct += ab_ok;
    let wrong = crate::memory_checks::wrong_supersessions(&scored.facts, &scored.audit, replay);
    let labels: std::collections::HashMap<String, String> = scored
        .facts
        .current()
        .filter_map(|f| Some((f.text.clone(), f.attribute.clone()?)))
        .collect();
    let invented = crate::memory_checks::invented_facts(&scored.memory, &labels, replay.sessions);
    r.wrong_supersessions += wrong.len();
    r.invented_facts += invented.len();
    for f in wrong
        .iter()
        .map(|w| format!("wrong supersession: {w}"))
        .chain(invented.iter().map(|l| format!("invented: {l}")))
    {
        if r.findings.len() < 8 {
            r.findings.push(f);
        }
    }
    Ok(())
}

/// The report as Markdown: one row per profile, each kind's score per
/// profile, then the warnings and the first wrong supersessions and
/// invented facts of each.
pub fn render_text(report: &WritePathReport) -> String {
    let mut out = format!(
        "write path: {} ({} conversation(s), {} sessions, {} messages per profile, {} scripted exchanges), model {}, MEMORY.md caps {} lines / {} bytes{}\n\n",
        if report.dataset.is_empty() { "benchmark" } else { &report.dataset },
        report.conversations,
        report.sessions,
        report.turns,
        report.statements,
        report.model,
        report.cap_lines,
        report.cap_bytes,
        if report.dream {
            ", scored after a dream pass"
        } else {
            ""
        }
    );
    out.push_str("| profile | writes | current value | (a)+(b) | retractions | duplicates | contradictions | wrong supersessions | invented facts | old values in history | memory bytes / lines | MEMORY.md lines | within caps | calls / 100 turns | tokens / 100 turns | failed rounds | refused ops |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for p in &report.profiles {
        out.push_str(&format!(
            "| {} | {} | {:.3} ({}/{}) | {}/{} | {}/{} | {} | {} | {} | {} | {}/{} | {} / {} | {} | {} | {:.1} | {:.0} | {} | {} |\n",
            p.profile,
            p.writes,
            p.current_value_accuracy,
            p.current_correct,
            p.subjects,
            p.changed_and_repeated_correct,
            p.changed_and_repeated,
            p.retractions_honoured,
            p.retracted,
            p.duplicates,
            p.contradictions,
            p.wrong_supersessions,
            p.invented_facts,
            p.old_values_in_history,
            p.old_values,
            p.memory_bytes,
            p.memory_lines,
            p.memory_md_lines,
            if p.within_caps { "yes" } else { "no" },
            p.calls_per_100_turns,
            p.tokens_per_100_turns,
            p.failed_rounds,
            p.refused_operations
        ));
    }
    out.push_str("\nEach kind's subjects held right:\n\n| profile |");
    for k in Scenario::ALL {
        out.push_str(&format!(" {} |", k.title()));
    }
    out.push_str(&format!("\n|---|{}\n", "---|".repeat(Scenario::ALL.len())));
    for p in &report.profiles {
        out.push_str(&format!("| {} |", p.profile));
        for k in &p.kinds {
            out.push_str(&format!(" {}/{} |", k.correct, k.subjects));
        }
        out.push('\n');
    }
    if report.dream {
        out.push('\n');
        for p in &report.profiles {
            out.push_str(&format!(
                "dream ({}): {} merged, {} superseded, {} retracted ({} retraction(s) named nothing current), {} added from {} daily log(s), {} moved from MEMORY.md, {} refused\n",
                p.profile,
                p.dream_merged,
                p.dream_superseded,
                p.dream_retracted,
                p.dream_retractions_unmatched,
                p.dream_added,
                p.dream_folded_logs,
                p.dream_moved,
                p.dream_refused
            ));
        }
    }
    for p in &report.profiles {
        for w in &p.warnings {
            out.push_str(&format!("\nwarning ({}): {w}", p.profile));
        }
        for f in &p.findings {
            let (what, text) = f.split_once(": ").unwrap_or(("finding", f));
            out.push_str(&format!("\n{what} ({}): {text}", p.profile));
        }
    }
    if report
        .profiles
        .iter()
        .any(|p| !p.warnings.is_empty() || !p.findings.is_empty())
    {
        out.push('\n');
    }
    out
}

/// The report as one JSON object.
pub fn render_json(report: &WritePathReport) -> String {
    serde_json::to_string_pretty(report).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule_model::{conversation_statements, Kind};

    #[test]
    fn each_stage_of_a_subject_is_in_a_later_session() {
        let p = plan(6, 3);
        // (a) 7, (b) 8, (c) 4, (d) 3; (e) 2, (f) 3, (g) 2, (h) 2, (i) 2, (j) 4.
        assert_eq!(p.statements.len(), 7 + 8 + 4 + 3 + 2 + 3 + 2 + 2 + 2 + 4);
        for (i, s) in p
            .subjects
            .iter()
            .enumerate()
            .filter(|(_, s)| s.scenario != Scenario::Filler)
        {
            let sessions: Vec<usize> = p
                .statements
                .iter()
                .filter(|x| x.subject == i)
                .map(|x| x.session)
                .collect();
            assert!(sessions.len() >= 2, "{}: {sessions:?}", s.subject);
            assert!(
                sessions.windows(2).all(|w| w[0] < w[1]),
                "{}: {sessions:?}",
                s.subject
            );
        }
        for k in Scenario::ALL {
            assert!(p.subjects.iter().any(|s| s.scenario == k), "{k:?}");
        }
        let retracted: Vec<&str> = p
            .subjects
            .iter()
            .filter(|s| s.current().is_none())
            .map(|s| s.subject.as_str())
            .collect();
        assert_eq!(
            retracted,
            [
                "spare key spot",
                "hotel room number",
                "pet iguana",
                "车位号码"
            ]
        );
    }

    #[test]
    fn every_exchange_is_one_the_rule_based_model_reads_right() {
        let p = plan(6, 3);
        for x in &p.statements {
            let found = conversation_statements(&x.turns);
            assert_eq!(found.len(), 1, "{:?}: {found:?}", x.turns);
            let s = &found[0];
            let subject = &p.subjects[x.subject];
            assert_eq!(s.kind == Kind::Retracts, x.value.is_none(), "{:?}", x.turns);
            if let Some(v) = &x.value {
                assert_eq!(s.value.as_ref(), Some(v), "{:?}", x.turns);
                let line = words(&s.fact);
                assert!(
                    subject.is_about(&line),
                    "{} is not about {}",
                    s.fact,
                    subject.subject
                );
                assert!(holds(&line, v), "{}", s.fact);
            }
            assert_eq!(
                crate::rule_model::key(&subject.who, &subject.attribute),
                s.key(),
                "{:?}",
                x.turns
            );
        }
    }

    #[test]
    fn no_scripted_value_is_in_a_prompt_of_mnemo() {
        use mnemo_engine::templates as t;
        let prompts = [
            t::CONSOLIDATION_PROMPT,
            t::CONSOLIDATION_USER,
            t::FACTS_EXTRACT_PROMPT,
            t::FACTS_EXTRACT_USER,
            t::FACTS_JUDGE_REPLACES,
            t::FACTS_JUDGE_RETRACTS,
            t::FLUSH_PROMPT,
            t::FLUSH_USER,
        ]
        .map(words);
        for s in &plan(6, 3).subjects {
            let name = Some(&s.who).filter(|w| *w != "user");
            for v in s.values.iter().chain(&s.foreign).chain(name) {
                assert!(
                    !prompts.iter().any(|p| holds(p, v)),
                    "{v:?} ({}) is in a prompt",
                    s.subject
                );
            }
        }
    }

    #[test]
    fn another_persons_value_is_not_the_users() {
        let p = plan(6, 0);
        let find = |k: Scenario| p.subjects.iter().find(|s| s.scenario == k).unwrap();
        let (home, sister) = (
            find(Scenario::UnmarkedChange),
            find(Scenario::AnotherPerson),
        );
        let hers = words("The user's sister Marisol lives in Bilbao.");
        assert!(sister.is_about(&hers) && !home.is_about(&hers));
        // The user given the sister's city: about the user's home, holding
        // a value no line about it may hold.
        let wrong = words("The user lives in Bilbao.");
        assert!(home.is_about(&wrong) && home.foreign.iter().any(|v| holds(&wrong, v)));
        assert!(!sister.is_about(&wrong));
        // Chinese values are matched as runs of characters.
        let colour = find(Scenario::Chinese);
        let line = words("用户最喜欢的颜色是靛青色。");
        assert!(colour.is_about(&line) && holds(&line, "靛青色") && !holds(&line, "琥珀色"));
    }

    #[test]
    fn the_text_report_has_the_new_columns_and_each_kind() {
        let mut p = ProfileReport {
            profile: "mem0".into(),
            writes: "facts".into(),
            subjects: 14,
            current_correct: 13,
            current_value_accuracy: 13.0 / 14.0,
            wrong_supersessions: 2,
            invented_facts: 3,
            within_caps: true,
            kinds: Scenario::ALL
                .iter()
                .map(|k| KindScore {
                    kind: *k,
                    correct: 1,
                    subjects: 2,
                })
                .collect(),
            findings: vec!["invented: The user lives in Lisbon.".into()],
            ..Default::default()
        };
        p.kinds[0].correct = 2;
        let text = render_text(&WritePathReport {
            profiles: vec![p],
            ..Default::default()
        });
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[2].contains(
                "| contradictions | wrong supersessions | invented facts | old values in history |"
            ),
            "{text}"
        );
        assert!(
            lines[4].starts_with("| mem0 | facts | 0.929 (13/14) | 0/0 | 0/0 | 0 | 0 | 2 | 3 |"),
            "{text}"
        );
        assert!(
            lines.contains(&"| mem0 | 2/2 | 1/2 | 1/2 | 1/2 | 1/2 | 1/2 | 1/2 | 1/2 | 1/2 | 1/2 |"),
            "{text}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("| profile | (a) changed | (b) repeated |")),
            "{text}"
        );
        assert!(
            lines.contains(&"invented (mem0): The user lives in Lisbon."),
            "{text}"
        );
    }

    #[test]
    fn interleaving_marks_each_message() {
        let conv: Conversation = serde_json::from_value(serde_json::json!({
            "conv_id": "c", "speakers": ["Ann", "Bob"],
            "sessions": [
                {"session_id": "s1", "date_time": "2023-05-01", "turns": [
                    {"turn_id": "1", "speaker": "Ann", "text": "Morning!"},
                    {"turn_id": "2", "speaker": "Bob", "text": "Hi Ann."}]},
                {"session_id": "s2", "date_time": "2023-05-02", "turns": [
                    {"turn_id": "3", "speaker": "Ann", "text": "Back again."}]}]
        }))
        .unwrap();
        let p = plan(2, 0);
        let sessions = interleave(&conv, &p, None);
        assert_eq!(sessions.len(), 2);
        for s in &sessions {
            assert_eq!(s.messages.len(), s.origins.len());
            assert_eq!(s.origins.last(), Some(&Origin::Eval));
            assert_eq!(
                s.messages.last().map(Message::text).as_deref(),
                Some("Talk to you later.")
            );
        }
        let all: Vec<(&Message, Origin)> = sessions
            .iter()
            .flat_map(|s| s.messages.iter().zip(s.origins.iter().copied()))
            .collect();
        assert_eq!(all.iter().filter(|(_, o)| *o == Origin::Real).count(), 3);
        // Every exchange is there, in order, each of its messages marked.
        let said: Vec<String> = all
            .iter()
            .filter(|(_, o)| matches!(o, Origin::Scripted(_)))
            .map(|(m, _)| m.text())
            .collect();
        let script: Vec<String> = p
            .statements
            .iter()
            .flat_map(|x| x.turns.iter().map(|(_, t)| t.clone()))
            .collect();
        assert_eq!(said, script);
        // The assistant's proposal is the assistant's, the yes the user's.
        let at = all
            .iter()
            .position(|(m, _)| m.text() == "Shall I switch your preferred airline to KLM?")
            .unwrap();
        assert_eq!(all[at].0.role, Role::Assistant);
        assert_eq!(
            (all[at + 1].0.role, all[at + 1].0.text()),
            (Role::User, "Yes, do that.".to_string())
        );
    }
}
