//! `mnemo serve --database`: many workspaces in the PostgreSQL server of
//! `MNEMO_TEST_POSTGRES_URL`, behind two real server processes sharing
//! it. Workspaces are created, listed and deleted with the admin token;
//! each one's API and MCP endpoint open with its own token only (401
//! without one, the same 403 for a wrong token whether or not the
//! workspace exists); what one server writes the other serves; a
//! deleted workspace leaves no row, no index schema and no folder, and
//! its token opens nothing on either server. Vectors come from the hash
//! embedder, so the test needs no model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mnemo_test_support::cli::{free_port, http_request, mnemo_command, start_listening, Server};
use mnemo_test_support::postgres::{rows_holding, schemas_like, test_url};
use serde_json::{json, Value};

const ADMIN: &str = "admin-t0ken";

fn serve(ws: &Path, url: &str, schema: &str, data: &Path) -> Server {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let data = data.display().to_string();
    let args = [
        "--set",
        "embedder.kind=hash",
        "serve",
        "--http",
        &addr,
        "--database",
        url,
        "--admin-token",
        ADMIN,
        "--schema",
        schema,
        "--data",
        &data,
    ];
    let child = start_listening(mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &args));
    Server { child, port }
}

/// One request: (status, JSON answer).
fn call(
    s: &Server,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    let body = body.map(|b| b.to_string());
    let (status, text) = http_request(s.port, method, path, &headers, body.as_deref());
    let v = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, v)
}

/// One MCP request (JSON-RPC over streamable HTTP) to a workspace.
fn mcp(s: &Server, id: &str, token: &str, body: Value) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let path = format!("/v1/workspaces/{id}/mcp");
    let (status, text) = http_request(s.port, "POST", &path, &headers, Some(&body.to_string()));
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A schema name of this run, short enough for a tenants' base.
fn tenants_schema() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("mt{}x{}", std::process::id(), nanos % 100_000)
}

fn create(s: &Server, id: &str) -> String {
    let (status, v) = call(
        s,
        "POST",
        "/v1/workspaces",
        Some(ADMIN),
        Some(json!({ "id": id })),
    );
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["id"], id);
    v["token"].as_str().unwrap().to_string()
}

