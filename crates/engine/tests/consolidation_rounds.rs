//! Consolidation of long ranges against a model with a window (issue 43
//! N6): the loopback server refuses, as OpenAI does, any request longer
//! than its window with `context_length_exceeded`, and records the size
//! of each. A long range goes in rounds that fit, one huge message is cut
//! for the prompt (the log keeps it whole), a refusal as too long never
//! counts toward the raw archive, and quick retries count as one failed
//! run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::Duration;
use common::*;
use mnemo_core::{Config, Message, Role};
use mnemo_engine::{Engine, EngineEvent, Error, RunProgress};
use mnemo_test_support::{RecordedRequest, Reply, ScriptedServer};
use serde_json::json;

/// The server's window, in tokens of chars/4 over the whole body.
const WINDOW: usize = 8_000;

/// Answers `save_memory` to a request within `WINDOW`, and 400
/// `context_length_exceeded` to a longer one.
fn windowed_model(server: &ScriptedServer) -> Arc<AtomicUsize> {
    let answered = Arc::new(AtomicUsize::new(0));
    let n = answered.clone();
    server.respond_with(move |req: &RecordedRequest| {
        let tokens = req.raw_body.len() / 4;
        if tokens > WINDOW {
            return Reply::error(
                400,
                json!({"error": {"message": format!("This model's maximum context length is {WINDOW} tokens. However, your messages resulted in {tokens} tokens."), "type": "invalid_request_error", "code": "context_length_exceeded"}}),
            );
        }
        let k = n.fetch_add(1, Ordering::SeqCst) + 1;
        Reply::tool_call(
            "save_memory",
            json!({"history_entry": format!("[2026-03-01 10:00] round {k}"), "memory_update": format!("- fact of round {k}\n")}),
        )
    });
    answered
}

fn rounds(events: &[EngineEvent]) -> Vec<mnemo_engine::ConsolidationRound> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Consolidated(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

const FAST: &str = "exact_tokens = false";

#[tokio::test]
async fn a_long_session_is_consolidated_in_rounds_that_fit_the_window() {
    let env = env().await;
    // About 110,000 tokens past the cursor, as an import leaves them.
    let msgs = chat_turns(1_000, 200);
    write_session(&env.ws, &msgs);
    let answered = windowed_model(&env.server);
    let engine = engine(&env, WINDOW as u32, 1_000, FAST, t0());
    let seen = Arc::new(Mutex::new(Vec::<RunProgress>::new()));
    let s = seen.clone();
    let on_round = move |p: &RunProgress| s.lock().unwrap().push(*p);
    let events = engine.consolidate_now_with(KEY, &on_round).await.unwrap();

    let rounds = rounds(&events);
    assert!(rounds.len() >= 10, "{}", rounds.len());
    assert_eq!(rounds.len(), answered.load(Ordering::SeqCst));
    let mut cursor = 0;
    for r in &rounds {
        assert_eq!(r.from, cursor);
        assert!(!r.raw);
        assert!(
            r.to == msgs.len() || msgs[r.to].role == Role::User,
            "round {}..{} must end before a user turn",
            r.from,
            r.to
        );
        cursor = r.to;
    }
    assert_eq!(cursor, msgs.len());
    assert_eq!(load(&env.ws).meta.last_consolidated, msgs.len());
    // Every request fitted the window: none was refused.
    for r in env.server.requests() {
        assert!(r.raw_body.len() / 4 <= WINDOW, "{}", r.raw_body.len());
    }
    // The progress callback saw each round before it ran, numbered, with
    // the whole range.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), rounds.len());
    for (i, (p, r)) in seen.iter().zip(&rounds).enumerate() {
        assert_eq!(
            (p.round, p.from, p.to, p.start, p.end),
            (i + 1, r.from, r.to, 0, msgs.len())
        );
    }
    let history = engine.memory().read_history().unwrap();
    assert!(history.contains(&format!("round {}", rounds.len())));
}

#[tokio::test]
async fn one_huge_message_is_cut_for_the_prompt_and_kept_whole_in_the_log() {
    let env = env().await;
    let huge = format!("{} I like tea.", "x".repeat(40_000));
    let msgs = vec![
        Message::user("My name is Ada and I live in Oslo.").with_timestamp(ts(0)),
        Message::assistant("Noted.").with_timestamp(ts(1)),
        Message::user(huge.clone()).with_timestamp(ts(2)),
        Message::assistant("ok").with_timestamp(ts(3)),
    ];
    write_session(&env.ws, &msgs);
    windowed_model(&env.server);
    let engine = engine(&env, WINDOW as u32, 1_000, FAST, t0());
    let events = engine.consolidate_now(KEY).await.unwrap();
    match &rounds(&events)[..] {
        [r] => {
            assert_eq!((r.from, r.to, r.raw, r.messages_cut), (0, 4, false, 1));
        }
        other => panic!("{other:#?} {events:#?}"),
    }
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1);
    let prompt = reqs[0].body["messages"].to_string();
    assert!(prompt.contains("My name is Ada"), "{prompt}");
    assert!(prompt.contains("of 40012 characters shown"), "{prompt}");
    // The log keeps the message whole.
    let loaded = load(&env.ws);
    assert_eq!(loaded.messages[2].text(), huge);
    assert_eq!(loaded.meta.last_consolidated, 4);
}

