//! Imports of folders the peers' own current releases wrote (see
//! `tests/peers/generate.sh`): nanobot-ai 0.3.5, OpenClaw 2026.9.6 and
//! Claude Code 2.1.332. Every message, memory line and profile fact they
//! wrote arrives, every file found is reported, a second run changes
//! nothing, a dry run lists exactly what the import does, and the source is
//! never modified.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "fixtures.rs"]
mod fixtures;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use fixtures::{copy_fixture, lines, store, tree};
use mnemo_core::Workspace;
use mnemo_import::{import, Error, ImportOptions, Kind, Report, Select, Tool, Verb};
use mnemo_store::{MemoryStore, MemoryType};
use pretty_assertions::assert_eq;
use serde_json::Value;

fn options(select: Select, dry_run: bool) -> ImportOptions {
    ImportOptions {
        dry_run,
        select,
        ..ImportOptions::default()
    }
}

/// Imports `src` into a new workspace `dir/ws` and checks what holds for
/// every import: a dry run into another new workspace lists exactly the
/// same actions and counts and writes nothing, a second run changes
/// nothing, the source is unchanged, and every file of the source is in the
/// report.
fn import_checked(dir: &Path, tool: Tool, src: &Path, select: Select) -> (PathBuf, Report) {
    let before = tree(src);
    let dry_ws = dir.join("dry-ws");
    let dry = import(
        &Workspace::new(&dry_ws),
        tool,
        src,
        &options(select.clone(), true),
    )
    .unwrap();
    assert!(!dry_ws.exists(), "the dry run wrote into the workspace");
    let ws = dir.join("ws");
    let report = import(
        &Workspace::new(&ws),
        tool,
        src,
        &options(select.clone(), false),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(lines(&dry), lines(&report), "the dry run is not exact");
    assert_eq!(
        (
            dry.messages,
            dry.records,
            dry.memory_lines,
            dry.history_entries,
            dry.conversations
        ),
        (
            report.messages,
            report.records,
            report.memory_lines,
            report.history_entries,
            report.conversations
        )
    );
    let after = tree(&ws);
    let again = import(&Workspace::new(&ws), tool, src, &options(select, false)).unwrap();
    assert!(!again.changed(), "second run wrote:\n{}", lines(&again));
    assert!(!again.has_problems(), "{}", lines(&again));
    assert_eq!(tree(&ws), after, "the second run changed the workspace");
    assert_eq!(tree(src), before, "the source was modified");
    assert_everything_reported(&report, src);
    (ws, report)
}

/// Every file of the source is named by an action (itself, or a folder
/// holding it).
fn assert_everything_reported(report: &Report, root: &Path) {
    let sources: Vec<String> = report
        .actions
        .iter()
        .map(|a| {
            let s = a.source.split('#').next().unwrap_or("");
            match s.rsplit_once(':') {
                Some((p, n)) if n.chars().all(|c| c.is_ascii_digit()) => p.to_string(),
                _ => s.to_string(),
            }
        })
        .filter(|s| !s.is_empty())
        .collect();
    for rel in tree(root).into_keys().filter(|k| !k.ends_with('/')) {
        assert!(
            sources
                .iter()
                .any(|s| rel == *s || rel.starts_with(&format!("{s}/"))),
            "{rel} is not in the report:\n{}",
            lines(report)
        );
    }
}

/// The non-metadata lines of a JSONL file, as JSON values.
fn jsonl_values(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("_type") != Some(&Value::String("metadata".into())))
        .collect()
}

fn text_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Every non-blank line of `part` is a line of `whole`.
fn assert_lines_in(part: &str, whole: &str, what: &str) {
    let have = text_lines(whole);
    for l in text_lines(part) {
        assert!(have.contains(&l), "{what}: {l:?} is missing from\n{whole}");
    }
}

// ----- nanobot 0.3.5 -----

