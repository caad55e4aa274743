//! Switching backends does not change the keyword ranking: the same chunks
//! in SQLite (FTS5) and PostgreSQL (mnemo's postings) give the same ids
//! with the same BM25 scores, for single words, identifiers, CJK pieces,
//! words with diacritics, phrases, common words and source filters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_index::backend::{FileRecord, NewChunk};
use mnemo_index::{IndexBackend, Source};
use mnemo_index_postgres::{PostgresBackend, PostgresOptions};
use mnemo_index_sqlite::SqliteBackend;

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
        b.upsert_file(&file(path, source), &chunks_of(path), None)
            .unwrap();
    }
}

/// A file's record; only its path and source matter here.
fn file(path: &str, source: Source) -> FileRecord {
    FileRecord {
        path: path.into(),
        source,
        hash: "h".into(),
        mtime_ms: 1,
        size: 1,
        embedded: false,
        session_key: None,
    }
}

/// The same chunks in the same order, with the same scores (within 1e-9).
fn assert_same(got: &[(String, f64)], want: &[(String, f64)], what: &str) {
    assert_eq!(
        got.iter().map(|g| &g.0).collect::<Vec<_>>(),
        want.iter().map(|w| &w.0).collect::<Vec<_>>(),
        "{what}"
    );
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g.1 - w.1).abs() <= 1e-9 * w.1.abs().max(1.0),
            "{what}: {g:?} vs {w:?}"
        );
    }
}

/// [`fill`], then every file written again and a file added and deleted:
/// the word counts BM25 reads must follow replacements and deletions.
fn fill_and_churn(b: &dyn IndexBackend) {
    fill(b);
    fill(b);
    let gone = file("memory/gone.md", Source::Memory);
    let mut chunks = chunks_of("memory/b.md");
    for c in &mut chunks {
        c.hash.push_str("-gone");
    }
    b.upsert_file(&gone, &chunks, None).unwrap();
    b.delete_file("memory/gone.md").unwrap();
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
    fill_and_churn(&sqlite);
    fill_and_churn(&pg);
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
            assert_same(&got, &want, &format!("{q:?} in {sources:?}"));
        }
    }
    drop(pg);
    PostgresBackend::drop_schema(&opts).unwrap();
}

/// Past the keyword budget (the shared plan bounds the search to the
/// chunks of the rarer words), both backends still give the same chunks
/// with the same scores.
#[test]
fn past_the_budget_the_rankings_still_match() {
    let Some(url) = mnemo_test_support::postgres::test_url() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteBackend::open(&dir.path().join("index.sqlite"), None).unwrap();
    let opts = PostgresOptions {
        url,
        schema: format!("mnemo_rank_big_{}", std::process::id()),
    };
    let _ = PostgresBackend::drop_schema(&opts);
    let pg = PostgresBackend::open(&opts, None).unwrap();
    // 8,000 chunks: "tea" and "piano" in 45 % of them each (3,600: two
    // of them add up past the budget of 5,000), "term0".."term49" in 160
    // each, "rareN" in 16, "batch" in every chunk of the first 20 files
    // (2,000: with it, "tea" and "piano" only add to its chunks, and
    // PostgreSQL reads their lists for those files alone).
    for f in 0..80 {
        let path = format!("memory/f{f:02}.md");
        let chunks: Vec<NewChunk> = (0..100)
            .map(|i| {
                let n = f * 100 + i;
                let mut words = vec![format!("term{}", n % 50), format!("rare{}", n % 500)];
                if f < 20 {
                    words.push("batch".into());
                }
                if n % 20 < 9 {
                    words.push("tea".into());
                }
                if (n / 3) % 20 < 9 {
                    words.push("piano".into());
                    words.push("piano".into());
                }
                words.extend((0..n % 7).map(|k| format!("pad{k}")));
                let text = words.join(" ");
                NewChunk {
                    start_line: i + 1,
                    end_line: i + 1,
                    hash: format!("{path}-{i}"),
                    text: text.clone(),
                    tokens: text,
                    messages: None,
                    parts: Vec::new(),
                    days: None,
                }
            })
            .collect();
        let file = file(&path, Source::Memory);
        sqlite.upsert_file(&file, &chunks, None).unwrap();
        pg.upsert_file(&file, &chunks, None).unwrap();
    }
    let ids = |b: &dyn IndexBackend, q: &[&str]| -> Vec<(String, f64)> {
        let terms: Vec<String> = q.iter().map(|t| t.to_string()).collect();
        let hits = b.keyword_search(&terms, 10, &[]).unwrap();
        let chunks = b
            .chunks(&hits.iter().map(|h| h.0).collect::<Vec<_>>())
            .unwrap();
        hits.iter()
            .map(|(id, s)| {
                let c = chunks.iter().find(|c| c.id == *id).unwrap();
                (format!("{}:{}", c.path, c.start_line), *s)
            })
            .collect()
    };
    for q in [
        &["tea", "piano", "term7"][..],
        &["piano", "tea", "rare42", "term3"],
        &["tea", "piano"],
        &["tea piano", "piano term9"],
        &["tea", "piano", "batch"],
        &["piano", "batch", "rare42"],
        &["batch tea", "tea piano"],
    ] {
        let want = ids(&sqlite, q);
        let got = ids(&pg, q);
        assert_eq!(want.len(), 10, "{q:?}");
        assert_same(&got, &want, &format!("{q:?}"));
    }
    drop(pg);
    PostgresBackend::drop_schema(&opts).unwrap();
}
