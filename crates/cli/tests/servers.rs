//! `mnemo servers`: a registry in the PostgreSQL server of
//! `MNEMO_TEST_POSTGRES_URL` lists the one of `MNEMO_TEST_POSTGRES_URL2`
//! as `b`; new workspaces are spread over the two, one moves and keeps
//! its messages, and a server that holds a workspace is not taken off
//! the list. The real binary, as an operator runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mnemo_test_support::cli::mnemo_command;
use mnemo_test_support::postgres::{execute, fresh_schema, second_url, test_url};
use serde_json::Value;

/// Runs `mnemo --database url --schema schema args…`: (exit code, stdout, stderr).
fn mnemo(ws: &Path, url: &str, schema: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--database", url, "--schema", schema];
    all.extend_from_slice(args);
    let out = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &all)
        .env_remove("MNEMO_DATABASE")
        .env_remove("MNEMO_WORKSPACE_ID")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn counts(ws: &Path, url: &str, schema: &str) -> Vec<(String, i64)> {
    let (code, out, err) = mnemo(ws, url, schema, &["servers", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["workspaces"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn workspaces_spread_over_two_servers_and_move_between_them() {
    let Some(url) = test_url() else { return };
    let Some(url2) = second_url() else { return };
    let schema = fresh_schema();
    let schema = schema[..schema.len().min(20)].to_string() + "s";
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();

    let (code, _, err) = mnemo(ws, &url, &schema, &["servers", "add", "home", &url2]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot name a database server"), "{err}");
    let (code, _, err) = mnemo(ws, &url, &schema, &["servers", "add", "b", &url2]);
    assert_eq!(code, 0, "{err}");
    for id in ["w1", "w2"] {
        let (code, _, err) = mnemo(ws, &url, &schema, &["--id", id, "init"]);
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(
        counts(ws, &url, &schema),
        [("home".into(), 1), ("b".into(), 1)]
    );

    let (code, _, err) = mnemo(
        ws,
        &url,
        &schema,
        &[
            "--id",
            "w2",
            "session",
            "append",
            "cli:x",
            "--role",
            "user",
            "--content",
            "quokka-lantern",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mnemo(ws, &url, &schema, &["servers", "remove", "b"]);
    assert_ne!(code, 0);
    assert!(err.contains("1 workspace is placed"), "{err}");

    let (code, out, err) = mnemo(
        ws,
        &url,
        &schema,
        &["servers", "move", "w2", "--to", "home"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("moved w2 from b to home"), "{out}");
    assert_eq!(
        counts(ws, &url, &schema),
        [("home".into(), 2), ("b".into(), 0)]
    );
    let (code, out, err) = mnemo(
        ws,
        &url,
        &schema,
        &["--id", "w2", "session", "show", "cli:x"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("quokka-lantern"), "{out}");

    let (code, _, err) = mnemo(ws, &url, &schema, &["servers", "move", "w2", "--to", "c"]);
    assert_ne!(code, 0);
    assert!(err.contains("lists no database server \"c\""), "{err}");
    let (code, _, err) = mnemo(ws, &url, &schema, &["servers", "remove", "b"]);
    assert_eq!(code, 0, "{err}");

    for u in [&url, &url2] {
        let mut sql = format!("DROP SCHEMA IF EXISTS {schema} CASCADE;");
        for n in 1..=2 {
            sql.push_str(&format!("DROP SCHEMA IF EXISTS {schema}_ix{n} CASCADE;"));
        }
        let _ = execute(u, &sql);
    }
}
