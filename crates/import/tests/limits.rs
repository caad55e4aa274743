//! Hostile sources stay within bounds (issue 43): compressed rows that
//! expand past the row limit, databases of many rows that each expand to
//! the row limit, a write-ahead log linked in from outside the source,
//! messages larger than the session line limit, tool results over the
//! budget, and a source of another tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "fixtures.rs"]
mod fixtures;

use std::fs;
use std::path::{Path, PathBuf};

use fixtures::*;
use mnemo_core::Workspace;
use mnemo_import::{import, ImportOptions, Kind, Report, Select, Tool, Verb};
use serde_json::{json, Value};

fn run(ws: &Path, tool: Tool, src: &Path, select: Select, dry_run: bool) -> Report {
    let opts = ImportOptions {
        dry_run,
        select,
        ..ImportOptions::default()
    };
    import(&Workspace::new(ws), tool, src, &opts).unwrap()
}

/// An OpenClaw agent's database under the state folder `src`.
fn agent_db(src: &Path, agent: &str) -> PathBuf {
    src.join("agents")
        .join(agent)
        .join("agent")
        .join("openclaw-agent.sqlite")
}

/// Every file of the tree at `root` whose bytes contain `needle`.
fn files_holding(root: &Path, needle: &str) -> Vec<String> {
    tree(root)
        .into_iter()
        .filter(|(_, b)| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
        .map(|(p, _)| p)
        .collect()
}

/// The longest line of any file under `root`, in bytes.
fn longest_line(root: &Path) -> usize {
    tree(root)
        .values()
        .flat_map(|b| b.split(|c| *c == b'\n').map(<[u8]>::len))
        .max()
        .unwrap_or(0)
}

/// The session id and the last entry's id of the agent database `db`.
fn last_entry(conn: &rusqlite::Connection) -> (String, i64, Value) {
    let (id, seq, json): (String, i64, String) = conn
        .query_row(
            "SELECT session_id, seq, event_json FROM transcript_events WHERE event_json IS NOT NULL ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    (id, seq, serde_json::from_str(&json).unwrap())
}

// ----- N1: compressed rows are decoded up to the row limit, never past it -----

#[test]
fn an_openclaw_row_that_expands_past_the_row_limit_is_an_error_and_the_rest_imports() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let db = agent_db(&src, "main");
    let conn = rusqlite::Connection::open(&db).unwrap();
    // A source database need not carry OpenClaw's CHECK of 4 MiB a row.
    conn.pragma_update(None, "ignore_check_constraints", 1)
        .unwrap();
    let (id, seq, last) = last_entry(&conn);
    // Valid JSON just over OpenClaw's 4 MiB: a few KiB compressed, so the
    // test stays small while the row expands past the limit.
    let big = json!({"type": "custom", "customType": "probe", "data": "z".repeat(4 * 1024 * 1024 + 4096)})
        .to_string();
    let frame = ruzstd::encoding::compress_to_vec(
        big.as_bytes(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    assert!(frame.len() < 1024 * 1024, "{} bytes", frame.len());
    let insert = |seq: i64, recorded: Option<i64>| {
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes, navigation_json) VALUES (?1, ?2, NULL, 0, ?3, ?4, '{}')",
            rusqlite::params![id, seq, frame, recorded],
        )
        .unwrap();
    };
    // One row records its length truthfully, one records none.
    insert(seq + 1, Some(i64::try_from(big.len()).unwrap()));
    insert(seq + 2, None);
    let after = json!({
        "type": "message", "id": "after1", "parentId": last["id"],
        "timestamp": "2026-12-01T09:00:00.000Z",
        "message": {"role": "user", "content": "AFTER-THE-BOMB still arrives"}
    });
    conn.execute(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, 0)",
        rusqlite::params![id, seq + 3, after.to_string()],
    )
    .unwrap();
    drop(conn);

    let ws = dir.path().join("ws");
    let report = run(&ws, Tool::OpenClaw, &src, Select::All, false);
    let over: Vec<_> = report
        .actions
        .iter()
        .filter(|a| a.verb == Verb::Error && a.detail.contains("over the limit"))
        .collect();
    assert_eq!(over.len(), 2, "{}", lines(&report));
    assert!(
        over.iter().all(|a| a
            .source
            .starts_with("agents/main/agent/openclaw-agent.sqlite")),
        "{}",
        lines(&report)
    );
    // The rest of the conversation, the row after the bombs included, and
    // the other agent arrived; nothing of the bombs did.
    assert_eq!(files_holding(&ws, "AFTER-THE-BOMB").len(), 1);
    assert!(files_holding(&ws, "zzzzzzzzzzzzzzzz").is_empty());
    assert!(longest_line(&ws) < 1024 * 1024, "{}", longest_line(&ws));
    assert!(keys(&ws).iter().any(|k| k.starts_with("openclaw:work:")));
}

