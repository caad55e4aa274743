//! Named crash points for the fault-injection tests. With the
//! `failpoints` feature, a process whose `MNEMO_FAILPOINTS` variable lists
//! a point's name (comma-separated) aborts there, as a `kill -9` would:
//! no destructors, no flushes. Without the feature every point is a no-op
//! the compiler removes.

/// Aborts the process when `name` is listed in `MNEMO_FAILPOINTS` (with
/// the `failpoints` feature only).
#[inline]
pub fn hit(name: &str) {
    #[cfg(feature = "failpoints")]
    if std::env::var("MNEMO_FAILPOINTS").is_ok_and(|v| v.split(',').any(|p| p.trim() == name)) {
        std::process::abort();
    }
    #[cfg(not(feature = "failpoints"))]
    let _ = name;
}
