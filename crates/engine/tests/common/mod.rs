//! Shared helpers of the engine's integration tests: a workspace in a temp
//! dir, an engine talking to the loopback model server, session builders
//! and the prompt-shape renderer used by the snapshots.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use mnemo_core::{Config, FunctionCall, Message, ToolCall, Workspace};
use mnemo_engine::Engine;
use mnemo_llm::{ChatModel, OpenAiChat, ProviderConfig};
use mnemo_store::{SessionOptions, SessionStore};
use mnemo_test_support::ScriptedServer;
use serde_json::{Map, Value};

pub const KEY: &str = "cli:test";

pub struct Env {
    pub dir: tempfile::TempDir,
    pub ws: Workspace,
    pub server: ScriptedServer,
}

pub async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let server = ScriptedServer::start().await;
    Env { dir, ws, server }
}

pub fn model(server: &ScriptedServer, window: u32, max_output: u32) -> Arc<dyn ChatModel> {
    let mut cfg = ProviderConfig::openai(server.openai_base(), "gpt-4o-mini");
    cfg.context_window = window;
    cfg.max_output = max_output;
    cfg.max_retries = 0;
    cfg.timeout_secs = 20.0;
    Arc::new(OpenAiChat::new(&cfg).unwrap())
}

/// An engine with `[engine]` settings given as TOML lines and a fixed clock.
pub fn engine(
    env: &Env,
    window: u32,
    max_output: u32,
    engine_toml: &str,
    now: DateTime<Utc>,
) -> Engine {
    let config = Config::parse(&format!(
        "[engine]\n{engine_toml}\n[memory]\ntimezone = \"UTC\"\n"
    ))
    .unwrap();
    Engine::new(&env.ws, &config, model(&env.server, window, max_output))
        .unwrap()
        .with_clock(Arc::new(move || now))
        .with_tools(memory_tools())
}

/// The memory tools a turn offers, as mnemo's service declares them (the
/// engine runs whatever its caller declares; these tests run them with
/// their own executors).
pub fn memory_tools() -> Vec<mnemo_llm::ToolSpec> {
    ["memory_search", "memory_get", "memory_write"]
        .into_iter()
        .map(|name| {
            mnemo_llm::ToolSpec::new(
                name,
                format!("{name} (test declaration)"),
                serde_json::json!({"type": "object"}),
            )
        })
        .collect()
}

pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub fn ts(minutes: i64) -> String {
    (t0() + Duration::minutes(minutes)).to_rfc3339()
}

pub fn call(id: &str, tool: &str, args: &str) -> Message {
    let mut m = Message::assistant("");
    m.content = None;
    m.tool_calls = Some(vec![ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall {
            name: tool.into(),
            arguments: args.into(),
        },
        extra: Map::new(),
    }]);
    m
}

/// `turns` plain turns of a user message and an answer, each about
/// `chars` characters.
pub fn chat_turns(turns: usize, chars: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for i in 0..turns {
        out.push(
            Message::user(format!("question {i}: {}", "q".repeat(chars)))
                .with_timestamp(ts(i as i64 * 2)),
        );
        out.push(
            Message::assistant(format!("answer {i}: {}", "a".repeat(chars)))
                .with_timestamp(ts(i as i64 * 2 + 1)),
        );
    }
    out
}

