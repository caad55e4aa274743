//! The `ChatModel` behaviour contracts: what the engine relies on from
//! every chat model, in process or over a wire. A plain request gets text,
//! a finish reason and the usage; a forced tool call comes back as that
//! tool with arguments that hold its schema; `Required` calls one of the
//! offered tools; a prompt beyond the context window is
//! [`ErrorKind::ContextOverflow`] (the engine compacts), never a cut
//! prompt or another error.
//!
//! A model over HTTP runs the contracts against the [`ScriptedServer`],
//! which answers each in the provider's real wire shape (its usage
//! fields, a tool call's JSON arguments, its context-length error); the
//! scenario then checks the client's mapping exactly (the numbers carried,
//! the arguments parsed, the error's kind, status and words) and what the
//! client sent (the forced choice, the tool's schema). A model in process
//! answers for itself, and the scenario checks what holds for any answer.
//! How clients over HTTP retry and give up (429, 5xx, timeouts, 401, a
//! refused connection) is the [`chat`](super::chat) suite's.
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.

use mnemo_core::Message;
use mnemo_llm::{ChatModel, ChatRequest, ChatResponse, ErrorKind, LlmError, ToolChoice, ToolSpec};
use serde_json::{json, Value};

use crate::{Reply, ScriptedServer};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "a_plain_answer_carries_text_and_usage",
    "a_forced_call_holds_the_schema",
    "a_required_choice_calls_an_offered_tool",
    "an_overlong_prompt_is_context_overflow",
];

/// The wire protocol a client over HTTP speaks, so the server answers in
/// its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI chat completions (`POST /v1/chat/completions`).
    OpenAiChat,
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
}

/// One chat model under test.
pub struct ChatCase {
    model: Box<dyn ChatModel>,
    wire: Option<(ScriptedServer, Protocol)>,
}

impl std::fmt::Debug for ChatCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatCase")
            .field("model", self.model.info())
            .field("protocol", &self.wire.as_ref().map(|w| w.1))
            .finish_non_exhaustive()
    }
}

impl ChatCase {
    /// A model that answers in this process.
    pub fn in_process(model: impl ChatModel + 'static) -> Self {
        ChatCase {
            model: Box::new(model),
            wire: None,
        }
    }

    /// A client of `server` speaking `protocol`; the server answers what
    /// each scenario scripts. Its context window should be small (a few
    /// thousand tokens): the overflow contract sends twice as many words.
    pub fn over_wire(
        model: impl ChatModel + 'static,
        server: ScriptedServer,
        protocol: Protocol,
    ) -> Self {
        ChatCase {
            model: Box::new(model),
            wire: Some((server, protocol)),
        }
    }
}

/// Generates one `#[test]` per contract, in a module named `$name`, for
/// the case `$make` builds (a `fn() -> ChatCase` or a closure without
/// captures); each test gets a case of its own. `suite_is_complete` fails
/// when the macro misses a scenario.
///
/// ```text
/// mnemo_test_support::chat_contract_suite!(openai, openai_case);
/// ```
#[macro_export]
macro_rules! chat_contract_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::chat_contract as suite;

            fn make_case() -> suite::ChatCase {
                ($make)()
            }

            $crate::chat_contract_suite!(@tests
                a_plain_answer_carries_text_and_usage,
                a_forced_call_holds_the_schema,
                a_required_choice_calls_an_offered_tool,
                an_overlong_prompt_is_context_overflow
            );
        }
    };
    (@tests $($scenario:ident),*) => {
        $(
            #[test]
            fn $scenario() {
                suite::$scenario(&make_case());
            }
        )*
        #[test]
        fn suite_is_complete() {
            $crate::conformance::assert_covers(
                "chat contract",
                suite::SCENARIOS,
                &[$(stringify!($scenario)),*],
            );
        }
    };
}

