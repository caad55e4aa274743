//! The error type of the MCP server and of the shared operations, and its
//! mapping to the wire-level codes.

use mnemo_core::ErrorCode;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a tool call or a server start can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening the workspace's parts failed.
    #[error(transparent)]
    Mnemo(#[from] mnemo::Error),
    /// Reading or writing workspace files failed; nothing past the failure was written.
    #[error(transparent)]
    Store(#[from] mnemo_store::Error),
    /// The index failed (searches) or refused a path (`memory_get`).
    #[error(transparent)]
    Index(#[from] mnemo_index::IndexError),
    /// The memory engine failed (context, consolidation, compaction).
    #[error(transparent)]
    Engine(#[from] mnemo_engine::Error),
    /// The caller's arguments cannot be used: the message says what to send instead.
    #[error("{0}")]
    Invalid(String),
    /// The named thing does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The operation needs a chat model and none is configured.
    #[error("{0}")]
    NotConfigured(String),
    /// The server was asked to start in an unsafe way (non-loopback without a token).
    #[error("{0}")]
    Unsafe(String),
    /// Binding or serving the socket failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The MCP transport failed.
    #[error("MCP transport: {0}")]
    Transport(String),
    /// A blocking task panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The wire-level code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Mnemo(e) => e.code(),
            Error::Store(e) => e.code(),
            Error::Index(e) => e.code(),
            Error::Engine(e) => e.code(),
            Error::Invalid(_) => ErrorCode::InvalidInput,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::NotConfigured(_) | Error::Unsafe(_) => ErrorCode::Config,
            Error::Io { .. } => ErrorCode::Io,
            Error::Transport(_) | Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The error as the JSON body every surface returns:
    /// `{"error": {"code": "...", "message": "..."}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"error": {"code": self.code().as_str(), "message": self.to_string()}})
    }
}
