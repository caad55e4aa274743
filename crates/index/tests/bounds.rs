//! What one file costs to index is bounded (issue 43 N3): a session line
//! over the line limit is not rendered, a huge message is indexed in its
//! beginning only, and the messages around them keep their ordinals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Fixture;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};

fn keyword_index(f: &Fixture) -> MemoryIndex {
    mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), None).unwrap()
}

fn message(role: &str, text: &str) -> String {
    serde_json::json!({"role": role, "content": text, "timestamp": "2026-01-01T10:00:00"})
        .to_string()
}

#[test]
fn a_huge_message_is_indexed_in_its_beginning_and_a_too_long_line_not_at_all() {
    let f = Fixture::new();
    // Just over the bounds (1 MiB a message, 16 MiB a line), so the test
    // stays small.
    let paste = format!(
        "BEGINPASTE {} ENDPASTE",
        "lorem ipsum dolor sit amet ".repeat((1024 * 1024) / 27 + 100)
    );
    let huge = format!("HUGELINE {} TAILOFHUGE", "x".repeat(16 * 1024 * 1024 + 10));
    let log = [
        r#"{"_type":"metadata","key":"cli:big","created_at":"2026-01-01T00:00:00","updated_at":"2026-01-01T00:00:00","metadata":{},"last_consolidated":0}"#.to_string(),
        message("user", "FIRSTMESSAGE about the garden"),
        message("user", &paste),
        message("user", &huge),
        message("assistant", "LASTMESSAGE the roses need water"),
    ]
    .join("\n")
        + "\n";
    f.write("sessions/cli_big.jsonl", log);
    let index = keyword_index(&f);
    let report = index.sync(&|_| {}).unwrap();
    let issues: Vec<String> = report
        .issues
        .iter()
        .map(|i| format!("{}: {}", i.path, i.message))
        .collect();
    assert!(
        issues
            .iter()
            .any(|i| i.contains("1 line(s) over 16 MiB not indexed")
                && i.contains("1 message(s) indexed in their first 1 MiB only")),
        "{issues:?}"
    );
    // Far fewer chunks than the 17 MiB of text would make.
    assert!(report.chunks_written < 5_000, "{}", report.chunks_written);

    let search = |q: &str| index.search(&SearchRequest::new(q)).unwrap().results;
    assert!(!search("BEGINPASTE").is_empty());
    assert!(search("ENDPASTE").is_empty());
    assert!(search("TAILOFHUGE").is_empty());
    // The message after the long line keeps its ordinal (3) and line (5).
    let last = search("LASTMESSAGE roses");
    let hit = last
        .iter()
        .find(|h| h.snippet.contains("LASTMESSAGE"))
        .unwrap();
    assert_eq!(hit.message_range, Some((3, 3)), "{hit:?}");
    assert_eq!((hit.start_line, hit.end_line), (5, 5), "{hit:?}");
}
