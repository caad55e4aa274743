//! The [`IndexBackend`] conformance suite: what every index backend must do
//! with files, chunks, their keyword and vector search, days, the embedding
//! cache and metadata, checked on small indexes whose right answers the
//! scenarios compute themselves (BM25 over the chunks' tokens, cosines of
//! the vectors given).
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.
// A test suite: a failed backend call is a failed scenario, and the
// unwrap's panic names the call.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use chrono::NaiveDate;
use mnemo_index::backend::{tokens_of, ChunkRecord, FileRecord, IndexBackend, NewChunk};
use mnemo_index::chunk::MessagePart;
use mnemo_index::Source;

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "metadata_round_trips",
    "an_upsert_replaces_the_files_chunks",
    "an_upsert_keeps_the_chunks_that_stay",
    "a_delete_removes_everything_of_the_file",
    "a_touch_changes_only_the_times",
    "keyword_ranking_is_bm25_on_the_tokens",
    "several_keyword_queries_answer_as_each_alone",
    "vector_ranking_is_by_cosine",
    "sources_filter_both_sides",
    "chunks_read_back_as_written",
    "chunks_are_found_by_their_days",
    "vectors_are_cached_by_chunk_hash",
    "pruning_keeps_the_vectors_in_use",
    "the_embedding_cache_pages_out_and_in",
];

/// Dimension of the suite's vectors; the backend must serve vectors of
/// this size for its model.
pub const DIMS: usize = 8;

/// One backend under test: a fresh, empty index whose model has
/// [`DIMS`]-dimensional vectors. `_keep` holds whatever must outlive the
/// backend (a temporary folder, a database schema to drop).
pub struct IndexCase {
    /// The backend.
    pub backend: Box<dyn IndexBackend>,
    /// Kept alive as long as the case.
    pub _keep: Box<dyn std::any::Any>,
}

impl std::fmt::Debug for IndexCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexCase").finish_non_exhaustive()
    }
}

/// Generates one `#[test]` per scenario of the [`IndexBackend`] suite, in a
/// module named `$name`, for the case `$make` builds (a `fn() -> IndexCase`
/// or `fn() -> Option<IndexCase>`, see [`IntoCase`](crate::conformance::IntoCase), or a closure without
/// captures); each test gets a fresh, empty index.
/// `suite_is_complete` fails when the macro misses a scenario.
///
/// ```text
/// mnemo_test_support::index_backend_suite!(sqlite, sqlite_case);
/// ```
#[macro_export]
macro_rules! index_backend_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::index as suite;

            fn make_case() -> ::std::option::Option<suite::IndexCase> {
                $crate::conformance::IntoCase::into_case(($make)())
            }

            #[test]
            fn metadata_round_trips() {
                if let Some(case) = make_case() {
                    suite::metadata_round_trips(&case);
                }
            }
            #[test]
            fn an_upsert_replaces_the_files_chunks() {
                if let Some(case) = make_case() {
                    suite::an_upsert_replaces_the_files_chunks(&case);
                }
            }
            #[test]
            fn an_upsert_keeps_the_chunks_that_stay() {
                if let Some(case) = make_case() {
                    suite::an_upsert_keeps_the_chunks_that_stay(&case);
                }
            }
            #[test]
            fn a_delete_removes_everything_of_the_file() {
                if let Some(case) = make_case() {
                    suite::a_delete_removes_everything_of_the_file(&case);
                }
            }
            #[test]
            fn a_touch_changes_only_the_times() {
                if let Some(case) = make_case() {
                    suite::a_touch_changes_only_the_times(&case);
                }
            }
            #[test]
            fn keyword_ranking_is_bm25_on_the_tokens() {
                if let Some(case) = make_case() {
                    suite::keyword_ranking_is_bm25_on_the_tokens(&case);
                }
            }
            #[test]
            fn several_keyword_queries_answer_as_each_alone() {
                if let Some(case) = make_case() {
                    suite::several_keyword_queries_answer_as_each_alone(&case);
                }
            }
            #[test]
            fn vector_ranking_is_by_cosine() {
                if let Some(case) = make_case() {
                    suite::vector_ranking_is_by_cosine(&case);
                }
            }
            #[test]
            fn sources_filter_both_sides() {
                if let Some(case) = make_case() {
                    suite::sources_filter_both_sides(&case);
                }
            }
            #[test]
            fn chunks_read_back_as_written() {
                if let Some(case) = make_case() {
                    suite::chunks_read_back_as_written(&case);
                }
            }
            #[test]
            fn chunks_are_found_by_their_days() {
                if let Some(case) = make_case() {
                    suite::chunks_are_found_by_their_days(&case);
                }
            }
            #[test]
            fn vectors_are_cached_by_chunk_hash() {
                if let Some(case) = make_case() {
                    suite::vectors_are_cached_by_chunk_hash(&case);
                }
            }
            #[test]
            fn pruning_keeps_the_vectors_in_use() {
                if let Some(case) = make_case() {
                    suite::pruning_keeps_the_vectors_in_use(&case);
                }
            }
            #[test]
            fn the_embedding_cache_pages_out_and_in() {
                if let Some(case) = make_case() {
                    suite::the_embedding_cache_pages_out_and_in(&case);
                }
            }
            #[test]
            fn suite_is_complete() {
                $crate::conformance::assert_covers(
                    "index backend",
                    suite::SCENARIOS,
                    &[
                        "metadata_round_trips",
                        "an_upsert_replaces_the_files_chunks",
                        "an_upsert_keeps_the_chunks_that_stay",
                        "a_delete_removes_everything_of_the_file",
                        "a_touch_changes_only_the_times",
                        "keyword_ranking_is_bm25_on_the_tokens",
                        "several_keyword_queries_answer_as_each_alone",
                        "vector_ranking_is_by_cosine",
                        "sources_filter_both_sides",
                        "chunks_read_back_as_written",
                        "chunks_are_found_by_their_days",
                        "vectors_are_cached_by_chunk_hash",
                        "pruning_keeps_the_vectors_in_use",
                        "the_embedding_cache_pages_out_and_in",
                    ],
                );
            }
        }
    };
}

