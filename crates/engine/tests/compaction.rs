//! The compaction pipeline against real session logs in temp dirs: the
//! flush before proactive and reactive compaction, every level alone, the
//! whole pipeline on a long session, and the circuit breaker.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use chrono::Duration;
use common::*;
use mnemo_core::Message;
use mnemo_engine::{rebuild_history, CompactionReport, EngineEvent, TemplateCompactor};
use mnemo_test_support::Reply;
use serde_json::json;

fn compactions(events: &[EngineEvent]) -> Vec<CompactionReport> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Compacted(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// OpenClaw's flush (to the daily log); the default `mnemo` profile's
/// flush through the fact-level decisions is tested in `facts.rs`.
const PROACTIVE: &str = "consolidation_enabled = false
flush_mode = \"daily_log\"
autocompact_buffer = 4000
flush_reserve_floor = 2500
flush_soft_threshold = 1500
tail_tokens = 2000";

#[tokio::test]
async fn flush_runs_before_proactive_autocompact() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(36, 400));
    std::fs::write(
        env.ws.root().join("AGENTS.md"),
        "Always answer in French.\n",
    )
    .unwrap();
    env.server.push(Reply::text(
        "- user prefers tabs\n- deploy host is db-7.internal\n# Heading\n- user prefers tabs",
    ));
    env.server.push(Reply::text(
        "<analysis>thinking hard</analysis>\n<summary>\n## Goal\nship v2\n</summary>",
    ));
    let engine = engine(&env, 12_000, 1_000, PROACTIVE, t0());
    let t = engine.thresholds();
    // The soft threshold and the autocompact buffer are capped at 1/16 and
    // 1/8 of the 12,000-token window: 12,000 - 2,500 - 750 and
    // 12,000 - 1,000 - 1,500.
    assert_eq!((t.flush, t.autocompact), (8_750, 9_500));

    let report = engine.prepare_turn(KEY, "what next?").await.unwrap();
    assert!(report.tokens_before > t.flush, "{report:#?}");
    match &report.events[..] {
        [EngineEvent::Flushed(f), EngineEvent::Compacted(c)] => {
            assert_eq!(
                (f.reason.as_str(), f.no_reply, f.written, f.duplicates),
                ("threshold", false, 2, 1)
            );
            assert_eq!(c.kind, "autocompact");
            assert!(
                c.tokens_after < t.autocompact && c.tokens_after < c.tokens_before,
                "{c:?}"
            );
        }
        other => panic!("{other:#?}"),
    }
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(system_text(&reqs[0].body).starts_with("Pre-compaction memory flush"));
    assert!(system_text(&reqs[1].body).starts_with("You are summarising"));
    insta::assert_snapshot!("flush_request", shape(&reqs[0].body));
    insta::assert_snapshot!("summary_request", shape(&reqs[1].body));

    let daily = std::fs::read_to_string(env.ws.memory_dir().join("2026-03-01.md")).unwrap();
    assert!(daily.contains("deploy host is db-7.internal"), "{daily}");
    assert_eq!(daily.matches("user prefers tabs").count(), 1);
    assert!(!daily.contains("Heading\n"));

    let loaded = load(&env.ws);
    let kinds: Vec<&str> = loaded
        .compactions
        .iter()
        .map(|(_, r)| r.kind.as_str())
        .collect();
    assert_eq!(kinds, ["flush", "autocompact"]);
    let history = rebuild_history(&loaded);
    assert!(history[0].text().starts_with("[Conversation summary"));
    assert!(history[0].text().contains("ship v2") && !history[0].text().contains("thinking hard"));
    assert!(
        history[1].text().contains("Always answer in French."),
        "instructions restored"
    );

    // Same cycle, under the thresholds: nothing more.
    let again = engine.prepare_turn(KEY, "what next?").await.unwrap();
    assert!(again.events.is_empty(), "{:#?}", again.events);
    assert_eq!(env.server.request_count(), 2);

    env.server.push(Reply::text("ok"));
    let out = engine.send(KEY, "what next?", &[]).await.unwrap();
    assert_eq!(out.response.text(), "ok");
    insta::assert_snapshot!(
        "turn_request_after_autocompact",
        shape(&env.server.requests()[2].body)
    );
}

