//! Who may talk to a server: loopback by default, a bearer token required
//! for any other address, and the middleware that checks it. Shared by the
//! MCP server and the HTTP API.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{Error, Result};

/// Refuses to serve a non-loopback address without a token, and refuses an
/// empty token.
pub fn check_bind(addr: &SocketAddr, token: Option<&str>) -> Result<()> {
    if token.is_some_and(|t| t.trim().is_empty()) {
        return Err(Error::Unsafe("the token is empty: pass a long random --token (or MNEMO_TOKEN), or none on a loopback address".into()));
    }
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(Error::Unsafe(format!(
            "refusing to serve {addr} without a token: anyone who can reach it could read and write this \
             workspace's memory. Pass --token TOKEN (or set MNEMO_TOKEN), or bind to 127.0.0.1"
        )));
    }
    Ok(())
}

/// Binds `addr` after [`check_bind`].
pub async fn bind(addr: SocketAddr, token: Option<&str>) -> Result<tokio::net::TcpListener> {
    check_bind(&addr, token)?;
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Io {
            op: format!("cannot listen on {addr}"),
            source,
        })
}

/// Axum middleware: every request must carry `Authorization: Bearer <token>`.
pub async fn require_bearer(State(token): State<Arc<str>>, req: Request, next: Next) -> Response {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), token.as_bytes()) => next.run(req).await,
        other => {
            let message = if other.is_none() {
                "missing bearer token: send the header `Authorization: Bearer <token>` with the server's --token"
            } else {
                "wrong bearer token: send the token the server was started with (--token or MNEMO_TOKEN)"
            };
            let body = serde_json::json!({"error": {"code": "unauthorized", "message": message}});
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                axum::Json(body),
            )
                .into_response()
        }
    }
}

/// Compares without an early exit so response time does not leak how much
/// of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_a_token() {
        let any: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(check_bind(&any, None).is_err());
        assert!(check_bind(&any, Some("s3cret")).is_ok());
        assert!(check_bind(&lo, None).is_ok());
        assert!(check_bind(&lo, Some(" ")).is_err());
    }

    #[test]
    fn compares_tokens() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
