//! Workspaces on two PostgreSQL servers (`MNEMO_TEST_POSTGRES_URL` holds
//! the registry, `MNEMO_TEST_POSTGRES_URL2` is listed as server `b`): new
//! workspaces are spread by load, and a workspace moved while clients
//! append to it and read it back loses no acknowledged message, doubles
//! none, and never answers a read from its old copy. Over a real socket,
//! through the router's retry of requests that met the old copy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mnemo_core::Config;
use mnemo_http::tenants_router;
use mnemo_service::tenants::{Tenants, TenantsConfig};
use mnemo_test_support::postgres::{execute, fresh_schema, rows_holding, second_url, test_url};
use serde_json::{json, Value};

const ADMIN: &str = "admin";

struct Server {
    base: String,
    http: reqwest::Client,
}

impl Server {
    async fn admin(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let v: Value = r.json().await.unwrap();
        assert!(status.is_success(), "{path}: {status} {v}");
        v
    }
}

/// Appends `count` messages to `id`'s session `key`, each read back at
/// once: the acknowledged ids, and the reads that missed one acknowledged
/// before them (an answer from an old copy).
async fn writer(
    server: Arc<Server>,
    id: String,
    token: String,
    key: String,
    stop: Arc<AtomicBool>,
) -> (Vec<String>, Vec<String>) {
    let (mut acked, mut stale) = (Vec::new(), Vec::new());
    let base = format!("{}/v1/workspaces/{id}/sessions/{key}/messages", server.base);
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) || n < 5 {
        n += 1;
        let mid = format!("{key}-m{n}");
        let r = server
            .http
            .post(&base)
            .bearer_auth(&token)
            .json(&json!({"message": {"role": "user", "content": format!("{mid} tallow-quince")}}))
            .send()
            .await
            .unwrap();
        let status = r.status();
        assert!(
            status.is_success(),
            "append {mid}: {status} {}",
            r.text().await.unwrap()
        );
        acked.push(mid);
        let v = json_of(server.http.get(&base).bearer_auth(&token)).await;
        let seen = ids(&v);
        if let Some(missing) = acked.iter().find(|m| !seen.contains_key(*m)) {
            stale.push(format!("after {n} appends, {missing} was not read back"));
        }
    }
    (acked, stale)
}

/// The JSON answer of `req`.
async fn json_of(req: reqwest::RequestBuilder) -> Value {
    req.send().await.unwrap().json().await.unwrap()
}

