//! The history a model sees, rebuilt from a session log: messages since the
//! consolidation cursor, with every compaction record applied (summaries,
//! snipped turns, cleared tool results, collapsed spans) and the
//! tool-result budget re-applied as a projection. Replaying the same log
//! always gives the same prompt.

use std::collections::{HashMap, HashSet};

use mnemo_core::{Content, Message, Role};
use mnemo_store::{CompactionRecord, LoadedSession};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::templates;

/// Text that replaces a cleared tool result.
pub const CLEARED: &str = "[Old tool result content cleared]";

/// Record kinds written by the pipeline.
pub mod kind {
    /// Level 2: low-value turns removed.
    pub const SNIP: &str = "snip";
    /// Level 3: old re-fetchable tool results cleared.
    pub const MICROCOMPACT: &str = "microcompact";
    /// Level 4: old spans folded.
    pub const COLLAPSE: &str = "collapse";
    /// Level 5: structured summary plus recent tail.
    pub const AUTOCOMPACT: &str = "autocompact";
    /// Level 6: compaction after a context-overflow error.
    pub const REACTIVE: &str = "reactive";
    /// The pre-compaction memory flush (once per compaction cycle).
    pub const FLUSH: &str = "flush";
}

/// A message of the working history with its ordinal in the log (`None`
/// for messages the engine made, such as a summary).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Index in `LoadedSession::messages`.
    pub ordinal: Option<usize>,
    /// The message.
    pub message: Message,
}

impl Entry {
    /// An entry for a logged message.
    pub fn logged(ordinal: usize, message: Message) -> Self {
        Entry {
            ordinal: Some(ordinal),
            message,
        }
    }

    /// An entry the engine made.
    pub fn synthetic(message: Message) -> Self {
        Entry {
            ordinal: None,
            message,
        }
    }
}

/// A span folded by collapse: the non-user messages `first..=last` of one
/// turn replaced by `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapsedSpan {
    /// Ordinal of the first folded message.
    pub first: usize,
    /// Ordinal of the last folded message.
    pub last: usize,
    /// The assistant text that stands for the span.
    pub text: String,
}

/// Budget re-applied to replayed tool results (the store applies the same
/// one when it appends; logs written by other tools may lack it).
#[derive(Debug, Clone, Copy)]
pub struct ResultBudget {
    /// A result over this many characters is cut.
    pub max_chars: usize,
    /// Bytes of preview kept.
    pub preview_bytes: usize,
}

impl Default for ResultBudget {
    fn default() -> Self {
        ResultBudget {
            max_chars: 50_000,
            preview_bytes: 2_000,
        }
    }
}

/// The history of `loaded` as the next prompt carries it, as plain
/// messages (see [`rebuild_entries`]).
pub fn rebuild_history(loaded: &LoadedSession) -> Vec<Message> {
    rebuild_entries(loaded, ResultBudget::default())
        .into_iter()
        .map(|e| strip(&e.message))
        .collect()
}

/// The latest summary-producing record (autocompact or reactive) and its
/// position among the log's compaction records.
pub fn last_base(loaded: &LoadedSession) -> Option<(usize, &CompactionRecord)> {
    loaded
        .compactions
        .iter()
        .enumerate()
        .rev()
        .find(|(_, (_, r))| {
            (r.kind == kind::AUTOCOMPACT || r.kind == kind::REACTIVE) && r.first_kept.is_some()
        })
        .map(|(i, (_, r))| (i, r))
}

/// The working history of `loaded` with ordinals, timestamps kept:
/// 1. messages from `max(cursor, first_kept of the last summary record)`;
/// 2. the summary (and restored context) first, unless consolidation has
///    already moved past everything it covers;
/// 3. snip, microcompact and collapse records applied;
/// 4. the tool-result budget re-applied;
/// 5. nanobot's replay rules (leading non-user messages and orphan tool
///    results dropped, unanswered calls removed).
pub fn rebuild_entries(loaded: &LoadedSession, budget: ResultBudget) -> Vec<Entry> {
    let cursor = loaded.meta.last_consolidated.min(loaded.messages.len());
    let base = last_base(loaded);
    let first_kept = base
        .and_then(|(_, r)| r.first_kept)
        .unwrap_or(0)
        .min(loaded.messages.len());
    let start = cursor.max(first_kept);

    let mut dropped: HashSet<usize> = HashSet::new();
    let mut cleared: HashSet<String> = HashSet::new();
    let mut spans: Vec<CollapsedSpan> = Vec::new();
    for (_, r) in &loaded.compactions {
        match r.kind.as_str() {
            kind::SNIP => {
                if let Some(v) = r.extra.get("dropped") {
                    if let Ok(list) = serde_json::from_value::<Vec<usize>>(v.clone()) {
                        dropped.extend(list);
                    }
                }
            }
            kind::MICROCOMPACT => {
                if let Some(v) = r.extra.get("cleared") {
                    if let Ok(list) = serde_json::from_value::<Vec<String>>(v.clone()) {
                        cleared.extend(list);
                    }
                }
            }
            kind::COLLAPSE => {
                if let Some(v) = r.extra.get("spans") {
                    if let Ok(list) = serde_json::from_value::<Vec<CollapsedSpan>>(v.clone()) {
                        spans.extend(list);
                    }
                }
            }
            _ => {}
        }
    }
    let span_at: HashMap<usize, &CollapsedSpan> = spans
        .iter()
        .filter(|s| s.first >= start && s.last >= s.first)
        .map(|s| (s.first, s))
        .collect();

    let mut out: Vec<Entry> = Vec::with_capacity(loaded.messages.len() - start + 2);
    if let Some((_, r)) = base {
        if first_kept > cursor {
            out.extend(summary_entries(r));
        }
    }
    let mut i = start;
    while i < loaded.messages.len() {
        if let Some(span) = span_at.get(&i) {
            let mut m = Message::assistant(span.text.clone());
            m.timestamp = loaded.messages[span.last.min(loaded.messages.len() - 1)]
                .timestamp
                .clone();
            out.push(Entry::logged(i, m));
            i = span.last + 1;
            continue;
        }
        if !dropped.contains(&i) {
            let mut m = loaded.messages[i].clone();
            if m.role == Role::Tool
                && m.tool_call_id
                    .as_deref()
                    .is_some_and(|id| cleared.contains(id))
            {
                m.content = Some(Content::Text(CLEARED.to_string()));
            }
            out.push(Entry::logged(i, m));
        }
        i += 1;
    }
    apply_tool_budget(&mut out, budget);
    well_formed(out)
}

