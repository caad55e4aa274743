//! Claude Code transcripts: `~/.claude/projects/<project>/<session>.jsonl`,
//! one JSON entry per line, and the transcripts of the subagents a session
//! started (`<session>/subagents/agent-<id>.jsonl`; older releases wrote them
//! into the session's own file, marked `isSidechain`).
//!
//! - `user` and `assistant` entries carry an API message. Claude Code writes
//!   one `assistant` entry per content block of a reply, all with the same
//!   `message.id`: they become one mnemo message (text, `tool_use` blocks as
//!   tool calls, thinking as `reasoning_content`). A user entry's
//!   `tool_result` blocks become tool messages, its other blocks a user
//!   message. Each message keeps its original entries under `claude_code`.
//! - A `compact_boundary` system entry and the summary after it
//!   (`isCompactSummary`) become a compaction record; `isMeta` user entries
//!   (caveats Claude Code injects), other system entries, attachments and
//!   `summary` entries (titles) are kept as `claude_code_entry` records.
//! - Claude Code's own bookkeeping (API request shapes, queue operations,
//!   costs, file snapshots) is left out and counted in the report; entries
//!   of a type this version does not know are kept verbatim and reported.

use std::collections::{BTreeMap, HashMap};

use mnemo_core::{Content, FunctionCall, Message, Role, ToolCall};
use mnemo_store::{CompactionRecord, Record, SessionMetadata};
use serde_json::{json, Map, Value};

use crate::importer::{content_of, str_field, Importer, SessionLine};
use crate::report::{Kind, Verb};
use crate::source::Source;

/// Entry types that record how Claude Code ran, not what was said.
const BOOKKEEPING: &[&str] = &[
    "queue-operation",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "atis-latch",
    "tools-used",
    "last-prompt",
    "cost-state",
    "file-history-snapshot",
    "mode",
];

/// Entry types kept as records.
const KEPT: &[&str] = &[
    "system",
    "summary",
    "attachment",
    "custom-title",
    "ai-title",
];

/// Imports the transcript at `rel` as the session `key`; `extra` goes into
/// the session's metadata (a subagent's description).
pub(crate) fn import(
    imp: &mut Importer<'_>,
    src: &Source,
    rel: &str,
    key: &str,
    extra: Option<(&str, Value)>,
) {
    let Some(text) = src.read_text(rel, Kind::Session, &mut imp.report) else {
        return;
    };
    import_text(imp, &text, rel, key, extra);
}

/// [`import`] of a transcript already read (`text`, from the source file
/// `rel`): the part of a transcript still being written that Claude Code
/// has finished ([`crate::claude_code_live`]).
pub(crate) fn import_text(
    imp: &mut Importer<'_>,
    text: &str,
    rel: &str,
    key: &str,
    extra: Option<(&str, Value)>,
) {
    let mut main: Vec<(usize, Value)> = Vec::new();
    let mut side: Vec<(usize, Value)> = Vec::new();
    let mut unparsed: Vec<(usize, Record)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || imp.over_line_limit(rel, i, line) {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => {
                // A subagent's file is all sidechain; in a session's own
                // file (older releases) sidechain entries are a subagent's.
                let sidechain = v.get("isSidechain") == Some(&Value::Bool(true));
                if sidechain && extra.is_none() {
                    side.push((i, v));
                } else {
                    main.push((i, v));
                }
            }
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "not a JSON object".into(),
                };
                unparsed.push((i, imp.unparsed_line(rel, i, line, why)));
            }
        }
    }
    let mut counts = Counts::default();
    let mut converted = convert(imp, main, unparsed, rel, key, &mut counts);
    if let Some((name, value)) = extra {
        converted.0.metadata.insert(name.into(), value);
    }
    imp.session(key, converted.0, converted.1, rel);
    if !side.is_empty() {
        let side_key = format!("{key}:sidechain");
        let mut converted = convert(imp, side, Vec::new(), rel, &side_key, &mut counts);
        converted
            .0
            .metadata
            .insert("claude_code_parent".into(), json!(key));
        imp.session(&side_key, converted.0, converted.1, rel);
    }
    counts.report(imp, rel);
}

/// Entries left out or not understood, per type.
#[derive(Default)]
struct Counts {
    skipped: BTreeMap<String, usize>,
    unknown: BTreeMap<String, usize>,
}

impl Counts {
    fn report(self, imp: &mut Importer<'_>, rel: &str) {
        let list = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(t, n)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.skipped.is_empty() {
            let n: usize = self.skipped.values().sum();
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                format!(
                    "{n} entr(ies) of Claude Code's own bookkeeping ({}): how it ran, not what was said",
                    list(&self.skipped)
                ),
            );
        }
        if !self.unknown.is_empty() {
            let n: usize = self.unknown.values().sum();
            imp.report.push(
                Verb::Unknown,
                Kind::Session,
                "",
                rel,
                format!(
                    "{n} entr(ies) of a type this version does not know ({}): kept verbatim as claude_code_entry records",
                    list(&self.unknown)
                ),
            );
        }
    }
}

