//! Imports of small nanobot, OpenClaw and Claude Code trees into real
//! workspaces: everything arrives, a second run changes nothing, a dry run
//! writes nothing, and hostile trees are refused safely.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
#[path = "fixtures.rs"]
mod fixtures;

use std::fs;
use std::path::Path;

use fixtures::*;
use mnemo_core::{Message, Workspace};
use mnemo_import::{import, import_watched, ImportOptions, Kind, Report, Tool, Verb};
use mnemo_store::Record;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

fn run(ws: &Path, tool: Tool, src: &Path, dry_run: bool) -> Report {
    run_opts(ws, tool, src, dry_run, false)
}

/// `allow_no_sessions` for the sources that hold memory files only.
fn run_opts(ws: &Path, tool: Tool, src: &Path, dry_run: bool, allow_no_sessions: bool) -> Report {
    let opts = ImportOptions {
        dry_run,
        allow_no_sessions,
        ..ImportOptions::default()
    };
    import(&Workspace::new(ws), tool, src, &opts).unwrap()
}

/// Imports once, checks that a second run and a dry run change nothing
/// and that the source was never touched. Returns the first report.
fn import_twice(ws: &Path, tool: Tool, src: &Path) -> Report {
    import_twice_opts(ws, tool, src, false)
}

fn import_twice_opts(ws: &Path, tool: Tool, src: &Path, memory_only: bool) -> Report {
    let source_before = tree(src);
    let first = run_opts(ws, tool, src, false, memory_only);
    assert!(first.changed(), "{}", lines(&first));
    let after_first = tree(ws);
    let second = run_opts(ws, tool, src, false, memory_only);
    assert!(!second.changed(), "second run wrote:\n{}", lines(&second));
    assert_eq!(tree(ws), after_first, "second run changed the workspace");
    let dry = run_opts(ws, tool, src, true, memory_only);
    assert!(!dry.changed(), "{}", lines(&dry));
    assert_eq!(tree(ws), after_first);
    assert_eq!(tree(src), source_before, "the source was modified");
    first
}

/// The progress display is told of every action, in the report's order,
/// as it is recorded.
#[test]
fn the_watcher_sees_every_action_as_it_happens() {
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_classic(&src);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let watch = Arc::new(move |a: &mnemo_import::Action| log.lock().unwrap().push(a.to_string()));
    let report = import_watched(
        &Workspace::new(&ws),
        Tool::Nanobot,
        &src,
        &ImportOptions::default(),
        Some(watch),
    )
    .unwrap();
    let all: Vec<String> = report.actions.iter().map(|a| a.to_string()).collect();
    assert!(all.len() > 2, "{all:?}");
    assert_eq!(*seen.lock().unwrap(), all);
}

