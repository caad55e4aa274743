//! mnemo's session logs read by nanobot's own code: `mnemo export nanobot`
//! writes logs that nanobot-ai 0.3.5's `SessionManager` loads with every
//! message as mnemo holds it, where mnemo's raw log (with its compaction
//! records) makes nanobot fail. Needs nanobot-ai 0.3.5
//! (`scripts/fetch-peers.sh` installs it into `.venv-nanobot/`, or set
//! `MNEMO_NANOBOT_PYTHON`); without it the tests say so and pass, except
//! under CI, where they fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "fixtures.rs"]
mod fixtures;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use fixtures::{copy_fixture, keys, lines, store};
use mnemo_core::{Message, Workspace};
use mnemo_import::{export_nanobot, import, ExportOptions, ImportOptions, Select, Tool, Verb};
use mnemo_store::{CompactionRecord, Record};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// Loads sessions with nanobot's SessionManager and prints, per key, the
/// messages it holds, its cursor and what `get_history` made of them.
const LOAD: &str = r#"
import importlib.metadata, json, sys
from pathlib import Path
from nanobot.session.manager import SessionManager

workspace, root, keys = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
manager = SessionManager(workspace, sessions_root=root)
out = {"version": importlib.metadata.version("nanobot-ai"), "sessions": {}}
for key in keys:
    session = manager.get_or_create(key)
    entry = {"messages": session.messages, "last_archived": session.last_archived}
    try:
        entry["history"] = len(session.get_history())
    except Exception as e:
        entry["error"] = f"{type(e).__name__}: {e}"
    out["sessions"][key] = entry
print(json.dumps(out, ensure_ascii=False, default=str))
"#;

