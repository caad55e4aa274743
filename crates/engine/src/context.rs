//! The context builder: the one function that assembles every request
//! (system prompt with identity, MEMORY.md, daily logs, selected memory
//! files and the memory tools; the replayed history, as a compaction's
//! summary and the tail kept verbatim; the user's message) and reports the
//! tokens of each part.

use mnemo_core::Message;
use mnemo_llm::{ChatRequest, ToolSpec};
use mnemo_store::LoadedSession;
use serde::Serialize;

use crate::engine::{Engine, Thresholds};
use crate::error::Result;
use crate::history::{rebuild_entries, strip, ResultBudget};
use crate::recall::RecallOutcome;
use crate::templates;

/// Separator between the parts of the system prompt (nanobot's).
pub const PART_SEPARATOR: &str = "\n\n---\n\n";

/// One part of a request and its tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextPart {
    /// `identity`, `memory_md`, `daily_logs`, `selected_memories`, `tools`,
    /// `summary` (the last compaction's summary and the files it restored;
    /// 0 without one), `tail` (the logged messages kept verbatim),
    /// `user_message`.
    pub name: String,
    /// Its tokens.
    pub tokens: usize,
}

/// The request that would be sent for a turn, with its accounting.
#[derive(Debug, Clone, Serialize)]
pub struct ContextReport {
    /// Session key.
    pub key: String,
    /// Model the counts are for.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// History plus the user's message.
    pub messages: Vec<Message>,
    /// Tool schemas offered.
    pub tools: Vec<ToolSpec>,
    /// Tokens per part, in prompt order.
    pub parts: Vec<ContextPart>,
    /// Sum of the parts.
    pub total_tokens: usize,
    /// True when counted with the model's tokenizer, false for an estimate.
    pub exact: bool,
    /// Memory files the side query selected.
    pub selected_memories: Vec<String>,
    /// The side query ran out of time (the turn went on without it).
    pub recall_timed_out: bool,
    /// What the recall side query did: the query it searched memory with,
    /// what search found, what the model picked and why not (absent when
    /// the report was built without recall).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<RecallOutcome>,
    /// MEMORY.md was cut to its cap.
    pub memory_truncated: bool,
    /// The thresholds of the model.
    pub thresholds: Thresholds,
}

impl ContextReport {
    /// The chat request for this context.
    pub fn request(&self) -> ChatRequest {
        ChatRequest::new(self.messages.clone())
            .with_system(self.system.clone())
            .with_tools(self.tools.clone())
    }
}

/// The largest `n` in `0..=total` with `fits(n)`, for a `fits` that holds up
/// to some `n` and fails after it (a binary search: a few token counts
/// instead of one per line).
fn longest(total: usize, fits: impl Fn(usize) -> bool) -> usize {
    if fits(total) {
        return total;
    }
    let (mut lo, mut hi) = (0, total); // fits(lo), !fits(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The current facts of `facts` as the prompt lists them, one `- text (id)`
/// line each: a person's own lines (no date) first, as they are curated,
/// then the newest recorded first (the later line first on a tie), so a
/// fact that replaced another is read before anything older. Facts that
/// ended are not listed.
pub fn current_facts(facts: &mnemo_store::memory::facts::FactsFile) -> String {
    let mut current: Vec<(usize, &mnemo_store::memory::facts::Fact)> =
        facts.current().enumerate().collect();
    let when = |f: &mnemo_store::memory::facts::Fact| {
        f.recorded
            .clone()
            .or_else(|| f.since.map(|d| d.to_string()))
    };
    current.sort_by(|(i, a), (j, b)| match (when(a), when(b)) {
        (None, None) => i.cmp(j),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x).then(j.cmp(i)),
    });
    current
        .iter()
        .map(|(_, f)| format!("- {} ({})\n", f.text, f.id))
        .collect()
}

/// The first lines of `text` within `max_lines` and `max_bytes`, and how
/// many lines were left out.
fn first_lines(text: &str, max_lines: usize, max_bytes: usize) -> (&str, usize) {
    let mut end = 0;
    let mut kept = 0;
    for line in text.split_inclusive('\n') {
        if kept >= max_lines || end + line.len() > max_bytes {
            break;
        }
        end += line.len();
        kept += 1;
    }
    (text[..end].trim_end(), text.lines().count() - kept)
}

