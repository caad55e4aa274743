//! [`Tenants`] over the PostgreSQL server of `MNEMO_TEST_POSTGRES_URL`:
//! a server holding fewer workspaces open than it serves lets the one
//! used longest ago go and opens it again, from the database, with
//! nothing lost; a delete cut short is finished by the next start, and
//! rows written after a delete are swept unless the id is registered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
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
            admin_token: Some("admin".into()),
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

/// Issue 43 N2: a request authorized on server B before the admin
/// deletes the workspace and creates it again through server A (a
/// consolidation or a turn still running) writes nothing into the new
/// workspace: its writes are refused as `not_found`, its reads find
/// nothing of the successor, and the new workspace starts empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_outlives_its_workspace_writes_nothing_into_the_next() {
    let Some(url) = test_url() else { return };
    let schema = format!("mr{}", std::process::id());
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = connect(&url, &schema, data_a.path(), 8).await;
    let b = connect(&url, &schema, data_b.path(), 8).await;

    let old = a.create("rc3".into()).await.unwrap().token;
    let on_b = b.authorize("rc3", Some(&old)).await.unwrap();
    on_b.write(WriteArgs {
        text: "MARK-OLDTENANT0 was said before the delete.".into(),
        ..Default::default()
    })
    .await
    .unwrap();

    a.delete("rc3".into()).await.unwrap();
    let new = a.create("rc3".into()).await.unwrap().token;
    let fresh = a.authorize("rc3", Some(&new)).await.unwrap();
    fresh
        .write(WriteArgs {
            text: "The new tenant keeps bees.".into(),
            ..Default::default()
        })
        .await
        .unwrap();

    // B's request goes on with the service it was authorized for.
    let late = on_b
        .write(WriteArgs {
            text: "MARK-OLDTENANT1 my bank PIN is 4711".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(late.code().as_str(), "not_found", "{late}");
    let message: mnemo_core::Message = serde_json::from_value(
        serde_json::json!({"role": "user", "content": "MARK-OLDTENANT2 more"}),
    )
    .unwrap();
    let appended = on_b
        .append(
            "s".into(),
            mnemo_service::args::AppendArgs {
                message: Some(message),
                messages: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(appended.code().as_str(), "not_found", "{appended}");
    let seen = on_b.search(search("bees")).await;
    assert!(
        seen.as_ref().map_or(true, |s| s.results.is_empty()),
        "the old request read the new tenant's memory: {seen:?}"
    );

    // Nothing of the old tenant in the new workspace, nor in the rows.
    let found = fresh
        .search(search("MARK-OLDTENANT1 bank PIN"))
        .await
        .unwrap();
    assert!(
        !found
            .results
            .iter()
            .any(|h| h.snippet.contains("OLDTENANT")),
        "{:#?}",
        found.results
    );
    let sessions = fresh.sessions().await.unwrap();
    assert!(
        serde_json::to_string(&sessions)
            .unwrap()
            .find("\"s\"")
            .is_none(),
        "{sessions:?}"
    );
    let db = a.database().clone();
    let leaked = tokio::task::spawn_blocking(move || {
        let rows = db.workspace("rc3").unwrap();
        let mut all = String::new();
        for e in rows.documents().unwrap() {
            if let Some(d) = rows.read(&e.rel).unwrap() {
                all.push_str(&d.text);
            }
        }
        all
    })
    .await
    .unwrap();
    assert!(!leaked.contains("OLDTENANT"), "{leaked}");
    assert!(leaked.contains("bees"), "{leaked}");

    a.delete("rc3".into()).await.unwrap();
    drop((a, b));
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}

/// Issue 43 N11: a NUL in a session key, which PostgreSQL's `text`
/// cannot hold, is the caller's bad key (400 `invalid_input`), not a
/// failure of the database (500).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_a_session_key_is_invalid_input() {
    let Some(url) = test_url() else { return };
    let schema = format!("mn{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 8).await;
    let token = tenants.create("alice".into()).await.unwrap().token;
    let alice = tenants.authorize("alice", Some(&token)).await.unwrap();
    let message: mnemo_core::Message =
        serde_json::from_value(serde_json::json!({"role": "user", "content": "hi"})).unwrap();
    let err = alice
        .append(
            "s1\0x".into(),
            mnemo_service::args::AppendArgs {
                message: Some(message),
                messages: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 400, "{err}");
    assert_eq!(err.code().as_str(), "invalid_input", "{err}");
    let err = alice
        .history("s1\0x".into(), Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 400, "{err}");

    tenants.delete("alice".into()).await.unwrap();
    drop(tenants);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}

/// A NUL in a workspace's text (PostgreSQL's text columns refuse it) is
/// stored and found like any other character: it never stops the index
/// from taking the workspace's later writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_text_never_stops_the_index() {
    let Some(url) = test_url() else { return };
    let schema = format!("nt{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 8).await;
    let token = tenants.create("alice".into()).await.unwrap().token;
    let alice = tenants.authorize("alice", Some(&token)).await.unwrap();
    let message: mnemo_core::Message = serde_json::from_value(
        serde_json::json!({"role": "user", "content": "the kite\0string is red"}),
    )
    .unwrap();
    alice
        .append(
            "s1".into(),
            mnemo_service::args::AppendArgs {
                message: Some(message),
                messages: None,
            },
        )
        .await
        .unwrap();
    alice
        .write(WriteArgs {
            text: "Prefers\0green tea.".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    for (query, want) in [("kite string", "sessions/s1"), ("green tea", "memory/")] {
        let out = alice.search(search(query)).await.unwrap();
        assert!(
            out.warnings
                .iter()
                .all(|w| !w.contains("index database error")),
            "{:?}",
            out.warnings
        );
        assert!(
            out.results.iter().any(|h| h.path.starts_with(want)),
            "{query}: {:?}",
            out.results
        );
    }

    tenants.delete("alice".into()).await.unwrap();
    drop(tenants);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}

/// The same lines score the same in a database workspace and in a folder
/// one that `mnemo init` made: both start with the same MEMORY.md, and
/// keyword scores depend on every document indexed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_workspace_scores_as_a_folder_does() {
    let Some(url) = test_url() else { return };
    let schema = format!("pa{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 8).await;
    let token = tenants.create("alice".into()).await.unwrap().token;
    let db = tenants.authorize("alice", Some(&token)).await.unwrap();

    let folder = tempfile::tempdir().unwrap();
    std::fs::write(
        folder.path().join("MEMORY.md"),
        mnemo_store::memory::INITIAL_MEMORY_MD,
    )
    .unwrap();
    let config = Config::parse("[embedder]\nkind = \"hash\"\n").unwrap();
    let mnemo = mnemo::Mnemo::open(mnemo_core::Workspace::new(folder.path()), config).unwrap();
    let local = mnemo_service::Service::new(Arc::new(mnemo));

    for service in [&db, &local] {
        for (name, text) in [
            ("Drinks", "Alice drinks espresso."),
            ("Home", "Alice lives in Porto."),
        ] {
            service
                .write(WriteArgs {
                    text: text.into(),
                    name: Some(name.into()),
                    description: Some(text.into()),
                    kind: Some(mnemo_service::args::MemoryTypeArg::User),
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    }
    for query in ["what does she drink?", "espresso", "where does Alice live?"] {
        let ask = || SearchArgs {
            query: query.into(),
            ..Default::default()
        };
        let (a, b) = (
            db.search(ask()).await.unwrap(),
            local.search(ask()).await.unwrap(),
        );
        let hits = |o: &mnemo_service::output::SearchOutput| {
            o.results
                .iter()
                .map(|h| (h.citation.clone(), h.score))
                .collect::<Vec<_>>()
        };
        let (ha, hb) = (hits(&a), hits(&b));
        assert_eq!(ha.len(), hb.len(), "{query}: {ha:?} against {hb:?}");
        for ((ca, sa), (cb, sb)) in ha.iter().zip(&hb) {
            assert_eq!(ca, cb, "{query}: {ha:?} against {hb:?}");
            assert!((sa - sb).abs() < 1e-4, "{query}: {ha:?} against {hb:?}");
        }
    }

    tenants.delete("alice".into()).await.unwrap();
    drop(tenants);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}

/// A workspace's index is built when the workspace is created, so its
/// first search pays no schema creation: the index schema is there before
/// any request, and holds the workspace's MEMORY.md.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_is_created_with_its_index() {
    let Some(url) = test_url() else { return };
    let schema = format!("ci{}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let tenants = connect(&url, &schema, data.path(), 8).await;
    assert!(schemas_like(&url, &format!("{schema}_ix")).is_empty());
    tenants.create("erin".into()).await.unwrap();
    let indexes = schemas_like(&url, &format!("{schema}_ix"));
    assert!(!indexes.is_empty(), "no index schema after the create");
    // MEMORY.md's words are in the index's chunks before any search.
    let rows = mnemo_test_support::postgres::rows_holding(
        &url,
        &[&format!("{schema}_ix")],
        "Core facts that hold across sessions",
    );
    assert!(
        rows.iter().any(|r| r.contains(".chunks.")),
        "MEMORY.md not indexed at creation: {rows:?}"
    );

    tenants.delete("erin".into()).await.unwrap();
    drop(tenants);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
