//! Re-ranking search hits with the side model: the model reads the index's
//! best passages and judges which help answer the query. What a keyword
//! and vector index cannot see (a passage that answers a question it
//! shares no words with, the pieces of a multi-part answer) is exactly
//! what a language model reads well.
//!
//! A model that exposes its next-token probabilities (the local model)
//! judges each passage on its own, yes or no, and the probability of "yes"
//! is weighed against the index's rank ([`fuse`]): the model's reading
//! moves a passage, it does not replace the index's order. Each passage is
//! cut to its lines that share words with the query ([`cut_passage`]), the
//! judgements are cached ([`JudgementCache`]), and the passages are judged
//! in the index's order until the time budget runs out, after which the
//! rest keep the index's order. A model that only writes text (a remote
//! API) ranks the passages in one written answer instead, fused the same
//! way. An error keeps the index's order with the reason.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mnemo_core::Message;
use mnemo_llm::{ChatModel, ChatRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::Engine;
use crate::pipeline::clip;
use crate::templates;

/// One hit as the model sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Passage {
    /// Where it was found (a citation such as `memory/notes.md#L3-L9`),
    /// with its day when it has one.
    pub label: String,
    /// The day it is about or was said on, when known: it helps the model
    /// with "when" questions.
    pub day: Option<String>,
    /// Its text.
    pub text: String,
}

/// How a re-rank runs: `[engine] rerank_*`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RerankOptions {
    /// Characters of each passage shown (its lines nearest the query).
    pub passage_chars: usize,
    /// Output tokens of a written ranking (models without probabilities).
    pub max_tokens: u32,
    /// Time for the whole re-rank; passages not judged by then keep the
    /// index's order.
    pub budget: Duration,
    /// Weight of the model's judgement against the index's rank (0 to 1).
    pub weight: f32,
}

/// What the re-rank did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RerankOutcome {
    /// Indices into the passages, best first. Always a permutation of all
    /// passages.
    pub order: Vec<usize>,
    /// Passages the model judged helpful.
    pub picked: usize,
    /// Passages the model read (from the cache or anew); the ones after
    /// them kept the index's order.
    pub judged: usize,
    /// Judgements taken from the cache.
    pub cached: usize,
    /// The model's probability that each passage helps, where it judged.
    pub scores: Vec<Option<f32>>,
    /// The time budget ran out before every passage was judged.
    pub timed_out: bool,
    /// Why it failed, when it did (the index's order is kept).
    pub error: Option<String>,
}

/// Judgements already made: (model, query, passage as shown) to the
/// probability that the passage helps. A repeated search, or a question
/// asked again in another turn, costs nothing the second time.
#[derive(Debug, Default)]
pub struct JudgementCache {
    seen: Mutex<HashMap<u64, f32>>,
}

/// The file [`JudgementCache::save`] writes.
#[derive(Serialize, Deserialize)]
struct SavedJudgements {
    version: u32,
    judgements: HashMap<String, f32>,
}

/// Judgements a cache holds before it starts over.
const CACHE_CAP: usize = 20_000;

impl JudgementCache {
    fn key(model: &str, query: &str, day: Option<&str>, shown: &str) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (model, query.trim(), day, shown).hash(&mut h);
        h.finish()
    }

    fn get(&self, key: u64) -> Option<f32> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied()
    }

    fn put(&self, key: u64, p: f32) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= CACHE_CAP {
            seen.clear();
        }
        seen.insert(key, p);
    }

    /// A cache kept in `path` across runs (a benchmark asks the same
    /// questions again): what the file holds, or an empty cache when it is
    /// missing or unreadable (it is only a cache).
    pub fn load(path: &Path) -> Self {
        let seen = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<SavedJudgements>(&b).ok())
            .filter(|s| s.version == 1)
            .map(|s| {
                s.judgements
                    .into_iter()
                    .filter_map(|(k, p)| Some((u64::from_str_radix(&k, 16).ok()?, p)))
                    .take(CACHE_CAP)
                    .collect()
            })
            .unwrap_or_default();
        JudgementCache {
            seen: Mutex::new(seen),
        }
    }

    /// Writes the judgements to `path` (atomically), for [`load`](Self::load).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let saved = SavedJudgements {
            version: 1,
            judgements: self
                .seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|(k, p)| (format!("{k:016x}"), *p))
                .collect(),
        };
        let json = serde_json::to_vec(&saved).map_err(std::io::Error::other)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        mnemo_store::fsutil::atomic_write(path, &json)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// Judgements held.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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

