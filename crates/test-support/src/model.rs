//! Where tests find the local embedding model.

use std::path::{Path, PathBuf};

/// The all-MiniLM-L6-v2 folder: `MNEMO_TEST_MODEL_DIR`, else
/// `<repository>/.mnemo-models/all-MiniLM-L6-v2`. Panics (failing the test)
/// with instructions when it is missing: tests that need the real model
/// never skip silently.
#[allow(clippy::panic)]
pub fn model_dir() -> PathBuf {
    let dir = match std::env::var_os("MNEMO_TEST_MODEL_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.mnemo-models/all-MiniLM-L6-v2"),
    };
    if !(dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file()) {
        panic!(
            "the test model is missing from {}: run scripts/fetch-models.sh (or set MNEMO_TEST_MODEL_DIR)",
            dir.display()
        );
    }
    dir
}
