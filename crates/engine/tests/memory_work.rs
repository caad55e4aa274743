//! Memory work off the turn's path, against the loopback model server: a
//! turn in the background mode answers before consolidation runs, the
//! consolidation then runs once (the cursor moves), the next turn stops
//! memory work still running instead of waiting behind it, the user
//! message is in the log whatever happens to the preparation, and recall
//! by search asks no model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use mnemo_core::Role;
use mnemo_engine::lock::SessionLock;
use mnemo_engine::{
    AgentStep, Engine, EngineEvent, MemoryWorkMode, ToolExecutor, TurnOptions, WorkState,
};
use mnemo_llm::BoxFuture;
use mnemo_store::{FrontMatter, MemoryType, SessionOptions, SessionStore};
use mnemo_test_support::{RecordedRequest, Reply};
use serde_json::{json, Value};

/// Tools that are never called in these turns.
struct NoTools;

impl ToolExecutor for NoTools {
    fn execute<'a>(
        &'a self,
        name: &'a str,
        _: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<String, String>> {
        Box::pin(async move { Err(format!("no tool {name} here")) })
    }
}

fn is_consolidation(req: &RecordedRequest) -> bool {
    req.body["tool_choice"]["function"]["name"] == "save_memory"
}

/// Consolidation is forced to call save_memory; anything else is a turn.
fn answer_everything(env: &Env, delay_first_consolidation: Option<Duration>) {
    let rounds = Arc::new(AtomicUsize::new(0));
    env.server.respond_with(move |req| {
        if is_consolidation(req) {
            let k = rounds.fetch_add(1, Ordering::SeqCst) + 1;
            let reply = Reply::tool_call(
                "save_memory",
                json!({"history_entry": format!("[2026-03-01 10:00] round {k}"),
                       "memory_update": "# Memory\n\n- The user asks many questions.\n"}),
            );
            match delay_first_consolidation {
                Some(d) if k == 1 => Reply::delay(d, reply),
                _ => reply,
            }
        } else {
            Reply::text("Here is my answer.")
        }
    });
}

/// A session over the consolidation target of a 100,000-token window
/// (about 60,000 tokens against 48,988), under the flush's and
/// autocompact's thresholds.
fn big_engine(env: &Env, settings: &str) -> Arc<Engine> {
    write_session(&env.ws, &chat_turns(60, 2_000));
    Arc::new(engine(
        env,
        100_000,
        1_000,
        &format!("exact_tokens = false\n{settings}"),
        t0(),
    ))
}

fn no_recall() -> TurnOptions {
    TurnOptions {
        recall: false,
        ..TurnOptions::default()
    }
}

