//! The token thresholds against the window: a large window keeps the
//! reference systems' reserves exactly, a small one (the local models'
//! 8,192 and 2,048 tokens) keeps room for a conversation before the flush
//! and autocompact fire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mnemo_core::Message;
use mnemo_engine::Thresholds;

/// The first message of the newcomer's trial (`mnemo chat --provider local`).
const FIRST: &str =
    "Hi! I am Rui, I live in Lisbon and I have a dog called Bolt. Please remember that.";

fn assert_ordered(t: &Thresholds) {
    assert!(t.warning <= t.autocompact, "{t:?}");
    assert!(t.flush <= t.autocompact, "the flush comes first: {t:?}");
    assert!(t.autocompact <= t.blocking, "{t:?}");
    assert!(t.blocking <= t.effective_window, "{t:?}");
    assert!(t.consolidation_target <= t.budget, "{t:?}");
}

#[tokio::test]
async fn a_large_window_keeps_the_configured_reserves() {
    let env = env().await;
    let t = engine(&env, 200_000, 8_192, "", t0()).thresholds();
    assert_eq!(
        t,
        Thresholds {
            context_window: 200_000,
            max_output: 8_192,
            budget: 200_000 - 8_192 - 1_024,
            consolidation_target: (200_000 - 8_192 - 1_024) / 2,
            flush: 200_000 - 20_000 - 4_000,
            effective_window: 200_000 - 8_192,
            autocompact: 200_000 - 8_192 - 13_000,
            warning: 200_000 - 8_192 - 13_000 - 20_000,
            blocking: 200_000 - 8_192 - 3_000,
        }
    );
    assert_ordered(&t);
}

#[tokio::test]
async fn small_windows_leave_room_before_the_flush_and_autocompact() {
    // The default local model (8,192 tokens, 1,024 of output), SmolLM2 as
    // the local provider loads it (2,048, half of it output) and with a
    // smaller output cap.
    for (window, output) in [(8_192u32, 1_024u32), (2_048, 1_024), (2_048, 256)] {
        let env = env().await;
        let engine = engine(&env, window, output, "", t0());
        let t = engine.thresholds();
        assert_ordered(&t);
        assert!(t.budget > 0 && t.warning > 0, "{t:?}");
        // A fresh session's first turn: nothing to flush or compact.
        let report = engine.prepare_turn(KEY, FIRST).await.unwrap();
        let fresh = report.tokens_before;
        assert!(report.events.is_empty(), "{:#?}", report.events);
        assert_eq!(env.server.request_count(), 0);
        assert!(
            t.flush >= 2 * fresh && t.autocompact >= 2 * fresh,
            "window {window}: a fresh prompt of {fresh} tokens, {t:?}"
        );
    }
}

#[tokio::test]
async fn the_local_models_window_keeps_the_exact_rule() {
    let env = env().await;
    let t = engine(&env, 8_192, 1_024, "", t0()).thresholds();
    // Reserve floor 8,192 / 4, soft threshold / 16, autocompact buffer and
    // warning margin / 8, blocking margin / 64; the safety buffer keeps its
    // 1,024 (under 8,192 / 6).
    assert_eq!(
        (t.budget, t.flush, t.autocompact, t.warning, t.blocking),
        (6_144, 5_632, 6_144, 5_120, 7_040)
    );
    // SmolLM2's window: the flush would come after autocompact, so it
    // comes with it.
    let t = engine(&env, 2_048, 1_024, "", t0()).thresholds();
    assert_eq!(
        (t.budget, t.flush, t.autocompact, t.warning, t.blocking),
        (683, 768, 768, 512, 992)
    );
}

#[tokio::test]
async fn a_prompt_of_1158_tokens_neither_flushes_nor_autocompacts() {
    // The newcomer's first turn of `mnemo chat --provider local` had a
    // 1,158-token prompt and flushed mnemo's own instructions into the
    // facts; here the session grows turn by turn past that size.
    let env = env().await;
    let engine = engine(&env, 8_192, 1_024, "", t0());
    let mut messages = vec![Message::user(FIRST).with_timestamp(ts(0))];
    let mut turn = 0;
    loop {
        write_session(&env.ws, &messages);
        let report = engine
            .prepare_turn(KEY, "What do you remember about me?")
            .await
            .unwrap();
        assert!(report.events.is_empty(), "{:#?}", report.events);
        assert_eq!(env.server.request_count(), 0, "no flush, no summary");
        if report.tokens_before >= 1_158 {
            break;
        }
        turn += 1;
        messages = chat_turns(1, 200)
            .into_iter()
            .map(|m| m.with_timestamp(ts(turn)))
            .collect();
    }
    assert!(load(&env.ws).compactions.is_empty());
}

#[tokio::test]
async fn a_small_window_summarises_more_than_its_oldest_message() {
    let env = env().await;
    // Forty turns of about 150 tokens: 6,000 tokens, most of an 8,192
    // window; the default tail of 20,000 tokens would keep all of them.
    write_session(&env.ws, &chat_turns(20, 600));
    let engine = engine(&env, 8_192, 1_024, "", t0())
        .with_compactor(std::sync::Arc::new(mnemo_engine::TemplateCompactor));
    env.server.push(mnemo_test_support::Reply::tool_call(
        "extract_facts",
        serde_json::json!({"facts": []}),
    ));
    let events = engine.compact(KEY, Some(5)).await.unwrap();
    let folded = events
        .iter()
        .find_map(|e| match e {
            mnemo_engine::EngineEvent::Compacted(c) => c.first_kept,
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:#?}"));
    // A quarter of the effective window stays verbatim: most turns fold.
    assert!(folded >= 20, "first kept message {folded}: {events:#?}");
}
