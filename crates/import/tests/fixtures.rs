//! Builders for small source trees in each tool's documented format (and
//! OpenClaw conversations of rows that expand far past their size), and
//! helpers to snapshot a folder byte for byte.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{json, Value};

/// Writes `text` at `root/rel`, creating folders.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// Every file under `root` (links recorded as `-> target`), path → bytes.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            out.insert(
                rel,
                format!("-> {}", fs::read_link(&p).unwrap().display()).into_bytes(),
            );
        } else if ft.is_dir() {
            out.insert(format!("{rel}/"), Vec::new());
            walk(root, &p, out);
        } else {
            out.insert(rel, fs::read(&p).unwrap());
        }
    }
}

/// The lines of the nanobot session `telegram:123`.
pub const NANOBOT_TELEGRAM: &[&str] = &[
    r#"{"_type":"metadata","key":"telegram:123","created_at":"2026-03-01T10:00:00","updated_at":"2026-03-02T09:00:00","metadata":{"chat_title":"家"},"last_consolidated":2}"#,
    r#"{"role":"user","content":"I live in Lyon and like green tea","timestamp":"2026-03-01T10:00:00"}"#,
    r#"{"role":"assistant","content":"Noted.","timestamp":"2026-03-01T10:00:05"}"#,
    r#"{"role":"user","content":"list my files","timestamp":"2026-03-02T08:59:00"}"#,
    r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"exec","arguments":"{\"cmd\":\"ls\"}"}}],"timestamp":"2026-03-02T08:59:01","tools_used":["exec"],"reasoning_content":"run ls"}"#,
    r#"{"role":"tool","tool_call_id":"c1","name":"exec","content":"a.txt b.txt","timestamp":"2026-03-02T08:59:02"}"#,
    r#"{"role":"user","content":[{"type":"text","text":"看这个"},{"type":"image_url","image_url":{"url":"[image: media/x.png]"}}],"timestamp":"2026-03-02T09:00:00"}"#,
];

/// A classic nanobot workspace: two sessions, MEMORY.md and HISTORY.md.
pub fn nanobot_classic(root: &Path) {
    write(
        root,
        "sessions/telegram_123.jsonl",
        &(NANOBOT_TELEGRAM.join("\n") + "\n"),
    );
    write(
        root,
        "sessions/cli_direct.jsonl",
        concat!(
            r#"{"_type":"metadata","key":"cli:direct","created_at":"2026-03-03T12:00:00","updated_at":"2026-03-03T12:00:00","metadata":{},"last_consolidated":0}"#,
            "\n",
            r#"{"role":"user","content":"hello","timestamp":"2026-03-03T12:00:00"}"#,
            "\n",
        ),
    );
    write(
        root,
        "memory/MEMORY.md",
        "# Long-term Memory\n\n## User\n\n- Lives in Lyon\n- Works at ACME\n\n## Preferences\n\n- Likes green tea\n",
    );
    write(
        root,
        "memory/HISTORY.md",
        "[2026-03-01 10:00] User said they live in Lyon and like green tea.\n\n[2026-03-02 09:00] Listed files with exec;\nthe user sent a picture.\n\n",
    );
}

/// nanobot HEAD: the history is `memory/history.jsonl`.
pub fn nanobot_head(root: &Path) {
    write(
        root,
        "sessions/cli_direct.jsonl",
        concat!(
            r#"{"_type":"metadata","key":"cli:direct","created_at":"2026-04-01T12:00:00","updated_at":"2026-04-01T12:00:00","metadata":{},"last_consolidated":1}"#,
            "\n",
            r#"{"role":"user","content":"remember: my cat is Mochi","timestamp":"2026-04-01T12:00:00"}"#,
            "\n",
            r#"{"role":"assistant","content":"Mochi, noted.","timestamp":"2026-04-01T12:00:01"}"#,
            "\n",
        ),
    );
    write(
        root,
        "memory/history.jsonl",
        concat!(
            r#"{"cursor":1,"timestamp":"2026-04-01 12:00","content":"- [permanent] The user's cat is Mochi","session_key":"cli:direct"}"#,
            "\n",
            r#"{"cursor":2,"timestamp":"2026-04-02 08:30","content":"(nothing)"}"#,
            "\n",
        ),
    );
    write(root, "memory/.cursor", "2");
    write(root, "memory/.dream_cursor", "1");
}