#[tokio::test]
async fn flush_runs_before_reactive_compaction() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(20, 400));
    env.server.push(Reply::error(
        400,
        json!({"error": {"message": "This model's maximum context length is 4096 tokens", "code": "context_length_exceeded"}}),
    ));
    env.server.push(Reply::text("- the user is called Ada"));
    env.server
        .push(Reply::text("<summary>## Goal\nkeep going</summary>"));
    env.server.push(Reply::text("ok"));
    let engine = engine(
        &env,
        100_000,
        1_000,
        "tail_tokens = 1000\nflush_mode = \"daily_log\"",
        t0(),
    );
    let out = engine.send(KEY, "continue", &[]).await.unwrap();
    assert_eq!(out.response.text(), "ok");
    let reqs = env.server.requests();
    let order: Vec<String> = reqs
        .iter()
        .map(|r| system_text(&r.body).chars().take(12).collect())
        .collect();
    assert_eq!(
        order,
        [
            "# mnemo agen",
            "Pre-compacti",
            "You are summ",
            "# mnemo agen"
        ]
    );
    match &out.events[..] {
        [EngineEvent::Flushed(f), EngineEvent::Compacted(c)] => {
            assert_eq!(f.reason, "reactive");
            assert_eq!(c.kind, "reactive");
            assert!(c.tokens_after < c.tokens_before);
        }
        other => panic!("{other:#?}"),
    }
    let first = reqs[0].body["messages"].as_array().unwrap().len();
    let last = reqs[3].body["messages"].as_array().unwrap().len();
    assert!(last < first, "{last} < {first}");
    let daily = std::fs::read_to_string(env.ws.memory_dir().join("2026-03-01.md")).unwrap();
    assert!(daily.contains("the user is called Ada"));
}

/// A log written by another tool: one tool result over the budget, not
/// persisted by the store.
fn write_raw_session(env: &Env, messages: &[Message]) {
    let dir = env.ws.sessions_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = format!(
        "{}\n",
        json!({"_type": "metadata", "key": KEY, "created_at": ts(0), "updated_at": ts(0), "metadata": {}, "last_consolidated": 0})
    );
    for m in messages {
        text.push_str(&serde_json::to_string(m).unwrap());
        text.push('\n');
    }
    std::fs::write(dir.join("cli_test.jsonl"), text).unwrap();
}

