//! Session logs on real files: formats, torn tails, bad input, budgets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use mnemo_core::{Message, Role, Workspace};
use mnemo_store::session::{read_session_file, Record, WarningKind};
use mnemo_store::{CompactionRecord, FsyncPolicy, SessionOptions, SessionStore};
use pretty_assertions::assert_eq;
use serde_json::Value;

fn store(dir: &std::path::Path) -> SessionStore {
    SessionStore::new(&Workspace::new(dir), SessionOptions::default())
}

#[test]
fn append_load_round_trip_keeps_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("telegram:123").unwrap();
    let lines = [
        r#"{"role":"user","content":"hi 你好","timestamp":"2026-03-01T10:00:00"}"#,
        r#"{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"exec","arguments":"{\"cmd\":\"ls\"}"}}],"timestamp":"2026-03-01T10:00:01","tools_used":["exec"]}"#,
        r#"{"role":"tool","tool_call_id":"c1","name":"exec","content":"a b","timestamp":"2026-03-01T10:00:02"}"#,
        r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}}],"timestamp":"2026-03-01T10:00:03"}"#,
    ];
    let msgs: Vec<Message> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    log.append(&msgs[..2]).unwrap();
    log.append(&msgs[2..]).unwrap();
    let loaded = s.load("telegram:123").unwrap();
    assert_eq!(loaded.messages, msgs);
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.meta.key, "telegram:123");
    assert_eq!(log.path(), dir.path().join("sessions/telegram_123.jsonl"));
    // The file holds exactly the metadata line plus the messages, byte for byte.
    let text = fs::read_to_string(log.path()).unwrap();
    let file_lines: Vec<&str> = text.lines().collect();
    assert_eq!(file_lines.len(), 5);
    for (a, b) in file_lines[1..].iter().zip(lines) {
        assert_eq!(
            serde_json::from_str::<Value>(a).unwrap(),
            serde_json::from_str::<Value>(b).unwrap()
        );
    }
}