/// Turns with tool activity: a read, a failing exec, an empty grep, an
/// answer.
pub fn tool_turns(turns: usize, chars: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for i in 0..turns {
        let t = i as i64 * 2;
        out.push(Message::user(format!("task {i}: look at file{i}.txt")).with_timestamp(ts(t)));
        out.push(
            call(
                &format!("r{i}"),
                "read",
                &format!(r#"{{"path":"file{i}.txt"}}"#),
            )
            .with_timestamp(ts(t)),
        );
        out.push(
            Message::tool_result(
                format!("r{i}"),
                "read",
                format!("contents {i} {}", "c".repeat(chars)),
            )
            .with_timestamp(ts(t)),
        );
        out.push(call(&format!("e{i}"), "exec", r#"{"cmd":"make"}"#).with_timestamp(ts(t)));
        out.push(
            Message::tool_result(format!("e{i}"), "exec", "Error: make failed")
                .with_timestamp(ts(t)),
        );
        out.push(call(&format!("g{i}"), "grep", r#"{"q":"TODO"}"#).with_timestamp(ts(t)));
        out.push(Message::tool_result(format!("g{i}"), "grep", "").with_timestamp(ts(t)));
        out.push(
            Message::assistant(format!("file{i}.txt is fine {}", "a".repeat(chars / 4)))
                .with_timestamp(ts(t + 1)),
        );
    }
    out
}

pub fn write_session(ws: &Workspace, messages: &[Message]) {
    let store = SessionStore::new(ws, SessionOptions::default());
    let mut log = store.open(KEY).unwrap();
    log.append(messages).unwrap();
}

pub fn load(ws: &Workspace) -> mnemo_store::LoadedSession {
    SessionStore::new(ws, SessionOptions::default())
        .load(KEY)
        .unwrap()
}

fn placeholder(role: &str, m: &Value) -> String {
    let text = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let known: &[(&str, &str)] = &[
        (
            "You are the memory consolidation agent",
            "<CONSOLIDATION_PROMPT>",
        ),
        (
            "## Current long-term memory",
            "<MEMORY_MD><SESSION_EXCERPT>",
        ),
        (
            "You turn a conversation into memory facts",
            "<FACTS_EXTRACT_PROMPT>",
        ),
        ("## Conversation (", "<NUMBERED_MESSAGES>"),
        ("Does the new fact make", "<JUDGE_QUESTION>"),
        ("Does the user ask to forget", "<JUDGE_QUESTION>"),
        ("Pre-compaction memory flush", "<FLUSH_PROMPT><MEMORY_MD>"),
        ("[memory flush]", "<FLUSH_USER>"),
        ("You are summarising", "<SUMMARY_PROMPT>"),
        ("<transcript>", "<TRANSCRIPT>"),
        ("Give a 1-2 word", "<SLUG_PROMPT><CONVERSATION>"),
        ("You pick memory files", "<RECALL_PROMPT>"),
        ("## Manifest", "<MANIFEST><USER_MESSAGE>"),
        (
            "# mnemo agent",
            "<IDENTITY><MEMORY_MD><DAILY_LOGS><SELECTED_MEMORIES>",
        ),
        ("[Conversation summary", "<SUMMARY>"),
        ("[Context restored", "<RESTORED_CONTEXT>"),
    ];
    for (prefix, name) in known {
        if text.starts_with(prefix) {
            return name.to_string();
        }
    }
    if m.get("tool_calls").is_some() {
        return "<TOOL_CALL>".into();
    }
    if role == "tool" {
        return "<TOOL_RESULT>".into();
    }
    "<HISTORY>".into()
}

/// The shape of an OpenAI chat request: one line per message
/// (`NN:role:<PLACEHOLDER>`, runs of history folded into `NN-MM`), then the
/// tools and the tool choice.
pub fn shape(body: &Value) -> String {
    let mut lines: Vec<(usize, usize, String)> = Vec::new();
    for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("?");
        let p = placeholder(role, m);
        let label = format!("{role}:{p}");
        let history = matches!(p.as_str(), "<HISTORY>" | "<TOOL_CALL>" | "<TOOL_RESULT>");
        match lines.last_mut() {
            Some((_, end, last)) if history && last.starts_with("history") => *end = i,
            _ if history => lines.push((i, i, "history".into())),
            _ => lines.push((i, i, label)),
        }
    }
    let mut out: Vec<String> = lines
        .into_iter()
        .map(|(a, b, l)| {
            if a == b {
                format!("{a:02}:{l}")
            } else {
                format!("{a:02}-{b:02}:{l}")
            }
        })
        .collect();
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        let names: Vec<&str> = tools
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        out.push(format!("tools:{}", names.join(",")));
    }
    if let Some(choice) = body.get("tool_choice") {
        out.push(format!("tool_choice:{choice}"));
    }
    out.join("\n")
}

/// The system text of a request.
pub fn system_text(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_string()
}
