//! OpenClaw, where each release keeps things:
//!
//! - **2026.9**: the state folder (`~/.openclaw`) holds one folder per
//!   agent, `agents/<agent>/agent/openclaw-agent.sqlite`, whose
//!   `transcript_events` hold every conversation window's transcript (see
//!   [`crate::openclaw_db`]); each agent has a workspace, `workspace/` for
//!   the default agent or `workspace-<agent>`, with `MEMORY.md`,
//!   `memory/**/*.md` (daily logs, notes) and the profile and persona files
//!   (`USER.md`, `SOUL.md`, `IDENTITY.md`, `AGENTS.md`, …).
//! - **earlier**: transcripts as `agents/<agent>/sessions/<id>.jsonl` with a
//!   `sessions.json` index (the oldest single-agent installs: `sessions/`),
//!   which `openclaw doctor` migrates into the database.
//!
//! A transcript is a tree of entries linked by `id`/`parentId` behind a
//! `{"type":"session"}` header. The messages on the active branch (from the
//! last entry back to the root) become mnemo messages; every other entry
//! (other branches, model changes, labels, custom entries) is kept as an
//! `openclaw_entry` record, and compaction entries become compaction
//! records. Each converted message keeps its original entry under `openclaw`.

use std::collections::{BTreeMap, HashMap, HashSet};

use mnemo_core::{Content, FunctionCall, Message, Role, ToolCall};
use mnemo_store::{CompactionRecord, Record, SessionMetadata};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::importer::{content_of, str_field, Importer, SessionLine};
use crate::openclaw_db;
use crate::profile;
use crate::report::{Kind, Verb};
use crate::source::{join, Entry, Source};
use crate::units::choose;
use crate::{Select, Tool};

/// One agent: its workspace and where its conversations are.
#[derive(Debug, Default)]
struct Unit {
    /// The workspace folder (source-relative), when it is in the source.
    workspace: Option<String>,
    /// `agents/<agent>`, when it is in the source.
    agent_dir: Option<String>,
    /// The oldest installs' single-agent `sessions/`.
    legacy_sessions: Option<String>,
}

pub(crate) fn run(imp: &mut Importer<'_>, src: Source, select: &Select) -> Result<Vec<String>> {
    // One budget for every agent database of the import: what their
    // compressed rows decode to stays in proportion to the source.
    let mut budget = openclaw_db::DecodeBudget::default();
    // A workspace inside a state folder: import from the state folder, the
    // agent of this workspace only.
    let name = src.name();
    if name == "workspace" || name.starts_with("workspace-") {
        if let Some(parent) = src.parent() {
            if is_state_dir(&parent) {
                let units = state_units(&parent);
                if let Some((agent, _)) = units
                    .iter()
                    .find(|(_, u)| u.workspace.as_deref() == Some(name.as_str()))
                {
                    let agent = agent.clone();
                    imp.set_source_display(parent.root().display().to_string());
                    return state_dir(
                        imp,
                        &parent,
                        units,
                        &Select::Named(vec![agent]),
                        &mut budget,
                    );
                }
            }
        }
    }
    if is_state_dir(&src) {
        let units = state_units(&src);
        return state_dir(imp, &src, units, select, &mut budget);
    }
    if !looks_like_workspace(&src, "") {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not an OpenClaw folder: it has no agents/, MEMORY.md, memory/ or USER.md; give the state folder (~/.openclaw) or an agent's workspace".into(),
        });
    }
    let unit = Unit {
        workspace: Some(String::new()),
        ..Unit::default()
    };
    let units = choose(Tool::OpenClaw, src.root(), vec![(src.name(), unit)], select)?;
    for (name, unit) in &units {
        import_unit(imp, &src, name, unit, &mut Vec::new(), &mut budget);
    }
    Ok(vec![
        "this workspace (OpenClaw keeps conversations in the state folder, ~/.openclaw/agents/<agent>/: import that folder)".into(),
    ])
}

fn is_state_dir(src: &Source) -> bool {
    src.entry("agents") == Entry::Dir
        || src.entry("openclaw.json") == Entry::File
        || src.names("").iter().any(|n| {
            (n == "workspace" || n.starts_with("workspace-")) && src.entry(n) == Entry::Dir
        })
}

