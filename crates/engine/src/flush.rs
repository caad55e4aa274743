//! The pre-compaction memory flush (OpenClaw): one silent turn in which the
//! model writes down durable memories, once per compaction cycle, recorded
//! in the session log so it survives restarts.
//!
//! Where the items go is `[engine] flush_mode`:
//!
//! - `"daily_log"` (the `openclaw` profile): appended to today's daily log,
//!   which is append-only (duplicates of its lines skipped);
//! - `"facts"` (the default `mnemo` profile): each item is a new fact,
//!   shown to the model with the most similar current facts, and the
//!   model's ADD / UPDATE / DELETE / NOOP decisions are checked and applied
//!   to `memory/facts.md` exactly as fact-level consolidation applies them
//!   ([`crate::facts`]): a changed value supersedes the old fact (kept
//!   under "No longer true" with the day it ended), a retraction ends it,
//!   a fact already saved changes nothing, every change goes into the
//!   audit log and the round into `memory/HISTORY.md`. When the decision
//!   call fails (the model never calls `update_memory`, or its answer is
//!   not a list of operations) the items are appended to the daily log
//!   instead, so a weak model loses nothing, and the report says why.

use mnemo_core::Message;
use mnemo_llm::ChatRequest;
use mnemo_store::memory::facts::{self as facts_file, FACTS_FILE};
use mnemo_store::{CompactionRecord, LoadedSession, Record, SessionLog};
use serde_json::{json, Map};

use crate::engine::Engine;
use crate::error::Result;
use crate::events::{EngineEvent, FlushReport};
use crate::facts::{Extracted, FactRound};
use crate::history::{kind, strip, Entry};
use crate::templates;

/// The answer that means "nothing to save".
pub const NO_REPLY: &str = "NO_REPLY";

/// True when a flush record follows the last summary-producing compaction
/// (so this cycle already flushed).
pub fn flushed_this_cycle(loaded: &LoadedSession) -> bool {
    for (_, r) in loaded.compactions.iter().rev() {
        if r.kind == kind::FLUSH {
            return true;
        }
        if r.kind == kind::AUTOCOMPACT || r.kind == kind::REACTIVE {
            return false;
        }
    }
    false
}

/// The memories of a flush answer: its bullet lines (`- `, `* `, `+ `,
/// `• `, `1. `, `1) `) without their bullets. Anything else (a sentence
/// such as "Nothing new to save.", `NO_REPLY`) is not a memory. Returns the
/// items, one per line, and the number of other lines ignored.
pub fn bullet_items(text: &str) -> (String, usize) {
    let mut items = String::new();
    let mut ignored = 0;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let numbered = line
            .split_once(['.', ')'])
            .filter(|(n, rest)| {
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
            })
            .map(|(_, rest)| rest);
        let item = ["- ", "* ", "+ ", "• "]
            .iter()
            .find_map(|b| line.strip_prefix(b))
            .or(numbered)
            .map(str::trim)
            .filter(|i| !i.is_empty() && *i != NO_REPLY);
        match item {
            Some(i) => {
                items.push_str(i);
                items.push('\n');
            }
            None => ignored += 1,
        }
    }
    (items, ignored)
}

