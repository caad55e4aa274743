//! Session logs (`sessions/*.jsonl`) rendered as `User: …` / `Assistant: …`
//! text for indexing, with each message's ordinal and JSONL line kept so a
//! hit maps back to the messages it came from.
//!
//! What one log costs to index is bounded, whatever wrote it: a line over
//! [`MAX_LINE_BYTES`] (which mnemo's own writers refuse) is not rendered,
//! a message is indexed in its first [`MAX_MESSAGE_BYTES`], and a log in its
//! first [`MAX_FILE_TEXT_BYTES`] of rendered text. Chunks take several times
//! their text in memory, so a single pasted 300 MB message would otherwise
//! take gigabytes.

// This module reads text a user or a model wrote: no byte-offset slicing
// or indexing that could land inside a character or past the end.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

use std::borrow::Cow;

use chrono::NaiveDate;
use mnemo_core::{Message, Role};
use serde_json::Value;

use crate::chunk::RenderedMessage;

/// A line longer than this is not rendered (its message still counts, so
/// the ordinals after it stay right): `[session] max_line_bytes`'s default,
/// which every append and import keeps to.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// A message's text is indexed up to this many bytes.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// A log's rendered text is indexed up to this many bytes; the messages
/// after it are not.
pub(crate) const MAX_FILE_TEXT_BYTES: usize = 128 * 1024 * 1024;

/// A parsed session log.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The key from the `metadata` record, if there was one.
    pub key: Option<String>,
    /// Rendered user/assistant (and optionally tool) messages.
    pub messages: Vec<RenderedMessage>,
    /// Lines that were neither a record nor a message (torn or malformed).
    pub skipped_lines: usize,
    /// The day of each message's timestamp, by ordinal.
    pub days: Vec<Option<NaiveDate>>,
    /// Lines over [`MAX_LINE_BYTES`], not rendered.
    pub long_lines: usize,
    /// Messages indexed in their first [`MAX_MESSAGE_BYTES`] only.
    pub cut_messages: usize,
    /// Messages past [`MAX_FILE_TEXT_BYTES`] of the log, not indexed.
    pub unindexed_messages: usize,
}

/// Whether a line too long to read whole is a message: its keys only, the
/// values skipped without being kept.
#[derive(serde::Deserialize)]
struct LineKind {
    #[serde(rename = "_type")]
    kind: Option<serde::de::IgnoredAny>,
    role: Option<serde::de::IgnoredAny>,
}

impl Transcript {
    /// First and last day among the messages `first..=last` (ordinals).
    pub fn days_between(&self, first: usize, last: usize) -> Option<(NaiveDate, NaiveDate)> {
        let days = self
            .days
            .get(first..=last.min(self.days.len().saturating_sub(1)))?;
        let mut it = days.iter().flatten();
        let d0 = *it.next()?;
        Some(it.fold((d0, d0), |(a, b), d| (a.min(*d), b.max(*d))))
    }
}

/// The calendar day a timestamp names, in its own time zone: the day the
/// people talking lived it. `2026-03-01T10:00:00`, RFC 3339 and bare dates.
fn day_of(timestamp: &str) -> Option<NaiveDate> {
    timestamp.trim().get(..10)?.parse().ok()
}

