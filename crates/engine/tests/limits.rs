//! A model that answers without end: the answer is read up to the
//! provider's `max_response_bytes` and refused with an error that says
//! which setting to change, and the turn keeps what it had logged (the
//! user's message, the tool calls and their results).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use mnemo_core::{Config, Message};
use mnemo_engine::{Engine, ToolExecutor, TurnOptions};
use mnemo_llm::{BoxFuture, OpenAiChat, ProviderConfig};
use mnemo_test_support::Reply;
use serde_json::{json, Value};

struct Echo;

impl ToolExecutor for Echo {
    fn execute<'a>(
        &'a self,
        _name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move { Ok(arguments.to_string()) })
    }
}

#[tokio::test]
async fn an_endless_answer_is_refused_and_the_turn_keeps_its_log() {
    let env = env().await;
    env.server.push(Reply::tool_call(
        "memory_search",
        json!({"query": "deploy key"}),
    ));
    // Over the session log's 16 MiB line limit: before the cap, this answer
    // was read whole, then refused by the log and lost with a log error.
    env.server.push(Reply::text("x".repeat(17 * 1024 * 1024)));
    env.server.push(Reply::text("short answer"));
    let mut cfg = ProviderConfig::openai(env.server.openai_base(), "gpt-4o-mini");
    cfg.max_retries = 0;
    cfg.timeout_secs = 60.0;
    let model = Arc::new(OpenAiChat::new(&cfg).unwrap());
    let config = Config::parse("[memory]\ntimezone = \"UTC\"\n").unwrap();
    let engine = Engine::new(&env.ws, &config, model)
        .unwrap()
        .with_clock(Arc::new(t0));
    let err = engine
        .run_turn(
            KEY,
            "where is the deploy key?",
            &Echo,
            &TurnOptions::default(),
            &|_| {},
        )
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("max_response_bytes"), "{text}");
    assert!(
        text.contains(&mnemo_llm::DEFAULT_MAX_RESPONSE_BYTES.to_string()),
        "{text}"
    );
    let loaded = load(&env.ws);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let kinds: Vec<String> = loaded
        .messages
        .iter()
        .map(|m: &Message| {
            if m.tool_calls.is_some() {
                "call".to_string()
            } else {
                m.role.as_str().to_string()
            }
        })
        .collect();
    assert_eq!(kinds, ["user", "call", "tool"], "what the turn did is kept");
    // The session goes on.
    let out = engine
        .run_turn(KEY, "and now?", &Echo, &TurnOptions::default(), &|_| {})
        .await
        .unwrap();
    assert_eq!(out.answer, "short answer");
}
