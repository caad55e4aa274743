//! OpenAI-compatible chat completions against the scripted server.

use mnemo_core::Coded;
use std::time::Duration;

use mnemo_core::Message;
use mnemo_llm::{
    build_chat_model, ChatModel, ChatRequest, ErrorKind, LlmError, OpenAiChat, ToolChoice, Usage,
};
use mnemo_test_support::{Reply, ScriptedServer};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{openai_config, sample_request, save_memory_tool};

#[tokio::test]
async fn request_body_has_the_whole_openai_shape() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("done"));
    let mut cfg = openai_config(server.openai_base());
    cfg.api_key = Some("sk-test".into());
    cfg.headers.insert("X-Title".into(), "mnemo".into());
    let model = OpenAiChat::new(&cfg).unwrap();
    let mut req = sample_request();
    req.temperature = Some(0.25);
    model.complete(req).await.unwrap();

    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("x-title"), Some("mnemo"));
    assert_eq!(
        sent.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are a memory consolidation agent."},
                {"role": "system", "content": "Extra instructions from the workspace."},
                {"role": "user", "content": "I moved to Lisbon last week."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "memory_search", "arguments": "{\"query\":\"home city\"}"}},
                    {"id": "call_b", "type": "function", "function": {"name": "memory_get", "arguments": "{\"path\":\"MEMORY.md\"}"}}
                ]},
                {"role": "tool", "content": "No results.", "tool_call_id": "call_a", "name": "memory_search"},
                {"role": "tool", "content": "# Memory\n- Lives in Porto", "tool_call_id": "call_b", "name": "memory_get"},
                {"role": "user", "content": "Please remember it."}
            ],
            "tools": [{"type": "function", "function": {
                "name": "save_memory",
                "description": "Save the memory consolidation result to persistent storage.",
                "parameters": save_memory_tool().parameters
            }}],
            "tool_choice": {"type": "function", "function": {"name": "save_memory"}},
            "max_tokens": 512,
            "temperature": 0.25
        })
    );
}

#[tokio::test]
async fn tool_choice_values_and_no_tools() {
    let server = ScriptedServer::start().await;
    server.set_default(Reply::text("ok"));
    let model = OpenAiChat::new(&openai_config(server.openai_base())).unwrap();
    let base = ChatRequest::new(vec![Message::user("hi")]).with_tools(vec![save_memory_tool()]);
    for choice in [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required] {
        model
            .complete(base.clone().with_tool_choice(choice))
            .await
            .unwrap();
    }
    // Without tools, tool_choice is not sent (providers reject it).
    model
        .complete(
            ChatRequest::new(vec![Message::user("hi")]).with_tool_choice(ToolChoice::Required),
        )
        .await
        .unwrap();
    let choices: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.body.get("tool_choice").cloned())
        .collect();
    assert_eq!(
        choices,
        vec![
            Some(json!("auto")),
            Some(json!("none")),
            Some(json!("required")),
            None
        ]
    );
    assert_eq!(
        server.requests()[3].body,
        json!({"model": "test-model", "messages": [{"role": "user", "content": "hi"}]})
    );
}

#[tokio::test]
async fn tool_call_round_trip() {
    let server = ScriptedServer::start().await;
    let args = json!({"history_entry": "[2026-03-01 10:00] Moved to Lisbon.", "memory_update": "- Lives in Lisbon"});
    server.push(Reply::tool_call("save_memory", args.clone()));
    server.push(Reply::text("Saved."));
    let model = build_chat_model(&openai_config(server.openai_base())).unwrap();
    assert_eq!(model.info().provider, "openai");

    let mut history = vec![Message::user("I moved to Lisbon.")];
    let req = ChatRequest::new(history.clone())
        .with_tools(vec![save_memory_tool()])
        .with_tool_choice(ToolChoice::Required);
    let resp = model.complete(req).await.unwrap();
    assert_eq!(resp.finish_reason, "tool_calls");
    assert_eq!(resp.message.content, None);
    let calls = resp.tool_calls().to_vec();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.name, "save_memory");
    assert_eq!(calls[0].function.arguments_value(), args);
    // Usage is the server's chars/4: "I moved to Lisbon." is 18 chars.
    assert_eq!(resp.usage.input_tokens, 5);
    assert!(resp.usage.output_tokens > 0);

    history.push(resp.message.clone());
    history.push(Message::tool_result(
        calls[0].id.clone(),
        "save_memory",
        "ok",
    ));
    let resp2 = model
        .complete(ChatRequest::new(history).with_tools(vec![save_memory_tool()]))
        .await
        .unwrap();
    assert_eq!(resp2.text(), "Saved.");
    assert_eq!(resp2.finish_reason, "stop");

    let second = &server.requests()[1].body["messages"];
    assert_eq!(
        second,
        &json!([
            {"role": "user", "content": "I moved to Lisbon."},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": calls[0].id, "type": "function", "function": {"name": "save_memory", "arguments": args.to_string()}}
            ]},
            {"role": "tool", "content": "ok", "tool_call_id": calls[0].id, "name": "save_memory"}
        ])
    );
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