fn looks_like_workspace(src: &Source, ws: &str) -> bool {
    ["MEMORY.md", "memory.md", "memory"]
        .iter()
        .any(|n| src.entry(&join(ws, n)) != Entry::Missing)
        || ["USER.md", "SOUL.md", "IDENTITY.md", "AGENTS.md"]
            .iter()
            .any(|n| src.entry(&join(ws, n)) == Entry::File)
}

/// The agents of a state folder: `agents/<id>/`, `workspace-<id>/`, and the
/// default agent's `workspace/` (and the oldest installs' `sessions/`).
fn state_units(src: &Source) -> Vec<(String, Unit)> {
    let mut units: BTreeMap<String, Unit> = BTreeMap::new();
    for id in src.names("agents") {
        if src.entry(&format!("agents/{id}")) == Entry::Dir {
            units.entry(id.clone()).or_default().agent_dir = Some(format!("agents/{id}"));
        }
    }
    for name in src.names("") {
        if let Some(id) = name.strip_prefix("workspace-") {
            if src.entry(&name) == Entry::Dir && !id.is_empty() {
                units.entry(id.to_string()).or_default().workspace = Some(name.clone());
            }
        }
    }
    // The default agent's workspace: main's, else the only agent's.
    let default = if units.contains_key("main") || units.len() != 1 {
        "main".to_string()
    } else {
        units
            .keys()
            .next()
            .cloned()
            .unwrap_or_else(|| "main".into())
    };
    if src.entry("workspace") == Entry::Dir {
        let unit = units.entry(default.clone()).or_default();
        if unit.workspace.is_none() {
            unit.workspace = Some("workspace".into());
        }
    }
    if src.entry("sessions") == Entry::Dir {
        units.entry(default).or_default().legacy_sessions = Some("sessions".into());
    }
    units.into_iter().collect()
}

fn state_dir(
    imp: &mut Importer<'_>,
    src: &Source,
    units: Vec<(String, Unit)>,
    select: &Select,
    budget: &mut openclaw_db::DecodeBudget,
) -> Result<Vec<String>> {
    let all: Vec<String> = units.iter().map(|(n, _)| n.clone()).collect();
    let mut workspaces: Vec<String> = units
        .iter()
        .filter_map(|(_, u)| u.workspace.clone())
        .collect();
    let chosen = choose(Tool::OpenClaw, src.root(), units, select)?;
    let mut looked = Vec::new();
    let mut consumed: Vec<String> = vec!["agents".into()];
    for (name, unit) in &chosen {
        import_unit(imp, src, name, unit, &mut looked, budget);
        consumed.extend(unit.workspace.iter().cloned());
        consumed.extend(unit.legacy_sessions.iter().cloned());
    }
    for id in src.names("agents") {
        if src.entry(&format!("agents/{id}")) == Entry::Link {
            src.report_link(&format!("agents/{id}"), Kind::Session, &mut imp.report);
            continue;
        }
        if !chosen.iter().any(|(n, _)| *n == id) {
            let detail = if all.contains(&id) {
                "another agent, not chosen (--only NAME, or --all)"
            } else {
                "not an agent folder: left as it is"
            };
            imp.report
                .push(Verb::Skip, Kind::Other, "", format!("agents/{id}"), detail);
        }
    }
    workspaces.retain(|w| !consumed.contains(w));
    for name in src.names("") {
        if consumed.contains(&name) {
            continue;
        }
        let (verb, detail) = match name.as_str() {
            "openclaw.json" => (Verb::Skip, "OpenClaw's configuration (providers, channels, agents): not memory"),
            "credentials" | "identity" | "devices" => (Verb::Skip, "credentials and device identity: not memory"),
            "state" | "tmp" | "logs" | "media" | "canvas" | "cron" | "tasks" | "delivery-queue"
            | "session-delivery-queue" | "browser" | "sandboxes" | "completions" => {
                (Verb::Skip, "OpenClaw's runtime state: not memory")
            }
            "memory" => (Verb::Skip, "OpenClaw's search index of the memory files: rebuilt by mnemo from the files themselves"),
            "skills" | "plugin-skills" | "extensions" | "plugins" => {
                (Verb::Skip, "skills and plugins: not memory")
            }
            n if workspaces.iter().any(|w| w == n) => {
                (Verb::Skip, "the workspace of an agent not chosen (--only NAME, or --all)")
            }
            _ => (Verb::Unknown, "not something OpenClaw keeps memory or conversations in: left as it is"),
        };
        imp.report.push(verb, Kind::Other, "", name, detail);
    }
    Ok(looked)
}