/// The line that says what the prompt left out of a memory file.
fn left_out_note(lines: usize, which: &str, file: &str) -> String {
    format!(
        "> {lines} {which} lines of {file} are not shown: the model's context window leaves no \
         more room for memory. memory_search and memory_get find them."
    )
}

/// The system prompt's parts before history.
pub(crate) struct SystemParts {
    pub identity: String,
    pub memory_md: String,
    pub daily: String,
    pub selected: String,
    pub memory_truncated: bool,
}

impl SystemParts {
    pub fn join(&self) -> String {
        [&self.identity, &self.memory_md, &self.daily, &self.selected]
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(PART_SEPARATOR)
    }
}

impl Engine {
    /// The system prompt's parts; `query` (the user's message) chooses
    /// which lines of a selected file too long for the recall budget are
    /// shown.
    pub(crate) fn system_parts(&self, selected: &[String], query: &str) -> Result<SystemParts> {
        let now = self.now();
        let identity = templates::render(
            templates::IDENTITY,
            &[
                ("workspace", &self.workspace.root().display().to_string()),
                ("now", &now.format("%Y-%m-%d %H:%M UTC").to_string()),
            ],
        );
        let rendered = self.memory.render_memory_md()?;
        let memory_text = mnemo_store::memory::without_memory_title(&rendered.text);
        let memory_body = if memory_text.trim().is_empty() {
            "(empty)".to_string()
        } else {
            memory_text.trim_end().to_string()
        };
        // Memory takes at most its share of the prompt budget, spent in
        // order of trust: MEMORY.md (curated), the current facts, then the
        // daily logs (newest first). A small model's window would otherwise
        // fill with memory before the conversation starts (SmolLM2's 2,048
        // tokens did); what is cut is named, and search still finds it.
        let mut left = self.memory_prompt_tokens();
        let (part, memory_cut) = self.fit_part(
            "# Memory\n\n## Long-term Memory (MEMORY.md)\n\n",
            &memory_body,
            "MEMORY.md",
            false,
            &mut left,
        );
        let memory_truncated = rendered.truncated || memory_cut;
        let mut memory_md = part;
        // The facts that are true now (fact-level consolidation), newest
        // first, so that what a cap or the share cuts is the oldest; those
        // that stopped being true are found by search, not shown.
        let facts = self.memory.read_facts()?;
        let current = current_facts(&facts);
        if !current.is_empty() {
            let file = mnemo_store::memory::facts::FACTS_FILE;
            let settings = self.memory.settings();
            let (kept, cut) = first_lines(
                &current,
                settings.memory_md_max_lines,
                settings.memory_md_max_bytes,
            );
            let body = if cut > 0 {
                format!("{kept}\n\n{}", left_out_note(cut, "older", file))
            } else {
                kept.to_string()
            };
            let header = format!("## Facts ({file})\n\n");
            let (part, _) = self.fit_part(&header, &body, file, false, &mut left);
            memory_md.push_str("\n\n");
            memory_md.push_str(&part);
        }
        let mut daily = String::new();
        let today = self.memory.today(now);
        for (label, date) in [("today", Some(today)), ("yesterday", today.pred_opt())] {
            let Some(date) = date else { continue };
            if let Some(log) = self.memory.read_daily(date)? {
                let body = mnemo_store::memory::tail_within(
                    &log.text,
                    self.memory.settings().daily_log_max_bytes,
                );
                let header = format!(
                    "## Daily log {} ({label}, {})\n\n",
                    date.format("%Y-%m-%d"),
                    log.path
                );
                let (part, _) = self.fit_part(&header, body.trim_end(), &log.path, true, &mut left);
                daily.push_str(&part);
                daily.push_str("\n\n");
            }
        }
        let mut items = Vec::new();
        for entry in selected {
            // A passage search found (`path#Lx-Ly`), or a whole file.
            let (rel, lines) = match crate::budget::split_citation(entry) {
                Some((p, a, b)) => (p, Some((a, b))),
                None => (entry.as_str(), None),
            };
            let Ok(Some(text)) = self.memory.read_document(rel) else {
                continue;
            };
            // Lines a retraction ended are history: found by search, not
            // shown (as the facts that ended). The facts file shows its
            // current facts only, as `## Facts` does.
            let text = match lines {
                Some((a, b)) => mnemo_store::memory::facts::current_text(
                    &crate::budget::cited_lines(&text, a, b),
                ),
                None if rel == mnemo_store::memory::facts::FACTS_FILE => {
                    current_facts(&mnemo_store::memory::facts::FactsFile::parse(&text))
                }
                None => mnemo_store::memory::facts::current_text(&text),
            };
            items.push(crate::budget::Recall {
                path: rel.to_string(),
                label: entry.clone(),
                text,
                passage: lines.is_some(),
            });
        }
        let budget = match self.settings.recall_budget_tokens {
            0 => usize::MAX,
            b => b,
        };
        let mut sel = String::new();
        for f in crate::budget::fit_recall(query, items, budget, self.settings.restore_file_tokens)
        {
            let body = if f.excerpt {
                format!(
                    "{}\n\n(an excerpt: the lines nearest this turn; memory_get {} reads the whole file)",
                    f.text, f.path
                )
            } else {
                f.text
            };
            sel.push_str(&format!("## Relevant memory: {}\n\n{body}\n\n", f.label));
        }
        if !sel.is_empty() {
            sel = format!("# Relevant memory files\n\n{sel}");
        }
        Ok(SystemParts {
            identity,
            memory_md,
            daily,
            selected: sel,
            memory_truncated,
        })
    }

