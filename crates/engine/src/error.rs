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
    /// A consolidation round could not reach the model or use its answer;
    /// the cursor stayed at its start (earlier rounds of the run stay
    /// saved) and the run counts as one failed run, unless the last
    /// counted one is under `consolidation_failure_spacing_secs` ago. The
    /// run that reaches the limit archives the round raw instead.
    #[error("{}", consolidation_failed(self))]
    ConsolidationFailed {
        /// Session key.
        key: String,
        /// Chunk start (the cursor).
        from: usize,
        /// Chunk end.
        to: usize,
        /// Counted failed runs so far.
        failures: u32,
        /// `[engine] consolidation_max_failures`.
        limit: u32,
        /// `[engine] consolidation_failure_spacing_secs`.
        spacing_secs: u64,
        /// Not counted: the last counted failed run was this many seconds
        /// ago.
        not_counted: Option<u64>,
        /// Where the run began, when its earlier rounds were saved.
        saved_from: Option<usize>,
        /// Why this run failed.
        source: Box<Error>,
    },
    /// The model refused a consolidation round as too long for its context
    /// window even after it was halved: the window mnemo was told is
    /// larger than the model's. Not counted as a failed run (no raw
    /// archive): set the real window and run it again.
    #[error("consolidation of session {key:?} (messages {from}..{to}) failed: the model refused the excerpt as too long for its context window, even cut to {tokens} tokens of messages ({source}). \
             The cursor stays at {from}, and this does not count toward the raw archive (it is not an outage). \
             mnemo sized the rounds for a window of {window} tokens: set `context_window` in mnemo.toml's [provider] section \
             (or `[engine] context_window`) to the model's real window and run it again")]
    ConsolidationTooLong {
        /// Session key.
        key: String,
        /// Round start (the cursor).
        from: usize,
        /// Round end.
        to: usize,
        /// Tokens of messages the last attempt showed at most.
        tokens: usize,
        /// The context window the rounds were sized for.
        window: usize,
        /// What the model said.
        source: Box<Error>,
    },
    /// A consolidation run archived a round raw after repeated failed runs
    /// ([`Error::from_raw_archive`]): nothing is lost, but nothing was
    /// distilled, so a command reports it as the failure it is.
    #[error("consolidation of session {key:?} failed {failures} time(s) in a row (the last: {last}); \
             messages {from}..{to} were archived raw into memory/HISTORY.md instead (secrets redacted; still searchable) and the cursor moved to {to}. \
             Nothing is lost, but nothing was distilled: check the model (`mnemo consolidate` of newer messages distils them once it answers)")]
    ArchivedRaw {
        /// Session key.
        key: String,
        /// Round start.
        from: usize,
        /// Round end.
        to: usize,
        /// Counted failed runs.
        failures: u32,
        /// The last failure's message.
        last: String,
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

impl mnemo_core::Coded for Error {
    /// The wire-level code of this error.
    fn code(&self) -> ErrorCode {
        match self {
            Error::Store(e) => e.code(),
            Error::Llm(e) => e.code(),
            Error::Config(_) => ErrorCode::Config,
            Error::Busy { .. } => ErrorCode::Busy,
            Error::ConsolidationFailed { source, .. } => source.code(),
            Error::ConsolidationTooLong { .. } | Error::ArchivedRaw { .. } => ErrorCode::Provider,
            Error::BadAnswer(_) | Error::StillOverflowing { .. } => ErrorCode::Provider,
            Error::ConsolidationOff { .. } => ErrorCode::Config,
            Error::Invalid(_) => ErrorCode::InvalidInput,
            Error::Io { .. } => ErrorCode::Io,
        }
    }
}

impl Error {
    /// The error of a consolidation run whose `events` show a round
    /// archived raw after repeated failed runs; `None` when none was. The
    /// engine returns such a run's events (the cursor moved, the history
    /// holds the messages), and a command that should fail then says so.
    pub fn from_raw_archive(key: &str, events: &[crate::EngineEvent]) -> Option<Error> {
        use crate::EngineEvent;
        let (i, round) = events.iter().enumerate().find_map(|(i, e)| match e {
            EngineEvent::Consolidated(r) if r.raw => Some((i, r)),
            _ => None,
        })?;
        let (failures, last) = events[..i]
            .iter()
            .rev()
            .find_map(|e| match e {
                EngineEvent::ConsolidationFailed {
                    failures, error, ..
                } => Some((*failures, error.clone())),
                _ => None,
            })
            .unwrap_or((0, "unknown".into()));
        Some(Error::ArchivedRaw {
            key: key.to_string(),
            from: round.from,
            to: round.to,
            failures,
            last,
        })
    }
}

/// What [`Error::ConsolidationFailed`] says: where the cursor is, whether
/// the run counted and how far the raw archive is.
fn consolidation_failed(e: &Error) -> String {
    let Error::ConsolidationFailed {
        key,
        from,
        to,
        failures,
        limit,
        spacing_secs,
        not_counted,
        saved_from,
        source,
    } = e
    else {
        return String::new();
    };
    let saved = match saved_from {
        Some(s) => format!(" (this run's earlier rounds saved messages {s}..{from})"),
        None => String::new(),
    };
    let head = format!(
        "consolidation of session {key:?} (messages {from}..{to}) failed: {source}; the cursor stays at {from}{saved}."
    );
    let spacing = if *spacing_secs > 0 {
        format!(", at least {spacing_secs} s apart,")
    } else {
        String::new()
    };
    match not_counted {
        None => format!(
            "{head} This is failed run {failures} of {limit}: run it again when the model answers \
             (at {limit} failed runs{spacing} the messages are archived raw into memory/HISTORY.md)"
        ),
        Some(ago) => format!(
            "{head} Not counted as another failed run: the last counted one was {ago} s ago, and failed runs \
             count at most once every {spacing_secs} s (`[engine] consolidation_failure_spacing_secs`), so quick \
             retries during one outage do not archive the messages raw; {failures} of {limit} counted so far. \
             Run it again when the model answers"
        ),
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
