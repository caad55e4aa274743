//! A tool call of a workspace deleted while its client still holds it
//! (issue 43 N12): MCP answers inside a successful JSON-RPC reply, so the
//! HTTP layer's check of the registration never sees the failure; the
//! tool's error itself must say the workspace is gone (`not_found`), never
//! `internal` or `io` with advice to retry. On the PostgreSQL server of
//! `MNEMO_TEST_POSTGRES_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Config;
use mnemo_mcp::MnemoServer;
use mnemo_service::args::WriteArgs;
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_test_support::postgres::{execute, test_url};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_of_a_deleted_workspace_is_not_found() {
    let Some(url) = test_url() else { return };
    let schema = format!("md{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = {
        let (url, schema, data) = (url.clone(), schema.clone(), data.path().to_path_buf());
        tokio::task::spawn_blocking(move || {
            Tenants::connect(TenantsConfig {
                url,
                schema,
                data,
                template: Config::parse("[embedder]\nkind = \"hash\"\n").unwrap(),
                overrides: Default::default(),
                admin_token: Some("admin".into()),
                max_open: 8,
            })
            .unwrap()
        })
        .await
        .unwrap()
    };
    let token = tenants.create("gone".into()).await.unwrap().token;
    let service = tenants.authorize("gone", Some(&token)).await.unwrap();
    service
        .write(WriteArgs {
            text: "The kite is called windlass-orchid.".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let server = MnemoServer::new(service.clone());
    let search = json!({"query": "kite windlass-orchid"});
    let first = server.call("memory_search", search.clone()).await.unwrap();
    let first = serde_json::to_value(&first).unwrap();
    assert!(
        first["structuredContent"]["results"]
            .as_array()
            .is_some_and(|h| !h.is_empty()),
        "{first}"
    );

    tenants.delete("gone".into()).await.unwrap();
    for (tool, args) in [
        ("memory_search", search),
        ("memory_write", json!({"text": "written after the delete"})),
    ] {
        let answer = server.call(tool, args).await.unwrap();
        let v = serde_json::to_value(&answer).unwrap();
        let code = &v["structuredContent"]["error"]["code"];
        assert_eq!(code, "not_found", "{tool}: {v}");
    }

    drop(server);
    drop(service);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