    /// Tokens memory may take in the system prompt: `[engine]
    /// prompt_memory_share` of the prompt budget, at least 64.
    pub(crate) fn memory_prompt_tokens(&self) -> usize {
        let budget = self.thresholds().budget as f64;
        ((budget * self.settings.prompt_memory_share) as usize).max(64)
    }

    /// One memory part of the prompt within `left` tokens: `header` and
    /// `body` whole if they fit; else the lines of `body` that fit (from
    /// its start, or from its end for a log) with a note naming `file` and
    /// what was left out; only the note when no line fits. `left` goes
    /// down by what the part takes, so the parts together stay within the
    /// share, give or take the notes of parts that got no line.
    fn fit_part(
        &self,
        header: &str,
        body: &str,
        file: &str,
        from_end: bool,
        left: &mut usize,
    ) -> (String, bool) {
        let whole = format!("{header}{body}");
        let tokens = self.counter.count_text(&whole);
        if tokens <= *left {
            *left -= tokens;
            return (whole, false);
        }
        let which = if from_end { "earlier" } else { "more" };
        let lines = body.lines().count();
        let reserve = self.counter.count_text(&left_out_note(lines, which, file));
        let room = left.saturating_sub(self.counter.count_text(header) + reserve);
        let (kept, cut) = self.lines_within(body, room, from_end);
        let note = left_out_note(cut, which, file);
        let part = match (kept.is_empty(), from_end) {
            (true, _) => note,
            (false, false) => format!("{header}{kept}\n\n{note}"),
            (false, true) => format!("{header}{note}\n\n{kept}"),
        };
        *left = left.saturating_sub(self.counter.count_text(&part));
        (part, true)
    }

    /// The longest run of whole lines of `text` within `max_tokens`, from
    /// its start (or its end, `from_end`), and how many lines were left out.
    fn lines_within(&self, text: &str, max_tokens: usize, from_end: bool) -> (String, usize) {
        // Line boundaries; `n` lines are `..bounds[n]` from the start or
        // `bounds[total - n]..` from the end.
        let mut bounds = vec![0];
        bounds.extend(text.split_inclusive('\n').scan(0, |at, l| {
            *at += l.len();
            Some(*at)
        }));
        let total = bounds.len() - 1;
        let part = |n: usize| match from_end {
            false => &text[..bounds[n]],
            true => &text[bounds[total - n]..],
        };
        let n = longest(total, |n| {
            n == 0 || self.counter.count_text(part(n)) <= max_tokens
        });
        (part(n).trim_end().to_string(), total - n)
    }

    /// History entries of `loaded` as the next prompt carries them.
    pub(crate) fn history_entries(&self, loaded: &LoadedSession) -> Vec<crate::history::Entry> {
        rebuild_entries(
            loaded,
            ResultBudget {
                max_chars: self.settings.tool_result_max_chars,
                preview_bytes: self.settings.tool_result_preview_bytes,
            },
        )
    }

