//! What consolidation must never lose, against the loopback model server:
//! lines it did not write, writes made while the model thinks, the facts
//! of a concurrent consolidation, the cursor after an outage, secrets in
//! the raw archive; and answers it must not take as memories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::time::Duration;

use common::*;
use mnemo_core::Message;
use mnemo_store::{SessionOptions, SessionStore};
use mnemo_test_support::Reply;
use serde_json::json;

/// MEMORY.md as `memory add` and `memory_write` (section mode) leave it.
const WRITTEN_BY_TOOLS: &str = "# Memory\n\n- Works at ACME.\n\n## Preferences\n\n- Answers in French.\n- Green tea, no sugar.\n\n## Memory files\n\n- [Tea](memory/tea.md): prefers green tea\n";

/// A workspace with a three-turn session, MEMORY.md holding `memory`, and
/// an engine on the scripted server.
async fn consolidating(memory: &str) -> (Env, mnemo_engine::Engine) {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.memory().write_memory_md(memory).unwrap();
    (env, engine)
}

fn save(memory_update: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] talked about Lyon", "memory_update": memory_update}),
    )
}

#[tokio::test]
async fn consolidation_keeps_index_lines_and_sections_it_did_not_write() {
    let (env, engine) = consolidating(WRITTEN_BY_TOOLS).await;
    // The model answers with its own idea of MEMORY.md: the index and the
    // section are gone.
    env.server.push(save(
        "# Memory\n\n- Works at ACME.\n- Moved to Lyon in March 2026.\n",
    ));
    engine.consolidate_now(KEY).await.unwrap();
    let memory = engine.memory().read_memory_md().unwrap();
    for line in [
        "- [Tea](memory/tea.md): prefers green tea",
        "## Preferences",
        "- Answers in French.",
        "- Green tea, no sugar.",
        "- Moved to Lyon in March 2026.",
        "- Works at ACME.",
    ] {
        assert!(memory.contains(line), "{line} is missing:\n{memory}");
    }
    assert_eq!(load(&env.ws).meta.last_consolidated, 6);
}

#[tokio::test]
async fn a_section_written_while_the_model_thinks_is_kept() {
    let (env, engine) = consolidating("- Works at ACME.\n").await;
    env.server.push(Reply::delay(
        Duration::from_millis(1_500),
        save("- Works at ACME.\n- Moved to Lyon.\n"),
    ));
    let consolidation = engine.consolidate_now(KEY);
    let write = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // What memory_write does, acknowledged while the model thinks.
        let other = mnemo_store::MemoryStore::new(&env.ws, Default::default());
        let current = other.read_memory_md().unwrap();
        other
            .write_memory_md(&format!(
                "{current}\n## Travel\n\n- Flies to Oslo on 12 May.\n"
            ))
            .unwrap();
    };
    let (result, ()) = tokio::join!(consolidation, write);
    result.unwrap();
    let memory = engine.memory().read_memory_md().unwrap();
    assert!(memory.contains("- Flies to Oslo on 12 May."), "{memory}");
    assert!(memory.contains("- Moved to Lyon."), "{memory}");
}

#[tokio::test]
async fn two_consolidations_at_once_keep_both_sessions_facts() {
    let env = env().await;
    let store = SessionStore::new(&env.ws, SessionOptions::default());
    for (key, topic) in [("cli:a", "Ana"), ("cli:b", "Bo")] {
        let mut log = store.open(key).unwrap();
        log.append(&[
            Message::user(format!("I am {topic}")).with_timestamp(ts(0)),
            Message::assistant("Hello").with_timestamp(ts(1)),
            Message::user("bye").with_timestamp(ts(2)),
        ])
        .unwrap();
    }
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.memory().write_memory_md("- Base fact.\n").unwrap();
    // Both requests are in flight before either answer arrives.
    env.server.respond_with(|req| {
        let who = if req.raw_body.contains("I am Ana") {
            "Ana"
        } else {
            "Bo"
        };
        Reply::delay(
            Duration::from_millis(800),
            save(&format!("- Base fact.\n- Talked with {who}.\n")),
        )
    });
    let (a, b) = tokio::join!(
        engine.consolidate_now("cli:a"),
        engine.consolidate_now("cli:b")
    );
    a.unwrap();
    b.unwrap();
    let memory = engine.memory().read_memory_md().unwrap();
    assert!(memory.contains("- Talked with Ana."), "{memory}");
    assert!(memory.contains("- Talked with Bo."), "{memory}");
    assert_eq!(memory.matches("- Base fact.").count(), 1, "{memory}");
}

