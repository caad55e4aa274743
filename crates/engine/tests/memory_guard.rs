//! What is not memory is not stored, against the loopback model server: a
//! `save_memory` answer that copies the excerpt's messages into MEMORY.md
//! (what the local 1.5B model did under the `nanobot` profile) is refused
//! like any other bad answer, a partial copy loses its copied lines and
//! keeps the rest, and the flush does not save its own instructions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use common::*;
use mnemo_core::{ErrorCode, Message};
use mnemo_engine::{EngineEvent, Error};
use mnemo_test_support::Reply;
use serde_json::json;

const MEMORY_MD: &str = "# Memory\n\n- Name: Rui\n";

/// The newcomer's ten messages (report of 2026-12-05, N1) and a last
/// question, so that the ten are one round.
fn trial() -> Vec<Message> {
    [
        "Hi, my name is Rui. I live in Lisbon.",
        "Nice to meet you, Rui from Lisbon.",
        "I eat meat; steak is my favourite food. I have a dog called Bolt.",
        "Steak and a dog named Bolt, noted.",
        "I work as a robotics engineer at Kestrel Robotics.",
        "Robotics at Kestrel sounds exciting.",
        "Big news: I moved from Lisbon to Berlin last week.",
        "Congratulations on the move to Berlin!",
        "I no longer eat meat. I am vegetarian now.",
        "Noted: you are vegetarian now.",
        "What do you remember about me?",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| {
        let m = if i % 2 == 0 {
            Message::user(*t)
        } else {
            Message::assistant(*t)
        };
        m.with_timestamp(ts(i as i64))
    })
    .collect()
}

fn save_memory(memory_update: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] Rui: Lisbon to Berlin, robotics, vegetarian now.", "memory_update": memory_update}),
    )
}

/// The local model's answer: every message copied as a transcript line
/// above the old memory.
fn copied_answer() -> String {
    let mut update = String::from("*Memory*\n");
    for (i, m) in trial().iter().take(10).enumerate() {
        let role = if i % 2 == 0 { "User" } else { "Assistant" };
        update.push_str(&format!("**{role}:** {}\n", m.text()));
    }
    update.push_str(MEMORY_MD);
    update
}

#[tokio::test]
async fn an_answer_of_copied_messages_is_refused_and_changes_nothing() {
    let env = env().await;
    write_session(&env.ws, &trial());
    std::fs::write(env.ws.root().join("MEMORY.md"), MEMORY_MD).unwrap();
    env.server.set_default(save_memory(&copied_answer()));
    let engine = engine(
        &env,
        100_000,
        1_000,
        "consolidation_failure_spacing_secs = 0",
        t0(),
    );
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    match &err {
        Error::ConsolidationFailed {
            failures: 1,
            from: 0,
            source,
            ..
        } => assert!(matches!(**source, Error::BadAnswer(_)), "{source:?}"),
        other => panic!("{other:?}"),
    }
    // A bad answer like any other: exit 6, one failed run, the cursor stays.
    assert_eq!(err.code(), ErrorCode::Provider);
    let text = err.to_string();
    assert!(
        text.contains("10 of the 11 new lines of its MEMORY.md are not memory")
            && text.contains("the cursor stays at 0")
            && text.contains("failed run 1 of 3"),
        "{text}"
    );
    assert_eq!(load(&env.ws).meta.last_consolidated, 0);
    assert_eq!(engine.memory().read_memory_md().unwrap(), MEMORY_MD);
    assert_eq!(engine.memory().read_history().unwrap(), "");
    assert_eq!(env.server.request_count(), 1);
    // The next run asks again and fails again: the messages wait for a
    // model that distils them, and the third run archives them raw.
    assert!(engine.consolidate_now(KEY).await.is_err());
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(
        matches!(events.last(), Some(EngineEvent::Consolidated(r)) if r.raw),
        "{events:#?}"
    );
    assert_eq!(engine.memory().read_memory_md().unwrap(), MEMORY_MD);
}

#[tokio::test]
async fn a_partly_copied_answer_keeps_the_memory_and_drops_the_copies() {
    let env = env().await;
    write_session(&env.ws, &trial());
    std::fs::write(env.ws.root().join("MEMORY.md"), MEMORY_MD).unwrap();
    env.server.push(save_memory(
        "# Memory\n\n- Name: Rui\n- Lives in Berlin (moved from Lisbon).\n- Vegetarian; used to eat meat. (f2; since 2026-12-05)\n**User:** I have a dog called Bolt.\n- I work as a robotics engineer at Kestrel Robotics.\n- The conversation has been compacted.\n- Works as a robotics engineer at Kestrel Robotics.\n- Has a dog, Bolt.\n",
    ));
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let events = engine.consolidate_now(KEY).await.unwrap();
    match &events[..] {
        [EngineEvent::Consolidated(r)] => {
            assert_eq!((r.lines_copied, r.lines_echoed), (2, 1), "{r:#?}");
            assert!(r.memory_changed && !r.raw);
        }
        other => panic!("{other:#?}"),
    }
    let memory = engine.memory().read_memory_md().unwrap();
    insta::assert_snapshot!("memory_md_after_a_partial_copy", memory);
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("[not memory, not saved: 2 line(s) of the model's MEMORY.md copied the messages, 1 repeated mnemo's instructions]"),
        "{history}"
    );
    let json = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(
        (json["lines_copied"].as_u64(), json["lines_echoed"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(load(&env.ws).meta.last_consolidated > 0);
}

#[tokio::test]
async fn the_flush_does_not_save_its_own_instructions() {
    let env = env().await;
    write_session(
        &env.ws,
        &[
            Message::user("The deploy host is db-7.internal, remember it.").with_timestamp(ts(0)),
            Message::assistant("Noted.").with_timestamp(ts(1)),
        ],
    );
    // What the local model saved on a first turn (report of 2026-12-05,
    // N3), a fact line copied with its id, and one memory.
    env.server.push(Reply::text(
        "- The conversation has been compacted.\n- Older turns will be replaced by a summary and their details will leave your context.\n- The deploy host is db-7.internal (f2; since 2026-03-01)\n",
    ));
    let engine = engine(&env, 100_000, 1_000, "flush_mode = \"daily_log\"", t0());
    let events = engine.flush(KEY).await.unwrap();
    let report = match &events[..] {
        [EngineEvent::Flushed(f)] => f.clone(),
        other => panic!("{other:#?}"),
    };
    assert_eq!((report.written, report.echoed), (1, 2), "{report:#?}");
    let daily = std::fs::read_to_string(env.ws.memory_dir().join("2026-03-01.md")).unwrap();
    assert!(
        daily.contains("The deploy host is db-7.internal\n"),
        "{daily}"
    );
    assert!(
        !daily.contains("compacted") && !daily.contains("(f2"),
        "{daily}"
    );
}
