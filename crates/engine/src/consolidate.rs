//! Consolidation (nanobot): the oldest unconsolidated messages, cut before
//! a user turn, become a history entry and an updated MEMORY.md through a
//! forced `save_memory` tool call; after repeated failures the chunk is
//! archived raw, so nothing is ever lost.

use chrono::{DateTime, Utc};
use mnemo_core::{Message, Role, TokenCounter};
use mnemo_llm::{
    is_tool_choice_unsupported_text, ChatRequest, ChatResponse, ErrorKind, ToolChoice, ToolSpec,
};
use mnemo_store::{LoadedSession, SessionLog};
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::events::{ConsolidationRound, EngineEvent};
use crate::history::format_lines;
use crate::templates;

/// Probe message used to estimate the prompt (nanobot's).
pub const TOKEN_PROBE: &str = "[token-probe]";

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

/// The last user-turn boundary after `cursor` (everything before the last
/// user message), for `consolidate_now`.
pub fn last_boundary(messages: &[Message], cursor: usize) -> Option<usize> {
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

/// Reads the arguments of a `save_memory` call as nanobot does: a string
/// is parsed as JSON, a list yields its first object; non-string values are
/// kept as JSON text; a missing key, a null or a blank history entry is an
/// error.
pub fn parse_save_memory(args: &Value) -> Result<SaveMemory> {
    let mut v = args.clone();
    // Some providers encode the arguments twice: unwrap strings a few times.
    for _ in 0..3 {
        let Value::String(s) = &v else { break };
        v = serde_json::from_str(s)
            .map_err(|e| Error::BadAnswer(format!("save_memory arguments are not JSON: {e}")))?;
    }
    if let Value::Array(items) = &v {
        v = items
            .iter()
            .find(|i| i.is_object())
            .cloned()
            .ok_or_else(|| {
                Error::BadAnswer("save_memory arguments: a list without an object".into())
            })?;
    }
    let obj = v
        .as_object()
        .ok_or_else(|| Error::BadAnswer("save_memory arguments are not an object".into()))?;
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
/// lines and headings excepted), then cut to the caps at a line boundary.
/// Returns the text, the duplicates dropped and the lines cut off.
pub fn enforce_memory(
    text: &str,
    max_lines: usize,
    max_bytes: usize,
) -> (String, usize, Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut dups = 0;
    for line in text.lines() {
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') {
            let key = t.trim_start_matches(['-', '*', ' ']).trim().to_lowercase();
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
    let mut out = String::new();
    let mut cut = Vec::new();
    for (n, line) in kept.iter().enumerate() {
        if !cut.is_empty() || n >= max_lines || out.len() + line.len() + 1 > max_bytes {
            if !line.trim().is_empty() {
                cut.push(line.to_string());
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    let out = out.trim_end().to_string();
    let out = if out.is_empty() { out } else { out + "\n" };
    (out, dups, cut)
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
        let call = resp
            .tool_calls()
            .iter()
            .find(|c| c.function.name == "save_memory")
            .or_else(|| resp.tool_calls().first())
            .ok_or_else(|| {
                Error::BadAnswer(format!(
                    "the model did not call save_memory (finish_reason {:?})",
                    resp.finish_reason
                ))
            })?;
        Ok((parse_save_memory(&call.function.arguments)?, fell_back))
    }

    /// Consolidates `messages[from..to]` once. On failure the per-session
    /// counter goes up; at the limit the chunk is archived raw and the
    /// cursor moves anyway.
    pub(crate) async fn consolidate_chunk(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        from: usize,
        to: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<Option<ConsolidationRound>> {
        let chunk = &loaded.messages[from..to];
        let now = self.now();
        let memory = self.memory.read_memory_md()?;
        match self.ask_save_memory(chunk, &memory).await {
            Ok((save, fell_back)) => {
                let (text, dups, cut) = enforce_memory(
                    &save.memory_update,
                    self.settings.memory_max_lines,
                    self.settings.memory_max_bytes,
                );
                let mut entry = save.history_entry.trim().to_string();
                if !cut.is_empty() {
                    entry.push_str(&format!(
                        "\n[MEMORY.md over its cap of {} lines / {} bytes: these lines were kept here instead]\n{}",
                        self.settings.memory_max_lines,
                        self.settings.memory_max_bytes,
                        cut.join("\n")
                    ));
                }
                self.memory.append_history(&entry, now)?;
                let changed = if text.trim().is_empty() && !memory.trim().is_empty() {
                    // An empty update would wipe the memory: keep the old one.
                    false
                } else {
                    self.memory.write_memory_md(&text)?
                };
                log.set_cursor(to)?;
                self.with_state(key, |s| s.consolidation_failures = 0);
                let round = ConsolidationRound {
                    from,
                    to,
                    raw: false,
                    fell_back_to_auto: fell_back,
                    memory_changed: changed,
                    duplicates_dropped: dups,
                    lines_trimmed: cut.len(),
                };
                events.push(EngineEvent::Consolidated(round.clone()));
                Ok(Some(round))
            }
            Err(e) => {
                let failures = self.with_state(key, |s| {
                    s.consolidation_failures += 1;
                    s.consolidation_failures
                });
                events.push(EngineEvent::ConsolidationFailed {
                    from,
                    to,
                    failures,
                    error: e.to_string(),
                });
                if failures < self.settings.consolidation_max_failures {
                    return Ok(None);
                }
                self.archive_raw(chunk, now)?;
                log.set_cursor(to)?;
                self.with_state(key, |s| s.consolidation_failures = 0);
                let round = ConsolidationRound {
                    from,
                    to,
                    raw: true,
                    fell_back_to_auto: false,
                    memory_changed: false,
                    duplicates_dropped: 0,
                    lines_trimmed: 0,
                };
                events.push(EngineEvent::Consolidated(round.clone()));
                Ok(Some(round))
            }
        }
    }

    fn archive_raw(&self, chunk: &[Message], now: DateTime<Utc>) -> Result<()> {
        let stamp = now.format("%Y-%m-%d %H:%M");
        let entry = format!(
            "[{stamp}] [RAW] {} messages\n{}",
            chunk.len(),
            format_lines(chunk).trim_end()
        );
        self.memory.append_history(&entry, now)?;
        Ok(())
    }

    /// Budget-driven consolidation before a turn: while the prompt is over
    /// the target, at most `consolidation_max_rounds` rounds, each cutting
    /// before a user turn; stops at the first failure.
    pub(crate) async fn consolidate_for_turn(
        &self,
        key: &str,
        log: &mut SessionLog,
        message: &str,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let target = self.thresholds().consolidation_target;
        for _ in 0..self.settings.consolidation_max_rounds {
            let loaded = log.load()?;
            let estimate = self.measure(&loaded, message)?;
            if estimate <= target {
                break;
            }
            let cursor = loaded.meta.last_consolidated;
            let Some(to) = pick_boundary(
                &loaded.messages,
                &*self.counter,
                cursor,
                (estimate - target).max(1),
            ) else {
                break;
            };
            if self
                .consolidate_chunk(key, log, &loaded, cursor, to, events)
                .await?
                .is_none()
            {
                break;
            }
        }
        Ok(())
    }

    /// Consolidates everything past the cursor up to the last user-turn
    /// boundary, whatever the budget (`mnemo consolidate`). The chunk is
    /// tried up to `consolidation_max_failures` times; the last failure
    /// archives it raw.
    pub async fn consolidate_now(&self, key: &str) -> Result<Vec<EngineEvent>> {
        let _lock = self.lock(key).await?;
        let (mut log, loaded) = self.open(key)?;
        let mut events = Vec::new();
        let cursor = loaded.meta.last_consolidated;
        if let Some(to) = last_boundary(&loaded.messages, cursor) {
            self.consolidate_until_done(key, &mut log, &loaded, cursor, to, &mut events)
                .await?;
        }
        Ok(events)
    }

    pub(crate) async fn consolidate_until_done(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        from: usize,
        to: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        if from >= to {
            return Ok(());
        }
        for _ in 0..self.settings.consolidation_max_failures {
            if self
                .consolidate_chunk(key, log, loaded, from, to, events)
                .await?
                .is_some()
            {
                break;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "consolidate_tests.rs"]
mod tests;
