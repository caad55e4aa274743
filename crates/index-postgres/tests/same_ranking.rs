//! Switching backends does not change the keyword ranking: the same chunks
//! in SQLite (FTS5) and PostgreSQL (mnemo's postings) give the same ids
//! with the same BM25 scores, for single words, identifiers, CJK pieces,
//! words with diacritics, phrases, common words and source filters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_index::backend::{FileRecord, NewChunk};
use mnemo_index::sqlite::SqliteBackend;
use mnemo_index::{IndexBackend, Source};
use mnemo_index_postgres::{PostgresBackend, PostgresOptions};

const DOCS: &[(&str, Source, &str)] = &[
    (
        "memory/a.md",
        Source::Memory,
        "err4711 err 4711 deploy fail on the build server",
    ),
    (
        "memory/a.md",
        Source::Memory,
        "the build server is back after the deploy",
    ),
    (
        "memory/b.md",
        Source::Memory,
        "ice cream with caroline at the café on friday",
    ),
    (
        "memory/b.md",
        Source::Memory,
        "cream cheese and ice in the cooler ice cream",
    ),
    (
        "sessions/s.jsonl",
        Source::Sessions,
        "user we talked about ice cream and the support group",
    ),
    (
        "sessions/s.jsonl",
        Source::Sessions,
        "assistant the support group meets on friday at the cafe",
    ),
    (
        "sessions/t.jsonl",
        Source::Sessions,
        "我们 我 们 去 北京 北 京 the",
    ),
    (
        "memory/c.md",
        Source::Memory,
        "naïve resume résumé the the the",
    ),
];

fn chunks_of(path: &str) -> Vec<NewChunk> {
    DOCS.iter()
        .filter(|d| d.0 == path)
        .enumerate()
        .map(|(i, d)| NewChunk {
            start_line: i + 1,
            end_line: i + 1,
            hash: format!("{path}-{i}"),
            text: d.2.into(),
            tokens: d.2.into(),
            messages: None,
            parts: Vec::new(),
            days: None,
        })
        .collect()
}

fn fill(b: &dyn IndexBackend) {
    let mut paths: Vec<(&str, Source)> = DOCS.iter().map(|d| (d.0, d.1)).collect();
    paths.dedup();
    for (path, source) in paths {
        let file = FileRecord {
            path: path.into(),
            source,
            hash: "h".into(),
            mtime_ms: 1,
            size: 1,
            embedded: false,
            session_key: None,
        };
        b.upsert_file(&file, &chunks_of(path), None).unwrap();
    }
}

/// The texts and scores of a search, best first.
fn ranked(b: &dyn IndexBackend, terms: &[&str], sources: &[Source]) -> Vec<(String, f64)> {
    let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
    let hits = b.keyword_search(&terms, 20, sources).unwrap();
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    let chunks = b.chunks(&ids).unwrap();
    hits.iter()
        .map(|(id, s)| {
            let text = chunks.iter().find(|c| c.id == *id).unwrap().text.clone();
            (text, *s)
        })
        .collect()
}

#[test]
fn keyword_rankings_match_sqlite() {
    let Some(url) = mnemo_test_support::postgres::test_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteBackend::open(&dir.path().join("index.sqlite"), None).unwrap();
    let opts = PostgresOptions {
        url,
        schema: format!("mnemo_rank_{}", std::process::id()),
    };
    let _ = PostgresBackend::drop_schema(&opts);
    let pg = PostgresBackend::open(&opts, None).unwrap();
    fill(&sqlite);
    fill(&pg);
    let queries: &[&[&str]] = &[
        &["err4711"],
        &["err4711", "err", "4711"],
        &["build", "server", "deploy"],
        &["ice", "cream", "caroline"],
        &["ice cream", "support group"],
        &["cream cheese"],
        &["我们", "北京"],
        &["café"],
        &["cafe", "friday"],
        &["the", "friday"],
        &["the"],
        &["naive", "resume"],
        &["absent", "ice"],
    ];
    for sources in [&[][..], &[Source::Memory], &[Source::Sessions]] {
        for q in queries {
            let want = ranked(&sqlite, q, sources);
            let got = ranked(&pg, q, sources);
            assert_eq!(
                got.iter().map(|g| &g.0).collect::<Vec<_>>(),
                want.iter().map(|w| &w.0).collect::<Vec<_>>(),
                "{q:?} in {sources:?}"
            );
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g.1 - w.1).abs() <= 1e-9 * w.1.abs().max(1.0),
                    "{q:?}: {g:?} vs {w:?}"
                );
            }
        }
    }
    drop(pg);
    PostgresBackend::drop_schema(&opts).unwrap();
}