/// The pieces of a passage a reader can take or leave: its lines, and the
/// sentences of a long line.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.chars().count() <= 160 {
            out.push(line);
            continue;
        }
        let mut start = 0;
        let mut chars = line.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let ends = matches!(c, '。' | '！' | '？')
                || (matches!(c, '.' | '!' | '?')
                    && chars.peek().is_some_and(|(_, n)| n.is_whitespace()));
            if ends {
                let end = i + c.len_utf8();
                let piece = line[start..end].trim();
                if !piece.is_empty() {
                    out.push(piece);
                }
                start = end;
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest);
        }
    }
    out
}

/// `text` cut to at most `max_chars`: when it is longer, its pieces (lines,
/// sentences) that share the most content words with `query`, in their
/// own order, joined by " … " where something was left out. The model
/// reads fewer tokens and the part that matters is not clipped away.
pub fn cut_passage(query: &str, text: &str, max_chars: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let wanted: HashSet<String> = crate::adjudicate::content(query).into_iter().collect();
    let parts = pieces(text);
    let mut ranked: Vec<(usize, usize)> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let have: HashSet<String> = crate::adjudicate::content(p).into_iter().collect();
            (i, have.intersection(&wanted).count())
        })
        .collect();
    // Most shared words first; among equals, the earlier piece.
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut keep: Vec<usize> = Vec::new();
    let mut used = 0;
    for (i, _) in ranked {
        let len = parts[i].chars().count() + 3;
        if used + len > max_chars && !keep.is_empty() {
            continue;
        }
        keep.push(i);
        used += len;
    }
    keep.sort_unstable();
    let mut out = String::new();
    let mut last: Option<usize> = None;
    for i in keep {
        match last {
            None if i > 0 => out.push_str("… "),
            Some(l) if i > l + 1 => out.push_str(" … "),
            Some(_) => out.push('\n'),
            None => {}
        }
        out.push_str(parts[i]);
        last = Some(i);
    }
    if last.is_some_and(|l| l + 1 < parts.len()) {
        out.push_str(" …");
    }
    clip(&out, max_chars)
}

/// The written-ranking request: numbered passages, each cut to
/// `passage_chars`.
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
                cut_passage(query, &p.text, passage_chars)
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
        // The passages are in the user's turn.
        .with_fixed_system()
}

/// The yes/no judgement of one passage (already cut). The question comes
/// before the passage, so that every passage's prompt shares the same
/// opening and a model that keeps its cache reads the question once.
pub fn judge_request(query: &str, day: Option<&str>, shown: &str) -> ChatRequest {
    let day = day.map(|d| format!(" ({d})")).unwrap_or_default();
    let user = templates::render(
        templates::JUDGE_USER,
        &[("query", query.trim()), ("day", &day), ("passage", shown)],
    );
    ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
        .with_system(templates::JUDGE_PROMPT.trim_end().to_string())
        .with_max_tokens(1)
        // The passage is in the user's turn.
        .with_fixed_system()
}

/// The order of `n` passages from the model's judgements: each judged
/// passage scores `weight * p + (1 - weight) * prior`, where the prior
/// falls from 1 for the index's first hit to 1/m for its m-th judged one;
/// judged passages are sorted by that score (the index's order breaks
/// ties) and the ones not judged follow in the index's order.
pub fn fuse(scores: &[Option<f32>], weight: f32) -> Vec<usize> {
    let n = scores.len();
    let judged = scores.iter().take_while(|s| s.is_some()).count();
    let m = judged.max(1) as f32;
    let mut head: Vec<(usize, f32)> = (0..judged)
        .map(|i| {
            let p = scores[i].unwrap_or(0.0);
            let prior = 1.0 - i as f32 / m;
            (i, weight * p + (1.0 - weight) * prior)
        })
        .collect();
    head.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    head.into_iter().map(|(i, _)| i).chain(judged..n).collect()
}

/// Asks `model` to judge `passages` for `query`. Never fails: on an error
/// the order is the original one and the outcome says why; when the budget
/// runs out the passages judged so far are re-ordered and the rest keep
/// their place.
pub async fn rerank(
    model: &dyn ChatModel,
    query: &str,
    passages: &[Passage],
    opts: &RerankOptions,
    cache: &JudgementCache,
) -> RerankOutcome {
    let n = passages.len();
    let mut out = RerankOutcome {
        order: (0..n).collect(),
        scores: vec![None; n],
        ..Default::default()
    };
    if n < 2 {
        return out;
    }
    let deadline = tokio::time::Instant::from_std(Instant::now() + opts.budget);
    let name = model.info().model.clone();
    for (i, p) in passages.iter().enumerate() {
        let shown = cut_passage(query, &p.text, opts.passage_chars);
        let key = JudgementCache::key(&name, query, p.day.as_deref(), &shown);
        if let Some(score) = cache.get(key) {
            out.scores[i] = Some(score);
            out.cached += 1;
            continue;
        }
        let req = judge_request(query, p.day.as_deref(), &shown);
        let options = vec!["yes".to_string(), "no".to_string()];
        match tokio::time::timeout_at(deadline, model.option_logprobs(req, options)).await {
            Err(_) => {
                out.timed_out = true;
                break;
            }
            Ok(Err(e)) => {
                out.error = Some(e.to_string());
                out.scores = vec![None; n];
                return out;
            }
            Ok(Ok(None)) => {
                return written_ranking(model, query, passages, opts, deadline, out).await
            }
            Ok(Ok(Some(lp))) => {
                let (yes, no) = (lp.first().copied(), lp.get(1).copied());
                let (Some(yes), Some(no)) = (yes, no) else {
                    out.error = Some("the model judged without a yes and a no".into());
                    return out;
                };
                // P(yes) against P(no) alone: the rest of the vocabulary
                // says nothing about the passage.
                let score = if yes.is_finite() || no.is_finite() {
                    1.0 / (1.0 + (no - yes).exp())
                } else {
                    0.5
                };
                cache.put(key, score);
                out.scores[i] = Some(score);
            }
        }
    }
    out.judged = out.scores.iter().take_while(|s| s.is_some()).count();
    out.picked = out.scores.iter().flatten().filter(|&&p| p >= 0.5).count();
    out.order = fuse(&out.scores, opts.weight);
    out
}

