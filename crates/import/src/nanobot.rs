//! nanobot, where each release keeps things:
//!
//! - **0.3.5**: sessions outside the workspace, in the data folder
//!   (`~/.nanobot/sessions/<workspace id>/<base64url of the key>.jsonl`,
//!   the id in the workspace's `.nanobot/workspace-id`, the namespace's
//!   `.workspace` naming the workspace); the history as
//!   `memory/history.jsonl` with cursors (an old `HISTORY.md` is renamed
//!   `HISTORY.md.bak` when migrated).
//! - **0.3.0**: `<workspace>/sessions/<base64url of the key>.jsonl`.
//! - **up to 0.2**: `<workspace>/sessions/<key, ":" as "_">.jsonl` and
//!   `memory/HISTORY.md`; the oldest releases used `~/.nanobot/sessions/`.
//!
//! A log is a metadata line, then one message per line; the key is the
//! metadata's (file names are a fallback). Messages are kept as written,
//! `"content": null` included. The workspace's `USER.md` and persona files
//! go through [`crate::profile`].

use base64::Engine;
use mnemo_store::{Record, SessionMetadata};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::importer::{has_stamp, split_history, str_field, HistoryEntry, Importer, SessionLine};
use crate::profile;
use crate::report::{Kind, Verb};
use crate::source::{join, Entry, Source};
use crate::units::choose;
use crate::{Select, Tool};

/// One workspace and the folders its sessions are in.
#[derive(Debug, Default)]
struct Unit {
    /// The workspace folder (source-relative), when it is in the source.
    workspace: Option<String>,
    /// Folders holding its session logs.
    sessions: Vec<String>,
    /// For a session namespace whose workspace is not in the source: the
    /// workspace its `.workspace` marker names.
    elsewhere: Option<String>,
}

pub(crate) fn run(imp: &mut Importer<'_>, src: Source, select: &Select) -> Result<Vec<String>> {
    // A workspace whose sessions nanobot keeps one folder up, in its data
    // folder: import from there, this workspace only.
    if let Some(id) = workspace_id(&src, "") {
        if let Some(parent) = src.parent() {
            if parent.entry(&format!("sessions/{id}")) == Entry::Dir {
                let name = src.name();
                imp.set_source_display(parent.root().display().to_string());
                return data_dir(imp, &parent, &Select::Named(vec![name]));
            }
        }
    }
    if is_data_dir(&src) {
        return data_dir(imp, &src, select);
    }
    if !looks_like_workspace(&src, "") {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not a nanobot folder: it has no sessions/, memory/, USER.md or .nanobot/workspace-id; give nanobot's data folder (~/.nanobot) or a workspace (~/.nanobot/workspace)".into(),
        });
    }
    let unit = Unit {
        workspace: Some(String::new()),
        sessions: vec!["sessions".into()],
        elsewhere: None,
    };
    let units = choose(Tool::Nanobot, src.root(), vec![(src.name(), unit)], select)?;
    let mut looked = Vec::new();
    for (name, unit) in &units {
        import_unit(imp, &src, name, unit, &mut looked);
    }
    if let Some(id) = workspace_id(&src, "") {
        looked.push(format!(
            "~/.nanobot/sessions/{id}/ (where nanobot 0.3.5 keeps this workspace's sessions; not beside this folder: import nanobot's data folder)"
        ));
    }
    Ok(looked)
}

