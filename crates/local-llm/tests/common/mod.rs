//! The SmolLM2 fixture and the contracts every `ChatModel` keeps, written
//! one function per contract so a shared conformance suite can lift them.
#![allow(dead_code)]

use mnemo_core::Message;
use mnemo_llm::{ChatModel, ChatRequest, ErrorKind, ToolChoice, ToolSpec};
use mnemo_local_llm::{LocalChat, LocalOptions};
use serde_json::{json, Value};

/// SmolLM2-135M-Instruct with a small context, so overflow is cheap to reach.
pub fn smollm2(context_window: u32) -> LocalChat {
    LocalChat::load(
        &mnemo_test_support::smollm2_gguf(),
        &LocalOptions {
            name: "smollm2".into(),
            context_window,
            max_output: 64,
            seed: 7,
            prompt_cache: None,
        },
    )
    .unwrap()
}

/// The engine's consolidation tool, as it is offered.
pub fn save_memory_tool() -> ToolSpec {
    ToolSpec::new(
        "save_memory",
        "Save the consolidation result.",
        json!({
            "type": "object",
            "properties": {
                "history_entry": {"type": "string", "description": "A paragraph starting with [YYYY-MM-DD HH:MM]."},
                "memory_update": {"type": "string", "description": "The complete new MEMORY.md."}
            },
            "required": ["history_entry", "memory_update"]
        }),
    )
}

pub fn search_tool() -> ToolSpec {
    ToolSpec::new(
        "memory_search",
        "Search memory.",
        json!({"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}}, "required": ["query"]}),
    )
}

pub fn dialogue() -> Vec<Message> {
    vec![Message::user(
        "[2026-03-01 09:12] USER: I moved to Lisbon last week and I drink green tea, never coffee.\n\
         [2026-03-01 09:13] ASSISTANT: Noted: Lisbon, green tea.",
    )]
}

/// Contract: a plain request gets text, a known finish reason and usage.
pub async fn plain_answer_with_usage(model: &dyn ChatModel) {
    let req = ChatRequest::new(vec![Message::user("Say hello in one word.")]).with_max_tokens(16);
    let r = model.complete(req).await.unwrap();
    assert!(
        ["stop", "length"].contains(&r.finish_reason.as_str()),
        "{}",
        r.finish_reason
    );
    assert!(r.tool_calls().is_empty());
    assert!(r.usage.input_tokens > 5, "{:?}", r.usage);
    assert!(
        r.usage.output_tokens >= 1 && r.usage.output_tokens <= 16,
        "{:?}",
        r.usage
    );
}

/// Contract: a forced tool call comes back as that tool with arguments
/// that parse and hold the schema's required keys as strings.
pub async fn forced_call_holds_the_schema(model: &dyn ChatModel) -> Value {
    let req = ChatRequest::new(dialogue())
        .with_system("You consolidate conversations into memory.")
        .with_tools(vec![save_memory_tool(), search_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()))
        .with_max_tokens(400);
    let r = model.complete(req).await.unwrap();
    assert_eq!(r.finish_reason, "tool_calls");
    let calls = r.tool_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, "save_memory");
    let args = calls[0].function.arguments_value();
    assert!(args["history_entry"].is_string(), "{args}");
    assert!(args["memory_update"].is_string(), "{args}");
    assert_eq!(args.as_object().unwrap().len(), 2, "{args}");
    args
}

/// Contract: `Required` yields a call of one of the offered tools.
pub async fn required_choice_calls_an_offered_tool(model: &dyn ChatModel) {
    let req = ChatRequest::new(vec![Message::user("Where do I live? Search your memory.")])
        .with_tools(vec![save_memory_tool(), search_tool()])
        .with_tool_choice(ToolChoice::Required)
        .with_max_tokens(200);
    let r = model.complete(req).await.unwrap();
    let call = &r.tool_calls()[0];
    assert!(["save_memory", "memory_search"].contains(&call.function.name.as_str()));
    assert!(call.function.arguments_value().is_object());
}

/// Contract: a prompt beyond the context window is a context-overflow
/// error (the engine compacts), never a silently cut prompt.
pub async fn overlong_prompt_is_context_overflow(model: &dyn ChatModel) {
    let words = "memory ".repeat(model.info().context_window as usize * 2);
    let err = model
        .complete(ChatRequest::new(vec![Message::user(words)]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ContextOverflow, "{err}");
}