/// Message ids (the first word of each content) and how often each occurs.
fn ids(messages: &Value) -> HashMap<String, usize> {
    let mut seen = HashMap::new();
    for m in messages["messages"].as_array().into_iter().flatten() {
        if let Some(id) = m["content"].as_str().and_then(|c| c.split(' ').next()) {
            *seen.entry(id.to_string()).or_default() += 1;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_busy_workspace_moves_between_servers_and_loses_nothing() {
    let Some(url) = test_url() else { return };
    let Some(url2) = second_url() else { return };
    let schema = fresh_schema();
    let schema = schema[..schema.len().min(20)].to_string() + "p";
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
                admin_token: Some(ADMIN.into()),
                max_open: 8,
            })
            .unwrap()
        })
        .await
        .unwrap()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = tenants_router(tenants.clone(), None);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let server = Arc::new(Server {
        base,
        http: reqwest::Client::new(),
    });

    // A server with a name mnemo refuses, then server b.
    let r = server
        .http
        .post(format!("{}/v1/servers", server.base))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "home", "url": url2}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400, "{}", r.text().await.unwrap());
    server
        .admin(
            reqwest::Method::POST,
            "/v1/servers",
            json!({"name": "b", "url": url2}),
        )
        .await;

    // New workspaces are spread by load: home, b, home, b.
    let mut tokens = HashMap::new();
    for id in ["w0", "w1", "w2", "w3"] {
        let v = server
            .admin(reqwest::Method::POST, "/v1/workspaces", json!({"id": id}))
            .await;
        tokens.insert(id, v["token"].as_str().unwrap().to_string());
    }
    let servers = server
        .admin(reqwest::Method::GET, "/v1/servers", json!({}))
        .await;
    let counts: Vec<(String, i64)> = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["workspaces"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        counts,
        [("home".to_string(), 2), ("b".to_string(), 2)],
        "{servers}"
    );
    let placed = tenants.database().tenant("w1").unwrap().unwrap();
    assert_eq!(placed.server.as_deref(), Some("b"));

    // Clients append to w0 and read each append back while it moves to b
    // and back home, and w1 moves home.
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for c in 0..3 {
        clients.push(tokio::spawn(writer(
            server.clone(),
            "w0".into(),
            tokens["w0"].clone(),
            format!("cli:c{c}"),
            stop.clone(),
        )));
    }
    clients.push(tokio::spawn(writer(
        server.clone(),
        "w1".into(),
        tokens["w1"].clone(),
        "cli:c9".into(),
        stop.clone(),
    )));
    let moves = Arc::new(Mutex::new(Vec::new()));
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    for (id, to) in [("w0", "b"), ("w1", "home"), ("w0", "home"), ("w0", "b")] {
        let v = server
            .admin(
                reqwest::Method::POST,
                &format!("/v1/workspaces/{id}/move"),
                json!({"to": to}),
            )
            .await;
        assert_eq!(v["to"], to, "{v}");
        moves.lock().unwrap().push(v);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut acked: HashMap<String, Vec<String>> = HashMap::new();
    for (i, c) in clients.into_iter().enumerate() {
        let (ids, stale) = c.await.unwrap();
        assert!(stale.is_empty(), "client {i} read an old copy: {stale:?}");
        let key = if i < 3 {
            format!("w0/cli:c{i}")
        } else {
            "w1/cli:c9".into()
        };
        acked.insert(key, ids);
    }

    // Every acknowledged message once, on the server the workspace is on now.
    for (key, sent) in &acked {
        let (id, session) = key.split_once('/').unwrap();
        let v = json_of(
            server
                .http
                .get(format!(
                    "{}/v1/workspaces/{id}/sessions/{session}/messages",
                    server.base
                ))
                .bearer_auth(&tokens[id]),
        )
        .await;
        let seen = ids(&v);
        for m in sent {
            assert_eq!(seen.get(m), Some(&1), "{key}: {m} lost or doubled");
        }
        assert!(sent.len() >= 5, "{key}: {}", sent.len());
    }
    let moves = moves.lock().unwrap().clone();
    assert!(
        moves.iter().all(|m| m["lines"].as_u64().unwrap() > 0),
        "{moves:?}"
    );

    // w0 is on b: its messages are there and nowhere on home; search finds them.
    let w0 = tenants.database().tenant("w0").unwrap().unwrap();
    assert_eq!(w0.server.as_deref(), Some("b"));
    assert!(!rows_holding(&url2, &[&schema], "cli:c0-m1 tallow").is_empty());
    let home_rows = rows_holding(&url, &[&schema], "cli:c0-m1 tallow");
    assert!(
        home_rows.is_empty(),
        "the old copy on home kept {home_rows:?}"
    );
    let v = json_of(
        server
            .http
            .post(format!("{}/v1/workspaces/w0/memory/search", server.base))
            .bearer_auth(&tokens["w0"])
            .json(&json!({"query": "tallow-quince"})),
    )
    .await;
    assert!(!v["results"].as_array().unwrap().is_empty(), "{v}");
    // w1 came home: nothing of it is left on b.
    let b_rows = rows_holding(&url2, &[&schema], "cli:c9-m1 tallow");
    assert!(b_rows.is_empty(), "the old copy on b kept {b_rows:?}");

    // A delete removes a workspace's rows on the server it is on, and the
    // mark a move left on a server it was on before (w1 moved b -> home).
    for id in ["w0", "w1"] {
        let r = server
            .http
            .delete(format!("{}/v1/workspaces/{id}", server.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success());
    }
    assert!(rows_holding(&url2, &[&schema], "cli:c0-m1 tallow").is_empty());
    for u in [&url, &url2] {
        let left = execute(
            u,
            &format!(
                "DO $$ BEGIN IF EXISTS (SELECT 1 FROM {schema}.tenants \
                 WHERE workspace IN ('w0', 'w1')) THEN RAISE EXCEPTION 'a row is left'; \
                 END IF; END $$"
            ),
        );
        assert!(left.is_ok(), "{u}: {left:?}");
    }

    for u in [&url, &url2] {
        let _ = execute(
            u,
            &format!("DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS {schema}_ix1 CASCADE; \
                      DROP SCHEMA IF EXISTS {schema}_ix2 CASCADE; DROP SCHEMA IF EXISTS {schema}_ix3 CASCADE; \
                      DROP SCHEMA IF EXISTS {schema}_ix4 CASCADE"),
        );
    }
}
