//! Fuzz target of the routes of a server of many workspaces (`mnemo serve
//! --database`), run by `mnemo_test_support::fuzz` inside `cargo test`
//! (budget from `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`), on the PostgreSQL
//! server of `MNEMO_TEST_POSTGRES_URL`: any method, path, token, headers
//! and body go through the router the server runs (guard, admin routes,
//! each workspace's API). No request may panic the server or get a 500;
//! every error has the API's shape; and a workspace's token never reaches
//! another workspace: with `a`'s token, nothing under
//! `/v1/workspaces/b/` succeeds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;

use axum::body::Body;
use axum::http::Request;
use mnemo_core::Config;
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_test_support::fuzz::{fingerprint, Fuzz};
use mnemo_test_support::postgres::{execute, test_url};

const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"];
const TYPES: &[&str] = &["application/json", "text/plain", ""];
/// Which token a request carries: none, the admin's, `a`'s, `b`'s, a
/// wrong one.
const TOKENS: usize = 5;

#[test]
fn fuzz_tenant_routes() {
    let Some(url) = test_url() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    // Short: a tenants schema takes at most 24 characters.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("fz{}x{nanos}", std::process::id());
    let config = TenantsConfig {
        url,
        schema: schema.clone(),
        data: data.path().to_path_buf(),
        template: Config::parse("[embedder]\nkind = \"none\"\n").unwrap(),
        overrides: Default::default(),
        admin_token: Some("admin-secret".into()),
        max_open: 8,
    };
    let tenants = rt
        .block_on(async { tokio::task::spawn_blocking(move || Tenants::connect(config)).await })
        .unwrap()
        .unwrap();
    let token_a = rt.block_on(tenants.create("a".into())).unwrap().token;
    let token_b = rt.block_on(tenants.create("b".into())).unwrap().token;
    let local: SocketAddr = "127.0.0.1:8767".parse().unwrap();
    // MCP mounted as `mnemo serve --database` mounts it, so that its
    // route is fuzzed behind the same token checks.
    let cancel = tokio_util::sync::CancellationToken::new();
    let mcp: mnemo_http::McpRouter =
        std::sync::Arc::new(move |service| mnemo_mcp::router(service, None, cancel.clone()));
    let app = rt.block_on(async {
        mnemo_service::guard::guarded(mnemo_http::tenants_router(tenants, Some(mcp)), &local)
    });
    let tokens = [
        None,
        Some("admin-secret".to_string()),
        Some(token_a),
        Some(token_b),
        Some("not-a-token".to_string()),
    ];
    // Input: one byte each for method, content type and token, then the
    // request target up to a newline, then the body.
    let report = Fuzz::new("http-tenants")
        .seeds([
            b"\x00\x00\x01/v1/workspaces\n".to_vec(),
            b"\x01\x00\x01/v1/workspaces\n{\"id\":\"c\"}".to_vec(),
            b"\x03\x00\x01/v1/workspaces/c\n".to_vec(),
            b"\x01\x00\x02/v1/workspaces/a/memory/write\n{\"mode\":\"daily\",\"text\":\"kite\"}".to_vec(),
            b"\x01\x00\x02/v1/workspaces/a/memory/search\n{\"query\":\"kite\"}".to_vec(),
            b"\x01\x00\x02/v1/workspaces/b/memory/search\n{\"query\":\"kite\"}".to_vec(),
            b"\x00\x00\x03/v1/workspaces/b/memory/get?path=MEMORY.md\n".to_vec(),
            b"\x01\x00\x03/v1/workspaces/b/sessions/s%00x/messages\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".to_vec(),
            b"\x00\x00\x02/v1/workspaces/a/sessions/s1/messages?since_cursor=true\n".to_vec(),
            // A name that does not decode (issue 43's probe: a bare 400).
            b"\x01\x00\x03/v1/workspaces/b/sessions/s%80x/messages\n{}".to_vec(),
            b"\x03\x00\x01/v1/workspaces/%C3%28\n".to_vec(),
            b"\x00\x00\x00/health\n".to_vec(),
            b"\x01\x00\x02/v1/workspaces/a/mcp\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_search\",\"arguments\":{\"query\":\"kite\"}}}".to_vec(),
            b"\x01\x00\x02/v1/workspaces/b/mcp\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}".to_vec(),
        ])
        .dict([
            "/v1/workspaces", "/a", "/b", "/c", "/memory", "/sessions", "/search", "/get",
            "/write", "/messages", "/context", "/compact", "/consolidate", "?path=", "%00",
            "%2F", "..", "//", "{\"id\":\"", "{\"query\":\"", "\"mode\":\"typed\"",
            "\"name\":\"", "{\"messages\":[", "😀", "/mcp", "\"jsonrpc\":\"2.0\"",
            "\"method\":\"tools/call\"",
        ])
        .max_len(8 * 1024)
        .run(|data| {
            let pick = |i: usize, n: usize| usize::from(data.get(i).copied().unwrap_or(0)) % n;
            let method = METHODS[pick(0, METHODS.len())];
            let ctype = TYPES[pick(1, TYPES.len())];
            let token = &tokens[pick(2, TOKENS)];
            let rest = data.get(3..).unwrap_or_default();
            let (target, body) = match rest.iter().position(|b| *b == b'\n') {
                Some(i) => (
                    rest.get(..i).unwrap_or_default(),
                    rest.get(i + 1..).unwrap_or_default(),
                ),
                None => (rest, &[][..]),
            };
            let target = String::from_utf8_lossy(target);
            let mut req = Request::builder()
                .method(method)
                .uri(target.as_ref())
                .header("host", "127.0.0.1:8767")
                // What an MCP client sends; the API ignores it.
                .header("accept", "application/json, text/event-stream");
            if !ctype.is_empty() {
                req = req.header("content-type", ctype);
            }
            if let Some(t) = token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            let Ok(req) = req.body(Body::from(body.to_vec())) else {
                return 0;
            };
            let route = req.uri().path().to_string();
            let (status, shape) = common::answer(&rt, &app, req);
            if route.ends_with("/mcp") && status.as_u16() != 401 && status.as_u16() != 403 {
                // Past the token check, MCP answers in JSON-RPC's shape.
                assert!(status.as_u16() < 500, "{method} {target} -> {status}");
            } else {
                common::check_answer(method, &target, status, &shape);
            }
            // `a`'s token never opens `b`, nor `b`'s `a`.
            let other = match pick(2, TOKENS) {
                2 => Some("/v1/workspaces/b"),
                3 => Some("/v1/workspaces/a"),
                _ => None,
            };
            if let Some(prefix) = other {
                // The path the router sees (no query, no fragment).
                let path = route.as_str();
                // `{prefix}/` is the inspector's page, the same for everyone
                // and holding no data (its views ask the API, token checked).
                let page = path == format!("{prefix}/");
                if !page && (path == prefix || path.starts_with(&format!("{prefix}/"))) {
                    assert!(
                        !status.is_success(),
                        "{method} {target} with another workspace's token -> {status}"
                    );
                }
            }
            fingerprint(&(method, pick(2, TOKENS), status.as_u16(), shape))
        });
    assert!(report.executions > 0, "{report:?}");
    // Leave nothing behind on the shared server.
    let url = test_url().unwrap();
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
