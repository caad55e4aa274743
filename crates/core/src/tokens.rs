//! The token-counting seam.

use crate::message::Message;

/// A token count, saying whether it is exact or an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCount {
    /// Number of tokens.
    pub tokens: usize,
    /// True when produced by the model's real tokenizer.
    pub exact: bool,
}

/// Counts tokens of text and of chat messages.
///
/// Implementations: exact tiktoken encodings and a chars/4 estimate in
/// `mnemo-tokens`; a provider's own counter can be plugged in later.
/// `mnemo-test-support`'s `token_counter_suite!` checks every one (an empty
/// text is 0 tokens, a message costs more than its text, tool calls count,
/// lists add up, an edited message is counted afresh).
pub trait TokenCounter: Send + Sync {
    /// Tokens in plain text.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens of one message as sent to a chat model, including the
    /// per-message overhead.
    fn count_message(&self, message: &Message) -> usize;

    /// Tokens of a list of messages.
    fn count_messages(&self, messages: &[Message]) -> usize {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    /// True when counts are exact for the configured model.
    fn is_exact(&self) -> bool;
}
