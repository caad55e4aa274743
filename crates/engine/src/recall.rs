//! Recall selection (Claude Code's side query): a cheap model picks at most
//! five memory files from a manifest of their headers; it runs beside the
//! main request and the turn goes on without it when it is late.
//!
//! With a [`MemorySearch`] (the index, plugged in by whoever opened the
//! workspace), the conversation itself is searched first: the latest turns
//! as `User:`/`Assistant:` lines ([`mnemo_core::dialogue`]), which the index
//! reads as dialogue. The files it finds lead the manifest, and when the
//! model fails or is late they are the selection, so recall never comes
//! back empty-handed just because a small model was slow. A side query
//! that runs out of time is dropped, which stops its generation (a local
//! model stops at its next token), so the turn's answer never waits
//! behind it.
//!
//! `[engine] recall_mode = "search"` (the default with the local provider,
//! whose small model cannot answer the side query within its timeout)
//! skips the model: the files search finds are the selection, so a turn
//! costs what its answer costs.

use std::collections::HashSet;
use std::time::Duration;

use mnemo_core::Message;
use mnemo_llm::ChatRequest;
use mnemo_store::MemoryFileHeader;
use serde::Serialize;
use serde_json::Value;

use crate::engine::Engine;
use crate::error::Result;
use crate::templates;

/// Passages memory search offers per file recall may select
/// (`recall_max_selected` of them): enough that the budget, not this,
/// decides how many are shown.
pub const PASSAGES_PER_FILE: usize = 16;

/// What the side query returned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecallOutcome {
    /// What was selected, best first: workspace-relative files (the side
    /// model's choice, or search's when it finds files only) or passages
    /// of them (`path#Lx-Ly`, search's).
    pub selected: Vec<String>,
    /// The query ran out of time.
    pub timed_out: bool,
    /// Why it failed, when it did (the turn goes on without it).
    pub error: Option<String>,
    /// Files in the manifest.
    pub manifest_files: usize,
    /// The query the conversation was searched with, when memory search is
    /// plugged in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Memory files the search found, best first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub found: Vec<String>,
    /// The passages search found (`path#Lx-Ly`), best first: what a
    /// selection from search shows, within `[engine] recall_budget_tokens`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passages: Vec<String>,
    /// The selection is the search's: the model failed or was late, or
    /// was not asked (`asked_model` false).
    pub from_search: bool,
    /// The side query asked the model (`recall_mode` "model"; "search"
    /// asks none).
    pub asked_model: bool,
}

/// Searches long-term memory for the recall side query.
pub trait MemorySearch: Send + Sync {
    /// The memory files (workspace-relative paths) that best match `query`,
    /// best first, at most `limit`; an error says why (recall goes on
    /// without it).
    fn memory_files(&self, query: &str, limit: usize) -> std::result::Result<Vec<String>, String>;

    /// The Markdown memory blocks that best match `query` (hybrid search),
    /// best first, at most `limit`: what fact-level consolidation compares
    /// a new fact with. The default has none (the engine then ranks the
    /// facts file by shared words alone).
    fn memory_hits(
        &self,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<MemoryHit>, String> {
        let _ = (query, limit);
        Err("this memory search finds files only".into())
    }
}

/// One block of Markdown memory a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryHit {
    /// Workspace-relative path.
    pub path: String,
    /// First line (1-based).
    pub start_line: usize,
    /// Last line.
    pub end_line: usize,
    /// The search's score.
    pub score: f32,
}

