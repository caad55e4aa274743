//! Two servers on one PostgreSQL database (issue 41): each has an engine
//! of its own and a workspace folder of its own (two machines), and both
//! serve the same workspace. What the engine keeps between turns (the
//! compaction breaker's count, the merge guard's lines) is in the database
//! with the rest of the workspace, so the two keep one compaction and
//! flush history, and one MEMORY.md provenance, instead of one each.
//!
//! Needs `MNEMO_TEST_POSTGRES_URL` (skipped without it, a failure in CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, OnceLock};

use common::*;
use mnemo_core::{Config, Workspace};
use mnemo_engine::{Engine, EngineEvent};
use mnemo_store::{MemoryStore, SessionOptions, SessionStore, SharedStorage};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{fresh_schema, test_url};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::json;

/// One server: its own connection to the database, its own folder.
struct Server {
    _db: Arc<Database>,
    storage: SharedStorage,
    dir: tempfile::TempDir,
}

/// The workspace's rows, dropped when the test ends.
struct Rows(Arc<Database>, String);

impl Drop for Rows {
    fn drop(&mut self) {
        let _ = self.0.delete_workspace(&self.1);
    }
}

/// Two servers of a workspace of its own, in this process's schema, each
/// connected on its own (two processes' pools and locks), or `None`
/// without a server.
fn two_servers() -> Option<(Server, Server, Rows)> {
    static SCHEMA: OnceLock<String> = OnceLock::new();
    let url = test_url()?;
    let schema = SCHEMA.get_or_init(fresh_schema);
    let id = format!("ws-{}", fresh_schema());
    let server = || {
        let db = Database::connect(&url, schema).unwrap();
        let storage: SharedStorage = Arc::new(db.workspace(&id).unwrap());
        Server {
            _db: db,
            storage,
            dir: tempfile::tempdir().unwrap(),
        }
    };
    let (a, b) = (server(), server());
    let rows = Rows(Database::connect(&url, schema).unwrap(), id);
    Some((a, b, rows))
}

impl Server {
    fn workspace(&self) -> Workspace {
        Workspace::new(self.dir.path())
    }

    /// The engine of this server with `[engine]` settings `engine_toml`,
    /// over the database's stores (as `mnemo serve` opens them).
    fn engine(&self, model: &ScriptedServer, engine_toml: &str) -> Engine {
        let config = Config::parse(&format!(
            "[engine]\n{engine_toml}\n[memory]\ntimezone = \"UTC\"\n"
        ))
        .unwrap();
        let ws = self.workspace();
        let sessions = SessionStore::with_storage(self.storage.clone(), SessionOptions::default());
        let memory =
            MemoryStore::with_storage(&ws, config.section("memory").unwrap(), self.storage.clone());
        Engine::new(&ws, &config, common::model(model, 12_000, 1_000))
            .unwrap()
            .with_stores(sessions, memory)
            .with_clock(Arc::new(t0))
            .with_tools(memory_tools())
    }

    fn append(&self, messages: &[mnemo_core::Message]) {
        SessionStore::with_storage(self.storage.clone(), SessionOptions::default())
            .open(KEY)
            .unwrap()
            .append(messages)
            .unwrap();
    }

    /// Nothing of the engine's state went into this server's own folder.
    fn assert_no_local_state(&self) {
        let local = self.dir.path().join(".mnemo/engine");
        let files: Vec<_> = std::fs::read_dir(&local)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            files.is_empty(),
            "state left in a server's folder: {files:?}"
        );
    }

    /// The shared state is in the database, out of what lists memory and
    /// what an export copies.
    fn assert_state_kept_apart(&self) {
        let rels = |entries: Vec<mnemo_store::storage::Entry>| -> Vec<String> {
            entries.into_iter().map(|e| e.rel).collect()
        };
        let listed = rels(self.storage.list("memory").unwrap());
        assert!(listed.iter().all(|d| !d.contains(".mnemo")), "{listed:?}");
        let docs = rels(self.storage.documents().unwrap());
        assert!(docs.iter().all(|d| !d.starts_with(".mnemo/")), "{docs:?}");
    }
}

/// OpenClaw's flush (to the daily log) and a summary, on a 12,000-token
/// window (as in `compaction.rs`).
const PROACTIVE: &str = "consolidation_enabled = false
flush_mode = \"daily_log\"
autocompact_buffer = 4000
flush_reserve_floor = 2500
flush_soft_threshold = 1500
tail_tokens = 2000";

