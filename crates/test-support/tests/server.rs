//! The scripted server over real HTTP: routing, rendering in both
//! protocols, validation, script order, responder, recording and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use mnemo_test_support::{estimate_tokens, hashed_embedding, Reply, ScriptedServer};
use serde_json::{json, Value};

async fn post(url: String, body: Value, headers: &[(&str, &str)]) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut req = client.post(url).json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut body: Value = resp.json().await.unwrap();
    if let Some(ra) = headers.get("retry-after") {
        body["_retry_after"] = json!(ra.to_str().unwrap());
    }
    (status, body)
}

fn chat_body() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "abcdefgh"}]})
}

#[tokio::test]
async fn renders_openai_and_anthropic_shapes() {
    let server = ScriptedServer::start().await;
    server.push(Reply::tool_call("save_memory", json!({"a": 1})).with_text("hi"));
    server.push(Reply::tool_call("save_memory", json!({"a": 1})).with_text("hi"));

    let (status, body) = post(
        format!("{}/chat/completions", server.openai_base()),
        chat_body(),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "id": "chatcmpl-scripted-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "hi",
                "tool_calls": [{"id": "call_1_0", "type": "function", "function": {"name": "save_memory", "arguments": "{\"a\":1}"}}]
            }}],
            "usage": {"prompt_tokens": 2, "completion_tokens": estimate_tokens(2 + 11 + 7), "total_tokens": 2 + estimate_tokens(20)}
        })
    );

    let mut anthropic = chat_body();
    anthropic["max_tokens"] = json!(100);
    let (status, body) = post(
        format!("{}/v1/messages", server.url()),
        anthropic,
        &[("anthropic-version", "2023-06-01")],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "id": "msg_scripted_2", "type": "message", "role": "assistant", "model": "m",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_2_0", "name": "save_memory", "input": {"a": 1}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 2, "output_tokens": 5}
        })
    );
    assert_eq!(server.remaining(), 0);
}

#[tokio::test]
async fn empty_script_defaults_and_responder() {
    let server = ScriptedServer::start().await;
    let url = format!("{}/chat/completions", server.openai_base());
    let (status, body) = post(url.clone(), chat_body(), &[]).await;
    assert_eq!(status, 500);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("script is empty"),
        "{body}"
    );

    server.set_default(Reply::text("default"));
    let (_, body) = post(url.clone(), chat_body(), &[]).await;
    assert_eq!(body["choices"][0]["message"]["content"], "default");

    server.respond_with(|req| {
        Reply::text(format!(
            "you sent {} messages",
            req.body["messages"].as_array().unwrap().len()
        ))
    });
    let (_, body) = post(url.clone(), chat_body(), &[]).await;
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "you sent 1 messages"
    );

    // The script still comes first.
    server.push(
        Reply::error(429, json!({"error": {"message": "slow"}})).with_header("retry-after", "1"),
    );
    let (status, body) = post(url, chat_body(), &[]).await;
    assert_eq!((status, body["_retry_after"].as_str()), (429, Some("1")));
    assert_eq!(server.request_count(), 4);
}

#[tokio::test]
async fn rejects_malformed_requests_like_a_real_server() {
    let server = ScriptedServer::start().await;
    server.set_default(Reply::text("ok"));
    let mut streaming = chat_body();
    streaming["stream"] = json!(true);
    let (status, body) = post(
        format!("{}/chat/completions", server.openai_base()),
        streaming,
        &[],
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stream"),
        "{body}"
    );

    let (status, body) = post(format!("{}/v1/messages", server.url()), chat_body(), &[]).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("anthropic-version"),
        "{body}"
    );

    let system_role =
        json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]});
    let (status, _) = post(
        format!("{}/v1/messages", server.url()),
        system_role,
        &[("anthropic-version", "x")],
    )
    .await;
    assert_eq!(status, 400);

    let (status, body) = post(format!("{}/v2/other", server.url()), json!({}), &[]).await;
    assert_eq!(status, 404);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/chat/completions"),
        "{body}"
    );
    // Rejected requests are recorded too.
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        vec![
            "/v1/chat/completions",
            "/v1/messages",
            "/v1/messages",
            "/v2/other"
        ]
    );
}

#[tokio::test]
async fn embeddings_are_hashed_unless_scripted() {
    let server = ScriptedServer::start().await;
    server.set_embedding_dims(8);
    // A chat reply at the head of the script is left for the chat endpoint.
    server.push(Reply::text("for chat"));
    let url = format!("{}/embeddings", server.openai_base());
    let (status, body) = post(
        url.clone(),
        json!({"model": "e", "input": ["red apple", "green pear"]}),
        &[],
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][1]["index"], 1);
    assert_eq!(
        body["data"][1]["embedding"],
        json!(hashed_embedding("green pear", 8))
    );
    assert_eq!(server.remaining(), 1);

    let (_, body) = post(url.clone(), json!({"model": "e", "input": "single"}), &[]).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);

    let (status, _) = post(url, json!({"model": "e", "input": [[1, 2, 3]]}), &[]).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn records_headers_and_body() {
    let server = ScriptedServer::start().await;
    server.push(Reply::text("ok"));
    post(
        format!("{}/chat/completions", server.openai_base()),
        chat_body(),
        &[("Authorization", "Bearer k")],
    )
    .await;
    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.header("AUTHORIZATION"), Some("Bearer k"));
    assert_eq!(r.body, chat_body());
    assert_eq!(
        serde_json::from_str::<Value>(&r.raw_body).unwrap(),
        chat_body()
    );
}

#[test]
fn blocking_server_serves_and_stops_on_drop() {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::delay(
        Duration::from_millis(10),
        Reply::text("slow ok"),
    ));
    let addr = server.addr();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, body) = rt.block_on(post(
        format!("{}/chat/completions", server.openai_base()),
        chat_body(),
        &[],
    ));
    assert_eq!(
        (status, body["choices"][0]["message"]["content"].as_str()),
        (200, Some("slow ok"))
    );
    drop(server);
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the port is closed after drop"
    );
}
