//! What callers send to each operation. Each argument is declared once,
//! here: the MCP tool list, the agent's tool definitions and the OpenAPI
//! document are generated from these types ([`crate::schema`]), and the
//! CLI fills the same structs from its flags.

use mnemo_core::Message;
use mnemo_store::MemoryType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Most results one search returns, on every surface.
pub const MAX_RESULTS: usize = 100;

/// The smallest token budget a search takes: about one sentence.
pub const MIN_BUDGET_TOKENS: usize = 20;

/// Most model calls one agent turn may make.
pub const MAX_TURN_ITERATIONS: usize = 32;

/// Arguments of `memory_search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for: names, identifiers, topics, in the conversation's language.
    pub query: String,
    /// Results to return (default: the workspace's `[search] max_results`, 6 unless configured).
    #[serde(default, alias = "maxResults", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_results: Option<usize>,
    /// Drop results scoring below this (default: the workspace's `[search] min_score`).
    #[serde(default, alias = "minScore", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_score: Option<f32>,
    /// Let the chat model re-order the best hits (default: the workspace's `[engine] rerank`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<bool>,
    /// Let the chat model write a passage that would answer the query, and
    /// search it beside the query: finds memory that shares neither words
    /// nor meaning with the question itself (default: the workspace's
    /// `[engine] expand`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand: Option<bool>,
    /// Answer as of this day (`YYYY-MM-DD`): facts that were true then, and
    /// nothing said after it (default: now, current facts first).
    #[serde(default, alias = "asOf", skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Give each hit the parts of its score (`parts`: keyword and vector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<bool>,
    /// Rank by `hybrid` (keywords and vectors, the default), `keyword`
    /// (BM25 alone) or `vector` (meaning alone; keywords without an
    /// embedding model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::output::Mode>,
    /// Fit the hits into about this many tokens (4 Latin characters or 1
    /// CJK character each): each snippet cut to its lines that share the
    /// most words with the query, the budget spent on memory files before
    /// session transcripts, a hit saying what another kept one says left
    /// out, and no hit once the budget is spent; the hits kept stay in
    /// ranked order (default: no budget, whole snippets).
    #[serde(
        default,
        alias = "budgetTokens",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(range(min = 20))]
    pub budget_tokens: Option<usize>,
}

impl SearchArgs {
    /// The `as_of` day, checked.
    pub fn as_of_day(&self) -> Result<Option<chrono::NaiveDate>> {
        as_of_day(self.as_of.as_deref())
    }

    /// A search for `query` with the workspace's settings.
    pub fn new(query: impl Into<String>) -> Self {
        SearchArgs {
            query: query.into(),
            ..Default::default()
        }
    }

    /// Refuses what no surface accepts: an empty query, 0 or more than
    /// [`MAX_RESULTS`] results, a minimum score outside 0..=1.
    pub fn validate(&self) -> Result<()> {
        if self.query.trim().is_empty() {
            return Err(Error::Invalid(
                "`query` is empty: give a few words to search for".into(),
            ));
        }
        self.as_of_day()?;
        if let Some(b) = self.budget_tokens {
            if b < MIN_BUDGET_TOKENS {
                return Err(Error::Invalid(format!(
                    "`budget_tokens` is {b}: give at least {MIN_BUDGET_TOKENS} tokens"
                )));
            }
        }
        if let Some(s) = self.min_score {
            if !(0.0..=1.0).contains(&s) {
                return Err(Error::Invalid(format!(
                    "`min_score` is {s}: give a number between 0 and 1"
                )));
            }
        }
        match self.max_results {
            Some(0) => Err(Error::Invalid(
                "`max_results` is 0: ask for at least 1 result".into(),
            )),
            Some(n) if n > MAX_RESULTS => Err(Error::Invalid(format!(
                "`max_results` is {n}: ask for at most {MAX_RESULTS}"
            ))),
            _ => Ok(()),
        }
    }
}