#[test]
fn nanobot_classic_arrives_whole_and_twice_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_classic(&src);
    write(&ws, "MEMORY.md", "# Memory\n\n- Works at ACME\n");

    let report = import_twice(&ws, Tool::Nanobot, &src);
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(report.count_kind(Verb::Create, Kind::Session), 2);
    assert_eq!(report.messages, 7);

    let loaded = store(&ws).load("telegram:123").unwrap();
    let expected: Vec<Message> = NANOBOT_TELEGRAM[1..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(loaded.messages, expected);
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.meta.key, "telegram:123");
    assert_eq!(loaded.meta.created_at, "2026-03-01T10:00:00");
    assert_eq!(loaded.meta.updated_at, "2026-03-02T09:00:00");
    assert_eq!(loaded.meta.last_consolidated, 2);
    assert_eq!(
        Value::Object(loaded.meta.metadata.clone()),
        json!({"chat_title": "家"})
    );
    assert_eq!(loaded.meta.extra["imported_from"]["tool"], "nanobot");
    // Every message line is the source line, `"content": null` of the
    // tool-call message included.
    let file = fs::read_to_string(ws.join("sessions/telegram_123.jsonl")).unwrap();
    let written: Vec<Value> = file
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let source: Vec<Value> = NANOBOT_TELEGRAM[1..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(written, source);
    assert!(file.contains(r#""content":null,"tool_calls""#), "{file}");

    let cli = store(&ws).load("cli:direct").unwrap();
    assert_eq!(
        cli.messages,
        vec![Message::user("hello").with_timestamp("2026-03-03T12:00:00")]
    );

    let root = fs::canonicalize(&src).unwrap();
    assert_eq!(
        fs::read_to_string(ws.join("MEMORY.md")).unwrap(),
        format!(
            "# Memory\n\n- Works at ACME\n\n## Imported from nanobot ({})\n\n# Long-term Memory\n\n## User\n\n- Lives in Lyon\n\n## Preferences\n\n- Likes green tea\n",
            root.display()
        )
    );
    assert_eq!(
        fs::read_to_string(ws.join("memory/HISTORY.md")).unwrap(),
        "[2026-03-01 10:00] User said they live in Lyon and like green tea.\n\n[2026-03-02 09:00] Listed files with exec;\nthe user sent a picture.\n\n"
    );
    assert!(ws.join(".mnemo/imports.json").exists());
}

#[test]
fn nanobot_head_history_jsonl_becomes_history_entries() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_head(&src);
    write(
        &ws,
        "memory/HISTORY.md",
        "[2026-01-01 00:00] Older entry.\n\n",
    );
    let report = import_twice(&ws, Tool::Nanobot, &src);
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(report.history_entries, 2);
    assert_eq!(
        fs::read_to_string(ws.join("memory/HISTORY.md")).unwrap(),
        "[2026-01-01 00:00] Older entry.\n\n[2026-04-01 12:00] - [permanent] The user's cat is Mochi\n(session: cli:direct)\n\n[2026-04-02 08:30] (nothing)\n\n"
    );
    let loaded = store(&ws).load("cli:direct").unwrap();
    assert_eq!(loaded.meta.last_consolidated, 1);
    assert_eq!(loaded.messages.len(), 2);
    // nanobot's cursor files are reported, not silently dropped.
    assert_eq!(report.count_kind(Verb::Skip, Kind::Other), 2);
}

#[test]
fn nanobot_session_that_grew_gets_only_its_new_messages() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_classic(&src);
    run(&ws, Tool::Nanobot, &src, false);
    // nanobot rewrites the file on save: one more message, cursor moved.
    let mut grown: Vec<String> = NANOBOT_TELEGRAM.iter().map(|s| s.to_string()).collect();
    grown[0] = grown[0].replace("\"last_consolidated\":2", "\"last_consolidated\":5");
    grown.push(
        r#"{"role":"assistant","content":"Nice picture.","timestamp":"2026-03-02T09:00:03"}"#
            .into(),
    );
    write(
        &src,
        "sessions/telegram_123.jsonl",
        &(grown.join("\n") + "\n"),
    );
    let report = run(&ws, Tool::Nanobot, &src, false);
    assert_eq!(
        report.count_kind(Verb::Append, Kind::Session),
        1,
        "{}",
        lines(&report)
    );
    assert_eq!(report.messages, 1);
    let loaded = store(&ws).load("telegram:123").unwrap();
    assert_eq!(loaded.messages.len(), 7);
    assert_eq!(loaded.messages[6].text(), "Nice picture.");
    assert_eq!(loaded.meta.last_consolidated, 5);
    let again = run(&ws, Tool::Nanobot, &src, false);
    assert!(!again.changed(), "{}", lines(&again));
}

#[test]
fn conflicting_session_key_is_imported_beside_and_then_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_classic(&src);
    let mut log = store(&ws).open("cli:direct").unwrap();
    log.append(&[Message::user("a mnemo conversation")])
        .unwrap();
    drop(log);
    let report = run(&ws, Tool::Nanobot, &src, false);
    assert!(!report.has_problems(), "{}", lines(&report));
    let mine = store(&ws).load("cli:direct").unwrap();
    assert_eq!(mine.messages.len(), 1);
    assert_eq!(mine.messages[0].text(), "a mnemo conversation");
    let keys: Vec<String> = keys(&ws);
    let imported = keys
        .iter()
        .find(|k| k.starts_with("cli:direct#nanobot-"))
        .unwrap_or_else(|| panic!("no side key among {keys:?}"));
    assert_eq!(
        store(&ws).load(imported).unwrap().messages[0].text(),
        "hello"
    );
    let before = tree(&ws);
    assert!(!run(&ws, Tool::Nanobot, &src, false).changed());
    assert_eq!(tree(&ws), before);
}

