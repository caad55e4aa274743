//! mnemo's service: every operation the surfaces offer, once. The CLI, the
//! MCP server (`mnemo-mcp`) and the HTTP API (`mnemo-http`) are thin
//! transports over [`Service`]: they parse, authenticate and render, and
//! call the same typed operations, so they validate, default, answer and
//! fail alike.
//!
//! - [`args`]: what each operation takes, declared once;
//! - [`output`]: what each answers, one typed value each (one search-hit
//!   shape everywhere);
//! - [`tools`] and [`openapi`]: the MCP tool list, the agent's tools and the
//!   OpenAPI document, generated from those types ([`schema`]);
//! - [`error`]: one error type and its one mapping to codes, HTTP statuses
//!   and exit codes;
//! - [`guard`]: who may talk to a server (loopback, Host/Origin/JSON checks,
//!   bearer tokens), shared by both servers;
//! - [`tenants`]: many workspaces in PostgreSQL behind one server, each
//!   opened by its own token;
//! - [`inspect`]: what the memory inspector page shows (memory with
//!   sources, changes to review, session timelines, the index);
//! - [`validity`]: whether what a search finds still holds (current facts
//!   first, ended ones marked).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod agent;
pub mod args;
pub mod error;
pub mod guard;
pub mod inspect;
pub mod openapi;
pub mod output;
pub mod schema;
mod service;
pub mod tenants;
pub mod tools;
pub mod validity;

pub use agent::ServiceTools;
pub use error::{Error, Result};
pub use mnemo_core::Coded;
pub use service::{
    apply_rerank, blocking, chat_model, rerank_passages, IndexMemorySearch, Service, NO_MODEL_HINT,
};

#[cfg(test)]
mod architecture_tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    /// `cargo hakari`'s crate: every crate depends on it for the features
    /// it unifies, and it is drawn nowhere.
    const HACK: &str = "mnemo-workspace-hack";

    /// The `mnemo*` entries of a manifest's `[dependencies]`.
    fn workspace_deps(manifest: &str) -> Vec<String> {
        let Some(deps) = manifest.split("[dependencies]").nth(1) else {
            return Vec::new();
        };
        let deps = deps.split("\n[").next().unwrap_or("");
        let mut out: Vec<String> = deps
            .lines()
            .filter_map(|l| l.split(['.', ' ', '=']).next())
            .filter(|n| *n == "mnemo" || n.starts_with("mnemo-"))
            // The workspace-hack crate is a build setting, not a seam.
            .filter(|n| *n != HACK)
            .map(str::to_string)
            .collect();
        out.sort();
        out
    }

    /// `mnemo-index` is the search policy only: no database (SQLite lives
    /// in mnemo-index-sqlite, PostgreSQL in mnemo-index-postgres) and no
    /// `unsafe` (the SIMD scans and the FTS5 C API moved with SQLite).
    #[test]
    fn the_search_policy_has_no_database_and_no_unsafe() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let manifest = std::fs::read_to_string(root.join("crates/index/Cargo.toml")).unwrap();
        for db in ["rusqlite", "sqlite-vec", "tokio-postgres", "postgres"] {
            assert!(
                !manifest.lines().any(|l| l.trim_start().starts_with(db)),
                "mnemo-index depends on {db}"
            );
        }
        let lib = std::fs::read_to_string(root.join("crates/index/src/lib.rs")).unwrap();
        assert!(
            lib.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"),
            "mnemo-index must forbid unsafe code"
        );
    }

    /// docs/ARCHITECTURE.md draws the crates exactly as the manifests have them.
    #[test]
    fn the_architecture_picture_is_the_manifests() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut manifests = BTreeMap::new();
        for entry in std::fs::read_dir(root.join("crates")).unwrap() {
            let path = entry.unwrap().path().join("Cargo.toml");
            let text = std::fs::read_to_string(&path).unwrap();
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .unwrap()
                .trim_matches('"')
                .to_string();
            if name != HACK {
                manifests.insert(name, workspace_deps(&text));
            }
        }
        let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
        let block = doc
            .split("## Crates and seams")
            .nth(1)
            .and_then(|s| s.split("```text\n").nth(1))
            .and_then(|s| s.split("```").next())
            .unwrap();
        let mut drawn = BTreeMap::new();
        for line in block.lines().filter(|l| !l.trim().is_empty()) {
            let (name, deps) = line.split_once(" --> ").unwrap_or((line.trim(), ""));
            let mut deps: Vec<String> = deps
                .split(", ")
                .filter(|d| !d.is_empty())
                .map(str::to_string)
                .collect();
            deps.sort();
            drawn.insert(name.trim().to_string(), deps);
        }
        assert_eq!(drawn, manifests);
    }
}