/// A plain request gets text, a known finish reason, no tool call and the
/// usage: over a wire, the provider's numbers exactly, and the request's
/// output cap and text were sent.
pub fn a_plain_answer_carries_text_and_usage(case: &ChatCase) {
    let question = "Say hello in one word.";
    let req = ChatRequest::new(vec![Message::user(question)]).with_max_tokens(16);
    if let Some((server, protocol)) = &case.wire {
        // Numbers no estimate gives, so only the provider's can match.
        server.push(Reply::raw(200, text_answer(*protocol, "Hello", 1234, 7)));
    }
    let r = complete(case, req);
    assert!(
        ["stop", "length"].contains(&r.finish_reason.as_str()),
        "{}",
        r.finish_reason
    );
    assert!(r.tool_calls().is_empty(), "{:?}", r.tool_calls());
    match &case.wire {
        Some((server, _)) => {
            assert_eq!(r.text(), "Hello");
            assert_eq!(r.finish_reason, "stop");
            assert_eq!(
                (r.usage.input_tokens, r.usage.output_tokens),
                (1234, 7),
                "the provider's usage, carried as it came"
            );
            let sent = only_request(server);
            assert_eq!(sent.body["max_tokens"], json!(16), "{}", sent.body);
            assert!(sent.raw_body.contains(question), "{}", sent.raw_body);
        }
        None => {
            // The prompt wraps the question in a chat template.
            assert!(r.usage.input_tokens > 5, "{:?}", r.usage);
            assert!((1..=16).contains(&r.usage.output_tokens), "{:?}", r.usage);
        }
    }
}

/// A forced call comes back as that tool, one call, with arguments that
/// parse as JSON and hold the tool's schema (its required keys, of their
/// types, and no others); over a wire, the arguments are the provider's,
/// the choice was sent forcing that tool and the schema was sent intact.
pub fn a_forced_call_holds_the_schema(case: &ChatCase) {
    let scripted = json!({
        "history_entry": "[2026-03-01 09:13] Moved to Lisbon; drinks green tea, never coffee.",
        "memory_update": "# Memory\n- Lives in Lisbon.\n- Drinks green tea, \"never\" coffee.\n"
    });
    if let Some((server, protocol)) = &case.wire {
        server.push(Reply::raw(
            200,
            call_answer(*protocol, "call_contract_1", "save_memory", &scripted),
        ));
    }
    let req = ChatRequest::new(dialogue())
        .with_system("You consolidate conversations into memory.")
        .with_tools(vec![save_memory_tool(), search_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()))
        .with_max_tokens(400);
    let r = complete(case, req);
    assert_eq!(r.finish_reason, "tool_calls");
    let calls = r.tool_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].function.name, "save_memory");
    assert!(
        !calls[0].id.is_empty(),
        "a call needs an id its result refers to"
    );
    let args = arguments(&calls[0].function.arguments);
    assert_holds_schema(&args, &save_memory_tool().parameters);
    if let Some((server, protocol)) = &case.wire {
        assert_eq!(
            args, scripted,
            "the provider's arguments, parsed as they came"
        );
        assert_eq!(calls[0].id, "call_contract_1");
        let sent = only_request(server);
        let want = match protocol {
            Protocol::OpenAiChat => {
                json!({"type": "function", "function": {"name": "save_memory"}})
            }
            Protocol::AnthropicMessages => json!({"type": "tool", "name": "save_memory"}),
        };
        assert_eq!(sent.body["tool_choice"], want, "{}", sent.body);
        assert_eq!(
            sent_schema(&sent.body, *protocol, "save_memory"),
            Some(save_memory_tool().parameters),
            "the tool's schema, sent as given: {}",
            sent.body
        );
    }
}