#[test]
fn bad_lines_and_files_are_reported_and_the_rest_imported() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    nanobot_classic(&src);
    write(
        &src,
        "sessions/broken_1.jsonl",
        "{\"_type\":\"metadata\",\"key\":\"broken:1\"}\n{\"role\":\"user\",\"content\":\"ok\"}\n{not json\n",
    );
    fs::write(
        src.join("sessions/latin1_2.jsonl"),
        b"{\"role\":\"user\",\"content\":\"caf\xe9\"}\n",
    )
    .unwrap();
    write(
        &src,
        "memory/history.jsonl",
        "{\"cursor\":1,\"timestamp\":\"yesterday\",\"content\":\"x\"}\n{\"cursor\":2,\"timestamp\":\"2026-03-05 10:00\",\"content\":\"fine\"}\n",
    );
    let report = run(&ws, Tool::Nanobot, &src, false);
    let text = lines(&report);
    assert!(report.has_problems());
    assert!(text.contains("sessions/broken_1.jsonl:3"), "{text}");
    assert!(text.contains("sessions/latin1_2.jsonl:1"), "{text}");
    assert!(text.contains("memory/history.jsonl:1"), "{text}");
    assert!(text.contains("invalid UTF-8"), "{text}");
    // The bad line is kept as a record, the good ones as messages.
    let broken = store(&ws).load("broken:1").unwrap();
    assert_eq!(broken.messages.len(), 1);
    assert_eq!(broken.other.len(), 1);
    assert_eq!(broken.other[0].1["text"], "{not json");
    assert_eq!(store(&ws).load("telegram:123").unwrap().messages.len(), 6);
    assert!(fs::read_to_string(ws.join("memory/HISTORY.md"))
        .unwrap()
        .contains("[2026-03-05 10:00] fine"));
    let before = tree(&ws);
    assert!(!run(&ws, Tool::Nanobot, &src, false).changed());
    assert_eq!(tree(&ws), before);
}

