//! The FTS query builder (`mnemo_index`'s `query_tokens` and
//! `query_phrases`, `mnemo_index_sqlite`'s `fts_query`) on any query,
//! checked against a real FTS5 table: the MATCH expressions it makes are
//! valid FTS5 syntax (a syntax error would fail the search); snippets and
//! identifiers never split a character. Same checks as the
//! `fuzz_fts_query_builder` test of mnemo-index-sqlite.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_index::fuzzing as fts;
use mnemo_index_sqlite::fuzzing::fts_query;

thread_local! {
    static DB: rusqlite::Connection = {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(tokens, tokenize='unicode61 remove_diacritics 2');
             INSERT INTO t(tokens) VALUES ('deploy key vault ops err4711 2026 東京');",
        )
        .unwrap();
        db
    };
}

fn check(db: &rusqlite::Connection, what: &str, expr: &str) {
    let mut stmt = db
        .prepare_cached("SELECT rowid FROM t WHERE t MATCH ?1 LIMIT 5")
        .unwrap();
    stmt.query_map([expr], |r| r.get::<_, i64>(0))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .unwrap_or_else(|e| panic!("{what} {expr:?} is not valid FTS5: {e}"));
}

fuzz_target!(|data: &[u8]| {
    let q = mnemo_fuzz::text(data);
    let tokens = fts::query_tokens(&q);
    let phrases = fts::query_phrases(&q);
    DB.with(|db| {
        if let Some(expr) = fts_query(&tokens) {
            check(db, "tokens", &expr);
        }
        if let Some(expr) = fts_query(&phrases) {
            check(db, "phrases", &expr);
        }
    });
    let _ = fts::identifiers(&q);
    let _ = fts::index_text(&q);
    let snippet = fts::snippet(&q, &tokens, 40);
    assert!(snippet.chars().count() <= q.chars().count().max(41) + 2);
});