#[test]
fn an_openclaw_database_of_rows_expanding_to_the_row_limit_decodes_and_writes_a_bounded_total() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    // Three conversations of 20 rows of 4 MiB: each under the 256 MiB a
    // conversation could decode to before, 240 MiB from a few kilobytes.
    let rows = 20;
    let ids = ["bomb-1", "bomb-2", "bomb-3"];
    let compressed = add_expanding_conversations(&agent_db(&src, "main"), &ids, rows);
    let allowed = IMPORT_FLOOR + RATIO * compressed;
    assert!(allowed < rows as u64 * ROW, "{allowed}");

    let ws = dir.path().join("ws");
    let report = run(&ws, Tool::OpenClaw, &src, Select::All, false);
    let errors: Vec<_> = report
        .actions
        .iter()
        .filter(|a| a.verb == Verb::Error)
        .collect();
    let window: Vec<_> = errors
        .iter()
        .filter(|a| a.detail.contains("the most one conversation may"))
        .collect();
    let import: Vec<_> = errors
        .iter()
        .filter(|a| a.detail.contains("the most one import may"))
        .collect();
    // The first conversation decodes to the window limit, its rows past it
    // are errors; the import's budget is then spent, and every row of the
    // other two is an error found without decoding it.
    let per_window = usize::try_from(WINDOW / ROW).unwrap();
    assert_eq!(
        window.len(),
        rows as usize - per_window,
        "{}",
        lines(&report)
    );
    assert!(window.iter().all(|a| a.source.contains("#bomb-1:")));
    assert!(
        window[0].detail.contains("more than 64 MiB"),
        "{}",
        window[0].detail
    );
    assert_eq!(import.len(), 2 * rows as usize, "{}", lines(&report));
    assert!(import
        .iter()
        .all(|a| a.source.contains("#bomb-2:") || a.source.contains("#bomb-3:")));
    assert!(
        import[0].detail.contains(&format!(
            "64 MiB, plus 32 times the {compressed} compressed bytes"
        )),
        "{}",
        import[0].detail
    );
    // Nothing else went wrong: the fixture's own conversations imported.
    assert_eq!(
        errors.len(),
        window.len() + import.len(),
        "{}",
        lines(&report)
    );
    assert!(
        report
            .actions
            .iter()
            .filter(|a| a.verb == Verb::Create && a.kind == Kind::Session)
            .count()
            >= 2 + ids.len(),
        "{}",
        lines(&report)
    );
    // What was decoded and written stays within the import's budget: each
    // message line holds its content and its original entry, twice the row.
    let kept = 3 * rows as u64 - (window.len() + import.len()) as u64;
    assert!(kept * ROW <= allowed, "{kept} rows kept");
    let written = bytes_under(&ws.join("sessions"));
    assert!(
        written <= 2 * allowed + 1024 * 1024,
        "{written} bytes under sessions/, budget {allowed}"
    );
    // The rest of the last conversation arrived, the rows' places marked.
    let last = report
        .actions
        .iter()
        .find(|a| a.verb == Verb::Create && a.source.ends_with("#bomb-3"))
        .unwrap();
    let log = fs::read_to_string(ws.join(&last.target)).unwrap();
    assert!(log.contains("AFTER-THE-BOMBS still arrives"));
    assert_eq!(log.matches("import_unparsed").count(), rows as usize);
    assert!(!log.contains("BIG-ROW"));
}

