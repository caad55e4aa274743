//! Errors that stop an import before it starts. Problems with single source
//! files never stop it: they become `error` lines of the [`crate::Report`].

use std::path::PathBuf;

use mnemo_core::ErrorCode;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an import could not run at all. Nothing has been written when one of
/// these is returned before the first action, and the source is never
/// modified.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source folder does not exist or is not a folder.
    #[error("{path}: {message}")]
    Source {
        /// The path as given.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The source holds several workspaces, agents or projects and the
    /// options did not say which to import (or named one that is not there).
    #[error("{path}: {message}")]
    Choose {
        /// The source folder.
        path: PathBuf,
        /// What was found and how to choose.
        message: String,
        /// The names found, in order.
        found: Vec<String>,
    },
    /// The import manifest `.mnemo/imports.json` cannot be read; it is left
    /// as it is.
    #[error("{path}: {message}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// Reading or writing the workspace failed.
    #[error(transparent)]
    Store(#[from] mnemo_store::Error),
}

impl mnemo_core::Coded for Error {
    /// The wire-level code for this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::Source { .. } | Error::Choose { .. } => ErrorCode::InvalidInput,
            Error::Manifest { .. } => ErrorCode::Corrupt,
            Error::Store(e) => e.code(),
        }
    }
}
