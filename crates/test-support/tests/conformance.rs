//! The conformance suites cannot shrink unnoticed: every scenario function
//! is listed in its suite's `SCENARIOS` (which each macro's own
//! `suite_is_complete` checks it generates), and every implementation of a
//! seam trait in the workspace's libraries is registered and run through
//! its suite by the `tests/conformance.rs` of the crate named for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mnemo_test_support::conformance::{
    chat, chat_contract, embedder, index, index_store, storage, tokens, Implementation,
    CHAT_CONTRACTS, CHAT_MODELS, EMBEDDERS, INDEX_BACKENDS, INDEX_STORES, STORAGES, TOKEN_COUNTERS,
};

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Names of the top-level `pub fn`s of a suite's source file.
fn scenario_functions(file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/conformance")
        .join(file);
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("pub fn "))
        .map(|rest| rest.split(['(', '<']).next().unwrap().to_string())
        .collect()
}

#[test]
fn every_scenario_function_is_listed() {
    for (file, listed) in [
        ("embedder.rs", embedder::SCENARIOS),
        ("chat.rs", chat::SCENARIOS),
        ("tokens.rs", tokens::SCENARIOS),
        ("index.rs", index::SCENARIOS),
        ("storage.rs", storage::SCENARIOS),
        ("index_store.rs", index_store::SCENARIOS),
        ("chat_contract.rs", chat_contract::SCENARIOS),
    ] {
        let found = scenario_functions(file);
        assert_eq!(
            found, listed,
            "{file}: the scenario functions and SCENARIOS differ (same names, same order)"
        );
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `(type, crate folder)` of every `impl … Trait for Type` in the
/// libraries (`crates/*/src`; tests, examples and benches are not
/// implementations users get).
fn implementations(trait_name: &str) -> BTreeSet<(String, String)> {
    let needle = format!("{trait_name} for ");
    let mut found = BTreeSet::new();
    for krate in std::fs::read_dir(crates_dir()).unwrap().flatten() {
        let name = krate.file_name().to_string_lossy().into_owned();
        let mut files = Vec::new();
        rust_files(&krate.path().join("src"), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for line in text.lines().map(str::trim_start) {
                if !line.starts_with("impl") {
                    continue;
                }
                let Some(at) = line.find(&needle) else {
                    continue;
                };
                // `impl Embedder for` or `impl mnemo_core::Embedder for`, not
                // `impl FooEmbedder for`.
                let before = &line[..at];
                if !(before.ends_with(' ') || before.ends_with("::")) {
                    continue;
                }
                let ty: String = line[at + needle.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.insert((ty, name.clone()));
            }
        }
    }
    found
}

/// The suite instances `macro_name!(instance, …)` in a crate's
/// `tests/<file>`.
fn invoked(krate: &str, file: &str, macro_name: &str) -> Vec<String> {
    let path = crates_dir().join(krate).join("tests").join(file);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let needle = format!("{macro_name}!(");
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push(name);
    }
    out
}

/// Every implementation of `trait_name` is registered in `registry` and
/// runs `macro_name!` in its crate's `tests/<file>`.
fn check_in(trait_name: &str, macro_name: &str, file: &str, registry: &[Implementation]) {
    let found = implementations(trait_name);
    let registered: BTreeSet<(String, String)> = registry
        .iter()
        .map(|i| (i.ty.to_string(), i.tested_in.to_string()))
        .collect();
    let unregistered: Vec<_> = found.difference(&registered).collect();
    assert!(
        unregistered.is_empty(),
        "implementations of {trait_name} with no suite: {unregistered:?}; add them to \
         mnemo_test_support::conformance and run {macro_name}! on them in tests/{file}"
    );
    let stale: Vec<_> = registered.difference(&found).collect();
    assert!(
        stale.is_empty(),
        "registered implementations of {trait_name} not found in the sources: {stale:?}"
    );
    let mut crates: BTreeSet<&str> = registry.iter().map(|i| i.tested_in).collect();
    for i in registry {
        match i.exempt {
            Some(why) => {
                assert!(
                    i.suites.is_empty(),
                    "{} is exempt ({why}) but lists suites",
                    i.ty
                );
                assert!(!why.trim().is_empty());
            }
            None => assert!(!i.suites.is_empty(), "{} runs no suite", i.ty),
        }
    }
    for krate in std::mem::take(&mut crates) {
        let mut want: Vec<&str> = registry
            .iter()
            .filter(|i| i.tested_in == krate)
            .flat_map(|i| i.suites.iter().copied())
            .collect();
        want.sort_unstable();
        let mut got = invoked(krate, file, macro_name);
        got.sort_unstable();
        assert_eq!(
            got, want,
            "crates/{krate}/tests/{file} must run {macro_name}! exactly for the registered suites"
        );
    }
}

fn check(trait_name: &str, macro_name: &str, registry: &[Implementation]) {
    check_in(trait_name, macro_name, "conformance.rs", registry);
}

#[test]
fn every_embedder_runs_the_embedder_suite() {
    check("Embedder", "embedder_suite", EMBEDDERS);
}

#[test]
fn every_chat_model_runs_the_chat_model_suite() {
    check("ChatModel", "chat_model_suite", CHAT_MODELS);
}

#[test]
fn every_token_counter_runs_the_token_counter_suite() {
    check("TokenCounter", "token_counter_suite", TOKEN_COUNTERS);
}

#[test]
fn every_index_backend_runs_the_index_backend_suite() {
    check("IndexBackend", "index_backend_suite", INDEX_BACKENDS);
}

#[test]
fn every_storage_runs_the_storage_suite() {
    check("Storage", "storage_suite", STORAGES);
}

#[test]
fn every_index_store_runs_the_lifecycle_suite() {
    check_in(
        "IndexStore",
        "index_store_suite",
        "index_store.rs",
        INDEX_STORES,
    );
}

#[test]
fn every_chat_model_runs_the_contracts() {
    check_in(
        "ChatModel",
        "chat_contract_suite",
        "chat_contract.rs",
        CHAT_CONTRACTS,
    );
}