/// An `as_of` argument: none when absent or empty, else a `YYYY-MM-DD` day.
pub fn as_of_day(day: Option<&str>) -> Result<Option<chrono::NaiveDate>> {
    match day.map(str::trim) {
        None | Some("") => Ok(None),
        Some(d) => d.parse().map(Some).map_err(|_| {
            Error::Invalid(format!(
                "`as_of` is {d:?}: give a day as YYYY-MM-DD, e.g. 2026-03-01"
            ))
        }),
    }
}

/// Arguments of `memory_get`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// Workspace-relative path, e.g. MEMORY.md or memory/2026-01-31.md; a
    /// search hit's citation (`memory/2026-01-31.md#L3-L4`) works too.
    pub path: String,
    /// First line to return (1-based, default 1, or the citation's first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub from: Option<usize>,
    /// Number of lines (default: to the end, or the citation's lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub lines: Option<usize>,
}

impl GetArgs {
    /// The path without a citation's `Source: ` prefix and `#Lx-Ly`
    /// suffix, and the line range: explicit `from`/`lines` win over the
    /// citation's.
    pub fn resolve(&self) -> Result<(String, Option<usize>, Option<usize>)> {
        if self.from == Some(0) || self.lines == Some(0) {
            return Err(Error::Invalid("`from` and `lines` start at 1".into()));
        }
        let path = self.path.trim();
        let path = path.strip_prefix("Source:").unwrap_or(path).trim();
        // A `#L` that is not a line range stays part of the name.
        let (path, range) = match mnemo_engine::split_citation(path) {
            Some((p, a, b)) => (p, Some((a, b))),
            None => (path, None),
        };
        if path.is_empty() {
            return Err(Error::Invalid(
                "`path` is empty: give a workspace-relative path such as MEMORY.md".into(),
            ));
        }
        let (from, lines) = match range {
            Some((a, b)) => (Some(a), Some(b - a + 1)),
            None => (None, None),
        };
        Ok((
            path.to_string(),
            self.from.or(from),
            self.lines
                .or(if self.from.is_some() { None } else { lines }),
        ))
    }
}

/// Where `memory_write` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// Append lines to today's daily log, memory/YYYY-MM-DD.md.
    Daily,
    /// Save a typed memory file and its MEMORY.md index line.
    Typed,
    /// Replace (or add) one `## heading` section of MEMORY.md.
    MemorySection,
}

/// Arguments of `memory_write`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// What to save: for daily, the fact(s), one per line; for typed, the
    /// memory's body; for memory_section, the section's new body.
    #[serde(alias = "body")]
    pub text: String,
    /// Where to write (default: typed when `name` is given, memory_section
    /// when `heading` is, else daily).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<WriteMode>,
    /// typed: the memory's short name, also its file name. A name already
    /// taken is refused unless `replace` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// typed: one specific line saying what the memory holds (default: the text's first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// typed: user, feedback, project or reference.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<MemoryTypeArg>,
    /// memory_section: the section's heading without `## `, e.g. Preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// typed: update the memory of this name (without it, a name already
    /// taken is refused and nothing is written).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

/// The kind of a typed memory, as callers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryTypeArg {
    /// Who the user is and what they prefer.
    User,
    /// Corrections and confirmations of how to work.
    Feedback,
    /// Who, what and when of ongoing work.
    Project,
    /// Pointers to external resources.
    Reference,
}

impl From<MemoryTypeArg> for MemoryType {
    fn from(k: MemoryTypeArg) -> Self {
        match k {
            MemoryTypeArg::User => MemoryType::User,
            MemoryTypeArg::Feedback => MemoryType::Feedback,
            MemoryTypeArg::Project => MemoryType::Project,
            MemoryTypeArg::Reference => MemoryType::Reference,
        }
    }
}

/// A `memory_write` with its mode decided and its fields checked.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Lines for today's daily log.
    Daily {
        /// The lines.
        text: String,
    },
    /// A typed memory.
    Typed {
        /// Its name.
        name: String,
        /// Its description line.
        description: String,
        /// Its kind.
        kind: MemoryType,
        /// Its body.
        body: String,
        /// Update the memory of this name.
        replace: bool,
    },
    /// A section of MEMORY.md.
    MemorySection {
        /// Its heading.
        heading: String,
        /// Its body.
        body: String,
    },
}