/// The re-rank of a model that only writes: one request listing every
/// passage, its picks scored from 1 (its first) down to 0.5 and the
/// passages it left out 0, fused with the index's order as judgements are.
async fn written_ranking(
    model: &dyn ChatModel,
    query: &str,
    passages: &[Passage],
    opts: &RerankOptions,
    deadline: tokio::time::Instant,
    mut out: RerankOutcome,
) -> RerankOutcome {
    let n = passages.len();
    let req = rerank_request(query, passages, opts.passage_chars, opts.max_tokens);
    match tokio::time::timeout_at(deadline, model.complete(req)).await {
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
                return out;
            }
            let mut scores = vec![Some(0.0); n];
            for (rank, &i) in picked.iter().enumerate() {
                scores[i] = Some(1.0 - 0.5 * rank as f32 / picked.len() as f32);
            }
            out.order = fuse(&scores, opts.weight);
            out.picked = picked.len();
            out.judged = n;
            out.scores = scores;
        }
    }
    out
}

impl Engine {
    /// Re-ranks `passages` for `query` with the side model and the
    /// `[engine] rerank_*` settings.
    pub async fn rerank(&self, query: &str, passages: &[Passage]) -> RerankOutcome {
        rerank(
            self.side_model.as_ref(),
            query,
            passages,
            &self.settings.rerank_options(),
            &self.judgements,
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
    fn judgements_move_passages_without_erasing_the_index_order() {
        // A sure "yes" far down beats a doubtful first hit...
        let order = fuse(&[Some(0.1), Some(0.2), Some(0.95), Some(0.1)], 0.7);
        assert_eq!(order[0], 2);
        // ...while equal judgements keep the index's order, and passages
        // not judged (the budget ran out) stay where they were.
        assert_eq!(fuse(&[Some(0.5), Some(0.5), None, None], 0.7), [0, 1, 2, 3]);
        assert_eq!(fuse(&[Some(0.0), Some(1.0), None], 0.7), [1, 0, 2]);
        assert_eq!(fuse(&[None, Some(1.0)], 0.7), [0, 1]);
        // Weight 0 is the index's order.
        assert_eq!(fuse(&[Some(0.0), Some(1.0), Some(1.0)], 0.0), [0, 1, 2]);
    }

    #[test]
    fn a_long_passage_is_cut_to_the_lines_the_query_needs() {
        let text = "Caroline: I went to the LGBTQ support group yesterday.\n\
                    Melanie: How did it go?\n\
                    Caroline: Great, everyone was kind.\n\
                    Melanie: I took my kids camping in the mountains last week.\n\
                    Caroline: That sounds lovely!";
        let cut = cut_passage("What did Melanie do with her kids?", text, 120);
        assert!(cut.contains("camping"), "{cut}");
        assert!(!cut.contains("support group"), "{cut}");
        assert!(cut.chars().count() <= 121, "{cut}");
        // A short passage is shown whole.
        assert_eq!(cut_passage("kids", "  short  ", 120), "short");
        // Sentences of one long line are pieces too.
        let line = format!(
            "{} The answer is pottery. {}",
            "Filler words here. ".repeat(8),
            "More filler. ".repeat(8)
        );
        let cut = cut_passage("What is the answer?", &line, 60);
        assert!(cut.contains("The answer is pottery."), "{cut}");
        // CJK sentences split on their own stops.
        let zh = format!(
            "{}我喜欢陶艺。{}",
            "今天天气很好。".repeat(20),
            "明天下雨。".repeat(20)
        );
        assert!(cut_passage("陶艺", &zh, 30).contains("陶艺"));
    }
}