#[tokio::test]
async fn each_level_alone() {
    let env = env().await;
    let mut msgs = tool_turns(12, 400);
    let n = msgs.len();
    msgs.push(Message::user("read the big log").with_timestamp(ts(30)));
    msgs.push(call("big", "read", r#"{"path":"big.log"}"#).with_timestamp(ts(30)));
    msgs.push(Message::tool_result("big", "read", "L".repeat(60_000)).with_timestamp(ts(30)));
    msgs.push(Message::assistant("it is big").with_timestamp(ts(31)));
    write_raw_session(&env, &msgs);
    for i in [10, 11] {
        std::fs::write(
            env.ws.root().join(format!("file{i}.txt")),
            format!("content of file {i}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        env.ws.root().join("AGENTS.md"),
        "Run the tests before committing.\n",
    )
    .unwrap();
    let engine = engine(
        &env,
        200_000,
        8_192,
        "tail_tokens = 600",
        t0() + Duration::hours(3),
    )
    .with_compactor(Arc::new(TemplateCompactor));

    let mut last_history = rebuild_history(&load(&env.ws));
    for level in 1..=5u8 {
        if level == 5 {
            // The default flush proposes facts: nothing new here.
            env.server
                .push(Reply::tool_call("extract_facts", json!({"facts": []})));
        }
        let events = engine.compact(KEY, Some(level)).await.unwrap();
        let reports = compactions(&events);
        assert_eq!(reports.len(), 1, "level {level}: {events:#?}");
        let r = &reports[0];
        let expected = [
            "tool_budget",
            "snip",
            "microcompact",
            "collapse",
            "autocompact",
        ][level as usize - 1];
        assert_eq!(r.kind, expected);
        assert!(
            r.changed > 0 && r.tokens_after < r.tokens_before,
            "level {level}: {r:?}"
        );
        let history = rebuild_history(&load(&env.ws));
        if level > 1 {
            assert!(
                history.len() <= last_history.len() || level == 5,
                "level {level}"
            );
            assert_ne!(
                history, last_history,
                "level {level} changed the rebuilt prompt"
            );
        }
        // Replaying the same log rebuilds the same prompt.
        assert_eq!(history, rebuild_history(&load(&env.ws)));
        last_history = history;
        if level == 5 {
            assert!(matches!(events.first(), Some(EngineEvent::Flushed(f)) if f.no_reply));
            assert!(!env.ws.memory_dir().join("2026-03-01.md").exists());
        }
    }
    let history = last_history;
    let summary = history[0].text();
    assert!(
        summary.contains("## User Messages") && summary.contains("- task 0: look at file0.txt"),
        "{summary}"
    );
    let restored = history[1].text();
    assert!(restored.starts_with("[Context restored"), "{restored}");
    assert!(
        restored.contains("content of file 11")
            && restored.contains("Run the tests before committing.")
    );
    assert!(n > 0);
}

#[tokio::test]
async fn whole_pipeline_on_a_long_session() {
    let env = env().await;
    write_session(&env.ws, &tool_turns(250, 200));
    let engine = engine(
        &env,
        200_000,
        8_192,
        "flush_enabled = false\ntail_tokens = 2000",
        t0() + Duration::days(1),
    )
    .with_compactor(Arc::new(TemplateCompactor));
    let events = engine.compact(KEY, None).await.unwrap();
    let reports = compactions(&events);
    let kinds: Vec<&str> = reports.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["snip", "microcompact", "collapse", "autocompact"]);
    for w in reports.windows(2) {
        assert_eq!(w[0].tokens_after, w[1].tokens_before, "{w:?}");
    }
    for r in &reports {
        assert!(r.tokens_after < r.tokens_before, "{r:?}");
    }
    let first = reports[0].tokens_before;
    let last = reports[reports.len() - 1].tokens_after;
    assert!(last * 4 < first, "{first} -> {last}");
    assert_eq!(
        env.server.request_count(),
        0,
        "the template compactor needs no model"
    );
}

#[tokio::test]
async fn breaker_opens_after_three_failures() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(45, 400));
    env.server.set_default(Reply::error(
        400,
        json!({"error": {"message": "summariser broken"}}),
    ));
    let settings = format!("{PROACTIVE}\nflush_enabled = false");
    // A new engine per turn, as with one `mnemo run` process per turn: the
    // failure count lives in the workspace, not in the process.
    let fresh = || engine(&env, 12_000, 1_000, &settings, t0());
    for i in 1..=3u32 {
        let r = fresh().prepare_turn(KEY, "x").await.unwrap();
        match &r.events[..] {
            [EngineEvent::CompactionFailed { failures, .. }] => assert_eq!(*failures, i),
            other => panic!("{other:#?}"),
        }
    }
    let engine = fresh();
    let r = engine.prepare_turn(KEY, "x").await.unwrap();
    assert!(
        matches!(&r.events[..], [EngineEvent::BreakerOpen { failures: 3 }]),
        "{:#?}",
        r.events
    );
    assert_eq!(
        env.server.request_count(),
        3,
        "no request while the breaker is open"
    );
    // An explicit compaction resets the breaker and tries again.
    let events = engine.compact(KEY, Some(5)).await.unwrap();
    assert!(
        matches!(
            &events[..],
            [EngineEvent::CompactionFailed { failures: 1, .. }]
        ),
        "{events:#?}"
    );
    assert_eq!(env.server.request_count(), 4);
    assert!(
        load(&env.ws).compactions.is_empty(),
        "failures write nothing"
    );
}

#[tokio::test]
async fn large_transcript_forces_the_flush_once_per_cycle() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(3, 20));
    env.server
        .push(Reply::tool_call("extract_facts", json!({"facts": []})));
    let engine = engine(&env, 200_000, 8_192, "flush_transcript_bytes = 100", t0());
    let r = engine.prepare_turn(KEY, "x").await.unwrap();
    match &r.events[..] {
        [EngineEvent::Flushed(f)] => assert!(f.reason == "transcript_size" && f.no_reply),
        other => panic!("{other:#?}"),
    }
    // Recorded in the log: a restart (a new engine) does not flush again.
    let engine = engine_again(&env);
    assert!(engine
        .prepare_turn(KEY, "x")
        .await
        .unwrap()
        .events
        .is_empty());
    assert_eq!(env.server.request_count(), 1);
}

