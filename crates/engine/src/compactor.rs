//! Summarisers for autocompact: the [`Compactor`] seam, the model-backed
//! [`ModelCompactor`] (structured summary from a template, staged over
//! chunks that never split a tool call from its result) and the
//! deterministic [`TemplateCompactor`] that needs no model.

use std::collections::BTreeSet;
use std::sync::Arc;

use mnemo_core::{Message, Role, TokenCounter};
use mnemo_llm::{BoxFuture, ChatModel, ChatRequest};

use crate::error::{Error, Result};
use crate::history::format_lines;
use crate::pipeline::clip;
use crate::templates;

/// Writes the summary that replaces the head of a history.
pub trait Compactor: Send + Sync {
    /// Summarises `messages` (which may start with an earlier summary).
    /// `focus` is what the user asked the summary to keep above all
    /// (`/compact keep the API decisions`), if anything.
    fn summarize<'a>(
        &'a self,
        messages: &'a [Message],
        focus: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String>>;

    /// A short name for reports (`template`, `model`).
    fn name(&self) -> &'static str;
}

/// A deterministic summary without a model: the sections of the model's
/// summary filled from the messages themselves (the latest request as the
/// goal, tools used as progress, identifiers found in the text, every user
/// message verbatim). Used by the pipeline's tests and benchmarks, and as a
/// fallback.
#[derive(Debug, Clone, Default)]
pub struct TemplateCompactor;

impl TemplateCompactor {
    /// The summary text; a focus is stated under the goal.
    pub fn summary(messages: &[Message], focus: Option<&str>) -> String {
        let users: Vec<String> = messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.text().trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        let goal = users
            .iter()
            .rev()
            .find(|t| !t.starts_with("[Conversation summary"))
            .map(|t| clip(t, 500))
            .unwrap_or_else(|| "(no user request)".into());
        let focus = focus
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| format!("\nCompaction focus: {}", clip(f, 500)))
            .unwrap_or_default();
        let mut tools: Vec<String> = Vec::new();
        for m in messages {
            for c in m.tool_calls.iter().flatten() {
                tools.push(format!(
                    "{}({})",
                    c.function.name,
                    clip(&c.function.arguments_string(), 120)
                ));
            }
        }
        let done = if tools.is_empty() {
            "- (no tool calls)".to_string()
        } else {
            let shown: Vec<String> = tools
                .iter()
                .rev()
                .take(30)
                .rev()
                .map(|t| format!("- {t}"))
                .collect();
            let more = tools.len().saturating_sub(30);
            let mut s = shown.join("\n");
            if more > 0 {
                s = format!("- … {more} earlier tool calls\n{s}");
            }
            s
        };
        let last_answer = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && !m.text().trim().is_empty())
            .map(|m| clip(m.text().trim(), 500))
            .unwrap_or_else(|| "(none)".into());
        let ids = identifiers(messages, 40);
        let ids = if ids.is_empty() {
            "- (none found)".to_string()
        } else {
            ids.iter()
                .map(|i| format!("- `{i}`"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let user_list = users
            .iter()
            .map(|u| format!("- {}", u.replace('\n', "\n  ")))
            .collect::<Vec<_>>()
            .join("\n");
        format!(
            "## Goal\n{goal}{focus}\n\n## Constraints & Preferences\n(see the user messages below)\n\n## Progress\n### Done\n{done}\n### In Progress\n- last answer: {last_answer}\n### Blocked\n- (unknown)\n\n## Key Decisions\n(see the user messages and the last answer)\n\n## Next Steps\n- continue with: {goal}\n\n## Critical Context\n{ids}\n\n## User Messages\n{user_list}\n"
        )
    }
}

impl Compactor for TemplateCompactor {
    fn summarize<'a>(
        &'a self,
        messages: &'a [Message],
        focus: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move { Ok(Self::summary(messages, focus)) })
    }

    fn name(&self) -> &'static str {
        "template"
    }
}

/// Words that look like identifiers to keep verbatim: paths, URLs, hosts,
/// hex hashes, UUIDs, file names with an extension.
pub fn identifiers(messages: &[Message], max: usize) -> Vec<String> {
    let mut out = BTreeSet::new();
    for m in messages {
        for word in m
            .text()
            .split(|c: char| c.is_whitespace() || "()[]{}<>\"'`,;".contains(c))
        {
            let w = word.trim_matches(|c: char| c == '.' || c == ':');
            if w.len() < 4 || w.len() > 200 {
                continue;
            }
            let hex = w.len() >= 7
                && w.chars().all(|c| c.is_ascii_hexdigit())
                && w.chars().any(|c| c.is_ascii_digit());
            let uuid = w.len() == 36 && w.chars().filter(|c| *c == '-').count() == 4;
            let url = w.starts_with("http://") || w.starts_with("https://");
            let path =
                w.contains('/') && !w.contains("//") && w.chars().any(|c| c.is_ascii_alphabetic());
            let file = w.rsplit_once('.').is_some_and(|(a, b)| {
                !a.is_empty()
                    && (1..=5).contains(&b.len())
                    && b.chars().all(|c| c.is_ascii_alphanumeric())
                    && b.chars().any(|c| c.is_ascii_alphabetic())
            });
            if hex || uuid || url || path || file {
                out.insert(w.to_string());
            }
        }
    }
    out.into_iter().take(max).collect()
}