#[test]
fn nanobot_session_file_loads_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    fs::create_dir_all(&sessions).unwrap();
    // As nanobot's SessionManager writes it: metadata first, then messages.
    let text = concat!(
        r#"{"_type":"metadata","key":"cli:direct","created_at":"2026-03-01T09:59:00.123456","updated_at":"2026-03-01T10:01:00.5","metadata":{},"last_consolidated":2}"#,
        "\n",
        r#"{"role":"user","content":"remember I like tea","timestamp":"2026-03-01T10:00:00.1"}"#,
        "\n",
        r#"{"role":"assistant","content":"Noted!","timestamp":"2026-03-01T10:00:01.2","tools_used":[]}"#,
        "\n",
        r#"{"role":"user","content":"what do I like?","timestamp":"2026-03-01T10:01:00.3"}"#,
        "\n",
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"memory/MEMORY.md\"}"}}],"timestamp":"2026-03-01T10:01:00.4"}"#,
        "\n",
        r#"{"role":"tool","tool_call_id":"call_1","name":"read_file","content":"tea","timestamp":"2026-03-01T10:01:00.5"}"#,
        "\n",
        r#"{"role":"assistant","content":"You like tea.","timestamp":"2026-03-01T10:01:01.0"}"#,
        "\n",
    );
    let path = sessions.join("cli_direct.jsonl");
    fs::write(&path, text).unwrap();
    let s = store(dir.path());
    let loaded = s.load("cli:direct").unwrap();
    assert_eq!(loaded.messages.len(), 6);
    assert_eq!(loaded.meta.last_consolidated, 2);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.messages[3].tool_calls.as_ref().unwrap()[0]
            .function
            .name,
        "read_file"
    );
    // Replay starts at the cursor and keeps the tool pair.
    let replay = loaded.replay();
    assert_eq!(
        replay.iter().map(|m| m.role).collect::<Vec<_>>(),
        vec![Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    // Loading changed nothing on disk.
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    // Appending keeps nanobot's lines and adds one line.
    s.open("cli:direct")
        .unwrap()
        .append(&[Message::user("more")])
        .unwrap();
    let after = fs::read_to_string(&path).unwrap();
    assert!(after.starts_with(text));
    assert_eq!(after.lines().count(), 8);
}

#[test]
fn cursor_moves_append_and_fold() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionStore::new(
        &Workspace::new(dir.path()),
        SessionOptions {
            fold_after_metadata_records: 5,
            ..SessionOptions::default()
        },
    );
    let mut log = s.open("k").unwrap();
    log.append(
        &(0..10)
            .map(|i| Message::user(format!("m{i}")))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let before = fs::metadata(log.path()).unwrap().len();
    log.set_cursor(3).unwrap();
    let grown = fs::metadata(log.path()).unwrap().len();
    assert!(grown > before);
    assert_eq!(s.load("k").unwrap().meta.last_consolidated, 3);
    for c in 4..=8 {
        log.set_cursor(c).unwrap();
    }
    let loaded = s.load("k").unwrap();
    assert_eq!(loaded.meta.last_consolidated, 8);
    assert_eq!(loaded.messages.len(), 10);
    // Folded at the sixth record: seven cursor moves leave two records.
    assert_eq!(
        loaded.metadata_records, 2,
        "fold should have rewritten the metadata"
    );
    // Appends after a fold go to the new file.
    log.append(&[Message::user("after fold")]).unwrap();
    assert_eq!(s.load("k").unwrap().messages.len(), 11);
}

#[test]
fn compaction_records_survive_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("a"), Message::assistant("b")])
        .unwrap();
    let rec = CompactionRecord {
        kind: "autocompact".into(),
        tokens_before: 1000,
        tokens_after: 100,
        summary: Some("## Goal\nx".into()),
        first_kept: Some(1),
        timestamp: "2026-01-01T00:00:00Z".into(),
        extra: Default::default(),
    };
    log.append_record(&Record::Compaction(rec.clone())).unwrap();
    log.append(&[Message::user("c")]).unwrap();
    let loaded = s.load("k").unwrap();
    assert_eq!(loaded.compactions, vec![(2, rec)]);
    assert_eq!(loaded.messages.len(), 3);
}

#[test]
fn torn_tail_is_reported_then_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("one"), Message::assistant("two")])
        .unwrap();
    drop(log);
    let path = dir.path().join("sessions/k.jsonl");
    let mut bytes = fs::read(&path).unwrap();
    let intact = bytes.len();
    bytes.extend_from_slice(br#"{"role":"user","content":"thr"#);
    fs::write(&path, &bytes).unwrap();

    let loaded = read_session_file(&path).unwrap();
    assert_eq!(loaded.messages.len(), 2);
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(loaded.warnings[0].kind, WarningKind::TornTail);
    // A reader changes nothing.
    assert_eq!(fs::read(&path).unwrap(), bytes);

    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("three")]).unwrap();
    assert_eq!(log.set_aside(), &[(intact as u64, 29)]);
    let torn = fs::read_to_string(log.torn_path()).unwrap();
    assert_eq!(torn, "{\"role\":\"user\",\"content\":\"thr\n");
    let loaded = s.load("k").unwrap();
    assert!(loaded.warnings.is_empty());
    assert_eq!(
        loaded.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["one", "two", "three"]
    );
}

/// A last line that is a whole record without its newline (as an editor
/// saves a file) is loaded, and the next append finishes the line instead
/// of setting it aside.
#[test]
fn a_complete_last_line_without_newline_is_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("one")]).unwrap();
    drop(log);
    let path = dir.path().join("sessions/k.jsonl");
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"role":"assistant","content":"two, saved by an editor"}"#);
    fs::write(&path, &bytes).unwrap();

    let loaded = read_session_file(&path).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages.len(), 2);

    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("three")]).unwrap();
    assert!(log.set_aside().is_empty());
    assert!(!log.torn_path().exists());
    // A fold keeps it too.
    log.fold().unwrap();
    let loaded = s.load("k").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(
        loaded.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["one", "two, saved by an editor", "three"]
    );
}

