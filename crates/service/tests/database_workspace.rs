//! A workspace kept in PostgreSQL, served by two services at once (two
//! servers of one deployment): what one writes, the other finds, reads
//! and sees forgotten, with the index in the same database; nothing is
//! written into either server's folder but derived state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo::store_postgres::Database;
use mnemo_core::{Config, Message, Workspace};
use mnemo_service::args::{AppendArgs, ForgetArgs, GetArgs, HistoryArgs, SearchArgs, WriteArgs};
use mnemo_service::Service;
use mnemo_test_support::postgres::{fresh_schema, rows_holding, test_url};

fn server(
    url: &str,
    db: &Arc<Database>,
    id: &str,
    index_schema: &str,
) -> (Arc<Service>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::parse(&format!(
        "[embedder]\nkind = \"hash\"\n[index]\nbackend = \"postgres\"\nurl = {url:?}\nschema = {index_schema:?}\n"
    ))
    .unwrap();
    let storage = Arc::new(db.workspace(id).unwrap());
    let mnemo =
        mnemo::Mnemo::open_with_storage(Workspace::new(dir.path()), config, storage).unwrap();
    (Service::new(Arc::new(mnemo)), dir)
}

fn search(query: &str) -> SearchArgs {
    SearchArgs {
        query: query.into(),
        max_results: Some(10),
        min_score: Some(0.0),
        ..Default::default()
    }
}

#[tokio::test]
async fn two_servers_share_one_database_workspace() {
    let Some(url) = test_url() else { return };
    let store_schema = fresh_schema();
    let db = Database::connect(&url, &store_schema).unwrap();
    let index_schema = fresh_schema();
    let (a, dir_a) = server(&url, &db, "alice", &index_schema);
    let (b, dir_b) = server(&url, &db, "alice", &index_schema);

    a.write(WriteArgs {
        text: "Flat white with oat milk, no sugar.".into(),
        name: Some("Coffee order".into()),
        kind: Some(mnemo_service::args::MemoryTypeArg::User),
        ..Default::default()
    })
    .await
    .unwrap();
    a.append(
        "api:chat".into(),
        AppendArgs {
            message: Some(Message::user(
                "remember the zeppelin museum in Friedrichshafen",
            )),
            ..Default::default()
        },
    )
    .await
    .unwrap();

    // The other server finds both, and reads them back.
    let found = b.search(search("oat milk flat white")).await.unwrap();
    let hit = found
        .results
        .iter()
        .find(|h| h.path.starts_with("memory/coffee"))
        .unwrap_or_else(|| panic!("the typed memory is found: {:#?}", found.results));
    let got = b
        .get(GetArgs {
            path: hit.path.clone(),
            from: None,
            lines: None,
        })
        .await
        .unwrap();
    assert!(got.text.contains("oat milk"), "{}", got.text);
    let found = b.search(search("zeppelin museum")).await.unwrap();
    assert!(
        found
            .results
            .iter()
            .any(|h| h.path.starts_with("sessions/")),
        "the session is indexed: {:#?}",
        found.results
    );
    let history = b
        .history("api:chat".into(), HistoryArgs::default())
        .await
        .unwrap();
    assert_eq!(history.total, 1);

    let held = rows_holding(
        &url,
        &[store_schema.as_str(), index_schema.as_str()],
        "oat milk",
    );
    assert!(
        held.iter().any(|t| t.ends_with("documents.body")) && held.len() > 1,
        "the text is in the store and in the index before the forget: {held:?}"
    );

    // Forgotten on one server, gone from the other's searches.
    a.forget(ForgetArgs {
        name: "Coffee order".into(),
    })
    .await
    .unwrap();
    let found = b.search(search("oat milk flat white")).await.unwrap();
    assert!(
        !found.results.iter().any(|h| h.snippet.contains("oat milk")),
        "a forgotten memory is found by no search: {:#?}",
        found.results
    );

    // Gone from every row of every table, not only from search: the
    // store's and the index's (chunks, postings, vectors, the cache).
    let left = rows_holding(
        &url,
        &[store_schema.as_str(), index_schema.as_str()],
        "oat milk",
    );
    assert!(left.is_empty(), "the forgotten text is still in {left:?}");

    // The truth is in the database: the folders hold derived state only.
    for dir in [&dir_a, &dir_b] {
        for name in ["MEMORY.md", "memory", "sessions"] {
            assert!(
                !dir.path().join(name).exists(),
                "{name} was written into a server's folder"
            );
        }
    }
    assert!(db.delete_workspace("alice").unwrap() > 0);
}
