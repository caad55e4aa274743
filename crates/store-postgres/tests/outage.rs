//! The database goes away under a workspace (every connection of this
//! process is cut by the server, as a restart would): a request either
//! fails with a clear storage error or succeeds, nothing half-written is
//! left, and the next requests are served again on new connections.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_core::Message;
use mnemo_store::{Error, Expect, SessionOptions, SessionStore, SharedStorage};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{fresh_schema, test_url};

/// Cuts every connection whose application name is `name`.
async fn cut(url: &str, name: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_fail_cleanly_while_the_database_is_gone_and_work_after() {
    let Some(url) = test_url() else { return };
    let name = format!("mnemo_outage_{}", std::process::id());
    let sep = if url.contains('?') { '&' } else { '?' };
    let ours = format!("{url}{sep}application_name={name}");
    let db = Database::connect(&ours, &fresh_schema()).unwrap();
    let storage: SharedStorage = Arc::new(db.workspace("outage").unwrap());
    let sessions = SessionStore::with_storage(storage.clone(), SessionOptions::default());
    let s2 = storage.clone();
    tokio::task::spawn_blocking(move || {
        s2.write("MEMORY.md", "# Memory\n", Expect::Any).unwrap();
        let mut log = sessions.open("cli:o").unwrap();
        log.append(&[Message::user("before")]).unwrap();
    })
    .await
    .unwrap();

    assert!(
        cut(&url, &name).await > 0,
        "the pool's connections were cut"
    );
    let s2 = storage.clone();
    let outcomes = tokio::task::spawn_blocking(move || {
        let sessions = SessionStore::with_storage(s2.clone(), SessionOptions::default());
        // The first requests meet dead connections: a storage error naming
        // the database, or a success on a new connection; never a panic.
        let mut outcomes = Vec::new();
        for i in 0..4 {
            let r = sessions
                .open("cli:o")
                .and_then(|mut log| log.append(&[Message::user(format!("during {i}"))]));
            outcomes.push(match r {
                Ok(_) => Ok(format!("during {i}")),
                Err(Error::Storage { location, message }) => {
                    assert!(location.starts_with("postgres://"), "{location}");
                    assert!(!message.is_empty());
                    Err(())
                }
                Err(e) => panic!("an outage must be a storage error, got {e:?}"),
            });
        }
        outcomes
    })
    .await
    .unwrap();
    eprintln!("outcomes during the outage: {outcomes:?}");
    // Served again, and the log holds exactly what was acknowledged.
    let s2 = storage.clone();
    tokio::task::spawn_blocking(move || {
        let sessions = SessionStore::with_storage(s2.clone(), SessionOptions::default());
        sessions
            .open("cli:o")
            .unwrap()
            .append(&[Message::user("after")])
            .unwrap();
        let texts: Vec<String> = sessions
            .load("cli:o")
            .unwrap()
            .messages
            .iter()
            .map(Message::text)
            .collect();
        let mut want = vec!["before".to_string()];
        want.extend(outcomes.into_iter().flatten());
        want.push("after".into());
        assert_eq!(texts, want);
        assert_eq!(s2.read("MEMORY.md").unwrap().unwrap().text, "# Memory\n");
    })
    .await
    .unwrap();
    db.delete_workspace("outage").unwrap();
}
