//! Ranking: BM25 normalisation, vector similarity above the query's floor,
//! fusion (weighted sum or reciprocal rank fusion), document context, exact-identifier
//! protection, temporal decay, MMR, the minimum-score cut and the split of
//! transcript chunks into message hits. Pure functions over candidates.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use chrono::NaiveDate;

use crate::backend::ChunkRecord;
use crate::chunk::MessagePart;
use crate::settings::{Fusion, SearchOptions, VectorScale};
use crate::text;
use crate::when;

/// One candidate chunk with its raw signals.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    pub id: i64,
    /// Cosine similarity.
    pub vector: Option<f32>,
    /// Cosine above the query's floor (the cosine of its 50th best vector
    /// candidate, or its last), scaled to 0..=1.
    pub vector_rel: Option<f32>,
    /// 1-based rank on the vector side.
    pub vector_rank: Option<usize>,
    /// BM25 normalised to [0, 1] by the best hit of the query.
    pub text: Option<f32>,
    /// 1-based rank on the keyword side.
    pub text_rank: Option<usize>,
    /// Final score.
    pub score: f32,
    /// Contains one of the query's identifiers verbatim.
    pub exact: bool,
    /// The score's steps, for an explained hit.
    pub trace: crate::types::ScoreTrace,
}

impl Candidate {
    /// Vector similarity on the configured scale: what weighted fusion adds
    /// and what `min_score` is checked against.
    pub(crate) fn similarity(&self, scale: VectorScale) -> Option<f32> {
        match scale {
            VectorScale::Floor => self.vector_rel,
            VectorScale::Raw => self.vector,
        }
    }
}

/// Rank of the vector candidate whose cosine is the query's background
/// (`vector_scale = "floor"`): the fewest candidates any search takes.
const FLOOR_RANK: usize = 50;

/// Merges keyword hits `(id, -bm25)` and vector hits `(id, cosine)`.
///
/// FTS5's `bm25()` is negative (more negative is better); the caller passes
/// it negated, and it is divided by the best value of this query so the best
/// keyword hit scores 1. A side that did not return a chunk contributes 0.
pub(crate) fn merge(keyword: &[(i64, f64)], vector: &[(i64, f32)]) -> Vec<Candidate> {
    let mut by_id: HashMap<i64, Candidate> = HashMap::new();
    let best = keyword.iter().map(|k| k.1).fold(0.0f64, f64::max);
    for (rank, (id, raw)) in keyword.iter().enumerate() {
        let norm = if best > 0.0 {
            (raw.max(0.0) / best) as f32
        } else {
            1.0
        };
        let c = by_id.entry(*id).or_insert_with(|| blank(*id));
        c.text = Some(norm);
        c.text_rank = Some(rank + 1);
    }
    // The background: the cosine at a fixed rank (or the last one), so a
    // query's scores do not depend on how many results were asked for. With
    // fewer than two candidates there is no background to measure.
    let floor = if vector.len() >= 2 {
        vector[FLOOR_RANK.min(vector.len()) - 1].1.max(0.0)
    } else {
        0.0
    };
    for (rank, (id, cos)) in vector.iter().enumerate() {
        let c = by_id.entry(*id).or_insert_with(|| blank(*id));
        c.vector = Some(*cos);
        c.vector_rel = Some(if floor < 1.0 {
            ((cos - floor) / (1.0 - floor)).clamp(0.0, 1.0)
        } else {
            0.0
        });
        c.vector_rank = Some(rank + 1);
    }
    let mut out: Vec<Candidate> = by_id.into_values().collect();
    out.sort_by_key(|c| c.id);
    out
}