/// `Required` yields a call of one of the offered tools, with arguments
/// that hold that tool's schema; over a wire, the choice was sent as the
/// protocol's "some tool".
pub fn a_required_choice_calls_an_offered_tool(case: &ChatCase) {
    let scripted = json!({"query": "where the user lives", "max_results": 5});
    if let Some((server, protocol)) = &case.wire {
        server.push(Reply::raw(
            200,
            call_answer(*protocol, "call_contract_2", "memory_search", &scripted),
        ));
    }
    let tools = vec![save_memory_tool(), search_tool()];
    let req = ChatRequest::new(vec![Message::user("Where do I live? Search your memory.")])
        .with_tools(tools.clone())
        .with_tool_choice(ToolChoice::Required)
        .with_max_tokens(200);
    let r = complete(case, req);
    let calls = r.tool_calls();
    assert!(!calls.is_empty(), "no tool call: {:?}", r.message);
    for call in calls {
        let Some(tool) = tools.iter().find(|t| t.name == call.function.name) else {
            panic!("{} was not offered", call.function.name);
        };
        assert_holds_schema(&arguments(&call.function.arguments), &tool.parameters);
    }
    if let Some((server, protocol)) = &case.wire {
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].function.name, "memory_search");
        assert_eq!(arguments(&calls[0].function.arguments), scripted);
        assert_eq!(r.finish_reason, "tool_calls");
        let want = match protocol {
            Protocol::OpenAiChat => json!("required"),
            Protocol::AnthropicMessages => json!({"type": "any"}),
        };
        assert_eq!(only_request(server).body["tool_choice"], want);
    }
}

/// A prompt beyond the context window is a context-overflow error, never
/// a silently cut prompt nor another kind of error; over a wire, the
/// provider's 400 in its own shape is mapped so, with its status and
/// words, and not retried (the same prompt would fail the same way).
pub fn an_overlong_prompt_is_context_overflow(case: &ChatCase) {
    let window = case.model.info().context_window as usize;
    let words = "memory ".repeat(window * 2);
    let provider_said = case.wire.as_ref().map(|(server, protocol)| {
        let (message, body) = overflow_error(*protocol, window * 2);
        server.push(Reply::error(400, body));
        server.push(Reply::text("never sent"));
        message
    });
    let err = match block_on(
        case.model
            .complete(ChatRequest::new(vec![Message::user(words)])),
    ) {
        Ok(r) => panic!("an overlong prompt was answered: {:?}", r.message),
        Err(e) => e,
    };
    assert_eq!(err.kind(), ErrorKind::ContextOverflow, "{err}");
    if let (Some((server, _)), Some(said)) = (&case.wire, provider_said) {
        match &err {
            LlmError::ContextOverflow {
                status, message, ..
            } => {
                assert_eq!(*status, Some(400), "{err}");
                assert_eq!(message, &said, "the provider's words");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(server.request_count(), 1, "retried");
        assert_eq!(server.remaining(), 1);
    }
}

// Helpers (not scenarios: private, so the completeness check skips them).

/// The engine's consolidation tool, as it is offered.
fn save_memory_tool() -> ToolSpec {
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

fn search_tool() -> ToolSpec {
    ToolSpec::new(
        "memory_search",
        "Search memory.",
        json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
            "required": ["query"]
        }),
    )
}

fn dialogue() -> Vec<Message> {
    vec![Message::user(
        "[2026-03-01 09:12] USER: I moved to Lisbon last week and I drink green tea, never coffee.\n\
         [2026-03-01 09:13] ASSISTANT: Noted: Lisbon, green tea.",
    )]
}

/// Runs `fut` to its end on a runtime of its own (the server has its own
/// thread; a local model its blocking pool), so the scenarios are plain
/// `#[test]` functions.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(fut),
        Err(e) => panic!("cannot start a tokio runtime: {e}"),
    }
}

fn complete(case: &ChatCase, req: ChatRequest) -> ChatResponse {
    match block_on(case.model.complete(req)) {
        Ok(r) => r,
        Err(e) => panic!("the model failed: {e}"),
    }
}