fn search(s: &Server, id: &str, token: &str, query: &str) -> Vec<String> {
    let (status, v) = call(
        s,
        "POST",
        &format!("/v1/workspaces/{id}/memory/search"),
        Some(token),
        Some(json!({ "query": query, "min_score": 0.0 })),
    );
    assert_eq!(status, 200, "{v}");
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["snippet"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn workspaces_are_isolated_shared_by_servers_and_deleted_without_a_trace() {
    let Some(url) = test_url() else { return };
    let schema = tenants_schema();
    let (ws_a, ws_b, data_a, data_b) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    // Server A's connections carry a name of their own, for the outage below.
    let app = format!("{schema}a");
    let sep = if url.contains('?') { '&' } else { '?' };
    let url_a = format!("{url}{sep}application_name={app}");
    let a = serve(ws_a.path(), &url_a, &schema, data_a.path());
    let b = serve(ws_b.path(), &url, &schema, data_b.path());

    // The document describes this server's routes.
    let (status, doc) = call(&a, "GET", "/openapi.json", None, None);
    assert_eq!(status, 200);
    assert!(doc["paths"]["/v1/workspaces/{id}/memory/search"]["post"].is_object());

    // Only the admin token manages workspaces.
    let (status, v) = call(
        &a,
        "POST",
        "/v1/workspaces",
        None,
        Some(json!({"id": "alice"})),
    );
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (401, Some("unauthorized")),
        "{v}"
    );
    let (status, v) = call(
        &a,
        "POST",
        "/v1/workspaces",
        Some("nope"),
        Some(json!({"id": "alice"})),
    );
    assert_eq!(status, 403, "{v}");
    let (status, v) = call(
        &a,
        "POST",
        "/v1/workspaces",
        Some(ADMIN),
        Some(json!({"id": "../x"})),
    );
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid_input")),
        "{v}"
    );

    let alice = create(&a, "alice");
    let bob = create(&b, "bob");
    let (status, v) = call(
        &b,
        "POST",
        "/v1/workspaces",
        Some(ADMIN),
        Some(json!({"id": "alice"})),
    );
    assert_eq!(status, 409, "a second create of one id: {v}");
    let (status, v) = call(&b, "GET", "/v1/workspaces", Some(ADMIN), None);
    assert_eq!(status, 200);
    let ids: Vec<&str> = v["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alice", "bob"]);

    // Each writes through one server.
    let (status, v) = call(
        &a,
        "POST",
        "/v1/workspaces/alice/memory/write",
        Some(&alice),
        Some(json!({"text": "Alice keeps bees named quokkaflux on the roof."})),
    );
    assert_eq!(status, 200, "{v}");
    let (status, v) = call(
        &a,
        "POST",
        "/v1/workspaces/alice/sessions/api:chat/messages",
        Some(&alice),
        Some(json!({"message": {"role": "user", "content": "my locker code is zebrastripe-4411"}})),
    );
    assert_eq!(status, 201, "{v}");
    let (status, v) = call(
        &b,
        "POST",
        "/v1/workspaces/bob/memory/write",
        Some(&bob),
        Some(json!({"text": "Bob restores a quokkaflux-free sailboat."})),
    );
    assert_eq!(status, 200, "{v}");

    // The other server serves it: the memory and the session.
    let hits = search(&b, "alice", &alice, "bees quokkaflux roof");
    assert!(hits.iter().any(|h| h.contains("bees")), "{hits:?}");
    assert!(
        !hits.iter().any(|h| h.contains("sailboat")),
        "bob's memory in alice's search: {hits:?}"
    );
    let (status, v) = call(
        &b,
        "GET",
        "/v1/workspaces/alice/sessions/api:chat/messages",
        Some(&alice),
        None,
    );
    assert_eq!(status, 200, "{v}");
    assert!(v.to_string().contains("zebrastripe-4411"), "{v}");
    let hits = search(&a, "bob", &bob, "quokkaflux sailboat");
    assert!(
        hits.iter().all(|h| !h.contains("bees")),
        "alice's memory in bob's search: {hits:?}"
    );

    // A workspace's token opens it and nothing else; a missing token is
    // 401, a wrong one 403, and an unknown workspace looks the same.
    let (status, missing) = call(
        &a,
        "POST",
        "/v1/workspaces/alice/memory/search",
        None,
        Some(json!({"query": "bees"})),
    );
    assert_eq!(status, 401, "{missing}");
    let (status, wrong) = call(
        &a,
        "POST",
        "/v1/workspaces/alice/memory/search",
        Some(&bob),
        Some(json!({"query": "bees"})),
    );
    assert_eq!(status, 403, "{wrong}");
    let (status, unknown) = call(
        &a,
        "POST",
        "/v1/workspaces/carol/memory/search",
        Some(&bob),
        Some(json!({"query": "bees"})),
    );
    assert_eq!(status, 403, "{unknown}");
    assert_eq!(
        wrong, unknown,
        "a wrong token tells whether the workspace exists"
    );
    let (status, v) = call(&a, "GET", "/v1/workspaces", Some(&alice), None);
    assert_eq!(status, 403, "a workspace token manages nothing: {v}");

    // MCP per workspace, with the same tokens.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, _) = mcp(&b, "alice", &bob, init.clone());
    assert_eq!(status, 403);
    let (status, v) = mcp(&b, "alice", &alice, init);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["serverInfo"]["name"], "mnemo", "{v}");
    let call_search = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": "bees quokkaflux"}}});
    let (status, v) = mcp(&b, "alice", &alice, call_search);
    assert_eq!(status, 200, "{v}");
    let found = v["result"]["structuredContent"].to_string();
    assert!(found.contains("bees") && !found.contains("sailboat"), "{v}");

    // The database cuts every connection of server A: a request fails
    // cleanly (a JSON error) or not at all, and A serves again at once.
    mnemo_test_support::postgres::execute(
        &url,
        &format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '{app}'"
        ),
    )
    .unwrap();
    let served = (0..20).any(|_| {
        let (status, v) = call(
            &a,
            "POST",
            "/v1/workspaces/alice/memory/search",
            Some(&alice),
            Some(json!({"query": "bees quokkaflux"})),
        );
        assert!(
            status == 200 || (status >= 500 && v["error"]["code"].is_string()),
            "{status} {v}"
        );
        status == 200 && v.to_string().contains("bees")
    });
    assert!(served, "server A does not serve again after the outage");

    // Delete: every row, the index schemas, the folders; the token then
    // opens nothing anywhere, and bob is untouched.
    let before = rows_holding(&url, &[&schema], "quokkaflux");
    assert!(
        before.iter().any(|t| t.contains("_ix"))
            && before.iter().any(|t| t.ends_with("documents.body")),
        "alice's words are in the store and in her index: {before:?}"
    );
    let (status, v) = call(&b, "DELETE", "/v1/workspaces/alice", Some(ADMIN), None);
    assert_eq!(status, 200, "{v}");
    assert!(v["rows"].as_u64().unwrap() >= 3, "{v}");
    assert!(v["index_schemas"].as_u64().unwrap() >= 1, "{v}");
    for s in [&a, &b] {
        let (status, v) = call(
            s,
            "POST",
            "/v1/workspaces/alice/memory/search",
            Some(&alice),
            Some(json!({"query": "bees"})),
        );
        assert_eq!(
            status, 403,
            "a deleted workspace's token still opens it: {v}"
        );
    }
    for needle in ["bees named", "zebrastripe-4411", "alice"] {
        let left = rows_holding(&url, &[&schema], needle);
        assert!(left.is_empty(), "{needle:?} is still in {left:?}");
    }
    let bob_schemas = schemas_like(&url, &format!("{schema}_ix"));
    assert!(!bob_schemas.is_empty(), "bob's index is there");
    let hits = search(&a, "bob", &bob, "quokkaflux sailboat");
    assert!(hits.iter().any(|h| h.contains("sailboat")), "{hits:?}");
    for data in [&data_a, &data_b] {
        let left: Vec<String> = std::fs::read_dir(data.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("alice-"))
            .collect();
        assert!(left.is_empty(), "alice's folder is left: {left:?}");
    }
    let (status, _) = call(&a, "DELETE", "/v1/workspaces/alice", Some(ADMIN), None);
    assert_eq!(status, 404, "a second delete finds nothing");

    // Created again, the id starts empty.
    let alice2 = create(&a, "alice");
    assert!(search(&b, "alice", &alice2, "bees quokkaflux")
        .iter()
        .all(|h| !h.contains("bees")));
    for id in ["alice", "bob"] {
        let (status, v) = call(
            &a,
            "DELETE",
            &format!("/v1/workspaces/{id}"),
            Some(ADMIN),
            None,
        );
        assert_eq!(status, 200, "{v}");
    }
    assert!(schemas_like(&url, &format!("{schema}_ix")).is_empty());
    drop((a, b));
    drop_schema(&url, &schema);
}

