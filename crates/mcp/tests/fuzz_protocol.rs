//! Fuzz target of MCP as a client speaks it, run by
//! `mnemo_test_support::fuzz` inside `cargo test` (budget from
//! `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`): JSON-RPC requests,
//! notifications, batches and raw bytes of any method (tools, resources,
//! prompts, unknown ones) with any parameters, posted to the streamable
//! HTTP router `mnemo mcp --http` and `mnemo serve` mount, inside an
//! initialized session on a real keyword-only workspace. No request may
//! answer 5xx or a JSON-RPC internal error (-32603), and no tool may answer
//! mnemo's `internal`: what a client sent wrong is the client's error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use mnemo_core::{Config, Workspace};
use mnemo_service::Service;
use mnemo_test_support::fuzz::{fingerprint, Fuzz};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const METHODS: &[&str] = &[
    "tools/call",
    "resources/read",
    "resources/list",
    "tools/list",
    "prompts/list",
    "ping",
    "completion/complete",
    "initialize",
    "no/such/method",
];

/// How a message is framed: a request, a notification (no id), a batch of
/// one, or the fuzzer's bytes as the whole body.
const FRAMES: usize = 4;

/// Posts `body` to `/mcp` in `session`; the status, the session id the
/// answer names, and the answer's JSON (an SSE frame's data, or the body).
fn post(
    rt: &tokio::runtime::Runtime,
    app: &Router,
    session: Option<&str>,
    body: Vec<u8>,
) -> (u16, Option<String>, Option<Value>) {
    let mut req = Request::builder()
        .method("POST")
        .uri("/mcp")
        .header("host", "127.0.0.1:8766")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let req = req.body(Body::from(body)).unwrap();
    rt.block_on(async {
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let id = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let json = serde_json::from_str::<Value>(&text).ok().or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
        });
        (status, id, json)
    })
}

/// Every JSON-RPC answer in `v` (one, or a batch's).
fn answers(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    }
}

#[test]
fn fuzz_mcp_protocol() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("MEMORY.md"),
        "# Core\n- Dana lives in Porto.\n",
    )
    .unwrap();
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let mnemo = Arc::new(mnemo::Mnemo::open(Workspace::new(dir.path()), config).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = rt
        .block_on(async { mnemo_mcp::router(Service::new(mnemo), None, CancellationToken::new()) });
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"}}});
    let (status, session, _) = post(&rt, &app, None, init.to_string().into_bytes());
    assert_eq!(status, 200, "initialize");
    // Stateless servers name no session; stateful ones need it on each call.
    let session = session.as_deref();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&rt, &app, session, initialized.to_string().into_bytes());
    assert!(status < 300, "initialized: {status}");
    // The fuzzer starts from calls that work.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": "Porto"}}});
    let (status, _, answer) = post(&rt, &app, session, call.to_string().into_bytes());
    assert_eq!(status, 200);
    assert!(
        answer
            .as_ref()
            .is_some_and(|a| a.to_string().contains("Dana lives in Porto")),
        "{answer:?}"
    );

    // Input: one byte picks the method, one the framing; the rest is the
    // params (or, framed raw, the whole body).
    let report = Fuzz::new("mcp-protocol")
        .seeds([
            b"\x00\x00{\"name\":\"memory_search\",\"arguments\":{\"query\":\"Porto\"}}".to_vec(),
            b"\x00\x00{\"name\":\"memory_history\",\"arguments\":{\"name\":\"f1\"}}".to_vec(),
            b"\x00\x02{\"name\":\"memory_get\",\"arguments\":{\"path\":\"../x\"}}".to_vec(),
            b"\x01\x00{\"uri\":\"mnemo://workspace/MEMORY.md\"}".to_vec(),
            b"\x01\x00{\"uri\":\"mnemo://workspace/memory/missing.md\"}".to_vec(),
            b"\x01\x00{\"uri\":\"mnemo://workspace/../../etc/passwd\"}".to_vec(),
            b"\x01\x00{\"uri\":\"file:///etc/passwd\"}".to_vec(),
            b"\x02\x00{}".to_vec(),
            b"\x03\x01{}".to_vec(),
            b"\x08\x00{}".to_vec(),
            b"\x00\x03[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}]".to_vec(),
            b"\x00\x03{\"jsonrpc\":\"1.0\",\"id\":{},\"method\":3}".to_vec(),
        ])
        .dict([
            "{",
            "}",
            "[",
            "]",
            "\"",
            ":",
            ",",
            "null",
            "true",
            "-1",
            "1e308",
            "\"name\"",
            "\"arguments\"",
            "\"uri\"",
            "\"cursor\"",
            "\"memory_search\"",
            "\"memory_get\"",
            "\"memory_write\"",
            "\"memory_forget\"",
            "\"memory_history\"",
            "\"session_append\"",
            "\"session_context\"",
            "\"query\"",
            "\"path\"",
            "\"key\"",
            "\"text\"",
            "\"mnemo://workspace/",
            "MEMORY.md",
            "memory/",
            "..",
            "%2e%2e",
            "\"jsonrpc\"",
            "\"2.0\"",
            "\"id\"",
            "\"method\"",
            "\"params\"",
        ])
        .max_len(16 * 1024)
        .run(|data| {
            let pick = |i: usize, n: usize| usize::from(data.get(i).copied().unwrap_or(0)) % n;
            let method = METHODS[pick(0, METHODS.len())];
            let frame = pick(1, FRAMES);
            let rest = data.get(2..).unwrap_or_default();
            let raw = String::from_utf8_lossy(rest);
            let params: Value =
                serde_json::from_str(&raw).unwrap_or(Value::String(raw.clone().into_owned()));
            let body = match frame {
                0 => json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                    .to_string()
                    .into_bytes(),
                1 => json!({"jsonrpc": "2.0", "method": method, "params": params})
                    .to_string()
                    .into_bytes(),
                2 => json!([{"jsonrpc": "2.0", "id": 2, "method": method, "params": params}])
                    .to_string()
                    .into_bytes(),
                _ => rest.to_vec(),
            };
            let (status, _, answer) = post(&rt, &app, session, body);
            assert!(
                status < 500,
                "{method} (frame {frame}) -> {status}: {answer:?}"
            );
            let mut codes = Vec::new();
            for a in answer.iter().flat_map(answers) {
                let rpc = a["error"]["code"].as_i64();
                assert_ne!(rpc, Some(-32603), "{method}: an internal error: {a}");
                let tool = a["result"]["structuredContent"]["error"]["code"].clone();
                assert_ne!(tool, "internal", "{method}: {a}");
                codes.push((rpc, tool.as_str().map(str::to_string)));
            }
            fingerprint(&(method, frame, status, codes))
        });
    assert!(report.executions > 0, "{report:?}");
}
