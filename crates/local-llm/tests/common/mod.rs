//! The SmolLM2 fixture and the tools and dialogue the tests offer it (the
//! contracts every `ChatModel` keeps are mnemo-test-support's
//! `chat_contract_suite!`, run in `chat_contract.rs`).
#![allow(dead_code)]

use mnemo_core::Message;
use mnemo_llm::ToolSpec;
use mnemo_local_llm::{LocalChat, LocalOptions};
use serde_json::json;

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