impl WriteArgs {
    /// Lines for today's daily log.
    pub fn daily(text: impl Into<String>) -> Self {
        WriteArgs {
            text: text.into(),
            ..Default::default()
        }
    }

    /// Decides the mode and checks that it has what it needs.
    pub fn into_write(self) -> Result<Write> {
        let name = self.name.filter(|n| !n.trim().is_empty());
        let heading = self.heading.filter(|h| !h.trim().is_empty());
        let mode = self.mode.unwrap_or(if name.is_some() {
            WriteMode::Typed
        } else if heading.is_some() {
            WriteMode::MemorySection
        } else {
            WriteMode::Daily
        });
        if self.text.trim().is_empty() {
            return Err(Error::Invalid(
                "`text` is empty: say what to remember".into(),
            ));
        }
        match mode {
            WriteMode::Daily => Ok(Write::Daily { text: self.text }),
            WriteMode::Typed => {
                let Some(name) = name else {
                    return Err(Error::Invalid(
                        "mode typed needs `name`: the memory's short name".into(),
                    ));
                };
                let Some(kind) = self.kind else {
                    return Err(Error::Invalid(format!(
                        "a typed memory (`name` {name:?}) needs `type`: user, feedback, project or reference; \
                         omit `name` to append the text to today's daily log instead"
                    )));
                };
                let description = self
                    .description
                    .filter(|d| !d.trim().is_empty())
                    .unwrap_or_else(|| first_line(&self.text));
                Ok(Write::Typed {
                    name,
                    description,
                    kind: kind.into(),
                    body: self.text,
                    replace: self.replace,
                })
            }
            WriteMode::MemorySection => {
                let Some(heading) = heading else {
                    return Err(Error::Invalid(
                        "mode memory_section needs `heading`: the section's heading, e.g. Preferences".into(),
                    ));
                };
                Ok(Write::MemorySection {
                    heading,
                    body: self.text,
                })
            }
        }
    }
}

/// The first non-blank line of `text`, at most 120 characters.
fn first_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(120)
        .collect()
}

/// Arguments of `memory_forget`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// A fact's id in memory/facts.md (`f12`), or a typed memory's name or
    /// path memory/<name>.md. Nothing else is ever removed.
    pub name: String,
}

/// Arguments of `memory_history`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryHistoryArgs {
    /// The memory: a fact's id in memory/facts.md (`f12`) or a typed
    /// memory's name.
    pub name: String,
}

/// A message as callers send it: the OpenAI chat shape.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
pub struct MessageShape {
    /// system, user, assistant or tool.
    pub role: String,
    /// Text, a list of content parts, or null (an assistant message with tool calls).
    #[serde(default)]
    pub content: serde_json::Value,
    /// An assistant's tool calls: `[{id, type: "function", function: {name, arguments}}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
    /// A tool result's call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool result's tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// ISO 8601; now when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Messages to append to a session (`session_append`, `POST …/messages`):
/// `messages`, or one `message`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendArgs {
    /// Messages to append, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<MessageShape>>")]
    pub messages: Option<Vec<Message>>,
    /// One message to append (instead of `messages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<MessageShape>")]
    pub message: Option<Message>,
}

impl AppendArgs {
    /// The messages, oldest first; none at all is an error.
    pub fn into_messages(self) -> Result<Vec<Message>> {
        let mut out = self.messages.unwrap_or_default();
        out.extend(self.message);
        if out.is_empty() {
            return Err(Error::Invalid(
                "no messages: send `messages` (a list) or `message` (one)".into(),
            ));
        }
        Ok(out)
    }
}

/// Arguments of a session's history (`GET …/messages`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// Only the messages since the consolidation cursor, replayed as a model sees them.
    #[serde(default)]
    pub since_cursor: bool,
}

/// Arguments of `session_context` (`POST …/context`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// The user's next message, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Arguments of a compaction (`POST …/compact`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactArgs {
    /// Run only this level: 1 tool-result budget, 2 snip, 3 microcompact, 4
    /// collapse, 5 autocompact (summary), 6 reactive; default: the whole
    /// pipeline, cheapest first, as far as needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 6))]
    pub level: Option<u8>,
    /// What the summary should keep above all (levels 5 and 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