/// Lines of an OpenClaw transcript (pi session format v3): a branch was
/// abandoned (`b1`), a compaction happened, and a custom entry was stored.
pub const OPENCLAW_SESSION: &[&str] = &[
    r#"{"type":"session","version":3,"id":"0f5e2a9c-1111-4c11-97ae-eab26883c67a","timestamp":"2026-05-01T09:00:00.000Z","cwd":"/home/u/.openclaw/workspace"}"#,
    r#"{"type":"model_change","id":"m0","parentId":null,"timestamp":"2026-05-01T09:00:00.010Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}"#,
    r#"{"type":"message","id":"u1","parentId":"m0","timestamp":"2026-05-01T09:00:01.000Z","message":{"role":"user","content":"What is in my notes folder?","timestamp":1777626001000}}"#,
    r#"{"type":"message","id":"b1","parentId":"u1","timestamp":"2026-05-01T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"An abandoned answer"}],"provider":"anthropic","model":"claude-sonnet-4-5","stopReason":"stop","timestamp":1777626002000}}"#,
    r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-01T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"I should list it"},{"type":"text","text":"Let me look."},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"ls notes"}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5},"stopReason":"toolUse","timestamp":1777626003000}}"#,
    r#"{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-05-01T09:00:04.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"ideas.md\ntodo.md"}],"isError":false,"timestamp":1777626004000}}"#,
    r###"{"type":"compaction","id":"c1","parentId":"t1","timestamp":"2026-05-01T09:10:00.000Z","summary":"## Goal\nList the notes folder.","firstKeptEntryId":"a1","tokensBefore":50000}"###,
    r#"{"type":"custom","id":"x1","parentId":"c1","timestamp":"2026-05-01T09:10:01.000Z","customType":"my-extension","data":{"count":42}}"#,
    r#"{"type":"message","id":"a2","parentId":"x1","timestamp":"2026-05-01T09:10:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"You have ideas.md and todo.md."}],"stopReason":"stop","timestamp":1777626602000}}"#,
    r#"{"type":"message","id":"u2","parentId":"a2","timestamp":"2026-05-01T09:11:00.000Z","message":{"role":"user","content":[{"type":"text","text":"Thanks"},{"type":"image","data":"aGk=","mimeType":"image/png"}],"timestamp":1777626660000}}"#,
];

/// An OpenClaw state folder: `workspace/` with MEMORY.md and memory/, and
/// `agents/main/sessions/` with one transcript and the session store.
pub fn openclaw(root: &Path) {
    write(
        root,
        "workspace/MEMORY.md",
        "# Memory\n\n- Prefers short answers\n- Project deadline: 2026-06-30\n",
    );
    write(
        root,
        "workspace/memory/2026-05-01.md",
        "# 2026-05-01\n\n- Looked at the notes folder\n- Decided to clean todo.md\n",
    );
    write(
        root,
        "workspace/memory/2026-05-01-notes.md",
        "# Session: 2026-05-01 09:11:00 UTC\n\n- **Session Key**: agent:main:main\n\n## Conversation Summary\n\nuser: What is in my notes folder?\n",
    );
    write(
        root,
        "workspace/memory/projects/garden.md",
        "# Garden\n\nPlant tomatoes in May.\n",
    );
    write(
        root,
        "agents/main/sessions/0f5e2a9c.jsonl",
        &(OPENCLAW_SESSION.join("\n") + "\n"),
    );
    write(
        root,
        "agents/main/sessions/sessions.json",
        r#"{"agent:main:main":{"sessionId":"0f5e2a9c"}}"#,
    );
}

/// A Claude Code auto-memory folder.
pub fn claude_code(root: &Path) {
    write(
        root,
        "MEMORY.md",
        "- [User role](user_role.md) — data scientist, new to Rust\n- [Testing](feedback_testing.md) — real databases in tests\n- [Broken](broken.md) — front matter does not parse\n",
    );
    write(
        root,
        "user_role.md",
        "---\nname: User role\ndescription: data scientist, new to Rust\ntype: user\n---\n\nThe user is a data scientist learning Rust.\n",
    );
    write(
        root,
        "feedback_testing.md",
        "---\nname: Testing\ndescription: real databases in tests\ntype: feedback\noriginSessionId: 1234\n---\n\nUse a real database in integration tests.\n**Why:** mocks hid a broken migration.\n**How to apply:** never mock the DB layer.\n",
    );
    write(
        root,
        "broken.md",
        "---\nname: Broken\ntype: [not closed\n---\n\nStill worth keeping.\n",
    );
}