/// Adds `weight` times each phrase hit's BM25 to the chunk's keyword BM25
/// (a phrase hit holds both words, so it is a keyword hit too unless the
/// keyword list was cut short), best first again.
pub(crate) fn add_phrases(keyword: &mut Vec<(i64, f64)>, phrases: &[(i64, f64)], weight: f32) {
    let mut by_id: HashMap<i64, f64> = keyword.iter().copied().collect();
    for (id, raw) in phrases {
        *by_id.entry(*id).or_insert(0.0) += f64::from(weight) * raw.max(0.0);
    }
    *keyword = by_id.into_iter().collect();
    keyword.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// Adds one reading's keyword hits `(id, bm25)` to `acc` with `weight`.
/// Each reading's BM25 is divided by its own best first, so a reading with
/// many words does not outweigh one with few; a single reading of weight 1
/// keeps its ranking (the values are normalised again by [`merge`]).
pub(crate) fn blend_keyword(acc: &mut Vec<(i64, f64)>, hits: &[(i64, f64)], weight: f32) {
    if weight >= 1.0 && acc.is_empty() {
        acc.extend_from_slice(hits);
        return;
    }
    let best = hits.iter().map(|h| h.1).fold(0.0f64, f64::max);
    if best <= 0.0 {
        return;
    }
    let mut by_id: HashMap<i64, f64> = acc.iter().copied().collect();
    for (id, raw) in hits {
        *by_id.entry(*id).or_insert(0.0) += f64::from(weight) * raw.max(0.0) / best;
    }
    *acc = by_id.into_iter().collect();
    acc.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// Adds one reading's vector hits `(id, cosine)` to `acc` with `weight`.
/// A chunk that one reading did not return counts that reading's lowest
/// returned cosine: it was at best that close.
pub(crate) fn blend_vector(acc: &mut Vec<(i64, f32)>, hits: &[(i64, f32)], weight: f32) {
    if weight >= 1.0 && acc.is_empty() {
        acc.extend_from_slice(hits);
        return;
    }
    let Some(floor) = hits.last().map(|h| h.1) else {
        return;
    };
    let first = acc.is_empty();
    let acc_floor = acc.iter().map(|h| h.1).fold(f32::INFINITY, f32::min);
    let mut by_id: HashMap<i64, (f32, bool)> =
        acc.iter().map(|(id, c)| (*id, (*c, false))).collect();
    for (id, cos) in hits {
        let e = by_id
            .entry(*id)
            .or_insert((if first { 0.0 } else { acc_floor }, false));
        e.0 += weight * cos;
        e.1 = true;
    }
    for (_, (c, seen)) in by_id.iter_mut() {
        if !*seen {
            *c += weight * floor;
        }
    }
    *acc = by_id.into_iter().map(|(id, (c, _))| (id, c)).collect();
    acc.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// A candidate with no signal yet.
pub(crate) fn blank(id: i64) -> Candidate {
    Candidate {
        id,
        vector: None,
        vector_rel: None,
        vector_rank: None,
        text: None,
        text_rank: None,
        score: 0.0,
        exact: false,
        trace: crate::types::ScoreTrace::default(),
    }
}

/// Weights actually used: keyword-only mode puts everything on text.
pub(crate) fn weights(opts: &SearchOptions, hybrid: bool) -> (f32, f32) {
    if !hybrid {
        return (0.0, 1.0);
    }
    let sum = opts.vector_weight + opts.text_weight;
    (opts.vector_weight / sum, opts.text_weight / sum)
}

/// Sets `score` by the configured fusion.
pub(crate) fn fuse(cands: &mut [Candidate], opts: &SearchOptions, hybrid: bool) {
    let (vw, tw) = weights(opts, hybrid);
    for c in cands.iter_mut() {
        c.score = match opts.fusion {
            Fusion::Weighted => {
                vw * c.similarity(opts.vector_scale).unwrap_or(0.0).max(0.0)
                    + tw * c.text.unwrap_or(0.0)
            }
            Fusion::Rrf => {
                let k = opts.rrf_k.max(0.0);
                let v = c.vector_rank.map(|r| vw / (k + r as f32)).unwrap_or(0.0);
                let t = c.text_rank.map(|r| tw / (k + r as f32)).unwrap_or(0.0);
                // Scaled so a chunk ranked first on both sides scores 1.
                (v + t) * (k + 1.0)
            }
        };
    }
}

/// Document context: a chunk whose file holds other matching chunks is
/// more likely to be about the query than a lone hit with the same score.
/// Each score becomes `(score + weight * best_other) / (1 + weight)`, where
/// `best_other` is the best score among the other candidates of its file.
pub(crate) fn file_context(cands: &mut [Candidate], file_of: &HashMap<i64, &str>, weight: f32) {
    if weight <= 0.0 {
        return;
    }
    // The two best scores per file: a chunk that is its file's best takes
    // the second best as its context.
    let mut best: HashMap<&str, (f32, f32)> = HashMap::new();
    for c in cands.iter() {
        if let Some(f) = file_of.get(&c.id) {
            let e = best.entry(f).or_insert((0.0, 0.0));
            if c.score > e.0 {
                *e = (c.score, e.0);
            } else if c.score > e.1 {
                e.1 = c.score;
            }
        }
    }
    for c in cands.iter_mut() {
        let Some((b1, b2)) = file_of.get(&c.id).and_then(|f| best.get(f)) else {
            continue;
        };
        let other = if c.score >= *b1 { *b2 } else { *b1 };
        c.score = (c.score + weight * other) / (1.0 + weight);
    }
}

/// Score of a chunk from a named period that matched nothing else, before
/// the boost: enough to list what was said then, too little to pass a
/// chunk that matches the query's words or meaning well.
const DATE_ONLY_SCORE: f32 = 0.25;

/// Lifts chunks from the periods the query names: a chunk with affinity
/// `a` (see [`when::affinity`]) scores `(score + DATE_ONLY_SCORE * a) *
/// (1 + weight * a)`. When that takes the best score above 1, all scores
/// are divided by it, so scores stay in 0..=1 and their order is the
/// boosted one.
pub(crate) fn date_boost(
    cands: &mut [Candidate],
    records: &HashMap<i64, ChunkRecord>,
    periods: &[when::Period],
    weight: f32,
) {
    for c in cands.iter_mut() {
        if let Some((first, last)) = records.get(&c.id).and_then(|r| r.days) {
            let a = when::affinity(periods, first, last);
            if a > 0.0 {
                c.score = (c.score + DATE_ONLY_SCORE * a) * (1.0 + weight * a);
                c.trace.date = a;
            }
        }
    }
    let top = cands.iter().map(|c| c.score).fold(0.0f32, f32::max);
    if top > 1.0 {
        for c in cands.iter_mut() {
            c.score /= top;
        }
    }
}

/// Decay factor of a chunk: `exp(-ln2 / half_life * age_days)`, the age
/// counted from the last day it speaks from (its messages, a daily log's
/// name). Evergreen files (MEMORY.md, undated files under memory/ and extra
/// paths) get 1.
pub(crate) fn decay_factor(chunk: &ChunkRecord, today: NaiveDate, half_life_days: f32) -> f32 {
    let date = match chunk
        .days
        .map(|d| d.1)
        .or_else(|| when::date_in_path(&chunk.path))
    {
        Some(d) => d,
        None if chunk.source == crate::types::Source::Memory => return 1.0,
        None => match chrono::DateTime::from_timestamp_millis(chunk.mtime_ms) {
            Some(t) => t.date_naive(),
            None => return 1.0,
        },
    };
    let age = (today - date).num_days().max(0) as f32;
    (-(std::f32::consts::LN_2) / half_life_days * age).exp()
}

/// Lifts chunks that contain one of the query's identifiers to at least the
/// best score of the others, and ranks them first: an exact ID must never be
/// buried by vectors or recency.
pub(crate) fn protect_exact(cands: &mut [Candidate]) {
    let top_other = cands
        .iter()
        .filter(|c| !c.exact)
        .map(|c| c.score)
        .fold(0.0f32, f32::max);
    for c in cands.iter_mut().filter(|c| c.exact) {
        c.score = c.score.max(top_other).min(1.0);
    }
}

/// Sorts best first; exact-identifier hits win ties.
pub(crate) fn sort(cands: &mut [Candidate]) {
    cands.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.exact.cmp(&a.exact))
            .then(a.id.cmp(&b.id))
    });
}