fn cursor(env: &Env) -> usize {
    load(&env.ws).meta.last_consolidated
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_turn_answers_first_then_consolidates_once() {
    let env = env().await;
    answer_everything(&env, None);
    let engine = big_engine(&env, "memory_work = \"background\"");
    assert_eq!(engine.memory_work_mode(), MemoryWorkMode::Background);

    let turn = engine
        .run_turn(KEY, "what next?", &NoTools, &no_recall(), &|_| {})
        .await
        .unwrap();
    assert_eq!(turn.answer, "Here is my answer.");
    assert_eq!(turn.memory_work, MemoryWorkMode::Background);
    // The answer came first: no consolidation yet, the cursor where it was.
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 1, "only the answer was asked for");
    assert!(!is_consolidation(&reqs[0]));
    assert!(
        !turn
            .events
            .iter()
            .any(|e| matches!(e, EngineEvent::Consolidated(_))),
        "{:#?}",
        turn.events
    );
    assert_eq!(cursor(&env), 0);

    // Then the memory work, once: a second start while it runs is refused.
    assert!(engine.spawn_memory_work(KEY).unwrap());
    assert!(!engine.spawn_memory_work(KEY).unwrap());
    engine.wait_memory_work(KEY).await;
    let report = engine.memory_work_status(KEY).unwrap();
    assert_eq!(report.state, WorkState::Done, "{report:#?}");
    let rounds: Vec<_> = report
        .events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Consolidated(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rounds.len(), 1, "{report:#?}");
    assert_eq!(rounds[0].from, 0);
    let moved = cursor(&env);
    assert_eq!(moved, rounds[0].to);
    assert!(moved > 0);
    // The round ends before a user turn, and never takes the new exchange.
    let log = load(&env.ws);
    assert_eq!(log.messages[moved].role, Role::User);
    assert!(moved < log.messages.len() - 2);
    let consolidations = env
        .server
        .requests()
        .iter()
        .filter(|r| is_consolidation(r))
        .count();
    assert_eq!(consolidations, 1);
    // Shown once to whoever takes it.
    assert!(engine.take_memory_work_report(KEY).is_some());
    assert!(engine.take_memory_work_report(KEY).is_none());

    // Nothing is left to do: running it again asks the model nothing.
    let events = engine.memory_work(KEY).await.unwrap();
    assert!(events.is_empty(), "{events:#?}");
    assert_eq!(env.server.request_count(), 2);
    assert_eq!(cursor(&env), moved);
    let history = engine.memory().read_history().unwrap();
    assert_eq!(history.matches("round 1").count(), 1, "{history}");
    assert!(!history.contains("round 2"), "{history}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inline_memory_work_still_runs_before_the_answer() {
    let env = env().await;
    answer_everything(&env, None);
    let engine = big_engine(&env, "memory_work = \"inline\"");
    let turn = engine
        .run_turn(KEY, "what next?", &NoTools, &no_recall(), &|_| {})
        .await
        .unwrap();
    assert_eq!(turn.memory_work, MemoryWorkMode::Inline);
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(is_consolidation(&reqs[0]) && !is_consolidation(&reqs[1]));
    assert!(cursor(&env) > 0);
    // The new message was logged first, and it is not consolidated before
    // its own answer: it stays the last message before the answer.
    let log = load(&env.ws);
    let n = log.messages.len();
    assert_eq!(log.messages[n - 2].text(), "what next?");
    assert_eq!(log.messages[n - 1].text(), "Here is my answer.");
    assert!(cursor(&env) < n - 2);
    // The model saw the history end with it.
    let sent = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(sent.last().unwrap()["content"], "what next?");
    assert_eq!(
        sent.iter().filter(|m| m["content"] == "what next?").count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_turn_stops_running_memory_work_and_it_runs_again_after() {
    let env = env().await;
    // The first consolidation would take 30 s: the next turn must not wait.
    answer_everything(&env, Some(Duration::from_secs(30)));
    let engine = big_engine(&env, "memory_work = \"background\"");
    engine
        .run_turn(KEY, "first question", &NoTools, &no_recall(), &|_| {})
        .await
        .unwrap();
    assert!(engine.spawn_memory_work(KEY).unwrap());
    wait_until("the consolidation request", || {
        env.server.requests().iter().any(is_consolidation)
    })
    .await;
    assert_eq!(
        engine.memory_work_status(KEY).unwrap().state,
        WorkState::Running
    );

    let stopped = Mutex::new(None);
    let started = Instant::now();
    let turn = engine
        .run_turn(KEY, "second question", &NoTools, &no_recall(), &|s| {
            if let AgentStep::MemoryWorkStopped(r) = s {
                *stopped.lock().unwrap() = Some(r.clone());
            }
        })
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "it waited");
    assert_eq!(turn.answer, "Here is my answer.");
    let stopped = stopped.into_inner().unwrap().expect("reported as stopped");
    assert_eq!(stopped.state, WorkState::Stopped);
    assert!(
        stopped
            .doing
            .as_deref()
            .unwrap_or("")
            .starts_with("consolidating messages 0.."),
        "{stopped:#?}"
    );
    // The stopped round wrote nothing.
    assert_eq!(cursor(&env), 0);
    assert!(!engine.memory().read_history().unwrap().contains("round"));

    // Started again after the answer, it finishes: one round, written once.
    assert!(engine.spawn_memory_work(KEY).unwrap());
    engine.wait_memory_work(KEY).await;
    let report = engine.memory_work_status(KEY).unwrap();
    assert_eq!(report.state, WorkState::Done, "{report:#?}");
    assert!(cursor(&env) > 0);
    let history = engine.memory().read_history().unwrap();
    assert_eq!(
        history.matches("[consolidated from").count(),
        1,
        "{history}"
    );
    let log = load(&env.ws);
    let users: Vec<String> = log
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.text())
        .collect();
    assert_eq!(
        users[users.len() - 2..],
        ["first question", "second question"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_message_is_logged_when_the_preparation_fails_or_is_cancelled() {
    let env = env().await;
    answer_everything(&env, Some(Duration::from_secs(30)));
    let engine = big_engine(&env, "memory_work = \"inline\"\nlock_wait_secs = 0");
    let before = load(&env.ws).messages.len();

    // Another process holds the session: the preparation fails.
    let storage = SessionStore::new(&env.ws, SessionOptions::default())
        .storage()
        .clone();
    let held = SessionLock::acquire(&storage, KEY, Duration::ZERO)
        .await
        .unwrap();
    let err = engine
        .run_turn(KEY, "are you busy?", &NoTools, &no_recall(), &|_| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("busy") || err.to_string().contains("lock"),
        "{err}"
    );
    drop(held);
    let log = load(&env.ws);
    assert_eq!(log.messages.len(), before + 1);
    assert_eq!(log.messages.last().unwrap().text(), "are you busy?");

    // The caller gives up during a slow preparation (Ctrl-C): the message
    // stays too.
    let options = no_recall();
    let run = engine.run_turn(KEY, "please remember the Alps", &NoTools, &options, &|_| {});
    assert!(tokio::time::timeout(Duration::from_millis(500), run)
        .await
        .is_err());
    let log = load(&env.ws);
    assert_eq!(log.messages.len(), before + 2);
    assert_eq!(
        log.messages.last().unwrap().text(),
        "please remember the Alps"
    );
    assert_eq!(cursor(&env), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_by_search_asks_no_model() {
    let env = env().await;
    mnemo_store::MemoryStore::new(&env.ws, Default::default())
        .save_typed(
            FrontMatter {
                name: "Coffee".into(),
                description: "how the user takes coffee".into(),
                kind: MemoryType::User,
            },
            "Black.",
            mnemo_store::SaveMode::Create,
        )
        .unwrap();
    write_session(&env.ws, &chat_turns(2, 10));
    env.server.set_default(Reply::text("Black, as always."));
    let engine = engine(&env, 100_000, 1_000, "recall_mode = \"search\"", t0());
    assert!(!engine.recall_asks_model());
    let turn = engine
        .run_turn(KEY, "coffee?", &NoTools, &TurnOptions::default(), &|_| {})
        .await
        .unwrap();
    assert_eq!(turn.answer, "Black, as always.");
    assert!(!turn.recall.asked_model && !turn.recall.timed_out);
    // One request: the answer. No side query went to the model.
    assert_eq!(env.server.request_count(), 1);

    // With "model" the side query is asked as before.
    let engine = common::engine(&env, 100_000, 1_000, "recall_mode = \"model\"", t0());
    env.server.clear_requests();
    let out = engine.select_memories(KEY, "coffee?").await;
    assert!(out.asked_model, "{out:?}");
    assert_eq!(env.server.request_count(), 1);
}

#[tokio::test]
async fn bad_memory_work_and_recall_mode_settings_are_refused() {
    let env = env().await;
    for (toml, word) in [
        ("memory_work = \"later\"", "memory_work"),
        ("recall_mode = \"guess\"", "recall_mode"),
    ] {
        let config = mnemo_core::Config::parse(&format!("[engine]\n{toml}\n")).unwrap();
        let err = Engine::new(&env.ws, &config, model(&env.server, 8_000, 1_000)).unwrap_err();
        assert!(err.to_string().contains(word), "{err}");
    }
}
