//! Consolidation (nanobot): the oldest unconsolidated messages, cut before
//! a user turn, become a history entry and an updated MEMORY.md through a
//! forced `save_memory` tool call. The model's MEMORY.md goes through the
//! merge guard ([`crate::merge`]) under the memory lock, and the change is
//! recorded in the history as a diff, so it can be undone.
//!
//! A range is consolidated in rounds that fit the model's window
//! ([`crate::excerpt`]: the window less the answer, the prompt and
//! MEMORY.md; each message cut for the prompt to a share of it, the session
//! log keeping it whole), each round one model call whose result is
//! written and the cursor moved before the next, so a long imported
//! session is distilled in parts and a failure costs at most one round.
//!
//! A failed round leaves the cursor where it was and counts one failed
//! run, at most one per `consolidation_failure_spacing_secs` (quick
//! retries during one outage are one failed run); only after
//! `consolidation_max_failures` counted failed runs is the round archived
//! raw (redacted like the index), so nothing is ever lost and one outage
//! never costs the distillation. A round the model refuses as too long for
//! its window is halved and asked again; one that still does not fit fails
//! the run without counting: that is a wrong window, not an outage, and
//! the raw archive would not fix it.
//!
//! The steps of a round and how a crashed one is finished are in
//! [`crate::rounds`].

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use mnemo_core::{Message, Role, TokenCounter};
use mnemo_llm::{
    is_tool_choice_unsupported_text, ChatRequest, ChatResponse, ErrorKind, ToolChoice, ToolSpec,
};
use mnemo_store::{failpoint, LoadedSession, SessionLog, Storage};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::events::{ConsolidationRound, EngineEvent};
use crate::excerpt;
use crate::history::format_lines;
use crate::merge::{self, MergeInput};
use crate::rounds::round_marker;
use crate::templates;

/// Probe message used to estimate the prompt (nanobot's).
pub const TOKEN_PROBE: &str = "[token-probe]";

/// A message shows at most this share of a round's budget (1/4), so a
/// round of a small window still holds a few messages.
const MESSAGE_SHARE: usize = 4;
/// Tokens of messages a round may show at the least, whatever MEMORY.md
/// takes (a round is at least one message, cut to fit).
const MIN_ROUND_TOKENS: usize = 256;
/// Times a round the model refuses as too long for its window is halved
/// before the run fails (down to 1/16 of the budget mnemo computed).
const OVERFLOW_HALVINGS: u32 = 4;
/// Extraction batches one fact-level round reads at most: its facts are
/// written when the round ends, so a long range is saved in parts and a
/// failed call repeats at most one round.
const FACTS_ROUND_BATCHES: usize = 8;

/// Where a consolidation run is, for a caller that shows it (`mnemo
/// consolidate`'s progress line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunProgress {
    /// The round under way, from 1.
    pub round: usize,
    /// Its first message (the cursor).
    pub from: usize,
    /// Its end (exclusive).
    pub to: usize,
    /// Where the run began.
    pub start: usize,
    /// Where the run stops.
    pub end: usize,
}

/// A callback told of each round as it begins.
pub type OnRound<'a> = &'a (dyn Fn(&RunProgress) + Send + Sync);

/// True for a model's "the prompt does not fit the context window".
fn is_overflow(e: &Error) -> bool {
    matches!(e, Error::Llm(l) if l.kind() == ErrorKind::ContextOverflow)
}

/// The `save_memory` tool.
pub fn save_memory_tool() -> ToolSpec {
    ToolSpec::new(
        "save_memory",
        "Save the consolidation result: a history entry for the log and the complete new MEMORY.md.",
        json!({
            "type": "object",
            "properties": {
                "history_entry": {"type": "string", "description": "A paragraph on the excerpt's events, decisions and topics, starting with [YYYY-MM-DD HH:MM], detailed enough to grep."},
                "memory_update": {"type": "string", "description": "The complete new MEMORY.md: still-true old facts plus durable new ones, de-duplicated, in the conversation's language. Unchanged when nothing is new."}
            },
            "required": ["history_entry", "memory_update"]
        }),
    )
}

/// nanobot's boundary: summing per-message tokens forward from `cursor`,
/// every user message after the start is a candidate end (exclusive); the
/// first that frees `to_free` tokens wins, else the last, else none. A
/// chunk therefore always ends just before a user turn.
pub fn pick_boundary(
    messages: &[Message],
    counter: &dyn TokenCounter,
    cursor: usize,
    to_free: usize,
) -> Option<usize> {
    let mut freed = 0usize;
    let mut last = None;
    for (i, m) in messages.iter().enumerate().skip(cursor) {
        if i > cursor && m.role == Role::User {
            if freed >= to_free {
                return Some(i);
            }
            last = Some(i);
        }
        freed += counter.count_message(m);
    }
    last
}

