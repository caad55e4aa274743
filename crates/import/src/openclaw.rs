//! OpenClaw: `MEMORY.md` or `memory.md`, `memory/**/*.md` (daily logs and
//! notes) and `agents/<agent>/sessions/<id>.jsonl` transcripts.
//!
//! A transcript is a tree of entries linked by `id`/`parentId` behind a
//! `{"type":"session"}` header. The messages on the active branch (from the
//! last entry back to the root) become mnemo messages; every other entry
//! (other branches, model changes, labels, custom entries) is kept as an
//! `openclaw_entry` record, and compaction entries become compaction
//! records. Each converted message keeps its original entry under `openclaw`.

use std::collections::{HashMap, HashSet};

use mnemo_core::{Content, FunctionCall, Message, Role, ToolCall};
use mnemo_store::{CompactionRecord, Record, SessionMetadata};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::importer::{str_field, Importer, MergeLine};
use crate::report::{Kind, Verb};
use crate::source::{Entry, Source};

pub(crate) fn run(imp: &mut Importer<'_>, src: &Source) -> Result<()> {
    let has_memory = |base: &str| {
        ["MEMORY.md", "memory.md", "memory"]
            .iter()
            .any(|n| src.entry(&join(base, n)) != Entry::Missing)
    };
    // The state folder (~/.openclaw) keeps the memory files in workspace/.
    let base = if !has_memory("") && has_memory("workspace") {
        "workspace"
    } else {
        ""
    };
    let agents = src.entry("agents") == Entry::Dir;
    if !has_memory(base) && !agents {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not an OpenClaw folder: it has no MEMORY.md, memory.md, memory/ or agents/; give the workspace or the state folder (by default ~/.openclaw)".into(),
        });
    }
    for name in ["MEMORY.md", "memory.md"] {
        let rel = join(base, name);
        if src.entry(&rel) == Entry::Missing {
            continue;
        }
        // On a case-insensitive file system both names are the same file.
        if name == "memory.md" && same_file(src, &join(base, "MEMORY.md"), &rel) {
            continue;
        }
        if let Some(text) = src.read_text(&rel, Kind::MemoryMd, &mut imp.report) {
            let lines = text
                .lines()
                .map(|l| MergeLine {
                    text: l.to_string(),
                    needle: None,
                })
                .collect();
            imp.merge_memory_md(&rel, lines);
        }
    }
    let memory_dir = join(base, "memory");
    for rel in src.files(&memory_dir, true, Kind::File, &mut imp.report) {
        let inner = rel
            .strip_prefix(&format!("{memory_dir}/"))
            .unwrap_or(&rel)
            .to_string();
        if !inner.ends_with(".md") {
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                "not a Markdown memory file: not imported",
            );
            continue;
        }
        let Some(bytes) = src.read(&rel, Kind::File, &mut imp.report) else {
            continue;
        };
        let daily = is_daily(&inner);
        imp.file(&format!("memory/{inner}"), &bytes, Kind::File, &rel, daily);
    }
    if agents {
        let mut names: Vec<String> = Vec::new();
        if let Ok(rd) = std::fs::read_dir(src.path("agents")) {
            names = rd
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect();
        }
        names.sort();
        for agent in names {
            let dir = format!("agents/{agent}");
            match src.entry(&dir) {
                Entry::Dir => {}
                Entry::Link => {
                    src.report_link(&dir, Kind::Session, &mut imp.report);
                    continue;
                }
                _ => continue,
            }
            let index_rel = format!("{dir}/sessions/sessions.json");
            let keys = session_keys(imp, src, &index_rel);
            for rel in src.files(
                &format!("{dir}/sessions"),
                false,
                Kind::Session,
                &mut imp.report,
            ) {
                if rel == index_rel {
                    let n: usize = keys.values().map(Vec::len).sum();
                    imp.report.push(
                        Verb::Skip,
                        Kind::Other,
                        "",
                        rel,
                        format!(
                            "the session index: {n} session key(s) recorded in the metadata of the \
                             transcripts they name (openclaw_keys)"
                        ),
                    );
                    continue;
                }
                if !rel.ends_with(".jsonl") {
                    imp.report.push(
                        Verb::Skip,
                        Kind::Other,
                        "",
                        rel,
                        "not a live transcript (*.jsonl): not imported",
                    );
                    continue;
                }
                transcript(imp, src, &agent, &rel, &keys);
            }
        }
    }
    Ok(())
}

fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

