//! The agent loop (`Engine::run_turn`) against the loopback model server:
//! tool calls executed and the model called again from the log, what the
//! log records, tool errors sent back to the model, the iteration bound and
//! a failing model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use common::*;
use mnemo_core::{Message, Role};
use mnemo_engine::{AgentStep, Engine, ToolExecutor, TurnOptions};
use mnemo_llm::BoxFuture;
use mnemo_store::MemoryStore;
use mnemo_test_support::Reply;
use serde_json::{json, Value};

/// The memory tools on the real Markdown store: `memory_write` appends to
/// the daily log of `now`, `memory_get` reads a memory file; anything else
/// is refused with a message, as a real executor would.
struct StoreTools {
    store: MemoryStore,
    root: std::path::PathBuf,
    now: DateTime<Utc>,
}

impl ToolExecutor for StoreTools {
    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            match name {
                "memory_write" => {
                    let text = arguments["text"]
                        .as_str()
                        .ok_or("`text` is missing: give the fact to save")?;
                    let out = self
                        .store
                        .append_daily(text, self.now, true)
                        .map_err(|e| e.to_string())?;
                    Ok(json!({"path": out.path, "written": out.written}).to_string())
                }
                "memory_get" => {
                    let path = arguments["path"].as_str().ok_or("`path` is missing")?;
                    std::fs::read_to_string(self.root.join(path))
                        .map_err(|e| format!("{path}: {e}"))
                }
                other => Err(format!("unknown tool {other:?}")),
            }
        })
    }
}

fn tools(env: &Env) -> StoreTools {
    StoreTools {
        store: MemoryStore::new(&env.ws, Default::default()),
        root: env.dir.path().to_path_buf(),
        now: t0(),
    }
}

fn agent_engine(env: &Env) -> Engine {
    engine(env, 128_000, 4_096, "", t0())
}

fn roles(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            if m.tool_calls.is_some() {
                "assistant(tool_calls)".to_string()
            } else {
                m.role.as_str().to_string()
            }
        })
        .collect()
}

#[tokio::test]
async fn a_tool_call_runs_and_the_model_continues_from_the_log() {
    let env = env().await;
    write_session(
        &env.ws,
        &[
            Message::user("hello").with_timestamp(ts(0)),
            Message::assistant("Hi!").with_timestamp(ts(1)),
        ],
    );
    env.server.push(Reply::tool_call(
        "memory_write",
        json!({"text": "The user's cat is named Miso."}),
    ));
    env.server.push(Reply::text("Saved: your cat is Miso."));
    let engine = agent_engine(&env);
    let steps = Mutex::new(Vec::new());
    let observe = |s: AgentStep<'_>| {
        let label = match s {
            AgentStep::MemoryWorkStopped(_) => "memory work stopped".to_string(),
            AgentStep::Prepared(_) => "prepared".to_string(),
            AgentStep::Recalled(_) => "recalled".to_string(),
            AgentStep::Engine(_) => "engine".to_string(),
            AgentStep::Said(text) => format!("said {text}"),
            AgentStep::ToolStarted { name, .. } => format!("start {name}"),
            AgentStep::ToolFinished(r) => format!("done {} error={}", r.name, r.is_error),
        };
        steps.lock().unwrap().push(label);
    };
    let turn = engine
        .run_turn(
            KEY,
            "remember that my cat is Miso",
            &tools(&env),
            &TurnOptions::default(),
            &observe,
        )
        .await
        .unwrap();
    assert_eq!(turn.answer, "Saved: your cat is Miso.");
    assert_eq!(turn.iterations, 2);
    assert!(!turn.hit_iteration_limit);
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].name, "memory_write");
    assert!(!turn.tool_calls[0].is_error, "{:?}", turn.tool_calls[0]);
    assert_eq!(
        steps.into_inner().unwrap(),
        [
            "prepared",
            "recalled",
            "start memory_write",
            "done memory_write error=false"
        ]
    );

    // The fact landed in the daily log of the engine's day.
    let daily = std::fs::read_to_string(env.dir.path().join("memory/2026-03-01.md")).unwrap();
    assert!(daily.contains("The user's cat is named Miso."), "{daily}");

    // The log holds the whole turn, in order.
    let loaded = load(&env.ws);
    assert_eq!(
        roles(&loaded.messages),
        [
            "user",
            "assistant",
            "user",
            "assistant(tool_calls)",
            "tool",
            "assistant"
        ]
    );
    let call = &loaded.messages[3].tool_calls.as_ref().unwrap()[0];
    assert_eq!(call.function.name, "memory_write");
    assert_eq!(
        loaded.messages[4].tool_call_id.as_deref(),
        Some(call.id.as_str())
    );
    assert!(loaded.messages[4].text().contains("memory/2026-03-01.md"));
    assert_eq!(loaded.messages[5].text(), "Saved: your cat is Miso.");

    // The second request is the log alone: the user message once, then the
    // call and its result; no new user message after the result.
    let reqs = env.server.requests();
    assert_eq!(reqs.len(), 2);
    let second = &reqs[1].body;
    let msgs = second["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], json!(call.id));
    let users = msgs
        .iter()
        .filter(|m| m["content"] == "remember that my cat is Miso")
        .count();
    assert_eq!(users, 1, "{second}");
    insta::assert_snapshot!("continuation_request", shape(second));
}

