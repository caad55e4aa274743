//! The `IndexStore` conformance suite (mnemo-test-support) on the SQLite
//! store: an index of its own in a temporary folder per scenario, its
//! generations the database files there (the same suite runs on
//! PostgreSQL in crates/index-postgres/tests/index_store.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use mnemo_index::IndexStore;
use mnemo_index_sqlite::vectors::VectorScan;
use mnemo_index_sqlite::SqliteStore;
use mnemo_test_support::conformance::index_store::StoreCase;

/// The database files of the folder's generations (`index.sqlite`,
/// `index-<ms>.sqlite`), without their logs.
fn generations(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("index") && n.ends_with(".sqlite"))
        .collect();
    names.sort();
    names
}

/// The files of the folder (databases, logs, the lock) that hold
/// `needle`'s bytes.
fn holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path())
                .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
                .unwrap_or(false)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn sqlite_case() -> StoreCase {
    let dir = tempfile::tempdir().unwrap();
    let state: PathBuf = dir.path().join(".mnemo");
    let (open_at, list_at, bytes_at) = (state.clone(), state.clone(), state);
    StoreCase {
        open: Box::new(move || -> Box<dyn IndexStore> {
            Box::new(
                SqliteStore::open(&open_at, Some(StoreCase::embedder()), VectorScan::default())
                    .unwrap(),
            )
        }),
        generations: Box::new(move || generations(&list_at)),
        holding: Some(Box::new(move |needle| holding(&bytes_at, needle))),
        _keep: Box::new(dir),
    }
}

mnemo_test_support::index_store_suite!(sqlite, sqlite_case);
