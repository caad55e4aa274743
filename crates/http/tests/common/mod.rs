//! What the HTTP fuzz targets check of every answer.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

/// `req`'s answer from `app`: its status and, when the body is JSON, its
/// `error.code` (`Some(None)`: JSON without one).
pub fn answer(
    rt: &tokio::runtime::Runtime,
    app: &Router,
    req: Request<Body>,
) -> (StatusCode, Option<Option<Value>>) {
    rt.block_on(async {
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 64 << 20)
            .await
            .unwrap();
        let shape = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .map(|v| v.get("error").and_then(|e| e.get("code")).cloned());
        (status, shape)
    })
}

/// No 500, and every refusal (but a HEAD's, which has no body) in the
/// API's `{"error": {"code": …}}` shape.
pub fn check_answer(method: &str, target: &str, status: StatusCode, shape: &Option<Option<Value>>) {
    assert_ne!(status.as_u16(), 500, "{method} {target}: {shape:?}");
    if (status.is_client_error() || status.is_server_error()) && method != "HEAD" {
        assert!(
            matches!(shape, Some(Some(Value::String(_)))),
            "{method} {target} -> {status} without an error code: {shape:?}"
        );
    }
}
