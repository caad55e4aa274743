//! Consolidation against the loopback model server: rounds cut at user
//! turns, the forced-to-auto fallback, and the raw archive.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use mnemo_core::Role;
use mnemo_engine::EngineEvent;
use mnemo_test_support::Reply;
use serde_json::json;

#[tokio::test]
async fn five_rounds_cut_before_user_turns() {
    let env = env().await;
    let msgs = chat_turns(60, 200);
    write_session(&env.ws, &msgs);
    // Each answer grows MEMORY.md, so the prompt stays over the target and
    // the next round cuts again.
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    env.server.respond_with(move |_| {
        let k = n2.fetch_add(1, Ordering::SeqCst) + 1;
        let memory: String = (0..k * 12).map(|i| format!("- durable fact number {i} about the user's projects\n")).collect();
        Reply::tool_call(
            "save_memory",
            json!({"history_entry": format!("[2026-03-01 10:00] round {k}"), "memory_update": memory}),
        )
    });
    let engine = engine(
        &env,
        8_000,
        1_000,
        "exact_tokens = false\nflush_reserve_floor = 0\nflush_soft_threshold = 0\nautocompact_buffer = 0",
        t0(),
    );
    let t = engine.thresholds();
    assert_eq!(t.budget, 8_000 - 1_000 - 1_024);
    assert_eq!(t.consolidation_target, t.budget / 2);

    let report = engine.prepare_turn(KEY, "next question").await.unwrap();
    let rounds: Vec<_> = report
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Consolidated(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rounds.len(), 5, "{:#?}", report.events);
    let mut cursor = 0;
    for r in &rounds {
        assert_eq!(r.from, cursor);
        assert!(r.to > r.from);
        assert_eq!(
            msgs[r.to].role,
            Role::User,
            "chunk {}..{} must end before a user turn",
            r.from,
            r.to
        );
        assert!(!r.raw && r.memory_changed);
        cursor = r.to;
    }
    let positions: Vec<usize> = rounds.iter().map(|r| r.to).collect();
    insta::assert_snapshot!(format!("{positions:?}"), @"[74, 76, 80, 82, 84]");
    assert_eq!(load(&env.ws).meta.last_consolidated, cursor);
    let history = engine.memory().read_history().unwrap();
    for k in 1..=5 {
        assert!(history.contains(&format!("round {k}")), "{history}");
    }
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs {
        assert_eq!(
            r.body["tool_choice"],
            json!({"type": "function", "function": {"name": "save_memory"}})
        );
    }
    insta::assert_snapshot!("consolidation_request", shape(&reqs[0].body));
    // The memory the model returned is on disk, within its cap.
    let memory = engine.memory().read_memory_md().unwrap();
    assert!(memory.contains("durable fact number 59"));
    assert!(report.tokens_after < report.tokens_before);
}

#[tokio::test]
async fn forced_choice_falls_back_to_auto_on_dashscope_error() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    env.server.push(Reply::error(
        400,
        json!({"error": {"message": "<400> InternalError.Algo.InvalidParameter: The tool_choice parameter should be [\"none\", \"auto\"]", "type": "invalid_request_error", "code": "invalid_parameter_error"}}),
    ));
    env.server.push(Reply::tool_call(
        "save_memory",
        json!(json!({"history_entry": "[2026-03-01 10:00] talked", "memory_update": "- likes tea\n- likes tea\n"}).to_string()),
    ));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let events = engine.consolidate_now(KEY).await.unwrap();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body["tool_choice"]["function"]["name"],
        "save_memory"
    );
    assert_eq!(reqs[1].body["tool_choice"], json!("auto"));
    match &events[..] {
        [EngineEvent::Consolidated(r)] => {
            assert!(r.fell_back_to_auto);
            // Every turn was answered: all of it.
            assert_eq!((r.from, r.to, r.duplicates_dropped), (0, 6, 1));
        }
        other => panic!("{other:#?}"),
    }
    assert_eq!(engine.memory().read_memory_md().unwrap(), "- likes tea\n");
    assert_eq!(load(&env.ws).meta.last_consolidated, 6);
}