#[tokio::test]
async fn retries_429_then_succeeds() {
    let server = ScriptedServer::start().await;
    let limited = json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}});
    server.push(Reply::error(429, limited.clone()).with_header("retry-after", "0"));
    server.push(Reply::error(429, limited).with_header("retry-after-ms", "5"));
    server.push(Reply::text("finally"));
    let model = OpenAiChat::new(&openai_config(server.openai_base())).unwrap();
    let resp = model.complete(hello()).await.unwrap();
    assert_eq!(resp.text(), "finally");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn rate_limit_after_retries_is_reported() {
    let server = ScriptedServer::start().await;
    server.set_default(
        Reply::error(429, json!({"error": {"message": "slow down"}}))
            .with_header("retry-after", "0"),
    );
    let mut cfg = openai_config(server.openai_base());
    cfg.max_retries = 2;
    let err = OpenAiChat::new(&cfg)
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RateLimit);
    assert!(
        matches!(err, LlmError::RateLimit { attempts: 3, .. }),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retries_5xx_then_succeeds() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        503,
        json!({"error": {"message": "overloaded"}}),
    ));
    server.push(Reply::error(500, json!({"error": {"message": "internal"}})));
    server.push(Reply::text("up again"));
    let resp = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap();
    assert_eq!(resp.text(), "up again");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn timeouts_are_retried_then_reported() {
    let server = ScriptedServer::start().await;
    server.push(Reply::delay(Duration::from_secs(5), Reply::text("late")));
    server.push(Reply::text("in time"));
    let mut cfg = openai_config(server.openai_base());
    cfg.timeout_secs = 0.3;
    let model = OpenAiChat::new(&cfg).unwrap();
    assert_eq!(model.complete(hello()).await.unwrap().text(), "in time");
    assert_eq!(server.request_count(), 2);

    server.clear_requests();
    server.set_default(Reply::delay(Duration::from_secs(5), Reply::text("late")));
    cfg.max_retries = 1;
    let err = OpenAiChat::new(&cfg)
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout);
    assert!(err.to_string().contains("timeout_secs"), "{err}");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn bad_request_is_not_retried() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(400, json!({"error": {"message": "Invalid 'messages[0].role'", "type": "invalid_request_error"}})));
    server.push(Reply::text("never sent"));
    let err = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadRequest);
    assert!(
        err.to_string().contains("Invalid 'messages[0].role'"),
        "{err}"
    );
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn context_overflow_is_classified() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        400,
        json!({"error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"
        }}),
    ));
    let err = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ContextOverflow);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn dashscope_tool_choice_refusal_is_classified() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        400,
        json!({"error": {
            "message": "<400> InternalError.Algo.InvalidParameter: The tool_choice parameter should be [\"none\", \"auto\"] or a function",
            "type": "invalid_request_error", "param": null, "code": "invalid_parameter_error"
        }}),
    ));
    let req = hello()
        .with_tools(vec![save_memory_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()));
    let err = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(req)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolChoiceUnsupported);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn finish_reason_error_with_tool_choice_text_is_classified() {
    let server = ScriptedServer::start().await;
    server.push(Reply::raw(
        200,
        json!({
            "id": "x", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "error", "message": {"role": "assistant",
                "content": "Error calling LLM: this model does not support forced tool use"}}]
        }),
    ));
    let req = hello()
        .with_tools(vec![save_memory_tool()])
        .with_tool_choice(ToolChoice::Required);
    let err = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(req)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolChoiceUnsupported);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn auth_failure_names_the_key_variable() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        401,
        json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}),
    ));
    let mut cfg = openai_config(server.openai_base());
    cfg.api_key_env = "MY_LLM_KEY".into();
    cfg.api_key = Some("wrong".into());
    let err = OpenAiChat::new(&cfg)
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert_eq!(err.code(), mnemo_core::ErrorCode::Config);
    assert!(err.to_string().contains("$MY_LLM_KEY"), "{err}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn connection_refused_is_transient_after_retries() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = openai_config(format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = 1;
    let err = OpenAiChat::new(&cfg)
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transient);
    assert!(
        matches!(
            err,
            LlmError::Transient {
                status: None,
                attempts: 2,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn malformed_answer_is_a_decode_error() {
    let server = ScriptedServer::start().await;
    server.push(Reply::raw(
        200,
        json!({"object": "chat.completion", "choices": []}),
    ));
    let err = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Decode);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn usage_is_read() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("abcdefgh"));
    let resp = OpenAiChat::new(&openai_config(server.openai_base()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap();
    assert_eq!(
        resp.usage,
        Usage {
            input_tokens: 2,
            output_tokens: 2
        }
    );
}

#[tokio::test]
async fn adapts_to_reasoning_models_parameters() {
    let server = ScriptedServer::start().await;
    server.push(Reply::error(
        400,
        json!({"error": {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"
        }}),
    ));
    server.push(Reply::error(
        400,
        json!({"error": {
            "message": "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is supported.",
            "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"
        }}),
    ));
    server.set_default(Reply::text("ok"));
    let model = OpenAiChat::new(&openai_config(server.openai_base())).unwrap();
    let req = hello().with_max_tokens(64).with_temperature(0.2);
    assert_eq!(model.complete(req.clone()).await.unwrap().text(), "ok");
    assert_eq!(model.complete(req).await.unwrap().text(), "ok");
    let bodies: Vec<_> = server.requests().into_iter().map(|r| r.body).collect();
    let msgs = json!([{"role": "user", "content": "hello"}]);
    assert_eq!(
        bodies,
        vec![
            json!({"model": "test-model", "messages": msgs, "max_tokens": 64, "temperature": 0.2}),
            json!({"model": "test-model", "messages": msgs, "max_completion_tokens": 64, "temperature": 0.2}),
            json!({"model": "test-model", "messages": msgs, "max_completion_tokens": 64}),
            // Later requests are sent adapted straight away.
            json!({"model": "test-model", "messages": msgs, "max_completion_tokens": 64}),
        ]
    );
}

#[tokio::test]
async fn not_found_hints_at_base_url() {
    let server = ScriptedServer::start().await;
    // The /v1 is missing: the server has no /chat/completions route.
    let err = OpenAiChat::new(&openai_config(server.url()))
        .unwrap()
        .complete(hello())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadRequest);
    assert!(err.to_string().contains("usually ends in /v1"), "{err}");
    assert_eq!(server.request_count(), 1);
}

/// A judgement by probabilities: `logprobs` with the top 20 first tokens,
/// an option the mass of the tokens that read as it; a provider that
/// refuses the parameter is asked for written answers from then on, with
/// no second request wasted on it.
#[tokio::test]
async fn option_logprobs_read_the_first_tokens_distribution() {
    let server = ScriptedServer::start().await;
    server.push(Reply::raw(
        200,
        json!({
            "id": "c1", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "length",
                "message": {"role": "assistant", "content": "Yes"},
                "logprobs": {"content": [{"token": "Yes", "logprob": -0.4,
                    "top_logprobs": [
                        {"token": "Yes", "logprob": -0.4},
                        {"token": " yes", "logprob": -2.0},
                        {"token": "No", "logprob": -1.6}
                    ]}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 1}
        }),
    ));
    let model = OpenAiChat::new(&openai_config(server.openai_base())).unwrap();
    let req = ChatRequest::new(vec![Message::user("Is the sky blue?")]);
    let opts = vec!["yes".to_string(), "no".to_string(), "maybe".to_string()];
    let lp = model
        .option_logprobs(req.clone(), opts.clone())
        .await
        .unwrap()
        .expect("the provider sent logprobs");
    let yes = ((-0.4f32).exp() + (-2.0f32).exp()).ln();
    assert!((lp[0] - yes).abs() < 1e-5, "{lp:?}");
    assert!((lp[1] + 1.6).abs() < 1e-5, "{lp:?}");
    assert_eq!(lp[2], f32::NEG_INFINITY);
    let sent = &server.requests()[0].body;
    assert_eq!(sent["logprobs"], json!(true));
    assert_eq!(sent["top_logprobs"], json!(20));
    assert_eq!(sent["max_tokens"], json!(1));

    // A provider that refuses logprobs: None, and it is not asked again.
    server.push(Reply::error(
        400,
        json!({"error": {"message": "logprobs is not supported with this model"}}),
    ));
    let refused = OpenAiChat::new(&openai_config(server.openai_base())).unwrap();
    assert_eq!(
        refused
            .option_logprobs(req.clone(), opts.clone())
            .await
            .unwrap(),
        None
    );
    let asked = server.request_count();
    assert_eq!(refused.option_logprobs(req, opts).await.unwrap(), None);
    assert_eq!(server.request_count(), asked);
}