/// Metadata keys are set, overwritten and read back, and others are kept.
pub fn metadata_round_trips(case: &IndexCase) {
    let b = &*case.backend;
    b.set_meta(&[("model", "m1".into()), ("dims", "8".into())])
        .unwrap();
    b.set_meta(&[("model", "m2".into())]).unwrap();
    let meta = b.meta().unwrap();
    assert_eq!(meta.get("model").map(String::as_str), Some("m2"));
    assert_eq!(meta.get("dims").map(String::as_str), Some("8"));
}

/// Upserting a file again replaces its chunks: the old text is found by no
/// search, the counts are the new file's, and the record is the new one.
pub fn an_upsert_replaces_the_files_chunks(case: &IndexCase) {
    let b = &*case.backend;
    let old = ["alpha harbour", "bravo lantern", "charlie meadow"];
    put(b, "memory/a.md", Source::Memory, &old, true);
    put(
        b,
        "memory/other.md",
        Source::Memory,
        &["delta orchard"],
        true,
    );
    assert_eq!(b.counts().unwrap().chunks, 4);
    let new = ["echo harbour", "foxtrot lantern"];
    let rec = put(b, "memory/a.md", Source::Memory, &new, true);
    let counts = b.counts().unwrap();
    assert_eq!((counts.files, counts.chunks, counts.vectors), (2, 3, 3));
    let files = b.files().unwrap();
    assert_eq!(files.iter().filter(|f| f.path == "memory/a.md").count(), 1);
    assert!(files.contains(&rec), "{files:?}");
    assert!(keyword(b, &["charlie"], &[]).is_empty());
    assert!(keyword(b, &["alpha"], &[]).is_empty());
    let found = texts(b, &keyword(b, &["harbour"], &[]));
    assert_eq!(found, ["echo harbour"]);
    // The vector of a removed chunk is no candidate any more.
    let hits = b
        .vector_search(&vector_of("charlie meadow"), 10, &[])
        .unwrap();
    assert!(!texts(b, &ids(&hits)).contains(&"charlie meadow".to_string()));
}

