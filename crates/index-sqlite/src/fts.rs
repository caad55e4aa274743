//! Keyword search in SQLite's FTS5, with its cost bounded as the index
//! grows.
//!
//! FTS5 ranks an OR of the query's terms by scoring every chunk that holds
//! any of them (about a microsecond each): at 100,000 chunks a query with
//! two everyday words scores 40,000 chunks, 30-50 ms, ten times the vector
//! scan. So:
//! - the number of chunks and each term's document count are cached per
//!   revision of the index (`count(*)` alone took 4.5 ms at 100,000);
//! - terms found in more than half of the chunks are dropped (their IDF is
//!   about 0: they change no ranking);
//! - when the remaining terms' document counts add up to more than
//!   [`KEYWORD_BUDGET`](mnemo_index::backend::KEYWORD_BUDGET), only the chunks holding the rarest terms (the most that
//!   fit within the budget) are scored, each with the BM25 of the whole
//!   query: one FTS5 query for those that hold some of the other terms
//!   (`rare AND common`, the whole query's BM25), one of the rare terms
//!   alone (their BM25, the whole score of a chunk without a common term),
//!   each ranked by FTS5 with the limit, and each chunk keeps its better
//!   score (exact: see [`search`]). FTS5's BM25 counts each term's chunks
//!   in a pass over its whole posting list, so the common terms are read
//!   once, not in a second `rare NOT common` query as before (about half
//!   the keyword side's time at 100,000 chunks). Chunks holding only the common
//!   terms are left out: they score below the rare terms' chunks in nearly
//!   every query (measured on the generated 100,000-chunk corpus of
//!   docs/BENCHMARKS.md: 0.98 of the exact top 10), and everything a rare
//!   word or an identifier names is still found. Below the budget (every
//!   index of a few thousand chunks) the search is exact, as before.
//!
//! Phrases (adjacent query words, `[search] phrase_weight`) are bounded the
//! same way by the rarer word of each pair.
//!
//! Single words are ranked with `mnemo_bm25` ([`crate::fts_rank`]): the
//! same score as FTS5's `bm25()`, from the cached document counts instead
//! of a count of every phrase's chunks in each statement.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{params, Connection, OptionalExtension};

use crate::fts_rank::DocLens;
use mnemo_index::backend::{keyword_plan, KeywordPlan};