    /// Tokens of the prompt for `loaded` plus `message` (selected memory
    /// files excluded: they are not known before the side query).
    pub(crate) fn measure(&self, loaded: &LoadedSession, message: &str) -> Result<usize> {
        let parts = self.system_parts(&[], "")?;
        let system = self.counter.count_text(&parts.join());
        let tools = self.tools_tokens();
        let history: usize = self
            .history_entries(loaded)
            .iter()
            .map(|e| self.counter.count_message(&e.message))
            .sum();
        let user = self.counter.count_message(&Message::user(message));
        Ok(system + tools + history + user)
    }

    pub(crate) fn tools_tokens(&self) -> usize {
        let json = serde_json::to_string(&self.tools).unwrap_or_default();
        self.counter.count_text(&json)
    }

    /// Builds the request for `message` in session `key`, running the recall
    /// side query first (bounded by its timeout).
    pub async fn build_context(&self, key: &str, message: &str) -> Result<ContextReport> {
        let recall = self.select_memories(key, message).await;
        let mut report = self.build_context_with(key, message, &recall.selected)?;
        report.recall_timed_out = recall.timed_out;
        report.recall = Some(recall);
        Ok(report)
    }

    /// Builds the request for `message` with these memory files selected
    /// (for callers that ran [`Engine::select_memories`] concurrently).
    pub fn build_context_with(
        &self,
        key: &str,
        message: &str,
        selected: &[String],
    ) -> Result<ContextReport> {
        self.assemble(key, Some(message), selected)
    }

    /// Builds the request from the session log alone, with these memory
    /// files selected: for a turn whose user message (and any tool calls
    /// and results since) is already in the log, e.g. to call the model
    /// again after tool results. There is no `user_message` part.
    pub fn build_context_from_log(&self, key: &str, selected: &[String]) -> Result<ContextReport> {
        self.assemble(key, None, selected)
    }

    fn assemble(
        &self,
        key: &str,
        message: Option<&str>,
        selected: &[String],
    ) -> Result<ContextReport> {
        let (_, loaded) = self.open(key)?;
        // A call after tool results shows the same excerpts as the turn's
        // first: the user's message is the log's last.
        let query = match message {
            Some(m) => m.to_string(),
            None => loaded
                .messages
                .iter()
                .rev()
                .find(|m| m.role == mnemo_core::Role::User)
                .map(|m| m.text())
                .unwrap_or_default(),
        };
        let parts = self.system_parts(selected, &query)?;
        let c = &*self.counter;
        let entries = self.history_entries(&loaded);
        // The history is the compaction's summary (with the files it
        // restored: the messages the engine made, which lead it) and the
        // tail of logged messages kept verbatim.
        let (summary, tail): (Vec<_>, Vec<_>) = entries.iter().partition(|e| e.ordinal.is_none());
        let summary: Vec<Message> = summary.iter().map(|e| strip(&e.message)).collect();
        let tail: Vec<Message> = tail.iter().map(|e| strip(&e.message)).collect();
        let history: Vec<Message> = entries.iter().map(|e| strip(&e.message)).collect();
        let user = message.map(Message::user);
        let mut report_parts = Vec::new();
        let mut push = |name: &str, tokens: usize| {
            report_parts.push(ContextPart {
                name: name.to_string(),
                tokens,
            })
        };
        push("identity", c.count_text(&parts.identity));
        push("memory_md", c.count_text(&parts.memory_md));
        push("daily_logs", c.count_text(&parts.daily));
        push("selected_memories", c.count_text(&parts.selected));
        push("tools", self.tools_tokens());
        push("summary", c.count_messages(&summary));
        push("tail", c.count_messages(&tail));
        if let Some(user) = &user {
            push("user_message", c.count_message(user));
        }
        let total = report_parts.iter().map(|p| p.tokens).sum();
        let mut messages = history;
        messages.extend(user);
        Ok(ContextReport {
            key: key.to_string(),
            model: self.model.info().model.clone(),
            system: parts.join(),
            messages,
            tools: self.tools.clone(),
            parts: report_parts,
            total_tokens: total,
            exact: c.is_exact(),
            selected_memories: selected.to_vec(),
            recall_timed_out: false,
            recall: None,
            memory_truncated: parts.memory_truncated,
            thresholds: self.thresholds(),
        })
    }
}