/// Drops the store's schema this test made.
fn drop_schema(url: &str, schema: &str) {
    let left = schemas_like(url, schema);
    assert!(
        left.iter().all(|s| s == schema),
        "schemas left behind: {left:?}"
    );
    let _ = mnemo_test_support::postgres::execute(
        url,
        &format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
    );
}

/// Each workspace of a multi-tenant server has the inspector's page at
/// `/v1/workspaces/ID/`: the page without a token (it holds no data), its
/// views only with that workspace's token; in a browser, the page asks
/// its own workspace's API.
#[test]
fn each_workspace_has_its_inspector_page() {
    let Some(url) = test_url() else { return };
    let schema = tenants_schema();
    let (ws, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let s = serve(ws.path(), &url, &schema, data.path());
    let ana = create(&s, "ana");
    let bob = create(&s, "bob");
    let (status, _) = call(
        &s,
        "POST",
        "/v1/workspaces/ana/memory/write",
        Some(&ana),
        Some(json!({"text": "Ana keeps bees on the roof.", "name": "bees", "type": "user"})),
    );
    assert_eq!(status, 200);
    let (status, page) = http_request(s.port, "GET", "/v1/workspaces/ana/", &[], None);
    assert_eq!(status, 200);
    assert!(page.contains("<title>mnemo inspector</title>"), "{page}");
    // `/` holds no workspace: it says which address opens one.
    let (status, root) = http_request(s.port, "GET", "/", &[], None);
    assert_eq!(status, 200);
    assert!(root.contains("/v1/workspaces/ID/"), "{root}");
    let (status, _) = call(&s, "GET", "/v1/workspaces/ana/inspect/memory", None, None);
    assert_eq!(status, 401);
    let (status, _) = call(
        &s,
        "GET",
        "/v1/workspaces/ana/inspect/memory",
        Some(&bob),
        None,
    );
    assert_eq!(status, 403);
    let (status, v) = call(
        &s,
        "GET",
        "/v1/workspaces/ana/inspect/memory",
        Some(&ana),
        None,
    );
    assert_eq!(status, 200, "{v}");
    assert!(v["memory_md"].as_str().unwrap().contains("bees"), "{v}");
    match mnemo_test_support::webdriver::missing() {
        Some(why) => assert!(std::env::var_os("CI").is_none(), "{why}"),
        None => {
            let b = mnemo_test_support::webdriver::Browser::start(1024, 768);
            b.goto(&format!(
                "http://127.0.0.1:{}/v1/workspaces/ana/#token={ana}",
                s.port
            ));
            b.wait_text("#files", "bees");
            assert!(b.text_of("#where").contains("workspace ana"));
        }
    }
    let _ = call(&s, "DELETE", "/v1/workspaces/ana", Some(ADMIN), None);
    let _ = call(&s, "DELETE", "/v1/workspaces/bob", Some(ADMIN), None);
    drop(s);
    drop_schema(&url, &schema);
}