/// Builds the session: metadata and lines, in file order.
fn convert(
    imp: &mut Importer<'_>,
    entries: Vec<(usize, Value)>,
    unparsed: Vec<(usize, Record)>,
    rel: &str,
    key: &str,
    counts: &mut Counts,
) -> (SessionMetadata, Vec<SessionLine>) {
    let mut meta = SessionMetadata::new(key);
    let mut b = Builder::default();
    let mut unparsed = unparsed.into_iter().peekable();
    let mut first_ts: Option<String> = None;
    let mut last_ts: Option<String> = None;
    for (line, entry) in entries {
        while let Some((_, r)) = unparsed.next_if(|(l, _)| *l < line) {
            b.flush_assistant();
            b.records.push(r);
        }
        if let Some(ts) = str_field(&entry, "timestamp") {
            first_ts.get_or_insert_with(|| ts.to_string());
            last_ts = Some(ts.to_string());
        }
        for field in ["sessionId", "cwd", "gitBranch", "version"] {
            if let Some(v) = str_field(&entry, field) {
                let name = format!("claude_code_{}", snake(field));
                meta.metadata.entry(name).or_insert_with(|| json!(v));
            }
        }
        let kind = str_field(&entry, "type").unwrap_or("").to_string();
        match kind.as_str() {
            "assistant" => b.assistant(entry),
            "user" => {
                b.flush_assistant();
                b.user(entry);
            }
            "system" if str_field(&entry, "subtype") == Some("compact_boundary") => {
                b.flush_assistant();
                b.flush_compaction();
                b.compaction = Some(compaction(entry));
            }
            k if BOOKKEEPING.contains(&k) => {
                *counts.skipped.entry(k.to_string()).or_default() += 1;
            }
            k => {
                b.flush_assistant();
                if let Some(title) = str_field(&entry, "summary")
                    .or_else(|| str_field(&entry, "customTitle"))
                    .or_else(|| str_field(&entry, "title"))
                    .filter(|_| k.ends_with("title") || k == "summary")
                {
                    meta.metadata.insert("title".into(), json!(title));
                }
                if !KEPT.contains(&k) {
                    *counts
                        .unknown
                        .entry(if k.is_empty() {
                            "(none)".into()
                        } else {
                            k.to_string()
                        })
                        .or_default() += 1;
                }
                b.records.push(kept(entry));
            }
        }
    }
    b.flush_assistant();
    b.flush_compaction();
    b.records.extend(unparsed.map(|(_, r)| r));
    if let Some(ts) = first_ts {
        meta.created_at = ts;
    }
    if let Some(ts) = last_ts {
        meta.updated_at = ts;
    }
    meta.extra.insert(
        "imported_from".into(),
        json!({"tool": "claude-code", "source": format!("{}/{rel}", imp.source_display())}),
    );
    (meta, b.records.into_iter().map(SessionLine::from).collect())
}

#[derive(Default)]
struct Builder {
    records: Vec<Record>,
    /// The assistant reply being assembled: its API message id, the
    /// message so far, the entries it came from.
    assistant: Option<(String, Message, Vec<Value>)>,
    compaction: Option<CompactionRecord>,
    /// Tool names by call id, for the results.
    calls: HashMap<String, String>,
}

impl Builder {
    fn assistant(&mut self, entry: Value) {
        let Some(m) = entry.get("message").filter(|m| m.is_object()) else {
            self.flush_assistant();
            self.records.push(kept(entry));
            return;
        };
        let id = str_field(m, "id").unwrap_or("").to_string();
        if self
            .assistant
            .as_ref()
            .is_none_or(|(cur, _, _)| id.is_empty() || *cur != id)
        {
            self.flush_assistant();
            let mut msg = Message::assistant("");
            msg.content = None;
            msg.timestamp = str_field(&entry, "timestamp").map(str::to_string);
            self.assistant = Some((id, msg, Vec::new()));
        }
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let Some((_, msg, originals)) = self.assistant.as_mut() else {
            return;
        };
        for block in &blocks {
            match str_field(block, "type") {
                Some("text") => {
                    append_text(&mut msg.content, str_field(block, "text").unwrap_or(""))
                }
                Some("thinking") => {
                    let t = str_field(block, "thinking").unwrap_or("");
                    let joined = match msg.extra.get("reasoning_content").and_then(Value::as_str) {
                        Some(prev) => format!("{prev}\n{t}"),
                        None => t.to_string(),
                    };
                    msg.extra.insert("reasoning_content".into(), json!(joined));
                }
                Some("tool_use") | Some("server_tool_use") => {
                    let call_id = str_field(block, "id").unwrap_or("").to_string();
                    let name = str_field(block, "name").unwrap_or("").to_string();
                    self.calls.insert(call_id.clone(), name.clone());
                    msg.tool_calls.get_or_insert_with(Vec::new).push(ToolCall {
                        id: call_id,
                        kind: "function".into(),
                        function: FunctionCall {
                            name,
                            arguments: block.get("input").cloned().unwrap_or(json!({})),
                        },
                        extra: Map::new(),
                    });
                }
                // Redacted thinking and other blocks stay in the entry.
                _ => {}
            }
        }
        originals.push(entry);
    }