/// What nanobot loads from its data folder `data` for `keys`.
fn nanobot_load(python: &Path, data: &Path, keys: &[String]) -> BTreeMap<String, Value> {
    let home = data.parent().unwrap();
    let out = Command::new(python)
        .arg("-c")
        .arg(LOAD)
        .arg(data.join("workspace"))
        .arg(data.join("sessions"))
        .args(keys)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nanobot failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["version"], "0.3.5",
        "the round trip is pinned to nanobot-ai 0.3.5"
    );
    v["sessions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A nanobot data folder with an empty workspace, as a fresh install has.
fn nanobot_home(dir: &Path) -> PathBuf {
    let data = dir.join(".nanobot");
    fs::create_dir_all(data.join("workspace")).unwrap();
    data
}

/// The message lines of a mnemo log, as JSON, and its cursor.
fn mnemo_messages(ws: &Path, key: &str) -> (Vec<Value>, usize) {
    let text = fs::read_to_string(store(ws).path_for(key).unwrap()).unwrap();
    let mut cursor = 0;
    let mut out = Vec::new();
    for line in text.lines() {
        match Record::parse(line).unwrap() {
            Record::Metadata(m) => cursor = m.last_consolidated,
            Record::Message(_) => out.push(serde_json::from_str(line).unwrap()),
            _ => {}
        }
    }
    (out, cursor)
}

/// A session written by mnemo itself: tool calls, a compaction record
/// between messages (the cursor is left at 0, so nanobot would replay it).
fn mnemo_session(ws: &Path) {
    let mut log = store(ws).open("cli:direct").unwrap();
    let mut call = Message::assistant("");
    call.content = None;
    call.tool_calls = Some(vec![serde_json::from_value(json!({
        "id": "c1", "type": "function",
        "function": {"name": "memory_search", "arguments": "{\"query\":\"tea\"}"}
    }))
    .unwrap()]);
    log.append(&[
        Message::user("What do I drink?"),
        call,
        Message::tool_result("c1", "memory_search", "1 result: green tea"),
        Message::assistant("Green tea."),
    ])
    .unwrap();
    log.append_record(&Record::Compaction(CompactionRecord {
        kind: "autocompact".into(),
        tokens_before: 9000,
        tokens_after: 1200,
        summary: Some("The user drinks green tea.".into()),
        first_kept: Some(2),
        timestamp: "2026-12-01T10:00:00+00:00".into(),
        extra: Default::default(),
    }))
    .unwrap();
    log.append(&[
        Message::user("And on Sundays?"),
        Message::assistant("Jasmine tea."),
    ])
    .unwrap();
}

#[test]
fn mnemo_logs_load_in_nanobot_through_export_and_not_without() {
    let Some(python) = mnemo_test_support::peers::nanobot_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    mnemo_session(&ws);
    // Logs imports wrote too: OpenClaw's and Claude Code's entries kept as
    // records, tool-call arguments as JSON objects.
    let peers = dir.path().join("peers");
    for (fixture, tool, folder) in [
        ("openclaw-2026.9.6", Tool::OpenClaw, ".openclaw"),
        ("claude-code-2.1.332", Tool::ClaudeCode, ".claude"),
    ] {
        let home = copy_fixture(fixture, &peers.join(fixture));
        let opts = ImportOptions {
            select: Select::All,
            ..ImportOptions::default()
        };
        let report = import(&Workspace::new(&ws), tool, &home.join(folder), &opts).unwrap();
        assert!(!report.has_problems(), "{}", lines(&report));
    }
    let keys: Vec<String> = keys(&ws);
    assert_eq!(keys.len(), 5, "{keys:?}");

    let data = nanobot_home(&dir.path().join("nb"));
    let report = export_nanobot(&Workspace::new(&ws), &data, &ExportOptions::default()).unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(
        report.count(Verb::Create),
        keys.len() + 2,
        "{}",
        lines(&report)
    );
    let text = lines(&report);
    assert!(text.contains("left out compaction 1"), "{text}");
    let loaded = nanobot_load(&python, &data, &keys);
    for key in &keys {
        let (messages, cursor) = mnemo_messages(&ws, key);
        let theirs = &loaded[key];
        assert!(theirs.get("error").is_none(), "{key}: {}", theirs["error"]);
        assert_eq!(theirs["messages"], Value::Array(messages.clone()), "{key}");
        assert_eq!(theirs["last_archived"], json!(cursor), "{key}");
        assert!(!messages.is_empty(), "{key}");
    }
    // Exporting again changes nothing.
    let again = export_nanobot(&Workspace::new(&ws), &data, &ExportOptions::default()).unwrap();
    assert_eq!(again.count(Verb::Skip), keys.len(), "{}", lines(&again));

    // mnemo's raw log in nanobot's place: its compaction record is read as
    // a message without a role, and nanobot fails on it.
    let ns = fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    fs::copy(
        store(&ws).path_for("cli:direct").unwrap(),
        ns.join("Y2xpOmRpcmVjdA.jsonl"),
    )
    .unwrap();
    let raw = nanobot_load(&python, &data, &["cli:direct".to_string()]);
    let error = raw["cli:direct"]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("KeyError"),
        "mnemo's raw log loaded in nanobot: {}",
        raw["cli:direct"]
    );
}

#[test]
fn nanobot_sessions_come_back_unchanged_through_mnemo() {
    let Some(python) = mnemo_test_support::peers::nanobot_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let original = copy_fixture("nanobot-0.3.5", &dir.path().join("original"));
    let data = original.join(".nanobot");
    let keys = vec!["cli:direct".to_string(), "telegram:42".to_string()];
    let before = nanobot_load(&python, &data, &keys);

    let ws = dir.path().join("ws");
    let src = copy_fixture("nanobot-0.3.5", &dir.path().join("source")).join(".nanobot");
    let report = import(
        &Workspace::new(&ws),
        Tool::Nanobot,
        &src,
        &ImportOptions::default(),
    )
    .unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    let back = nanobot_home(&dir.path().join("back"));
    let report = export_nanobot(&Workspace::new(&ws), &back, &ExportOptions::default()).unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    let after = nanobot_load(&python, &back, &keys);
    for key in &keys {
        assert_eq!(after[key]["messages"], before[key]["messages"], "{key}");
        assert_eq!(
            after[key]["last_archived"], before[key]["last_archived"],
            "{key}"
        );
        assert_eq!(after[key]["history"], before[key]["history"], "{key}");
    }
    // The tool-call message nanobot stored with `"content": null` kept it.
    let null = after["telegram:42"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m.get("content") == Some(&Value::Null))
        .count();
    assert_eq!(null, 1);
}
