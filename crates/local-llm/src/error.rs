//! The crate's error type and its mapping onto the chat seam's
//! [`LlmError`], so the engine reacts to a local model's failures exactly as
//! to a remote one's.

use std::path::PathBuf;

use mnemo_core::ErrorCode;
use mnemo_llm::LlmError;

/// Everything that can go wrong finding, loading or running a local chat
/// model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The model file is not there and could not be fetched; not retried.
    /// The message says how to get it.
    #[error("{0}")]
    NotFound(String),
    /// The model file is there but unusable (not GGUF, truncated, an
    /// architecture or tensor type this crate does not run). The file is
    /// left as it is.
    #[error("the model file {path} could not be loaded: {message}")]
    BadModel {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The configuration or the request asks for something unusable.
    #[error("{0}")]
    Invalid(String),
    /// The prompt and the output budget do not fit the context window: the
    /// engine compacts and retries; nothing is cut silently.
    #[error("the prompt does not fit the model's context window: {0}")]
    ContextOverflow(String),
    /// The model's answer cannot be used (a tool call that never closed,
    /// JSON that does not parse, the token budget spent inside a forced
    /// call).
    #[error("{0}")]
    BadAnswer(String),
    /// The computation failed inside the model.
    #[error("local model inference failed: {0}")]
    Inference(String),
    /// The caller went away (a timeout or a cancelled turn).
    #[error("generation cancelled")]
    Cancelled,
}

/// What to do about a model file that cannot be loaded: get it again.
pub const REFETCH: &str = "re-download it: delete the file and mnemo fetches its default model again on \
first use (or run scripts/fetch-models.sh --chat), or point `path` in [provider] at a good .gguf file";

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// This error as the chat seam's error, labelled with `provider`.
    pub fn into_llm(self, provider: &str) -> LlmError {
        match self {
            Error::ContextOverflow(message) => LlmError::ContextOverflow {
                provider: provider.to_string(),
                status: None,
                message,
            },
            Error::BadAnswer(message) => LlmError::Decode {
                provider: provider.to_string(),
                message,
            },
            Error::Inference(_) | Error::Cancelled => LlmError::Transient {
                provider: provider.to_string(),
                status: None,
                attempts: 1,
                message: self.to_string(),
            },
            other => LlmError::Config(other.to_string()),
        }
    }
}

impl mnemo_core::Coded for Error {
    /// The wire-visible classification of this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::BadModel { .. } => ErrorCode::Corrupt,
            Error::Invalid(_) => ErrorCode::Config,
            Error::ContextOverflow(_) | Error::BadAnswer(_) | Error::Cancelled => {
                ErrorCode::Provider
            }
            Error::Inference(_) => ErrorCode::Internal,
        }
    }
}

impl From<candle_core::Error> for Error {
    fn from(e: candle_core::Error) -> Self {
        Error::Inference(e.to_string())
    }
}

impl From<mnemo_embed::Error> for Error {
    fn from(e: mnemo_embed::Error) -> Self {
        Error::NotFound(e.to_string())
    }
}
