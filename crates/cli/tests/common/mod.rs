//! The files of a test's workspace, wherever this run keeps them: in the
//! folder, or, when the CLI's tests run against a database
//! (`MNEMO_TEST_CLI_DATABASE`, see `mnemo_test_support::cli`), in the rows
//! of the database workspace that stands for the folder. A test reads and
//! writes a workspace's files here, so that it checks the same things on
//! both runs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mnemo::core::Workspace;
use mnemo::store::{Expect, FileStorage, Storage};
use mnemo_test_support::cli::{cli_database, workspace_id};

/// The storage of the workspace `ws` stands for on this run.
pub fn storage(ws: &Path) -> Box<dyn Storage> {
    match cli_database() {
        None => Box::new(FileStorage::new(&Workspace::new(ws))),
        Some(url) => {
            let db = mnemo::store_postgres::Database::connect(&url, "mnemo_store")
                .expect("the tests' database");
            Box::new(
                db.workspace(&workspace_id(ws))
                    .expect("the test's workspace"),
            )
        }
    }
}

/// True on the run against a database.
pub fn on_database() -> bool {
    cli_database().is_some()
}

/// True (and says why on stderr) when this test is about workspace
/// folders and this run is against a database: the test then returns
/// early, having run in full on the folder run.
pub fn folder_only(why: &str) -> bool {
    let skip = on_database();
    if skip {
        eprintln!("folder run only: {why}");
    }
    skip
}

/// The text of `rel` (a memory file or a session log), empty when there
/// is none.
pub fn read(ws: &Path, rel: &str) -> String {
    let s = storage(ws);
    if rel.starts_with("sessions/") {
        return s
            .read_session_file(rel)
            .unwrap()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
    }
    s.read(rel).unwrap().map(|d| d.text).unwrap_or_default()
}

/// Writes `text` to the memory file `rel`, as a person editing it would.
pub fn write(ws: &Path, rel: &str, text: impl AsRef<str>) {
    storage(ws).write(rel, text.as_ref(), Expect::Any).unwrap();
}

/// Whether the memory file or session log `rel` exists.
pub fn exists(ws: &Path, rel: &str) -> bool {
    let s = storage(ws);
    if rel.starts_with("sessions/") {
        return s.read_session_file(rel).unwrap().is_some();
    }
    s.exists(rel).unwrap()
}

/// The session logs of the workspace.
pub fn session_files(ws: &Path) -> usize {
    storage(ws).session_files().unwrap().len()
}

/// Removes the memory file `rel`; false when there was none.
pub fn remove(ws: &Path, rel: &str) -> bool {
    storage(ws).remove(rel).unwrap()
}

/// The workspace-relative paths of the `.md` documents under the folder
/// `dir` (`memory`), sorted.
pub fn list(ws: &Path, dir: &str) -> Vec<String> {
    storage(ws)
        .list(dir)
        .unwrap()
        .into_iter()
        .map(|e| e.rel)
        .collect()
}

/// `mnemo_test_support::cli::write_append_only_files`, into the
/// workspace `ws` stands for on this run.
pub fn write_append_only_files(ws: &Path) -> [&'static str; 3] {
    let scratch = tempfile::tempdir().unwrap();
    let files = mnemo_test_support::cli::write_append_only_files(scratch.path());
    for rel in files {
        write(
            ws,
            rel,
            std::fs::read_to_string(scratch.path().join(rel)).unwrap(),
        );
    }
    files
}

/// Every memory document and session log of the workspace with its
/// content, sorted by path: what a refused request must leave as it was.
pub fn snapshot(ws: &Path) -> Vec<(String, Vec<u8>)> {
    let s = storage(ws);
    let mut out: Vec<(String, Vec<u8>)> = s
        .documents()
        .unwrap()
        .into_iter()
        .map(|e| {
            let text = s.read(&e.rel).unwrap().map(|d| d.text).unwrap_or_default();
            (e.rel, text.into_bytes())
        })
        .collect();
    for e in s.session_files().unwrap() {
        let bytes = s.read_session_file(&e.rel).unwrap().unwrap_or_default();
        out.push((e.rel, bytes));
    }
    out.sort();
    out
}

/// The session logs of the workspace, as the engine reads and writes them.
pub fn session_store(ws: &Path) -> mnemo::store::SessionStore {
    mnemo::store::SessionStore::with_storage(
        std::sync::Arc::from(storage(ws)),
        mnemo::store::SessionOptions::default(),
    )
}
