//! The `IndexBackend` conformance suite (mnemo-test-support) on the SQLite
//! backend: a fresh database in a temporary folder per scenario (the same
//! suite runs on PostgreSQL in crates/index-postgres/tests/conformance.rs).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::EmbedderId;
use mnemo_index_sqlite::SqliteBackend;
use mnemo_test_support::conformance::index::{IndexCase, DIMS};

fn sqlite_case() -> IndexCase {
    let dir = tempfile::tempdir().unwrap();
    let id = EmbedderId {
        provider: "suite".into(),
        model: "suite-vectors".into(),
        provider_key: "k".into(),
    };
    let backend = SqliteBackend::open(&dir.path().join("index.sqlite"), Some((id, DIMS))).unwrap();
    IndexCase {
        backend: Box::new(backend),
        _keep: Box::new(dir),
    }
}

mnemo_test_support::index_backend_suite!(sqlite, sqlite_case);