/// Upserting a file again keeps each stored chunk a new one matches (the
/// same text, place and days: an appended session log's earlier chunks)
/// under its id, and replaces the rest: searches then rank as over the
/// new chunks written afresh, and every kept chunk keeps its vector. A
/// file stored without its vectors is written whole, so all its chunks
/// get theirs.
pub fn an_upsert_keeps_the_chunks_that_stay(case: &IndexCase) {
    let b = &*case.backend;
    // The chunks' tokens as the indexer makes them (a backend may read a
    // stored chunk's words again from its text).
    let put = |path: &str, source: Source, texts: &[&str], embed: bool| {
        let mut file = record(path, source, &texts.join("\n"));
        file.embedded = embed;
        let chunks: Vec<NewChunk> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| NewChunk {
                tokens: tokens_of(t),
                ..new_chunk(t, i + 1)
            })
            .collect();
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
        b.upsert_file(&file, &chunks, embed.then_some(vectors.as_slice()))
            .unwrap();
    };
    let search = |words: &[&str]| {
        let tokens: Vec<String> = words.iter().map(|w| tokens_of(w)).collect();
        b.keyword_search(&tokens, 20, &[]).unwrap()
    };
    let path = "sessions/grow.jsonl";
    let before = ["alpha river", "bravo river stone", "charlie stone"];
    put(path, Source::Sessions, &before, true);
    // Written after, so a chunk written again gets another id.
    put("memory/other.md", Source::Memory, &["delta lake"], true);
    let mut first = ids(&search(&["alpha", "bravo"]));
    first.sort();
    assert_eq!(first.len(), 2);
    let docs = [
        "alpha river",
        "bravo river stone",
        "charlie stone echo",
        "foxtrot echo echo",
        "delta lake",
    ];
    put(path, Source::Sessions, &docs[..4], true);
    let mut kept = ids(&search(&["alpha", "bravo"]));
    kept.sort();
    assert_eq!(kept, first, "the chunks that stayed kept their ids");
    let counts = b.counts().unwrap();
    assert_eq!((counts.files, counts.chunks, counts.vectors), (2, 5, 5));
    assert_eq!(
        texts(b, &ids(&search(&["charlie"]))),
        ["charlie stone echo"]
    );
    // BM25 over the indexer's tokens of each document (no word in more
    // than half of them: such words a backend may leave out).
    let tokenised: Vec<String> = docs.iter().map(|d| tokens_of(d)).collect();
    let tokenised: Vec<&str> = tokenised.iter().map(String::as_str).collect();
    for query in [
        &["stone"][..],
        &["river", "echo"],
        &["charlie", "foxtrot"],
        &["echo"],
    ] {
        let got = search(query);
        let q: Vec<String> = query.iter().map(|w| tokens_of(w)).collect();
        let q: Vec<&str> = q.iter().map(String::as_str).collect();
        let want = bm25(&tokenised, &q);
        let expected: Vec<&str> = want
            .iter()
            .map(|(t, _)| docs[tokenised.iter().position(|d| d == t).unwrap()])
            .collect();
        assert_eq!(texts(b, &ids(&got)), expected, "ranking for {query:?}");
        for ((_, s), (doc, score)) in got.iter().zip(&want) {
            assert!(
                (s - score).abs() <= 1e-6 * score.abs().max(1.0),
                "{query:?}: {doc:?} scored {s}, BM25 says {score}"
            );
        }
    }
    for doc in docs {
        let hits = b.vector_search(&vector_of(doc), 1, &[]).unwrap();
        assert_eq!(texts(b, &ids(&hits)), [doc], "the vector of {doc:?}");
    }
    // The gone chunk's vector went with it.
    let hits = b
        .vector_search(&vector_of("charlie stone"), 10, &[])
        .unwrap();
    assert!(!texts(b, &ids(&hits)).contains(&"charlie stone".to_string()));
    // Stored without vectors, then with: every chunk has one.
    put("memory/late.md", Source::Memory, &["golf", "hotel"], false);
    put("memory/late.md", Source::Memory, &["golf", "hotel"], true);
    let counts = b.counts().unwrap();
    assert_eq!((counts.chunks, counts.vectors), (7, 7));
}