#[tokio::test]
async fn one_outage_fails_the_run_and_keeps_the_cursor() {
    let env = env().await;
    let mut msgs = chat_turns(3, 20);
    msgs[1] = Message::assistant("Your key is sk-proj-abcdefghijklmnopqrstuvwx12, keep it safe.")
        .with_timestamp(ts(1));
    write_session(&env.ws, &msgs);
    let engine = engine(
        &env,
        8_000,
        1_000,
        "consolidation_failure_spacing_secs = 0",
        t0(),
    );
    env.server.set_default(Reply::error(
        500,
        json!({"error": {"message": "upstream down", "type": "server_error"}}),
    ));
    // Each run asks once, fails, and leaves everything as it was.
    for run in 1..=2 {
        let err = engine.consolidate_now(KEY).await.unwrap_err();
        assert_eq!(err.code(), mnemo_core::ErrorCode::Provider, "{err}");
        assert!(
            err.to_string().contains(&format!("failed run {run} of 3")),
            "{err}"
        );
        assert_eq!(env.server.request_count(), run);
        assert_eq!(load(&env.ws).meta.last_consolidated, 0);
        assert_eq!(engine.memory().read_history().unwrap(), "");
    }
    // The third separate failed run archives the chunk raw, redacted.
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, mnemo_engine::EngineEvent::Consolidated(r) if r.raw)),
        "{events:#?}"
    );
    assert_eq!(load(&env.ws).meta.last_consolidated, 6);
    let history = engine.memory().read_history().unwrap();
    assert!(history.contains("[RAW] 6 messages"), "{history}");
    assert!(!history.contains("sk-proj-"), "{history}");
    assert!(
        history.contains("Your key is [redacted], keep it safe."),
        "{history}"
    );
}

#[tokio::test]
async fn only_a_save_memory_call_is_a_consolidation() {
    let (env, engine) = consolidating("- Works at ACME.\n").await;
    env.server.push(Reply::tool_call(
        "write_file",
        json!({"history_entry": "[2026-03-01 10:00] x", "memory_update": "- Injected."}),
    ));
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("write_file instead of save_memory"),
        "{err}"
    );
    assert_eq!(
        engine.memory().read_memory_md().unwrap(),
        "- Works at ACME.\n"
    );
    assert_eq!(load(&env.ws).meta.last_consolidated, 0);
}

#[tokio::test]
async fn a_prose_flush_answer_is_not_a_memory() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    env.server.push(Reply::text(
        "I reviewed the conversation and there is nothing new worth saving.",
    ));
    engine.flush(KEY).await.unwrap();
    let daily = engine
        .memory()
        .read_daily(engine.memory().today(t0()))
        .unwrap();
    assert!(daily.is_none(), "{daily:?}");
}

#[tokio::test]
async fn consolidating_a_missing_session_is_an_error() {
    let env = env().await;
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let err = engine.consolidate_now("cli:nope").await.unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::NotFound, "{err}");
    assert!(!env.ws.sessions_dir().join("cli_nope.jsonl").exists());
}

#[tokio::test]
async fn every_consolidation_can_be_undone_in_turn() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(5, 20));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.memory().write_memory_md(WRITTEN_BY_TOOLS).unwrap();
    env.server.push(save(
        "# Memory\n\n- Works at ACME.\n- Moved to Lyon.\n- Has a cat named Tom.\n",
    ));
    engine.consolidate_now(KEY).await.unwrap();
    let after_first = engine.memory().read_memory_md().unwrap();
    // More turns, a second consolidation that rewrites one of the model's
    // two lines (its only line would be kept: the merge guard refuses
    // dropping all of consolidation's lines, however few).
    let store = SessionStore::new(&env.ws, SessionOptions::default());
    let mut log = store.open(KEY).unwrap();
    log.append(&[
        Message::user("more").with_timestamp(ts(20)),
        Message::assistant("ok").with_timestamp(ts(21)),
        Message::user("again").with_timestamp(ts(22)),
    ])
    .unwrap();
    env.server.push(save(
        "# Memory\n\n- Works at ACME.\n- Lives in Lyon since March.\n- Has a cat named Tom.\n",
    ));
    engine.consolidate_now(KEY).await.unwrap();
    let after_second = engine.memory().read_memory_md().unwrap();
    assert!(
        after_second.contains("Lives in Lyon since March")
            && !after_second.contains("Moved to Lyon")
    );

    let undone = mnemo_engine::undo_consolidation(engine.memory(), t0()).unwrap();
    assert_eq!(undone.consolidation, "cli:test messages 10..12");
    assert_eq!(engine.memory().read_memory_md().unwrap(), after_first);
    let undone = mnemo_engine::undo_consolidation(engine.memory(), t0()).unwrap();
    assert_eq!(undone.consolidation, "cli:test messages 0..10");
    assert_eq!(engine.memory().read_memory_md().unwrap(), WRITTEN_BY_TOOLS);
    let err = mnemo_engine::undo_consolidation(engine.memory(), t0()).unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::NotFound, "{err}");
    // The history keeps every step.
    let history = engine.memory().read_history().unwrap();
    assert_eq!(
        history
            .matches("] [MEMORY.md] consolidation of cli:test")
            .count(),
        2,
        "{history}"
    );
    assert_eq!(
        history
            .matches("] [MEMORY.md] undo of the consolidation of")
            .count(),
        2,
        "{history}"
    );
    // So does the audit log: MEMORY.md's history names each undo and the
    // messages whose consolidation it took back.
    let undos: Vec<(String, Option<String>, Option<String>)> = engine
        .memory()
        .memory_history("MEMORY.md")
        .unwrap()
        .into_iter()
        .filter(|r| r.op == "undo")
        .map(|r| (r.by, r.session, r.messages))
        .collect();
    let undo = |m: &str| {
        (
            "undo".to_string(),
            Some(KEY.to_string()),
            Some(m.to_string()),
        )
    };
    assert_eq!(undos, [undo("10..12"), undo("0..10")]);
}
