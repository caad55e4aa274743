//! The error type of mnemo-index and its mapping to wire error codes.

use std::path::PathBuf;

use mnemo_core::{EmbedError, ErrorCode, PathError};

/// Result alias of this crate.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;

/// Everything that can go wrong while indexing, searching or reading memory.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A path given to `memory_get` was refused (outside the workspace, not
    /// Markdown, not a memory path). Nothing was read.
    #[error("refused path `{path}`: {reason}")]
    Forbidden {
        /// The path as given.
        path: String,
        /// Why, and what is allowed instead.
        reason: String,
    },
    /// The path failed the workspace confinement check.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A request was malformed (for instance an empty query); fix and retry.
    #[error("invalid request: {0}")]
    InvalidInput(String),
    /// The settings are inconsistent; fix `mnemo.toml`.
    #[error("bad index settings: {0}")]
    Config(String),
    /// Reading configuration failed.
    #[error(transparent)]
    ConfigFile(#[from] mnemo_core::ConfigError),
    /// The database holding the index (SQLite's file, a PostgreSQL server)
    /// failed a statement, or the connection to it broke. Searches retry
    /// once on a fresh connection; a sync stops at the failing file and
    /// leaves earlier files committed. `location` names the database (a
    /// server's URL without its password).
    #[error("index database error at {location}: {message}{}", failure.advice())]
    Database {
        /// Where the database is (no password).
        location: String,
        /// What the database or its client library said.
        message: String,
        /// What kind of failure, for the wire code and the advice.
        failure: DbFailure,
    },
    /// Another process holds the sync lock and the caller asked not to wait.
    #[error("another sync is running on this index (lock {0}); retry when it has finished")]
    Busy(String),
    /// The embedder failed; the file stays marked for embedding and the next
    /// sync retries it.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The embedder returned vectors of an unexpected shape.
    #[error("the embedder returned {got} vectors of dimension {dims}, expected {expected} of dimension {want}")]
    EmbedShape {
        /// Vectors received.
        got: usize,
        /// Dimension received.
        dims: usize,
        /// Vectors expected.
        expected: usize,
        /// Dimension expected.
        want: usize,
    },
    /// An I/O operation on a workspace or index file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file watcher could not be started.
    #[error("cannot watch the workspace: {0}")]
    Watch(#[from] notify::Error),
    /// Stored index data is unreadable (bad vector blob, bad meta). The index
    /// is derived: a forced reindex rebuilds it.
    #[error("corrupt index data: {0}; run `mnemo index --force` to rebuild the index")]
    Corrupt(String),
}

impl IndexError {
    /// A [`IndexError::Database`] of kind [`DbFailure::Other`].
    pub fn database(location: impl Into<String>, message: impl Into<String>) -> Self {
        IndexError::Database {
            location: location.into(),
            message: message.into(),
            failure: DbFailure::Other,
        }
    }

    /// A [`IndexError::Io`] on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.into(),
            source,
        }
    }
}

impl mnemo_core::Coded for IndexError {
    /// The wire-visible code of this error.
    fn code(&self) -> ErrorCode {
        match self {
            IndexError::Forbidden { .. } | IndexError::Path(_) => ErrorCode::Forbidden,
            IndexError::InvalidInput(_) => ErrorCode::InvalidInput,
            IndexError::Config(_) | IndexError::ConfigFile(_) => ErrorCode::Config,
            IndexError::Database { failure, .. } => match failure {
                DbFailure::Busy => ErrorCode::Busy,
                DbFailure::Corrupt => ErrorCode::Corrupt,
                DbFailure::Unavailable => ErrorCode::Io,
                DbFailure::Other => ErrorCode::Internal,
            },
            IndexError::Busy(_) => ErrorCode::Busy,
            IndexError::Embed(_) | IndexError::EmbedShape { .. } => ErrorCode::Provider,
            IndexError::Io { .. } | IndexError::Watch(_) => ErrorCode::Io,
            IndexError::Corrupt(_) => ErrorCode::Corrupt,
        }
    }
}

/// What kind of failure a database reported, in terms every backend shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbFailure {
    /// Locked or busy: retry.
    Busy,
    /// The stored data is damaged.
    Corrupt,
    /// The database server cannot serve now: the connection broke, the
    /// server is shutting down or read-only, out of disk, a statement ran
    /// past its timeout, or the index was dropped under the request (its
    /// workspace deleted). Nothing of the index is wrong.
    Unavailable,
    /// Anything else (a refused statement, a broken connection).
    Other,
}

impl DbFailure {
    /// What to do about it, appended to the message.
    fn advice(&self) -> &'static str {
        match self {
            DbFailure::Busy => "; another process is using the index: retry",
            DbFailure::Unavailable => {
                "; the database cannot serve this now: retry in a moment, and if it persists \
                 tell whoever runs the database"
            }
            DbFailure::Corrupt | DbFailure::Other => {
                "\nthe index is derived data: if this persists, run `mnemo index --force` to rebuild it"
            }
        }
    }
}