    fn flush_assistant(&mut self) {
        if let Some((_, mut msg, originals)) = self.assistant.take() {
            msg.extra
                .insert("claude_code".into(), Value::Array(originals));
            self.records.push(Record::Message(msg));
        }
    }

    fn flush_compaction(&mut self) {
        if let Some(c) = self.compaction.take() {
            self.records.push(Record::Compaction(c));
        }
    }

    fn user(&mut self, entry: Value) {
        let flag = |name: &str| entry.get(name) == Some(&Value::Bool(true));
        let Some(m) = entry.get("message").filter(|m| m.is_object()) else {
            self.records.push(kept(entry));
            return;
        };
        if flag("isCompactSummary") {
            let summary = text_of(m.get("content"));
            let mut c = self
                .compaction
                .take()
                .unwrap_or_else(|| compaction(json!({})));
            c.summary = Some(summary);
            if let Some(Value::Array(a)) = c.extra.get_mut("claude_code") {
                a.push(entry.clone());
            }
            self.records.push(Record::Compaction(c));
            return;
        }
        if flag("isMeta") {
            self.records.push(kept(entry));
            return;
        }
        let ts = str_field(&entry, "timestamp").map(str::to_string);
        let mut out: Vec<Message> = Vec::new();
        match m.get("content") {
            Some(Value::Array(blocks)) => {
                let mut rest: Vec<Value> = Vec::new();
                for block in blocks {
                    if str_field(block, "type") == Some("tool_result") {
                        let id = str_field(block, "tool_use_id").unwrap_or("");
                        let name = self.calls.get(id).cloned().unwrap_or_default();
                        let mut msg = Message::tool_result(id, name, "");
                        msg.content = content_of(block.get("content"));
                        if block.get("is_error") == Some(&Value::Bool(true)) {
                            msg.extra.insert("is_error".into(), json!(true));
                        }
                        out.push(msg);
                    } else {
                        rest.push(block.clone());
                    }
                }
                if !rest.is_empty() {
                    let mut msg = Message::user("");
                    msg.content = content_of(Some(&Value::Array(rest)));
                    out.push(msg);
                }
            }
            other => {
                let mut msg = Message::user("");
                msg.content = content_of(other);
                out.push(msg);
            }
        }
        if out.is_empty() {
            self.records.push(kept(entry));
            return;
        }
        for (i, mut msg) in out.into_iter().enumerate() {
            msg.role = if msg.tool_call_id.is_some() {
                Role::Tool
            } else {
                Role::User
            };
            msg.timestamp = ts.clone();
            // The entry rides along once, on the first message it made.
            if i == 0 {
                msg.extra
                    .insert("claude_code".into(), json!([entry.clone()]));
            }
            self.records.push(Record::Message(msg));
        }
    }
}

fn compaction(boundary: Value) -> CompactionRecord {
    let meta = boundary.get("compactMetadata");
    let mut extra = Map::new();
    let originals = if boundary.as_object().is_some_and(|o| !o.is_empty()) {
        vec![boundary.clone()]
    } else {
        Vec::new()
    };
    extra.insert("claude_code".into(), Value::Array(originals));
    CompactionRecord {
        kind: "claude-code".into(),
        tokens_before: meta
            .and_then(|m| m.get("preTokens"))
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize,
        tokens_after: 0,
        summary: None,
        first_kept: None,
        timestamp: str_field(&boundary, "timestamp").unwrap_or("").to_string(),
        extra,
    }
}

fn kept(entry: Value) -> Record {
    Record::Other(json!({"_type": "claude_code_entry", "entry": entry}))
}

fn append_text(content: &mut Option<Content>, text: &str) {
    match content {
        Some(Content::Text(t)) => {
            t.push('\n');
            t.push_str(text);
        }
        _ => *content = Some(Content::Text(text.to_string())),
    }
}

fn text_of(v: Option<&Value>) -> String {
    match content_of(v) {
        Some(c) => c.text(),
        None => String::new(),
    }
}

fn snake(field: &str) -> String {
    let mut out = String::new();
    for c in field.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