// ----- N5: a write-ahead log linked in from outside is not read -----

#[test]
fn an_openclaw_write_ahead_log_linked_from_outside_is_refused_and_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let db = agent_db(&src, "main");
    // Another database outside the source, with a row only in its log.
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let other = outside.join("other.sqlite");
    fs::copy(&db, &other).unwrap();
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.pragma_update(None, "journal_mode", "wal").unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let (id, seq, last) = last_entry(&conn);
    let secret = json!({
        "type": "message", "id": "secret1", "parentId": last["id"],
        "timestamp": "2026-12-01T09:00:00.000Z",
        "message": {"role": "user", "content": "OUTSIDE-WAL-SECRET"}
    });
    conn.execute(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, 0)",
        rusqlite::params![id, seq + 1, secret.to_string()],
    )
    .unwrap();
    let kept = outside.join("kept-wal");
    fs::copy(outside.join("other.sqlite-wal"), &kept).unwrap();
    drop(conn);
    assert!(files_holding(&outside, "OUTSIDE-WAL-SECRET").contains(&"kept-wal".to_string()));
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::os::unix::fs::symlink(&kept, &wal).unwrap();

    let ws = dir.path().join("ws");
    let report = run(&ws, Tool::OpenClaw, &src, Select::All, false);
    assert!(
        files_holding(&ws, "OUTSIDE-WAL-SECRET").is_empty(),
        "{:?}",
        files_holding(&ws, "OUTSIDE-WAL-SECRET")
    );
    assert!(
        report
            .actions
            .iter()
            .any(|a| a.verb == Verb::Refuse
                && a.source == "agents/main/agent/openclaw-agent.sqlite-wal"),
        "{}",
        lines(&report)
    );
    // The database itself was read, without the log.
    assert!(keys(&ws).contains(&format!("openclaw:main:{id}")));
    assert_eq!(
        report.count_kind(Verb::Error, Kind::Session),
        0,
        "{}",
        lines(&report)
    );
}

// ----- a source of another tool, a nanobot folder without its workspace -----

#[test]
fn an_openclaw_import_of_a_nanobot_folder_fails_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("nanobot-0.3.5", &dir.path().join("home"));
    let ws = dir.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    for src in [home.join(".nanobot"), home.join(".nanobot/workspace")] {
        let err = import(
            &Workspace::new(&ws),
            Tool::OpenClaw,
            &src,
            &ImportOptions {
                select: Select::All,
                ..ImportOptions::default()
            },
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("nanobot's folder") && text.contains("mnemo import nanobot"),
            "{text}"
        );
        assert!(tree(&ws).is_empty(), "{:?}", tree(&ws).keys());
    }
    // The right tool still imports it.
    let report = run(
        &ws,
        Tool::Nanobot,
        &home.join(".nanobot"),
        Select::All,
        false,
    );
    assert!(!report.has_problems(), "{}", lines(&report));
}

#[test]
fn an_export_to_nanobot_creates_its_workspace_folder_when_nanobot_has_not() {
    use mnemo_import::{export_nanobot, ExportOptions};
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mut log = store(&ws).open("cli:direct").unwrap();
    log.append(&[mnemo_core::Message::user("hello nanobot")])
        .unwrap();
    drop(log);
    let data = dir.path().join("nb");
    fs::create_dir_all(&data).unwrap();
    let dry = export_nanobot(
        &Workspace::new(&ws),
        &data,
        &ExportOptions {
            dry_run: true,
            ..ExportOptions::default()
        },
    )
    .unwrap();
    assert!(!dry.has_problems(), "{}", lines(&dry));
    assert!(tree(&data).is_empty() && !data.join("workspace").exists());
    let report = export_nanobot(&Workspace::new(&ws), &data, &ExportOptions::default()).unwrap();
    assert!(!report.has_problems(), "{}", lines(&report));
    // The same actions (the new workspace id aside, which is made anew).
    assert_eq!(dry.count(Verb::Create), report.count(Verb::Create));
    assert!(data.join("workspace").is_dir());
    assert!(data.join("workspace/.nanobot/workspace-id").is_file());
    assert_eq!(
        files_holding(&data.join("sessions"), "hello nanobot").len(),
        1
    );
}