/// Greedy maximal marginal relevance over word-set Jaccard similarity.
/// Keeps scores; only the order changes. Exact-identifier hits stay first.
pub(crate) fn mmr(
    cands: Vec<Candidate>,
    texts: &HashMap<i64, String>,
    lambda: f32,
) -> Vec<Candidate> {
    let sets: HashMap<i64, _> = cands
        .iter()
        .map(|c| {
            (
                c.id,
                text::word_set(texts.get(&c.id).map(String::as_str).unwrap_or("")),
            )
        })
        .collect();
    let (mut out, rest): (Vec<Candidate>, Vec<Candidate>) =
        cands.into_iter().partition(|c| c.exact);
    let overlap = |a: i64, b: i64| match (sets.get(&a), sets.get(&b)) {
        (Some(a), Some(b)) => text::jaccard(a, b),
        _ => 0.0,
    };
    // Each remaining candidate's largest overlap with what is already
    // chosen, updated with each new choice only: quadratic, not cubic.
    let mut rest: Vec<(Candidate, f32)> = rest
        .into_iter()
        .map(|c| {
            let sim = out
                .iter()
                .map(|o| overlap(c.id, o.id))
                .fold(0.0f32, f32::max);
            (c, sim)
        })
        .collect();
    while !rest.is_empty() {
        let mut best_i = 0;
        let mut best_v = f32::NEG_INFINITY;
        for (i, (c, sim)) in rest.iter().enumerate() {
            let v = lambda * c.score - (1.0 - lambda) * sim;
            if v > best_v {
                best_v = v;
                best_i = i;
            }
        }
        let (chosen, _) = rest.remove(best_i);
        for (c, sim) in rest.iter_mut() {
            *sim = sim.max(overlap(c.id, chosen.id));
        }
        out.push(chosen);
    }
    out
}