#[test]
fn openclaw_state_folder_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("openclaw");
    let ws = dir.path().join("ws");
    openclaw(&src);
    // A daily log of the same day already exists in the workspace.
    write(
        &ws,
        "memory/2026-05-01.md",
        "# 2026-05-01\n\n- Wrote the import\n",
    );
    let report = import_twice(&ws, Tool::OpenClaw, &src);
    assert!(!report.has_problems(), "{}", lines(&report));

    let key = "openclaw:main:0f5e2a9c";
    let loaded = store(&ws).load(key).unwrap();
    let entry = |i: usize| -> Value { serde_json::from_str(OPENCLAW_SESSION[i]).unwrap() };
    let with = |mut m: Message, i: usize| {
        m.timestamp = entry(i)["timestamp"].as_str().map(str::to_string);
        m.extra.insert("openclaw".into(), entry(i));
        m
    };
    let mut a1 = Message::assistant("Let me look.");
    a1.tool_calls = Some(vec![serde_json::from_value(json!({
        "id": "call_1", "type": "function",
        "function": {"name": "bash", "arguments": {"command": "ls notes"}}
    }))
    .unwrap()]);
    a1.extra
        .insert("reasoning_content".into(), json!("I should list it"));
    let mut u2 = Message::user("");
    u2.content = Some(mnemo_core::Content::Parts(vec![
        json!({"type":"text","text":"Thanks"}),
        json!({"type":"image","data":"aGk=","mimeType":"image/png"}),
    ]));
    let expected = vec![
        with(Message::user("What is in my notes folder?"), 2),
        with(a1, 4),
        with(
            Message::tool_result("call_1", "bash", "ideas.md\ntodo.md"),
            5,
        ),
        with(Message::assistant("You have ideas.md and todo.md."), 8),
        with(u2, 9),
    ];
    assert_eq!(loaded.messages, expected);
    assert_eq!(loaded.meta.created_at, "2026-05-01T09:00:00.000Z");
    assert_eq!(loaded.meta.metadata["openclaw_session"], entry(0));
    // sessions.json names it: the keys are kept with it.
    assert_eq!(
        loaded.meta.metadata["openclaw_keys"],
        json!(["agent:main:main"])
    );
    // The compaction points at the first kept message (a1 = ordinal 1).
    assert_eq!(loaded.compactions.len(), 1);
    let (before, c) = &loaded.compactions[0];
    assert_eq!(*before, 3);
    assert_eq!(c.first_kept, Some(1));
    assert_eq!(c.tokens_before, 50000);
    assert_eq!(
        c.summary.as_deref(),
        Some("## Goal\nList the notes folder.")
    );
    // Non-message entries and the abandoned branch are records, in order.
    let kept: Vec<(usize, Value, bool)> = loaded
        .other
        .iter()
        .map(|(n, v)| (*n, v["entry"].clone(), v["active"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        kept,
        vec![
            (0, entry(1), true),
            (1, entry(3), false),
            (3, entry(7), true)
        ]
    );

    assert_eq!(
        fs::read_to_string(ws.join("memory/2026-05-01.md")).unwrap(),
        "# 2026-05-01\n\n- Wrote the import\n- Looked at the notes folder\n- Decided to clean todo.md\n"
    );
    for rel in ["2026-05-01-notes.md", "projects/garden.md"] {
        assert_eq!(
            fs::read(ws.join("memory").join(rel)).unwrap(),
            fs::read(src.join("workspace/memory").join(rel)).unwrap(),
            "{rel}"
        );
    }
    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert!(
        memory.starts_with("## Imported from openclaw ("),
        "{memory}"
    );
    assert!(memory
        .ends_with("\n\n# Memory\n\n- Prefers short answers\n- Project deadline: 2026-06-30\n"));
    // sessions.json is read for its keys, not imported as a transcript.
    let listed = lines(&report);
    assert!(
        listed.contains("agents/main/sessions/sessions.json")
            && listed.contains("1 session key(s) recorded"),
        "{listed}"
    );
}

#[test]
fn openclaw_transcript_that_grew_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("openclaw");
    let ws = dir.path().join("ws");
    openclaw(&src);
    run(&ws, Tool::OpenClaw, &src, false);
    let mut grown = OPENCLAW_SESSION.join("\n");
    grown.push('\n');
    grown.push_str(r#"{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-05-01T09:11:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"You're welcome."}]}}"#);
    grown.push('\n');
    write(&src, "agents/main/sessions/0f5e2a9c.jsonl", &grown);
    write(
        &src,
        "workspace/memory/2026-05-01.md",
        "# 2026-05-01\n\n- Looked at the notes folder\n- Decided to clean todo.md\n- Later: cleaned it\n",
    );
    let report = run(&ws, Tool::OpenClaw, &src, false);
    assert_eq!(report.messages, 1, "{}", lines(&report));
    assert_eq!(report.count(Verb::Append), 2, "{}", lines(&report));
    let loaded = store(&ws).load("openclaw:main:0f5e2a9c").unwrap();
    assert_eq!(loaded.messages.len(), 6);
    assert_eq!(loaded.messages[5].text(), "You're welcome.");
    assert!(fs::read_to_string(ws.join("memory/2026-05-01.md"))
        .unwrap()
        .ends_with("- Later: cleaned it\n"));
    assert!(!run(&ws, Tool::OpenClaw, &src, false).changed());
}

#[test]
fn a_dry_run_that_meets_a_conversation_twice_lists_what_the_import_does() {
    // The oldest installs' `sessions/` beside `agents/main/sessions/`: the
    // same transcript twice, the second grown. The import creates the log
    // from the first and appends the second's new entry; a dry run, which
    // writes nothing, remembers the log it would have created to say so.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("openclaw");
    openclaw(&src);
    let mut grown = OPENCLAW_SESSION.join("\n");
    grown.push('\n');
    grown.push_str(r#"{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-05-01T09:11:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"You're welcome."}]}}"#);
    grown.push('\n');
    write(&src, "sessions/0f5e2a9c.jsonl", &grown);
    let dry_ws = dir.path().join("dry");
    let dry = run(&dry_ws, Tool::OpenClaw, &src, true);
    assert!(!dry_ws.exists());
    let ws = dir.path().join("ws");
    let real = run(&ws, Tool::OpenClaw, &src, false);
    assert_eq!(lines(&dry), lines(&real));
    assert_eq!(
        real.count_kind(Verb::Append, Kind::Session),
        1,
        "{}",
        lines(&real)
    );
    assert_eq!(real.messages, 6, "{}", lines(&real));
    assert!(!run(&ws, Tool::OpenClaw, &src, false).changed());
}

#[test]
fn claude_code_memory_folder_arrives_whole() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("memory");
    let ws = dir.path().join("ws");
    claude_code(&src);
    write(&ws, "MEMORY.md", "# Memory\n\n- Works at ACME\n");
    let report = import_twice_opts(&ws, Tool::ClaudeCode, &src, true);
    // The broken front matter is copied as it is and reported.
    let problems: Vec<String> = report
        .actions
        .iter()
        .filter(|a| a.verb == Verb::Error)
        .map(|a| a.to_string())
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].contains("broken.md:3"), "{problems:?}");
    for name in ["user_role.md", "feedback_testing.md", "broken.md"] {
        assert_eq!(
            fs::read(ws.join("memory").join(name)).unwrap(),
            fs::read(src.join(name)).unwrap(),
            "{name}"
        );
    }
    let root = fs::canonicalize(&src).unwrap();
    assert_eq!(
        fs::read_to_string(ws.join("MEMORY.md")).unwrap(),
        format!(
            "# Memory\n\n- Works at ACME\n\n## Imported from claude-code ({})\n\n- [User role](memory/user_role.md) — data scientist, new to Rust\n- [Testing](memory/feedback_testing.md) — real databases in tests\n- [Broken](memory/broken.md) — front matter does not parse\n",
            root.display()
        )
    );
    // The typed memories read back through the store.
    let mem = mnemo_store::MemoryStore::new(&Workspace::new(&ws), Default::default());
    let t = mem.read_typed("memory/feedback_testing.md").unwrap();
    assert_eq!(t.front.name, "Testing");
    assert_eq!(t.front.kind, mnemo_store::MemoryType::Feedback);
}

