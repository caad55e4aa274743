//! `mnemo eval write-path`: the write-path suite. It owns the scenarios,
//! their replay through the real consolidation pipeline of each `[memory]
//! profile`, and the scores.
//!
//! Scripted user statements with known ground truth are interleaved into
//! the real turns of a benchmark file's conversations (read at run time,
//! never copied), one statement and an acknowledgement at a time, spread
//! over the conversation's sessions:
//!
//! - (a) changed: a subject is stated, then changed in a later session
//!   (once or twice); the last value must be the current one and the old
//!   ones must stay in history;
//! - (b) repeated: the same fact stated in several sessions must end as one
//!   memory;
//! - (c) retracted: a fact stated, then "please forget that ..." later: no
//!   current memory may hold it;
//! - (d) long: the whole conversation plus `fillers` further distinct
//!   facts, with the `[engine]` MEMORY.md caps set to `cap_lines` /
//!   `cap_bytes`: the memory must stay within them.
//!
//! Every statement reads `... my SUBJECT is VALUE.` (see
//! [`crate::rule_model`], which answers such requests deterministically).
//! For each profile a fresh workspace is made with `[memory] profile`
//! set; every session of the conversation is written as its own session
//! log and, when it ends, the profile's write path runs as mnemo runs it:
//! the memory flush when the profile flushes (`Engine::flush`), then
//! consolidation when it consolidates (`Engine::consolidate_now`). A
//! profile that does neither (claude-code: memory is written by the
//! agent's own tool calls) writes nothing here. With `dream`, one dream
//! pass (`Engine::dream`, at the time the last session ends) runs after
//! the replay, and the scores are those of the memory it leaves.
//!
//! The memory scored is every line a later turn could take as true: the
//! lines of MEMORY.md, the current facts of `memory/facts.md` and the items
//! of the daily logs (append-only journals, searched as they are). History
//! is `memory/HISTORY.md` and the facts no longer true. A line is about a
//! subject when it contains the subject's words, and holds a value when it
//! contains the value as a word.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use mnemo_core::{Config, Message, Workspace};
use mnemo_llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelInfo};
use serde::Serialize;

use crate::dataset::{Conversation, Dataset};
use crate::error::{EvalError, Result};
use crate::replay::session_messages;

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
        }
    }
}

/// The scenario a subject belongs to.
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
}

/// One scripted subject and its ground truth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// Its scenario.
    pub scenario: Scenario,
    /// The subject's words, lower case (`gym locker number`).
    pub subject: String,
    /// The values stated, in order (the last is current unless retracted).
    pub values: Vec<String>,
}

impl Subject {
    /// The value that must be current, `None` when retracted.
    pub fn current(&self) -> Option<&str> {
        match self.scenario {
            Scenario::Retracted => None,
            _ => self.values.last().map(String::as_str),
        }
    }
}

/// One scripted statement: the session it goes into and what the user says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scripted {
    /// Index of the session (after the limits).
    pub session: usize,
    /// The user's message.
    pub text: String,
}

/// The scripted part of one conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The subjects and their truth.
    pub subjects: Vec<Subject>,
    /// The statements, in order.
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

/// The plan for a conversation of `sessions` sessions (see the module
/// docs); stages of one subject go into different sessions when there are
/// at least six.
pub fn plan(sessions: usize, fillers: usize) -> Plan {
    let at = |frac: f64| ((frac * sessions as f64) as usize).min(sessions.saturating_sub(1));
    let mut subjects = Vec::new();
    let mut statements: Vec<(usize, usize, String)> = Vec::new();
    let say = |session: usize, text: String, statements: &mut Vec<(usize, usize, String)>| {
        let n = statements.len();
        statements.push((session, n, text));
    };
    let changed_at: [&[f64]; 3] = [&[0.1, 0.5, 0.8], &[0.2, 0.6], &[0.3, 0.9]];
    for ((subject, values), fracs) in CHANGED.iter().zip(changed_at) {
        for (k, (v, f)) in values.iter().zip(fracs).enumerate() {
            let text = if k == 0 {
                format!("By the way, my {subject} is {v}.")
            } else {
                format!("Update: my {subject} is now {v}.")
            };
            say(at(*f), text, &mut statements);
        }
        subjects.push(Subject {
            scenario: Scenario::Changed,
            subject: subject.to_string(),
            values: values.iter().map(|v| v.to_string()).collect(),
        });
    }
    for (subject, value, times) in REPEATED {
        for k in 0..*times {
            let f = k as f64 / (*times - 1).max(1) as f64;
            say(
                at(f),
                format!("Just so you know, my {subject} is {value}."),
                &mut statements,
            );
        }
        subjects.push(Subject {
            scenario: Scenario::Repeated,
            subject: subject.to_string(),
            values: vec![value.to_string()],
        });
    }
    for ((subject, value), (set, forget)) in RETRACTED.iter().zip([(0.15, 0.7), (0.4, 0.95)]) {
        say(
            at(set),
            format!("By the way, my {subject} is {value}."),
            &mut statements,
        );
        say(
            at(forget),
            format!("Please forget that my {subject} is {value}."),
            &mut statements,
        );
        subjects.push(Subject {
            scenario: Scenario::Retracted,
            subject: subject.to_string(),
            values: vec![value.to_string()],
        });
    }
    for k in 0..fillers {
        let subject = format!("storage box {} label", k + 1);
        let value = format!("L{}x", k + 1);
        let f = k as f64 / fillers.max(1) as f64;
        say(
            at(f),
            format!("Noting it here: my {subject} is {value}."),
            &mut statements,
        );
        subjects.push(Subject {
            scenario: Scenario::Filler,
            subject,
            values: vec![value],
        });
    }
    statements.sort();
    Plan {
        subjects,
        statements: statements
            .into_iter()
            .map(|(session, _, text)| Scripted { session, text })
            .collect(),
    }
}

