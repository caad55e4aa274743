//! The crate's error type and its mapping onto the shared error codes.

use std::path::PathBuf;

use mnemo_core::{EmbedError, ErrorCode};

/// Everything that can go wrong while finding, downloading, loading or running
/// a local embedding model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A required model file is missing; not retried. The message names the
    /// folder and says how to get the model.
    #[error("{message}")]
    ModelNotFound {
        /// The folder (or cache) that was searched.
        path: PathBuf,
        /// What was tried and what to do next.
        message: String,
    },
    /// A model file exists but cannot be parsed; the file is left as it is.
    #[error("cannot use {path}: {message}\nthe model folder looks damaged: fetch it again (scripts/fetch-models.sh, or delete the folder and let mnemo download it)")]
    BadModelFile {
        /// The offending file.
        path: PathBuf,
        /// Parser or loader message.
        message: String,
    },
    /// The configuration asks for something this crate cannot do.
    #[error("unsupported embedding model configuration: {0}")]
    Unsupported(String),
    /// The caller passed something unusable (bad model id, bad option).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A download failed (network, HTTP status, size or checksum). Nothing
    /// half-written is left in the cache.
    #[error("download failed: {0}")]
    Download(String),
    /// Inference failed inside the model.
    #[error("embedding inference failed: {0}")]
    Inference(String),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    #[cfg(feature = "local")]
    pub(crate) fn bad_file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        Error::BadModelFile {
            path: path.into(),
            message: message.to_string(),
        }
    }
}

impl mnemo_core::Coded for Error {
    /// The wire-visible classification of this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::ModelNotFound { .. } => ErrorCode::NotFound,
            Error::BadModelFile { .. } => ErrorCode::Corrupt,
            Error::Unsupported(_) => ErrorCode::Config,
            Error::Invalid(_) => ErrorCode::InvalidInput,
            Error::Io { .. } => ErrorCode::Io,
            Error::Download(_) => ErrorCode::Provider,
            Error::Inference(_) => ErrorCode::Internal,
        }
    }
}

impl From<Error> for EmbedError {
    fn from(e: Error) -> Self {
        match e {
            Error::Invalid(m) => EmbedError::Invalid(m),
            Error::Inference(m) => EmbedError::Inference(m),
            other => EmbedError::Unavailable(other.to_string()),
        }
    }
}

#[cfg(feature = "local")]
impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Inference(e.to_string())
    }
}
