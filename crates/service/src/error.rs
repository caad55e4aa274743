//! The error of every operation and its one mapping onto what each surface
//! reports: the wire code (`ErrorCode`), the HTTP status, the CLI's exit
//! code, and the JSON body `{"error": {"code", "message"}}`.

use mnemo_core::{Coded, ErrorCode};

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything an operation or a server start can fail with.
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
    /// The chat model could not be resolved or built.
    #[error(transparent)]
    Llm(#[from] mnemo_llm::LlmError),
    /// A path would leave the workspace or the part of it it belongs to.
    #[error(transparent)]
    Path(#[from] mnemo_core::PathError),
    /// The caller's arguments cannot be used: the message says what to send instead.
    #[error("{0}")]
    Invalid(String),
    /// The named thing does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request's token is missing, or does not open what it asks for
    /// (the same answer whether or not that exists).
    #[error("{message}")]
    Unauthorized {
        /// What to send instead.
        message: String,
        /// True when a token came but was not the right one (403), false
        /// when none came (401).
        denied: bool,
    },
    /// The thing to create exists already.
    #[error("{0}")]
    Exists(String),
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
    /// The HTTP status: the code's, except that an operation needing a
    /// chat model where none is configured, or consolidation where the
    /// workspace has it off, is 501 (not available here) rather than a
    /// server failure.
    pub fn http_status(&self) -> u16 {
        match self {
            Error::NotConfigured(_)
            | Error::Engine(mnemo_engine::Error::ConsolidationOff { .. }) => 501,
            _ => self.code().http_status(),
        }
    }

    /// The CLI's exit code.
    pub fn exit_code(&self) -> i32 {
        self.code().exit_code()
    }

    /// The error as every surface answers it.
    pub fn to_body(&self) -> crate::output::ErrorBody {
        crate::output::ErrorBody {
            error: crate::output::ErrorDetail {
                code: self.code().as_str().to_string(),
                message: self.to_string(),
            },
        }
    }

    /// [`Error::to_body`] as JSON: `{"error": {"code": "...", "message": "..."}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.to_body()).unwrap_or_default()
    }
}

impl mnemo_core::Coded for Error {
    /// The wire-level code of this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::Mnemo(e) => e.code(),
            Error::Store(e) => e.code(),
            Error::Index(e) => e.code(),
            Error::Engine(e) => e.code(),
            Error::Llm(e) => e.code(),
            Error::Path(_) => ErrorCode::Forbidden,
            Error::Invalid(_) => ErrorCode::InvalidInput,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::Unauthorized { denied: false, .. } => ErrorCode::Unauthorized,
            Error::Unauthorized { denied: true, .. } => ErrorCode::Forbidden,
            Error::Exists(_) => ErrorCode::Busy,
            Error::NotConfigured(_) | Error::Unsafe(_) => ErrorCode::Config,
            Error::Io { .. } => ErrorCode::Io,
            Error::Transport(_) | Error::Internal(_) => ErrorCode::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consolidation_off_is_not_available_here_rather_than_a_failure() {
        let e = Error::Engine(mnemo_engine::Error::ConsolidationOff {
            profile: "openclaw".into(),
            by_profile: true,
        });
        assert_eq!((e.http_status(), e.exit_code()), (501, 7));
        let body = e.to_json();
        assert_eq!(body["error"]["code"], "config");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("the `openclaw` profile does not consolidate")
                && message.contains("consolidation_enabled = true"),
            "{message}"
        );
    }
}
