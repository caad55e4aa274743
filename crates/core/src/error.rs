//! The small set of error codes that every surface maps errors to, and the
//! [`Coded`] trait through which every library error names its code.

use serde::{Deserialize, Serialize};

/// A stable, wire-visible classification of an error.
///
/// Library crates keep rich `thiserror` enums; each of them maps onto one of
/// these codes so that the CLI (exit codes), MCP (JSON-RPC errors) and HTTP
/// (status codes) report failures consistently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The caller sent something malformed: fix the input and retry.
    InvalidInput,
    /// A path or key would leave the workspace: refused, nothing done.
    Forbidden,
    /// The named thing does not exist.
    NotFound,
    /// Stored data could not be parsed; the file is kept as it is.
    Corrupt,
    /// Another writer holds the resource; retrying later may succeed.
    Busy,
    /// A model or embedding provider failed.
    Provider,
    /// Configuration is missing or wrong.
    Config,
    /// The operating system refused an I/O operation.
    Io,
    /// A bug or an unexpected state.
    Internal,
    /// The request carries no credentials, or ones that do not open what
    /// it asks for.
    Unauthorized,
}

impl ErrorCode {
    /// The HTTP status a server answers with for this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidInput => 400,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Busy => 409,
            ErrorCode::Corrupt => 422,
            ErrorCode::Provider => 502,
            ErrorCode::Config => 500,
            ErrorCode::Io | ErrorCode::Internal => 500,
        }
    }

    /// The process exit code the CLI uses for this code.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorCode::InvalidInput | ErrorCode::Forbidden | ErrorCode::Unauthorized => 2,
            ErrorCode::NotFound => 3,
            ErrorCode::Corrupt => 4,
            ErrorCode::Busy => 5,
            ErrorCode::Provider => 6,
            ErrorCode::Config => 7,
            ErrorCode::Io | ErrorCode::Internal => 1,
        }
    }

    /// The snake_case name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Corrupt => "corrupt",
            ErrorCode::Busy => "busy",
            ErrorCode::Provider => "provider",
            ErrorCode::Config => "config",
            ErrorCode::Io => "io",
            ErrorCode::Internal => "internal",
            ErrorCode::Unauthorized => "unauthorized",
        }
    }
}

/// An error that names its [`ErrorCode`]: every library error type of mnemo
/// implements it, and every surface takes its answer from it alone: the
/// CLI's exit status and `--json` error code, the HTTP status, the MCP
/// error. An error that wraps another usually answers with the inner one's
/// code.
pub trait Coded: std::error::Error {
    /// The wire-visible classification of this error.
    fn code(&self) -> ErrorCode;
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
