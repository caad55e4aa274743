//! Ranking metrics (any@k, all@k, recall@k, MRR, NDCG@k, evidence recall
//! within a token budget) and their averaging, as the data README defines
//! them.
//!
//! A ranking is a list of unit ids, best first. Duplicates in a ranking count
//! at their first position only, and duplicate evidence ids count once, so
//! every score lies in [0, 1].

use std::collections::HashSet;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Cut-offs reported for any@k, all@k and recall@k.
pub const DEFAULT_KS: [usize; 6] = [1, 3, 5, 10, 25, 50];

/// Cut-off of the reported NDCG.
pub const NDCG_K: usize = 10;

/// Token budgets reported for evidence recall within retrieved tokens.
pub const DEFAULT_TOKEN_BUDGETS: [usize; 4] = [500, 1000, 2000, 4000];

/// One search hit reduced to what scoring needs: the units (sessions or
/// turns) it covers, in their order inside the hit, and its size in tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedHit {
    /// Unit ids the hit's text contains.
    pub units: Vec<String>,
    /// Size of the hit's text in (estimated) tokens.
    pub tokens: usize,
}

/// The unit ranking of a hit ranking: units in the order they first appear.
/// Units of one hit keep their order inside the hit (conversation order), so
/// ties are broken deterministically.
pub fn unit_ranking(hits: &[RankedHit]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for h in hits {
        for u in &h.units {
            if seen.insert(u.as_str()) {
                out.push(u.clone());
            }
        }
    }
    out
}

fn dedup(items: &[String]) -> Vec<&str> {
    let mut seen = HashSet::new();
    items
        .iter()
        .map(String::as_str)
        .filter(|u| seen.insert(*u))
        .collect()
}

/// Number of distinct evidence units among the first `k` distinct units.
fn hits_in_top(ranking: &[&str], evidence: &HashSet<&str>, k: usize) -> usize {
    ranking
        .iter()
        .take(k)
        .filter(|u| evidence.contains(*u))
        .count()
}

/// 1 if at least one evidence unit is in the top `k`, else 0.
pub fn any_at_k(ranking: &[String], evidence: &[String], k: usize) -> f64 {
    let r = dedup(ranking);
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if hits_in_top(&r, &e, k) > 0 {
        1.0
    } else {
        0.0
    }
}

/// 1 if every evidence unit is in the top `k`, else 0 (0 for no evidence).
pub fn all_at_k(ranking: &[String], evidence: &[String], k: usize) -> f64 {
    let r = dedup(ranking);
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if !e.is_empty() && hits_in_top(&r, &e, k) == e.len() {
        1.0
    } else {
        0.0
    }
}

/// Fraction of the evidence units in the top `k` (0 for no evidence).
pub fn recall_at_k(ranking: &[String], evidence: &[String], k: usize) -> f64 {
    let r = dedup(ranking);
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if e.is_empty() {
        return 0.0;
    }
    hits_in_top(&r, &e, k) as f64 / e.len() as f64
}

/// 1 / rank of the first evidence unit; 0 when none is ranked.
pub fn reciprocal_rank(ranking: &[String], evidence: &[String]) -> f64 {
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    dedup(ranking)
        .iter()
        .position(|u| e.contains(u))
        .map(|p| 1.0 / (p + 1) as f64)
        .unwrap_or(0.0)
}

/// NDCG@k with binary relevance; the ideal ranking puts all evidence first.
pub fn ndcg_at_k(ranking: &[String], evidence: &[String], k: usize) -> f64 {
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if e.is_empty() || k == 0 {
        return 0.0;
    }
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = dedup(ranking)
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, u)| e.contains(*u))
        .map(|(i, _)| gain(i))
        .sum();
    let idcg: f64 = (0..e.len().min(k)).map(gain).sum();
    dcg / idcg
}

/// Fraction of the evidence units contained in the hits read in order while
/// their summed size stays within `budget` tokens. A hit that would cross
/// the budget is not read (an agent fills its context with whole hits), and
/// reading stops there.
pub fn budget_recall(hits: &[RankedHit], evidence: &[String], budget: usize) -> f64 {
    let e: HashSet<&str> = evidence.iter().map(String::as_str).collect();
    if e.is_empty() {
        return 0.0;
    }
    let mut used = 0usize;
    let mut found: HashSet<&str> = HashSet::new();
    for h in hits {
        used += h.tokens;
        if used > budget {
            break;
        }
        found.extend(h.units.iter().map(String::as_str).filter(|u| e.contains(u)));
    }
    found.len() as f64 / e.len() as f64
}