#[test]
fn malformed_and_invalid_utf8_lines_are_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.open("k")
        .unwrap()
        .append(&[Message::user("one")])
        .unwrap();
    let path = dir.path().join("sessions/k.jsonl");
    let mut bytes = fs::read(&path).unwrap();
    bytes.extend_from_slice(b"this is not json\n");
    bytes.extend_from_slice(b"{\"role\":\"user\",\"content\":\"bad \xff byte\"}\n");
    bytes.extend_from_slice(b"{\"role\":\"wizard\",\"content\":\"x\"}\n");
    fs::write(&path, &bytes).unwrap();
    s.open("k")
        .unwrap()
        .append(&[Message::user("two")])
        .unwrap();
    let loaded = s.load("k").unwrap();
    assert_eq!(
        loaded.messages.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["one", "two"]
    );
    let kinds: Vec<_> = loaded
        .warnings
        .iter()
        .map(|w| (w.line, w.kind.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (3, WarningKind::Malformed),
            (4, WarningKind::InvalidUtf8),
            (5, WarningKind::Malformed)
        ]
    );
    // Nothing was dropped from the file.
    assert!(fs::read(&path).unwrap().starts_with(&bytes));
}

#[test]
fn huge_inputs_are_refused_or_spilled_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    log.append(&[Message::user("before")]).unwrap();
    let size_before = fs::metadata(log.path()).unwrap().len();

    // A 100 MB user message is over the line limit: refused, nothing written.
    let huge = "x".repeat(100 * 1024 * 1024);
    let err = log.append(&[Message::user(huge.clone())]).unwrap_err();
    assert!(err.to_string().contains("line limit"), "{err}");
    assert_eq!(fs::metadata(log.path()).unwrap().len(), size_before);

    // A 100 MB tool result is persisted beside the session, with a preview.
    let stored = log
        .append(&[Message::tool_result("call_big", "shell", huge.clone())])
        .unwrap();
    let text = stored[0].text();
    assert!(
        text.contains("sessions/k.tool-results/call_big.txt"),
        "{}",
        &text[..200]
    );
    assert!(text.len() < 3_000);
    let spilled = dir.path().join("sessions/k.tool-results/call_big.txt");
    assert_eq!(fs::metadata(&spilled).unwrap().len(), huge.len() as u64);
    let loaded = s.load("k").unwrap();
    assert_eq!(loaded.messages[1].text(), text);

    // A file that already holds a 100 MB line (written by someone else) loads.
    let path = log.path().to_path_buf();
    let mut line = serde_json::to_vec(&Message::assistant(huge)).unwrap();
    line.push(b'\n');
    mnemo_store::fsutil::append(&path, &line, false).unwrap();
    let loaded = read_session_file(&path).unwrap();
    assert_eq!(loaded.messages.len(), 3);
    assert_eq!(loaded.messages[2].text().len(), 100 * 1024 * 1024);
}

#[test]
fn tool_result_budget_per_turn_persists_largest_first_and_is_frozen() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    // Five results of 45k chars each: each under 50k, together over 200k.
    let msgs: Vec<Message> = (0..5)
        .map(|i| {
            Message::tool_result(
                format!("c{i}"),
                "read",
                format!("{i}").repeat(45_000 + i * 10),
            )
        })
        .collect();
    let stored = log.append(&msgs).unwrap();
    let persisted: Vec<bool> = stored
        .iter()
        .map(|m| m.extra.contains_key("persisted_output"))
        .collect();
    // The largest (c4) goes first; one is enough to get under 200k.
    assert_eq!(persisted, vec![false, false, false, false, true]);
    // Appending the same result again keeps the frozen decision and its file.
    let again = log.append(&msgs[4..]).unwrap();
    assert_eq!(again[0].text(), stored[4].text());
    // Another result under the same call id is its own message: short, so
    // kept inline, never pointed at c4's file.
    let other = log
        .append(&[Message::tool_result("c4", "read", "4".repeat(10))])
        .unwrap();
    assert_eq!(other[0].text(), "4".repeat(10));
    let loaded = s.load("k").unwrap();
    assert_eq!(loaded.messages[4].text(), stored[4].text());
}