/// One manifest line: `- [type] file (ISO mtime): description`.
pub fn manifest_line(h: &MemoryFileHeader) -> String {
    let kind = h.front.as_ref().map(|f| f.kind.as_str()).unwrap_or("note");
    let desc = h
        .front
        .as_ref()
        .map(|f| f.description.clone())
        .filter(|d| !d.trim().is_empty())
        .or_else(|| {
            let body = match h.head.strip_prefix("---\n") {
                Some(rest) => rest.split_once("\n---").map(|(_, b)| b).unwrap_or(rest),
                None => h.head.as_str(),
            };
            body.lines()
                .map(|l| l.trim().trim_start_matches('#').trim())
                .find(|l| !l.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_default();
    format!(
        "- [{kind}] {} ({}): {}",
        h.path,
        h.modified
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        crate::pipeline::clip(&desc, 200)
    )
}

/// The file names of a `{"selected_memories": [...]}` answer (the JSON may
/// be wrapped in prose or a code fence).
pub fn parse_selection(text: &str) -> Vec<String> {
    let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
        return Vec::new();
    };
    if b < a {
        return Vec::new();
    }
    serde_json::from_str::<Value>(&text[a..=b])
        .ok()
        .and_then(|v| v.get("selected_memories").cloned())
        .and_then(|v| v.as_array().cloned())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The request that asks a model for the question behind a dialogue-form
/// query (`User:`/`Assistant:` lines): what memory should be searched for.
pub fn need_request(dialogue: &str, max_tokens: u32) -> ChatRequest {
    let user = templates::render(templates::NEED_USER, &[("dialogue", dialogue.trim())]);
    side_request(templates::NEED_PROMPT, &user, max_tokens)
}

/// A one-turn request with a fixed system prompt: what the text is about
/// is in the user's turn.
fn side_request(system: &str, user: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
        .with_system(system.trim_end().to_string())
        .with_max_tokens(max_tokens)
        .with_fixed_system()
}

/// The query in a model's answer to [`need_request`]: its first non-empty
/// line without quotes, a label or a trailing period; `None` when the
/// model says memory is not needed or wrote nothing usable.
pub fn parse_need(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .split_once(':')
        .filter(|(label, _)| label.to_lowercase().contains("query"))
        .map_or(line, |(_, rest)| rest)
        .trim()
        .trim_end_matches(['.', '。'])
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '“' | '”' | '「' | '」'))
        .trim_end_matches(['.', '。'])
        .trim();
    let words = line.split_whitespace().count();
    if line.is_empty() || line.eq_ignore_ascii_case("none") || words > 40 {
        return None;
    }
    Some(line.to_string())
}

/// Asks `model` for the question behind `dialogue` within `timeout`;
/// `None` when it fails, is late, or answers that nothing is needed (the
/// dialogue alone is then searched).
pub async fn question_behind(
    model: &dyn mnemo_llm::ChatModel,
    dialogue: &str,
    max_tokens: u32,
    timeout: Duration,
) -> Option<String> {
    let req = need_request(dialogue, max_tokens);
    ask_for_text(
        model,
        req,
        timeout,
        parse_need,
        "the question behind the dialogue",
    )
    .await
}

/// `model`'s answer to `req` within `timeout`, read by `parse`; `None` when
/// it fails (logged as `what`), is late, or `parse` finds nothing.
async fn ask_for_text(
    model: &dyn mnemo_llm::ChatModel,
    req: ChatRequest,
    timeout: Duration,
    parse: fn(&str) -> Option<String>,
    what: &str,
) -> Option<String> {
    match tokio::time::timeout(timeout, model.complete(req)).await {
        Ok(Ok(resp)) => parse(&resp.text()),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "{what} failed");
            None
        }
        Err(_) => None,
    }
}

/// The request that asks a model for a passage that would answer
/// `question` (a question, or a dialogue whose last message asks): searched
/// beside the question, its words and meaning reach memory that shares
/// neither with the question ("activities" against "pottery").
pub fn answer_request(question: &str, max_tokens: u32) -> ChatRequest {
    let user = templates::render(templates::ANSWER_USER, &[("question", question.trim())]);
    side_request(templates::ANSWER_PROMPT, &user, max_tokens)
}

