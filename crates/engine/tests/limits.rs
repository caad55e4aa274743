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

/// A small window gets a bounded share of memory in its prompt: MEMORY.md
/// first, then the current facts, then the daily log's newest lines, each
/// cut at a line with a note naming the file; a large window shows all of
/// it. What was cut stays in the files.
#[tokio::test]
async fn memory_in_the_prompt_keeps_within_its_share_of_the_window() {
    let env = env().await;
    let now = chrono::DateTime::parse_from_rfc3339("2026-03-02T10:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let memory_md: String = (0..120)
        .map(|i| {
            format!("- Core fact number {i}: the user keeps project {i} notes in folder p{i}.\n")
        })
        .collect();
    let small = engine(&env, 2_048, 256, "", now);
    small.memory().write_memory_md(&memory_md).unwrap();
    let mut facts = mnemo_store::memory::facts::FactsFile::parse("");
    for i in 0..80 {
        facts.add(
            &format!("The user's locker {i} code is {}", 1000 + i),
            None,
            now,
            None,
        );
    }
    small.memory().write_facts(&facts).unwrap();
    for i in 0..60 {
        small
            .memory()
            .append_daily(&format!("Daily item {i} about the garden"), now, false)
            .unwrap();
    }

    let report = small.build_context_from_log(KEY, &[]).unwrap();
    let share = small.thresholds().budget / 4;
    let memory: usize = report
        .parts
        .iter()
        .filter(|p| p.name == "memory_md" || p.name == "daily_logs")
        .map(|p| p.tokens)
        .sum();
    // Give or take the notes of the parts that got no line (about 40
    // tokens each).
    assert!(
        memory <= share + 100,
        "{memory} tokens of memory, share {share}"
    );
    assert!(report.memory_truncated);
    // MEMORY.md is cut from its end and says so; the facts and the log get
    // what is left (here: nothing but the notes).
    assert!(
        report.system.contains("Core fact number 0:"),
        "{}",
        report.system
    );
    assert!(!report.system.contains("Core fact number 119:"));
    assert!(report
        .system
        .contains("more lines of MEMORY.md are not shown"));
    assert!(report
        .system
        .contains("more lines of memory/facts.md are not shown"));
    assert!(report
        .system
        .contains("earlier lines of memory/2026-03-02.md are not shown"));
    // Nothing was cut from the files themselves.
    let on_disk = std::fs::read_to_string(env.ws.root().join("MEMORY.md")).unwrap();
    assert!(on_disk.contains("Core fact number 119:"));

    // With room, the newest daily lines come before the older ones go.
    let mid = engine(&env, 2_048, 256, "prompt_memory_share = 1.0", now);
    std::fs::write(env.ws.root().join("MEMORY.md"), "- One core fact.\n").unwrap();
    let mut few = mnemo_store::memory::facts::FactsFile::parse("");
    few.add("The user's bike is blue", None, now, None);
    mid.memory().write_facts(&few).unwrap();
    let report = mid.build_context_from_log(KEY, &[]).unwrap();
    assert!(report.system.contains("bike is blue"), "{}", report.system);
    assert!(report.system.contains("Daily item 59 about the garden"));
    mid.memory().write_facts(&facts).unwrap();

    // A large window shows every fact and every daily line.
    let large = engine(&env, 200_000, 8_192, "", now);
    let report = large.build_context_from_log(KEY, &[]).unwrap();
    assert!(!report.memory_truncated);
    assert!(report.system.contains("locker 79 code is 1079"));
    assert!(report.system.contains("Daily item 0 about the garden"));
    assert!(!report.system.contains("are not shown"));

    let bad = Config::parse("[engine]\nprompt_memory_share = 0\n").unwrap();
    let err = Engine::new(&env.ws, &bad, model(&env.server, 2_048, 256))
        .err()
        .unwrap();
    assert!(err.to_string().contains("prompt_memory_share"), "{err}");
}
