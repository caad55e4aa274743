//! Who may talk to a server: loopback by default, a bearer token required
//! for any other address, and the middleware that checks it. Shared by the
//! MCP server and the HTTP API, which both go through [`guard`]:
//!
//! - On a loopback address the `Host` header must name a loopback host
//!   (`localhost`, `127.x.x.x`, `[::1]`): a web page that rebinds its own
//!   domain to 127.0.0.1 (DNS rebinding) sends its own name and is refused.
//! - A request that can change something (any method but GET, HEAD and
//!   OPTIONS) from a browser must come from the server's own origin (or, on
//!   loopback, another loopback origin): `Origin` naming any other site is
//!   refused, so a page elsewhere cannot post to the API.
//! - Every POST must say `Content-Type: application/json`: an HTML form can
//!   only send form-encoded, multipart or plain-text bodies.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
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

/// The token of an `Authorization: Bearer <token>` header, if there is one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

/// Axum middleware: every request must carry `Authorization: Bearer <token>`.
pub async fn require_bearer(State(token): State<Arc<str>>, req: Request, next: Next) -> Response {
    match bearer(req.headers()) {
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

/// What [`guard`] checks for one listening address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guard {
    /// True when the server listens on a loopback address: then only
    /// loopback host names are accepted in `Host`.
    pub loopback: bool,
}

impl Guard {
    /// The guard for a server listening on `local`.
    pub fn for_addr(local: &SocketAddr) -> Self {
        Guard {
            loopback: local.ip().is_loopback(),
        }
    }

    /// Why `method` with `headers` is refused, if it is: the status and the
    /// error body's code and message.
    pub fn check(
        &self,
        method: &Method,
        uri_authority: Option<&str>,
        headers: &HeaderMap,
    ) -> Option<(StatusCode, &'static str, String)> {
        let host = headers
            .get(header::HOST)
            .map(|h| h.to_str().ok())
            .unwrap_or(uri_authority);
        let host = match host.map(split_authority) {
            Some(Some(h)) => h,
            _ => {
                return Some((
                    StatusCode::BAD_REQUEST,
                    "invalid_input",
                    "missing or malformed Host header".into(),
                ))
            }
        };
        if self.loopback && !is_loopback_host(&host.0) {
            return Some((
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "Host `{}` is not allowed: this server listens on a loopback address and answers only \
                     requests for localhost, 127.0.0.1 or [::1] (a page that rebinds its own domain to this \
                     machine is refused); to serve other names, bind a non-loopback address with --token",
                    host.0
                ),
            ));
        }
        let safe = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        if !safe {
            if let Some(origin) = headers.get(header::ORIGIN) {
                let allowed = origin
                    .to_str()
                    .ok()
                    .and_then(parse_origin)
                    .is_some_and(|o| {
                        // A Host without a port means the scheme's default.
                        (o.0 == host.0 && (host.1.is_none() || o.1 == host.1))
                            || (self.loopback && is_loopback_host(&o.0))
                    });
                if !allowed {
                    return Some((
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        format!(
                            "Origin `{}` is not allowed to change anything here: requests from web pages \
                             must come from this server's own origin",
                            origin.to_str().unwrap_or("(not text)")
                        ),
                    ));
                }
            }
        }
        if *method == Method::POST && !is_json(headers) {
            return Some((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_input",
                "every POST must be sent with the header `Content-Type: application/json` (with a JSON \
                 body, or an empty one where the endpoint takes none)"
                    .into(),
            ));
        }
        None
    }
}

/// Axum middleware: refuses foreign `Host`s on loopback, foreign `Origin`s
/// on state-changing requests and POSTs that are not JSON (see the module
/// documentation), with the API's error shape.
pub async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let authority = req.uri().authority().map(|a| a.as_str().to_string());
    match g.check(req.method(), authority.as_deref(), req.headers()) {
        None => next.run(req).await,
        Some((status, code, message)) => {
            let body = serde_json::json!({"error": {"code": code, "message": message}});
            (status, axum::Json(body)).into_response()
        }
    }
}

/// `host[:port]` split into a lower-case host (brackets of an IPv6 literal
/// removed) and the port; None when it is not a valid authority.
fn split_authority(s: &str) -> Option<(String, Option<u16>)> {
    let a = s.trim().parse::<axum::http::uri::Authority>().ok()?;
    if a.as_str().contains('@') {
        return None;
    }
    let host = a.host().trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), a.port_u16()))
}

/// An `Origin` value (`scheme://host[:port]`) as host and port, the port
/// filled in from the scheme when absent; None for `null` and the like.
fn parse_origin(s: &str) -> Option<(String, Option<u16>)> {
    let (scheme, rest) = s.trim().split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let (host, port) = split_authority(rest)?;
    Some((host, Some(port.unwrap_or(default))))
}

fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Compares without an early exit so response time does not leak how much
/// of a guessed token was right.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves the router `build` makes for the listener's address until Ctrl-C
/// or SIGTERM, behind [`guarded`], after checking that a non-loopback
/// address has a token. The MCP server and the HTTP API both serve this way.
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    token: Option<&str>,
    build: impl FnOnce(SocketAddr) -> axum::Router,
) -> Result<()> {
    let local = listener.local_addr().map_err(|source| Error::Io {
        op: "cannot read the listening address".into(),
        source,
    })?;
    check_bind(&local, token)?;
    axum::serve(listener, guarded(build(local), &local))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|source| Error::Io {
            op: format!("serving {local}"),
            source,
        })
}

/// `router` behind [`guard`] for a server listening on `local`: no foreign
/// `Host` on loopback, no foreign `Origin` on a request that changes
/// something, JSON on every POST.
pub fn guarded(router: axum::Router, local: &SocketAddr) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        Guard::for_addr(local),
        guard,
    ))
}

/// `router` with the bearer check when a token is given.
pub fn with_token(router: axum::Router, token: Option<String>) -> axum::Router {
    match token {
        Some(t) => router.layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(t),
            require_bearer,
        )),
        None => router,
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
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

    fn refused(g: Guard, method: Method, headers: &[(&str, &str)]) -> Option<u16> {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        g.check(&method, None, &map).map(|(s, _, _)| s.as_u16())
    }

    #[test]
    fn guard_rules() {
        let lo = Guard { loopback: true };
        let public = Guard { loopback: false };
        let json = ("content-type", "application/json; charset=utf-8");
        for host in [
            "127.0.0.1:8767",
            "localhost",
            "LOCALHOST:1",
            "[::1]:80",
            "127.8.9.1",
            "app.localhost",
        ] {
            assert_eq!(refused(lo, Method::GET, &[("host", host)]), None, "{host}");
        }
        for host in ["evil.example:8767", "127.0.0.1.nip.io", "0.0.0.0", "[::2]"] {
            assert_eq!(
                refused(lo, Method::GET, &[("host", host)]),
                Some(403),
                "{host}"
            );
        }
        assert_eq!(refused(lo, Method::GET, &[]), Some(400));
        assert_eq!(refused(lo, Method::GET, &[("host", "a b")]), Some(400));
        assert_eq!(
            refused(lo, Method::GET, &[("host", "user@127.0.0.1")]),
            Some(400)
        );
        assert_eq!(
            refused(public, Method::GET, &[("host", "mnemo.example")]),
            None
        );
        // Origins on state-changing requests.
        let h = ("host", "127.0.0.1:8767");
        assert_eq!(refused(lo, Method::POST, &[h, json]), None);
        assert_eq!(
            refused(
                lo,
                Method::POST,
                &[h, json, ("origin", "http://127.0.0.1:8767")]
            ),
            None
        );
        assert_eq!(
            refused(
                lo,
                Method::POST,
                &[h, json, ("origin", "http://localhost:3000")]
            ),
            None
        );
        for o in [
            "https://evil.example",
            "null",
            "file://",
            "http://127.0.0.1.evil.example",
        ] {
            assert_eq!(
                refused(lo, Method::POST, &[h, json, ("origin", o)]),
                Some(403),
                "{o}"
            );
            assert_eq!(
                refused(lo, Method::DELETE, &[h, ("origin", o)]),
                Some(403),
                "{o}"
            );
            assert_eq!(refused(lo, Method::GET, &[h, ("origin", o)]), None, "{o}");
        }
        let ph = ("host", "mnemo.example");
        assert_eq!(
            refused(
                public,
                Method::POST,
                &[ph, json, ("origin", "https://mnemo.example")]
            ),
            None
        );
        assert_eq!(
            refused(
                public,
                Method::POST,
                &[ph, json, ("origin", "https://evil.example")]
            ),
            Some(403)
        );
        assert_eq!(
            refused(
                public,
                Method::POST,
                &[ph, json, ("origin", "http://localhost")]
            ),
            Some(403)
        );
        // JSON on every POST.
        for ct in [
            "application/x-www-form-urlencoded",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/jsonx",
        ] {
            assert_eq!(
                refused(lo, Method::POST, &[h, ("content-type", ct)]),
                Some(415),
                "{ct}"
            );
        }
        assert_eq!(refused(lo, Method::POST, &[h]), Some(415));
        assert_eq!(refused(lo, Method::GET, &[h]), None);
    }

    #[test]
    fn compares_tokens() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