#[test]
fn claude_code_file_clash_keeps_the_users_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("memory");
    let ws = dir.path().join("ws");
    claude_code(&src);
    write(
        &ws,
        "memory/user_role.md",
        "---\nname: mine\ntype: user\n---\nmine\n",
    );
    let report = run(&ws, Tool::ClaudeCode, &src, false);
    assert_eq!(
        fs::read_to_string(ws.join("memory/user_role.md")).unwrap(),
        "---\nname: mine\ntype: user\n---\nmine\n"
    );
    assert_eq!(
        fs::read(ws.join("memory/user_role.from-claude-code.md")).unwrap(),
        fs::read(src.join("user_role.md")).unwrap()
    );
    assert!(fs::read_to_string(ws.join("MEMORY.md"))
        .unwrap()
        .contains("- [User role](memory/user_role.from-claude-code.md) — data scientist"));
    assert!(lines(&report).contains("beside memory/user_role.md"));
    // A newer source refreshes the copy the import made, not the user's file.
    write(&src, "user_role.md", "---\nname: User role\ndescription: now a Rust developer\ntype: user\n---\n\nRust developer.\n");
    let r2 = run(&ws, Tool::ClaudeCode, &src, false);
    assert_eq!(r2.count(Verb::Update), 1, "{}", lines(&r2));
    assert_eq!(
        fs::read(ws.join("memory/user_role.from-claude-code.md")).unwrap(),
        fs::read(src.join("user_role.md")).unwrap()
    );
    assert!(!run(&ws, Tool::ClaudeCode, &src, false).changed());
}

#[test]
fn dry_run_writes_nothing_and_lists_the_same_actions() {
    for (tool, build) in [
        (Tool::Nanobot, nanobot_classic as fn(&Path)),
        (Tool::OpenClaw, openclaw),
        (Tool::ClaudeCode, claude_code),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        let ws = dir.path().join("ws");
        build(&src);
        write(&ws, "MEMORY.md", "# Memory\n");
        let before = tree(&ws);
        let dry = run(&ws, tool, &src, true);
        assert!(dry.dry_run);
        assert_eq!(tree(&ws), before, "{tool}: the dry run wrote");
        assert!(dry.changed(), "{tool}: {}", lines(&dry));
        let real = run(&ws, tool, &src, false);
        assert_eq!(lines(&dry), lines(&real), "{tool}");
        assert!(dry.summary().contains("dry run"));
    }
}