/// Deleting a file removes its record, chunks and vectors from every kind
/// of search and from the counts; other files stay.
pub fn a_delete_removes_everything_of_the_file(case: &IndexCase) {
    let b = &*case.backend;
    put(
        b,
        "sessions/s.jsonl",
        Source::Sessions,
        &["golf quarry", "hotel ridge"],
        true,
    );
    put(b, "memory/keep.md", Source::Memory, &["india summit"], true);
    let gone = ids(&b.vector_search(&vector_of("golf quarry"), 10, &[]).unwrap());
    b.delete_file("sessions/s.jsonl").unwrap();
    let counts = b.counts().unwrap();
    assert_eq!((counts.files, counts.chunks, counts.vectors), (1, 1, 1));
    assert!(keyword(b, &["golf"], &[]).is_empty());
    assert!(keyword(b, &["hotel"], &[]).is_empty());
    let left = ids(&b.vector_search(&vector_of("golf quarry"), 10, &[]).unwrap());
    assert_eq!(texts(b, &left), ["india summit"]);
    let read = b.chunks(&gone).unwrap();
    assert!(
        read.iter().all(|c| c.path != "sessions/s.jsonl"),
        "{read:?}"
    );
    assert_eq!(b.files().unwrap().len(), 1);
    // Deleting a path the index does not hold is not an error.
    b.delete_file("memory/never.md").unwrap();
}

/// A touch records the new time and size and leaves hash and chunks alone.
pub fn a_touch_changes_only_the_times(case: &IndexCase) {
    let b = &*case.backend;
    let rec = put(b, "memory/t.md", Source::Memory, &["juliet canyon"], true);
    b.touch_file("memory/t.md", rec.mtime_ms + 5_000, rec.size + 1)
        .unwrap();
    let after = b
        .files()
        .unwrap()
        .into_iter()
        .find(|f| f.path == "memory/t.md")
        .unwrap();
    assert_eq!(after.mtime_ms, rec.mtime_ms + 5_000);
    assert_eq!(after.size, rec.size + 1);
    assert_eq!((after.hash, after.embedded), (rec.hash, rec.embedded));
    assert_eq!(texts(b, &keyword(b, &["juliet"], &[])), ["juliet canyon"]);
    let chunks = b.chunks(&keyword(b, &["juliet"], &[])).unwrap();
    assert_eq!(chunks[0].mtime_ms, rec.mtime_ms + 5_000);
}

/// Keyword search ORs the query's tokens and ranks chunks by BM25 over
/// their token columns (k1 = 1.2, b = 0.75, IDF `ln((N - n + 0.5) / (n +
/// 0.5))`, floored at 1e-6), best first, with the score given as the
/// positive BM25; chunks holding no query token are not returned.
pub fn keyword_ranking_is_bm25_on_the_tokens(case: &IndexCase) {
    let b = &*case.backend;
    let docs = [
        "kilo river kilo stone",
        "kilo lima mountain path over the long ridge",
        "mike river",
        "november oscar papa quebec",
        "river stone bridge",
        "romeo sierra tango uniform victor",
        "whiskey xray yankee zulu",
        "lima lima lima",
    ];
    put(b, "memory/one.md", Source::Memory, &docs[..4], false);
    put(b, "memory/two.md", Source::Memory, &docs[4..], false);
    for query in [
        &["kilo"][..],
        &["river", "stone"],
        &["lima", "mountain"],
        &["kilo", "lima", "river"],
    ] {
        let got = keyword(b, query, &[]);
        let scores: HashMap<i64, f64> = b
            .keyword_search(&strings(query), 20, &[])
            .unwrap()
            .into_iter()
            .collect();
        let want = bm25(&docs, query);
        let found = texts(b, &got);
        let expected: Vec<String> = want.iter().map(|(d, _)| d.to_string()).collect();
        assert_eq!(found, expected, "ranking for {query:?}");
        for (id, (doc, score)) in got.iter().zip(&want) {
            let s = scores[id];
            assert!(
                (s - score).abs() <= 1e-6 * score.abs().max(1.0),
                "{query:?}: {doc:?} scored {s}, BM25 says {score}"
            );
        }
    }
    assert!(keyword(b, &["absent"], &[]).is_empty());
    assert_eq!(
        b.keyword_search(&strings(&["kilo", "lima"]), 1, &[])
            .unwrap()
            .len(),
        1
    );
}