fn same_file(src: &Source, a: &str, b: &str) -> bool {
    match (src.path(a).canonicalize(), src.path(b).canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// `YYYY-MM-DD.md` at any depth: an append-only daily log.
fn is_daily(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let b = name.as_bytes();
    name.len() == 13
        && name.ends_with(".md")
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}

/// OpenClaw's session index (`sessions.json`: session key → `{sessionId,
/// …}`), as session id → the keys that name it. Missing or unreadable:
/// none (reported); the transcripts import without it.
fn session_keys(imp: &mut Importer<'_>, src: &Source, rel: &str) -> HashMap<String, Vec<String>> {
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    if src.entry(rel) != Entry::File {
        return out;
    }
    let Some(text) = src.read_text(rel, Kind::Other, &mut imp.report) else {
        return out;
    };
    let entries = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => m,
        Ok(_) | Err(_) => {
            imp.report.push(
                Verb::Error,
                Kind::Other,
                "",
                rel,
                "not a JSON object of session keys: transcripts keep their file names only",
            );
            return out;
        }
    };
    for (key, entry) in entries {
        if let Some(id) = str_field(&entry, "sessionId") {
            out.entry(id.to_string()).or_default().push(key);
        }
    }
    out.values_mut().for_each(|keys| keys.sort());
    out
}

fn transcript(
    imp: &mut Importer<'_>,
    src: &Source,
    agent: &str,
    rel: &str,
    keys: &HashMap<String, Vec<String>>,
) {
    let Some(text) = src.read_text(rel, Kind::Session, &mut imp.report) else {
        return;
    };
    let stem = rel
        .rsplit('/')
        .next()
        .unwrap_or(rel)
        .trim_end_matches(".jsonl");
    let key = format!("openclaw:{agent}:{stem}");
    let (mut meta, records) = convert(imp, &text, rel, &key);
    // The keys OpenClaw knew this conversation by ("agent:main:main",
    // "agent:main:telegram:dm:42"), so it can be found by them.
    if let Some(k) = keys.get(stem) {
        meta.metadata.insert("openclaw_keys".into(), json!(k));
    }
    imp.session(&key, meta, records, rel);
}

/// Converts a transcript into session metadata and log records.
pub(crate) fn convert(
    imp: &mut Importer<'_>,
    text: &str,
    rel: &str,
    key: &str,
) -> (SessionMetadata, Vec<Record>) {
    let mut meta = SessionMetadata::new(key);
    let mut entries: Vec<(usize, Value)> = Vec::new();
    let mut records = Vec::new();
    let mut unparsed: Vec<(usize, Record)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => entries.push((i, v)),
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "not a JSON object".into(),
                };
                let record = imp.unparsed_line(rel, i, line, why);
                unparsed.push((i, record));
            }
        }
    }
    let mut header_seen = false;
    if let Some((_, h)) = entries
        .iter()
        .find(|(_, e)| str_field(e, "type") == Some("session"))
    {
        header_seen = true;
        if let Some(ts) = str_field(h, "timestamp") {
            meta.created_at = ts.to_string();
            meta.updated_at = ts.to_string();
        }
        meta.metadata.insert("openclaw_session".into(), h.clone());
    }
    if !header_seen {
        imp.report.push(
            Verb::Error,
            Kind::Session,
            "",
            format!("{rel}:1"),
            "no `{\"type\":\"session\"}` header: imported anyway, every entry kept",
        );
    }
    if let Some((_, last)) = entries.last() {
        if let Some(ts) = str_field(last, "timestamp") {
            meta.updated_at = ts.to_string();
        }
    }
    meta.extra.insert(
        "imported_from".into(),
        json!({"tool": "openclaw", "source": format!("{}/{rel}", imp.source_display())}),
    );
    let active = active_branch(&entries);
    let mut ordinal_of: HashMap<String, usize> = HashMap::new();
    let mut messages = 0usize;
    let mut unparsed = unparsed.into_iter().peekable();
    for (line, entry) in &entries {
        while let Some((_, r)) = unparsed.next_if(|(l, _)| l < line) {
            records.push(r);
        }
        let kind = str_field(entry, "type").unwrap_or("");
        if kind == "session" {
            continue;
        }
        let id = str_field(entry, "id");
        let on_path = id.is_none_or(|id| active.contains(id));
        if on_path && kind == "message" {
            if let Some(m) = to_message(entry) {
                if let Some(id) = id {
                    ordinal_of.insert(id.to_string(), messages);
                }
                messages += 1;
                records.push(Record::Message(m));
                continue;
            }
        }
        if on_path && kind == "compaction" {
            let first_kept =
                str_field(entry, "firstKeptEntryId").and_then(|f| ordinal_of.get(f).copied());
            let mut extra = Map::new();
            extra.insert("openclaw".into(), entry.clone());
            records.push(Record::Compaction(CompactionRecord {
                kind: "openclaw".into(),
                tokens_before: entry
                    .get("tokensBefore")
                    .and_then(Value::as_u64)
                    .unwrap_or(0) as usize,
                tokens_after: 0,
                summary: str_field(entry, "summary").map(str::to_string),
                first_kept,
                timestamp: str_field(entry, "timestamp").unwrap_or("").to_string(),
                extra,
            }));
            continue;
        }
        records.push(Record::Other(json!({
            "_type": "openclaw_entry",
            "active": on_path,
            "entry": entry,
        })));
    }
    records.extend(unparsed.map(|(_, r)| r));
    (meta, records)
}

