//! Named crash points for the fault-injection tests: a process whose
//! `MNEMO_FAILPOINTS` variable lists a point's name (comma-separated)
//! aborts there, as a `kill -9` would (no destructors, no flushes), so a
//! test can stop a write between two of its steps and check that the next
//! run loses and repeats nothing. The variable is read once; without it a
//! point costs one load of a flag.

use std::sync::OnceLock;

static POINTS: OnceLock<Vec<String>> = OnceLock::new();

/// Aborts the process when `name` is listed in `MNEMO_FAILPOINTS`.
pub fn hit(name: &str) {
    let points = POINTS.get_or_init(|| {
        std::env::var("MNEMO_FAILPOINTS")
            .map(|v| v.split(',').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default()
    });
    if points.iter().any(|p| p == name) {
        std::process::abort();
    }
}