/// Several keyword queries asked together (a search's words and its
/// adjacent pairs) get what each gets asked alone, in order, whatever
/// words and phrases they share.
pub fn several_keyword_queries_answer_as_each_alone(case: &IndexCase) {
    let b = &*case.backend;
    put(
        b,
        "memory/one.md",
        Source::Memory,
        &[
            "kilo river kilo stone",
            "river stone bridge over kilo",
            "stone river",
        ],
        false,
    );
    put(
        b,
        "sessions/s.jsonl",
        Source::Sessions,
        &["the river stone was kilo", "lima lima"],
        false,
    );
    let words = strings(&["river", "stone", "kilo"]);
    let pairs = strings(&["river stone", "stone kilo"]);
    let absent = strings(&["absent", "nowhere near"]);
    let queries: [&[String]; 4] = [&words, &pairs, &absent, &strings(&["lima"])];
    for sources in [&[][..], &[Source::Memory][..], &[Source::Sessions][..]] {
        for limit in [1, 20] {
            let together = b.keyword_searches(&queries, limit, sources).unwrap();
            let alone: Vec<Vec<(i64, f64)>> = queries
                .iter()
                .map(|q| b.keyword_search(q, limit, sources).unwrap())
                .collect();
            assert_eq!(together.len(), queries.len());
            for (i, (t, a)) in together.iter().zip(&alone).enumerate() {
                assert_eq!(ids(t), ids(a), "query {i}, {sources:?}, limit {limit}");
                for ((_, x), (_, y)) in t.iter().zip(a) {
                    assert!(
                        (x - y).abs() <= 1e-9 * y.abs().max(1.0),
                        "query {i}: {x} against {y}"
                    );
                }
            }
        }
    }
    assert!(
        !b.keyword_searches(&queries, 20, &[]).unwrap()[1].is_empty(),
        "the pairs found nothing"
    );
    assert!(b.keyword_searches(&[], 20, &[]).unwrap().is_empty());
}

/// Vector search returns the `k` chunks with the highest cosine to the
/// query, best first, with their cosines.
pub fn vector_ranking_is_by_cosine(case: &IndexCase) {
    let b = &*case.backend;
    let docs: Vec<String> = (0..30).map(|i| format!("note {i} word{i}")).collect();
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    put(b, "memory/v.md", Source::Memory, &refs, true);
    for probe in ["note 3 word3", "something else", "note 29 word29"] {
        let q = vector_of(probe);
        let hits = b.vector_search(&q, 5, &[]).unwrap();
        assert_eq!(hits.len(), 5);
        let mut want: Vec<(&str, f32)> = refs
            .iter()
            .map(|d| (*d, cosine(&q, &vector_of(d))))
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = texts(b, &ids(&hits));
        assert_eq!(
            got,
            want[..5]
                .iter()
                .map(|w| w.0.to_string())
                .collect::<Vec<_>>(),
            "ranking for {probe:?}"
        );
        for ((_, s), (_, w)) in hits.iter().zip(&want) {
            assert!((s - w).abs() < 1e-4, "{probe:?}: cosine {s}, want {w}");
        }
    }
    assert!(b.vector_search(&vector_of("x"), 0, &[]).unwrap().is_empty());
}

/// A source filter keeps the other source's chunks out of keyword and
/// vector search; no filter, or both sources, finds both.
pub fn sources_filter_both_sides(case: &IndexCase) {
    let b = &*case.backend;
    put(
        b,
        "memory/m.md",
        Source::Memory,
        &["shared alpha memory"],
        true,
    );
    put(
        b,
        "sessions/s.jsonl",
        Source::Sessions,
        &["shared bravo session"],
        true,
    );
    put(
        b,
        "memory/n.md",
        Source::Memory,
        &["unrelated charlie"],
        true,
    );
    let only = |sources: &[Source]| {
        let kw = texts(b, &keyword(b, &["shared"], sources));
        let vec = texts(
            b,
            &ids(&b
                .vector_search(&vector_of("shared alpha memory"), 10, sources)
                .unwrap()),
        );
        (kw, vec)
    };
    let (kw, vec) = only(&[Source::Memory]);
    assert_eq!(kw, ["shared alpha memory"]);
    assert!(vec.iter().all(|t| !t.contains("session")), "{vec:?}");
    assert_eq!(vec.len(), 2);
    let (kw, vec) = only(&[Source::Sessions]);
    assert_eq!(kw, ["shared bravo session"]);
    assert_eq!(vec, ["shared bravo session"]);
    for sources in [&[][..], &[Source::Memory, Source::Sessions]] {
        let (kw, vec) = only(sources);
        assert_eq!(kw.len(), 2, "{sources:?}");
        assert_eq!(vec.len(), 3, "{sources:?}");
    }
}

