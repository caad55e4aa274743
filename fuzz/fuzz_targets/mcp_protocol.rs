//! MCP as a client speaks it: JSON-RPC requests, notifications, batches
//! and raw bytes of any method with any parameters, posted to the
//! streamable HTTP router `mnemo mcp --http` and `mnemo serve` mount, in
//! process, inside an initialized session on a real keyword-only
//! workspace. No request may answer 5xx or a JSON-RPC internal error
//! (-32603), and no tool may answer mnemo's `internal`. Same input layout
//! and checks as the `fuzz_mcp_protocol` test: one byte picks the method,
//! one the framing; the rest is the params (or, framed raw, the body).
#![no_main]

use std::sync::LazyLock;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use libfuzzer_sys::fuzz_target;
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

struct Server {
    rt: tokio::runtime::Runtime,
    app: Router,
    session: Option<String>,
}

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

static SERVER: LazyLock<Server> = LazyLock::new(|| {
    let rt = mnemo_fuzz::runtime();
    let service = mnemo_service::Service::new(mnemo_fuzz::workspace());
    let app = rt.block_on(async { mnemo_mcp::router(service, None, CancellationToken::new()) });
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "0"}}});
    let (status, session, _) = post(&rt, &app, None, init.to_string().into_bytes());
    assert_eq!(status, 200, "initialize");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(
        &rt,
        &app,
        session.as_deref(),
        initialized.to_string().into_bytes(),
    );
    assert!(status < 300, "initialized: {status}");
    Server { rt, app, session }
});

/// Every JSON-RPC answer in `v` (one, or a batch's).
fn answers(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    }
}

fuzz_target!(|data: &[u8]| {
    let server = &*SERVER;
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
    let (status, _, answer) = post(&server.rt, &server.app, server.session.as_deref(), body);
    assert!(
        status < 500,
        "{method} (frame {frame}) -> {status}: {answer:?}"
    );
    for a in answer.iter().flat_map(answers) {
        let rpc = a["error"]["code"].as_i64();
        assert_ne!(rpc, Some(-32603), "{method}: an internal error: {a}");
        let tool = &a["result"]["structuredContent"]["error"]["code"];
        assert_ne!(tool, "internal", "{method}: {a}");
    }
});
