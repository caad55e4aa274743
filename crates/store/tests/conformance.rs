//! The `Storage` conformance suite (mnemo-test-support) on the workspace
//! folder: a fresh temporary folder per scenario (the same suite runs on
//! PostgreSQL in crates/store-postgres/tests/conformance.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_core::Workspace;
use mnemo_store::FileStorage;
use mnemo_test_support::conformance::storage::StorageCase;

fn files_case() -> StorageCase {
    let dir = tempfile::tempdir().unwrap();
    let workspace = Workspace::new(dir.path());
    StorageCase {
        storage: Arc::new(FileStorage::new(&workspace)),
        workspace,
        _keep: Box::new(dir),
    }
}

mnemo_test_support::storage_suite!(files, files_case);