/// The one request the server saw.
fn only_request(server: &ScriptedServer) -> crate::RecordedRequest {
    let mut sent = server.requests();
    assert_eq!(sent.len(), 1, "one request, not retried nor resent");
    sent.remove(0)
}

/// A call's arguments as JSON: JSON text (as mnemo keeps them) parsed.
fn arguments(raw: &Value) -> Value {
    match raw {
        Value::String(s) => match serde_json::from_str(s) {
            Ok(v) => v,
            Err(e) => panic!("the arguments are not JSON ({e}): {s:?}"),
        },
        other => other.clone(),
    }
}

/// Fails unless `value` holds the object `schema`: every required key,
/// every key a declared property of the declared JSON type.
fn assert_holds_schema(value: &Value, schema: &Value) {
    let Some(obj) = value.as_object() else {
        panic!("the arguments are not an object: {value}");
    };
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for required in schema["required"].as_array().into_iter().flatten() {
        let key = required.as_str().unwrap_or_default();
        assert!(obj.contains_key(key), "`{key}` is required: {value}");
    }
    for (key, v) in obj {
        let Some(declared) = properties.get(key) else {
            panic!("`{key}` is no property of the schema: {value}");
        };
        let fits = match declared["type"].as_str() {
            Some("string") => v.is_string(),
            Some("integer") => v.is_i64() || v.is_u64(),
            Some("number") => v.is_number(),
            Some("boolean") => v.is_boolean(),
            Some("array") => v.is_array(),
            Some("object") => v.is_object(),
            _ => true,
        };
        assert!(fits, "`{key}` is not a {}: {value}", declared["type"]);
    }
}

/// The schema the request offered for the tool `name`, as the protocol
/// carries it.
fn sent_schema(body: &Value, protocol: Protocol, name: &str) -> Option<Value> {
    let tools = body["tools"].as_array()?;
    tools.iter().find_map(|t| match protocol {
        Protocol::OpenAiChat => {
            (t["function"]["name"] == name).then(|| t["function"]["parameters"].clone())
        }
        Protocol::AnthropicMessages => (t["name"] == name).then(|| t["input_schema"].clone()),
    })
}

/// A text answer with this usage, as the provider sends it.
fn text_answer(protocol: Protocol, text: &str, input: u32, output: u32) -> Value {
    match protocol {
        Protocol::OpenAiChat => json!({
            "id": "chatcmpl-contract",
            "object": "chat.completion",
            "created": 1_772_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": null},
                "logprobs": null,
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
        }),
        Protocol::AnthropicMessages => json!({
            "id": "msg_contract",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": output}
        }),
    }
}

/// An answer that calls `name` with `args`, as the provider sends it:
/// OpenAI's arguments as JSON text, Anthropic's `input` as an object.
fn call_answer(protocol: Protocol, id: &str, name: &str, args: &Value) -> Value {
    match protocol {
        Protocol::OpenAiChat => json!({
            "id": "chatcmpl-contract",
            "object": "chat.completion",
            "created": 1_772_000_000,
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}
                    }]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375}
        }),
        Protocol::AnthropicMessages => json!({
            "id": "msg_contract",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "tool_use", "id": id, "name": name, "input": args}],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 321, "output_tokens": 54}
        }),
    }
}

/// The provider's context-length error for a prompt of `tokens`: its
/// message and its 400 body.
fn overflow_error(protocol: Protocol, tokens: usize) -> (String, Value) {
    match protocol {
        Protocol::OpenAiChat => {
            let message = format!(
                "This model's maximum context length is 2048 tokens. However, your messages \
                 resulted in {tokens} tokens. Please reduce the length of the messages."
            );
            let body = json!({"error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded"
            }});
            (message, body)
        }
        Protocol::AnthropicMessages => {
            let message = format!("prompt is too long: {tokens} tokens > 2048 maximum");
            let body = json!({
                "type": "error",
                "error": {"type": "invalid_request_error", "message": message}
            });
            (message, body)
        }
    }
}
