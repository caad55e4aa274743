//! The crate's error type and its mapping to the shared error codes.

use std::path::PathBuf;

use mnemo_core::ErrorCode;

/// Everything that can stop an evaluation run.
///
/// None of these is retried: an evaluation either runs on well-formed input
/// with working parts or stops with a message saying what to fix.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The benchmark file could not be read.
    #[error("cannot read benchmark file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The benchmark file is not JSON in the expected schema.
    #[error(
        "{} is not a benchmark file: {message}\nexpected {{\"conversations\": [{{\"conv_id\", \"sessions\": [{{\"session_id\", \"turns\": [{{\"turn_id\", \"text\"}}]}}]}}], \"questions\": [{{\"conv_id\", \"question\", \"evidence_turns\", \"evidence_sessions\"}}]}}",
        path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the input".to_string())
    )]
    Parse {
        /// The file, when parsing one.
        path: Option<PathBuf>,
        /// Parser message, with line and column.
        message: String,
    },
    /// The file parses but breaks a rule the harness relies on.
    #[error("invalid benchmark file: {0}")]
    Schema(String),
    /// The options cannot be satisfied (for instance a vector mode without an embedder).
    #[error("invalid evaluation options: {0}")]
    Options(String),
    /// Writing a session log failed.
    #[error("writing the session logs failed: {0}")]
    Store(mnemo_store::Error),
    /// Indexing or searching failed.
    #[error("the index failed: {0}")]
    Index(mnemo_index::IndexError),
    /// The temporary workspace could not be created.
    #[error("cannot create a temporary workspace: {0}")]
    Workspace(std::io::Error),
}

impl mnemo_core::Coded for EvalError {
    /// The wire-visible code for this error.
    fn code(&self) -> ErrorCode {
        match self {
            EvalError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorCode::NotFound
            }
            EvalError::Read { .. } | EvalError::Workspace(_) => ErrorCode::Io,
            EvalError::Store(e) => e.code(),
            EvalError::Index(e) => e.code(),
            EvalError::Parse { .. } | EvalError::Schema(_) | EvalError::Options(_) => {
                ErrorCode::InvalidInput
            }
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;
