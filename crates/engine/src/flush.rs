//! The pre-compaction memory flush (OpenClaw): once per compaction cycle,
//! before older turns leave the context, what is durable in them is written
//! down, recorded in the session log so it survives restarts.
//!
//! Where it goes is `[engine] flush_mode`:
//!
//! - `"daily_log"` (the `openclaw` profile): one silent turn in which the
//!   model writes bullet lines, appended to today's daily log, which is
//!   append-only (duplicates of its lines skipped);
//! - `"facts"` (the default `mnemo` profile): the write path of fact-level
//!   consolidation ([`crate::facts`]) runs on the messages not yet
//!   consolidated (when consolidation itself writes facts, the flush is a
//!   consolidation round, so the messages are read once): the model proposes facts with the words that say them,
//!   the code checks them and decides (a changed value supersedes the old
//!   fact, kept under "No longer true" with the day it ended; a retraction
//!   ends it; a fact already saved gains a source), every change and
//!   refusal goes into the audit log and the round into
//!   `memory/HISTORY.md`. The model never sees the saved facts here, so it
//!   cannot copy them back.

use mnemo_core::Message;
use mnemo_llm::ChatRequest;
use mnemo_store::memory::facts::FACTS_FILE;
use mnemo_store::{CompactionRecord, LoadedSession, Record, SessionLog};
use serde_json::{json, Map};

use crate::engine::Engine;
use crate::error::Result;
use crate::events::{EngineEvent, FlushReport};
use crate::facts::FactRound;
use crate::guard;
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

/// The items of a flush answer (one per line) that are memories: an item
/// that repeats mnemo's instructions (`instructions`, the flush prompt as
/// sent, or any other of mnemo's prompts) is dropped, and the fact
/// metadata an item copied from the prompt (`(f2; since …)`) is stripped.
/// Returns the items and the number dropped.
pub fn memory_items(items: &str, instructions: &str) -> (String, usize) {
    let mut out = String::new();
    let mut echoed = 0;
    for item in items.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if guard::echoes_instructions(item) || guard::echoes_text(item, instructions) {
            echoed += 1;
            continue;
        }
        let item = guard::strip_fact_meta(item);
        if !item.is_empty() {
            out.push_str(&item);
            out.push('\n');
        }
    }
    (out, echoed)
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
        let destination = format!(
            "They are appended to today's daily log ({daily}); existing lines are never overwritten and duplicates are skipped."
        );
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
        let parts = self.system_parts(&[], "")?;
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
        let mut report = FlushReport {
            reason: reason.to_string(),
            no_reply: false,
            path: None,
            written: 0,
            duplicates: 0,
            truncated: 0,
            ignored: 0,
            tokens,
            facts: None,
            echoed: 0,
        };
        if self.settings.flush_mode == "facts" {
            let round = if self.settings.consolidation_enabled
                && self.settings.consolidation_mode == "facts"
            {
                self.flush_by_consolidation(log, loaded).await?
            } else {
                self.flush_facts(log.key(), &history, loaded.meta.last_consolidated)
                    .await?
            };
            report.no_reply =
                round.added.is_empty() && round.updated.is_empty() && round.deleted.is_empty();
            report.path = Some(FACTS_FILE.to_string());
            report.written = round.added.len() + round.updated.len();
            report.duplicates = round.unchanged;
            report.facts = Some(round);
        } else {
            let req = self.flush_request(&history)?;
            // The flush's own instructions, as sent (without the memory
            // part): an item that only repeats them is not a memory.
            let instructions = req
                .system
                .as_deref()
                .and_then(|s| s.split(crate::context::PART_SEPARATOR).next())
                .unwrap_or_default()
                .to_string();
            let resp = self.model.complete(req).await?;
            let text = resp.text();
            let trimmed = text.trim();
            report.no_reply =
                trimmed.is_empty() || trimmed.trim_matches(['`', '.', ' ']) == NO_REPLY;
            if !report.no_reply {
                let (items, ignored) = bullet_items(trimmed);
                report.ignored = ignored;
                let (items, echoed) = memory_items(&items, &instructions);
                report.echoed = echoed;
                let (bounded, dropped) =
                    bound_lines(&items, self.memory.settings().daily_append_max_chars);
                report.truncated = dropped;
                if !bounded.trim().is_empty() {
                    let outcome = self.memory.append_daily(&bounded, self.now(), true)?;
                    report.path = Some(outcome.path);
                    report.written = outcome.written;
                    report.duplicates = outcome.duplicates;
                }
            }
        }
        let mut extra = Map::new();
        extra.insert("reason".into(), json!(reason));
        extra.insert("no_reply".into(), json!(report.no_reply));
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

    /// The flush when consolidation itself writes facts: the same write
    /// path over the same messages, so the flush is a consolidation round
    /// of everything past the cursor (the messages are extracted once, and
    /// the cursor moves); a failed round counts as consolidation's do and
    /// is this flush's error.
    async fn flush_by_consolidation(
        &self,
        log: &mut SessionLog,
        loaded: &LoadedSession,
    ) -> Result<FactRound> {
        let key = log.key().to_string();
        let cursor = loaded.meta.last_consolidated;
        let Some(to) = crate::consolidate::last_boundary(&loaded.messages, cursor) else {
            return Ok(FactRound::default());
        };
        let mut events = Vec::new();
        self.consolidate_or_fail(&key, log, loaded, cursor, to, &mut events)
            .await?;
        Ok(events
            .into_iter()
            .find_map(|e| match e {
                EngineEvent::Consolidated(r) => r.facts,
                _ => None,
            })
            .unwrap_or_default())
    }

    /// The write path ([`crate::facts`]) over the logged messages past the
    /// consolidation cursor (`cursor`), the newest that fit two extraction
    /// requests: the same extraction, checks and decisions as fact-level
    /// consolidation, without moving the cursor (consolidation later finds
    /// the same facts said already, which adds a source and no line). An
    /// error means nothing was written.
    async fn flush_facts(&self, key: &str, history: &[Entry], cursor: usize) -> Result<FactRound> {
        let budget = 2 * self.extraction_budget();
        let mut used = 0;
        let mut picked: Vec<&Entry> = Vec::new();
        for e in history.iter().rev() {
            let Some(o) = e.ordinal else { continue };
            if o < cursor {
                break;
            }
            used += self.counter.count_message(&e.message);
            if used > budget && !picked.is_empty() {
                break;
            }
            picked.push(e);
        }
        picked.reverse();
        let messages: Vec<Message> = picked.iter().map(|e| e.message.clone()).collect();
        let ordinals: Vec<usize> = picked.iter().filter_map(|e| e.ordinal).collect();
        let now = self.now();
        let Some((&first, &last)) = ordinals.first().zip(ordinals.last()) else {
            return Ok(FactRound::default());
        };
        let plan = self.plan_facts(&messages, &ordinals).await?;
        let round = self.apply_facts(&plan, &messages, key, (first, last + 1), "flush")?;
        let stamp = now.format("%Y-%m-%d %H:%M").to_string();
        let entry = crate::facts::history_entry(
            &round,
            &stamp,
            &format!("memory flush of {key} messages {first}..{}", last + 1),
        );
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
