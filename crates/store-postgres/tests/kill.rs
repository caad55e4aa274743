//! A writer killed with SIGKILL in the middle of its appends and memory
//! writes: every append it was told was committed is in the log, once;
//! nothing it held stays locked (the memory lock, a session's lock).
//!
//! The writer is this test binary again, run with `MNEMO_KILL_CHILD` set:
//! it appends and rewrites MEMORY.md in a loop, printing each message's id
//! once its append returned.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_core::Message;
use mnemo_store::{MemorySettings, MemoryStore, SessionOptions, SessionStore};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{fresh_schema, test_url};

const CHILD: &str = "MNEMO_KILL_CHILD";

/// The writer's loop (only when run as the child).
fn child(url: &str, schema: &str, id: &str) {
    let db = Database::connect(url, schema).unwrap();
    let storage: mnemo_store::SharedStorage = Arc::new(db.workspace(id).unwrap());
    let sessions = SessionStore::with_storage(storage.clone(), SessionOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let memory = MemoryStore::with_storage(
        &mnemo_core::Workspace::new(dir.path()),
        MemorySettings::default(),
        storage.clone(),
    );
    let _session_lock = storage
        .try_lock("cli_kill")
        .unwrap()
        .expect("the session lock is free");
    let mut log = sessions.open("cli:kill").unwrap();
    for n in 0.. {
        log.append(&[Message::user(format!("m{n} payload"))])
            .unwrap();
        println!("acked m{n}");
        memory
            .update_memory_md(|t| Ok(Some(format!("{t}- line {n}\n"))))
            .unwrap();
    }
}

#[test]
fn a_killed_writer_loses_no_acknowledged_append_and_holds_no_lock() {
    if let Ok(spec) = std::env::var(CHILD) {
        let mut parts = spec.splitn(3, ' ');
        let (url, schema, id) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        return child(url, schema, id);
    }
    let Some(url) = test_url() else { return };
    let schema = fresh_schema();
    let id = "killed";
    let db = Database::connect(&url, &schema).unwrap();
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_killed_writer_loses_no_acknowledged_append_and_holds_no_lock",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{url} {schema} {id}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    let lines = BufReader::new(proc.stdout.take().unwrap());
    let started = Instant::now();
    for line in lines.lines() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("acked ") {
            acked.push(id.to_string());
        }
        if acked.len() >= 150 || started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    proc.kill().unwrap();
    proc.wait().unwrap();
    assert!(
        acked.len() >= 150,
        "the writer acknowledged {} appends in 60 s",
        acked.len()
    );

    let storage: mnemo_store::SharedStorage = Arc::new(db.workspace(id).unwrap());
    let loaded = SessionStore::with_storage(storage.clone(), SessionOptions::default())
        .load("cli:kill")
        .unwrap();
    let ids: Vec<String> = loaded
        .messages
        .iter()
        .map(|m| m.text().split(' ').next().unwrap_or_default().to_string())
        .collect();
    for a in &acked {
        assert_eq!(
            ids.iter().filter(|i| *i == a).count(),
            1,
            "{a} lost or duplicated"
        );
    }
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // The locks died with their holder: free at once (the memory lock is
    // the lock named "memory").
    assert!(
        storage.try_lock("cli_kill").unwrap().is_some(),
        "the session lock outlived its holder"
    );
    assert!(
        storage.try_lock("memory").unwrap().is_some(),
        "the memory lock outlived its holder"
    );
    db.delete_workspace(id).unwrap();
}