/// `chunks` gives back every field of what was written, with the file's
/// session key and time, for any order of ids; unknown ids are skipped.
pub fn chunks_read_back_as_written(case: &IndexCase) {
    let b = &*case.backend;
    let day = |d: u32| NaiveDate::from_ymd_opt(2026, 3, d);
    let text = "user: where is the key\nassistant: under the mat";
    let chunk = NewChunk {
        start_line: 3,
        end_line: 4,
        hash: hash_of(text),
        text: text.to_string(),
        tokens: "user where is the key assistant under the mat".into(),
        messages: Some((2, 3)),
        parts: vec![
            MessagePart {
                ordinal: 2,
                line: 3,
                offset: 0,
                day: day(1),
            },
            MessagePart {
                ordinal: 3,
                line: 4,
                offset: 23,
                day: day(2),
            },
        ],
        days: day(1).zip(day(2)),
    };
    let file = FileRecord {
        path: "sessions/cli-x.jsonl".into(),
        source: Source::Sessions,
        hash: hash_of("file"),
        mtime_ms: 1_772_000_000_000,
        size: 120,
        embedded: true,
        session_key: Some("cli:x".into()),
    };
    b.upsert_file(
        &file,
        std::slice::from_ref(&chunk),
        Some(&[vector_of(text)]),
    )
    .unwrap();
    let id = keyword(b, &["mat"], &[])[0];
    let read = b.chunks(&[987_654_321, id]).unwrap();
    assert_eq!(read.len(), 1);
    let want = ChunkRecord {
        id,
        path: file.path.clone(),
        source: Source::Sessions,
        start_line: 3,
        end_line: 4,
        text: text.to_string(),
        messages: Some((2, 3)),
        parts: chunk.parts.clone(),
        session_key: Some("cli:x".into()),
        mtime_ms: file.mtime_ms,
        days: chunk.days,
    };
    assert_eq!(read[0], want);
    assert!(b.chunks(&[]).unwrap().is_empty());
}

/// `chunks_in_days` finds the chunks that speak from a day in the window,
/// earliest first and up to the limit, with the source filter; `day_range`
/// spans the days chunks begin on; chunks without days are in neither.
pub fn chunks_are_found_by_their_days(case: &IndexCase) {
    let b = &*case.backend;
    assert_eq!(b.day_range().unwrap(), None);
    let d = |m: u32, day: u32| NaiveDate::from_ymd_opt(2026, m, day).unwrap();
    let spans = [
        ("march first", Some((d(3, 1), d(3, 1))), Source::Memory),
        (
            "march fifth to eighth",
            Some((d(3, 5), d(3, 8))),
            Source::Sessions,
        ),
        ("march tenth", Some((d(3, 10), d(3, 10))), Source::Memory),
        ("april second", Some((d(4, 2), d(4, 2))), Source::Memory),
        ("no day at all", None, Source::Memory),
    ];
    for (i, (text, days, source)) in spans.iter().enumerate() {
        let mut c = new_chunk(text, 1);
        c.days = *days;
        let file = record(&format!("memory/d{i}.md"), *source, text);
        b.upsert_file(&file, &[c], None).unwrap();
    }
    let in_days = |first, last, limit, sources: &[Source]| {
        texts(b, &b.chunks_in_days(first, last, limit, sources).unwrap())
    };
    assert_eq!(
        in_days(d(3, 6), d(3, 10), 10, &[]),
        ["march fifth to eighth", "march tenth"]
    );
    assert_eq!(
        in_days(d(3, 1), d(3, 31), 2, &[]),
        ["march first", "march fifth to eighth"]
    );
    assert_eq!(
        in_days(d(3, 1), d(3, 31), 10, &[Source::Memory]),
        ["march first", "march tenth"]
    );
    assert!(in_days(d(3, 11), d(4, 1), 10, &[]).is_empty());
    assert_eq!(b.day_range().unwrap(), Some((d(3, 1), d(4, 2))));
}

