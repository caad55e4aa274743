//! The FTS query builder under the random inputs of
//! `mnemo_test_support::fuzz` inside `cargo test` (the budget comes from
//! `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`), checked against a real FTS5
//! table; the coverage-guided target in `fuzz/` checks it on the tokens
//! mnemo-index makes of a query. Here the tokens are any text's words, the
//! whole text and its adjacent pairs: more than the search policy ever
//! hands a backend, so the escaping holds for whatever it hands.

use mnemo_test_support::fuzz::{fingerprint, text, Fuzz, QUERY_SEEDS};

use crate::fts::fts_query;

#[test]
fn fts_query_quotes_and_ors() {
    assert_eq!(
        fts_query(&["a\"b".to_string(), "c".to_string()]).unwrap(),
        "\"a\"\"b\" OR \"c\""
    );
    assert!(fts_query(&[]).is_none());
    // A NUL would end FTS5's string early (found by the test below).
    assert_eq!(fts_query(&["a\0b".to_string()]).unwrap(), "\"ab\"");
}

/// Whatever the tokens, the MATCH expression the builder makes of them is
/// valid FTS5 syntax (a syntax error would fail the search).
#[test]
fn fuzz_fts_query_builder() {
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(tokens, tokenize='unicode61 remove_diacritics 2');
         INSERT INTO t(tokens) VALUES ('deploy key vault ops err4711 2026 東京');",
    )
    .unwrap();
    let mut stmt = db
        .prepare("SELECT rowid FROM t WHERE t MATCH ?1 LIMIT 5")
        .unwrap();
    Fuzz::new("fts-query-builder")
        .seeds(QUERY_SEEDS)
        .dict([
            "\"", "AND", "OR", "NOT", "NEAR(", ")", "(", "*", "^", ":", "+", "-", "'", "-4711",
        ])
        .run(|data| {
            let q = text(data);
            let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
            let pairs: Vec<String> = words.windows(2).map(|w| w.join(" ")).collect();
            let mut matched = 0usize;
            for tokens in [words.clone(), pairs, vec![q.to_string()]] {
                if let Some(expr) = fts_query(&tokens) {
                    let n = stmt
                        .query_map([&expr], |r| r.get::<_, i64>(0))
                        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                        .unwrap_or_else(|e| panic!("{expr:?} is not valid FTS5: {e}"));
                    matched += n.len();
                }
            }
            fingerprint(&(words.len().min(8), matched))
        });
}
