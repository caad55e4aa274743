//! What the coverage-guided fuzz targets (`fuzz_targets/`) share: a
//! keyword-only workspace to serve requests from, a runtime to serve them
//! on, and the checks the HTTP fuzz tests make of every answer (the same
//! file, `crates/http/tests/common/mod.rs`, so the two cannot drift).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

/// The HTTP API's answer checks: no 500, every refusal in the API's
/// `{"error": {"code": …}}` shape.
#[path = "../../crates/http/tests/common/mod.rs"]
pub mod http_checks;

/// A workspace in a fresh temporary folder holding a MEMORY.md, opened
/// with no embedder (keyword search only), as the `fuzz_*` tests open it.
/// The folder lives as long as the process: `scripts/fuzz.sh` points
/// `TMPDIR` at a folder it deletes afterwards.
pub fn workspace() -> Arc<mnemo::Mnemo> {
    let dir = tempfile::Builder::new()
        .prefix("mnemo-fuzz-")
        .tempdir()
        .unwrap()
        .keep();
    std::fs::write(dir.join("MEMORY.md"), "# Core\n- Dana lives in Porto.\n").unwrap();
    let config = mnemo_core::Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    Arc::new(mnemo::Mnemo::open(mnemo_core::Workspace::new(dir), config).unwrap())
}

/// The runtime the servers answer on, as in the tests: two workers.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Bytes as text the way a reader of a file would see them (invalid UTF-8
/// replaced), as the `fuzz_*` tests read them.
pub fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}
