//! A memo in front of an exact counter: the engine measures the same
//! history several times per turn (before and after each compaction level),
//! and a session log is append-only, so almost every message it counts has
//! been counted before. Keyed by a hash of the message's serialised form, so
//! a snipped or cleared message (new content) is counted afresh.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use mnemo_core::{Message, TokenCounter};

/// Entries kept before the memo starts over (about 16 bytes each).
const MAX_ENTRIES: usize = 1 << 20;

/// Counts through `inner`, remembering message counts.
pub struct MemoCounter {
    inner: Arc<dyn TokenCounter>,
    memo: Mutex<HashMap<u64, usize>>,
}

impl MemoCounter {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn TokenCounter>) -> Self {
        MemoCounter {
            inner,
            memo: Mutex::new(HashMap::new()),
        }
    }

    fn key(message: &Message) -> Option<u64> {
        let bytes = serde_json::to_vec(message).ok()?;
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        Some(h.finish())
    }
}

impl TokenCounter for MemoCounter {
    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        let Some(key) = Self::key(message) else {
            return self.inner.count_message(message);
        };
        if let Some(n) = self.memo.lock().ok().and_then(|m| m.get(&key).copied()) {
            return n;
        }
        let n = self.inner.count_message(message);
        if let Ok(mut m) = self.memo.lock() {
            if m.len() >= MAX_ENTRIES {
                m.clear();
            }
            m.insert(key, n);
        }
        n
    }

    fn is_exact(&self) -> bool {
        self.inner.is_exact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TiktokenCounter;

    #[test]
    fn memoised_counts_equal_direct_counts_and_follow_content() {
        let exact: Arc<dyn TokenCounter> = Arc::new(TiktokenCounter::for_model("gpt-4o"));
        let memo = MemoCounter::new(exact.clone());
        let a = Message::user("the quick brown fox jumps over the lazy dog");
        let b = Message::user("a different, longer message with more words in it than the first");
        for m in [&a, &b, &a, &b] {
            assert_eq!(memo.count_message(m), exact.count_message(m));
        }
        assert_eq!(memo.memo.lock().unwrap().len(), 2);
        assert_ne!(memo.count_message(&a), memo.count_message(&b));
        assert!(memo.is_exact());
    }
}