/// nanobot's data folder: session namespaces, workspaces, configuration.
fn data_dir(imp: &mut Importer<'_>, src: &Source, select: &Select) -> Result<Vec<String>> {
    let mut units: Vec<(String, Unit)> = Vec::new();
    let top = src.names("");
    for name in &top {
        if src.entry(name) == Entry::Dir && name != "sessions" && looks_like_workspace(src, name) {
            units.push((
                name.clone(),
                Unit {
                    workspace: Some(name.clone()),
                    sessions: vec![join(name, "sessions")],
                    elsewhere: None,
                },
            ));
        }
    }
    for ns in src.names("sessions") {
        if !is_namespace_id(&ns) || src.entry(&format!("sessions/{ns}")) != Entry::Dir {
            continue;
        }
        let dir = format!("sessions/{ns}");
        let owner = units.iter_mut().find(|(_, u)| {
            u.workspace.as_deref().and_then(|w| workspace_id(src, w)) == Some(ns.clone())
        });
        match owner {
            Some((_, u)) => u.sessions.insert(0, dir),
            None => units.push((
                ns.clone(),
                Unit {
                    workspace: None,
                    elsewhere: src
                        .peek(&format!("{dir}/.workspace"))
                        .map(|t| t.trim().to_string()),
                    sessions: vec![dir],
                },
            )),
        }
    }
    // The oldest releases kept every session in ~/.nanobot/sessions/.
    let legacy = src.names("sessions").iter().any(|n| n.ends_with(".jsonl"));
    if legacy {
        match units.iter_mut().find(|(n, _)| n == "workspace") {
            Some((_, u)) => u.sessions.push("sessions".into()),
            None => units.push((
                "sessions".into(),
                Unit {
                    sessions: vec!["sessions".into()],
                    ..Unit::default()
                },
            )),
        }
    }
    units.sort_by(|a, b| a.0.cmp(&b.0));
    let all: Vec<String> = units.iter().map(|(n, _)| n.clone()).collect();
    let chosen = choose(Tool::Nanobot, src.root(), units, select)?;
    let mut looked = Vec::new();
    let mut consumed: Vec<String> = Vec::new();
    for (name, unit) in &chosen {
        import_unit(imp, src, name, unit, &mut looked);
        consumed.extend(unit.workspace.iter().cloned());
        consumed.extend(unit.sessions.iter().cloned());
    }
    for name in top {
        if name == "sessions" {
            data_sessions_leftovers(imp, src, &consumed);
            continue;
        }
        if consumed.contains(&name) {
            continue;
        }
        let (verb, detail) = match name.as_str() {
            "config.json" => (
                Verb::Skip,
                "nanobot's configuration (providers, keys, channels): not memory".to_string(),
            ),
            "history" => (
                Verb::Skip,
                "the terminal's input history (every prompt is in the session logs)".to_string(),
            ),
            "media" | "cron" | "logs" | "webui" | "bridge" | "tui" | "cli-apps" => (
                Verb::Skip,
                "nanobot's runtime data (media, schedules, logs, UI state): not memory".to_string(),
            ),
            n if all.iter().any(|a| a == n) => (
                Verb::Skip,
                "another workspace, not chosen (--only NAME, or --all)".to_string(),
            ),
            _ => (
                Verb::Unknown,
                "not something nanobot keeps memory in: left as it is".to_string(),
            ),
        };
        imp.report.push(verb, Kind::Other, "", name, detail);
    }
    Ok(looked)
}

