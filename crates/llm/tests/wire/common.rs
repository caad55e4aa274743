//! Shared fixtures: provider configurations pointing at the scripted server
//! and a representative conversation with tool calls.

use mnemo_core::{FunctionCall, Message, Role, ToolCall};
use mnemo_llm::{ChatRequest, ProviderConfig, ToolChoice, ToolSpec};
use serde_json::{json, Map, Value};

/// Fast retries so tests do not sleep.
pub fn openai_config(base: String) -> ProviderConfig {
    let mut c = ProviderConfig::openai(base, "test-model");
    c.retry_backoff_ms = 1;
    c.max_retries = 3;
    c.timeout_secs = 10.0;
    c
}

pub fn anthropic_config(base: String) -> ProviderConfig {
    let mut c = ProviderConfig::anthropic(base, "claude-test");
    c.retry_backoff_ms = 1;
    c.max_retries = 3;
    c.timeout_secs = 10.0;
    c
}

pub fn save_memory_tool() -> ToolSpec {
    ToolSpec::new(
        "save_memory",
        "Save the memory consolidation result to persistent storage.",
        json!({
            "type": "object",
            "properties": {
                "history_entry": {"type": "string", "description": "A paragraph summarising key events."},
                "memory_update": {"type": "string", "description": "The full updated long-term memory."}
            },
            "required": ["history_entry", "memory_update"]
        }),
    )
}

pub fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall {
            name: name.into(),
            arguments: Value::String(args.to_string()),
        },
        extra: Map::new(),
    }
}

pub fn assistant_calls(calls: Vec<ToolCall>) -> Message {
    Message {
        role: Role::Assistant,
        content: None,
        tool_calls: Some(calls),
        tool_call_id: None,
        name: None,
        timestamp: Some("2026-03-01T10:00:01".into()),
        extra: Map::new(),
    }
}

/// A conversation with a system message, two parallel tool calls and their
/// results, and a closing user turn; a forced tool and an output cap.
pub fn sample_request() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("Extra instructions from the workspace."),
        Message::user("I moved to Lisbon last week.").with_timestamp("2026-03-01T10:00:00"),
        assistant_calls(vec![
            call("call_a", "memory_search", json!({"query": "home city"})),
            call("call_b", "memory_get", json!({"path": "MEMORY.md"})),
        ]),
        Message::tool_result("call_a", "memory_search", "No results."),
        Message::tool_result("call_b", "memory_get", "# Memory\n- Lives in Porto"),
        Message::user("Please remember it."),
    ])
    .with_system("You are a memory consolidation agent.")
    .with_tools(vec![save_memory_tool()])
    .with_tool_choice(ToolChoice::Function("save_memory".into()))
    .with_max_tokens(512)
}