// ----- N3: imported messages go through the limits of an append -----

/// A Claude Code project with one transcript: a question, a tool call
/// whose result is `result_chars` long, and a user message of `big_chars`.
fn claude_project(root: &Path, result_chars: usize, big_chars: usize) -> PathBuf {
    let project = root.join("projects/-home-u-app");
    let lines = [
        json!({"parentUuid": null, "type": "user", "message": {"role": "user", "content": "Read the log"}, "uuid": "u1", "timestamp": "2026-06-01T10:00:00.000Z", "sessionId": "s1"}),
        json!({"parentUuid": "u1", "type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat big.log"}}]}, "uuid": "a1", "timestamp": "2026-06-01T10:00:01.000Z"}),
        json!({"parentUuid": "a1", "type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": format!("RESULT-HEAD {}", "r".repeat(result_chars))}]}, "uuid": "t1", "timestamp": "2026-06-01T10:00:02.000Z"}),
        json!({"parentUuid": "t1", "type": "user", "message": {"role": "user", "content": format!("HUGE-PASTE {}", "h".repeat(big_chars))}, "uuid": "u2", "timestamp": "2026-06-01T10:00:03.000Z"}),
        json!({"parentUuid": "u2", "type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "AFTER-THE-PASTE noted"}]}, "uuid": "a2", "timestamp": "2026-06-01T10:00:04.000Z"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    write(&project, "s1.jsonl", &text);
    project
}

fn run_with(ws: &Path, src: &Path, session: mnemo_store::SessionOptions, dry_run: bool) -> Report {
    let opts = ImportOptions {
        dry_run,
        session,
        ..ImportOptions::default()
    };
    import(&Workspace::new(ws), Tool::ClaudeCode, src, &opts).unwrap()
}

#[test]
fn an_imported_message_over_the_line_limit_is_an_error_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let project = claude_project(dir.path(), 10, 300 * 1024);
    let ws = dir.path().join("ws");
    // The appender's own limit, made small so the input stays small.
    let session = mnemo_store::SessionOptions {
        max_line_bytes: 256 * 1024,
        ..mnemo_store::SessionOptions::default()
    };
    let dry = run_with(&ws, &project, session.clone(), true);
    let report = run_with(&ws, &project, session.clone(), false);
    assert_eq!(lines(&dry), lines(&report));
    let over: Vec<_> = report
        .actions
        .iter()
        .filter(|a| a.verb == Verb::Error && a.detail.contains("line limit"))
        .collect();
    assert_eq!(over.len(), 1, "{}", lines(&report));
    assert!(over[0].detail.contains("left out"), "{}", over[0].detail);
    assert!(longest_line(&ws) <= 256 * 1024, "{}", longest_line(&ws));
    assert!(files_holding(&ws, "HUGE-PASTE").is_empty());
    assert_eq!(files_holding(&ws, "AFTER-THE-PASTE").len(), 1);
    // Left out the same way each time: a second run changes nothing.
    let before = tree(&ws);
    let again = run_with(&ws, &project, session, false);
    assert!(!again.changed(), "{}", lines(&again));
    assert_eq!(tree(&ws), before);
}

#[test]
fn an_imported_tool_result_over_the_budget_is_persisted_beside_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let project = claude_project(dir.path(), 60_000, 10);
    let ws = dir.path().join("ws");
    let session = mnemo_store::SessionOptions::default();
    let dry_ws = dir.path().join("dry");
    let dry = run_with(&dry_ws, &project, session.clone(), true);
    assert!(!dry_ws.exists());
    let report = run_with(&ws, &project, session.clone(), false);
    assert!(!report.has_problems(), "{}", lines(&report));
    assert_eq!(lines(&dry), lines(&report));
    let key = "claude-code:-home-u-app:s1";
    let loaded = store(&ws).load(key).unwrap();
    let result = loaded
        .messages
        .iter()
        .find(|m| m.role == mnemo_core::Role::Tool)
        .unwrap();
    let path = mnemo_store::session::persisted_path(result).expect("the result was not persisted");
    assert!(path.ends_with(".tool-results/toolu_1.txt"), "{path}");
    let full = fs::read_to_string(ws.join(path)).unwrap();
    assert!(full.starts_with("RESULT-HEAD ") && full.len() > 60_000);
    assert!(result.text().len() < 10_000, "{}", result.text().len());
    // The original entry kept beside it points at the file too, so the
    // line does not carry the result after all.
    let log = fs::read_to_string(store(&ws).path_for(key).unwrap()).unwrap();
    let longest = log.lines().map(str::len).max().unwrap();
    assert!(longest < 20_000, "{longest}");
    assert!(result.extra["claude_code"].to_string().contains(path));
    // A second run finds it all there.
    let before = tree(&ws);
    let again = run_with(&ws, &project, session, false);
    assert!(!again.changed(), "{}", lines(&again));
    assert_eq!(tree(&ws), before);
}

