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