fn engine_again(env: &Env) -> mnemo_engine::Engine {
    engine(env, 200_000, 8_192, "flush_transcript_bytes = 100", t0())
}

#[tokio::test]
async fn a_focus_reaches_the_summariser_and_the_template_summary() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(36, 400));
    env.server.push(Reply::text(
        "<summary>\n## Goal\nship v2 with the deploy keys\n</summary>",
    ));
    let settings = format!("{PROACTIVE}\nflush_enabled = false");
    let engine = engine(&env, 12_000, 1_000, &settings, t0());
    let events = engine
        .compact_with_focus(KEY, Some(5), Some("the deploy keys"))
        .await
        .unwrap();
    assert_eq!(compactions(&events)[0].kind, "autocompact");
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1);
    let system = system_text(&reqs[0].body);
    assert!(system.starts_with("You are summarising"), "{system}");
    assert!(
        system.contains("<focus>\nthe deploy keys\n</focus>"),
        "{system}"
    );
    let history = rebuild_history(&load(&env.ws));
    assert!(history[0].text().contains("ship v2 with the deploy keys"));

    // No focus: the prompt has no focus part.
    let env = common::env().await;
    write_session(&env.ws, &chat_turns(36, 400));
    env.server
        .push(Reply::text("<summary>\n## Goal\nship v2\n</summary>"));
    let engine = common::engine(&env, 12_000, 1_000, &settings, t0());
    engine.compact(KEY, Some(5)).await.unwrap();
    assert!(!system_text(&env.server.requests()[0].body).contains("<focus>"));

    let summary = TemplateCompactor::summary(&[Message::user("ship v2")], Some("the deploy keys"));
    assert!(
        summary.contains("## Goal\nship v2\nCompaction focus: the deploy keys"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_request_folded_mid_turn_is_restored_verbatim() {
    let env = env().await;
    let mut messages = chat_turns(10, 400);
    messages.push(Message::user(
        "Refactor the billing module; keep the public API unchanged.",
    ));
    // The turn's tool work, larger than the reactive tail: the request
    // itself falls into the head.
    for i in 0..6 {
        messages.push(call(&format!("r{i}"), "read", r#"{"path":"billing.rs"}"#));
        messages.push(Message::tool_result(
            format!("r{i}"),
            "read",
            format!("part {i} {}", "x".repeat(3_000)),
        ));
    }
    write_session(&env.ws, &messages);
    let settings = format!("{PROACTIVE}\nflush_enabled = false");
    let engine =
        engine(&env, 200_000, 8_192, &settings, t0()).with_compactor(Arc::new(TemplateCompactor));
    let events = engine.compact(KEY, Some(6)).await.unwrap();
    assert_eq!(compactions(&events)[0].kind, "reactive", "{events:#?}");
    let history = rebuild_history(&load(&env.ws));
    let restored = history
        .iter()
        .find(|m| m.text().contains("The user's current request"))
        .unwrap_or_else(|| panic!("{history:#?}"));
    assert!(restored
        .text()
        .contains("Refactor the billing module; keep the public API unchanged."));

    // A request still in the tail is not repeated.
    let env = common::env().await;
    write_session(&env.ws, &chat_turns(30, 400));
    let engine = common::engine(&env, 200_000, 8_192, &settings, t0())
        .with_compactor(Arc::new(TemplateCompactor));
    engine.compact(KEY, Some(6)).await.unwrap();
    let history = rebuild_history(&load(&env.ws));
    assert!(!history
        .iter()
        .any(|m| m.text().contains("The user's current request")));
}