/// What is left in the data folder's `sessions/` after the chosen units.
fn data_sessions_leftovers(imp: &mut Importer<'_>, src: &Source, consumed: &[String]) {
    let legacy_read = consumed.iter().any(|c| c == "sessions");
    for name in src.names("sessions") {
        let rel = format!("sessions/{name}");
        if consumed.contains(&rel) {
            continue;
        }
        let (verb, detail) = if is_namespace_id(&name) && src.entry(&rel) == Entry::Dir {
            (
                Verb::Skip,
                "the sessions of another workspace, not chosen (--only NAME, or --all)",
            )
        } else if legacy_read {
            // Read with the legacy logs, which reported it.
            continue;
        } else if name.ends_with(".lock") {
            (Verb::Skip, "nanobot's lock file")
        } else {
            (
                Verb::Unknown,
                "not a session namespace nanobot writes: left as it is",
            )
        };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

fn import_unit(
    imp: &mut Importer<'_>,
    src: &Source,
    name: &str,
    unit: &Unit,
    looked: &mut Vec<String>,
) {
    for dir in &unit.sessions {
        looked.push(format!("{}/", src.path(dir).display()));
        sessions_dir(imp, src, dir);
    }
    if let Some(ws) = &unit.workspace {
        workspace(imp, src, ws, name);
    } else if let Some(elsewhere) = &unit.elsewhere {
        imp.report.push(
            Verb::Skip,
            Kind::Other,
            "",
            unit.sessions.first().cloned().unwrap_or_default(),
            format!(
                "these sessions belong to the workspace {elsewhere}, which is not in this folder: its memory files were not imported (import that folder too)"
            ),
        );
    }
}

/// The session logs of one folder, and everything else in it reported.
fn sessions_dir(imp: &mut Importer<'_>, src: &Source, dir: &str) {
    for name in src.names(dir) {
        let rel = join(dir, &name);
        let entry = src.entry(&rel);
        if entry == Entry::Link {
            src.report_link(&rel, Kind::Session, &mut imp.report);
            continue;
        }
        if entry == Entry::Dir {
            // Namespaces are units of their own; the rest is not a log.
            if !(dir == "sessions" && is_namespace_id(&name)) {
                let detail = if name == ".migration-conflicts" {
                    "older copies of sessions nanobot set aside while moving them out of the workspace: the current copies are imported"
                } else {
                    "a folder nanobot does not keep sessions in: left as it is"
                };
                let verb = if name == ".migration-conflicts" {
                    Verb::Skip
                } else {
                    Verb::Unknown
                };
                imp.report.push(verb, Kind::Other, "", rel, detail);
            }
            continue;
        }
        if name.ends_with(".jsonl") {
            session(imp, src, &rel);
            continue;
        }
        let (verb, detail) = if name.ends_with(".checkpoint.json") {
            (
                Verb::Skip,
                "nanobot's checkpoint of a turn that had not finished: not part of the log",
            )
        } else if name == ".workspace" {
            (Verb::Skip, "names the workspace these sessions belong to")
        } else if name.ends_with(".lock") {
            (Verb::Skip, "nanobot's lock file")
        } else {
            (Verb::Unknown, "not a session log (*.jsonl): left as it is")
        };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

/// A workspace: memory, history, profile files; the rest reported.
fn workspace(imp: &mut Importer<'_>, src: &Source, ws: &str, unit: &str) {
    let memory_md = join(ws, "memory/MEMORY.md");
    if src.entry(&memory_md) != Entry::Missing {
        if let Some(text) = src.read_text(&memory_md, Kind::MemoryMd, &mut imp.report) {
            if profile::is_template("memory/MEMORY.md", &text) {
                imp.report.push(
                    Verb::Skip,
                    Kind::MemoryMd,
                    "",
                    &memory_md,
                    "still the template nanobot ships, never filled in: nothing of yours to import",
                );
            } else {
                imp.merge_memory_text(&memory_md, &text);
            }
        }
    }
    let memory_dir = join(ws, "memory");
    for name in src.names(&memory_dir) {
        let rel = join(&memory_dir, &name);
        match name.as_str() {
            "MEMORY.md" => {}
            "history.jsonl" => {
                if let Some(text) = src.read_text(&rel, Kind::History, &mut imp.report) {
                    let entries = history_jsonl(imp, &rel, &text);
                    imp.history(&rel, entries);
                }
            }
            n if n == "HISTORY.md" || n.starts_with("HISTORY.md.bak") => {
                // A `.bak` is nanobot 0.3.5's copy after moving the entries
                // into history.jsonl, which keeps at most 1,000 of them:
                // both are read, and entries already there are skipped.
                if let Some(text) = src.read_text(&rel, Kind::History, &mut imp.report) {
                    let entries = split_history(&text)
                        .into_iter()
                        .map(|text| HistoryEntry { text })
                        .collect();
                    imp.history(&rel, entries);
                }
            }
            ".cursor" | ".dream_cursor" => imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                "nanobot's own bookkeeping (history cursors): not needed by mnemo",
            ),
            _ => imp.report.push(
                Verb::Unknown,
                Kind::Other,
                "",
                rel,
                "not a nanobot memory file: left as it is (copy it by hand if you need it)",
            ),
        }
    }
    profile::import(imp, src, ws, unit);
    for name in src.names(ws) {
        let rel = join(ws, &name);
        let (verb, detail) = match name.as_str() {
            "memory" | "sessions" => continue,
            n if profile::is_profile_file(n) => continue,
            ".nanobot" => (
                Verb::Skip,
                "nanobot's workspace id (it names the session folder)",
            ),
            ".git" | ".gitignore" => (
                Verb::Skip,
                "nanobot's version history of the memory files: the files themselves are imported",
            ),
            "skills" => (
                Verb::Skip,
                "skills nanobot wrote (procedures, not memory): copy them by hand if you need them",
            ),
            "prompts" => (Verb::Skip, "prompt overrides for nanobot: not memory"),
            _ => (
                Verb::Unknown,
                "not something nanobot keeps memory in: left as it is",
            ),
        };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

fn session(imp: &mut Importer<'_>, src: &Source, rel: &str) {
    let Some(text) = src.read_text(rel, Kind::Session, &mut imp.report) else {
        return;
    };
    let mut meta: Option<SessionMetadata> = None;
    let mut lines: Vec<SessionLine> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() || imp.over_line_limit(rel, i, line) {
            continue;
        }
        match Record::parse(line) {
            Ok(Record::Metadata(m)) => meta = Some(m),
            Ok(record @ Record::Message(_)) => lines.push(SessionLine {
                record,
                verbatim: serde_json::from_str(line).ok(),
            }),
            Ok(r) => lines.push(r.into()),
            Err(e) => lines.push(imp.unparsed_line(rel, i, line, e).into()),
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
            let key = key_from_file_name(stem);
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
    // nanobot 0.3.5 names the cursor `last_archived` (and keeps the old name
    // beside it for older releases); it prefers the new one.
    if let Some(n) = meta.extra.remove("last_archived").and_then(|v| v.as_u64()) {
        meta.last_consolidated = n as usize;
    }
    meta.extra.insert(
        "imported_from".into(),
        json!({"tool": "nanobot", "source": format!("{}/{rel}", imp.source_display())}),
    );
    let key = meta.key.clone();
    imp.session(&key, meta, lines, rel);
}

/// The key a log's file name stands for: base64url of the key (0.3 on),
/// else the key with `:` written as `_` (channel names carry no `_`, so the
/// first one is the separator).
fn key_from_file_name(stem: &str) -> String {
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(stem)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .filter(|k| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(k.as_bytes()) == stem
                && k.contains(':')
        });
    decoded.unwrap_or_else(|| stem.replacen('_', ":", 1))
}

/// `{"cursor","timestamp","content","session_key"?}` lines become
/// `[YYYY-MM-DD HH:MM] content` entries.
fn history_jsonl(imp: &mut Importer<'_>, rel: &str, text: &str) -> Vec<HistoryEntry> {
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

/// The id in `<ws>/.nanobot/workspace-id`.
fn workspace_id(src: &Source, ws: &str) -> Option<String> {
    let id = src.peek(&join(ws, ".nanobot/workspace-id"))?;
    let id = id.trim();
    is_namespace_id(id).then(|| id.to_string())
}

fn is_namespace_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn looks_like_workspace(src: &Source, ws: &str) -> bool {
    workspace_id(src, ws).is_some()
        || src.entry(&join(ws, "memory")) == Entry::Dir
        || ["USER.md", "SOUL.md", "AGENTS.md", "HEARTBEAT.md"]
            .iter()
            .any(|n| src.entry(&join(ws, n)) == Entry::File)
        || src
            .names(&join(ws, "sessions"))
            .iter()
            .any(|n| n.ends_with(".jsonl"))
}

/// nanobot's data folder: its configuration, session namespaces, or a
/// workspace inside it.
fn is_data_dir(src: &Source) -> bool {
    src.entry("config.json") == Entry::File
        || src.names("sessions").iter().any(|n| is_namespace_id(n))
        || src
            .names("")
            .iter()
            .any(|n| src.entry(n) == Entry::Dir && workspace_id(src, n).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_file_names() {
        assert_eq!(key_from_file_name("Y2xpOmRpcmVjdA"), "cli:direct");
        assert_eq!(key_from_file_name("dGVsZWdyYW06NDI"), "telegram:42");
        assert_eq!(key_from_file_name("telegram_123"), "telegram:123");
        assert_eq!(key_from_file_name("cli_direct"), "cli:direct");
    }
}