#[cfg(unix)]
#[test]
fn hostile_trees_are_refused_safely() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    write(
        &outside,
        "secret.md",
        "---\nname: s\ntype: user\n---\nTOP SECRET\n",
    );
    write(&outside, "notes/secret-notes.md", "TOP SECRET NOTES\n");

    // Claude Code: index links that climb out, a link to a file outside.
    let cc = dir.path().join("cc");
    claude_code(&cc);
    write(
        &cc,
        "MEMORY.md",
        "- [Escape](../../outside/secret.md) — climbs\n- [Abs](/etc/passwd) — absolute\n- [Ok](user_role.md) — fine\n",
    );
    symlink(outside.join("secret.md"), cc.join("leak.md")).unwrap();
    symlink(cc.join("user_role.md"), cc.join("alias.md")).unwrap();
    let ws = dir.path().join("ws");
    let outside_before = tree(&outside);
    let report = run_opts(&ws, Tool::ClaudeCode, &cc, false, true);
    let text = lines(&report);
    assert_eq!(report.count(Verb::Refuse), 3, "{text}");
    assert!(text.contains("../../outside/secret.md"), "{text}");
    assert!(text.contains("/etc/passwd"), "{text}");
    assert!(text.contains("leak.md"), "{text}");
    let memory = fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert!(
        !memory.contains("outside") && !memory.contains("passwd"),
        "{memory}"
    );
    assert!(memory.contains("(memory/user_role.md)"));
    assert!(!ws.join("memory/leak.md").exists());
    assert!(!ws.join("memory/alias.md").exists());

    // OpenClaw: a linked folder inside memory/ and a linked agent.
    let oc = dir.path().join("oc");
    openclaw(&oc);
    symlink(outside.join("notes"), oc.join("workspace/memory/linked")).unwrap();
    symlink(&outside, oc.join("agents/evil")).unwrap();
    let report = run(&ws, Tool::OpenClaw, &oc, false);
    assert_eq!(report.count(Verb::Refuse), 2, "{}", lines(&report));

    // nanobot: a session key that tries to climb out of sessions/.
    let nb = dir.path().join("nb");
    write(
        &nb,
        "sessions/evil.jsonl",
        "{\"_type\":\"metadata\",\"key\":\"../../outside/pwn\"}\n{\"role\":\"user\",\"content\":\"x\"}\n",
    );
    let report = run(&ws, Tool::Nanobot, &nb, false);
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(
        store(&ws).load("../../outside/pwn").unwrap().messages.len(),
        1
    );

    assert_eq!(
        tree(&outside),
        outside_before,
        "something was written outside"
    );
    for (path, bytes) in tree(&ws) {
        let s = String::from_utf8_lossy(&bytes);
        assert!(!s.contains("TOP SECRET"), "{path} holds outside content");
        assert!(!path.split('/').any(|c| c == ".."), "{path}");
    }
}

#[test]
fn a_source_that_is_not_the_tool_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    let ws = Workspace::new(dir.path().join("ws"));
    for tool in [Tool::Nanobot, Tool::OpenClaw, Tool::ClaudeCode] {
        let err = import(&ws, tool, &empty, &ImportOptions::default()).unwrap_err();
        assert_eq!(err.code(), mnemo_core::ErrorCode::InvalidInput);
        assert!(err.to_string().contains("not a"), "{err}");
    }
    let err = import(
        &ws,
        Tool::Nanobot,
        &dir.path().join("missing"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("check the path"), "{err}");
    assert!(!ws.root().exists());
}

#[test]
fn records_round_trip_through_the_store_parser() {
    // Lines this crate writes must parse back as the same kind of record.
    let other =
        Record::Other(json!({"_type":"openclaw_entry","active":true,"entry":{"type":"label"}}));
    let line = other.to_line().unwrap();
    assert_eq!(Record::parse(&line).unwrap(), other);
}

#[test]
fn a_broken_openclaw_session_index_is_reported_and_the_transcripts_still_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("openclaw");
    let ws = dir.path().join("ws");
    openclaw(&src);
    fs::write(src.join("agents/main/sessions/sessions.json"), "{not json").unwrap();
    let report = run(&ws, Tool::OpenClaw, &src, false);
    assert!(report.has_problems());
    assert!(
        lines(&report).contains("not a JSON object of session keys"),
        "{}",
        lines(&report)
    );
    let loaded = store(&ws).load("openclaw:main:0f5e2a9c").unwrap();
    assert!(!loaded.messages.is_empty());
    assert!(!loaded.meta.metadata.contains_key("openclaw_keys"));
}