#[tokio::test]
async fn a_prompt_the_model_refuses_as_too_long_never_reaches_the_raw_archive() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(40, 200));
    // A model whose window is far smaller than it claims: it refuses
    // everything as too long (as the probe's lenmock.py does).
    env.server.set_default(Reply::error(
        400,
        json!({"error": {"message": "context_length_exceeded", "code": "context_length_exceeded"}}),
    ));
    let engine = engine(
        &env,
        WINDOW as u32,
        1_000,
        "exact_tokens = false\nconsolidation_failure_spacing_secs = 0",
        t0(),
    );
    let mut before = 0;
    for _ in 0..4 {
        let err = engine.consolidate_now(KEY).await.unwrap_err();
        assert!(
            matches!(err, Error::ConsolidationTooLong { from: 0, .. }),
            "{err}"
        );
        assert_eq!(err.code(), mnemo_core::ErrorCode::Provider);
        let text = err.to_string();
        assert!(
            text.contains("does not count toward the raw archive")
                && text.contains("context_window"),
            "{text}"
        );
        // Halved a few times, each request shorter than the one before.
        let reqs = env.server.requests();
        let sizes: Vec<usize> = reqs[before..].iter().map(|r| r.raw_body.len()).collect();
        assert_eq!(sizes.len(), 5, "{sizes:?}");
        assert!(sizes.windows(2).all(|w| w[1] < w[0]), "{sizes:?}");
        before = reqs.len();
        assert_eq!(load(&env.ws).meta.last_consolidated, 0);
        assert_eq!(engine.memory().read_history().unwrap(), "");
    }
    // A model that answers again distils the messages: nothing was
    // archived on the way.
    windowed_model(&env.server);
    env.server.set_default(Reply::text("unused"));
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(rounds(&events).iter().all(|r| !r.raw), "{events:#?}");
}

/// An engine whose clock is `t0` plus the seconds in `offset`.
fn engine_at(env: &Env, offset: &Arc<AtomicI64>) -> Engine {
    let offset = offset.clone();
    let config =
        Config::parse("[engine]\nexact_tokens = false\n[memory]\ntimezone = \"UTC\"\n").unwrap();
    Engine::new(&env.ws, &config, model(&env.server, WINDOW as u32, 1_000))
        .unwrap()
        .with_clock(Arc::new(move || {
            t0() + Duration::seconds(offset.load(Ordering::SeqCst))
        }))
}

