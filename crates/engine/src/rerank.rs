//! Re-ranking search hits with the side model: the model reads the index's
//! best passages and says which help answer the query, best first. What a
//! keyword and vector index cannot see (a passage that answers a question it
//! shares no words with, the pieces of a multi-part answer) is exactly what
//! a language model reads well. The index's order stays the fallback: hits
//! the model leaves out follow the ones it picked, and an error or timeout
//! keeps the index's order with the reason.

use std::collections::HashSet;
use std::time::Duration;

use mnemo_core::Message;
use mnemo_llm::{ChatModel, ChatRequest};
use serde::Serialize;
use serde_json::Value;

use crate::engine::Engine;
use crate::pipeline::clip;
use crate::templates;

/// One hit as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    /// Where it was found (a citation such as `memory/notes.md#L3-L9`).
    pub label: String,
    /// Its text.
    pub text: String,
}

/// What the re-rank did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RerankOutcome {
    /// Indices into the passages: the model's picks in its order, then the
    /// rest in their original order. Always a permutation of all passages.
    pub order: Vec<usize>,
    /// Passages the model judged helpful (the first `picked` of `order`).
    pub picked: usize,
    /// The model ran out of time (the original order is kept).
    pub timed_out: bool,
    /// Why it failed, when it did (the original order is kept).
    pub error: Option<String>,
}

/// The 1-based passage numbers of a `{"ranking": [...]}` answer (the JSON
/// may be wrapped in prose or a code fence), as 0-based indices below `n`,
/// first occurrence only. Numbers given as strings ("3", "[3]") count too.
pub fn parse_ranking(text: &str, n: usize) -> Vec<usize> {
    let (Some(a), Some(b)) = (text.find('{'), text.rfind('}')) else {
        return Vec::new();
    };
    if b < a {
        return Vec::new();
    }
    let Some(items) = serde_json::from_str::<Value>(&text[a..=b])
        .ok()
        .and_then(|v| v.get("ranking").and_then(Value::as_array).cloned())
    else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    items
        .iter()
        .filter_map(|v| match v {
            Value::Number(x) => x.as_u64(),
            Value::String(s) => s.trim().trim_matches(['[', ']']).trim().parse().ok(),
            _ => None,
        })
        .filter_map(|k| usize::try_from(k).ok())
        .filter(|&k| k >= 1 && k <= n)
        .map(|k| k - 1)
        .filter(|&i| seen.insert(i))
        .collect()
}

/// The request: numbered passages, each clipped to `passage_chars`.
pub fn rerank_request(
    query: &str,
    passages: &[Passage],
    passage_chars: usize,
    max_tokens: u32,
) -> ChatRequest {
    let listed = passages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "[{}] {}\n{}",
                i + 1,
                p.label,
                clip(p.text.trim(), passage_chars)
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let system = templates::render(
        templates::RERANK_PROMPT,
        &[("max", &passages.len().to_string())],
    );
    let user = templates::render(
        templates::RERANK_USER,
        &[("query", query.trim()), ("passages", &listed)],
    );
    ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
        .with_system(system.trim_end().to_string())
        .with_max_tokens(max_tokens)
}

/// `picked` first, then every other index below `n` in order.
fn complete_order(picked: &[usize], n: usize) -> Vec<usize> {
    let chosen: HashSet<usize> = picked.iter().copied().collect();
    picked
        .iter()
        .copied()
        .chain((0..n).filter(|i| !chosen.contains(i)))
        .collect()
}

/// Asks `model` to rank `passages` for `query`. Never fails: on a timeout or
/// an error the order is the original one and the outcome says why.
pub async fn rerank(
    model: &dyn ChatModel,
    query: &str,
    passages: &[Passage],
    passage_chars: usize,
    max_tokens: u32,
    timeout: Duration,
) -> RerankOutcome {
    let n = passages.len();
    let mut out = RerankOutcome {
        order: (0..n).collect(),
        ..Default::default()
    };
    if n < 2 {
        return out;
    }
    let req = rerank_request(query, passages, passage_chars, max_tokens);
    match tokio::time::timeout(timeout, model.complete(req)).await {
        Err(_) => out.timed_out = true,
        Ok(Err(e)) => out.error = Some(e.to_string()),
        Ok(Ok(resp)) => {
            let text = resp.text();
            let picked = parse_ranking(&text, n);
            if picked.is_empty() && !text.contains("\"ranking\"") {
                out.error = Some(format!(
                    "the model's answer held no {{\"ranking\": [...]}}: {}",
                    clip(text.trim(), 200)
                ));
            } else {
                out.order = complete_order(&picked, n);
                out.picked = picked.len();
            }
        }
    }
    out
}

impl Engine {
    /// Re-ranks `passages` for `query` with the side model and the
    /// `[engine] rerank_*` settings.
    pub async fn rerank(&self, query: &str, passages: &[Passage]) -> RerankOutcome {
        let s = &self.settings;
        rerank(
            self.side_model.as_ref(),
            query,
            passages,
            s.rerank_passage_chars,
            s.rerank_max_tokens,
            Duration::from_millis(s.rerank_timeout_ms),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rankings_are_read_leniently_and_kept_in_range() {
        assert_eq!(parse_ranking(r#"{"ranking": [3, 1, 2]}"#, 3), [2, 0, 1]);
        assert_eq!(
            parse_ranking(
                "Here:\n```json\n{\"ranking\": [\"2\", \"[4]\", 2, 9, 0, -1, 1.5]}\n```",
                4
            ),
            [1, 3]
        );
        assert!(parse_ranking(r#"{"ranking": []}"#, 3).is_empty());
        assert!(parse_ranking("no json", 3).is_empty());
        assert!(parse_ranking("} {", 3).is_empty());
        assert!(parse_ranking(r#"{"selected": [1]}"#, 3).is_empty());
    }

    #[test]
    fn the_order_keeps_every_passage() {
        assert_eq!(complete_order(&[3, 1], 5), [3, 1, 0, 2, 4]);
        assert_eq!(complete_order(&[], 3), [0, 1, 2]);
    }
}
