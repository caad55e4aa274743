//! Ranking: BM25 normalisation, vector similarity above the query's floor,
//! fusion (weighted sum or reciprocal rank fusion), document context, exact-identifier
//! protection, temporal decay, MMR and the minimum-score cut. Pure functions
//! over candidates.

use std::collections::HashMap;

use chrono::NaiveDate;

use crate::backend::ChunkRecord;
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
                let v = match opts.vector_scale {
                    VectorScale::Floor => c.vector_rel,
                    VectorScale::Raw => c.vector,
                };
                vw * v.unwrap_or(0.0).max(0.0) + tw * c.text.unwrap_or(0.0)
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
/// score or its keyword score reaches `min`, or when it is an exact
/// identifier hit. (With 0.7/0.3 weights a keyword-only hit could otherwise
/// never reach a 0.35 threshold.)
pub(crate) fn passes(c: &Candidate, min: f32, text_counts: bool) -> bool {
    c.exact
        || c.score >= min
        || c.vector.is_some_and(|v| v >= min)
        || (text_counts && c.text.is_some_and(|t| t >= min))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Source;

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
        assert!(passes(&c[0], 0.99, true));
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
}