/// One session of the replay: its key, its day and its messages.
#[derive(Debug, Clone)]
pub struct ReplaySession {
    /// The session key.
    pub key: String,
    /// When it ends.
    pub end: DateTime<Utc>,
    /// Its messages: the real turns with the scripted statements spread
    /// among them, and a closing user message (consolidation stops before
    /// the last user turn).
    pub messages: Vec<Message>,
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

/// The sessions of `conv` with `plan`'s statements interleaved.
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
            let stamp = |k: usize| (start + Duration::minutes(k as i64)).to_rfc3339();
            let mine: Vec<&Scripted> = plan.statements.iter().filter(|p| p.session == i).collect();
            let mut messages = Vec::new();
            // Statement k goes after real turn (k + 1) * n / (m + 1).
            let mut next = 0;
            for (t, m) in real.iter().enumerate() {
                let mut m = m.clone();
                m.timestamp = Some(stamp(messages.len()));
                messages.push(m);
                while next < mine.len() && (next + 1) * real.len() / (mine.len() + 1) <= t + 1 {
                    messages.push(
                        Message::user(mine[next].text.clone())
                            .with_timestamp(stamp(messages.len())),
                    );
                    messages
                        .push(Message::assistant("Noted.").with_timestamp(stamp(messages.len())));
                    next += 1;
                }
            }
            for p in &mine[next..] {
                messages.push(Message::user(p.text.clone()).with_timestamp(stamp(messages.len())));
                messages.push(Message::assistant("Noted.").with_timestamp(stamp(messages.len())));
            }
            messages
                .push(Message::user("Talk to you later.").with_timestamp(stamp(messages.len())));
            let end = start + Duration::minutes(messages.len() as i64 + 1);
            last = end;
            ReplaySession {
                key: format!("eval:{}-{}", conv.conv_id, s.session_id),
                end,
                messages,
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
    /// Subjects of scenarios (a), (b) and (d) whose value must be current.
    pub subjects: usize,
    /// Of those, the ones memory holds with the current value and no other.
    pub current_correct: usize,
    /// `current_correct / subjects`.
    pub current_value_accuracy: f64,
    /// Subjects of scenarios (a) and (b) alone.
    pub changed_and_repeated: usize,
    /// Of those, the ones held right.
    pub changed_and_repeated_correct: usize,
    /// Retracted subjects (c).
    pub retracted: usize,
    /// Of those, the ones no memory line holds any more.
    pub retractions_honoured: usize,
    /// Memory lines beyond the first that hold a subject's current value.
    pub duplicates: usize,
    /// Subjects for which memory holds more than one value.
    pub contradictions: usize,
    /// Old values of scenario (a).
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
    /// Seconds the profile took.
    pub seconds: f64,
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
    /// Scripted statements.
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
            ..Default::default()
        };
        for ((plan, sessions), conv) in replays.iter().zip(&convs) {
            progress(&format!("{profile} {}", conv.conv_id));
            replay_profile(opts, profile, plan, sessions, counting.clone(), &mut r).await?;
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

async fn replay_profile(
    opts: &WritePathOptions,
    profile: &str,
    plan: &Plan,
    sessions: &[ReplaySession],
    model: Arc<Counting>,
    r: &mut ProfileReport,
) -> Result<()> {
    let dir = tempfile::tempdir().map_err(EvalError::Workspace)?;
    let ws = Workspace::new(dir.path());
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
                                if let Some(error) = f.decision_error {
                                    r.failed_rounds += 1;
                                    warn(
                                        r,
                                        format!(
                                            "{}: flush: no fact decisions ({error}), items appended to the daily log",
                                            session.key
                                        ),
                                    );
                                }
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
    score(&ws, plan, opts, r)
}

/// Words of a line, lower case, for matching subjects and values.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

fn about(line_words: &[String], subject: &str) -> bool {
    let s = words(subject);
    !s.is_empty() && line_words.windows(s.len()).any(|w| w == s.as_slice())
}

fn holds(line_words: &[String], value: &str) -> bool {
    let v = words(value);
    !v.is_empty() && line_words.windows(v.len()).any(|w| w == v.as_slice())
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn score(
    ws: &Workspace,
    plan: &Plan,
    opts: &WritePathOptions,
    r: &mut ProfileReport,
) -> Result<()> {
    let root = ws.root();
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
            memory.extend(
                text.lines()
                    .filter_map(|l| l.strip_prefix("- "))
                    .map(str::to_string),
            );
        }
    }
    let lines: Vec<Vec<String>> = memory.iter().map(|l| words(l)).collect();
    let history_words: Vec<Vec<String>> = history.lines().map(words).collect();
    r.memory_bytes += bytes;
    r.memory_lines += memory.len();
    let md_lines = md.lines().count();
    r.memory_md_lines = r.memory_md_lines.max(md_lines);
    r.memory_md_bytes = r.memory_md_bytes.max(md.len() as u64);
    if md_lines > opts.cap_lines || md.len() > opts.cap_bytes {
        r.within_caps = false;
    }
    let (mut ab, mut ab_ok) = (0usize, 0usize);
    for s in &plan.subjects {
        let mine: Vec<&Vec<String>> = lines.iter().filter(|l| about(l, &s.subject)).collect();
        let values: HashSet<&str> = s
            .values
            .iter()
            .map(String::as_str)
            .filter(|v| mine.iter().any(|l| holds(l, v)))
            .collect();
        if values.len() > 1 {
            r.contradictions += 1;
        }
        match s.current() {
            None => {
                r.retracted += 1;
                if values.is_empty() {
                    r.retractions_honoured += 1;
                }
            }
            Some(v) => {
                r.subjects += 1;
                let copies = mine.iter().filter(|l| holds(l, v)).count();
                r.duplicates += copies.saturating_sub(1);
                let ok = copies > 0 && values.len() == 1;
                if ok {
                    r.current_correct += 1;
                }
                if s.scenario != Scenario::Filler {
                    ab += 1;
                    ab_ok += usize::from(ok);
                }
            }
        }
        if s.scenario == Scenario::Changed {
            for old in &s.values[..s.values.len() - 1] {
                r.old_values += 1;
                let kept = history_words
                    .iter()
                    .chain(lines.iter())
                    .any(|l| about(l, &s.subject) && holds(l, old));
                if kept {
                    r.old_values_in_history += 1;
                }
            }
        }
    }
    r.changed_and_repeated += ab;
    r.changed_and_repeated_correct += ab_ok;
    Ok(())
}

/// The report as Markdown: one row per profile.
pub fn render_text(report: &WritePathReport) -> String {
    let mut out = format!(
        "write path: {} ({} conversation(s), {} sessions, {} messages per profile, {} scripted statements), model {}, MEMORY.md caps {} lines / {} bytes{}\n\n",
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
    out.push_str("| profile | writes | current value | (a)+(b) | retractions | duplicates | contradictions | old values in history | memory bytes / lines | MEMORY.md lines | within caps | calls / 100 turns | tokens / 100 turns | failed rounds | refused ops |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for p in &report.profiles {
        out.push_str(&format!(
            "| {} | {} | {:.3} ({}/{}) | {}/{} | {}/{} | {} | {} | {}/{} | {} / {} | {} | {} | {:.1} | {:.0} | {} | {} |\n",
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
    }
    if report.profiles.iter().any(|p| !p.warnings.is_empty()) {
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

    #[test]
    fn each_stage_of_a_subject_is_in_a_later_session() {
        let p = plan(6, 3);
        assert_eq!(p.statements.len(), 7 + 8 + 4 + 3);
        for s in p.subjects.iter().filter(|s| s.scenario != Scenario::Filler) {
            let sessions: Vec<usize> = p
                .statements
                .iter()
                .filter(|x| x.text.contains(&format!("my {} is", s.subject)))
                .map(|x| x.session)
                .collect();
            assert!(
                sessions.windows(2).all(|w| w[0] < w[1]),
                "{}: {sessions:?}",
                s.subject
            );
        }
        // Every statement is one the rule-based model reads back.
        for s in &p.statements {
            assert_eq!(
                crate::rule_model::statements(&s.text).len(),
                1,
                "{}",
                s.text
            );
        }
        let retracted = p
            .subjects
            .iter()
            .find(|s| s.scenario == Scenario::Retracted);
        assert_eq!(retracted.and_then(Subject::current), None);
    }
}
