//! Anthropic Messages against the scripted server.

use mnemo_core::Message;
use mnemo_llm::{AnthropicChat, ChatModel, ChatRequest, ErrorKind, ToolChoice, ANTHROPIC_VERSION};
use mnemo_test_support::{Reply, ScriptedServer};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{anthropic_config, sample_request, save_memory_tool};

#[tokio::test]
async fn conversation_with_tool_calls_is_converted() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("done"));
    let mut cfg = anthropic_config(server.url());
    cfg.api_key = Some("sk-ant-test".into());
    let model = AnthropicChat::new(&cfg).unwrap();
    model.complete(sample_request()).await.unwrap();

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-test",
            "max_tokens": 512,
            "system": "You are a memory consolidation agent.\n\nExtra instructions from the workspace.",
            "messages": [
                {"role": "user", "content": "I moved to Lisbon last week."},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_a", "name": "memory_search", "input": {"query": "home city"}},
                    {"type": "tool_use", "id": "call_b", "name": "memory_get", "input": {"path": "MEMORY.md"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_a", "content": "No results."},
                    {"type": "tool_result", "tool_use_id": "call_b", "content": "# Memory\n- Lives in Porto"},
                    {"type": "text", "text": "Please remember it."}
                ]}
            ],
            "tools": [{
                "name": "save_memory",
                "description": "Save the memory consolidation result to persistent storage.",
                "input_schema": save_memory_tool().parameters
            }],
            "tool_choice": {"type": "tool", "name": "save_memory"}
        })
    );
}

#[tokio::test]
async fn tool_choice_values_and_default_max_tokens() {
    let server = ScriptedServer::start().await;
    server.set_default(Reply::text("ok"));
    let model = AnthropicChat::new(&anthropic_config(server.url())).unwrap();
    let base = ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![save_memory_tool()]);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        model
            .complete(base.clone().with_tool_choice(choice))
            .await
            .unwrap();
    }
    model
        .complete(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    let reqs = server.requests();
    let choices: Vec<_> = reqs
        .iter()
        .map(|r| r.body.get("tool_choice").cloned())
        .collect();
    assert_eq!(
        choices,
        vec![
            Some(json!({"type": "auto"})),
            Some(json!({"type": "none"})),
            Some(json!({"type": "any"})),
            None
        ]
    );
    assert_eq!(
        reqs[3].body,
        json!({"model": "claude-test", "max_tokens": 8192, "messages": [{"role": "user", "content": "hi"}]})
    );
}

#[tokio::test]
async fn tool_call_round_trip() {
    let server = ScriptedServer::start().await;
    let args = json!({"history_entry": "[2026-03-01 10:00] Moved.", "memory_update": "- Lisbon"});
    server.push(Reply::tool_call("save_memory", args.clone()).with_text("Saving now."));
    server.push(Reply::text("Saved."));
    let model = AnthropicChat::new(&anthropic_config(server.url())).unwrap();
    assert_eq!(model.info().provider, "anthropic");
    assert_eq!(model.info().context_window, 200_000);

    let mut history = vec![Message::user("I moved to Lisbon.")];
    let req = ChatRequest::new(history.clone())
        .with_tools(vec![save_memory_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()));
    let resp = model.complete(req).await.unwrap();
    assert_eq!(resp.finish_reason, "tool_calls");
    assert_eq!(resp.text(), "Saving now.");
    let call = resp.tool_calls()[0].clone();
    assert_eq!(call.function.name, "save_memory");
    // OpenAI shape: arguments are JSON text.
    assert_eq!(call.function.arguments, json!(args.to_string()));
    assert!(resp.usage.input_tokens > 0 && resp.usage.output_tokens > 0);

    history.push(resp.message.clone());
    history.push(Message::tool_result(call.id.clone(), "save_memory", "ok"));
    let resp2 = model
        .complete(ChatRequest::new(history).with_tools(vec![save_memory_tool()]))
        .await
        .unwrap();
    assert_eq!(resp2.text(), "Saved.");
    assert_eq!(resp2.finish_reason, "stop");
    assert_eq!(
        server.requests()[1].body["messages"],
        json!([
            {"role": "user", "content": "I moved to Lisbon."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Saving now."},
                {"type": "tool_use", "id": call.id, "name": "save_memory", "input": args}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "ok"}]}
        ])
    );
}

#[tokio::test]
async fn max_tokens_stop_maps_to_length() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("trunc").with_finish_reason("length"));
    let resp = AnthropicChat::new(&anthropic_config(server.url()))
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(resp.finish_reason, "length");
}

#[tokio::test]
async fn prompt_too_long_is_context_overflow() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        400,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}}),
    ));
    let err = AnthropicChat::new(&anthropic_config(server.url()))
        .unwrap()
        .complete(ChatRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ContextOverflow);
    assert!(err.to_string().contains("prompt is too long"), "{err}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn overloaded_is_retried_and_auth_is_not() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        529,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    server.push(Reply::text("ok"));
    let model = AnthropicChat::new(&anthropic_config(server.url())).unwrap();
    let hi = ChatRequest::new(vec![Message::user("hi")]);
    assert_eq!(model.complete(hi.clone()).await.unwrap().text(), "ok");
    assert_eq!(server.request_count(), 2);

    server.push(Reply::error(
        401,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let err = model.complete(hi).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert!(err.to_string().contains("$ANTHROPIC_API_KEY"), "{err}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn base_url_with_v1_is_accepted() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("ok"));
    let model = AnthropicChat::new(&anthropic_config(format!("{}/v1/", server.url()))).unwrap();
    assert_eq!(
        model
            .complete(ChatRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap()
            .text(),
        "ok"
    );
    assert_eq!(server.requests()[0].path, "/v1/messages");
}