/// Vectors written with chunks are cached by the chunk's hash, for the
/// backend's model: `cached_embeddings` returns them for known hashes and
/// nothing for others, and a file written without vectors is not embedded.
pub fn vectors_are_cached_by_chunk_hash(case: &IndexCase) {
    let b = &*case.backend;
    put(
        b,
        "memory/c.md",
        Source::Memory,
        &["kilo cache", "lima cache"],
        true,
    );
    let plain = put(b, "memory/plain.md", Source::Memory, &["mike plain"], false);
    assert!(!plain.embedded);
    let hashes = [
        hash_of("kilo cache"),
        hash_of("lima cache"),
        hash_of("mike plain"),
    ];
    let refs: Vec<&str> = hashes.iter().map(String::as_str).collect();
    let cached = b.cached_embeddings(&refs).unwrap();
    assert_eq!(cached.len(), 2, "{:?}", cached.keys());
    for text in ["kilo cache", "lima cache"] {
        let v = &cached[&hash_of(text)];
        let want = vector_of(text);
        assert!(
            v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6),
            "{text}"
        );
    }
    assert!(b.cached_embeddings(&[]).unwrap().is_empty());
    let counts = b.counts().unwrap();
    assert_eq!((counts.chunks, counts.vectors), (3, 2));
}

/// Pruning the embedding cache drops only vectors no chunk uses, down to
/// `keep` rows, and reports how many went; a later write of the same text
/// brings its vector back.
pub fn pruning_keeps_the_vectors_in_use(case: &IndexCase) {
    let b = &*case.backend;
    put(
        b,
        "memory/p.md",
        Source::Memory,
        &["used one", "used two"],
        true,
    );
    put(
        b,
        "memory/q.md",
        Source::Memory,
        &["unused three", "unused four"],
        true,
    );
    b.delete_file("memory/q.md").unwrap();
    let all = [
        hash_of("used one"),
        hash_of("used two"),
        hash_of("unused three"),
        hash_of("unused four"),
    ];
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let before = b.cached_embeddings(&refs).unwrap().len();
    assert!(
        before >= 2,
        "the cache may keep vectors after a delete: {before}"
    );
    let dropped = b.prune_embedding_cache(0).unwrap();
    assert_eq!(dropped, before - 2);
    let left = b.cached_embeddings(&refs).unwrap();
    assert_eq!(left.len(), 2);
    assert!(left.contains_key(&hash_of("used one")) && left.contains_key(&hash_of("used two")));
    assert_eq!(b.prune_embedding_cache(0).unwrap(), 0);
    let hits = b.vector_search(&vector_of("used one"), 1, &[]).unwrap();
    assert_eq!(texts(b, &ids(&hits)), ["used one"]);
}

/// The embedding cache reads out in pages by hash (every row once, in
/// hash order, a text written twice once) and takes rows in: a hash already cached keeps its vector,
/// a vector of another dimension is skipped, and a chunk written after
/// the rows came in finds its vector in the cache.
pub fn the_embedding_cache_pages_out_and_in(case: &IndexCase) {
    let b = &*case.backend;
    let texts_in = [
        "page one",
        "page two",
        "page three",
        "page four",
        "page five",
    ];
    // A text twice in one file: one cache row.
    let mut written = texts_in.to_vec();
    written.push("page one");
    put(b, "memory/pages.md", Source::Memory, &written, true);
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let page = b.embedding_cache_page(&after, 2).unwrap();
        assert!(page.len() <= 2);
        let Some((last, _)) = page.last() else { break };
        after = last.clone();
        seen.extend(page);
    }
    let mut want: Vec<String> = texts_in.iter().map(|t| hash_of(t)).collect();
    want.sort();
    let got: Vec<String> = seen.iter().map(|(h, _)| h.clone()).collect();
    assert_eq!(got, want, "every cached row once, in hash order");
    for (h, v) in &seen {
        let text = texts_in.iter().find(|t| &hash_of(t) == h).unwrap();
        let w = vector_of(text);
        assert!(
            v.iter().zip(&w).all(|(a, b)| (a - b).abs() < 1e-6),
            "{text}"
        );
    }

    let newcomer = hash_of("copied in");
    let mut wrong = vector_of("page one");
    wrong[0] += 0.5;
    b.put_cached_embeddings(&[
        (newcomer.clone(), vector_of("copied in")),
        (hash_of("page one"), wrong),
        (hash_of("too short"), vec![1.0; DIMS - 1]),
    ])
    .unwrap();
    let cached = b
        .cached_embeddings(&[&newcomer, &hash_of("page one"), &hash_of("too short")])
        .unwrap();
    assert_eq!(cached.len(), 2, "{:?}", cached.keys());
    let kept = &cached[&hash_of("page one")];
    let first = vector_of("page one");
    assert!(kept.iter().zip(&first).all(|(a, b)| (a - b).abs() < 1e-6));
    assert_eq!(b.embedding_cache_page("", 100).unwrap().len(), 6);
    b.put_cached_embeddings(&[]).unwrap();
}

