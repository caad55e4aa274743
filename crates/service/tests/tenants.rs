//! [`Tenants`] over the PostgreSQL server of `MNEMO_TEST_POSTGRES_URL`:
//! a server holding fewer workspaces open than it serves lets the one
//! used longest ago go and opens it again, from the database, with
//! nothing lost; a delete cut short is finished by the next start, and
//! rows written after a delete are swept unless the id is registered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use mnemo_core::Config;
use mnemo_service::args::{SearchArgs, WriteArgs};
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_store::Storage as _;
use mnemo_test_support::postgres::{execute, schemas_like, test_url};

async fn connect(url: &str, schema: &str, data: &Path, max_open: usize) -> Arc<Tenants> {
    let (url, schema, data) = (url.to_string(), schema.to_string(), data.to_path_buf());
    tokio::task::spawn_blocking(move || {
        Tenants::connect(TenantsConfig {
            url,
            schema,
            data,
            template: Config::parse("[embedder]\nkind = \"hash\"\n").unwrap(),
            overrides: Default::default(),
            admin_token: "admin".into(),
            max_open,
        })
        .unwrap()
    })
    .await
    .unwrap()
}

fn search(query: &str) -> SearchArgs {
    SearchArgs {
        query: query.into(),
        min_score: Some(0.0),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_let_go_is_opened_again_with_everything() {
    let Some(url) = test_url() else { return };
    let schema = format!("mo{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 1).await;
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
    let found = a2.search(search("kite windlass-orchid")).await.unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_delete_left_is_swept() {
    let Some(url) = test_url() else { return };
    let schema = format!("ms{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 8).await;
    let carol = tenants.create("carol".into()).await.unwrap().token;
    let dave = tenants.create("dave".into()).await.unwrap().token;
    for (id, token) in [("carol", &carol), ("dave", &dave)] {
        let s = tenants.authorize(id, Some(token)).await.unwrap();
        s.write(WriteArgs {
            text: format!("{id} rides a unicycle."),
            ..Default::default()
        })
        .await
        .unwrap();
        s.search(search("unicycle")).await.unwrap();
    }
    let indexes = |url: &str| schemas_like(url, &format!("{schema}_ix"));
    let before = indexes(&url);

    // A delete cut short after carol's rows and before her index: the
    // next start drops the index; dave's stays.
    execute(
        &url,
        &format!(
            "DELETE FROM {schema}.tenants WHERE workspace = 'carol';
             DELETE FROM {schema}.documents WHERE workspace = 'carol';"
        ),
    )
    .unwrap();
    drop(tenants);
    let tenants = connect(&url, &schema, data.path(), 8).await;
    let after = indexes(&url);
    assert!(after.len() < before.len(), "{before:?} -> {after:?}");
    assert!(!after.is_empty(), "dave's index went too");
    let d = tenants.authorize("dave", Some(&dave)).await.unwrap();
    let found = d.search(search("unicycle")).await.unwrap();
    assert!(found.results.iter().any(|h| h.snippet.contains("dave")));

    // Rows of a workspace that is not registered (written by a request
    // under way during its delete) are swept; a registered one's are not.
    let db = tenants.database().clone();
    let swept = tokio::task::spawn_blocking(move || {
        let ghost = db.workspace("ghost").unwrap();
        ghost
            .write("MEMORY.md", "# Memory\n", mnemo_store::Expect::Any)
            .unwrap();
        (
            db.delete_unregistered("ghost").unwrap(),
            db.delete_unregistered("dave").unwrap(),
        )
    })
    .await
    .unwrap();
    assert_eq!(swept, (1, 0));
    assert!(!d
        .search(search("unicycle"))
        .await
        .unwrap()
        .results
        .is_empty());

    tenants.delete("dave".into()).await.unwrap();
    assert!(indexes(&url).is_empty());
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