fn import_unit(
    imp: &mut Importer<'_>,
    src: &Source,
    agent: &str,
    unit: &Unit,
    looked: &mut Vec<String>,
    budget: &mut openclaw_db::DecodeBudget,
) {
    if let Some(ws) = &unit.workspace {
        workspace(imp, src, ws, agent);
    }
    let mut in_db: HashSet<String> = HashSet::new();
    if let Some(dir) = &unit.agent_dir {
        let db = format!("{dir}/agent/openclaw-agent.sqlite");
        looked.push(src.path(&db).display().to_string());
        if src.entry(&db) == Entry::File {
            in_db = database(imp, src, agent, &db, budget);
        } else if src.entry(&db) == Entry::Link {
            src.report_link(&db, Kind::Session, &mut imp.report);
        }
        agent_files(imp, src, &format!("{dir}/agent"));
        let sessions = format!("{dir}/sessions");
        looked.push(format!("{}/", src.path(&sessions).display()));
        legacy_sessions(imp, src, agent, &sessions, &in_db);
        for name in src.names(dir) {
            if name != "agent" && name != "sessions" {
                imp.report.push(
                    Verb::Unknown,
                    Kind::Other,
                    "",
                    join(dir, &name),
                    "not something OpenClaw keeps conversations in: left as it is",
                );
            }
        }
    }
    if let Some(dir) = &unit.legacy_sessions {
        looked.push(format!("{}/", src.path(dir).display()));
        legacy_sessions(imp, src, agent, dir, &in_db);
    }
}