/// An FTS5 MATCH expression: every token quoted, OR-ed, so BM25 ranks
/// documents by how many and how rare the words they share are (AND-joined
/// queries miss a document that lacks one word).
pub fn fts_query(tokens: &[String]) -> Option<String> {
    if tokens.is_empty() {
        return None;
    }
    Some(
        tokens
            .iter()
            // FTS5 reads a NUL as the end of the string: it cannot be
            // quoted, and no indexed word holds one.
            .map(|t| format!("\"{}\"", t.replace('\0', "").replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

/// Term statistics of one revision of the index.
#[derive(Debug, Default)]
pub(crate) struct TermStats {
    rev: Option<i64>,
    chunks: i64,
    docs: HashMap<String, i64>,
}

/// The statistics, cached for the index's current revision, and the row
/// lengths `mnemo_bm25` has read at that revision.
pub(crate) struct StatsCache(Mutex<TermStats>, Arc<DocLens>);

impl StatsCache {
    pub fn new() -> Self {
        StatsCache(
            Mutex::new(TermStats::default()),
            Arc::new(DocLens::default()),
        )
    }

    /// The row lengths, for [`crate::fts_rank::register`].
    pub fn lens(&self) -> &Arc<DocLens> {
        &self.1
    }

    /// The number of chunks and the document count of each term (a phrase
    /// counts as its rarer word), for revision `rev`.
    fn lookup(
        &self,
        c: &Connection,
        rev: i64,
        terms: &[String],
    ) -> rusqlite::Result<(i64, Vec<i64>)> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.rev != Some(rev) {
            // Apart: `count(*)` alone is SQLite's count of the B-tree, and
            // `max(id)` alone one step down it.
            let chunks: i64 = c.query_row("SELECT count(*) FROM chunks", [], |r| r.get(0))?;
            let max_id: i64 =
                c.query_row("SELECT coalesce(max(id), 0) FROM chunks", [], |r| r.get(0))?;
            *s = TermStats {
                rev: Some(rev),
                chunks,
                docs: HashMap::new(),
            };
            self.1.at_rev(rev, max_id, chunks);
        }
        let mut stmt = c.prepare_cached("SELECT doc FROM chunks_vocab WHERE term = ?1")?;
        let mut out = Vec::with_capacity(terms.len());
        for t in terms {
            let mut df = i64::MAX;
            for word in t.split(' ') {
                let d = match s.docs.get(word) {
                    Some(d) => *d,
                    None => {
                        let d: i64 = stmt
                            .query_row(params![word], |r| r.get(0))
                            .optional()?
                            .unwrap_or(0);
                        s.docs.insert(word.to_string(), d);
                        d
                    }
                };
                df = df.min(d);
            }
            out.push(df);
        }
        Ok((s.chunks, out))
    }
}

/// The plan for `terms` with document counts `docs` among `chunks` chunks
/// (the shared rule, [`keyword_plan`]).
fn plan(terms: &[String], docs: &[i64], chunks: i64) -> Plan {
    let with: Vec<(&String, i64)> = terms.iter().zip(docs.iter().copied()).collect();
    let phrases = terms.iter().any(|t| t.contains(' '));
    let owned = |v: Vec<&String>| v.into_iter().cloned().collect();
    match keyword_plan(&with, chunks, phrases) {
        KeywordPlan::All(t) => Plan::All(owned(t)),
        KeywordPlan::Bounded { rare, common } => Plan::Bounded {
            rare: owned(rare),
            common: owned(common),
        },
    }
}

type Plan = KeywordPlan<String>;

/// `(chunk id, -bm25)` of the best `limit` chunks for `terms`, best first;
/// `sources` is an SQL list for `chunks.source IN (...)`, or `None`.
pub(crate) fn search(
    c: &Connection,
    stats: &StatsCache,
    rev: i64,
    terms: &[String],
    limit: usize,
    sources: Option<&str>,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let (chunks, docs) = stats.lookup(c, rev, terms)?;
    // Each term's document count, for `mnemo_bm25`: known exactly for
    // single words FTS5 keeps as they are; otherwise `bm25()` counts.
    let count_of: HashMap<&str, i64> = terms
        .iter()
        .map(String::as_str)
        .zip(docs.iter().copied())
        .collect();
    let counts = |ts: &[&[String]]| -> Option<Vec<i64>> {
        ts.iter()
            .flat_map(|t| t.iter())
            .map(|t| {
                crate::fts_rank::kept_as_is(t)
                    .then(|| count_of.get(t.as_str()).copied())
                    .flatten()
            })
            .collect()
    };
    let run = |expr: &str, counts: Option<Vec<i64>>| ranked(c, expr, counts, limit, sources);
    match plan(terms, &docs, chunks) {
        Plan::All(t) => match fts_query(&t) {
            Some(q) => run(&q, counts(&[t.as_slice()])),
            None => Ok(Vec::new()),
        },
        Plan::Bounded { rare, common } => {
            let (Some(r), Some(o)) = (fts_query(&rare), fts_query(&common)) else {
                return Ok(Vec::new());
            };
            // The chunks holding both sides, with the whole query's BM25;
            // then the best chunks by the rare terms' BM25 alone, which is
            // the whole score of a chunk holding no common term and a lower
            // bound of the others (BM25 only adds). A chunk of the true
            // top `limit` holding no common term is among the second
            // query's best `limit`: every chunk above it there scores more
            // in truth too. So the best score of each chunk over both is
            // the exact ranking, and FTS5 reads the common terms' posting
            // lists once (its BM25 counts each term's chunks in a pass over
            // its whole list), not again for a `rare NOT common` query.
            let mut out = run(
                &format!("({r}) AND ({o})"),
                counts(&[rare.as_slice(), common.as_slice()]),
            )?;
            let seen: HashMap<i64, usize> = out
                .iter()
                .enumerate()
                .map(|(i, (id, _))| (*id, i))
                .collect();
            for (id, score) in run(&r, counts(&[rare.as_slice()]))? {
                match seen.get(&id) {
                    Some(&i) => out[i].1 = out[i].1.max(score),
                    None => out.push((id, score)),
                }
            }
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(limit);
            Ok(out)
        }
    }
}

/// One FTS5 query ranked by BM25, best first: with `mnemo_bm25` when
/// `counts` holds each phrase's document count (in the expression's
/// order), else with FTS5's `bm25()`.
fn ranked(
    c: &Connection,
    expr: &str,
    counts: Option<Vec<i64>>,
    limit: usize,
    sources: Option<&str>,
) -> rusqlite::Result<Vec<(i64, f64)>> {
    let score = match counts {
        Some(_) => "mnemo_bm25(chunks_fts, ?3)",
        None => "bm25(chunks_fts)",
    };
    let sql = match sources {
        // FTS5 sorts by rank with a LIMIT itself, without the join.
        None => format!(
            "SELECT rowid, {score} AS r FROM chunks_fts WHERE chunks_fts MATCH ?1
             ORDER BY r LIMIT ?2"
        ),
        Some(f) => format!(
            "SELECT c.id, {score} AS r FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
             WHERE chunks_fts MATCH ?1 AND c.source IN ({f}) ORDER BY r LIMIT ?2"
        ),
    };
    let mut stmt = c.prepare_cached(&sql)?;
    let row = |r: &rusqlite::Row| -> rusqlite::Result<(i64, f64)> {
        Ok((r.get(0)?, -r.get::<_, f64>(1)?))
    };
    let rows = match counts {
        Some(n) => stmt.query_map(
            params![expr, limit as i64, crate::fts_rank::counts_blob(&n)],
            row,
        )?,
        None => stmt.query_map(params![expr, limit as i64], row)?,
    };
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// A generated index past the budget, its words drawn like the scale
    /// benchmark's (30 % from 55 everyday words, the rest from a long tail).
    fn generated(docs: usize) -> Connection {
        use rand::rngs::StdRng;
        use rand::{RngExt, SeedableRng};
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(crate::backend::SCHEMA).unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        c.execute_batch("BEGIN").unwrap();
        {
            let mut ins = c
                .prepare(
                    "INSERT INTO chunks(id, path, source, start_line, end_line, hash, text)
                     VALUES (?1, 'memory/x.md', 'memory', 1, 1, '', '')",
                )
                .unwrap();
            let mut fts = c
                .prepare("INSERT INTO chunks_fts(rowid, tokens) VALUES (?1, ?2)")
                .unwrap();
            for id in 1..=docs as i64 {
                let len = rng.random_range(20..80);
                let words: Vec<String> = (0..len).map(|_| word(&mut rng)).collect();
                ins.execute(params![id]).unwrap();
                fts.execute(params![id, words.join(" ")]).unwrap();
            }
        }
        c.execute_batch("COMMIT").unwrap();
        c
    }

    fn word(rng: &mut rand::rngs::StdRng) -> String {
        use rand::RngExt;
        if rng.random::<f32>() < 0.3 {
            format!("w{}", rng.random_range(0..55))
        } else {
            let u: f64 = rng.random();
            format!("t{}", (u * u * u * 5000.0) as usize)
        }
    }

    /// Past the budget, the bounded search finds what FTS5's BM25 over the
    /// whole query ranks first: the same top 10 for nearly every query, and
    /// scores on the same scale (the rare terms' chunks are scored with the
    /// whole query).
    #[test]
    fn bounded_search_agrees_with_fts5_bm25() {
        use rand::SeedableRng;
        let c = generated(30_000);
        let stats = StatsCache::new();
        crate::fts_rank::register(&c, stats.lens()).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let (mut same, mut total, mut bounded) = (0usize, 0usize, 0usize);
        for _ in 0..200 {
            let terms: Vec<String> = (0..5).map(|_| word(&mut rng)).collect();
            let (chunks, docs) = stats.lookup(&c, 0, &terms).unwrap();
            let plan = plan(&terms, &docs, chunks);
            let kept = match &plan {
                Plan::All(t) => t.clone(),
                Plan::Bounded { rare, common } => {
                    bounded += 1;
                    rare.iter().chain(common).cloned().collect()
                }
            };
            // FTS5's own `bm25()` (no counts given).
            let exact = ranked(&c, &fts_query(&kept).unwrap(), None, 10, None).unwrap();
            let got = search(&c, &stats, 0, &terms, 10, None).unwrap();
            let want: HashMap<i64, f64> = exact.iter().copied().collect();
            for (id, score) in &got {
                if let Some(w) = want.get(id) {
                    same += 1;
                    assert!((w - score).abs() < 1e-9, "chunk {id}: {score} against {w}");
                }
            }
            total += want.len();
        }
        let agree = same as f64 / total as f64;
        println!("bounded plans {bounded} of 200; top-10 agreement {agree:.3}");
        assert!(bounded >= 50, "{bounded} queries past the budget");
        assert!(agree >= 0.95, "top-10 agreement {agree}");
    }

    #[test]
    fn plans() {
        // Small: everything, exact.
        assert_eq!(
            plan(&s(&["a", "b"]), &[10, 20], 1000),
            Plan::All(s(&["a", "b"]))
        );
        // Half the chunks or more: dropped, the rarest kept.
        assert_eq!(
            plan(&s(&["a", "b"]), &[600, 10], 1000),
            Plan::All(s(&["b"]))
        );
        assert_eq!(
            plan(&s(&["a", "b"]), &[900, 600], 1000),
            Plan::All(s(&["b"]))
        );
        // A word no chunk holds is not the rare one: the rarest word found
        // is kept ("which instrument did ann start learning" in a tiny index
        // where every other word is in most chunks).
        assert_eq!(
            plan(&s(&["instrument", "ann", "learn"]), &[0, 6, 4], 6),
            Plan::All(s(&["learn"]))
        );
        assert_eq!(plan(&s(&["x", "y"]), &[0, 0], 6), Plan::All(s(&["x", "y"])));
        // Large: the rarest within the budget, scored with the rest.
        assert_eq!(
            plan(
                &s(&["a", "b", "c", "d"]),
                &[18_000, 40, 3_000, 9_000],
                100_000
            ),
            Plan::Bounded {
                rare: s(&["b", "c"]),
                common: s(&["a", "d"])
            }
        );
        // The rarest term alone may be over the budget: it is kept.
        assert_eq!(
            plan(&s(&["a", "b"]), &[9_000, 20_000], 100_000),
            Plan::Bounded {
                rare: s(&["a"]),
                common: s(&["b"])
            }
        );
        // Phrases: the common ones are left out, all of them when even
        // the rarest is over the budget alone (a phrase only adds to what
        // its words find).
        assert_eq!(
            plan(&s(&["a b", "c d"]), &[9_000, 30], 100_000),
            Plan::All(s(&["c d"]))
        );
        assert_eq!(
            plan(&s(&["a b", "c d"]), &[9_000, 6_000], 100_000),
            Plan::All(vec![])
        );
        assert_eq!(plan(&s(&["a b"]), &[9_000], 100_000), Plan::All(vec![]));
        assert_eq!(
            plan(&s(&["a b"]), &[4_000], 100_000),
            Plan::All(s(&["a b"]))
        );
    }
}