/// Estimated token count of a text, by script
/// ([`mnemo_tokens::estimate_by_script`]): an estimate, not a tokenizer
/// count, that keeps budgets comparable across languages, where a plain
/// chars/4 would undercount Chinese about fourfold.
pub fn estimate_tokens(text: &str) -> usize {
    mnemo_tokens::estimate_by_script(text)
}

/// Which metrics are computed, in report order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricSpec {
    /// Cut-offs for any@k, all@k and recall@k.
    pub ks: Vec<usize>,
    /// Cut-off for NDCG.
    pub ndcg_k: usize,
    /// Token budgets for evidence recall within retrieved tokens.
    pub token_budgets: Vec<usize>,
}

impl Default for MetricSpec {
    fn default() -> Self {
        MetricSpec {
            ks: DEFAULT_KS.to_vec(),
            ndcg_k: NDCG_K,
            token_budgets: DEFAULT_TOKEN_BUDGETS.to_vec(),
        }
    }
}

impl MetricSpec {
    /// Metric names in report order: `any@k`…, `all@k`…, `recall@k`…, `mrr`,
    /// `ndcg@k`, `recall@<budget>tok`….
    pub fn names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for family in ["any", "all", "recall"] {
            out.extend(self.ks.iter().map(|k| format!("{family}@{k}")));
        }
        out.push("mrr".to_string());
        out.push(format!("ndcg@{}", self.ndcg_k));
        out.extend(self.token_budgets.iter().map(|b| format!("recall@{b}tok")));
        out
    }

    /// [`MetricSpec::score`] with more named values after the ranking's
    /// (evidence recall of the hits as a budget cut them, of what automatic
    /// recall put in the prompt, the tokens it took): the caller names them
    /// the same way for every question.
    pub fn score_with(
        &self,
        hits: &[RankedHit],
        evidence: &[String],
        extra: Vec<(String, f64)>,
    ) -> Option<Metrics> {
        let mut m = self.score(hits, evidence)?;
        for (name, value) in extra {
            m.names.push(name);
            m.values.push(value);
        }
        Some(m)
    }

    /// Scores one question, in the order of [`MetricSpec::names`]. `None`
    /// when the question has no evidence (such questions are skipped).
    pub fn score(&self, hits: &[RankedHit], evidence: &[String]) -> Option<Metrics> {
        if evidence.is_empty() {
            return None;
        }
        let ranking = unit_ranking(hits);
        let mut values = Vec::new();
        values.extend(self.ks.iter().map(|&k| any_at_k(&ranking, evidence, k)));
        values.extend(self.ks.iter().map(|&k| all_at_k(&ranking, evidence, k)));
        values.extend(self.ks.iter().map(|&k| recall_at_k(&ranking, evidence, k)));
        values.push(reciprocal_rank(&ranking, evidence));
        values.push(ndcg_at_k(&ranking, evidence, self.ndcg_k));
        values.extend(
            self.token_budgets
                .iter()
                .map(|&b| budget_recall(hits, evidence, b)),
        );
        Some(Metrics {
            names: self.names(),
            values,
        })
    }
}

/// Named metric values in report order; serialises as a JSON object.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metrics {
    names: Vec<String>,
    values: Vec<f64>,
}

impl Metrics {
    /// The value of a metric by name (`any@5`, `mrr`, …).
    pub fn get(&self, name: &str) -> Option<f64> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| self.values[i])
    }

    /// `(name, value)` pairs in report order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.names
            .iter()
            .map(String::as_str)
            .zip(self.values.iter().copied())
    }
}

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.names.len()))?;
        for (n, v) in self.iter() {
            m.serialize_entry(n, &v)?;
        }
        m.end()
    }
}

/// Running mean of [`Metrics`] over questions.
#[derive(Debug, Clone, Default)]
pub struct MetricMean {
    names: Vec<String>,
    sums: Vec<f64>,
    count: usize,
}

impl MetricMean {
    /// Adds one question's scores.
    pub fn add(&mut self, m: &Metrics) {
        if self.count == 0 {
            self.names = m.names.clone();
            self.sums = vec![0.0; m.values.len()];
        }
        for (s, v) in self.sums.iter_mut().zip(&m.values) {
            *s += v;
        }
        self.count += 1;
    }

    /// Number of questions added.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The means (empty when nothing was added).
    pub fn mean(&self) -> Metrics {
        let n = self.count.max(1) as f64;
        Metrics {
            names: self.names.clone(),
            values: self.sums.iter().map(|s| s / n).collect(),
        }
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