/// Ids on the path from the current leaf to the root. The leaf is the last
/// entry in file order, unless a later `leaf` entry points elsewhere.
fn active_branch(entries: &[(usize, Value)]) -> HashSet<String> {
    let mut parent: HashMap<&str, Option<&str>> = HashMap::new();
    let mut leaf: Option<&str> = None;
    for (_, e) in entries {
        if str_field(e, "type") == Some("session") {
            continue;
        }
        if str_field(e, "type") == Some("leaf") {
            if let Some(t) = str_field(e, "targetId") {
                leaf = Some(t);
            }
            continue;
        }
        if let Some(id) = str_field(e, "id") {
            parent.insert(id, str_field(e, "parentId"));
            leaf = Some(id);
        }
    }
    let mut out = HashSet::new();
    let mut cur = leaf.filter(|l| parent.contains_key(l));
    // Bounded walk: a malformed file with a parent cycle must not hang.
    while let Some(id) = cur {
        if !out.insert(id.to_string()) {
            break;
        }
        cur = parent.get(id).copied().flatten();
    }
    out
}

/// The mnemo form of a `message` entry, when it is a user, assistant or
/// tool-result message; the whole original entry rides along under
/// `openclaw`.
fn to_message(entry: &Value) -> Option<Message> {
    let m = entry.get("message")?;
    let role = str_field(m, "role")?;
    let mut out = match role {
        "user" => Message {
            content: content_of(m.get("content")),
            ..Message::user("")
        },
        "assistant" => {
            let mut texts = Vec::new();
            let mut thinking = Vec::new();
            let mut calls = Vec::new();
            match m.get("content") {
                Some(Value::String(s)) => texts.push(s.clone()),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        match str_field(p, "type") {
                            Some("text") => {
                                texts.push(str_field(p, "text").unwrap_or("").to_string())
                            }
                            Some("thinking") => {
                                thinking.push(str_field(p, "thinking").unwrap_or("").to_string())
                            }
                            Some("toolCall") => calls.push(ToolCall {
                                id: str_field(p, "id").unwrap_or("").to_string(),
                                kind: "function".into(),
                                function: FunctionCall {
                                    name: str_field(p, "name").unwrap_or("").to_string(),
                                    arguments: p.get("arguments").cloned().unwrap_or(json!({})),
                                },
                                extra: Map::new(),
                            }),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            let mut msg = Message::assistant("");
            msg.content = (!texts.is_empty()).then(|| Content::Text(texts.join("\n")));
            msg.tool_calls = (!calls.is_empty()).then_some(calls);
            if !thinking.is_empty() {
                msg.extra
                    .insert("reasoning_content".into(), json!(thinking.join("\n")));
            }
            msg
        }
        "toolResult" => {
            let mut msg = Message::tool_result(
                str_field(m, "toolCallId").unwrap_or(""),
                str_field(m, "toolName").unwrap_or(""),
                "",
            );
            msg.content = content_of(m.get("content"));
            msg
        }
        _ => return None,
    };
    out.role = match role {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => Role::Tool,
    };
    out.timestamp = str_field(entry, "timestamp").map(str::to_string);
    out.extra.insert("openclaw".into(), entry.clone());
    Some(out)
}

/// Text parts become plain text; anything else (images) stays as parts.
fn content_of(v: Option<&Value>) -> Option<Content> {
    match v? {
        Value::String(s) => Some(Content::Text(s.clone())),
        Value::Array(parts) => {
            if parts.iter().all(|p| str_field(p, "type") == Some("text")) {
                Some(Content::Text(
                    parts
                        .iter()
                        .filter_map(|p| str_field(p, "text"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ))
            } else {
                Some(Content::Parts(parts.clone()))
            }
        }
        Value::Null => None,
        other => Some(Content::Text(other.to_string())),
    }
}
