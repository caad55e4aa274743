//! A file workspace moved into PostgreSQL and back out into a new folder
//! is the same, byte for byte: memory files, the history, daily logs,
//! typed memories, session logs (with a malformed line, the cursor and a
//! compaction record) and persisted tool results.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use mnemo_core::{Message, Workspace};
use mnemo_store::session::{CompactionRecord, Record};
use mnemo_store::storage::copy_workspace;
use mnemo_store::{Error, FileStorage, SessionOptions, SessionStore, Storage};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{fresh_schema, test_url};

/// Every file of the workspace but its derived state, by relative path.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            if rel.starts_with(".mnemo") {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn a_workspace_goes_into_the_database_and_back_unchanged() {
    let Some(url) = test_url() else { return };
    let db = Database::connect(&url, &fresh_schema()).unwrap();
    let src = tempfile::tempdir().unwrap();
    let root = src.path();
    write(root, "MEMORY.md", "# Memory\n\n- Prefers tea. ☕\n");
    write(
        root,
        "memory/HISTORY.md",
        "[2026-03-14 09:30] first round\n\n",
    );
    write(root, "memory/2026-03-14.md", "# 2026-03-14\n\n- met Ana\n");
    write(
        root,
        "memory/coffee-order.md",
        "---\nname: Coffee order\ndescription: how the user takes it\ntype: user\n---\nFlat white.\n",
    );
    write(root, "memory/people/ana.md", "Ana works at the museum.\n");
    write(
        root,
        "memory/audit.jsonl",
        "{\"op\":\"add\",\"memory\":\"f1\"}\n",
    );
    let ws = Workspace::new(root);
    let sessions = SessionStore::new(&ws, SessionOptions::default());
    let mut log = sessions.open("telegram:123").unwrap();
    log.append(&[Message::user("hello"), Message::assistant("hi ☕")])
        .unwrap();
    log.append(&[Message::tool_result("call_1", "shell", "z".repeat(80_000))])
        .unwrap();
    log.set_cursor(2).unwrap();
    log.append_record(&Record::Compaction(CompactionRecord {
        kind: "autocompact".into(),
        tokens_before: 10,
        tokens_after: 5,
        summary: Some("greetings".into()),
        first_kept: Some(2),
        timestamp: "2026-03-14T09:31:00Z".into(),
        extra: Default::default(),
    }))
    .unwrap();
    drop(log);
    let log_path = sessions.path_for("telegram:123").unwrap();
    let mut bytes = std::fs::read(&log_path).unwrap();
    bytes.extend_from_slice(b"{not json\n");
    std::fs::write(&log_path, bytes).unwrap();
    sessions
        .open("cli:other")
        .unwrap()
        .append(&[Message::user("x")])
        .unwrap();
    let before = files(root);
    assert!(
        before.keys().any(|k| k.ends_with("/call_1.txt")),
        "{:?}",
        before.keys()
    );

    let id = format!("rt-{}", fresh_schema());
    let rows = db.workspace(&id).unwrap();
    let into = copy_workspace(&FileStorage::new(&ws), &rows, &mut |_| {}).unwrap();
    assert_eq!((into.documents, into.sessions), (7, 2));
    // Copying again into a workspace that holds rows is refused.
    assert!(matches!(
        copy_workspace(&FileStorage::new(&ws), &rows, &mut |_| {}),
        Err(Error::Exists(_))
    ));

    let back = tempfile::tempdir().unwrap();
    let out = copy_workspace(
        &rows,
        &FileStorage::new(&Workspace::new(back.path())),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out, into);
    let after = files(back.path());
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (rel, bytes) in &before {
        assert!(after[rel] == *bytes, "{rel} differs after the round trip");
    }
    assert!(rows.session_files().unwrap().len() == 2);
    db.delete_workspace(&id).unwrap();
}