/// The messages a summary record contributes: the summary, then the
/// restored context when there is one.
pub fn summary_entries(r: &CompactionRecord) -> Vec<Entry> {
    let mut out = Vec::new();
    if let Some(summary) = r.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        let count = r
            .extra
            .get("messages_folded")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .to_string();
        let text = templates::render(
            templates::SUMMARY_MESSAGE,
            &[
                ("count", &count),
                ("tokens_before", &r.tokens_before.to_string()),
                ("tokens_after", &r.tokens_after.to_string()),
                ("summary", summary.trim()),
            ],
        );
        out.push(Entry::synthetic(Message::user(text.trim_end().to_string())));
    }
    if let Some(restored) = r
        .extra
        .get("restored")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
    {
        let text = templates::render(templates::RESTORE_MESSAGE, &[("body", restored.trim())]);
        out.push(Entry::synthetic(Message::user(text.trim_end().to_string())));
    }
    out
}

/// Level 1 as a projection: cuts tool results over the budget to a
/// preview (results the store already persisted are left alone). Returns
/// how many were cut.
pub fn apply_tool_budget(entries: &mut [Entry], budget: ResultBudget) -> usize {
    let mut n = 0;
    for e in entries.iter_mut() {
        let m = &mut e.message;
        if m.role != Role::Tool || m.extra.contains_key("persisted_output") {
            continue;
        }
        let chars = m.content.as_ref().map_or(0, Content::char_len);
        if chars <= budget.max_chars {
            continue;
        }
        let text = m.text();
        let preview = mnemo_store::session::cut_at_byte_boundary(&text, budget.preview_bytes);
        m.content = Some(Content::Text(format!(
            "<persisted-output chars=\"{chars}\">\nOutput too large ({chars} characters); only a preview is kept in the context.\nPreview (first {} bytes):\n{preview}\n</persisted-output>",
            preview.len()
        )));
        n += 1;
    }
    n
}

/// nanobot's replay rules on entries: a leading run of non-user messages
/// is dropped; tool results whose call is not in the window are dropped;
/// calls without a result are removed from their message, and a message
/// left empty is dropped.
pub fn well_formed(entries: Vec<Entry>) -> Vec<Entry> {
    let start = entries
        .iter()
        .position(|e| e.message.role == Role::User)
        .unwrap_or(entries.len());
    let answered: HashSet<String> = entries[start..]
        .iter()
        .filter(|e| e.message.role == Role::Tool)
        .filter_map(|e| e.message.tool_call_id.clone())
        .collect();
    let mut declared: HashSet<String> = HashSet::new();
    let mut out = Vec::with_capacity(entries.len() - start);
    for mut e in entries.into_iter().skip(start) {
        match e.message.role {
            Role::Tool => {
                if e.message
                    .tool_call_id
                    .as_deref()
                    .is_some_and(|id| declared.contains(id))
                {
                    out.push(e);
                }
            }
            Role::Assistant if e.message.tool_calls.is_some() => {
                if let Some(calls) = e.message.tool_calls.as_mut() {
                    calls.retain(|c| answered.contains(&c.id));
                    declared.extend(calls.iter().map(|c| c.id.clone()));
                    if calls.is_empty() {
                        e.message.tool_calls = None;
                    }
                }
                if !e.message.is_empty() {
                    out.push(e);
                }
            }
            _ => out.push(e),
        }
    }
    out
}

/// The message as sent to a model: only the protocol's fields.
pub use mnemo_store::session::strip;

/// One line per message, as nanobot formats a chunk for consolidation:
/// `[YYYY-MM-DD HH:MM] ROLE [tools: a, b]: content`. Empty messages are
/// skipped.
pub fn format_lines(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let text = m.text();
        let calls: Vec<&str> = m
            .tool_calls
            .iter()
            .flatten()
            .map(|c| c.function.name.as_str())
            .collect();
        if text.trim().is_empty() && calls.is_empty() {
            continue;
        }
        let ts: String = m
            .timestamp
            .as_deref()
            .unwrap_or("?")
            .replace('T', " ")
            .chars()
            .take(16)
            .collect();
        let tools = if calls.is_empty() {
            String::new()
        } else {
            format!(" [tools: {}]", calls.join(", "))
        };
        let role = match (m.role, m.name.as_deref()) {
            (Role::Tool, Some(name)) => format!("TOOL {name}"),
            (r, _) => r.as_str().to_uppercase(),
        };
        out.push_str(&format!("[{ts}] {role}{tools}: {}\n", text.trim()));
    }
    out
}
