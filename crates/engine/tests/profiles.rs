//! Each `[memory] profile` does what its README row says, on every path:
//! consolidation off means off for `consolidate_now` (`mnemo consolidate`,
//! HTTP and MCP `consolidate`) and for `new_session` (`mnemo new`, `/new`,
//! HTTP `close`), which still writes its note.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::sync::Arc;

use common::*;
use mnemo_core::{Config, ErrorCode};
use mnemo_engine::{Engine, EngineEvent, Error};
use mnemo_test_support::Reply;
use serde_json::json;

/// An engine with `[memory] profile = PROFILE` and `[engine]` lines.
fn with_profile(env: &Env, profile: &str, engine_toml: &str) -> Engine {
    let config = Config::parse(&format!(
        "[engine]\n{engine_toml}\n[memory]\ntimezone = \"UTC\"\nprofile = \"{profile}\"\n"
    ))
    .unwrap();
    Engine::new(&env.ws, &config, model(&env.server, 100_000, 1_000))
        .unwrap()
        .with_clock(Arc::new(t0))
}

fn save_memory() -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] the user plans a trip", "memory_update": "- Plans a trip to Kyoto.\n"}),
    )
}

#[tokio::test]
async fn consolidation_off_refuses_consolidate_now_and_changes_nothing() {
    for profile in ["openclaw", "claude-code"] {
        let env = env().await;
        write_session(&env.ws, &chat_turns(4, 40));
        env.server.set_default(save_memory());
        let engine = with_profile(&env, profile, "");
        let err = engine.consolidate_now(KEY).await.unwrap_err();
        match &err {
            Error::ConsolidationOff {
                profile: p,
                by_profile,
            } => assert!(p == profile && *by_profile, "{err:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(err.code(), ErrorCode::Config);
        assert_eq!(err.code().exit_code(), 7);
        let text = err.to_string();
        assert!(
            text.contains(&format!("the `{profile}` profile does not consolidate"))
                && text.contains("[engine] consolidation_enabled = true"),
            "{text}"
        );
        assert_eq!(env.server.request_count(), 0, "no model call");
        assert_eq!(load(&env.ws).meta.last_consolidated, 0, "the cursor stays");
        assert_eq!(engine.memory().read_memory_md().unwrap(), "");
        assert_eq!(engine.memory().read_history().unwrap(), "");
    }
}

#[tokio::test]
async fn consolidation_turned_off_by_hand_says_which_key_did_it() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(4, 40));
    let engine = with_profile(&env, "mnemo", "consolidation_enabled = false");
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::ConsolidationOff {
                by_profile: false,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("`[engine] consolidation_enabled = false` (profile `mnemo`)"),
        "{err}"
    );
    assert_eq!(env.server.request_count(), 0);
}

#[tokio::test]
async fn a_profile_without_consolidation_consolidates_when_the_key_turns_it_on() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(4, 40));
    env.server.push(save_memory());
    let engine = with_profile(&env, "openclaw", "consolidation_enabled = true");
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(
        matches!(&events[..], [EngineEvent::Consolidated(r)] if r.from == 0 && !r.raw),
        "{events:#?}"
    );
    assert_eq!(
        engine.memory().read_memory_md().unwrap(),
        "- Plans a trip to Kyoto.\n"
    );
}

#[tokio::test]
async fn new_session_writes_its_note_without_consolidating_when_off() {
    let env = env().await;
    let msgs = chat_turns(4, 40);
    write_session(&env.ws, &msgs);
    // The only model call is the note's title.
    env.server.push(Reply::text("Trip Planning"));
    let engine = with_profile(&env, "openclaw", "");
    let report = engine.new_session(KEY).await.unwrap();
    assert!(report.events.is_empty(), "{:#?}", report.events);
    assert_eq!(
        report.note.as_deref(),
        Some("memory/2026-03-01-trip-planning.md")
    );
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].body.get("tools").is_none(), "no save_memory call");
    assert_eq!(engine.memory().read_memory_md().unwrap(), "");
    assert_eq!(engine.memory().read_history().unwrap(), "");
    // The conversation ends as with consolidation: the next turn starts
    // afresh, and the log keeps every message.
    let loaded = load(&env.ws);
    assert_eq!(loaded.meta.last_consolidated, msgs.len());
    assert_eq!(loaded.messages.len(), msgs.len());
}
