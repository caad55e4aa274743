//! The peers' own releases that tests run beside mnemo, installed by
//! `scripts/fetch-peers.sh`.

use std::path::{Path, PathBuf};

/// The Python of nanobot-ai 0.3.5 (`MNEMO_NANOBOT_PYTHON`, else the
/// repository's `.venv-nanobot/`); `None` with a note when it is not
/// installed, which fails under CI instead.
///
/// # Panics
/// Under CI (`CI` set) when nanobot is not installed.
pub fn nanobot_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MNEMO_NANOBOT_PYTHON") {
        return Some(p.into());
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv-nanobot/bin/python");
    if venv.exists() {
        return Some(venv);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "nanobot-ai 0.3.5 is not installed: CI must run scripts/fetch-peers.sh (.ci/run does)"
    );
    eprintln!("not run: nanobot-ai 0.3.5 is not installed (scripts/fetch-peers.sh installs it)");
    None
}
