//! Shared vocabulary of mnemo: the message record, the workspace layout,
//! configuration access, the seam traits (token counting, embedding) and the
//! error codes every surface (CLI, MCP, HTTP) exposes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod config;
pub mod dialogue;
pub mod embed;
pub mod error;
pub mod files;
pub mod journal;
pub mod message;
pub mod paths;
pub mod redact;
pub mod schema;
pub mod text;
pub mod tokens;
pub mod workspace;

pub use config::{Config, ConfigError};
pub use embed::{EmbedError, EmbedKind, Embedder, EmbedderId};
pub use error::{Coded, ErrorCode};
pub use message::{Content, FunctionCall, Message, Role, ToolCall};
pub use paths::{confine, real_path, resolve_in_workspace, Area, PathError};
pub use tokens::{TokenCount, TokenCounter};
pub use workspace::Workspace;