/// Arguments of an agent turn (`POST …/turn`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnArgs {
    /// The user's message.
    pub message: String,
    /// Model calls at most (default 8, at most 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 32))]
    pub max_iterations: Option<usize>,
    /// Run the recall side query first (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(v: serde_json::Value) -> Result<Write> {
        serde_json::from_value::<WriteArgs>(v).unwrap().into_write()
    }

    #[test]
    fn a_write_s_mode_follows_its_fields_unless_given() {
        assert!(matches!(
            write(json!({"text": "x"})),
            Ok(Write::Daily { .. })
        ));
        let typed =
            write(json!({"text": "Prefers tea.\nNo sugar.", "name": "Tea", "type": "user"}));
        match typed {
            Ok(Write::Typed {
                description, kind, ..
            }) => {
                assert_eq!(description, "Prefers tea.");
                assert_eq!(kind, MemoryType::User);
            }
            other => panic!("{other:?}"),
        }
        // The older MCP shape: `mode` with `body`.
        assert!(matches!(
            write(json!({"mode": "memory_section", "heading": "Prefs", "body": "b"})),
            Ok(Write::MemorySection { .. })
        ));
        assert!(matches!(
            write(json!({"mode": "daily", "text": "x", "name": "ignored"})),
            Ok(Write::Daily { .. })
        ));
        let err = write(json!({"text": "x", "name": "X"})).unwrap_err();
        assert!(err.to_string().contains("needs `type`"), "{err}");
        assert!(write(json!({"text": "  "})).is_err());
        assert!(write(json!({"mode": "memory_section", "text": "b"})).is_err());
        assert!(serde_json::from_value::<WriteArgs>(json!({"mode": "nope", "text": "x"})).is_err());
        assert!(serde_json::from_value::<WriteArgs>(json!({"text": "x", "type": "nope"})).is_err());
    }

    #[test]
    fn a_citation_opens_as_a_path_and_lines() {
        let get = |p: &str| {
            GetArgs {
                path: p.into(),
                ..Default::default()
            }
            .resolve()
            .unwrap()
        };
        assert_eq!(get("MEMORY.md"), ("MEMORY.md".into(), None, None));
        assert_eq!(get("memory/a#Lb.md"), ("memory/a#Lb.md".into(), None, None));
        assert_eq!(
            get("MEMORY.md#L4-L6"),
            ("MEMORY.md".into(), Some(4), Some(3))
        );
        assert_eq!(
            get("Source: sessions/a.jsonl#L45-L45"),
            ("sessions/a.jsonl".into(), Some(45), Some(1))
        );
        // Explicit lines win over the citation's.
        let args = GetArgs {
            path: "MEMORY.md#L4-L6".into(),
            from: Some(2),
            lines: None,
        };
        assert_eq!(args.resolve().unwrap(), ("MEMORY.md".into(), Some(2), None));
        assert!(GetArgs {
            path: "MEMORY.md".into(),
            from: Some(0),
            lines: None
        }
        .resolve()
        .is_err());
    }

    #[test]
    fn searches_are_validated_alike_everywhere() {
        let mut a = SearchArgs::new("tea");
        assert!(a.validate().is_ok());
        a.max_results = Some(0);
        assert!(a.validate().is_err());
        a.max_results = Some(101);
        assert!(a.validate().is_err());
        a.max_results = None;
        a.min_score = Some(2.0);
        assert!(a.validate().is_err());
        assert!(SearchArgs::new(" ").validate().is_err());
    }

    #[test]
    fn one_message_or_many() {
        let a: AppendArgs =
            serde_json::from_value(json!({"message": {"role": "user", "content": "hi"}})).unwrap();
        assert_eq!(a.into_messages().unwrap().len(), 1);
        let a: AppendArgs = serde_json::from_value(json!({})).unwrap();
        assert!(a.into_messages().is_err());
    }
}