/// The folder of the fixtures the peers' own releases wrote.
pub fn peers_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// Copies the fixture `name` (e.g. `nanobot-0.3.5`) into `dst`, so a test
/// can never change the checked-in files; returns `dst`.
pub fn copy_fixture(name: &str, dst: &Path) -> std::path::PathBuf {
    copy_tree(&peers_dir().join(name), dst);
    dst.to_path_buf()
}

fn copy_tree(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap();
    for e in fs::read_dir(src).unwrap().flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to);
        } else {
            fs::copy(e.path(), &to).unwrap();
        }
    }
}

/// The report's lines, as printed.
pub fn lines(r: &mnemo_import::Report) -> String {
    r.actions
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The session store of the workspace at `ws`.
pub fn store(ws: &Path) -> mnemo_store::SessionStore {
    mnemo_store::SessionStore::new(
        &mnemo_core::Workspace::new(ws),
        mnemo_store::SessionOptions::default(),
    )
}

/// The session keys of the workspace at `ws`.
pub fn keys(ws: &Path) -> Vec<String> {
    store(ws)
        .list()
        .unwrap()
        .into_iter()
        .map(|s| s.key)
        .collect()
}

/// OpenClaw's own limit on one row, and what the rows of one conversation
/// and (over their compressed size) of one import may decode to.
pub const ROW: u64 = 4 * 1024 * 1024;
pub const WINDOW: u64 = 64 * 1024 * 1024;
pub const IMPORT_FLOOR: u64 = 64 * 1024 * 1024;
pub const RATIO: u64 = 32;

/// Adds to the agent database `db` a conversation per id of `ids`: a
/// session header, then `rows` compressed messages that each decode to a
/// true 4 MiB event (OpenClaw's row limit, with its recorded length) from
/// a frame of a few hundred bytes, then, in the last one, a plain message
/// `AFTER-THE-BOMBS`. Returns the compressed bytes the database then holds.
pub fn add_expanding_conversations(db: &Path, ids: &[&str], rows: i64) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    // A source database need not carry OpenClaw's constraints; a
    // conversation without a window row is imported all the same.
    conn.pragma_update(None, "ignore_check_constraints", 1)
        .unwrap();
    conn.pragma_update(None, "foreign_keys", 0).unwrap();
    let event = |pad: usize| {
        json!({
            "type": "message", "id": "big", "parentId": null,
            "timestamp": "2026-12-01T09:00:01.000Z",
            "message": {"role": "user", "content": format!("BIG-ROW {}", "a".repeat(pad))}
        })
        .to_string()
    };
    let big = event(usize::try_from(ROW).unwrap() - event(0).len());
    assert_eq!(big.len() as u64, ROW);
    let frame = ruzstd::encoding::compress_to_vec(
        big.as_bytes(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    assert!(frame.len() < 4096, "{} bytes", frame.len());
    let plain = |id: &str, seq: i64, event: Value| {
        conn.execute(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?1, ?2, ?3, 0)",
            rusqlite::params![id, seq, event.to_string()],
        )
        .unwrap();
    };
    for id in ids {
        plain(
            id,
            0,
            json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-12-01T09:00:00.000Z", "cwd": "/tmp"}),
        );
        for seq in 1..=rows {
            conn.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes, navigation_json) VALUES (?1, ?2, NULL, 0, ?3, ?4, '{}')",
                rusqlite::params![id, seq, frame, big.len() as i64],
            )
            .unwrap();
        }
    }
    let last = ids.last().unwrap();
    plain(
        last,
        rows + 1,
        json!({
            "type": "message", "id": "after1", "parentId": "big",
            "timestamp": "2026-12-01T09:00:02.000Z",
            "message": {"role": "user", "content": "AFTER-THE-BOMBS still arrives"}
        }),
    );
    let compressed: i64 = conn
        .query_row(
            "SELECT sum(length(event_zstd)) FROM transcript_events",
            [],
            |r| r.get(0),
        )
        .unwrap();
    u64::try_from(compressed).unwrap()
}

/// The bytes of every file under `root`.
pub fn bytes_under(root: &Path) -> u64 {
    let mut total = 0;
    for e in fs::read_dir(root).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            total += bytes_under(&e.path());
        } else {
            total += e.metadata().unwrap().len();
        }
    }
    total
}