#[tokio::test]
async fn finish_reason_error_also_falls_back() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(2, 20));
    env.server.push(Reply::raw(
        200,
        json!({"id": "x", "object": "chat.completion", "model": "qwen", "choices": [{"index": 0, "finish_reason": "error", "message": {"role": "assistant", "content": "tool_choice required is not supported: should be [\"none\", \"auto\"]"}}]}),
    ));
    env.server.push(Reply::tool_call(
        "save_memory",
        json!([{"history_entry": "[2026-03-01 10:00] hello", "memory_update": "- a"}]),
    ));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.consolidate_now(KEY).await.unwrap();
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].body["tool_choice"], json!("auto"));
    assert_eq!(load(&env.ws).meta.last_consolidated, 4);
}

#[tokio::test]
async fn three_failed_runs_archive_raw_and_lose_nothing() {
    let env = env().await;
    let msgs = chat_turns(4, 30);
    write_session(&env.ws, &msgs);
    for _ in 0..3 {
        env.server.push(Reply::text("I would rather chat."));
    }
    let engine = engine(
        &env,
        8_000,
        1_000,
        "consolidation_failure_spacing_secs = 0",
        t0(),
    );
    // Each run asks once; the first two fail and keep the cursor.
    for _ in 0..2 {
        let err = engine.consolidate_now(KEY).await.unwrap_err();
        assert!(
            err.to_string().contains("did not call save_memory"),
            "{err}"
        );
        assert_eq!(load(&env.ws).meta.last_consolidated, 0);
    }
    let events = engine.consolidate_now(KEY).await.unwrap();
    match &events[..] {
        [EngineEvent::ConsolidationFailed { failures: 3, .. }, EngineEvent::Consolidated(_)] => {}
        other => panic!("{other:#?}"),
    }
    match events.last() {
        Some(EngineEvent::Consolidated(r)) => assert!(r.raw && r.from == 0 && r.to == 8),
        other => panic!("{other:?}"),
    }
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.starts_with("[2026-03-01 10:00] [RAW] 8 messages\n"),
        "{history}"
    );
    for m in &msgs {
        assert!(history.contains(&m.text()), "missing {:?}", m.text());
    }
    let loaded = load(&env.ws);
    assert_eq!(loaded.messages.len(), msgs.len());
    assert_eq!(loaded.meta.last_consolidated, 8);
    assert_eq!(engine.memory().read_memory_md().unwrap(), "");
}

#[tokio::test]
async fn one_consolidation_per_session_at_a_time() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    let engine = engine(&env, 8_000, 1_000, "lock_wait_secs = 0", t0());
    let storage: mnemo_store::SharedStorage =
        std::sync::Arc::new(mnemo_store::FileStorage::new(&env.ws));
    let held = mnemo_engine::lock::SessionLock::acquire(&storage, KEY, std::time::Duration::ZERO)
        .await
        .unwrap();
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::Busy, "{err}");
    drop(held);
    env.server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] x", "memory_update": ""}),
    ));
    engine.consolidate_now(KEY).await.unwrap();
    assert_eq!(env.server.request_count(), 1);
}

/// One home per fact: consolidation's own lines that a current fact of
/// memory/facts.md already says are left to the facts file; a line that
/// says more, and a line someone else wrote, stay in MEMORY.md.
#[tokio::test]
async fn memory_md_leaves_to_the_facts_what_a_current_fact_says() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(
        mem.join("facts.md"),
        "# Facts\n\n- The user's city is Lyon. (f1; since 2026-02-01)\n- ~~The user's city is Paris.~~ (f2; since 2026-01-01; until 2026-02-01; superseded by f1)\n",
    )
    .unwrap();
    // Typed by a person: kept although the fact says it too.
    std::fs::write(
        env.ws.root().join("MEMORY.md"),
        "- The user's city is Lyon\n",
    )
    .unwrap();
    env.server.push(Reply::tool_call(
        "save_memory",
        json!(json!({
            "history_entry": "[2026-03-01 10:00] talked",
            "memory_update": "- The user's city is Lyon\n- The user's city is Lyon.\n- The user's city is Paris.\n- The user's city is Lyon and they cycle to work.\n- Likes hiking.\n"
        })
        .to_string()),
    ));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let events = engine.consolidate_now(KEY).await.unwrap();
    match &events[..] {
        [EngineEvent::Consolidated(r)] => assert_eq!(r.lines_held_by_facts, 1, "{r:#?}"),
        other => panic!("{other:#?}"),
    }
    assert_eq!(
        engine.memory().read_memory_md().unwrap(),
        "- The user's city is Lyon\n- The user's city is Paris.\n- The user's city is Lyon and they cycle to work.\n- Likes hiking.\n",
        "only the line the current fact says word for word, and that consolidation wrote, is left out"
    );
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("1 line(s) left to memory/facts.md"),
        "{history}"
    );
}

