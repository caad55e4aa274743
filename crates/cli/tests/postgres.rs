//! The CLI over a PostgreSQL index (`[index] backend = "postgres"`) on the
//! real server of `MNEMO_TEST_POSTGRES_URL`: two `mnemo index` processes
//! at once, status and search, a rebuild, `mnemo index --copy-to`, and an
//! unreachable server. Vectors come from the hash embedder, so the test
//! needs no model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use mnemo::index_postgres::{PostgresBackend, PostgresOptions};
use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::postgres::{fresh_schema, test_url};

fn mnemo(ws: &Path, args: &[&str]) -> Output {
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .output()
        .unwrap()
}

/// The settings that put the index in `schema` of `url`.
fn on_postgres(url: &str, schema: &str) -> Vec<String> {
    [
        "embedder.kind=hash".to_string(),
        "index.backend=postgres".into(),
        format!("index.url={url}"),
        format!("index.schema={schema}"),
    ]
    .into_iter()
    .flat_map(|s| ["--set".to_string(), s])
    .collect()
}

fn with<'a>(settings: &'a [String], args: &[&'a str]) -> Vec<&'a str> {
    settings
        .iter()
        .map(String::as_str)
        .chain(args.iter().copied())
        .collect()
}

fn status(ws: &Path, settings: &[String]) -> serde_json::Value {
    let out = stdout_of_success(&mnemo(ws, &with(settings, &["status", "--json"])));
    serde_json::from_str(out.trim()).unwrap()
}

fn top_path(ws: &Path, settings: &[String], query: &str) -> String {
    let out = stdout_of_success(&mnemo(ws, &with(settings, &["search", query, "--json"])));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    v["results"][0]["path"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A workspace with forty notes, each with a phrase of its own.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    stdout_of_success(&mnemo(dir.path(), &["init"]));
    let notes = dir.path().join("memory/notes");
    std::fs::create_dir_all(&notes).unwrap();
    for i in 0..40 {
        std::fs::write(
            notes.join(format!("note-{i:02}.md")),
            format!(
                "# Note {i}\n\n- Project {i} ships on day {} of the quarter.\n\
                 - The codename of project {i} is heron-{}.\n",
                i + 3,
                i * 7919
            ),
        )
        .unwrap();
    }
    dir
}

/// Drops the base schema and every generation of it when the test ends.
struct Schemas {
    url: String,
    base: String,
    seen: std::cell::RefCell<Vec<String>>,
}

impl Schemas {
    fn new(url: &str) -> Schemas {
        let base = fresh_schema();
        Schemas {
            url: url.to_string(),
            seen: std::cell::RefCell::new(vec![base.clone(), format!("{base}_1")]),
            base,
        }
    }
    /// Remembers the live generation that `status` names.
    fn note(&self, status: &serde_json::Value) {
        let location = status["location"].as_str().unwrap_or_default();
        if let Some(s) = location.split("(schema ").nth(1) {
            self.seen
                .borrow_mut()
                .push(s.trim_end_matches(')').to_string());
        }
    }
}

impl Drop for Schemas {
    fn drop(&mut self) {
        for schema in self.seen.borrow().iter() {
            let _ = PostgresBackend::drop_schema(&PostgresOptions {
                url: self.url.clone(),
                schema: schema.clone(),
            });
        }
    }
}

#[test]
fn two_index_processes_at_once_neither_duplicate_nor_lose_a_chunk() {
    let Some(url) = test_url() else { return };
    let dir = workspace();
    let ws = dir.path();
    let schemas = Schemas::new(&url);
    let pg = on_postgres(&url, &schemas.base);

    // The same workspace indexed in SQLite gives the counts to expect.
    let sqlite = ["--set".to_string(), "embedder.kind=hash".to_string()];
    stdout_of_success(&mnemo(ws, &with(&sqlite, &["index"])));
    let want = status(ws, &sqlite);

    let bin = env!("CARGO_BIN_EXE_mnemo");
    let children: Vec<_> = (0..2)
        .map(|_| {
            mnemo_command(bin, ws, &with(&pg, &["index"]))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        stdout_of_success(&out);
    }
    let got = status(ws, &pg);
    schemas.note(&got);
    assert_eq!(got["backend"], "postgres", "{got}");
    assert!(
        got["location"].as_str().unwrap().contains(&schemas.base),
        "{got}"
    );
    for key in ["files", "chunks", "vectors"] {
        assert_eq!(got[key], want[key], "{key}: {got} against SQLite's {want}");
    }
    assert_eq!(got["dirty"], false, "{got}");
    assert_eq!(
        top_path(ws, &pg, "codename heron-55433"),
        "memory/notes/note-07.md"
    );

    // A rebuild swaps in a new generation with the same content.
    stdout_of_success(&mnemo(ws, &with(&pg, &["index", "--force"])));
    let rebuilt = status(ws, &pg);
    schemas.note(&rebuilt);
    assert_ne!(rebuilt["location"], got["location"], "{rebuilt}");
    assert_eq!(rebuilt["chunks"], want["chunks"]);
    let text = stdout_of_success(&mnemo(ws, &with(&pg, &["status"])));
    assert!(text.contains("index:   postgres at postgres://"), "{text}");
}

#[test]
fn copy_to_moves_the_index_without_embedding_again() {
    let Some(url) = test_url() else { return };
    let dir = workspace();
    let ws = dir.path();
    let schemas = Schemas::new(&url);
    let sqlite = ["--set".to_string(), "embedder.kind=hash".to_string()];
    let out = mnemo(
        ws,
        &with(
            &sqlite,
            &["index", "--copy-to", &url, "--copy-schema", &schemas.base],
        ),
    );
    let text = stdout_of_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(", 0 embedded anew"), "{text}\n{stderr}");
    assert!(stderr.contains("backend = \"postgres\""), "{stderr}");

    let pg = on_postgres(&url, &schemas.base);
    let (a, b) = (status(ws, &sqlite), status(ws, &pg));
    schemas.note(&b);
    for key in ["files", "chunks", "vectors"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    for q in [
        "codename heron-0",
        "project 31 ships",
        "day 12 of the quarter",
    ] {
        assert_eq!(top_path(ws, &sqlite, q), top_path(ws, &pg, q), "{q}");
    }
}

#[test]
fn an_unreachable_database_is_a_clear_error_without_the_password() {
    let dir = workspace();
    let ws = dir.path();
    let pg = on_postgres("postgres://mnemo:hunter2@127.0.0.1:1/nowhere", "mnemo");
    let out = mnemo(ws, &with(&pg, &["search", "project"]));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "cannot connect to the index database at postgres://mnemo@127.0.0.1:1/nowhere"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
    // The memory files are untouched by the failure.
    assert!(ws.join("memory/notes/note-00.md").exists());
}

/// `mnemo export database` then `mnemo import database` into a new folder:
/// the memory files and session logs come back byte for byte; an export
/// into a workspace that holds rows, or an import of one that does not
/// exist, is refused with a message.
#[test]
fn export_to_a_database_and_import_back_is_byte_for_byte() {
    let Some(url) = test_url() else { return };
    let src = workspace();
    stdout_of_success(&mnemo(
        src.path(),
        &[
            "session",
            "append",
            "cli:trip",
            "--role",
            "user",
            "--content",
            "book the ferry ⛴",
        ],
    ));
    let schema = fresh_schema();
    let id = format!("cli-{schema}");
    let out = stdout_of_success(&mnemo(
        src.path(),
        &["export", "database", &url, "--id", &id, "--schema", &schema],
    ));
    assert!(out.contains("session log(s)"), "{out}");
    let again = mnemo(
        src.path(),
        &["export", "database", &url, "--id", &id, "--schema", &schema],
    );
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("empty workspace"));

    let dest = tempfile::tempdir().unwrap();
    stdout_of_success(&mnemo(
        dest.path(),
        &["import", "database", &url, "--id", &id, "--schema", &schema],
    ));
    for rel in [
        "MEMORY.md",
        "memory/notes/note-07.md",
        "sessions/cli_trip.jsonl",
    ] {
        let a = std::fs::read(src.path().join(rel)).unwrap();
        let b = std::fs::read(dest.path().join(rel)).unwrap_or_default();
        assert!(a == b, "{rel} differs after the round trip");
    }
    let none = mnemo(
        tempfile::tempdir().unwrap().path(),
        &[
            "import",
            "database",
            &url,
            "--id",
            "nobody-here",
            "--schema",
            &schema,
        ],
    );
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no workspace"));
}
