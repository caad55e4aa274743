//! The engine's error type and its mapping to the wire-level codes.

use mnemo_core::ErrorCode;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing workspace files failed; nothing past the failure
    /// was written.
    #[error(transparent)]
    Store(#[from] mnemo_store::Error),
    /// The model failed after its own retries. Consolidation counts it as a
    /// failed run (the 3rd one archives raw); compaction trips the breaker.
    #[error(transparent)]
    Llm(#[from] mnemo_llm::LlmError),
    /// The `[engine]` section of mnemo.toml is wrong.
    #[error(transparent)]
    Config(#[from] mnemo_core::ConfigError),
    /// Another consolidation or compaction of the same session holds its
    /// lock; retry when it is done.
    #[error("session {key:?} is busy: another consolidation or compaction holds {lock}; retry when it is done")]
    Busy {
        /// Session key.
        key: String,
        /// The lock file.
        lock: String,
    },
    /// A consolidation run could not reach the model or use its answer;
    /// the cursor stayed and the run counts as one failed run. The run that
    /// reaches the limit archives the messages raw instead.
    #[error("consolidation of session {key:?} (messages {from}..{to}) failed: {source}; the cursor stays at {from}. \
             This is failed run {failures} of {limit}: run it again when the model answers \
             (at {limit} failed runs the messages are archived raw into memory/HISTORY.md)")]
    ConsolidationFailed {
        /// Session key.
        key: String,
        /// Chunk start (the cursor).
        from: usize,
        /// Chunk end.
        to: usize,
        /// Failed runs so far.
        failures: u32,
        /// `[engine] consolidation_max_failures`.
        limit: u32,
        /// Why this run failed.
        source: Box<Error>,
    },
    /// The model answered, but not in a usable shape (no `save_memory`
    /// call, missing fields). Counted as a consolidation failure.
    #[error("the model's answer was unusable: {0}")]
    BadAnswer(String),
    /// Consolidation was asked for (`mnemo consolidate`, HTTP or MCP
    /// `consolidate`) in a workspace where it is off: nothing ran and
    /// nothing changed.
    #[error("{}", consolidation_off(.profile, .by_profile))]
    ConsolidationOff {
        /// The workspace's `[memory] profile`.
        profile: String,
        /// True when the profile turned it off, false when `[engine]
        /// consolidation_enabled = false` did.
        by_profile: bool,
    },
    /// The prompt still overflows the context window after every recovery.
    #[error("the prompt of session {key:?} still does not fit the context window after {attempts} compactions: {message}")]
    StillOverflowing {
        /// Session key.
        key: String,
        /// Compactions tried.
        attempts: u32,
        /// The provider's last message.
        message: String,
    },
    /// Input that cannot be used as it is.
    #[error("{0}")]
    Invalid(String),
    /// An I/O error outside the store (locks, instruction files).
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl Error {
    /// The wire-level code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Store(e) => e.code(),
            Error::Llm(e) => e.code(),
            Error::Config(_) => ErrorCode::Config,
            Error::Busy { .. } => ErrorCode::Busy,
            Error::ConsolidationFailed { source, .. } => source.code(),
            Error::BadAnswer(_) | Error::StillOverflowing { .. } => ErrorCode::Provider,
            Error::ConsolidationOff { .. } => ErrorCode::Config,
            Error::Invalid(_) => ErrorCode::InvalidInput,
            Error::Io { .. } => ErrorCode::Io,
        }
    }
}

/// What [`Error::ConsolidationOff`] says: why it is off and how to turn it on.
fn consolidation_off(profile: &str, by_profile: &bool) -> String {
    let why = if *by_profile {
        format!("the `{profile}` profile does not consolidate")
    } else {
        format!("`[engine] consolidation_enabled = false` (profile `{profile}`)")
    };
    format!(
        "consolidation is off in this workspace ({why}), so nothing was consolidated and nothing changed; \
         to turn it on, set `[engine] consolidation_enabled = true` in mnemo.toml \
         (or pass `--set engine.consolidation_enabled=true`); it then also runs with every turn"
    )
}
