//! `/new`: the unconsolidated tail is consolidated, a session note
//! `memory/YYYY-MM-DD-<slug>.md` is written from the last messages (as
//! OpenClaw's session-memory hook does), and the session starts afresh.

use std::time::Duration;

use mnemo_core::{Message, Role};
use mnemo_llm::ChatRequest;
use serde::Serialize;

use crate::engine::Engine;
use crate::error::Result;
use crate::events::EngineEvent;
use crate::templates;

/// What `new_session` did.
#[derive(Debug, Clone, Serialize)]
pub struct NewSessionReport {
    /// Consolidation of the tail.
    pub events: Vec<EngineEvent>,
    /// The note written, workspace-relative (None for an empty session).
    pub note: Option<String>,
    /// The slug used.
    pub slug: Option<String>,
    /// True when the model gave no usable slug and `HHMM` was used.
    pub slug_fallback: bool,
    /// The cursor after: every message is consolidated.
    pub cursor: usize,
}

/// A slug from a model answer: `[a-z0-9-]`, at most 30 characters.
pub fn sanitize_slug(s: &str) -> String {
    let first = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out = String::new();
    for c in first.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 30 {
            break;
        }
    }
    out.chars()
        .take(30)
        .collect::<String>()
        .trim_matches('-')
        .to_string()
}

/// The last `n` user and assistant messages that have text (commands
/// starting with `/` left out), each as `role: text`.
pub fn note_lines(messages: &[Message], n: usize) -> Vec<String> {
    let picked: Vec<String> = messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant))
        .map(|m| (m.role, m.text().trim().to_string()))
        .filter(|(_, t)| !t.is_empty() && !t.starts_with('/'))
        .map(|(r, t)| format!("{}: {t}", r.as_str()))
        .collect();
    picked[picked.len().saturating_sub(n)..].to_vec()
}

impl Engine {
    pub(crate) fn slug_request(&self, conversation: &str) -> ChatRequest {
        let text: String = conversation.chars().take(2_000).collect();
        ChatRequest::new(vec![Message::user(
            templates::render(templates::SLUG_PROMPT, &[("conversation", &text)])
                .trim_end()
                .to_string(),
        )])
        .with_max_tokens(16)
    }

    /// Ends the session's current conversation: consolidates everything
    /// past the cursor (one model call; a failure is an error that leaves
    /// everything as it was, and the run that reaches the failure limit
    /// archives raw), writes the session note and moves the cursor to the
    /// end so the next turn starts empty. Nothing is deleted from the log.
    /// Where consolidation is off (the `openclaw` and `claude-code`
    /// profiles), the note is written and nothing is consolidated, as
    /// OpenClaw's `/new` does.
    pub async fn new_session(&self, key: &str) -> Result<NewSessionReport> {
        let _lock = self.lock(key).await?;
        let mut events = Vec::new();
        let (mut log, loaded) = self.open_recovered(key, &mut events)?;
        let cursor = loaded.meta.last_consolidated;
        let end = loaded.messages.len();
        let tail = &loaded.messages[cursor.min(end)..];
        let lines = note_lines(tail, self.settings.note_messages);
        // A failed run is an error: no note, the cursor stays, and the
        // conversation is consolidated by a later /new.
        if self.settings.consolidation_enabled {
            self.consolidate_or_fail(key, &mut log, &loaded, cursor, end, &mut events)
                .await?;
        }
        let (mut note, mut slug, mut fallback) = (None, None, false);
        if !lines.is_empty() {
            let now = self.now();
            let convo = lines.join("\n");
            let timeout = Duration::from_millis(self.settings.slug_timeout_ms);
            let answer =
                tokio::time::timeout(timeout, self.model.complete(self.slug_request(&convo))).await;
            let s = match answer {
                Ok(Ok(r)) => sanitize_slug(&r.text()),
                _ => String::new(),
            };
            let s = if s.is_empty() {
                fallback = true;
                now.format("%H%M").to_string()
            } else {
                s
            };
            let text = templates::render(
                templates::SESSION_NOTE,
                &[
                    ("stamp", &now.format("%Y-%m-%d %H:%M:%S").to_string()),
                    ("key", key),
                    ("session_id", &mnemo_store::session::file_stem(key)?),
                    ("source", key.split(':').next().unwrap_or(key)),
                    ("messages", &lines.join("\n\n")),
                ],
            );
            let date = self.memory.today(now);
            note = Some(self.memory.write_session_note(date, &s, &text)?);
            slug = Some(s);
        }
        let after = log.load()?;
        if after.meta.last_consolidated < end {
            log.set_cursor(end)?;
        }
        self.with_state(key, |s| *s = Default::default());
        Ok(NewSessionReport {
            events,
            note,
            slug,
            slug_fallback: fallback,
            cursor: end,
        })
    }
}