/// A Claude Code transcript in the documented format of earlier releases:
/// a `summary` line, sidechain entries in the session's own file, thinking,
/// a failed tool call, an image, an entry type this version does not know.
#[test]
fn claude_code_older_transcripts_summaries_and_inline_sidechains() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("projects/-home-u-app");
    let lines_of = [
        r#"{"type":"summary","summary":"Fixing the login bug","leafUuid":"a2"}"#,
        r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"Why does login fail?"},"uuid":"u1","timestamp":"2025-06-01T10:00:00.000Z","sessionId":"s1","cwd":"/home/u/app","version":"1.0.30"}"#,
        r#"{"parentUuid":"u1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"check the logs","signature":"x"}]},"uuid":"a1","timestamp":"2025-06-01T10:00:01.000Z"}"#,
        r#"{"parentUuid":"a1","isSidechain":false,"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cat login.log"}}]},"uuid":"a1b","timestamp":"2025-06-01T10:00:01.500Z"}"#,
        r#"{"parentUuid":"a1b","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"No such file","is_error":true}]},"uuid":"t1","timestamp":"2025-06-01T10:00:02.000Z"}"#,
        r#"{"parentUuid":"t1","isSidechain":true,"type":"user","message":{"role":"user","content":"Search the code for the login handler"},"uuid":"s-u1","timestamp":"2025-06-01T10:00:03.000Z"}"#,
        r#"{"parentUuid":"s-u1","isSidechain":true,"type":"assistant","message":{"id":"msg_s","role":"assistant","content":[{"type":"text","text":"It is in auth.rs."}]},"uuid":"s-a1","timestamp":"2025-06-01T10:00:04.000Z"}"#,
        r#"{"parentUuid":"t1","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"text","text":"This screenshot:"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]},"uuid":"u2","timestamp":"2025-06-01T10:00:05.000Z"}"#,
        r#"{"parentUuid":"u2","isSidechain":false,"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"The session cookie expired."}]},"uuid":"a2","timestamp":"2025-06-01T10:00:06.000Z"}"#,
        r#"{"type":"hologram","note":"from a future release"}"#,
        r#"{"type":"file-history-snapshot","messageId":"a2","snapshot":{}}"#,
        "not json",
    ];
    write(&project, "s1.jsonl", &(lines_of.join("\n") + "\n"));
    let ws = dir.path().join("ws");
    let report = run_opts(&ws, Tool::ClaudeCode, &project, false, false);
    let text = lines(&report);
    // The bad line is the one problem; it is kept verbatim.
    assert_eq!(report.count(Verb::Error), 1, "{text}");
    assert!(text.contains("s1.jsonl:12"), "{text}");
    assert!(text.contains("unknown session      <- s1.jsonl: 1 entr(ies) of a type this version does not know (hologram 1)"), "{text}");
    assert!(
        text.contains("1 entr(ies) of Claude Code's own bookkeeping (file-history-snapshot 1)"),
        "{text}"
    );

    let key = "claude-code:-home-u-app:s1";
    let main = store(&ws).load(key).unwrap();
    assert_eq!(main.meta.metadata["title"], "Fixing the login bug");
    assert_eq!(main.meta.metadata["claude_code_cwd"], "/home/u/app");
    assert_eq!(main.meta.created_at, "2025-06-01T10:00:00.000Z");
    let roles: Vec<&str> = main.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user", "assistant"]);
    let reply = &main.messages[1];
    assert_eq!(reply.extra["reasoning_content"], "check the logs");
    assert_eq!(reply.tool_call_ids().collect::<Vec<_>>(), ["toolu_1"]);
    assert_eq!(reply.extra["claude_code"].as_array().unwrap().len(), 2);
    let result = &main.messages[2];
    assert_eq!(result.name.as_deref(), Some("Bash"));
    assert_eq!(result.extra["is_error"], true);
    assert!(matches!(
        main.messages[3].content,
        Some(mnemo_core::Content::Parts(_))
    ));
    assert_eq!(
        main.other.len(),
        3,
        "summary, hologram, the bad line: {:?}",
        main.other
    );

    let side = store(&ws).load(&format!("{key}:sidechain")).unwrap();
    assert_eq!(side.meta.metadata["claude_code_parent"], key);
    let said: Vec<String> = side.messages.iter().map(|m| m.text()).collect();
    assert_eq!(
        said,
        ["Search the code for the login handler", "It is in auth.rs."]
    );
}
