//! Test helpers of mnemo: a scripted model server that speaks the OpenAI
//! chat-completions, Anthropic Messages and OpenAI embeddings protocols over
//! real HTTP on `127.0.0.1`, so the LLM path is tested without a live API;
//! a package index ([`pypi`]) that serves a model wheel the way PyPI does;
//! a headless Chromium driven over WebDriver ([`webdriver`]) for the
//! inspector page; a mutational fuzzer ([`fuzz`]) that runs inside `cargo test`; and the
//! conformance suites of the seam traits ([`conformance`]), run on every
//! implementation.
//!
//! ```
//! use mnemo_test_support::{Reply, ScriptedServer};
//! use serde_json::json;
//!
//! let server = ScriptedServer::start_blocking();
//! server.push(Reply::tool_call("save_memory", json!({"history_entry": "[2026-01-01 10:00] x"})));
//! server.push(Reply::error(429, json!({"error": {"message": "slow down"}})).with_header("retry-after", "0"));
//! assert!(server.openai_base().ends_with("/v1"));
//! assert_eq!(server.remaining(), 2);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod conformance;
pub mod fuzz;
mod memo;
mod model;
pub mod peers;
pub mod postgres;
pub mod pypi;
mod random;
mod render;
mod reply;
mod server;
pub mod webdriver;

pub use fuzz::{Fuzz, FuzzReport};
pub use memo::Memo;
pub use model::{e5_model_file, model_dir, mpnet_model_dir, smollm2_gguf};
pub use random::XorShift;
pub use render::{estimate_tokens, hashed_embedding};
pub use reply::Reply;
pub use server::{RecordedRequest, ScriptedServer, DEFAULT_EMBEDDING_DIMS};