/// The passage of a model's answer to [`answer_request`]: its text without
/// a label or quotes, on one line; `None` when it wrote nothing usable.
pub fn parse_answer(text: &str) -> Option<String> {
    let text = text.trim();
    let text = text
        .split_once(':')
        .filter(|(label, _)| label.to_lowercase().contains("passage"))
        .map_or(text, |(_, rest)| rest);
    let text = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '“' | '”' | '「' | '」'))
        .trim()
        .to_string();
    (!text.is_empty()).then_some(text)
}

/// Asks `model` for a passage that would answer `question` within
/// `timeout`; `None` when it fails, is late or writes nothing (the
/// question alone is then searched).
pub async fn hypothetical_answer(
    model: &dyn mnemo_llm::ChatModel,
    question: &str,
    max_tokens: u32,
    timeout: Duration,
) -> Option<String> {
    let req = answer_request(question, max_tokens);
    ask_for_text(model, req, timeout, parse_answer, "the hypothetical answer").await
}

impl Engine {
    /// A passage the side model writes as the answer to `query`, to search
    /// beside it (`[engine] expand_*`); `None` when it fails, is late or
    /// writes nothing.
    pub async fn expansion(&self, query: &str) -> Option<String> {
        hypothetical_answer(
            self.side_model.as_ref(),
            query,
            self.settings.expand_max_tokens,
            std::time::Duration::from_millis(self.settings.expand_timeout_ms),
        )
        .await
    }

    /// Whether recall asks the side model (`[engine] recall_mode`, `"auto"`
    /// resolved by the provider).
    pub fn recall_asks_model(&self) -> bool {
        match self.settings.recall_mode.as_str() {
            "model" => true,
            "search" => false,
            _ => self.side_model.info().provider != "local",
        }
    }

