//! [`Tenants`] over the PostgreSQL server of `MNEMO_TEST_POSTGRES_URL`:
//! a server holding fewer workspaces open than it serves lets the one
//! used longest ago go and opens it again, from the database, with
//! nothing lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_core::Config;
use mnemo_service::args::{SearchArgs, WriteArgs};
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_test_support::postgres::{execute, schemas_like, test_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_let_go_is_opened_again_with_everything() {
    let Some(url) = test_url() else { return };
    let schema = format!("mo{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let (url2, schema2, dir) = (url.clone(), schema.clone(), data.path().to_path_buf());
    let tenants = tokio::task::spawn_blocking(move || {
        Tenants::connect(TenantsConfig {
            url: url2,
            schema: schema2,
            data: dir,
            template: Config::parse("[embedder]\nkind = \"hash\"\n").unwrap(),
            overrides: Default::default(),
            admin_token: "admin".into(),
            max_open: 1,
        })
        .unwrap()
    })
    .await
    .unwrap();
    let alice = tenants.create("alice".into()).await.unwrap().token;
    let bob = tenants.create("bob".into()).await.unwrap().token;

    let a1 = tenants.authorize("alice", Some(&alice)).await.unwrap();
    a1.write(WriteArgs {
        text: "Alice's kite is called windlass-orchid.".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let again = tenants.authorize("alice", Some(&alice)).await.unwrap();
    assert!(
        Arc::ptr_eq(&a1, &again),
        "an open workspace is served as it is"
    );

    // Bob's turn lets alice go; her next request opens her again.
    tenants.authorize("bob", Some(&bob)).await.unwrap();
    let a2 = tenants.authorize("alice", Some(&alice)).await.unwrap();
    assert!(!Arc::ptr_eq(&a1, &a2), "alice was held open past the limit");
    let found = a2
        .search(SearchArgs {
            query: "kite windlass-orchid".into(),
            min_score: Some(0.0),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(
        found
            .results
            .iter()
            .any(|h| h.snippet.contains("windlass-orchid")),
        "{:#?}",
        found.results
    );

    for id in ["alice", "bob"] {
        tenants.delete(id.into()).await.unwrap();
    }
    assert!(schemas_like(&url, &format!("{schema}_ix")).is_empty());
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
