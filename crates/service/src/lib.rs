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
//!   bearer tokens), shared by both servers.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod agent;
pub mod args;
pub mod error;
pub mod guard;
pub mod openapi;
pub mod output;
pub mod schema;
mod service;
pub mod tools;

pub use agent::ServiceTools;
pub use error::{Error, Result};
pub use service::{
    apply_rerank, blocking, chat_model, rerank_passages, IndexMemorySearch, Service, NO_MODEL_HINT,
};