#[test]
fn an_imported_turn_of_many_large_results_keeps_the_per_turn_budget() {
    // Issue 43 N3: the budget ran one message at a time, so a turn of five
    // results of 45,000 characters (each under the single-result limit)
    // kept 225,000 inline, over the 200,000 an append allows a turn.
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("projects/-home-u-app");
    let calls: Vec<Value> = (1..=5)
        .map(|k| json!({"type": "tool_use", "id": format!("toolu_{k}"), "name": "Bash", "input": {"command": format!("cat part{k}.log")}}))
        .collect();
    let mut entries = vec![
        json!({"parentUuid": null, "type": "user", "message": {"role": "user", "content": "Read the five logs"}, "uuid": "u1", "timestamp": "2026-06-01T10:00:00.000Z", "sessionId": "s1"}),
        json!({"parentUuid": "u1", "type": "assistant", "message": {"id": "m1", "role": "assistant", "content": calls}, "uuid": "a1", "timestamp": "2026-06-01T10:00:01.000Z"}),
    ];
    for k in 1..=5 {
        entries.push(json!({"parentUuid": format!("a{k}"), "type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{k}"), "content": format!("PART-{k} {}", "r".repeat(45_000))}]}, "uuid": format!("t{k}"), "timestamp": "2026-06-01T10:00:02.000Z"}));
    }
    entries.push(json!({"parentUuid": "t5", "type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "All five read"}]}, "uuid": "a2", "timestamp": "2026-06-01T10:00:03.000Z"}));
    let text: String = entries.iter().map(|l| format!("{l}\n")).collect();
    write(&project, "s1.jsonl", &text);
    let ws = dir.path().join("ws");
    let session = mnemo_store::SessionOptions::default();
    let budget = session.turn_tool_results_max_chars;
    let report = run_with(&ws, &project, session.clone(), false);
    assert!(!report.has_problems(), "{}", lines(&report));
    let loaded = store(&ws).load("claude-code:-home-u-app:s1").unwrap();
    let results: Vec<_> = loaded
        .messages
        .iter()
        .filter(|m| m.role == mnemo_core::Role::Tool)
        .collect();
    assert_eq!(results.len(), 5);
    let persisted: Vec<_> = results
        .iter()
        .filter_map(|m| mnemo_store::session::persisted_path(m))
        .collect();
    assert!(!persisted.is_empty(), "none was persisted");
    for path in &persisted {
        let full = fs::read_to_string(ws.join(path)).unwrap();
        assert!(full.starts_with("PART-") && full.len() > 45_000, "{path}");
    }
    let inline: usize = results.iter().map(|m| m.text().chars().count()).sum();
    assert!(inline <= budget, "{inline} characters inline");
    // The log's lines do not carry a persisted result either.
    let log =
        fs::read_to_string(store(&ws).path_for("claude-code:-home-u-app:s1").unwrap()).unwrap();
    for path in &persisted {
        let line = log.lines().find(|l| l.contains(&**path)).unwrap();
        assert!(line.len() < 20_000, "{}", line.len());
    }
    // A second run finds it all there.
    let before = tree(&ws);
    let again = run_with(&ws, &project, session, false);
    assert!(!again.changed(), "{}", lines(&again));
    assert_eq!(tree(&ws), before);
}