/// The provenance file of the merge guard, read as JSON.
fn memory_lines(env: &Env) -> String {
    std::fs::read_to_string(env.ws.state_dir().join("engine/memory-lines.json")).unwrap()
}

fn save(update: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] talked", "memory_update": update}),
    )
}

#[tokio::test]
async fn the_merge_guard_keeps_digests_of_its_lines_never_their_text() {
    // Issue 43 N7: `.mnemo/engine/memory-lines.json` held every MEMORY.md
    // line consolidation wrote, word for word, and a forget left it there.
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    env.server.push(save(
        "- Works at Kestrel Robotics\n- Has a dog called Bolt\n",
    ));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.consolidate_now(KEY).await.unwrap();
    let file = memory_lines(&env);
    for words in ["kestrel", "bolt", "works at"] {
        assert!(!file.to_lowercase().contains(words), "{file}");
    }
    let v: serde_json::Value = serde_json::from_str(&file).unwrap();
    let digests = v["line_sha256"].as_array().unwrap();
    assert_eq!(digests.len(), 2, "{file}");
    assert!(digests.iter().all(|d| d
        .as_str()
        .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))));
    // The digests still tell consolidation's lines from a person's: the
    // next round may drop one of its own two lines, not the one typed
    // meanwhile.
    let mut memory = engine.memory().read_memory_md().unwrap();
    memory.push_str("- Typed by a person: likes tea\n");
    engine.memory().write_memory_md(&memory).unwrap();
    write_session(&env.ws, &chat_turns(3, 20));
    env.server
        .push(save("- Has a dog called Bolt\n- Lives in Berlin\n"));
    engine.consolidate_now(KEY).await.unwrap();
    let memory = engine.memory().read_memory_md().unwrap();
    assert!(!memory.contains("Kestrel"), "{memory}");
    assert!(
        memory.contains("likes tea") && memory.contains("Berlin"),
        "{memory}"
    );
    assert!(!memory_lines(&env).to_lowercase().contains("berlin"));
}

#[tokio::test]
async fn a_provenance_file_of_text_is_read_and_written_again_as_digests() {
    // Files written before digests hold the lines' keys: they still say
    // which lines are consolidation's, and their text goes at the next
    // consolidation or forget.
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    std::fs::write(
        env.ws.root().join("MEMORY.md"),
        "- Works at Kestrel Robotics\n- Has a dog called Bolt\n",
    )
    .unwrap();
    let path = env.ws.state_dir().join("engine/memory-lines.json");
    let old = r#"{"consolidated_lines": ["has a dog called bolt", "works at kestrel robotics"]}"#;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, old).unwrap();
    assert!(mnemo_engine::consolidate::upgrade_provenance(&env.ws).unwrap());
    assert!(!memory_lines(&env).contains("kestrel"));
    assert!(!mnemo_engine::consolidate::upgrade_provenance(&env.ws).unwrap());
    // Written again, the file still names both lines: the update may drop
    // one of the two.
    std::fs::write(&path, old).unwrap();
    env.server
        .push(save("- Has a dog called Bolt\n- Lives in Berlin\n"));
    let engine = engine(&env, 8_000, 1_000, "", t0());
    engine.consolidate_now(KEY).await.unwrap();
    let memory = engine.memory().read_memory_md().unwrap();
    assert_eq!(memory, "- Has a dog called Bolt\n- Lives in Berlin\n");
    let file = memory_lines(&env);
    assert!(
        !file.contains("kestrel") && !file.contains("bolt"),
        "{file}"
    );
}