#[tokio::test]
async fn tool_errors_go_back_to_the_model_and_the_turn_goes_on() {
    let env = env().await;
    env.server.push(Reply::tool_calls(vec![
        ("exec".to_string(), json!({"cmd": "rm -rf /"})),
        ("memory_get".to_string(), json!({"path": "memory/none.md"})),
    ]));
    env.server.push(Reply::text("I could not read it."));
    let engine = agent_engine(&env);
    let turn = engine
        .run_turn(
            KEY,
            "read my notes",
            &tools(&env),
            &TurnOptions::default(),
            &|_| {},
        )
        .await
        .unwrap();
    assert_eq!(turn.answer, "I could not read it.");
    assert_eq!(turn.tool_calls.len(), 2);
    assert!(turn.tool_calls.iter().all(|c| c.is_error));
    assert!(turn.tool_calls[0].result.starts_with("Error: unknown tool"));
    let loaded = load(&env.ws);
    let results: Vec<&Message> = loaded
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|m| m.text().starts_with("Error:")));
    // Both results went to the model in the second request.
    let second = &env.server.requests()[1].body;
    let tool_msgs = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(tool_msgs, 2);
}

#[tokio::test]
async fn the_iteration_bound_stops_a_turn_that_never_answers() {
    let env = env().await;
    env.server
        .set_default(Reply::tool_call("memory_get", json!({"path": "MEMORY.md"})));
    std::fs::write(env.dir.path().join("MEMORY.md"), "- likes tea\n").unwrap();
    let engine = agent_engine(&env);
    let opts = TurnOptions {
        max_iterations: 3,
        recall: false,
    };
    let turn = engine
        .run_turn(KEY, "loop forever", &tools(&env), &opts, &|_| {})
        .await
        .unwrap();
    assert!(turn.hit_iteration_limit);
    assert_eq!(turn.iterations, 3);
    assert_eq!(turn.tool_calls.len(), 3);
    assert_eq!(env.server.requests().len(), 3);
    assert_eq!(turn.answer, mnemo_engine::iteration_limit_notice(3));
    // The log ends with the notice, so the next turn starts after an answer.
    let loaded = load(&env.ws);
    let last = loaded.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.text(), turn.answer);
    assert_eq!(
        roles(&loaded.messages).len(),
        1 + 3 * 2 + 1,
        "user, 3 × (call, result), notice"
    );
}

#[tokio::test]
async fn a_failing_model_keeps_the_log_and_reports_the_error() {
    let env = env().await;
    write_session(
        &env.ws,
        &[
            Message::user("hello").with_timestamp(ts(0)),
            Message::assistant("Hi!").with_timestamp(ts(1)),
        ],
    );
    env.server.push(Reply::error(
        500,
        json!({"error": {"message": "upstream exploded"}}),
    ));
    let engine = agent_engine(&env);
    let err = engine
        .run_turn(
            KEY,
            "are you there?",
            &tools(&env),
            &TurnOptions::default(),
            &|_| {},
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("upstream exploded"), "{err}");
    let loaded = load(&env.ws);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(roles(&loaded.messages), ["user", "assistant", "user"]);
    assert_eq!(loaded.messages[2].text(), "are you there?");
}

#[tokio::test]
async fn empty_messages_and_a_zero_bound_are_refused() {
    let env = env().await;
    let engine = agent_engine(&env);
    let t = tools(&env);
    let err = engine
        .run_turn(KEY, "  ", &t, &TurnOptions::default(), &|_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let opts = TurnOptions {
        max_iterations: 0,
        recall: true,
    };
    let err = engine
        .run_turn(KEY, "hi", &t, &opts, &|_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
    assert!(env.server.requests().is_empty());
}

#[tokio::test]
async fn the_log_only_context_has_no_extra_user_message() {
    let env = env().await;
    write_session(
        &env.ws,
        &[
            Message::user("hello").with_timestamp(ts(0)),
            Message::assistant("Hi!").with_timestamp(ts(1)),
            Message::user("and now?").with_timestamp(ts(2)),
        ],
    );
    let engine = agent_engine(&env);
    let from_log = engine.build_context_from_log(KEY, &[]).unwrap();
    assert_eq!(from_log.messages.len(), 3);
    assert_eq!(from_log.messages[2].text(), "and now?");
    assert!(from_log.parts.iter().all(|p| p.name != "user_message"));
    let with = engine.build_context_with(KEY, "next", &[]).unwrap();
    assert_eq!(with.messages.len(), 4);
    assert_eq!(with.parts.last().unwrap().name, "user_message");
}
