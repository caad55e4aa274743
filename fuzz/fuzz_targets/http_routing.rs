//! Request handling of the HTTP API: any method, path, query, headers and
//! body go, in process, through the router `mnemo serve` runs (guard,
//! routes, body extraction, the operations on a real keyword-only
//! workspace). No request may panic the server or get a 500; every error
//! has the API's shape. Same input layout and checks as the
//! `fuzz_http_routing` test: one byte each for method, host and content
//! type, then the request target up to a newline, then the body.
#![no_main]

use std::net::SocketAddr;
use std::sync::LazyLock;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use libfuzzer_sys::{fuzz_target, Corpus};
use mnemo_fuzz::http_checks;

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];
const HOSTS: &[&str] = &["127.0.0.1:8767", "localhost", "evil.example", "[::1]:1", ""];
const TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "",
];

static SERVER: LazyLock<(tokio::runtime::Runtime, Router)> = LazyLock::new(|| {
    let local: SocketAddr = "127.0.0.1:8767".parse().unwrap();
    let app = mnemo_service::guard::guarded(
        mnemo_http::router(mnemo_service::Service::new(mnemo_fuzz::workspace()), None),
        &local,
    );
    (mnemo_fuzz::runtime(), app)
});

fuzz_target!(|data: &[u8]| -> Corpus {
    let (rt, app) = &*SERVER;
    let pick = |i: usize, from: &[&'static str]| -> &'static str {
        let b = usize::from(data.get(i).copied().unwrap_or(0));
        from.get(b % from.len()).copied().unwrap_or_default()
    };
    let method = pick(0, METHODS);
    let host = pick(1, HOSTS);
    let ctype = pick(2, TYPES);
    let rest = data.get(3..).unwrap_or_default();
    let (target, body) = match rest.iter().position(|b| *b == b'\n') {
        Some(i) => (
            rest.get(..i).unwrap_or_default(),
            rest.get(i + 1..).unwrap_or_default(),
        ),
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
        return Corpus::Reject;
    };
    let (status, shape) = http_checks::answer(rt, app, req);
    http_checks::check_answer(method, &target, status, &shape);
    Corpus::Keep
});