#[test]
fn nanobot_0_3_5_data_folder_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("nanobot-0.3.5", &dir.path().join("home"));
    let src = home.join(".nanobot");
    let (ws, report) = import_checked(dir.path(), Tool::Nanobot, &src, Select::Single);
    assert_eq!(report.conversations, 2, "{}", lines(&report));
    assert_eq!(report.messages, 12, "{}", lines(&report));

    // Every message, exactly as nanobot wrote it (its `"content": null` of
    // a tool-call message included), under the key of its metadata line.
    let ns = fs::read_dir(src.join("sessions"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let mut null_content = 0;
    for (file, key, cursor) in [
        ("Y2xpOmRpcmVjdA.jsonl", "cli:direct", 2),
        ("dGVsZWdyYW06NDI.jsonl", "telegram:42", 0),
    ] {
        let path = store(&ws).path_for(key).unwrap();
        let theirs = jsonl_values(&ns.join(file));
        assert_eq!(jsonl_values(&path), theirs, "{key}");
        null_content += theirs
            .iter()
            .filter(|m| m.get("content") == Some(&Value::Null))
            .count();
        let loaded = store(&ws).load(key).unwrap();
        assert!(loaded.warnings.is_empty(), "{key}: {:?}", loaded.warnings);
        assert_eq!(loaded.meta.last_consolidated, cursor, "{key}");
        assert_eq!(loaded.messages.len(), theirs.len());
    }
    assert_eq!(
        null_content, 1,
        "the fixture has one tool-call message with content null"
    );

    // Every memory line and history entry.
    let workspace = src.join("workspace");
    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert_lines_in(
        &fs::read_to_string(workspace.join("memory/MEMORY.md")).unwrap(),
        &memory,
        "MEMORY.md",
    );
    let history = fs::read_to_string(ws.join("memory/HISTORY.md")).unwrap();
    for v in jsonl_values(&workspace.join("memory/history.jsonl")) {
        let content = v["content"].as_str().unwrap();
        assert!(
            history.contains(content),
            "{content:?} missing from\n{history}"
        );
    }
    assert_eq!(report.history_entries, 3);

    // Every profile fact, as a typed user memory indexed in MEMORY.md.
    let mem = MemoryStore::new(&Workspace::new(&ws), Default::default());
    let profile = mem
        .read_typed("memory/user-profile-nanobot-workspace.md")
        .unwrap();
    assert_eq!(profile.front.kind, MemoryType::User);
    assert_lines_in(
        &fs::read_to_string(workspace.join("USER.md")).unwrap(),
        &profile.body,
        "USER.md",
    );
    assert!(
        memory.contains("](memory/user-profile-nanobot-workspace.md)"),
        "{memory}"
    );
    // The persona files are nanobot's templates, untouched: said so.
    let templates: Vec<&str> = report
        .actions
        .iter()
        .filter(|a| a.kind == Kind::Profile && a.verb == Verb::Skip)
        .map(|a| a.source.as_str())
        .collect();
    assert_eq!(
        templates,
        [
            "workspace/AGENTS.md",
            "workspace/HEARTBEAT.md",
            "workspace/SOUL.md"
        ]
    );
    assert!(!ws.join("imported").exists());
}

#[test]
fn a_nanobot_workspace_finds_its_sessions_in_the_data_folder() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("nanobot-0.3.5", &dir.path().join("home"));
    let ws = dir.path().join("ws");
    let report = import(
        &Workspace::new(&ws),
        Tool::Nanobot,
        &home.join(".nanobot/workspace"),
        &options(Select::Single, false),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(report.conversations, 2, "{}", lines(&report));
    assert_eq!(store(&ws).load("telegram:42").unwrap().messages.len(), 6);
}

#[test]
fn nanobot_without_sessions_is_reported_and_fails_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("nanobot-0.3.5", &dir.path().join("home"));
    let src = home.join(".nanobot");
    fs::remove_dir_all(src.join("sessions")).unwrap();
    let report = import(
        &Workspace::new(dir.path().join("ws")),
        Tool::Nanobot,
        &src,
        &options(Select::Single, false),
    )
    .unwrap();
    assert!(report.has_problems());
    let text = lines(&report);
    assert!(
        text.contains("no conversations found where nanobot keeps them")
            && text.contains("--allow-no-sessions"),
        "{text}"
    );
    // The memory still arrived.
    assert!(report.memory_lines > 0);
    let allowed = ImportOptions {
        allow_no_sessions: true,
        ..options(Select::Single, false)
    };
    let report = import(
        &Workspace::new(dir.path().join("ws2")),
        Tool::Nanobot,
        &src,
        &allowed,
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert!(lines(&report).contains("no conversations found"));
}

// ----- OpenClaw 2026.9.6 -----

/// The entries of every transcript in an agent database, decoded without
/// the importer: session id → entries in `seq` order.
fn database_entries(db: &Path) -> (Vec<(String, Value)>, usize) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut stmt = conn
        .prepare("SELECT session_id, event_json, event_zstd FROM transcript_events ORDER BY session_id, seq")
        .unwrap();
    let mut compressed = 0;
    let rows: Vec<(String, Option<String>, Option<Vec<u8>>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let entries = rows
        .into_iter()
        .map(|(id, json, zstd)| {
            let json = json.unwrap_or_else(|| {
                compressed += 1;
                let mut out = String::new();
                ruzstd::decoding::StreamingDecoder::new(&zstd.unwrap()[..])
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                out
            });
            (id, serde_json::from_str(&json).unwrap())
        })
        .collect();
    (entries, compressed)
}

/// Every entry of OpenClaw's transcript is in the session: as the
/// original of a message, as an `openclaw_entry` record, in the
/// metadata (the header).
fn assert_every_entry_kept(ws: &Path, agent: &str, db: &Path) -> usize {
    let (entries, compressed) = database_entries(db);
    let mut messages = 0;
    for (id, entry) in &entries {
        let key = format!("openclaw:{agent}:{id}");
        let path = store(ws).path_for(&key).unwrap();
        let kept = fs::read_to_string(&path).unwrap();
        let values: Vec<Value> = kept
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let found = values.iter().any(|v| {
            v.get("openclaw") == Some(entry)
                || v.get("entry") == Some(entry)
                || v.pointer("/metadata/openclaw_session") == Some(entry)
        });
        assert!(found, "{key}: entry not kept: {entry}");
        if entry["type"] == "message" {
            messages += 1;
        }
    }
    assert!(
        compressed > 0 || agent == "work",
        "no compressed row in the {agent} fixture"
    );
    messages
}

/// The two turns of the fixtures' `main` agent read back as what was said,
/// tool calls and results paired, under the session key OpenClaw knew them
/// by.
fn assert_main_agent_turns(loaded: &mnemo_store::LoadedSession) {
    assert_eq!(
        loaded.meta.metadata["openclaw_keys"],
        serde_json::json!(["agent:main:main"])
    );
    let said: Vec<String> = loaded.messages.iter().map(|m| m.text()).collect();
    for text in [
        "Hi, I am Ada. I live in Lyon and I drink green tea; please remember that.",
        "Saved: you live in Lyon and drink green tea.",
        "What do I drink? Check your notes.",
        "You drink green tea, no sugar.",
    ] {
        assert!(said.iter().any(|s| s == text), "{text:?} missing: {said:?}");
    }
    let calls: Vec<&str> = loaded
        .messages
        .iter()
        .flat_map(|m| m.tool_call_ids())
        .collect();
    assert_eq!(calls, ["ocw1", "ocw2", "ocw3", "ocr1"]);
    let results: Vec<&str> = loaded
        .messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(results, calls);
}

#[test]
fn openclaw_2026_9_state_folder_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");

    // Two agents: the import asks which.
    let err = import(
        &Workspace::new(dir.path().join("none")),
        Tool::OpenClaw,
        &src,
        &options(Select::Single, false),
    )
    .unwrap_err();
    match &err {
        Error::Choose { found, message, .. } => {
            assert_eq!(found, &["main", "work"]);
            assert!(
                message.contains("--only NAME") && message.contains("--all"),
                "{message}"
            );
        }
        other => panic!("{other}"),
    }
    assert!(!dir.path().join("none").exists());

    let (ws, report) = import_checked(dir.path(), Tool::OpenClaw, &src, Select::All);
    assert_eq!(report.conversations, 2, "{}", lines(&report));
    let main_messages = assert_every_entry_kept(&ws, "main", &agent_db(&src, "main"));
    let work_messages = assert_every_entry_kept(&ws, "work", &agent_db(&src, "work"));
    assert_eq!(
        report.messages,
        main_messages + work_messages,
        "{}",
        lines(&report)
    );

    let sessions = store(&ws).list().unwrap();
    let main = sessions
        .iter()
        .find(|s| s.key.starts_with("openclaw:main:"))
        .unwrap();
    let loaded = store(&ws).load(&main.key).unwrap();
    assert_main_agent_turns(&loaded);
    // The result stored compressed (AGENTS.md, read back) arrived whole.
    let agents_md = fs::read_to_string(src.join("workspace-main/AGENTS.md")).unwrap();
    let read_result = loaded
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("ocr1"))
        .unwrap();
    assert!(read_result
        .text()
        .contains(agents_md.lines().nth(2).unwrap()));

    // Memory lines, daily logs of both agents, the profile fact.
    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert_lines_in(
        &fs::read_to_string(src.join("workspace-main/MEMORY.md")).unwrap(),
        &memory,
        "MEMORY.md",
    );
    let day = fs::read_dir(src.join("workspace-main/memory"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name();
    let daily = fs::read_to_string(ws.join("memory").join(&day)).unwrap();
    for agent in ["main", "work"] {
        assert_lines_in(
            &fs::read_to_string(src.join(format!("workspace-{agent}/memory")).join(&day)).unwrap(),
            &daily,
            "daily log",
        );
    }
    let mem = MemoryStore::new(&Workspace::new(&ws), Default::default());
    let profile = mem
        .read_typed("memory/user-profile-openclaw-main.md")
        .unwrap();
    assert_eq!(profile.front.kind, MemoryType::User);
    assert_lines_in(
        &fs::read_to_string(src.join("workspace-main/USER.md")).unwrap(),
        &profile.body,
        "USER.md",
    );
    assert!(memory.contains("](memory/user-profile-openclaw-main.md)"));
    // work's USER.md is OpenClaw's template: skipped, and said so.
    let skipped = report
        .actions
        .iter()
        .find(|a| a.source == "workspace-work/USER.md")
        .unwrap();
    assert_eq!(skipped.verb, Verb::Skip);
    assert!(skipped.detail.contains("template"), "{}", skipped.detail);
    assert!(!ws.join("memory/user-profile-openclaw-work.md").exists());
}

#[test]
fn openclaw_one_agent_by_name_or_by_its_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let (ws, report) = import_checked(
        dir.path(),
        Tool::OpenClaw,
        &src,
        Select::Named(vec!["main".into()]),
    );
    assert_eq!(report.conversations, 1);
    let text = lines(&report);
    assert!(
        text.contains("skip    other        <- agents/work: another agent, not chosen"),
        "{text}"
    );
    assert!(!fs::read_to_string(ws.join("MEMORY.md"))
        .unwrap()
        .contains("openclaw work"));

    // The workspace folder of an agent leads to that agent's conversations.
    let ws2 = dir.path().join("ws2");
    let report = import(
        &Workspace::new(&ws2),
        Tool::OpenClaw,
        &src.join("workspace-work"),
        &options(Select::Single, false),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(report.conversations, 1);
    let sessions = store(&ws2).list().unwrap();
    assert_eq!(sessions.len(), 1);
    assert!(sessions[0].key.starts_with("openclaw:work:"));
    let said: Vec<String> = store(&ws2)
        .load(&sessions[0].key)
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert!(
        said.contains(&"Noted: deploys happen on Fridays.".to_string()),
        "{said:?}"
    );

    let err = import(
        &Workspace::new(dir.path().join("none")),
        Tool::OpenClaw,
        &src,
        &options(Select::Named(vec!["ops".into()]), false),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("no agent named \"ops\" here; found: main, work"),
        "{err}"
    );
}

// ----- Claude Code 2.1.332 -----

/// The transcript entries of one file, split into those that are Claude
/// Code's bookkeeping and the others.
fn transcript_entries(path: &Path) -> (Vec<Value>, usize) {
    let bookkeeping = [
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
    let all = jsonl_values(path);
    let n = all.len();
    let kept: Vec<Value> = all
        .into_iter()
        .filter(|e| !bookkeeping.contains(&e["type"].as_str().unwrap_or("")))
        .collect();
    let skipped = n - kept.len();
    (kept, skipped)
}

/// Every entry that is not bookkeeping is in the session log: as an
/// original of a message, a kept record, or part of a compaction.
fn assert_transcript_kept(ws: &Path, key: &str, transcript: &Path, report: &Report) {
    let (entries, skipped) = transcript_entries(transcript);
    let log = jsonl_values(&store(ws).path_for(key).unwrap());
    let mut originals: Vec<&Value> = Vec::new();
    for v in &log {
        if let Some(Value::Array(a)) = v.get("claude_code") {
            originals.extend(a.iter());
        }
        if let Some(e) = v.get("entry") {
            originals.push(e);
        }
    }
    for e in &entries {
        assert!(originals.contains(&e), "{key}: entry not kept: {e}");
    }
    assert_eq!(originals.len(), entries.len(), "{key}: entries kept twice");
    let detail = format!("{skipped} entr(ies) of Claude Code's own bookkeeping");
    assert!(
        lines(report).contains(&detail),
        "{detail}\n{}",
        lines(report)
    );
}

#[test]
fn claude_code_2_1_home_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("claude-code-2.1.332", &dir.path().join("home"));
    let src = home.join(".claude");
    let (ws, report) = import_checked(dir.path(), Tool::ClaudeCode, &src, Select::Single);
    assert_eq!(report.conversations, 2, "{}", lines(&report));

    let project = src.join("projects/-ex-ample-src-garden");
    let transcript = fs::read_dir(&project)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let session = transcript
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = format!("claude-code:-ex-ample-src-garden:{session}");
    assert_transcript_kept(&ws, &key, &transcript, &report);
    let subagent = fs::read_dir(project.join(&session).join("subagents"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let agent = subagent.file_stem().unwrap().to_string_lossy().into_owned();
    let sub_key = format!("{key}:{agent}");
    assert_transcript_kept(&ws, &sub_key, &subagent, &report);

    // What was said, with the tool calls and their results paired.
    let loaded = store(&ws).load(&key).unwrap();
    let user: Vec<String> = loaded
        .messages
        .iter()
        .filter(|m| m.role == mnemo_core::Role::User)
        .map(|m| m.text())
        .collect();
    for prompt in [
        "Hi, I'm Ada. Remember that I prefer tabs over spaces.",
        "What files are in this project?",
        "Ask a helper to summarise plan.md",
        "How should I indent my code?",
    ] {
        assert!(
            user.iter().any(|u| u == prompt),
            "{prompt:?} missing: {user:?}"
        );
    }
    let calls: Vec<(String, String)> = loaded
        .messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().flatten())
        .map(|c| (c.id.clone(), c.function.name.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            ("toolu_mem1".into(), "Write".into()),
            ("toolu_mem2".into(), "Write".into()),
            ("toolu_ls1".into(), "Bash".into()),
            ("toolu_agent1".into(), "Agent".into()),
        ]
    );
    let results: Vec<(String, String)> = loaded
        .messages
        .iter()
        .filter(|m| m.role == mnemo_core::Role::Tool)
        .map(|m| (m.tool_call_id.clone().unwrap(), m.name.clone().unwrap()))
        .collect();
    assert_eq!(results, calls);
    // One reply of several content blocks is one message.
    let first_reply = loaded
        .messages
        .iter()
        .find(|m| m.role == mnemo_core::Role::Assistant)
        .unwrap();
    assert_eq!(first_reply.text(), "I'll save that to memory.");
    assert_eq!(first_reply.tool_call_ids().count(), 2);
    // The compaction, with its summary.
    assert_eq!(loaded.compactions.len(), 1);
    let summary = loaded.compactions[0].1.summary.as_deref().unwrap();
    assert!(summary.contains("plant tomatoes in May"), "{summary}");
    // The subagent: its own session, described.
    let sub = store(&ws).load(&sub_key).unwrap();
    assert_eq!(
        sub.meta.metadata["claude_code_subagent"]["description"],
        "Summarise plan.md"
    );
    assert!(sub
        .messages
        .iter()
        .any(|m| m.text() == "The plan is to plant tomatoes in May."));

    // The memory Claude Code wrote (its front matter nests `type` under
    // `metadata:`): a typed feedback memory, indexed.
    let mem = MemoryStore::new(&Workspace::new(&ws), Default::default());
    let tabs = mem.read_typed("memory/feedback_tabs.md").unwrap();
    assert_eq!(tabs.front.kind, MemoryType::Feedback);
    assert_eq!(
        tabs.front.description,
        "Ada indents with tabs, never spaces"
    );
    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert!(
        memory.contains(
            "- [Tabs over spaces](memory/feedback_tabs.md) — Ada indents with tabs, never spaces"
        ),
        "{memory}"
    );
}

#[test]
fn claude_code_memory_folder_alone_says_where_the_conversations_are() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("claude-code-2.1.332", &dir.path().join("home"));
    let memory = home.join(".claude/projects/-ex-ample-src-garden/memory");
    let report = import(
        &Workspace::new(dir.path().join("ws")),
        Tool::ClaudeCode,
        &memory,
        &options(Select::Single, false),
    )
    .unwrap();
    assert!(report.has_problems());
    let text = lines(&report);
    assert!(
        text.contains("no conversations found where claude-code keeps them"),
        "{text}"
    );
    assert!(
        text.contains("-ex-ample-src-garden: import that folder"),
        "{text}"
    );
    // The project folder brings both.
    let report = import(
        &Workspace::new(dir.path().join("ws2")),
        Tool::ClaudeCode,
        memory.parent().unwrap(),
        &options(Select::Single, false),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(report.conversations, 2);
}

#[test]
fn empty_or_unrecognised_sources_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    for tool in [Tool::Nanobot, Tool::OpenClaw, Tool::ClaudeCode] {
        let err = import(
            &Workspace::new(dir.path().join("ws")),
            tool,
            &empty,
            &options(Select::Single, false),
        )
        .unwrap_err();
        assert!(matches!(err, Error::Source { .. }), "{tool}: {err}");
        assert!(err.to_string().contains("not a"), "{tool}: {err}");
    }
    assert!(!dir.path().join("ws").exists());
}

/// An OpenClaw agent's database under the state folder `src`.
fn agent_db(src: &Path, agent: &str) -> PathBuf {
    src.join("agents")
        .join(agent)
        .join("agent")
        .join("openclaw-agent.sqlite")
}

#[test]
fn an_openclaw_database_in_use_is_read_with_its_write_ahead_log() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let db = agent_db(&src, "work");
    // OpenClaw still running: its latest turn is in the write-ahead log,
    // not yet in the database file.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let (id, seq, last): (String, i64, String) = conn
        .query_row(
            "SELECT session_id, seq, event_json FROM transcript_events ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let parent: Value = serde_json::from_str(&last).unwrap();
    let entry = serde_json::json!({
        "type": "message", "id": "late1", "parentId": parent["id"],
        "timestamp": "2026-12-01T09:00:00.000Z",
        "message": {"role": "user", "content": "Also: deploys need a green build.", "timestamp": 1796115600000u64}
    });
    conn.execute(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, ?4)",
        rusqlite::params![id, seq + 1, entry.to_string(), 1_796_115_600_000i64],
    )
    .unwrap();
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    assert!(
        fs::metadata(&wal).unwrap().len() > 0,
        "the row is not in the write-ahead log"
    );

    let before = tree(&src);
    let ws = dir.path().join("ws");
    let report = import(
        &Workspace::new(&ws),
        Tool::OpenClaw,
        &src,
        &options(Select::Named(vec!["work".into()]), false),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(tree(&src), before, "the database in use was modified");
    let said: Vec<String> = store(&ws)
        .load(&format!("openclaw:work:{id}"))
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(said.last().unwrap(), "Also: deploys need a green build.");
    drop(conn);
}

// ----- OpenClaw 2026.5.28: transcripts as JSONL -----

#[test]
fn openclaw_2026_5_jsonl_transcripts_arrive_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.5.28", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let (ws, report) = import_checked(dir.path(), Tool::OpenClaw, &src, Select::Single);
    assert_eq!(report.conversations, 1, "{}", lines(&report));
    let sessions = src.join("agents/main/sessions");
    let transcript = fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".jsonl") && !n.ends_with(".trajectory.jsonl")
        })
        .unwrap();
    let id = transcript
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = format!("openclaw:main:{id}");
    // Every line of the transcript is kept, the header in the metadata.
    let kept = jsonl_values(&store(&ws).path_for(&key).unwrap());
    let loaded = store(&ws).load(&key).unwrap();
    for entry in jsonl_values(&transcript) {
        let found = kept
            .iter()
            .any(|v| v.get("openclaw") == Some(&entry) || v.get("entry") == Some(&entry))
            || loaded.meta.metadata["openclaw_session"] == entry;
        assert!(found, "entry not kept: {entry}");
    }
    assert_main_agent_turns(&loaded);

    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert_lines_in(
        &fs::read_to_string(src.join("workspace/MEMORY.md")).unwrap(),
        &memory,
        "MEMORY.md",
    );
    let mem = MemoryStore::new(&Workspace::new(&ws), Default::default());
    let profile = mem
        .read_typed("memory/user-profile-openclaw-main.md")
        .unwrap();
    assert_lines_in(
        &fs::read_to_string(src.join("workspace/USER.md")).unwrap(),
        &profile.body,
        "USER.md",
    );
    // The run trace beside the transcript is not a conversation.
    let text = lines(&report);
    assert!(
        text.contains(&format!(
            "skip    other        <- agents/main/sessions/{id}.trajectory.jsonl: OpenClaw's trace"
        )),
        "{text}"
    );
    // This release's persona files are its templates.
    let templates = report
        .actions
        .iter()
        .filter(|a| a.kind == Kind::Profile && a.verb == Verb::Skip)
        .count();
    assert_eq!(templates, 5, "{text}");
}