/// Keeps whole lines of `text` within `max_chars`; returns the text and
/// the lines dropped.
pub fn bound_lines(text: &str, max_chars: usize) -> (String, usize) {
    let mut out = String::new();
    let mut dropped = 0;
    // Headings are not memories (OpenClaw's validation): skip them.
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        if out.chars().count() + line.chars().count() + 1 > max_chars {
            dropped += 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    (out, dropped)
}

impl Engine {
    /// The flush request over `history`.
    pub(crate) fn flush_request(&self, history: &[Entry]) -> Result<ChatRequest> {
        let now = self.now();
        let daily = format!("memory/{}.md", self.memory.today(now).format("%Y-%m-%d"));
        let destination = if self.settings.flush_mode == "facts" {
            format!(
                "Each line is compared with the facts already saved ({FACTS_FILE}): a new fact is added, a line that changes a saved fact replaces it and one that retracts it ends it (the old value is kept as no longer true), a fact already saved changes nothing. Write a change as the complete new fact, and a retraction as what the user asked to forget."
            )
        } else {
            format!(
                "They are appended to today's daily log ({daily}); existing lines are never overwritten and duplicates are skipped."
            )
        };
        let prompt = templates::render(
            templates::FLUSH_PROMPT,
            &[
                ("destination", &destination),
                (
                    "max_chars",
                    &self.memory.settings().daily_append_max_chars.to_string(),
                ),
            ],
        );
        let parts = self.system_parts(&[])?;
        let system = format!(
            "{}{}{}",
            prompt.trim_end(),
            crate::context::PART_SEPARATOR,
            parts.memory_md
        );
        // The flush must fit even when the prompt already overflows (the
        // reactive path): keep the newest history that does.
        let t = self.thresholds();
        let room = t
            .context_window
            .saturating_sub(t.max_output.min(4_096))
            .saturating_sub(self.counter.count_text(&system))
            .saturating_sub(2_000);
        let mut used = 0;
        let mut start = history.len();
        for (i, e) in history.iter().enumerate().rev() {
            let n = self.counter.count_message(&e.message);
            if used + n > room {
                break;
            }
            used += n;
            start = i;
        }
        let window = crate::history::well_formed(history[start..].to_vec());
        let mut messages: Vec<Message> = window.iter().map(|e| strip(&e.message)).collect();
        messages.push(Message::user(templates::FLUSH_USER.trim_end()));
        Ok(ChatRequest::new(messages)
            .with_system(system)
            .with_max_tokens(1_024))
    }

    /// Runs the flush unless this cycle already flushed. Failures are
    /// reported as events and never stop compaction.
    pub(crate) async fn flush_if_needed(
        &self,
        log: &mut SessionLog,
        reason: &str,
        tokens: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        if !self.settings.flush_enabled {
            return Ok(());
        }
        let loaded = log.load()?;
        if flushed_this_cycle(&loaded) {
            return Ok(());
        }
        match self.run_flush(log, &loaded, reason, tokens).await {
            Ok(report) => events.push(EngineEvent::Flushed(report)),
            Err(e) => events.push(EngineEvent::FlushFailed {
                error: e.to_string(),
            }),
        }
        Ok(())
    }

    async fn run_flush(
        &self,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        reason: &str,
        tokens: usize,
    ) -> Result<FlushReport> {
        let history = self.history_entries(loaded);
        let req = self.flush_request(&history)?;
        let resp = self.model.complete(req).await?;
        let text = resp.text();
        let trimmed = text.trim();
        let no_reply = trimmed.is_empty() || trimmed.trim_matches(['`', '.', ' ']) == NO_REPLY;
        let mut report = FlushReport {
            reason: reason.to_string(),
            no_reply,
            path: None,
            written: 0,
            duplicates: 0,
            truncated: 0,
            ignored: 0,
            tokens,
            facts: None,
            decision_error: None,
        };
        if !no_reply {
            let (items, ignored) = bullet_items(trimmed);
            report.ignored = ignored;
            let (bounded, dropped) =
                bound_lines(&items, self.memory.settings().daily_append_max_chars);
            report.truncated = dropped;
            let mut to_log = !bounded.trim().is_empty();
            if to_log && self.settings.flush_mode == "facts" {
                match self.flush_facts(log.key(), &history, &bounded).await {
                    Ok(round) => {
                        report.path = Some(FACTS_FILE.to_string());
                        report.written = round.added.len() + round.updated.len();
                        report.duplicates = round.unchanged;
                        report.facts = Some(round);
                        to_log = false;
                    }
                    Err(e) => report.decision_error = Some(e.to_string()),
                }
            }
            if to_log {
                let outcome = self.memory.append_daily(&bounded, self.now(), true)?;
                report.path = Some(outcome.path);
                report.written = outcome.written;
                report.duplicates = outcome.duplicates;
            }
        }
        let mut extra = Map::new();
        extra.insert("reason".into(), json!(reason));
        extra.insert("no_reply".into(), json!(no_reply));
        extra.insert("written".into(), json!(report.written));
        log.append_record(&Record::Compaction(CompactionRecord {
            kind: kind::FLUSH.into(),
            tokens_before: tokens,
            tokens_after: tokens,
            summary: None,
            first_kept: None,
            timestamp: self.now().to_rfc3339(),
            extra,
        }))?;
        Ok(report)
    }

    /// The items of a flush answer (one per line) through the fact-level
    /// decisions (see the module docs): one `update_memory` call, then the
    /// checked operations applied under the memory lock, the round in
    /// `memory/HISTORY.md`. An error means nothing was written.
    async fn flush_facts(&self, key: &str, history: &[Entry], items: &str) -> Result<FactRound> {
        let mut new: Vec<String> = Vec::new();
        for item in items.lines().map(facts_file::one_line) {
            if !item.is_empty() && !new.contains(&item) {
                new.push(item);
            }
        }
        let (ops, _, calls) = self.decide_facts(&new).await?;
        let now = self.now();
        let messages: Vec<Message> = history.iter().map(|e| e.message.clone()).collect();
        let since = self.chunk_day(&messages, now);
        let ordinals = || history.iter().filter_map(|e| e.ordinal);
        let range = ordinals()
            .min()
            .zip(ordinals().max())
            .map(|(a, b)| (key, a, b + 1));
        let stamp = now.format("%Y-%m-%d %H:%M").to_string();
        let extracted = Extracted {
            history_entry: Some(format!(
                "[{stamp}] memory flush of {key}: {} fact(s)",
                new.len()
            )),
            facts: new,
        };
        let mut round =
            self.apply_fact_operations(&extracted, &ops, Some(since), range, "flush")?;
        round.model_calls = calls;
        let entry = crate::facts::history_entry(&extracted, &round, &stamp);
        self.memory.append_history(&entry, now)?;
        Ok(round)
    }

    /// Runs the flush now (unless this compaction cycle already flushed).
    pub async fn flush(&self, key: &str) -> Result<Vec<EngineEvent>> {
        let _lock = self.lock(key).await?;
        let (mut log, loaded) = self.open(key)?;
        let tokens = self.measure(&loaded, "")?;
        let mut events = Vec::new();
        self.flush_if_needed(&mut log, "manual", tokens, &mut events)
            .await?;
        Ok(events)
    }
}
