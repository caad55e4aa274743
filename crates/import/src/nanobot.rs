//! nanobot workspaces: `sessions/*.jsonl` (a metadata line, then one message
//! per line), `memory/MEMORY.md`, and the history as `memory/HISTORY.md`
//! (classic) or `memory/history.jsonl` (HEAD).

use mnemo_store::{Record, SessionMetadata};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::importer::{has_stamp, split_history, str_field, HistoryEntry, Importer, MergeLine};
use crate::report::{Kind, Verb};
use crate::source::{Entry, Source};

pub(crate) fn run(imp: &mut Importer<'_>, src: &Source) -> Result<()> {
    if src.entry("sessions") != Entry::Dir && src.entry("memory") != Entry::Dir {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not a nanobot workspace: it has neither sessions/ nor memory/; give the workspace folder (by default ~/.nanobot/workspace)".into(),
        });
    }
    for rel in src.files("sessions", false, Kind::Session, &mut imp.report) {
        if rel.ends_with(".jsonl") {
            session(imp, src, &rel);
        } else {
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                "not a session log (*.jsonl): not imported",
            );
        }
    }
    if src.entry("memory/MEMORY.md") != Entry::Missing {
        if let Some(text) = src.read_text("memory/MEMORY.md", Kind::MemoryMd, &mut imp.report) {
            let lines = text
                .lines()
                .map(|l| MergeLine {
                    text: l.to_string(),
                    needle: None,
                })
                .collect();
            imp.merge_memory_md("memory/MEMORY.md", lines);
        }
    }
    if src.entry("memory/HISTORY.md") != Entry::Missing {
        if let Some(text) = src.read_text("memory/HISTORY.md", Kind::History, &mut imp.report) {
            let entries = split_history(&text)
                .into_iter()
                .map(|text| HistoryEntry { text })
                .collect();
            imp.history("memory/HISTORY.md", entries);
        }
    }
    if src.entry("memory/history.jsonl") != Entry::Missing {
        if let Some(text) = src.read_text("memory/history.jsonl", Kind::History, &mut imp.report) {
            let entries = history_jsonl(imp, &text);
            imp.history("memory/history.jsonl", entries);
        }
    }
    for rel in src.files("memory", true, Kind::Other, &mut imp.report) {
        let known = [
            "memory/MEMORY.md",
            "memory/HISTORY.md",
            "memory/history.jsonl",
        ];
        if known.contains(&rel.as_str()) {
            continue;
        }
        let detail = if rel.ends_with(".cursor") || rel.ends_with(".dream_cursor") {
            "nanobot's own bookkeeping: not needed by mnemo"
        } else {
            "not a nanobot memory file: not imported (copy it by hand if you need it)"
        };
        imp.report.push(Verb::Skip, Kind::Other, "", rel, detail);
    }
    Ok(())
}

fn session(imp: &mut Importer<'_>, src: &Source, rel: &str) {
    let Some(text) = src.read_text(rel, Kind::Session, &mut imp.report) else {
        return;
    };
    let mut meta: Option<SessionMetadata> = None;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match Record::parse(line) {
            Ok(Record::Metadata(m)) => meta = Some(m),
            Ok(r) => records.push(r),
            Err(e) => records.push(imp.unparsed_line(rel, i, line, e)),
        }
    }
    let stem = rel
        .rsplit('/')
        .next()
        .unwrap_or(rel)
        .trim_end_matches(".jsonl");
    let mut meta = match meta {
        Some(m) if !m.key.trim().is_empty() => m,
        other => {
            // nanobot wrote `:` as `_`; channel names carry no `_`, so the
            // first one is the separator.
            let key = stem.replacen('_', ":", 1);
            let mut m = other.unwrap_or_else(|| SessionMetadata::new(&key));
            m.key = key.clone();
            imp.report.push(
                Verb::Error,
                Kind::Session,
                "",
                format!("{rel}:1"),
                format!(
                    "no metadata line with a key: the session is imported as {key:?} (from the file name)"
                ),
            );
            m
        }
    };
    meta.extra.insert(
        "imported_from".into(),
        json!({"tool": "nanobot", "source": format!("{}/{rel}", imp.source_display())}),
    );
    let key = meta.key.clone();
    imp.session(&key, meta, records, rel);
}

/// `{"cursor","timestamp","content","session_key"?}` lines become
/// `[YYYY-MM-DD HH:MM] content` entries.
fn history_jsonl(imp: &mut Importer<'_>, text: &str) -> Vec<HistoryEntry> {
    let rel = "memory/history.jsonl";
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{rel}:{}", i + 1);
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                imp.report.push(
                    Verb::Error,
                    Kind::History,
                    "",
                    at,
                    format!("not JSON ({e}); the entry was skipped: fix the line and run the import again"),
                );
                continue;
            }
        };
        let content = match v.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => {
                imp.report.push(
                    Verb::Error,
                    Kind::History,
                    "",
                    at,
                    "the entry has no `content`; it was skipped",
                );
                continue;
            }
            Some(other) => other.to_string(),
        };
        let ts = str_field(&v, "timestamp").unwrap_or("").trim();
        let stamp = format!("[{}]", ts.get(..16).unwrap_or(ts).replace('T', " "));
        if !has_stamp(&stamp) {
            imp.report.push(
                Verb::Error,
                Kind::History,
                "",
                at,
                format!("timestamp {ts:?} is not `YYYY-MM-DD HH:MM`; the entry was skipped: fix it and run the import again"),
            );
            continue;
        }
        let content = content.trim();
        let mut entry = if has_stamp(content) {
            content.to_string()
        } else {
            format!("{stamp} {content}")
        };
        if let Some(k) = str_field(&v, "session_key").filter(|k| !k.is_empty()) {
            entry.push_str(&format!("\n(session: {k})"));
        }
        out.push(HistoryEntry { text: entry });
    }
    out
}
