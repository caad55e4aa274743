//! The PostgreSQL server of the tests: its URL from
//! `MNEMO_TEST_POSTGRES_URL` (`scripts/postgres.sh start` prints one, and
//! `.ci/run` exports it), and schema names no other test uses.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The test server's URL, or `None` with a note when it is not set. In CI
/// (`CI` set) a missing server is a failure, never a skip.
pub fn test_url() -> Option<String> {
    match std::env::var("MNEMO_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!(
            "MNEMO_TEST_POSTGRES_URL is not set, and CI must run the PostgreSQL tests: \
             start a server with scripts/postgres.sh start (.ci/run does)"
        ),
        _ => {
            eprintln!(
                "note: PostgreSQL test skipped: set MNEMO_TEST_POSTGRES_URL \
                 (scripts/postgres.sh start prints one)"
            );
            None
        }
    }
}

/// A second PostgreSQL server's URL, from `MNEMO_TEST_POSTGRES_URL2`
/// (`.ci/run` starts one on another port), for the tests of workspaces
/// placed on several servers and moved between them; `None` with a note
/// when it is not set, a failure in CI.
pub fn second_url() -> Option<String> {
    match std::env::var("MNEMO_TEST_POSTGRES_URL2") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!(
            "MNEMO_TEST_POSTGRES_URL2 is not set, and CI must run the tests of two PostgreSQL \
             servers: start a second one with MNEMO_POSTGRES_PORT=<another port> \
             scripts/postgres.sh start <another folder> (.ci/run does)"
        ),
        _ => {
            eprintln!(
                "note: two-server PostgreSQL test skipped: set MNEMO_TEST_POSTGRES_URL2 \
                 (a second scripts/postgres.sh start on another port prints one)"
            );
            None
        }
    }
}

/// A schema name of its own for each call in this process (also a valid
/// `[index] schema`: it does not end in `_` and digits).
pub fn fresh_schema() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "mnemo_t{}x{}x{nanos}t",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `f` with a client of `url`, on a thread of its own (so async
/// tests may call it too).
///
/// # Panics
/// When the server cannot be reached.
#[allow(clippy::expect_used)]
fn with_client<T: Send + 'static>(
    url: &str,
    f: impl for<'c> FnOnce(
            &'c tokio_postgres::Client,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'c>>
        + Send
        + 'static,
) -> T {
    let url = url.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connect to the test server");
            tokio::spawn(conn);
            f(&client).await
        })
    })
    .join()
    .expect("the query ran")
}

/// `schema.table.column` of every text, bytea or jsonb value holding
/// `needle`, in the schemas whose names start with one of `prefixes` (an
/// index's generations are schemas named after its own).
///
/// # Panics
/// When the server cannot be reached.
#[allow(clippy::expect_used)]
pub fn rows_holding(url: &str, prefixes: &[&str], needle: &str) -> Vec<String> {
    let needle = needle.to_string();
    let prefixes: Vec<String> = prefixes.iter().map(|p| p.to_string()).collect();
    with_client(url, move |client| {
        Box::pin(async move {
            let columns = client
                .query(
                    "SELECT table_schema, table_name, column_name, data_type \
                     FROM information_schema.columns \
                     WHERE table_schema NOT IN ('pg_catalog', 'information_schema') \
                     AND data_type IN ('text', 'bytea', 'character varying', 'jsonb')",
                    &[],
                )
                .await
                .expect("list the columns");
            let mut out = Vec::new();
            for c in &columns {
                let (schema, table, column, kind): (String, String, String, String) =
                    (c.get(0), c.get(1), c.get(2), c.get(3));
                if !prefixes.iter().any(|p| schema.starts_with(p.as_str())) {
                    continue;
                }
                let test = if kind == "bytea" {
                    format!("position(convert_to($1, 'UTF8') in \"{column}\") > 0")
                } else {
                    format!("strpos(\"{column}\"::text, $1) > 0")
                };
                let sql = format!("SELECT count(*) FROM \"{schema}\".\"{table}\" WHERE {test}");
                // A table dropped meanwhile (another test's schema) is not ours.
                if let Ok(row) = client.query_one(&sql, &[&needle]).await {
                    if row.get::<_, i64>(0) > 0 {
                        out.push(format!("{schema}.{table}.{column}"));
                    }
                }
            }
            out
        })
    })
}

/// The schemas whose names start with `prefix`.
///
/// # Panics
/// When the server cannot be reached.
#[allow(clippy::expect_used)]
pub fn schemas_like(url: &str, prefix: &str) -> Vec<String> {
    let prefix = prefix.to_string();
    with_client(url, move |client| {
        Box::pin(async move {
            client
                .query(
                    "SELECT nspname::text FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY 1",
                    &[&prefix],
                )
                .await
                .expect("list the schemas")
                .iter()
                .map(|r| r.get(0))
                .collect()
        })
    })
}

/// The first column (a bigint) of the first row `sql` returns given the
/// one parameter `arg`, or `None` when it returns no row.
///
/// # Panics
/// When the server cannot be reached or the statement fails.
#[allow(clippy::expect_used)]
pub fn scalar(url: &str, sql: &'static str, arg: i64) -> Option<i64> {
    with_client(url, move |client| {
        Box::pin(async move {
            client
                .query_opt(sql, &[&arg])
                .await
                .expect("the statement ran")
                .map(|r| r.get(0))
        })
    })
}

/// Runs the statements `sql` (a test's clean-up).
///
/// # Panics
/// When the server cannot be reached.
pub fn execute(url: &str, sql: &str) -> Result<(), String> {
    let sql = sql.to_string();
    with_client(url, move |client| {
        Box::pin(async move { client.batch_execute(&sql).await.map_err(|e| e.to_string()) })
    })
}