    /// The conversation as the recall query: the session's latest turns and
    /// `message`, as the index reads dialogue. `message` may be logged
    /// already (a turn logs it first): it is then not read twice.
    pub fn recall_query(&self, key: &str, message: &str) -> Result<String> {
        let mut history = match self.sessions.open(key).and_then(|log| log.load()) {
            Ok(loaded) => loaded.replay(),
            // A session that does not exist yet has no turns before this one.
            Err(mnemo_store::Error::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        if history
            .last()
            .is_some_and(|m| m.role == mnemo_core::Role::User && m.text() == message)
        {
            history.pop();
        }
        Ok(mnemo_core::dialogue::query_from_messages(
            &history,
            message,
            self.settings.recall_query_turns,
        ))
    }

    /// The side-query request, or None when there is nothing to choose
    /// from; the files search `found` come first in the manifest, in its
    /// order.
    fn recall_request(
        &self,
        key: &str,
        message: &str,
        found: &[String],
    ) -> Result<Option<(ChatRequest, Vec<String>)>> {
        let surfaced: HashSet<String> = self.with_state(key, |s| s.surfaced.clone());
        let now = self.now();
        let today = self.memory.today(now);
        let skip: HashSet<String> = [Some(today), today.pred_opt()]
            .into_iter()
            .flatten()
            .map(|d| format!("memory/{}.md", d.format("%Y-%m-%d")))
            .chain(["memory/HISTORY.md".to_string()])
            // Its current facts are in every prompt already (`## Facts`),
            // and the file holds the facts that ended too.
            .chain([mnemo_store::memory::facts::FACTS_FILE.to_string()])
            .collect();
        let headers = self.memory.scan_memory_files(
            self.settings.recall_max_files,
            self.settings.recall_head_lines,
        )?;
        let mut headers: Vec<&MemoryFileHeader> = headers
            .iter()
            .filter(|h| !skip.contains(&h.path) && !surfaced.contains(&h.path))
            .collect();
        // Stable: what search found leads, in its order; the rest keep theirs.
        headers.sort_by_key(|h| {
            found
                .iter()
                .position(|f| *f == h.path)
                .unwrap_or(usize::MAX)
        });
        if headers.is_empty() {
            return Ok(None);
        }
        let manifest = headers
            .iter()
            .map(|h| manifest_line(h))
            .collect::<Vec<_>>()
            .join("\n");
        let system = templates::render(
            templates::RECALL_PROMPT,
            &[("max", &self.settings.recall_max_selected.to_string())],
        );
        let user = templates::render(
            templates::RECALL_USER,
            &[("manifest", &manifest), ("message", message)],
        );
        let req = ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
            .with_system(system.trim_end().to_string())
            .with_max_tokens(self.settings.recall_max_tokens)
            // The memory files' headers are in the user's turn.
            .with_fixed_system();
        Ok(Some((
            req,
            headers.iter().map(|h| h.path.clone()).collect(),
        )))
    }

    /// Asks the side model which memory files help with `message` (with
    /// `recall_mode` "search", takes the files memory search finds
    /// instead). Never fails the turn: a timeout or an error gives an empty
    /// selection with the reason (or search's files, when it found some).
    /// Selected files are remembered so they are not surfaced twice in the
    /// session; passages are not (each turn shows what its conversation
    /// finds).
    pub async fn select_memories(&self, key: &str, message: &str) -> RecallOutcome {
        let (query, found, passages) = self.search_memory(key, message).await;
        let (req, names) = match self.recall_request(key, message, &found) {
            Ok(Some(x)) => x,
            Ok(None) => return RecallOutcome::default(),
            Err(e) => {
                return RecallOutcome {
                    error: Some(e.to_string()),
                    ..Default::default()
                }
            }
        };
        let mut out = RecallOutcome {
            manifest_files: names.len(),
            query,
            ..Default::default()
        };
        // What search found in the manifest's files (not surfaced yet): its
        // passages, best first, which the prompt fits into its budget (a
        // few lines of many files say more than a few whole files); its
        // files, when the search finds files only. Passages are not
        // remembered as surfaced: each turn's prompt shows what its own
        // conversation finds (the recall part is not kept in the history),
        // and the session's state does not grow by a list a turn.
        let whole_files = passages.is_empty();
        let fallback: Vec<String> = if whole_files {
            found
                .iter()
                .filter(|f| names.contains(f))
                .take(self.settings.recall_max_selected)
                .cloned()
                .collect()
        } else {
            passages
                .iter()
                .filter(|p| {
                    let path = crate::budget::split_citation(p).map_or(p.as_str(), |c| c.0);
                    names.iter().any(|n| n == path)
                })
                .take(self.settings.recall_max_selected * PASSAGES_PER_FILE)
                .cloned()
                .collect()
        };
        out.found = found;
        out.passages = passages;
        if !self.recall_asks_model() {
            if whole_files {
                self.with_state(key, |s| s.surfaced.extend(fallback.iter().cloned()));
            }
            out.from_search = !fallback.is_empty();
            out.selected = fallback;
            return out;
        }
        out.asked_model = true;
        let timeout = Duration::from_millis(self.settings.recall_timeout_ms);
        // On timeout the request's future is dropped: an HTTP request is
        // cancelled, a local generation stops at its next token.
        let answer = tokio::time::timeout(timeout, self.side_model.complete(req)).await;
        match answer {
            Err(_) => out.timed_out = true,
            Ok(Err(e)) => out.error = Some(e.to_string()),
            Ok(Ok(resp)) => {
                let known: HashSet<&String> = names.iter().collect();
                let mut picked = Vec::new();
                for name in parse_selection(&resp.text()) {
                    let name = name.trim_start_matches("./").to_string();
                    let name = if known.contains(&name) {
                        name
                    } else if known.contains(&format!("memory/{name}")) {
                        format!("memory/{name}")
                    } else {
                        continue;
                    };
                    if !picked.contains(&name) && picked.len() < self.settings.recall_max_selected {
                        picked.push(name);
                    }
                }
                self.with_state(key, |s| s.surfaced.extend(picked.iter().cloned()));
                out.selected = picked;
            }
        }
        if (out.timed_out || out.error.is_some()) && !fallback.is_empty() {
            if whole_files {
                self.with_state(key, |s| s.surfaced.extend(fallback.iter().cloned()));
            }
            out.selected = fallback;
            out.from_search = true;
        }
        out
    }

    /// Searches memory with the conversation (when a searcher is plugged
    /// in): the query, the files found and their passages (`path#Lx-Ly`),
    /// best first; no passages from a search that finds files only. A
    /// failed search finds nothing; recall goes on with the model alone.
    async fn search_memory(
        &self,
        key: &str,
        message: &str,
    ) -> (Option<String>, Vec<String>, Vec<String>) {
        let Some(searcher) = self.searcher.clone() else {
            return (None, Vec::new(), Vec::new());
        };
        let Ok(query) = self.recall_query(key, message) else {
            return (None, Vec::new(), Vec::new());
        };
        let limit = self.settings.recall_max_selected * PASSAGES_PER_FILE;
        let q = query.clone();
        // The index is synchronous (SQLite, the embedding model).
        let found = tokio::task::spawn_blocking(move || match searcher.memory_hits(&q, limit) {
            Ok(hits) => {
                let mut files: Vec<String> = Vec::new();
                for h in &hits {
                    if !files.contains(&h.path) {
                        files.push(h.path.clone());
                    }
                }
                let passages = hits
                    .iter()
                    .map(|h| format!("{}#L{}-L{}", h.path, h.start_line, h.end_line))
                    .collect();
                Ok((files, passages))
            }
            Err(_) => searcher.memory_files(&q, limit).map(|f| (f, Vec::new())),
        })
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
        (Some(query), found.0, found.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_need_is_read_off_the_models_first_line() {
        assert_eq!(
            parse_need("Melanie's hobbies and activities\nmore").as_deref(),
            Some("Melanie's hobbies and activities")
        );
        assert_eq!(
            parse_need("Search query: \"Caroline support group date\".").as_deref(),
            Some("Caroline support group date")
        );
        assert_eq!(parse_need("「陶艺课」。").as_deref(), Some("陶艺课"));
        assert_eq!(parse_need("none"), None);
        assert_eq!(parse_need("  \n "), None);
        assert_eq!(parse_need(&"word ".repeat(60)), None);
        // A colon that is not a label stays.
        assert_eq!(
            parse_need("flight at 10:30").as_deref(),
            Some("flight at 10:30")
        );
    }

    #[test]
    fn the_answer_is_the_models_passage_on_one_line() {
        assert_eq!(
            parse_answer("Passage: \"Melanie enjoys pottery\nand camping.\"").as_deref(),
            Some("Melanie enjoys pottery and camping.")
        );
        assert_eq!(
            parse_answer("「她喜欢陶艺。」").as_deref(),
            Some("她喜欢陶艺。")
        );
        assert_eq!(parse_answer(" \n "), None);
        // A colon that is not a label stays.
        assert_eq!(
            parse_answer("The flight left at 10:30.").as_deref(),
            Some("The flight left at 10:30.")
        );
    }

    #[test]
    fn the_answer_request_asks_for_a_passage() {
        let req = answer_request("What activities does Melanie partake in?", 64);
        assert!(req.fixed_system);
        let system = req.system.clone().unwrap_or_default();
        let user = req.messages[0].text();
        insta::assert_snapshot!(format!("{system}\n---\n{user}"), @r"
        You help search the user's long-term memory (their notes and past conversations). Given what the user asks, write a short passage that could be found in that memory and would answer it: one or two sentences, in the language of the question, with plausible specifics (names, places, things, activities, dates). It does not have to be true: it is only used to find the real passage.

        Answer with the passage alone.
        ---
        What activities does Melanie partake in?

        A passage that would answer it:
        ");
    }
}