/// Where `consolidate_now` stops: the end of the log when its last turn
/// was answered (the last message is the assistant's text), else before
/// the last user message (a turn still running); `None` when nothing past
/// `cursor` can be taken.
pub fn last_boundary(messages: &[Message], cursor: usize) -> Option<usize> {
    let answered = messages.last().is_some_and(|m| {
        m.role == Role::Assistant
            && m.tool_calls.as_ref().is_none_or(Vec::is_empty)
            && !m.text().trim().is_empty()
    });
    if answered && messages.len() > cursor {
        return Some(messages.len());
    }
    messages
        .iter()
        .enumerate()
        .skip(cursor + 1)
        .rev()
        .find(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
}

/// A parsed `save_memory` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveMemory {
    /// The history entry.
    pub history_entry: String,
    /// The new MEMORY.md.
    pub memory_update: String,
}

/// The arguments of the model's call of `tool`: only a call under that
/// name counts (arguments of the same shape under another tool's name are
/// not an answer), and its absence says what the model did instead.
pub(crate) fn forced_call_arguments<'a>(
    resp: &'a mnemo_llm::ChatResponse,
    tool: &str,
) -> Result<&'a Value> {
    let call = resp
        .tool_calls()
        .iter()
        .find(|c| c.function.name == tool)
        .ok_or_else(|| {
            let called: Vec<&str> = resp
                .tool_calls()
                .iter()
                .map(|c| c.function.name.as_str())
                .collect();
            Error::BadAnswer(if called.is_empty() {
                format!(
                    "the model did not call {tool} (finish_reason {:?})",
                    resp.finish_reason
                )
            } else {
                format!("the model called {} instead of {tool}", called.join(", "))
            })
        })?;
    Ok(&call.function.arguments)
}

/// A forced tool call's arguments as an object: JSON text is parsed (some
/// providers encode the arguments twice, so a few times), and a list
/// yields its first object.
pub(crate) fn tool_arguments(args: &Value, tool: &str) -> Result<serde_json::Map<String, Value>> {
    let mut v = args.clone();
    for _ in 0..3 {
        let Value::String(s) = &v else { break };
        v = serde_json::from_str(s)
            .map_err(|e| Error::BadAnswer(format!("{tool} arguments are not JSON: {e}")))?;
    }
    if let Value::Array(items) = &v {
        v = items
            .iter()
            .find(|i| i.is_object())
            .cloned()
            .ok_or_else(|| {
                Error::BadAnswer(format!("{tool} arguments: a list without an object"))
            })?;
    }
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(Error::BadAnswer(format!(
            "{tool} arguments are not an object"
        ))),
    }
}