/// The minimum-score rule: a hit passes when its fused score, its vector
/// similarity (on the fusion's `scale`) or its keyword score reaches `min`,
/// or when it is an exact identifier hit. (With 0.7/0.3 weights a
/// keyword-only hit could otherwise never reach a 0.35 threshold.) The raw
/// cosine is not the test: e5 gives unrelated texts 0.75, which would let
/// every chunk through.
pub(crate) fn passes(c: &Candidate, min: f32, scale: VectorScale, text_counts: bool) -> bool {
    c.exact
        || c.score >= min
        || c.similarity(scale).is_some_and(|v| v >= min)
        || (text_counts && c.text.is_some_and(|t| t >= min))
}

/// One result before it becomes a hit: a whole chunk (`part: None`) or
/// one message of a transcript chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ranked<'a> {
    pub cand: &'a Candidate,
    pub part: Option<usize>,
    pub score: f32,
}

/// Fraction of `query` (distinct query tokens) found in `text`'s tokens.
fn share(query: &[String], text: &str) -> f32 {
    if query.is_empty() {
        return 0.0;
    }
    let words = text::index_text(text);
    let words: HashSet<&str> = words.split(' ').collect();
    query.iter().filter(|t| words.contains(t.as_str())).count() as f32 / query.len() as f32
}

/// Each message's share of the query's words; a message that follows a
/// question gets at least `answer_lift` times the question's share.
fn shares(query: &[String], texts: &[&str], answer_lift: f32) -> Vec<f32> {
    let mut out: Vec<f32> = texts.iter().map(|t| share(query, t)).collect();
    if answer_lift > 0.0 {
        // Backwards, so an answer inherits its question's own share, not
        // one the question inherited in turn.
        for i in (1..out.len()).rev() {
            if text::asks(texts[i - 1]) {
                out[i] = out[i].max(answer_lift * out[i - 1]);
            }
        }
    }
    out
}

/// What a search asks of [`message_hits`]: the query's tokens and
/// identifiers, `[search] message_focus` and `answer_lift`, and the minimum
/// score.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MessageFocus<'q> {
    pub query: &'q [String],
    pub idents: &'q [String],
    pub focus: f32,
    pub answer_lift: f32,
    pub min_score: f32,
}

