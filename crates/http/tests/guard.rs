//! Cross-site requests to the HTTP API, on the router as `mnemo serve` runs
//! it (behind `mnemo_service::guard::guarded`): a foreign `Host` on a loopback address
//! (DNS rebinding), a foreign `Origin` on a request that changes something,
//! and a POST that is not JSON (an HTML form) are refused, and nothing is
//! written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use mnemo_core::{Config, Workspace};
use serde_json::{json, Value};
use tower::ServiceExt;

fn app(root: &Path) -> axum::Router {
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let mnemo = Arc::new(mnemo::Mnemo::open(Workspace::new(root), config).unwrap());
    let local: SocketAddr = "127.0.0.1:8767".parse().unwrap();
    mnemo_service::guard::guarded(
        mnemo_http::router(mnemo_service::Service::new(mnemo), None),
        &local,
    )
}

async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

const HOST: (&str, &str) = ("host", "127.0.0.1:8767");
const JSON: (&str, &str) = ("content-type", "application/json");

fn files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["", "memory", "sessions"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                out.push(format!("{dir}/{}", e.file_name().to_string_lossy()));
            }
        }
    }
    out.sort();
    out
}

/// DNS rebinding: a page at evil.example that resolves to 127.0.0.1 sends
/// `Host: evil.example`. Every endpoint refuses it.
#[tokio::test]
async fn a_foreign_host_is_refused_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let evil = ("host", "evil.example:8767");
    let (status, body) = send(&app, "GET", "/v1/sessions", &[evil], "").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"]["code"], "forbidden");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("evil.example"));
    let write = json!({"mode": "daily", "text": "planted"}).to_string();
    let (status, _) = send(&app, "POST", "/v1/memory/write", &[evil, JSON], &write).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    // The same requests for this host go through.
    let (status, body) = send(&app, "GET", "/v1/sessions", &[HOST], "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = send(&app, "POST", "/v1/memory/write", &[HOST, JSON], &write).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// An HTML form can post form-encoded, multipart or plain-text bodies to
/// any site without asking: every POST must be JSON, including the
/// endpoints whose body is optional.
#[tokio::test]
async fn a_post_that_is_not_json_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    for (path, body) in [
        ("/v1/sessions/cli:direct/consolidate", ""),
        ("/v1/sessions/cli:direct/compact", ""),
        ("/v1/sessions/cli:direct/context", "{\"message\":\"hi\"}"),
        (
            "/v1/sessions/cli:direct/messages",
            "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        ),
        (
            "/v1/memory/write",
            "{\"mode\":\"daily\",\"text\":\"planted\"}",
        ),
    ] {
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=b",
        ] {
            let (status, resp) =
                send(&app, "POST", path, &[HOST, ("content-type", ct)], body).await;
            assert_eq!(
                status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} {ct}: {resp}"
            );
            assert!(resp["error"]["message"]
                .as_str()
                .unwrap()
                .contains("application/json"));
        }
        let (status, _) = send(&app, "POST", path, &[HOST], body).await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{path} without a type"
        );
    }
    assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    let (status, body) = send(
        &app,
        "POST",
        "/v1/sessions/cli:direct/context",
        &[HOST, JSON],
        "",
    )
    .await;
    // Past the guard: the endpoint itself answers (no such session yet).
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an empty JSON body is fine: {body}"
    );
}

/// A page elsewhere (`Origin: https://evil.example`) cannot change anything,
/// even with a JSON body (which a browser sends only after a CORS preflight
/// the API never grants, but a page can still try).
#[tokio::test]
async fn a_foreign_origin_cannot_change_anything() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let write = json!({"mode": "daily", "text": "planted"}).to_string();
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1.evil.example:8767",
    ] {
        let (status, body) = send(
            &app,
            "POST",
            "/v1/memory/write",
            &[HOST, JSON, ("origin", origin)],
            &write,
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{origin}: {body}");
    }
    assert!(files(dir.path()).is_empty());
    // Reads stay readable (the browser keeps their answers from the page),
    // and the server's own origin may write.
    let (status, _) = send(
        &app,
        "GET",
        "/v1/sessions",
        &[HOST, ("origin", "https://evil.example")],
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = send(
        &app,
        "POST",
        "/v1/memory/write",
        &[HOST, JSON, ("origin", "http://127.0.0.1:8767")],
        &write,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Every error has the API's shape, also those axum answers itself (found
/// by fuzz_http_routing): a session key that does not decode, a method an
/// endpoint does not take.
#[tokio::test]
async fn routing_errors_have_the_api_shape() {
    let dir = tempfile::tempdir().unwrap();
    let app = app(dir.path());
    let (status, body) = send(&app, "GET", "/v1/sessions/%ec/messages", &[HOST], "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "invalid_input");
    let (status, body) = send(&app, "PUT", "/v1/sessions", &[HOST, JSON], "{}").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("PUT"));
}