/// A summary written by a chat model from the template
/// `templates/compact/prompt.md`. A transcript larger than the model can
/// read in one request is summarised in stages: chunks of whole lines, each
/// summary handed to the next stage.
pub struct ModelCompactor {
    model: Arc<dyn ChatModel>,
    counter: Arc<dyn TokenCounter>,
    max_tokens: u32,
}

impl ModelCompactor {
    /// A compactor over `model`.
    pub fn new(model: Arc<dyn ChatModel>, counter: Arc<dyn TokenCounter>) -> Self {
        let max_out = model.info().max_output.clamp(1_024, 20_000);
        ModelCompactor {
            model,
            counter,
            max_tokens: max_out,
        }
    }

    async fn run(&self, messages: &[Message], focus: Option<&str>) -> Result<String> {
        let focus = focus
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| format!("\nThe user asked this summary to focus on the following; give it the most room and keep its details verbatim, in every section that it concerns:\n\n<focus>\n{}\n</focus>\n", clip(f, 2_000)))
            .unwrap_or_default();
        let info = self.model.info();
        let window = info.context_window as usize;
        let prompt_tokens = self.counter.count_text(templates::SUMMARY_PROMPT) + 2_000;
        let chunk_budget = window
            .saturating_sub(self.max_tokens as usize)
            .saturating_sub(prompt_tokens)
            .max(1_000);
        let chunks = chunk_transcript(messages, &*self.counter, chunk_budget);
        let mut previous: Option<String> = None;
        for chunk in chunks {
            let prev = previous
                .as_deref()
                .map(|p| format!("\nA summary of the conversation before this part follows; merge it into your summary (keep its user messages):\n\n<previous-summary>\n{p}\n</previous-summary>\n"))
                .unwrap_or_default();
            let system = templates::render(
                templates::SUMMARY_PROMPT,
                &[("previous", &prev), ("focus", &focus)],
            );
            let req = ChatRequest::new(vec![Message::user(format!(
                "<transcript>\n{chunk}</transcript>"
            ))])
            .with_system(system)
            .with_max_tokens(self.max_tokens);
            let resp = self.model.complete(req).await?;
            let text = resp.text();
            let summary = extract_summary(&text);
            if summary.trim().is_empty() {
                return Err(Error::BadAnswer(
                    "the summariser returned an empty summary".into(),
                ));
            }
            previous = Some(summary);
        }
        previous.ok_or_else(|| Error::BadAnswer("nothing to summarise".into()))
    }
}

impl Compactor for ModelCompactor {
    fn summarize<'a>(
        &'a self,
        messages: &'a [Message],
        focus: Option<&'a str>,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(self.run(messages, focus))
    }

    fn name(&self) -> &'static str {
        "model"
    }
}

/// The `<summary>` part of an answer (the `<analysis>` part dropped); the
/// whole answer minus any analysis when there are no tags.
pub fn extract_summary(text: &str) -> String {
    if let Some(start) = text.find("<summary>") {
        let rest = &text[start + "<summary>".len()..];
        let end = rest.find("</summary>").unwrap_or(rest.len());
        return rest[..end].trim().to_string();
    }
    let mut t = text.to_string();
    if let (Some(a), Some(b)) = (t.find("<analysis>"), t.find("</analysis>")) {
        if b > a {
            t.replace_range(a..b + "</analysis>".len(), "");
        }
    }
    t.trim().to_string()
}

/// Splits the transcript lines of `messages` into chunks within `budget`
/// tokens. Chunks end only before a user or assistant line, so a tool call
/// and its result stay in one chunk.
pub fn chunk_transcript(
    messages: &[Message],
    counter: &dyn TokenCounter,
    budget: usize,
) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut cur = String::new();
    let mut cur_tokens = 0;
    for m in messages {
        let line = format_lines(std::slice::from_ref(m));
        if line.is_empty() {
            continue;
        }
        let t = counter.count_text(&line);
        let line = if t > budget {
            clip(&line, budget * 3)
        } else {
            line
        };
        let t = t.min(budget);
        if cur_tokens + t > budget && !cur.is_empty() && m.role != Role::Tool {
            chunks.push(std::mem::take(&mut cur));
            cur_tokens = 0;
        }
        cur.push_str(&line);
        if !cur.ends_with('\n') {
            cur.push('\n');
        }
        cur_tokens += t;
    }
    if !cur.is_empty() {
        chunks.push(cur);
    }
    chunks
}