/// The best `max` results of `cands` (sorted best first, or in MMR order
/// when `keep_order`), with every transcript chunk split into its messages.
/// A message scores `chunk * (1 - focus + focus * share / best share of its
/// chunk)`: the best message of each chunk keeps the chunk's score, and the
/// others fall behind the best messages of the next chunks. A message that
/// two overlapping chunks hold is kept once, with its higher score. Chunks
/// without parts (Markdown with `block_hits` off, transcripts indexed
/// before schema 3) stay whole; Markdown blocks split like messages. In a
/// chunk that holds one of the query's identifiers (`exact`), the messages
/// holding it keep the chunk's score too: an exact token is never buried.
/// A message that scores below its chunk is dropped when it falls below
/// `min_score` (the chunk passed it; its lesser messages must too). A
/// message answering a question counts the question's share too (see
/// [`shares`]).
///
/// With `keep_order`, chunks keep their order and only the messages within
/// each are ordered by score. Otherwise results are sorted by score, and the
/// walk stops once `max` results score at least as much as the next chunk
/// (no message of it or of any later chunk could score more).
pub(crate) fn message_hits<'a>(
    cands: &'a [Candidate],
    records: &HashMap<i64, ChunkRecord>,
    how: &MessageFocus,
    max: usize,
    keep_order: bool,
) -> Vec<Ranked<'a>> {
    let MessageFocus {
        query,
        idents,
        focus,
        answer_lift,
        min_score,
    } = *how;
    let mut out: Vec<Ranked<'a>> = Vec::new();
    let mut seen: HashMap<(&str, usize), usize> = HashMap::new();
    // The `max` best scores so far (non-negative floats order as their bits).
    let mut best: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
    for c in cands {
        if keep_order && out.len() >= max {
            break;
        }
        if !keep_order
            && best.len() >= max
            && best
                .peek()
                .is_some_and(|r| r.0 >= c.score.max(0.0).to_bits())
        {
            break;
        }
        let Some(r) = records.get(&c.id) else {
            continue;
        };
        let mut found: Vec<(Option<usize>, usize, f32)> = Vec::new();
        if r.parts.is_empty() {
            found.push((None, usize::MAX, c.score));
        } else {
            let texts: Vec<&str> = (0..r.parts.len())
                .map(|i| MessagePart::text_of(&r.parts, i, &r.text))
                .collect();
            let shares = shares(query, &texts, answer_lift);
            let top = shares.iter().copied().fold(0.0f32, f32::max);
            for (i, sh) in shares.iter().enumerate() {
                let holds_ident = c.exact && {
                    let lower = texts[i].to_lowercase();
                    idents.iter().any(|id| lower.contains(id.as_str()))
                };
                // The best message (or any, when none holds a query word)
                // keeps exactly its chunk's score, whatever the rounding.
                let factor = if holds_ident || top <= 0.0 || *sh >= top {
                    1.0
                } else {
                    1.0 - focus + focus * sh / top
                };
                let score = c.score * factor;
                if factor < 1.0 && score < min_score {
                    continue;
                }
                found.push((Some(i), r.parts[i].ordinal, score));
            }
            if keep_order {
                found.sort_by(|a, b| b.2.total_cmp(&a.2));
            }
        }
        for (part, ordinal, score) in found {
            let item = Ranked {
                cand: c,
                part,
                score,
            };
            if part.is_some() {
                if let Some(&at) = seen.get(&(r.path.as_str(), ordinal)) {
                    if !keep_order && out[at].score < score {
                        out[at] = item;
                    }
                    continue;
                }
                seen.insert((r.path.as_str(), ordinal), out.len());
            }
            out.push(item);
            best.push(Reverse(score.max(0.0).to_bits()));
            if best.len() > max {
                best.pop();
            }
        }
    }
    if !keep_order {
        // Stable: equal scores keep chunk order, then message order.
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
    }
    out.truncate(max);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Source;

    #[test]
    fn readings_blend_each_normalised_by_its_own_best() {
        // One reading of weight 1 keeps its raw ranking.
        let mut kw = Vec::new();
        blend_keyword(&mut kw, &[(1, 8.0), (2, 4.0)], 1.0);
        assert_eq!(kw, vec![(1, 8.0), (2, 4.0)]);
        // Two readings: the focus (few words, small BM25) counts as much as
        // the context (many words, large BM25) at equal weights.
        let mut kw = Vec::new();
        blend_keyword(&mut kw, &[(1, 2.0), (2, 1.0)], 0.5);
        blend_keyword(&mut kw, &[(2, 20.0), (3, 10.0)], 0.5);
        assert_eq!(kw, vec![(2, 0.75), (1, 0.5), (3, 0.25)]);
        // Vectors: a chunk one reading missed counts that reading's lowest.
        let mut v = Vec::new();
        blend_vector(&mut v, &[(1, 0.9), (2, 0.8)], 0.5);
        blend_vector(&mut v, &[(2, 0.9), (3, 0.6)], 0.5);
        let got: Vec<(i64, f32)> = v
            .iter()
            .map(|(id, c)| (*id, (c * 100.0).round() / 100.0))
            .collect();
        assert_eq!(got, vec![(2, 0.85), (1, 0.75), (3, 0.7)]);
    }

    #[test]
    fn bm25_is_normalised_by_best_and_sides_merge() {
        let c = merge(&[(1, 8.0), (2, 2.0)], &[(2, 0.9), (3, 0.5)]);
        let get = |id| c.iter().find(|x| x.id == id).unwrap().clone();
        assert_eq!(get(1).text, Some(1.0));
        assert_eq!(get(2).text, Some(0.25));
        assert_eq!(get(2).vector, Some(0.9));
        assert_eq!(get(3).text, None);
    }

    #[test]
    fn phrase_hits_add_to_keyword_scores() {
        let mut kw = vec![(1, 4.0), (2, 3.0)];
        add_phrases(&mut kw, &[(2, 4.0), (5, 1.0)], 0.5);
        assert_eq!(kw, vec![(2, 5.0), (1, 4.0), (5, 0.5)]);
    }

    #[test]
    fn the_floor_is_the_50th_cosine_whatever_the_candidate_count() {
        let hits: Vec<(i64, f32)> = (0..200).map(|i| (i, 0.9 - i as f32 * 0.001)).collect();
        let rel = |n: usize| {
            let c = merge(&[], &hits[..n]);
            c.iter().find(|x| x.id == 0).unwrap().vector_rel.unwrap()
        };
        assert_eq!(rel(50), rel(200));
        assert!(
            (rel(200) - 0.049 / (1.0 - 0.851)).abs() < 1e-4,
            "{}",
            rel(200)
        );
        assert!(
            rel(20) < rel(50),
            "fewer candidates: the last one is the floor"
        );
    }

    #[test]
    fn weighted_and_rrf_fusion() {
        let mut c = merge(&[(1, 4.0)], &[(2, 0.8), (1, 0.5)]);
        let mut o = SearchOptions::default();
        // Default scale: cosines above the floor (0.5), so 0 and 0.6.
        fuse(&mut c, &o, true);
        assert!((c[0].score - 0.3).abs() < 1e-6);
        assert!((c[1].score - 0.7 * 0.6).abs() < 1e-6);
        assert_eq!(c[1].vector, Some(0.8), "the raw cosine is kept");
        o.vector_scale = VectorScale::Raw;
        fuse(&mut c, &o, true);
        assert!((c[0].score - (0.7 * 0.5 + 0.3)).abs() < 1e-6);
        assert!((c[1].score - 0.56).abs() < 1e-6);
        fuse(&mut c, &o, false);
        assert_eq!(c[0].score, 1.0);
        assert_eq!(c[1].score, 0.0);
        o.fusion = Fusion::Rrf;
        let mut c = merge(&[(1, 4.0)], &[(1, 0.9)]);
        fuse(&mut c, &o, true);
        assert!((c[0].score - 1.0).abs() < 1e-6);
    }

    #[test]
    fn exact_hits_are_lifted_and_pass() {
        let mut c = merge(&[(1, 1.0)], &[(2, 0.9), (3, 0.8), (1, 0.1)]);
        fuse(&mut c, &SearchOptions::default(), true);
        c.iter_mut().find(|x| x.id == 1).unwrap().exact = true;
        protect_exact(&mut c);
        sort(&mut c);
        assert_eq!(c[0].id, 1);
        assert!(passes(&c[0], 0.99, VectorScale::Floor, true));
    }

    #[test]
    fn the_minimum_score_reads_the_vector_on_the_fusion_scale() {
        // e5-like cosines: everything near 0.8, one chunk clearly above.
        let vector: Vec<(i64, f32)> = (0..60).map(|i| (i, 0.9 - i as f32 * 0.002)).collect();
        let mut c = merge(&[], &vector);
        fuse(&mut c, &SearchOptions::default(), true);
        let by_id = |id: i64| c.iter().find(|x| x.id == id).unwrap();
        // A cosine of 0.8 is background here: it does not pass 0.3 ...
        assert!(!passes(by_id(50), 0.3, VectorScale::Floor, true));
        // ... the best chunk stands out and does.
        assert!(passes(by_id(0), 0.3, VectorScale::Floor, true));
        // On the raw scale the cosine itself is the test.
        assert!(passes(by_id(50), 0.3, VectorScale::Raw, true));
    }

    #[test]
    fn dates_and_decay() {
        assert_eq!(
            when::date_in_path("memory/2026-01-31-trip.md"),
            NaiveDate::from_ymd_opt(2026, 1, 31)
        );
        assert_eq!(when::date_in_path("memory/2026-1-31.md"), None);
        let today = NaiveDate::from_ymd_opt(2026, 3, 2).unwrap();
        let mk = |path: &str, source| ChunkRecord {
            id: 1,
            path: path.into(),
            source,
            start_line: 1,
            end_line: 1,
            text: String::new(),
            messages: None,
            parts: Vec::new(),
            session_key: None,
            mtime_ms: 0,
            days: None,
        };
        let f = decay_factor(&mk("memory/2026-01-31.md", Source::Memory), today, 30.0);
        assert!((f - 0.5).abs() < 0.01, "{f}");
        assert_eq!(
            decay_factor(&mk("MEMORY.md", Source::Memory), today, 30.0),
            1.0
        );
        assert_eq!(
            decay_factor(&mk("memory/people/bob.md", Source::Memory), today, 30.0),
            1.0
        );
        // A transcript chunk ages from its last message, not the file's mtime.
        let mut chunk = mk("sessions/a.jsonl", Source::Sessions);
        chunk.days = Some((
            NaiveDate::from_ymd_opt(2026, 1, 1).unwrap(),
            NaiveDate::from_ymd_opt(2026, 1, 31).unwrap(),
        ));
        let f = decay_factor(&chunk, today, 30.0);
        assert!((f - 0.5).abs() < 0.01, "{f}");
    }

    #[test]
    fn file_context_lifts_chunks_with_matching_siblings() {
        // 1 and 2 share a file; 3 is alone with a slightly better score.
        let mut c = merge(&[(1, 7.0), (2, 6.0), (3, 8.0)], &[]);
        fuse(&mut c, &SearchOptions::default(), false);
        let file_of: HashMap<i64, &str> = [(1, "a"), (2, "a"), (3, "b")].into();
        file_context(&mut c, &file_of, 0.25);
        sort(&mut c);
        assert_eq!(c.iter().map(|c| c.id).collect::<Vec<_>>(), vec![1, 3, 2]);
        assert!(c.iter().all(|c| (0.0..=1.0).contains(&c.score)));
        // Off: the order is the plain BM25 order.
        let mut c = merge(&[(1, 7.0), (2, 6.0), (3, 8.0)], &[]);
        fuse(&mut c, &SearchOptions::default(), false);
        file_context(&mut c, &file_of, 0.0);
        sort(&mut c);
        assert_eq!(c[0].id, 3);
    }

    #[test]
    fn mmr_demotes_near_duplicates() {
        let mut c = merge(&[], &[(1, 0.9), (2, 0.89), (3, 0.7)]);
        fuse(&mut c, &SearchOptions::default(), true);
        sort(&mut c);
        let texts: HashMap<i64, String> = [
            (1, "alpha beta gamma delta".to_string()),
            (2, "alpha beta gamma delta".to_string()),
            (3, "something else entirely".to_string()),
        ]
        .into();
        let out = mmr(c, &texts, 0.5);
        assert_eq!(out.iter().map(|c| c.id).collect::<Vec<_>>(), vec![1, 3, 2]);
    }

    /// A transcript chunk of `(ordinal, text)` messages, joined as the
    /// chunker joins them.
    fn transcript(id: i64, path: &str, msgs: &[(usize, &str)]) -> ChunkRecord {
        let mut parts = Vec::new();
        let mut text = String::new();
        for (ordinal, m) in msgs {
            if !text.is_empty() {
                text.push('\n');
            }
            parts.push(MessagePart {
                ordinal: *ordinal,
                line: ordinal + 1,
                offset: text.len(),
                day: None,
            });
            text.push_str(m);
        }
        ChunkRecord {
            id,
            path: path.into(),
            source: crate::types::Source::Sessions,
            start_line: parts[0].line,
            end_line: parts[parts.len() - 1].line,
            text,
            messages: Some((msgs[0].0, msgs[msgs.len() - 1].0)),
            parts,
            session_key: None,
            mtime_ms: 0,
            days: None,
        }
    }

    fn how<'q>(
        query: &'q [String],
        idents: &'q [String],
        focus: f32,
        min_score: f32,
    ) -> MessageFocus<'q> {
        MessageFocus {
            query,
            idents,
            focus,
            answer_lift: 1.0,
            min_score,
        }
    }

    #[test]
    fn an_answer_counts_its_question_s_words() {
        let log = transcript(
            1,
            "sessions/a.jsonl",
            &[
                (0, "Ann: what activities do you all enjoy together?"),
                (1, "Bob: hikes, picnics and board games"),
                (2, "Ann: sounds lovely"),
                (3, "Bob: the kids enjoy it most"),
            ],
        );
        let records: HashMap<i64, ChunkRecord> = [(1, log)].into();
        let mut cands = merge(&[(1, 1.0)], &[]);
        cands[0].score = 0.8;
        let query = text::query_tokens("which activities does the family enjoy together?");
        let scores = |lift: f32| -> Vec<(Option<usize>, f32)> {
            let how = MessageFocus {
                answer_lift: lift,
                ..how(&query, &[], 0.5, 0.0)
            };
            message_hits(&cands, &records, &how, 10, false)
                .iter()
                .map(|r| (r.part, (r.score * 1000.0).round() / 1000.0))
                .collect()
        };
        // The answer (no query word) ranks with its question; the message
        // after a statement does not inherit ("sounds lovely" scores 0.4,
        // "the kids enjoy it most" by its own "enjoy").
        assert_eq!(
            scores(1.0),
            vec![
                (Some(0), 0.8),
                (Some(1), 0.8),
                (Some(3), 0.533),
                (Some(2), 0.4)
            ]
        );
        assert_eq!(scores(0.5)[1], (Some(1), 0.6));
        // Off: the answer falls to the bottom.
        assert_eq!(
            scores(0.0),
            vec![
                (Some(0), 0.8),
                (Some(3), 0.533),
                (Some(1), 0.4),
                (Some(2), 0.4)
            ]
        );
        assert!(text::asks("Will it be shot on location?  "));
        assert!(text::asks("你养的狗叫什么名字？"));
        assert!(!text::asks("Why not? Because it rained."));
    }

    #[test]
    fn transcript_chunks_become_message_hits() {
        let records: HashMap<i64, ChunkRecord> = [
            transcript(
                1,
                "sessions/a.jsonl",
                &[
                    (0, "Ann: hello"),
                    (1, "Bob: we adopted a puppy"),
                    (2, "Ann: a puppy!"),
                ],
            ),
            // Overlaps chunk 1 on message 2.
            transcript(
                2,
                "sessions/a.jsonl",
                &[(2, "Ann: a puppy!"), (3, "Bob: yes")],
            ),
            // No query word at all (a vector-only match).
            transcript(
                3,
                "sessions/b.jsonl",
                &[(0, "Cy: dogs are fun"), (1, "Di: sure")],
            ),
            ChunkRecord {
                parts: Vec::new(),
                messages: None,
                source: crate::types::Source::Memory,
                ..transcript(4, "MEMORY.md", &[(0, "Pets: a puppy named Rex")])
            },
        ]
        .map(|r| (r.id, r))
        .into();
        let mut cands = merge(&[], &[(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]);
        for (c, s) in cands.iter_mut().zip([0.9, 0.8, 0.7, 0.6]) {
            c.score = s;
        }
        let query = text::query_tokens("adopted puppy");
        let got = |out: &[Ranked]| -> Vec<(i64, Option<usize>, f32)> {
            out.iter()
                .map(|r| (r.cand.id, r.part, (r.score * 1000.0).round() / 1000.0))
                .collect()
        };
        let out = message_hits(&cands, &records, &how(&query, &[], 0.5, 0.0), 100, false);
        assert_eq!(
            got(&out),
            vec![
                (1, Some(1), 0.9), // both words: keeps the chunk's score
                // "a puppy!" is in both chunks: 0.9 * 0.75 in chunk 1, where it has
                // half the words of the best message, 0.8 in chunk 2, where it is
                // the best. Kept once, with the higher score.
                (2, Some(0), 0.8),
                (3, Some(0), 0.7), // no query word: every message keeps the score
                (3, Some(1), 0.7),
                (4, None, 0.6), // Markdown stays whole
                (1, Some(0), 0.45),
                (2, Some(1), 0.4),
            ]
        );
        // The walk stops once the next chunk cannot beat what is kept.
        let top2 = message_hits(&cands, &records, &how(&query, &[], 0.5, 0.0), 2, false);
        assert_eq!(got(&top2), vec![(1, Some(1), 0.9), (2, Some(0), 0.8)]);
        // Focus 0: every message scores as its chunk, in chunk order.
        let flat = message_hits(&cands, &records, &how(&query, &[], 0.0, 0.0), 3, false);
        assert_eq!(
            got(&flat),
            vec![(1, Some(0), 0.9), (1, Some(1), 0.9), (1, Some(2), 0.9)]
        );
        // MMR order is kept between chunks; messages sort within each.
        let mut reordered = cands.clone();
        reordered.swap(0, 3);
        let kept = message_hits(&reordered, &records, &how(&query, &[], 0.5, 0.0), 3, true);
        assert_eq!(
            got(&kept),
            vec![(4, None, 0.6), (2, Some(0), 0.8), (2, Some(1), 0.4)]
        );

        // An identifier is never buried: the message that holds it keeps
        // its chunk's score although another shares more of the words.
        let log = transcript(
            5,
            "sessions/c.jsonl",
            &[
                (0, "Ann: the photo upload failed on the gallery page"),
                (1, "Bob: it said ERR-4711"),
            ],
        );
        let records: HashMap<i64, ChunkRecord> = [(5, log)].into();
        let mut cands = merge(&[(5, 1.0)], &[]);
        cands[0].score = 0.9;
        cands[0].exact = true;
        let q = "ERR-4711 when the photo upload failed on the gallery page";
        let (query, idents) = (text::query_tokens(q), text::identifiers(q));
        let out = message_hits(&cands, &records, &how(&query, &idents, 0.5, 0.0), 10, false);
        assert_eq!(got(&out), vec![(5, Some(0), 0.9), (5, Some(1), 0.9)]);
        let out = message_hits(&cands, &records, &how(&query, &[], 0.5, 0.0), 10, false);
        assert!(
            out[1].score < 0.9,
            "without the rule it falls: {:?}",
            got(&out)
        );
        // Below the minimum score, a lesser message goes; the best stays.
        let out = message_hits(&cands, &records, &how(&query, &[], 0.5, 0.8), 10, false);
        assert_eq!(got(&out), vec![(5, Some(0), 0.9)]);
    }
}
