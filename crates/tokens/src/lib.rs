//! Token counting: exact counts with tiktoken encodings (`cl100k_base`,
//! `o200k_base`, chosen per model, message overhead included) and a cheap
//! chars/4 estimate for hot paths, both behind [`mnemo_core::TokenCounter`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::sync::Arc;

use mnemo_core::{Message, TokenCounter};
use tiktoken_rs::CoreBPE;

mod memo;
pub use memo::MemoCounter;

/// Tokens added per message for role and framing (OpenAI's chat format).
pub const MESSAGE_OVERHEAD: usize = 4;

/// Which tiktoken encoding a counter uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// GPT-3.5 / GPT-4 era, also the default for unknown models.
    Cl100kBase,
    /// GPT-4o, o1 and later.
    O200kBase,
}

impl Encoding {
    /// The encoding a model name uses: `o200k_base` for GPT-4o, GPT-4.1,
    /// GPT-5 and the o-series, `cl100k_base` otherwise (including non-OpenAI
    /// models, for which it is a close stand-in).
    pub fn for_model(model: &str) -> Encoding {
        let m = model.to_ascii_lowercase();
        let m = m.rsplit('/').next().unwrap_or(&m);
        let o200k = m.starts_with("gpt-4o")
            || m.starts_with("gpt-4.1")
            || m.starts_with("gpt-4.5")
            || m.starts_with("gpt-5")
            || m.starts_with("chatgpt-4o")
            || m.starts_with("o1")
            || m.starts_with("o3")
            || m.starts_with("o4");
        if o200k {
            Encoding::O200kBase
        } else {
            Encoding::Cl100kBase
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        // Building a BPE takes ~0.2 s: tiktoken-rs keeps one per encoding.
        match self {
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        }
    }
}

/// Exact counts with a tiktoken encoding.
#[derive(Debug, Clone, Copy)]
pub struct TiktokenCounter {
    encoding: Encoding,
}

impl TiktokenCounter {
    /// A counter with the given encoding.
    pub fn new(encoding: Encoding) -> Self {
        TiktokenCounter { encoding }
    }

    /// A counter with the encoding of `model`.
    pub fn for_model(model: &str) -> Self {
        Self::new(Encoding::for_model(model))
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenCounter for TiktokenCounter {
    fn count_text(&self, text: &str) -> usize {
        self.encoding.bpe().encode_with_special_tokens(text).len()
    }

    fn count_message(&self, m: &Message) -> usize {
        MESSAGE_OVERHEAD
            + message_parts(m)
                .iter()
                .map(|p| self.count_text(p))
                .sum::<usize>()
    }

    fn is_exact(&self) -> bool {
        true
    }
}

/// A chars/4 estimate: fast, never exact, and reported as such.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimateCounter;

impl TokenCounter for EstimateCounter {
    fn count_text(&self, text: &str) -> usize {
        estimate(text)
    }

    fn count_message(&self, m: &Message) -> usize {
        MESSAGE_OVERHEAD + message_parts(m).iter().map(|p| estimate(p)).sum::<usize>()
    }

    fn is_exact(&self) -> bool {
        false
    }
}

/// chars/4, rounded up: the estimate for hot paths.
pub fn estimate(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

/// An estimate that reads the script: narrow characters (Latin, digits,
/// punctuation) at four per token, CJK and other wide characters at one
/// per token, as BPE tokenizers split them. Where [`estimate`] would count
/// a Chinese passage at a quarter of its cost, this keeps a token budget
/// honest in every language.
pub fn estimate_by_script(text: &str) -> usize {
    let mut narrow = 0usize;
    let mut wide = 0usize;
    for c in text.chars() {
        if is_wide(c) {
            wide += 1;
        } else {
            narrow += 1;
        }
    }
    wide + narrow.div_ceil(4)
}

/// East Asian wide characters: Hangul, CJK symbols and ideographs, kana,
/// Yi, compatibility and full-width forms.
fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF |
        0x4E00..=0x9FFF | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF |
        0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x20000..=0x3FFFD)
}

/// The counter for a model: exact tiktoken (memoised per message) unless
/// `exact` is false.
pub fn counter_for(model: &str, exact: bool) -> Arc<dyn TokenCounter> {
    if exact {
        Arc::new(MemoCounter::new(Arc::new(TiktokenCounter::for_model(
            model,
        ))))
    } else {
        Arc::new(EstimateCounter)
    }
}

/// The texts of a message that a model is charged for: content, tool calls
/// (name and arguments), tool call id and name.
fn message_parts(m: &Message) -> Vec<String> {
    let mut parts = vec![m.text()];
    for c in m.tool_calls.iter().flatten() {
        parts.push(c.function.name.clone());
        parts.push(c.function.arguments_string());
    }
    if let Some(id) = &m.tool_call_id {
        parts.push(id.clone());
    }
    if let Some(n) = &m.name {
        parts.push(n.clone());
    }
    if let Some(r) = m
        .extra
        .get("reasoning_content")
        .and_then(serde_json::Value::as_str)
    {
        parts.push(r.to_string());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        let c = TiktokenCounter::new(Encoding::Cl100kBase);
        assert_eq!(c.count_text("hello world"), 2);
        assert_eq!(c.count_message(&Message::user("hello world")), 6);
        let o = TiktokenCounter::for_model("gpt-4o-mini");
        assert_eq!(o.encoding(), Encoding::O200kBase);
        assert_eq!(
            TiktokenCounter::for_model("claude-sonnet-4").encoding(),
            Encoding::Cl100kBase
        );
        assert!(o.count_text("你好，世界") > 0);
    }

    #[test]
    fn estimate_is_labelled() {
        assert_eq!(estimate("abcdefgh"), 2);
        assert_eq!(estimate("abcdefghi"), 3);
        assert!(!EstimateCounter.is_exact());
        assert!(TiktokenCounter::new(Encoding::O200kBase).is_exact());
    }
}
