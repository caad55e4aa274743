//! The `Storage` conformance suite (mnemo-test-support) on PostgreSQL: a
//! workspace of its own per scenario, in a schema of its own per test
//! process, on the server `MNEMO_TEST_POSTGRES_URL` names.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use mnemo_core::Workspace;
use mnemo_store_postgres::Database;
use mnemo_test_support::conformance::storage::StorageCase;
use mnemo_test_support::postgres::{fresh_schema, test_url};

fn database() -> Option<Arc<Database>> {
    static DB: OnceLock<Option<Arc<Database>>> = OnceLock::new();
    DB.get_or_init(|| test_url().map(|url| Database::connect(&url, &fresh_schema()).unwrap()))
        .clone()
}

/// Removes the case's rows when the scenario ends.
struct Rows(Arc<Database>, String);

impl Drop for Rows {
    fn drop(&mut self) {
        let _ = self.0.delete_workspace(&self.1);
    }
}

fn postgres_case() -> Option<StorageCase> {
    let db = database()?;
    let dir = tempfile::tempdir().unwrap();
    let id = format!("ws-{}", fresh_schema());
    Some(StorageCase {
        storage: Arc::new(db.workspace(&id).unwrap()),
        workspace: Workspace::new(dir.path()),
        _keep: Box::new((dir, Rows(db, id))),
    })
}

mnemo_test_support::storage_suite!(postgres, postgres_case);

/// The same suite on a tenant's storage, bound to its registration (every
/// statement then checks it, issue 43 N2).
fn registered_case() -> Option<StorageCase> {
    let db = database()?;
    let dir = tempfile::tempdir().unwrap();
    let id = format!("reg-{}", fresh_schema());
    let tenant = db.register(&id, &[0u8; 32]).unwrap().unwrap();
    Some(StorageCase {
        storage: Arc::new(db.registered(&tenant).unwrap()),
        workspace: Workspace::new(dir.path()),
        _keep: Box::new((dir, Rows(db, id))),
    })
}

mnemo_test_support::storage_suite!(postgres_registered, registered_case);