// Helpers (not scenarios: private, so the completeness check skips them).

fn strings(tokens: &[&str]) -> Vec<String> {
    tokens.iter().map(|t| t.to_string()).collect()
}

fn keyword(b: &dyn IndexBackend, tokens: &[&str], sources: &[Source]) -> Vec<i64> {
    ids(&b.keyword_search(&strings(tokens), 20, sources).unwrap())
}

fn ids<S>(hits: &[(i64, S)]) -> Vec<i64> {
    hits.iter().map(|h| h.0).collect()
}

/// The texts of these chunk ids, in the ids' order.
fn texts(b: &dyn IndexBackend, ids: &[i64]) -> Vec<String> {
    let by_id: HashMap<i64, String> = b
        .chunks(ids)
        .unwrap()
        .into_iter()
        .map(|c| (c.id, c.text))
        .collect();
    ids.iter().map(|id| by_id[id].clone()).collect()
}

fn hash_of(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// A deterministic unit vector for a text (its bytes folded into [`DIMS`]
/// dimensions, with a constant component so no vector is zero).
fn vector_of(text: &str) -> Vec<f32> {
    let mut v = vec![0.05f32; DIMS];
    for (i, byte) in text.bytes().enumerate() {
        v[(i * 7 + byte as usize) % DIMS] += (byte % 13) as f32 / 13.0 - 0.3;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A chunk of one line whose tokens are its words.
fn new_chunk(text: &str, line: usize) -> NewChunk {
    NewChunk {
        start_line: line,
        end_line: line,
        hash: hash_of(text),
        text: text.to_string(),
        tokens: text.to_lowercase(),
        messages: None,
        parts: Vec::new(),
        days: None,
    }
}

fn record(path: &str, source: Source, content: &str) -> FileRecord {
    FileRecord {
        path: path.to_string(),
        source,
        hash: hash_of(content),
        mtime_ms: 1_772_000_000_000,
        size: content.len() as u64,
        embedded: false,
        session_key: (source == Source::Sessions).then(|| "cli:suite".to_string()),
    }
}

/// Writes `texts` as the chunks of `path` (one line each), with their
/// vectors when `embed`; returns the file's record.
fn put(
    b: &dyn IndexBackend,
    path: &str,
    source: Source,
    texts: &[&str],
    embed: bool,
) -> FileRecord {
    let mut file = record(path, source, &texts.join("\n"));
    file.embedded = embed;
    let chunks: Vec<NewChunk> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| new_chunk(t, i + 1))
        .collect();
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
    b.upsert_file(&file, &chunks, embed.then_some(vectors.as_slice()))
        .unwrap();
    file
}

/// BM25 of every document holding a query token, best first (ties by
/// document order), as FTS5 computes it.
fn bm25<'a>(docs: &[&'a str], query: &[&str]) -> Vec<(&'a str, f64)> {
    let toks: Vec<Vec<&str>> = docs.iter().map(|d| d.split(' ').collect()).collect();
    let n = docs.len() as f64;
    let avg = toks.iter().map(Vec::len).sum::<usize>() as f64 / n;
    let mut out: Vec<(usize, f64)> = Vec::new();
    for (i, doc) in toks.iter().enumerate() {
        let mut score = 0.0;
        let mut any = false;
        for q in query {
            let f = doc.iter().filter(|t| t == &q).count() as f64;
            if f == 0.0 {
                continue;
            }
            any = true;
            let with = toks.iter().filter(|d| d.contains(q)).count() as f64;
            let idf = ((n - with + 0.5) / (with + 0.5)).ln().max(1e-6);
            let len = doc.len() as f64;
            score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len / avg));
        }
        if any {
            out.push((i, score));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.into_iter().map(|(i, s)| (docs[i], s)).collect()
}
