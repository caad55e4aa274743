//! A request under way when its workspace is deleted (issue 43 N12): a
//! failure it meets because its workspace is gone (the index dropped
//! under it) answers 404, never 500. On the PostgreSQL server of
//! `MNEMO_TEST_POSTGRES_URL`; a real socket, so that the request is
//! authorized before its body arrives and the delete comes in between.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::time::Duration;

use mnemo_core::Config;
use mnemo_http::tenants_router;
use mnemo_service::args::WriteArgs;
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_test_support::postgres::{execute, test_url};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_workspace_is_deleted_meanwhile_is_not_found() {
    let Some(url) = test_url() else { return };
    let schema = format!("hd{}", std::process::id());
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

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = tenants_router(tenants.clone(), None);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let search = |token: String, pause: Option<std::sync::mpsc::Receiver<()>>| {
        std::thread::spawn(move || {
            let body = br#"{"query": "kite windlass-orchid"}"#;
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            write!(
                s,
                "POST /v1/workspaces/gone/memory/search HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
                 Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            s.write_all(&body[..10]).unwrap();
            s.flush().unwrap();
            if let Some(rx) = pause {
                rx.recv().unwrap();
            }
            s.write_all(&body[10..]).unwrap();
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            answer
        })
    };
    // One search opens the index; it answers.
    let first = search(token.clone(), None).join().unwrap();
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");

    // The next is authorized, then its workspace is deleted before its
    // body is read and it searches.
    let (go, wait) = std::sync::mpsc::channel();
    let second = search(token.clone(), Some(wait));
    tokio::time::sleep(Duration::from_millis(500)).await;
    tenants.delete("gone".into()).await.unwrap();
    go.send(()).unwrap();
    let answer = tokio::task::spawn_blocking(move || second.join().unwrap())
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(
        answer.contains("was deleted while this request ran"),
        "{answer}"
    );

    drop(service);
    execute(&url, &format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).unwrap();
}
