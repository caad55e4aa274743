//! Error reporting and exit codes at the binary's edge.

use mnemo_core::ErrorCode;

/// Prints `err` with its causes and returns the exit code for it.
pub fn report_error(err: &anyhow::Error) -> i32 {
    let code = classify(err);
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    code.map(ErrorCode::exit_code).unwrap_or(1)
}

fn classify(err: &anyhow::Error) -> Option<ErrorCode> {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<mnemo::Error>() {
            return Some(e.code());
        }
        if let Some(e) = cause.downcast_ref::<mnemo_import::Error>() {
            return Some(e.code());
        }
        if let Some(e) = cause.downcast_ref::<mnemo_engine::Error>() {
            return Some(e.code());
        }
        if let Some(e) = cause.downcast_ref::<mnemo_llm::LlmError>() {
            return Some(e.code());
        }
        if let Some(e) = cause.downcast_ref::<mnemo_index::IndexError>() {
            return Some(e.code());
        }
        if let Some(e) = cause.downcast_ref::<mnemo_store::Error>() {
            return Some(e.code());
        }
        if cause.downcast_ref::<mnemo_core::PathError>().is_some() {
            return Some(ErrorCode::Forbidden);
        }
        if cause.downcast_ref::<mnemo_core::ConfigError>().is_some() {
            return Some(ErrorCode::Config);
        }
        if cause.downcast_ref::<UsageError>().is_some() {
            return Some(ErrorCode::InvalidInput);
        }
    }
    None
}

/// A mistake in how a command was called.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
