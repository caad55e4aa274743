//! Fuzz target of the HTTP API's request routing, run by
//! `mnemo_test_support::fuzz` inside `cargo test` (budget from
//! `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`): any method, path, query, headers
//! and body go through the router `mnemo serve` runs (guard, routes, body
//! extraction, the operations on a real keyword-only workspace). No request
//! may panic the server or get a 500; every error has the API's shape.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use mnemo_core::{Config, Workspace};
use mnemo_test_support::fuzz::{fingerprint, Fuzz};

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
const HOSTS: &[&str] = &["127.0.0.1:8767", "localhost", "evil.example", "[::1]:1", ""];
const TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "",
];

#[test]
fn fuzz_http_routing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("MEMORY.md"),
        "# Core\n- Dana lives in Porto.\n",
    )
    .unwrap();
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let mnemo = Arc::new(mnemo::Mnemo::open(Workspace::new(dir.path()), config).unwrap());
    let local: SocketAddr = "127.0.0.1:8767".parse().unwrap();
    let app = mnemo_service::guard::guarded(
        mnemo_http::router(mnemo_service::Service::new(mnemo), None),
        &local,
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Input: one byte each for method, host and content type, then the
    // request target up to a newline, then the body.
    Fuzz::new("http-routing")
        .seeds([
            b"\x00\x00\x00/v1/sessions\n".to_vec(),
            b"\x01\x00\x00/v1/memory/search\n{\"query\":\"where does Dana live?\",\"max_results\":3}".to_vec(),
            b"\x01\x00\x00/v1/memory/write\n{\"mode\":\"daily\",\"text\":\"[12:34]\xc3\xa9x\"}".to_vec(),
            b"\x01\x01\x00/v1/memory/write\n{\"mode\":\"typed\",\"name\":\"Tea\",\"description\":\"d\",\"type\":\"user\",\"body\":\"b\"}".to_vec(),
            b"\x00\x00\x00/v1/memory/get?path=MEMORY.md&from=1&lines=2\n".to_vec(),
            b"\x01\x00\x00/v1/sessions/cli:direct/messages\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".to_vec(),
            b"\x00\x00\x00/v1/sessions/cli:direct/messages?since_cursor=true\n".to_vec(),
            b"\x01\x00\x00/v1/sessions/cli%3Adirect/context\n{\"message\":\"hi\"}".to_vec(),
            b"\x01\x00\x00/v1/sessions/x/compact\n".to_vec(),
            b"\x01\x00\x00/v1/sessions/x/consolidate\n".to_vec(),
            b"\x01\x00\x00/v1/sessions/x/turn\n{\"message\":\"hi\"}".to_vec(),
            b"\x00\x00\x00/openapi.json\n".to_vec(),
        ])
        .dict([
            "/v1/", "sessions", "memory", "/messages", "/context", "/compact", "/consolidate",
            "/turn", "search", "get", "write", "?path=", "&from=", "&lines=", "%", "%2F", "%00",
            "..", "//", "{\"", "\":", "\"mode\":\"daily\"", "\"text\":", "\"query\":", "\"messages\":[",
            "{\"role\":\"user\",\"content\":\"x\"}", "\"level\":", "\"focus\":", "99999999999999999999",
        ])
        .max_len(16 * 1024)
        .run(|data| {
            let pick = |i: usize, from: &[&'static str]| -> &'static str {
                let b = usize::from(data.get(i).copied().unwrap_or(0));
                from.get(b % from.len()).copied().unwrap_or_default()
            };
            let method = pick(0, METHODS);
            let host = pick(1, HOSTS);
            let ctype = pick(2, TYPES);
            let rest = data.get(3..).unwrap_or_default();
            let (target, body) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) => (rest.get(..i).unwrap_or_default(), rest.get(i + 1..).unwrap_or_default()),
                None => (rest, &[][..]),
            };
            let target = String::from_utf8_lossy(target);
            let mut req = Request::builder().method(method).uri(target.as_ref());
            if !host.is_empty() {
                req = req.header("host", host);
            }
            if !ctype.is_empty() {
                req = req.header("content-type", ctype);
            }
            // Targets the HTTP layer itself would refuse never reach the router.
            let Ok(req) = req.body(Body::from(body.to_vec())) else {
                return 0;
            };
            let (status, shape) = common::answer(&rt, &app, req);
            common::check_answer(method, &target, status, &shape);
            fingerprint(&(method, host.is_empty(), status.as_u16(), shape))
        });
}