/// Big results whose call ids map to one file name (the same id twice,
/// `call.2` beside `call_2`, two id-less results of equal length) each
/// keep their own full text in a file of their own.
#[test]
fn colliding_tool_result_names_never_share_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let mut log = s.open("k").unwrap();
    let big = |c: char| c.to_string().repeat(60_000);
    let mut anon_a = Message::tool_result("x", "read", big('a'));
    anon_a.tool_call_id = None;
    let mut anon_b = Message::tool_result("x", "read", big('b'));
    anon_b.tool_call_id = None;
    let results = vec![
        Message::tool_result("call_1", "read", big('1')),
        Message::tool_result("call_1", "read", big('2')),
        Message::tool_result("call.2", "read", big('3')),
        Message::tool_result("call_2", "read", big('4')),
        anon_a,
        anon_b,
    ];
    // One at a time (separate turns) and all at once give the same result.
    for m in &results {
        log.append(std::slice::from_ref(m)).unwrap();
    }
    let loaded = s.load("k").unwrap();
    let mut files = std::collections::HashSet::new();
    for (m, original) in loaded.messages.iter().zip(&results) {
        let path = mnemo_store::session::persisted_path(m).expect("persisted");
        assert!(files.insert(path.to_string()), "{path} reused");
        assert_eq!(
            fs::read_to_string(dir.path().join(path)).unwrap(),
            original.text(),
            "{path}"
        );
    }
    assert_eq!(files.len(), results.len());
}

#[test]
fn unsafe_keys_stay_inside_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    for key in [
        "../escape",
        "../../etc/passwd",
        "/abs/path",
        "a/b",
        "..",
        "x\\y",
        "tab\tkey",
    ] {
        let mut log = s.open(key).unwrap();
        log.append(&[Message::user(key)]).unwrap();
        let p = log.path().to_path_buf();
        assert_eq!(p.parent().unwrap(), dir.path().join("sessions"), "{key}");
        assert_eq!(s.load(key).unwrap().messages[0].text(), key);
    }
    assert!(s.open("nul\0key").is_err());
    assert!(s.open("").is_err());
    // Nothing was written outside sessions/.
    let top: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, vec!["sessions"]);
}

#[test]
fn keys_that_collide_on_file_name_get_their_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    s.open("a:b")
        .unwrap()
        .append(&[Message::user("colon")])
        .unwrap();
    s.open("a_b")
        .unwrap()
        .append(&[Message::user("underscore")])
        .unwrap();
    assert_eq!(s.load("a:b").unwrap().messages[0].text(), "colon");
    assert_eq!(s.load("a_b").unwrap().messages[0].text(), "underscore");
    assert_eq!(s.list().unwrap().len(), 2);
}

#[test]
fn threads_appending_concurrently_never_interleave() {
    let dir = tempfile::tempdir().unwrap();
    let s = SessionStore::new(
        &Workspace::new(dir.path()),
        SessionOptions {
            fsync: FsyncPolicy::Never,
            ..SessionOptions::default()
        },
    );
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                let mut log = s.open("shared").unwrap();
                for i in 0..500 {
                    log.append(&[Message::user(format!("{t}:{i}:{}", "y".repeat(i % 300)))])
                        .unwrap();
                }
            });
        }
    });
    let loaded = s.load("shared").unwrap();
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.messages.len(), 2000);
    assert_eq!(loaded.metadata_records, 1);
    for t in 0..4 {
        let seq: Vec<usize> = loaded
            .messages
            .iter()
            .filter_map(|m| {
                let text = m.text();
                let mut parts = text.split(':');
                (parts.next() == Some(&t.to_string()))
                    .then(|| parts.next().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(seq, (0..500).collect::<Vec<_>>());
    }
}