/// An agent workspace: MEMORY.md, memory/, profile files; the rest reported.
fn workspace(imp: &mut Importer<'_>, src: &Source, ws: &str, agent: &str) {
    for name in ["MEMORY.md", "memory.md"] {
        let rel = join(ws, name);
        if src.entry(&rel) == Entry::Missing {
            continue;
        }
        // On a case-insensitive file system both names are the same file.
        if name == "memory.md" && same_file(src, &join(ws, "MEMORY.md"), &rel) {
            continue;
        }
        if let Some(text) = src.read_text(&rel, Kind::MemoryMd, &mut imp.report) {
            imp.merge_memory_text(&rel, &text);
        }
    }
    let memory_dir = join(ws, "memory");
    for rel in src.files(&memory_dir, true, Kind::File, &mut imp.report) {
        let inner = rel
            .strip_prefix(&format!("{memory_dir}/"))
            .unwrap_or(&rel)
            .to_string();
        if !inner.ends_with(".md") {
            imp.report.push(
                Verb::Unknown,
                Kind::Other,
                "",
                rel,
                "not a Markdown memory file: left as it is",
            );
            continue;
        }
        let Some(bytes) = src.read(&rel, Kind::File, &mut imp.report) else {
            continue;
        };
        let daily = is_daily(&inner);
        imp.file(
            &format!("memory/{inner}"),
            &bytes,
            Kind::File,
            &rel,
            daily,
            None,
        );
    }
    profile::import(imp, src, ws, agent);
    for name in src.names(ws) {
        let rel = join(ws, &name);
        let (verb, detail) = match name.as_str() {
            "MEMORY.md" | "memory.md" | "memory" => continue,
            n if profile::is_profile_file(n) => continue,
            ".git" | ".gitignore" => (
                Verb::Skip,
                "the workspace's version history: the files themselves are imported",
            ),
            ".openclaw" => (Verb::Skip, "OpenClaw's workspace state: not memory"),
            "skills" | "canvas" => (Verb::Skip, "skills and canvas documents: not memory"),
            _ => (
                Verb::Unknown,
                "not something OpenClaw keeps memory in: left as it is",
            ),
        };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

/// The transcripts of an agent database; returns the session ids found.
/// What its compressed rows decode to counts against `budget`.
fn database(
    imp: &mut Importer<'_>,
    src: &Source,
    agent: &str,
    rel: &str,
    budget: &mut openclaw_db::DecodeBudget,
) -> HashSet<String> {
    let limit = imp.session_options().max_line_bytes;
    let db = match openclaw_db::read(&src.path(rel), limit, budget) {
        Ok(db) => db,
        Err(e) => {
            imp.report.push(
                Verb::Error,
                Kind::Session,
                "",
                rel,
                format!("{e}; its conversations were not imported"),
            );
            return HashSet::new();
        }
    };
    let mut ids = HashSet::new();
    for w in &db.windows {
        let id = &w.session_id;
        ids.insert(id.clone());
        let at = format!("{rel}#{id}");
        let events = match db.events(id, budget) {
            Ok(e) => e,
            Err(e) => {
                imp.report.push(
                    Verb::Error,
                    Kind::Session,
                    "",
                    at,
                    format!("{e}; this conversation was not imported"),
                );
                continue;
            }
        };
        if events.is_empty() {
            imp.report.push(
                Verb::Skip,
                Kind::Session,
                "",
                at,
                "a conversation window with no transcript yet",
            );
            continue;
        }
        let lines = events
            .into_iter()
            .map(|e| {
                let json = e.json.map_err(|why| why.to_string());
                (usize::try_from(e.seq).unwrap_or(0), json)
            })
            .collect();
        let key = format!("openclaw:{agent}:{id}");
        let (mut meta, records) = convert(imp, lines, &at, &key);
        let mut keys: Vec<String> = w.session_key.iter().cloned().collect();
        for k in db.current.get(id).into_iter().flatten() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        if !keys.is_empty() {
            meta.metadata.insert("openclaw_keys".into(), json!(keys));
        }
        meta.metadata.insert(
            "openclaw_window".into(),
            json!({
                "previous_session_id": w.previous,
                "reason": w.reason,
                "current": db.current.contains_key(id),
                "app_version": db.app_version,
            }),
        );
        imp.session(
            &key,
            meta,
            records.into_iter().map(SessionLine::from).collect(),
            &at,
        );
    }
    ids
}

/// The other files of `agents/<agent>/agent/`.
fn agent_files(imp: &mut Importer<'_>, src: &Source, dir: &str) {
    for name in src.names(dir) {
        if name == "openclaw-agent.sqlite" {
            continue;
        }
        let rel = join(dir, &name);
        if src.entry(&rel) == Entry::Link {
            // A linked write-ahead log is not read with the database (see
            // `openclaw_db::read`); no link is followed.
            src.report_link(&rel, Kind::Session, &mut imp.report);
            continue;
        }
        let (verb, detail) =
            if name.ends_with("-wal") || name.ends_with("-shm") || name.ends_with("-journal") {
                (
                    Verb::Skip,
                    "SQLite's journal of a database beside it: read together with it",
                )
            } else if name.starts_with("openclaw-agent.sqlite.") {
                (
                    Verb::Skip,
                    "OpenClaw's scratch or lock file of the database",
                )
            } else if name.ends_with(".json") {
                (Verb::Skip, "credentials or model settings: not memory")
            } else {
                (
                    Verb::Unknown,
                    "not something OpenClaw keeps conversations in: left as it is",
                )
            };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

/// Transcripts kept as JSONL (before 2026.9), unless the database already
/// holds them.
fn legacy_sessions(
    imp: &mut Importer<'_>,
    src: &Source,
    agent: &str,
    dir: &str,
    in_db: &HashSet<String>,
) {
    let index_rel = format!("{dir}/sessions.json");
    let keys = session_keys(imp, src, &index_rel);
    for name in src.names(dir) {
        let rel = join(dir, &name);
        if src.entry(&rel) == Entry::Dir {
            let (verb, detail) = if name == "skills-prompts" {
                (
                    Verb::Skip,
                    "the skill prompts OpenClaw cached for its turns: not conversation",
                )
            } else {
                (
                    Verb::Unknown,
                    "a folder OpenClaw does not keep transcripts in: left as it is",
                )
            };
            imp.report.push(verb, Kind::Other, "", rel, detail);
        }
    }
    for rel in src.files(dir, false, Kind::Session, &mut imp.report) {
        if rel.ends_with(".trajectory.jsonl") || rel.ends_with(".trajectory-path.json") {
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                "OpenClaw's trace of how its runtime ran a session, not the conversation (which is the transcript beside it)",
            );
            continue;
        }
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
        let Some(stem) = rel
            .rsplit('/')
            .next()
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel,
                "not a live transcript (*.jsonl; OpenClaw's archived and deleted copies end otherwise): not imported",
            );
            continue;
        };
        if in_db.contains(stem) {
            imp.report.push(
                Verb::Skip,
                Kind::Session,
                "",
                rel,
                "the agent database holds this transcript too (OpenClaw migrated it): imported from there",
            );
            continue;
        }
        transcript(imp, src, agent, &rel, &keys);
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
    let mut lines = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if !imp.over_line_limit(rel, i, l) {
            lines.push((i, Ok(l.to_string())));
        }
    }
    let (mut meta, records) = convert(imp, lines, rel, &key);
    // The keys OpenClaw knew this conversation by ("agent:main:main",
    // "agent:main:telegram:dm:42"), so it can be found by them.
    if let Some(k) = keys.get(stem) {
        meta.metadata.insert("openclaw_keys".into(), json!(k));
    }
    imp.session(
        &key,
        meta,
        records.into_iter().map(SessionLine::from).collect(),
        rel,
    );
}

/// Converts a transcript into session metadata and log records.
///
/// `lines` are the entries with their position (a line index, or a row's
/// `seq`): their JSON text, or why a row could not be read.
pub(crate) fn convert(
    imp: &mut Importer<'_>,
    lines: Vec<(usize, Result<String, String>)>,
    rel: &str,
    key: &str,
) -> (SessionMetadata, Vec<Record>) {
    let mut meta = SessionMetadata::new(key);
    let mut entries: Vec<(usize, Value)> = Vec::new();
    let mut records = Vec::new();
    let mut unparsed: Vec<(usize, Record)> = Vec::new();
    for (i, line) in lines {
        let line = match line {
            Ok(l) if l.trim().is_empty() => continue,
            Ok(l) => l,
            Err(why) => {
                unparsed.push((i, imp.unparsed_line(rel, i, "", why)));
                continue;
            }
        };
        match serde_json::from_str::<Value>(&line) {
            Ok(v) if v.is_object() => entries.push((i, v)),
            other => {
                let why = match other {
                    Err(e) => e.to_string(),
                    Ok(_) => "not a JSON object".into(),
                };
                let record = imp.unparsed_line(rel, i, &line, why);
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
    // Each entry is moved into its record, not copied: a conversation is
    // held in memory while it is converted, and it may be large.
    for (line, entry) in entries {
        while let Some((_, r)) = unparsed.next_if(|(l, _)| *l < line) {
            records.push(r);
        }
        let kind = str_field(&entry, "type").unwrap_or("");
        if kind == "session" {
            continue;
        }
        let (is_message, is_compaction) = (kind == "message", kind == "compaction");
        let id = str_field(&entry, "id").map(str::to_string);
        let on_path = id.as_ref().is_none_or(|id| active.contains(id));
        let entry = if on_path && is_message {
            match to_message(entry) {
                Ok(m) => {
                    if let Some(id) = id {
                        ordinal_of.insert(id, messages);
                    }
                    messages += 1;
                    records.push(Record::Message(m));
                    continue;
                }
                Err(entry) => entry,
            }
        } else {
            entry
        };
        if on_path && is_compaction {
            let first_kept =
                str_field(&entry, "firstKeptEntryId").and_then(|f| ordinal_of.get(f).copied());
            let tokens_before = entry
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            let summary = str_field(&entry, "summary").map(str::to_string);
            let timestamp = str_field(&entry, "timestamp").unwrap_or("").to_string();
            let mut extra = Map::new();
            extra.insert("openclaw".into(), entry);
            records.push(Record::Compaction(CompactionRecord {
                kind: "openclaw".into(),
                tokens_before,
                tokens_after: 0,
                summary,
                first_kept,
                timestamp,
                extra,
            }));
            continue;
        }
        // The fields in the order `json!` would give them.
        let mut other = Map::new();
        other.insert("_type".into(), json!("openclaw_entry"));
        other.insert("active".into(), json!(on_path));
        other.insert("entry".into(), entry);
        records.push(Record::Other(Value::Object(other)));
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
/// `openclaw`. Any other entry is given back.
fn to_message(entry: Value) -> std::result::Result<Message, Value> {
    match message_of(&entry) {
        Some(mut m) => {
            m.extra.insert("openclaw".into(), entry);
            Ok(m)
        }
        None => Err(entry),
    }
}

/// [`to_message`] without the original entry.
fn message_of(entry: &Value) -> Option<Message> {
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
    Some(out)
}