/// Parses a JSONL session log. Malformed lines are counted and skipped.
/// With `redact`, secrets in the rendered text are replaced (see
/// [`crate::redact`]).
pub fn parse(text: &str, include_tools: bool, redact: bool) -> Transcript {
    let mut t = Transcript::default();
    let mut ordinal = 0usize;
    let mut rendered = 0usize;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            t.long_lines += 1;
            match serde_json::from_str::<LineKind>(line) {
                Ok(k) if k.kind.is_none() && k.role.is_some() => {
                    ordinal += 1;
                    t.days.push(None);
                }
                Ok(_) => {}
                Err(_) => t.skipped_lines += 1,
            }
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            t.skipped_lines += 1;
            continue;
        };
        if let Some(kind) = value.get("_type") {
            if kind.as_str() == Some("metadata") {
                if let Some(k) = value.get("key").and_then(Value::as_str) {
                    t.key = Some(k.to_string());
                }
            }
            continue;
        }
        let Ok(msg) = serde_json::from_value::<Message>(value) else {
            t.skipped_lines += 1;
            continue;
        };
        let this = ordinal;
        ordinal += 1;
        let day = msg.timestamp.as_deref().and_then(day_of);
        t.days.push(day);
        if rendered >= MAX_FILE_TEXT_BYTES {
            t.unindexed_messages += 1;
            continue;
        }
        if let Some(mut text) = render(&msg, include_tools) {
            if text.len() > MAX_MESSAGE_BYTES {
                let mut end = MAX_MESSAGE_BYTES;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                t.cut_messages += 1;
            }
            rendered += text.len();
            if redact {
                if let Cow::Owned(clean) = crate::redact::redact(&text) {
                    text = clean;
                }
            }
            t.messages.push(RenderedMessage {
                ordinal: this,
                line: i + 1,
                text,
                day,
            });
        }
    }
    t
}

fn speaker(msg: &Message) -> Option<String> {
    if msg.role == Role::Tool {
        return None;
    }
    msg.name
        .clone()
        .or_else(|| {
            msg.extra
                .get("speaker")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .or_else(|| {
            msg.extra
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .filter(|s| !s.trim().is_empty())
}

/// True when the text already opens with `Name: `, as clients that relay a
/// group conversation write it.
fn has_speaker_prefix(text: &str) -> bool {
    let Some((head, _)) = text.split_once(": ") else {
        return false;
    };
    let n = head.chars().count();
    (1..=40).contains(&n)
        && head.chars().next().is_some_and(char::is_alphabetic)
        && head
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '.' | '\'' | '-' | '_'))
        && head.split_whitespace().count() <= 4
}

fn render(msg: &Message, include_tools: bool) -> Option<String> {
    let text = msg.text();
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let label = match msg.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
        Role::Tool if include_tools => {
            return Some(format!(
                "Tool {}: {text}",
                msg.name.as_deref().unwrap_or("result")
            ));
        }
        Role::Tool | Role::System => return None,
    };
    if let Some(name) = speaker(msg) {
        if text.starts_with(&format!("{name}:")) {
            return Some(text.to_string());
        }
        return Some(format!("{name}: {text}"));
    }
    if has_speaker_prefix(text) {
        return Some(text.to_string());
    }
    Some(format!("{label}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_numbers_messages() {
        let log = [
            r#"{"_type":"metadata","key":"cli:abc","created_at":"2026-01-01"}"#,
            r#"{"role":"system","content":"be nice"}"#,
            r#"{"role":"user","content":"hello there"}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"c1","name":"f","content":"tool out"}"#,
            r#"{"role":"user","content":"Caroline: I went to the group"#,
            r#"{"_type":"compaction","summary":"x"}"#,
            r#"{"role":"assistant","content":[{"type":"text","text":"Melanie: nice"}]}"#,
            r#"{"role":"user","content":"hi","name":"Bob"}"#,
        ]
        .join("\n");
        let t = parse(&log, false, true);
        assert_eq!(t.key.as_deref(), Some("cli:abc"));
        assert_eq!(t.skipped_lines, 1);
        let got: Vec<(usize, usize, &str)> = t
            .messages
            .iter()
            .map(|m| (m.ordinal, m.line, m.text.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 3, "User: hello there"),
                (4, 8, "Melanie: nice"),
                (5, 9, "Bob: hi")
            ]
        );
        let with_tools = parse(&log, true, true);
        assert!(with_tools
            .messages
            .iter()
            .any(|m| m.text == "Tool f: tool out" && m.ordinal == 3));
    }
}