/// Reads the arguments of a `save_memory` call as nanobot does: a string
/// is parsed as JSON, a list yields its first object; non-string values are
/// kept as JSON text; a missing key, a null or a blank history entry is an
/// error.
pub fn parse_save_memory(args: &Value) -> Result<SaveMemory> {
    let obj = &tool_arguments(args, "save_memory")?;
    let field = |k: &str| -> Result<String> {
        match obj.get(k) {
            None | Some(Value::Null) => {
                Err(Error::BadAnswer(format!("save_memory: `{k}` is missing")))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Ok(other.to_string()),
        }
    };
    let history_entry = field("history_entry")?;
    if history_entry.trim().is_empty() {
        return Err(Error::BadAnswer(
            "save_memory: `history_entry` is blank".into(),
        ));
    }
    Ok(SaveMemory {
        history_entry,
        memory_update: field("memory_update")?,
    })
}

/// MEMORY.md as the code enforces it: exact duplicate lines dropped (blank
/// lines and headings excepted), then the lines `cuttable` picks (those
/// consolidation wrote) cut to the caps, in order, at a line boundary.
/// Other lines are never cut: what tools and people wrote stays (the
/// prompt shows MEMORY.md within its cap and says when it is cut).
/// Returns the text, the duplicates dropped and the lines cut off.
pub fn enforce_memory(
    text: &str,
    max_lines: usize,
    max_bytes: usize,
    cuttable: &dyn Fn(&str) -> bool,
) -> (String, usize, Vec<String>) {
    let mut seen = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut dups = 0;
    for line in text.lines() {
        let t = line.trim();
        if let Some(key) = merge::line_key(line) {
            if !seen.insert(key) {
                dups += 1;
                continue;
            }
        }
        if t.is_empty() && kept.last().is_some_and(|l| l.trim().is_empty()) {
            continue;
        }
        kept.push(line);
    }
    let cuttable = |l: &str| merge::line_key(l).is_some() && cuttable(l);
    let (mut lines, mut bytes) = kept
        .iter()
        .filter(|l| !cuttable(l))
        .fold((0, 0), |(n, b), l| (n + 1, b + l.len() + 1));
    let mut out = String::new();
    let mut cut = Vec::new();
    for line in &kept {
        if cuttable(line) {
            if !cut.is_empty() || lines + 1 > max_lines || bytes + line.len() + 1 > max_bytes {
                cut.push(line.to_string());
                continue;
            }
            lines += 1;
            bytes += line.len() + 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    let out = out.trim_end().to_string();
    let out = if out.is_empty() { out } else { out + "\n" };
    (out, dups, cut)
}

/// One home per fact (the `mnemo` profile writes both MEMORY.md, by
/// consolidation, and `memory/facts.md`, by the flush's fact decisions):
/// the bullet lines of `text` that consolidation wrote (their
/// [`merge::line_key`] is in `consolidated`) and whose every word is in one
/// current fact of `facts` are left out, because that fact already holds
/// all they say and is in the prompt too. Nothing is lost by it: the fact
/// keeps the words, and the history's diff keeps the line. Index lines of
/// typed memories and lines that people, tools or `memory_write` wrote
/// are never left out, nor a line that says anything more than a fact.
/// Returns the text and the lines left out.
pub fn leave_to_facts(
    text: &str,
    facts: &mnemo_store::memory::facts::FactsFile,
    consolidated: &merge::LineSet,
) -> (String, Vec<String>) {
    let current: Vec<HashSet<String>> = facts
        .current()
        .map(|f| crate::dream::words(&f.text).into_iter().collect())
        .collect();
    if current.is_empty() {
        return (text.to_string(), Vec::new());
    }
    let mut out = String::new();
    let mut left = Vec::new();
    for line in text.lines() {
        let held = !merge::is_index_line(line)
            && merge::line_key(line).is_some_and(|k| consolidated.contains(&k))
            && crate::dream::bullet_text(line).is_some_and(|t| {
                let w = crate::dream::words(t);
                !w.is_empty() && current.iter().any(|f| w.iter().all(|x| f.contains(x)))
            });
        if held {
            left.push(line.to_string());
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    (out, left)
}

impl Engine {
    /// The consolidation request for a chunk.
    pub(crate) fn consolidation_request(
        &self,
        chunk: &[Message],
        memory: &str,
        choice: ToolChoice,
    ) -> ChatRequest {
        let system = templates::render(
            templates::CONSOLIDATION_PROMPT,
            &[
                ("max_lines", &self.settings.memory_max_lines.to_string()),
                ("max_bytes", &self.settings.memory_max_bytes.to_string()),
            ],
        );
        let memory = if memory.trim().is_empty() {
            "(empty)"
        } else {
            memory.trim()
        };
        let user = templates::render(
            templates::CONSOLIDATION_USER,
            &[
                ("memory", memory),
                ("count", &chunk.len().to_string()),
                ("lines", format_lines(chunk).trim_end()),
            ],
        );
        ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
            .with_system(system)
            .with_tools(vec![save_memory_tool()])
            .with_tool_choice(choice)
            // MEMORY.md and the messages are in the user's turn; the
            // system block is the instructions and the tool.
            .with_fixed_system()
    }

    /// One model call for a chunk, with the forced-to-auto fallback.
    async fn ask_save_memory(&self, chunk: &[Message], memory: &str) -> Result<(SaveMemory, bool)> {
        let forced = ToolChoice::Function("save_memory".into());
        let mut fell_back = false;
        let resp: ChatResponse = match self
            .model
            .complete(self.consolidation_request(chunk, memory, forced))
            .await
        {
            Ok(r) if r.finish_reason == "error" && is_tool_choice_unsupported_text(&r.text()) => {
                fell_back = true;
                self.model
                    .complete(self.consolidation_request(chunk, memory, ToolChoice::Auto))
                    .await?
            }
            Ok(r) => r,
            Err(e) if e.kind() == ErrorKind::ToolChoiceUnsupported => {
                fell_back = true;
                self.model
                    .complete(self.consolidation_request(chunk, memory, ToolChoice::Auto))
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        // Only a call of save_memory counts: arguments of the same shape
        // under another tool's name are not a consolidation.
        let arguments = forced_call_arguments(&resp, "save_memory")?;
        Ok((parse_save_memory(arguments)?, fell_back))
    }

    /// Consolidates `messages[from..to]` once (one model call; each
    /// message shown cut to `cap` tokens). On failure the session's count
    /// of failed runs goes up (see [`Self::failed_chunk`]) and the cursor
    /// stays; at `consolidation_max_failures` the chunk is archived raw and
    /// the cursor moves. A prompt the model refuses as too long is
    /// [`ChunkOutcome::TooLong`] and counts nothing.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn consolidate_chunk(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        from: usize,
        to: usize,
        cap: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<ChunkOutcome> {
        let chunk = &loaded.messages[from..to];
        let now = self.now();
        if self.settings.consolidation_mode == "facts" {
            let ordinals: Vec<usize> = (from..to).collect();
            return match self.plan_facts(chunk, &ordinals).await {
                Ok(plan) => {
                    self.begin_round(key, from, to)?;
                    let round = self.apply_facts(&plan, chunk, key, (from, to), "consolidation")?;
                    failpoint::hit("consolidate.after_memory");
                    let stamp = now.format("%Y-%m-%d %H:%M").to_string();
                    let mut entry = crate::facts::history_entry(
                        &round,
                        &stamp,
                        &format!("{key} messages {from}..{to}"),
                    );
                    entry.push('\n');
                    entry.push_str(&round_marker(key, from, to));
                    self.memory.append_history(&entry, now)?;
                    failpoint::hit("consolidate.after_history");
                    self.end_round(key, log, to)?;
                    let changed = !(round.added.is_empty()
                        && round.updated.is_empty()
                        && round.deleted.is_empty());
                    events.push(EngineEvent::Consolidated(ConsolidationRound {
                        from,
                        to,
                        fell_back_to_auto: plan.fell_back,
                        memory_changed: changed,
                        duplicates_dropped: round.duplicates,
                        facts: Some(round),
                        ..Default::default()
                    }));
                    Ok(ChunkOutcome::Done)
                }
                Err(e) if is_overflow(&e) => Ok(ChunkOutcome::TooLong(e)),
                Err(e) => self.failed_chunk(key, log, chunk, from, to, e, events, now),
            };
        }
        let seen = self.memory.read_memory_md()?;
        let (shown, messages_cut) = excerpt::cut_messages(chunk, cap, &*self.counter);
        // What the model copied from the excerpt or from its instructions is
        // not memory: such lines are dropped, and an answer made mostly of
        // them is a bad answer like any other (one failed run, the cursor
        // stays).
        let answer = self
            .ask_save_memory(&shown, &seen)
            .await
            .and_then(|(save, fell_back)| {
                let screened = crate::guard::screen_update(&seen, &save.memory_update, chunk);
                match screened.refusal() {
                    Some(why) => Err(Error::BadAnswer(why)),
                    None => Ok((save, fell_back, screened)),
                }
            });
        match answer {
            Ok((save, fell_back, screened)) => {
                self.begin_round(key, from, to)?;
                let label = format!("{key} messages {from}..{to}");
                let applied = self.apply_memory_update(&seen, &screened.text, &label)?;
                failpoint::hit("consolidate.after_memory");
                let mut entry = save.history_entry.trim().to_string();
                if screened.copied + screened.echoed > 0 {
                    entry.push_str(&format!(
                        "\n[not memory, not saved: {} line(s) of the model's MEMORY.md copied the messages, {} repeated mnemo's instructions]",
                        screened.copied, screened.echoed
                    ));
                }
                if !applied.cut.is_empty() {
                    entry.push_str(&format!(
                        "\n[MEMORY.md over its cap of {} lines / {} bytes: these lines were kept here instead]\n{}",
                        self.settings.memory_max_lines,
                        self.settings.memory_max_bytes,
                        applied.cut.join("\n")
                    ));
                }
                entry.push('\n');
                entry.push_str(&round_marker(key, from, to));
                self.memory.append_history(&entry, now)?;
                failpoint::hit("consolidate.after_history");
                self.end_round(key, log, to)?;
                events.push(EngineEvent::Consolidated(ConsolidationRound {
                    from,
                    to,
                    raw: false,
                    fell_back_to_auto: fell_back,
                    memory_changed: applied.changed,
                    duplicates_dropped: applied.duplicates,
                    lines_trimmed: applied.cut.len(),
                    lines_kept: applied.merged.kept,
                    lines_dropped: applied.merged.dropped.len(),
                    update_refused: applied.merged.refused,
                    recovered: false,
                    facts: None,
                    lines_held_by_facts: applied.held_by_facts.len(),
                    lines_copied: screened.copied,
                    lines_echoed: screened.echoed,
                    messages_cut,
                }));
                Ok(ChunkOutcome::Done)
            }
            Err(e) if is_overflow(&e) => Ok(ChunkOutcome::TooLong(e)),
            Err(e) => self.failed_chunk(key, log, chunk, from, to, e, events, now),
        }
    }

    /// A failed model call: one more failed run when the last counted one
    /// is at least `consolidation_failure_spacing_secs` ago (a retry within
    /// that time is the same outage), and at `consolidation_max_failures`
    /// counted runs the chunk archived raw.
    #[allow(clippy::too_many_arguments)]
    fn failed_chunk(
        &self,
        key: &str,
        log: &mut SessionLog,
        chunk: &[Message],
        from: usize,
        to: usize,
        e: Error,
        events: &mut Vec<EngineEvent>,
        now: DateTime<Utc>,
    ) -> Result<ChunkOutcome> {
        let spacing = chrono::Duration::seconds(
            i64::try_from(self.settings.consolidation_failure_spacing_secs).unwrap_or(i64::MAX),
        );
        let (failures, last) = self.with_state(key, |s| {
            let last = s
                .last_counted_failure
                .filter(|_| s.consolidation_failures > 0);
            // A clock that went back counts, as does the first failure.
            let same_outage = last.is_some_and(|t| now >= t && now - t < spacing);
            if !same_outage {
                s.consolidation_failures += 1;
                s.last_counted_failure = Some(now);
            }
            (s.consolidation_failures, last.filter(|_| same_outage))
        });
        events.push(EngineEvent::ConsolidationFailed {
            from,
            to,
            failures,
            error: e.to_string(),
        });
        if last.is_some() || failures < self.settings.consolidation_max_failures {
            return Ok(ChunkOutcome::Failed {
                failures,
                error: e,
                not_counted_since: last,
            });
        }
        self.begin_round(key, from, to)?;
        self.archive_raw(key, chunk, from, to, now)?;
        failpoint::hit("consolidate.after_history");
        self.end_round(key, log, to)?;
        events.push(EngineEvent::Consolidated(ConsolidationRound {
            from,
            to,
            raw: true,
            ..Default::default()
        }));
        Ok(ChunkOutcome::Done)
    }

    /// Merges the model's MEMORY.md into the file under the memory lock
    /// (the merge guard, then the caps) and records which lines
    /// consolidation wrote. The change goes into the history as a diff
    /// before MEMORY.md is written, so even a run that crashes right after
    /// can be undone.
    fn apply_memory_update(&self, seen: &str, update: &str, label: &str) -> Result<AppliedUpdate> {
        let _lock = self.memory.lock()?;
        let current = self.memory.read_memory_md()?;
        let stored = self.provenance_text();
        let consolidated = read_provenance(stored.as_deref());
        let merged = merge::merge(MergeInput {
            seen,
            current: &current,
            update,
            consolidated: &consolidated,
        });
        // One home per fact: what a current fact already says is not kept
        // in MEMORY.md a second time (both would reach the prompt).
        let facts = self.memory.read_facts()?;
        let (text, held_by_facts) = leave_to_facts(&merged.text, &facts, &merged.consolidated);
        let (text, duplicates, cut) = enforce_memory(
            &text,
            self.settings.memory_max_lines,
            self.settings.memory_max_bytes,
            &|l| {
                !merge::is_index_line(l)
                    && merge::line_key(l).is_some_and(|k| merged.consolidated.contains(&k))
            },
        );
        let mut applied = AppliedUpdate {
            diff: merge::unified_diff(&current, &text),
            changed: false,
            duplicates,
            cut,
            merged,
            held_by_facts,
        };
        if !applied.diff.is_empty() {
            let now = self.now();
            self.memory.append_history(
                &format!(
                    "[{}] [MEMORY.md] consolidation of {label}: {}; to undo it, run `mnemo memory undo` \
                     or reverse this diff (`patch -R MEMORY.md`)\n{}",
                    now.format("%Y-%m-%d %H:%M"),
                    applied.summary(),
                    applied.diff.trim_end()
                ),
                now,
            )?;
        }
        applied.changed = self.memory.write_memory_md(&text)?;
        let merged = &applied.merged;
        if merged.consolidated != consolidated || provenance_has_text(stored.as_deref()) {
            write_provenance(self.memory.storage().as_ref(), &merged.consolidated)?;
        }
        Ok(applied)
    }

    /// The stored provenance document (see [`Provenance`]), if any: in the
    /// memory's storage, beside the MEMORY.md it describes, so every
    /// server of a database workspace merges with the same lines.
    fn provenance_text(&self) -> Option<String> {
        crate::engine::read_state_document(
            &self.workspace,
            self.memory.storage().as_ref(),
            PROVENANCE,
        )
    }

    /// The MEMORY.md lines consolidation wrote (see [`read_provenance`]).
    pub(crate) fn consolidated_lines(&self) -> merge::LineSet {
        read_provenance(self.provenance_text().as_deref())
    }

    /// The chunk, one line per message, into the history as it is (secrets
    /// redacted with the index's rules).
    fn archive_raw(
        &self,
        key: &str,
        chunk: &[Message],
        from: usize,
        to: usize,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let stamp = now.format("%Y-%m-%d %H:%M");
        let lines = format_lines(chunk);
        let entry = format!(
            "[{stamp}] [RAW] {} messages\n{}\n{}",
            chunk.len(),
            mnemo_core::redact::redact(lines.trim_end()),
            round_marker(key, from, to)
        );
        self.memory.append_history(&entry, now)?;
        Ok(())
    }

    /// Tokens of messages one round may show, and the most one message
    /// may show. For `memory_md`: the window less the answer, the prompt
    /// with MEMORY.md as it is now and a tenth of the window for counting
    /// (the counter may not be the model's tokenizer), at least
    /// [`MIN_ROUND_TOKENS`]; a message at most a quarter of that and
    /// [`excerpt::MAX_MESSAGE_TOKENS`]. For `facts`: a few extraction
    /// batches (the extraction cuts messages itself).
    pub(crate) fn round_limits(&self) -> Result<(usize, usize)> {
        if self.settings.consolidation_mode == "facts" {
            let batch = self.extraction_budget().min(crate::extract::BATCH_TOKENS);
            return Ok((batch * FACTS_ROUND_BATCHES, batch));
        }
        let t = self.thresholds();
        let memory = self.memory.read_memory_md()?;
        let probe = self.consolidation_request(&[], &memory, ToolChoice::Auto);
        let tools = serde_json::to_string(&probe.tools).unwrap_or_default();
        let fixed = probe
            .messages
            .iter()
            .map(|m| self.counter.count_message(m))
            .sum::<usize>()
            + probe
                .system
                .as_deref()
                .map_or(0, |s| self.counter.count_text(s))
            + self.counter.count_text(&tools);
        let budget = t
            .context_window
            .saturating_sub(t.max_output)
            .saturating_sub(fixed)
            .saturating_sub(t.context_window / 10)
            .max(MIN_ROUND_TOKENS);
        let cap = (budget / MESSAGE_SHARE).clamp(1, excerpt::MAX_MESSAGE_TOKENS);
        Ok((budget, cap))
    }

    /// One round from `from` toward `to`: as many messages as fit the
    /// model's window ([`Self::round_limits`], [`excerpt::round_end`]),
    /// consolidated by [`Self::consolidate_chunk`]; `on_round` is told of
    /// it before the model is asked. A round the model refuses as too long
    /// (its window is smaller than mnemo was told) is halved and asked
    /// again, up to [`OVERFLOW_HALVINGS`] times; then it is
    /// [`ChunkOutcome::TooLong`], with a `ConsolidationFailed` event, and
    /// no failed run is counted. Returns where the round ended.
    #[allow(clippy::too_many_arguments)]
    async fn consolidate_round(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        from: usize,
        to: usize,
        on_round: &(dyn Fn(usize) + Sync),
        events: &mut Vec<EngineEvent>,
    ) -> Result<(usize, ChunkOutcome)> {
        let (budget, cap) = self.round_limits()?;
        let mut halving = 0;
        loop {
            let budget = (budget >> halving).max(1);
            let cap = (cap >> halving).clamp(1, budget);
            let end = excerpt::round_end(&loaded.messages, from, to, budget, cap, &*self.counter);
            on_round(end);
            let outcome = self
                .consolidate_chunk(key, log, loaded, from, end, cap, events)
                .await?;
            let ChunkOutcome::TooLong(error) = outcome else {
                return Ok((end, outcome));
            };
            if halving < OVERFLOW_HALVINGS && (end - from > 1 || cap > 1) {
                halving += 1;
                continue;
            }
            let error = Error::ConsolidationTooLong {
                key: key.to_string(),
                from,
                to: end,
                tokens: budget,
                window: self.thresholds().context_window,
                source: Box::new(error),
            };
            events.push(EngineEvent::ConsolidationFailed {
                from,
                to: end,
                failures: self.with_state(key, |s| s.consolidation_failures),
                error: error.to_string(),
            });
            return Ok((end, ChunkOutcome::TooLong(error)));
        }
    }

    /// Budget-driven consolidation with a turn (before its answer, or after
    /// it in the background): while the prompt is over the target, at most
    /// `consolidation_max_rounds` rounds, each cutting before a user turn
    /// and fitting the window; stops at the first failure. Each round is
    /// reported to `progress` as it ends.
    pub(crate) async fn consolidate_for_turn(
        &self,
        key: &str,
        log: &mut SessionLog,
        request: crate::compact::Request<'_>,
        progress: &crate::memory_work::Progress,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let target = self.thresholds().consolidation_target;
        let loaded = log.load()?;
        let before = events.len();
        self.recover_round(key, log, &loaded, events)?;
        progress.events(&events[before..]);
        for _ in 0..self.settings.consolidation_max_rounds {
            let loaded = log.load()?;
            let estimate = self.measure(&loaded, request.pending())?;
            if estimate <= target {
                break;
            }
            let cursor = loaded.meta.last_consolidated;
            // A request already logged is not consolidated before its answer.
            let end = loaded.messages.len().saturating_sub(request.logged());
            let Some(to) = pick_boundary(
                &loaded.messages[..end],
                &*self.counter,
                cursor,
                (estimate - target).max(1),
            ) else {
                break;
            };
            let before = events.len();
            let (_, outcome) = self
                .consolidate_round(
                    key,
                    log,
                    &loaded,
                    cursor,
                    to,
                    &|end| progress.doing(Some(format!("consolidating messages {cursor}..{end}"))),
                    events,
                )
                .await?;
            progress.doing(None);
            progress.events(&events[before..]);
            if !matches!(outcome, ChunkOutcome::Done) {
                break;
            }
        }
        Ok(())
    }

    /// Consolidates everything past the cursor up to the last user-turn
    /// boundary, whatever the budget (`mnemo consolidate`), in rounds that
    /// fit the model's window. A failed round is an error and the cursor
    /// stays at its start (earlier rounds stay saved); the run that reaches
    /// `consolidation_max_failures` counted failed runs archives that round
    /// raw instead (see [`crate::Error::from_raw_archive`] for a caller
    /// that treats that as the failure it is). A session that does not
    /// exist is not found; a workspace whose consolidation is off
    /// ([`Engine::require_consolidation`]) is refused before anything is
    /// read.
    pub async fn consolidate_now(&self, key: &str) -> Result<Vec<EngineEvent>> {
        self.consolidate_now_with(key, &|_| {}).await
    }

    /// [`Self::consolidate_now`], telling `on_round` of each round as it
    /// begins (which messages, of which range), for a progress line.
    pub async fn consolidate_now_with(
        &self,
        key: &str,
        on_round: OnRound<'_>,
    ) -> Result<Vec<EngineEvent>> {
        self.require_consolidation()?;
        if !self.sessions.exists(key)? {
            return Err(mnemo_store::Error::NotFound(format!(
                "no session {key:?}: `mnemo session list` shows the sessions there are"
            ))
            .into());
        }
        let _lock = self.lock(key).await?;
        let mut events = Vec::new();
        let (mut log, loaded) = self.open_recovered(key, &mut events)?;
        let cursor = loaded.meta.last_consolidated;
        if let Some(to) = last_boundary(&loaded.messages, cursor) {
            self.consolidate_rounds(key, &mut log, &loaded, cursor, to, on_round, &mut events)
                .await?;
        }
        Ok(events)
    }

    /// An error when consolidation is off in this workspace (`[engine]
    /// consolidation_enabled = false`, or a profile such as `openclaw` or
    /// `claude-code` that does not consolidate): a command that asks for it
    /// is refused rather than doing what the profile says it never does.
    pub fn require_consolidation(&self) -> Result<()> {
        if self.settings.consolidation_enabled {
            return Ok(());
        }
        let profile = self.memory.settings().profile.clone();
        Err(Error::ConsolidationOff {
            by_profile: !crate::settings::profile_consolidates(&profile),
            profile,
        })
    }

    /// Consolidates `from..to` in rounds that fit the window; a failed
    /// round is an error saying how many failed runs are left before the
    /// raw archive (or that it did not count).
    pub(crate) async fn consolidate_or_fail(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        from: usize,
        to: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        self.consolidate_rounds(key, log, loaded, from, to, &|_| {}, events)
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn consolidate_rounds(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        start: usize,
        end: usize,
        on_round: OnRound<'_>,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let mut from = start;
        let mut round = 0;
        while from < end {
            round += 1;
            let tell = |to| {
                on_round(&RunProgress {
                    round,
                    from,
                    to,
                    start,
                    end,
                })
            };
            let (to, outcome) = self
                .consolidate_round(key, log, loaded, from, end, &tell, events)
                .await?;
            match outcome {
                ChunkOutcome::Done => from = to,
                ChunkOutcome::TooLong(error) => return Err(error),
                ChunkOutcome::Failed {
                    failures,
                    error,
                    not_counted_since,
                } => {
                    let now = self.now();
                    return Err(Error::ConsolidationFailed {
                        key: key.to_string(),
                        from,
                        to,
                        failures,
                        limit: self.settings.consolidation_max_failures,
                        spacing_secs: self.settings.consolidation_failure_spacing_secs,
                        not_counted: not_counted_since
                            .map(|t| (now - t).num_seconds().max(0).unsigned_abs()),
                        saved_from: (from > start).then_some(start),
                        source: Box::new(error),
                    });
                }
            }
        }
        Ok(())
    }
}

/// How one round ended.
pub(crate) enum ChunkOutcome {
    /// Consolidated, or archived raw (the round is in the events).
    Done,
    /// The model failed; the cursor stayed.
    Failed {
        /// Counted failed runs of this session so far.
        failures: u32,
        /// Why.
        error: Error,
        /// Not counted: the last counted failed run was then, within
        /// `consolidation_failure_spacing_secs`.
        not_counted_since: Option<DateTime<Utc>>,
    },
    /// The model refused the prompt as too long for its window; nothing
    /// counted, the cursor stayed.
    TooLong(Error),
}

/// What applying a model's MEMORY.md did.
struct AppliedUpdate {
    diff: String,
    changed: bool,
    duplicates: usize,
    cut: Vec<String>,
    merged: merge::Merged,
    held_by_facts: Vec<String>,
}

impl AppliedUpdate {
    fn summary(&self) -> String {
        let added = self
            .diff
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count();
        let removed = self
            .diff
            .lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("---"))
            .count();
        let mut s = format!("{added} line(s) added, {removed} removed");
        if self.merged.kept > 0 {
            s.push_str(&format!(
                ", {} line(s) the model left out kept (not written by consolidation, or new since it read MEMORY.md)",
                self.merged.kept
            ));
        }
        if !self.held_by_facts.is_empty() {
            s.push_str(&format!(
                ", {} line(s) left to {} (a current fact there says all they say)",
                self.held_by_facts.len(),
                mnemo_store::memory::facts::FACTS_FILE
            ));
        }
        if self.merged.refused {
            s.push_str(", the model's update was refused (it dropped most lines) and only its new lines were added");
        }
        s
    }
}

/// `.mnemo/engine/memory-lines.json`: the MEMORY.md lines consolidation
/// wrote (see [`crate::merge`]), as the SHA-256 of each line's key. Files
/// written before held the keys themselves (`consolidated_lines`); they
/// are read, hashed, and written again without the text (issue 43 N7: a
/// forgotten line's words stayed there).
///
/// Nothing else says which lines are consolidation's, so the document is
/// part of the workspace's truth: a state document of its storage (see
/// [`mnemo_store::Storage::read_state`]), the file it always was in a
/// workspace folder, a row beside MEMORY.md's in a database.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Provenance {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    consolidated_lines: Vec<String>,
    #[serde(default)]
    line_sha256: Vec<String>,
}

/// Where [`Provenance`] is kept, workspace-relative.
const PROVENANCE: &str = ".mnemo/engine/memory-lines.json";

/// The lines consolidation wrote, from the provenance document's `text`;
/// empty (every line protected) when there is none or it is unreadable.
pub(crate) fn read_provenance(text: Option<&str>) -> merge::LineSet {
    let Some(text) = text else {
        return merge::LineSet::default();
    };
    match serde_json::from_str::<Provenance>(text) {
        Ok(p) => {
            let mut set = merge::LineSet::from_digests(p.line_sha256);
            for key in &p.consolidated_lines {
                set.insert(key);
            }
            set
        }
        Err(e) => {
            tracing::warn!(
                "{PROVENANCE}: unreadable ({e}); every MEMORY.md line is kept by consolidation"
            );
            merge::LineSet::default()
        }
    }
}

/// True when the provenance document `text` is of the old kind, holding
/// lines' text.
fn provenance_has_text(text: Option<&str>) -> bool {
    text.is_some_and(|t| {
        serde_json::from_str::<Provenance>(t).is_ok_and(|p| !p.consolidated_lines.is_empty())
    })
}

/// Writes the provenance document (digests only) into `storage`,
/// atomically. Unlike the engine's other state, a failure is the round's:
/// without it the next round would not know which lines it may drop.
fn write_provenance(storage: &dyn Storage, lines: &merge::LineSet) -> Result<()> {
    let file = Provenance {
        consolidated_lines: Vec::new(),
        line_sha256: lines.digests(),
    };
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invalid(format!("cannot encode {PROVENANCE}: {e}")))?;
    storage.write_state(PROVENANCE, &text)?;
    Ok(())
}

/// Rewrites a provenance file of the old kind (MEMORY.md lines as text)
/// in the folder of `workspace` as digests, so no line's text stays under
/// `.mnemo/`. A forget calls it: without it a workspace consolidated
/// before digests would keep a forgotten line's words there until its
/// next consolidation. Returns true when the file was rewritten.
///
/// The folder is where such a file can be, for a database workspace too:
/// provenance was only ever written there as text, and mnemo writes it
/// into a database as digests. [`upgrade_provenance_in`] does the same
/// in any storage.
pub fn upgrade_provenance(workspace: &mnemo_core::Workspace) -> Result<bool> {
    upgrade_provenance_in(&mnemo_store::FileStorage::new(workspace))
}

/// [`upgrade_provenance`] for the provenance document kept in `storage`.
/// Call it holding the memory lock, as consolidation writes it.
pub fn upgrade_provenance_in(storage: &dyn Storage) -> Result<bool> {
    let stored = storage.read_state(PROVENANCE)?;
    if !provenance_has_text(stored.as_deref()) {
        return Ok(false);
    }
    write_provenance(storage, &read_provenance(stored.as_deref()))?;
    Ok(true)
}

#[cfg(test)]
#[path = "consolidate_tests.rs"]
mod tests;