/// The failure counts a turn reported, `None` for an open breaker.
fn failures(events: &[EngineEvent]) -> Vec<Option<u32>> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::CompactionFailed { failures, .. } => Some(Some(*failures)),
            EngineEvent::BreakerOpen { .. } => Some(None),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn two_servers_that_compact_one_session_keep_one_compaction_and_flush_history() {
    let Some((a, b, _rows)) = two_servers() else {
        return;
    };
    let model = ScriptedServer::start().await;
    a.append(&chat_turns(45, 400));

    // The summariser is down: the failures of both servers count towards
    // one breaker, whichever server the turn reached.
    model.set_default(Reply::error(
        400,
        json!({"error": {"message": "summariser broken"}}),
    ));
    let no_flush = format!("{PROACTIVE}\nflush_enabled = false");
    let (ea, eb) = (a.engine(&model, &no_flush), b.engine(&model, &no_flush));
    let mut seen = Vec::new();
    for engine in [&ea, &eb, &ea, &eb] {
        seen.extend(failures(
            &engine.prepare_turn(KEY, "x").await.unwrap().events,
        ));
    }
    assert_eq!(
        seen,
        [Some(1), Some(2), Some(3), None],
        "server B counts server A's failures, and its breaker opens at the third"
    );
    assert_eq!(
        model.request_count(),
        3,
        "no request while the breaker is open"
    );
    // An explicit compaction on B resets the breaker for A too.
    let events = eb.compact(KEY, Some(5)).await.unwrap();
    assert_eq!(failures(&events), [Some(1)], "{events:#?}");
    let events = ea.prepare_turn(KEY, "x").await.unwrap().events;
    assert_eq!(failures(&events), [Some(2)], "{events:#?}");

    // The summariser is back: A flushes and compacts once (the summary
    // may take more than one call), and B, in the same cycle, does
    // neither again.
    model.set_default(Reply::text("<summary>\n## Goal\nship v2\n</summary>"));
    model.push(Reply::text("- deploy host is db-7.internal"));
    let (ea, eb) = (a.engine(&model, PROACTIVE), b.engine(&model, PROACTIVE));
    let events = ea.prepare_turn(KEY, "what next?").await.unwrap().events;
    assert!(
        matches!(
            &events[..],
            [EngineEvent::Flushed(_), EngineEvent::Compacted(_)]
        ),
        "{events:#?}"
    );
    let sent = model.request_count();
    let events = eb.prepare_turn(KEY, "what next?").await.unwrap().events;
    assert!(events.is_empty(), "{events:#?}");
    assert_eq!(model.request_count(), sent, "B sent nothing");

    let log = SessionStore::with_storage(b.storage.clone(), SessionOptions::default())
        .load(KEY)
        .unwrap();
    let kinds: Vec<&str> = log
        .compactions
        .iter()
        .map(|(_, r)| r.kind.as_str())
        .filter(|k| *k == "flush" || *k == "autocompact")
        .collect();
    assert_eq!(kinds, ["flush", "autocompact"]);
    let daily = eb.memory().read_daily(eb.memory().today(t0())).unwrap();
    let daily = daily.map(|d| d.text).unwrap_or_default();
    assert_eq!(daily.matches("db-7.internal").count(), 1, "{daily}");

    // The state is the database's (A's success closed the breaker B
    // counted on), and it is not memory.
    let stem = mnemo_store::session::file_stem(KEY).unwrap();
    let state = b
        .storage
        .read_state(&format!(".mnemo/engine/{stem}.json"))
        .unwrap()
        .unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["compact_failures"], 0, "{state}");
    a.assert_state_kept_apart();
    a.assert_no_local_state();
    b.assert_no_local_state();
}

fn save(update: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] talked", "memory_update": update}),
    )
}

#[tokio::test]
async fn two_servers_share_the_merge_guards_lines() {
    // The merge guard may drop only the MEMORY.md lines consolidation
    // wrote; which those are is nowhere else, so a server that did not
    // write them must find the list in the database.
    let Some((a, b, _rows)) = two_servers() else {
        return;
    };
    let model = ScriptedServer::start().await;
    a.append(&chat_turns(3, 20));
    model.push(save(
        "- Works at Kestrel Robotics\n- Has a dog called Bolt\n",
    ));
    let ea = a.engine(&model, "");
    ea.consolidate_now(KEY).await.unwrap();
    let mut memory = ea.memory().read_memory_md().unwrap();
    assert!(memory.contains("Kestrel"), "{memory}");
    memory.push_str("- Typed by a person: likes tea\n");
    ea.memory().write_memory_md(&memory).unwrap();

    b.append(&chat_turns(3, 20));
    model.push(save("- Has a dog called Bolt\n- Lives in Berlin\n"));
    let eb = b.engine(&model, "");
    eb.consolidate_now(KEY).await.unwrap();
    let memory = eb.memory().read_memory_md().unwrap();
    assert!(
        !memory.contains("Kestrel"),
        "server B may drop server A's consolidated line: {memory}"
    );
    assert!(
        memory.contains("likes tea") && memory.contains("Berlin"),
        "{memory}"
    );

    // Digests only, in the database, outside memory's listings; a forget
    // finds nothing to rewrite.
    let stored = b
        .storage
        .read_state(".mnemo/engine/memory-lines.json")
        .unwrap()
        .unwrap();
    assert!(stored.contains("line_sha256") && !stored.to_lowercase().contains("berlin"));
    assert!(!mnemo_engine::consolidate::upgrade_provenance_in(b.storage.as_ref()).unwrap());
    b.assert_state_kept_apart();
    a.assert_no_local_state();
    b.assert_no_local_state();
}
