//! Errors of the workspace files.

use std::path::PathBuf;

use mnemo_core::ErrorCode;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing workspace files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The operating system refused; nothing was written past the failure.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A stored file could not be parsed at a given line; the file is kept
    /// as it is and the caller decides whether to go on.
    #[error("{path}:{line}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what to do.
        message: String,
    },
    /// Input from a user or a client that cannot be accepted as it is.
    #[error("{0}")]
    Invalid(String),
    /// A session key that cannot name a session.
    #[error("invalid session key {key:?}: {reason}")]
    BadKey {
        /// The key as given.
        key: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A path that would leave the workspace.
    #[error(transparent)]
    Path(#[from] mnemo_core::PathError),
    /// The named thing does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The name is taken and the caller did not ask to replace it; nothing
    /// was written.
    #[error("{0}")]
    Exists(String),
    /// The operation is never allowed on this file (forgetting the history,
    /// a daily log or a session note); nothing was changed.
    #[error("{0}")]
    Refused(String),
    /// Configuration that cannot be used.
    #[error(transparent)]
    Config(#[from] mnemo_core::ConfigError),
    /// A compare-and-swap write found another version in place (another
    /// writer got there first); nothing was written: read again and retry.
    #[error("{0}")]
    Conflict(String),
    /// The storage behind the workspace (a database) failed or cannot be
    /// reached; nothing past the failure was written.
    #[error("{location}: {message}")]
    Storage {
        /// Where (a database and workspace; never a password).
        location: String,
        /// What failed and what to do.
        message: String,
    },
}

impl Error {
    /// Wraps an I/O error with what was being done and where.
    pub fn io(op: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { op, path, source }
    }
}

impl mnemo_core::Coded for Error {
    /// The wire-level code for this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::Io { .. } => ErrorCode::Io,
            Error::Corrupt { .. } => ErrorCode::Corrupt,
            Error::Invalid(_) | Error::BadKey { .. } | Error::Exists(_) => ErrorCode::InvalidInput,
            Error::Path(_) | Error::Refused(_) => ErrorCode::Forbidden,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::Config(_) => ErrorCode::Config,
            Error::Conflict(_) => ErrorCode::Busy,
            Error::Storage { .. } => ErrorCode::Io,
        }
    }
}