#[tokio::test]
async fn quick_retries_are_one_failed_run_and_only_spaced_failures_archive_raw() {
    let env = env().await;
    let msgs = chat_turns(3, 20);
    write_session(&env.ws, &msgs);
    env.server.set_default(Reply::error(
        500,
        json!({"error": {"message": "upstream down", "type": "server_error"}}),
    ));
    let offset = Arc::new(AtomicI64::new(0));
    let engine = engine_at(&env, &offset);
    // Three runs within a second (a retry loop): one counted failed run.
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(err.to_string().contains("failed run 1 of 3"), "{err}");
    for s in [1, 2] {
        offset.store(s, Ordering::SeqCst);
        let err = engine.consolidate_now(KEY).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("Not counted as another failed run")
                && text.contains(&format!("the last counted one was {s} s ago"))
                && text.contains("1 of 3 counted so far"),
            "{text}"
        );
        assert_eq!(load(&env.ws).meta.last_consolidated, 0);
    }
    assert_eq!(engine.memory().read_history().unwrap(), "");
    // Ten minutes on, the outage is still there: the second counted run.
    offset.store(601, Ordering::SeqCst);
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(err.to_string().contains("failed run 2 of 3"), "{err}");
    // A new process reads the count and its time from the state file.
    let engine = engine_at(&env, &offset);
    offset.store(700, Ordering::SeqCst);
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(err.to_string().contains("2 of 3 counted so far"), "{err}");
    // The third, ten minutes after the second, archives the messages raw,
    // and the run says so as the failure it is.
    offset.store(1_202, Ordering::SeqCst);
    let events = engine.consolidate_now(KEY).await.unwrap();
    match rounds(&events)[..] {
        [ref r] => assert!(r.raw && r.from == 0 && r.to == 6, "{r:?}"),
        ref other => panic!("{other:#?}"),
    }
    let err = Error::from_raw_archive(KEY, &events).unwrap();
    let text = err.to_string();
    assert!(
        text.contains("failed 3 time(s) in a row")
            && text.contains("upstream down")
            && text.contains("messages 0..6 were archived raw into memory/HISTORY.md"),
        "{text}"
    );
    assert_eq!(err.code(), mnemo_core::ErrorCode::Provider);
    assert_eq!(load(&env.ws).meta.last_consolidated, 6);
    let history = engine.memory().read_history().unwrap();
    for m in &msgs {
        assert!(history.contains(&m.text()), "{history}");
    }
    // A run that archived nothing raw is no failure.
    assert!(Error::from_raw_archive(KEY, &[]).is_none());
}

#[tokio::test]
async fn a_turn_over_a_long_imported_session_consolidates_within_the_window() {
    let env = env().await;
    let msgs = chat_turns(1_000, 200);
    write_session(&env.ws, &msgs);
    let answered = windowed_model(&env.server);
    let engine = engine(
        &env,
        WINDOW as u32,
        1_000,
        "exact_tokens = false\nflush_enabled = false\nmemory_work = \"inline\"",
        t0(),
    );
    let report = engine.prepare_turn(KEY, "next question").await;
    // The turn may go on to compaction; what matters is that each round
    // fitted the window and none was refused or archived.
    let _ = report;
    let reqs = env.server.requests();
    let consolidation: Vec<_> = reqs
        .iter()
        .filter(|r| r.raw_body.contains("save_memory"))
        .collect();
    assert!(!consolidation.is_empty());
    for r in &consolidation {
        assert!(r.raw_body.len() / 4 <= WINDOW, "{}", r.raw_body.len());
    }
    assert!(answered.load(Ordering::SeqCst) >= 1);
    let cursor = load(&env.ws).meta.last_consolidated;
    assert!(cursor > 0 && msgs[cursor].role == Role::User, "{cursor}");
    assert!(!engine.memory().read_history().unwrap().contains("[RAW]"));
}

#[tokio::test]
async fn fact_level_consolidation_saves_a_long_range_in_rounds() {
    let env = env().await;
    let msgs = chat_turns(300, 200);
    write_session(&env.ws, &msgs);
    env.server.respond_with(|req: &RecordedRequest| {
        assert!(req.raw_body.len() / 4 <= WINDOW, "{}", req.raw_body.len());
        Reply::tool_call("extract_facts", json!({"facts": []}))
    });
    let engine = engine(
        &env,
        WINDOW as u32,
        1_000,
        "exact_tokens = false\nconsolidation_mode = \"facts\"",
        t0(),
    );
    let events = engine.consolidate_now(KEY).await.unwrap();
    let rounds = rounds(&events);
    // About 33,000 tokens: a round reads a few extraction batches and is
    // saved (cursor moved) before the next, so a failure repeats one round.
    assert!(rounds.len() >= 3, "{}", rounds.len());
    let mut cursor = 0;
    for r in &rounds {
        assert_eq!(r.from, cursor);
        assert!(!r.raw && r.facts.is_some());
        let calls = r.facts.as_ref().unwrap().model_calls;
        assert!((1..=8).contains(&calls), "{calls}");
        cursor = r.to;
    }
    assert_eq!(cursor, msgs.len());
    assert_eq!(load(&env.ws).meta.last_consolidated, msgs.len());
}
