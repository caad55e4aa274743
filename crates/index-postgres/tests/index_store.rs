//! The `IndexStore` conformance suite (mnemo-test-support) on the
//! PostgreSQL store: an index of its own (a fresh base schema) per
//! scenario in the database of `MNEMO_TEST_POSTGRES_URL`, its generations
//! the base's schemas, dropped at the end. Without the variable the tests
//! pass with a note, except in CI (`CI` set), where they fail. The same
//! suite runs on SQLite in crates/index-sqlite/tests/index_store.rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_index::IndexStore;
use mnemo_index_postgres::{PostgresOptions, PostgresStore};
use mnemo_test_support::conformance::index_store::StoreCase;
use mnemo_test_support::postgres::{fresh_schema, schemas_like, test_url};

/// Drops the index (the base and every generation) when the case ends.
struct Index(PostgresOptions);

impl Drop for Index {
    fn drop(&mut self) {
        let _ = PostgresStore::drop_index(&self.0);
    }
}

/// The relations of the index's schemas (tables, their TOAST tables and
/// indexes) whose data files hold `needle`'s bytes: dead rows included,
/// which no query shows. Read with `pg_read_binary_file` after a
/// checkpoint (the test server's user is a superuser), so what the
/// server holds only in memory is on disk too.
fn holding(url: &str, base: &str, needle: &str) -> Vec<String> {
    let (url, prefix, needle) = (url.to_string(), format!("{base}_"), needle.to_string());
    // A thread of its own: the scenario may run inside a runtime.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            c.batch_execute("CHECKPOINT").await.unwrap();
            let rows = c
                .query(
                    "SELECT n.nspname || '.' || c.relname, pg_relation_filepath(r.oid) \
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                     JOIN pg_class r ON r.oid IN (c.oid, c.reltoastrelid) \
                     WHERE starts_with(n.nspname, $1) AND c.relkind IN ('r', 'i', 'm') \
                     UNION \
                     SELECT n.nspname || '.' || c.relname || ' (TOAST index)', \
                     pg_relation_filepath(i.indexrelid) FROM pg_class c \
                     JOIN pg_namespace n ON n.oid = c.relnamespace \
                     JOIN pg_index i ON i.indrelid = c.reltoastrelid \
                     WHERE starts_with(n.nspname, $1)",
                    &[&prefix],
                )
                .await
                .unwrap();
            let mut out = Vec::new();
            for row in rows {
                let (name, path): (String, Option<String>) = (row.get(0), row.get(1));
                let Some(path) = path else {
                    continue;
                };
                let bytes: Vec<u8> = c
                    .query_one("SELECT pg_read_binary_file($1)", &[&path])
                    .await
                    .unwrap()
                    .get(0);
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    out.push(name);
                }
            }
            out.sort();
            out
        })
    })
    .join()
    .unwrap()
}

fn pg_case() -> Option<StoreCase> {
    let opts = PostgresOptions {
        url: test_url()?,
        schema: fresh_schema(),
    };
    let (open_with, url, base) = (opts.clone(), opts.url.clone(), opts.schema.clone());
    let (bytes_url, bytes_base) = (url.clone(), base.clone());
    Some(StoreCase {
        open: Box::new(move || -> Box<dyn IndexStore> {
            Box::new(PostgresStore::open(&open_with, Some(StoreCase::embedder())).unwrap())
        }),
        generations: Box::new(move || schemas_like(&url, &format!("{base}_"))),
        holding: Some(Box::new(move |needle| {
            holding(&bytes_url, &bytes_base, needle)
        })),
        _keep: Box::new(Index(opts)),
    })
}

mnemo_test_support::index_store_suite!(postgres, pg_case);
