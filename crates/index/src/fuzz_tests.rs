//! Fuzz targets of the index's text handling, run by
//! `mnemo_test_support::fuzz` inside `cargo test` (the budget comes from
//! `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`): the Markdown chunker and block
//! splitter, the query's words and snippets, the date parser, the transcript reader and the secret redaction. Every
//! target checks what must hold for any input, not only that it returns.

use chrono::NaiveDate;
use mnemo_test_support::fuzz::{fingerprint, text, Fuzz, QUERY_SEEDS};

use crate::chunk;
use crate::{text as fts, when};

const MARKDOWN: &[&str] = &[
    "---\nname: \"Tea\"\ndescription: \"green\"\ntype: user\n---\n\nPrefers green tea.\n",
    "# 2026-11-29\n\n- [09:00] über wichtig\n- [09:12] The deploy key lives in vault/ops.\n",
    "# Facts\n\n- works at ACME\n  - since 2024\n\nA paragraph\nover two lines.\n\n```rust\nfn main() {}\n```\n",
    "Title\n=====\n\nText under a setext heading.\n\nSub\n---\nmore\n",
    "## 日本語のメモ\n\n東京で会議。明日は大阪。\n\n- 중요한 메모\n",
    "",
];

/// Chunks cover the file's lines in order, within its line count, with the
/// text of the lines they name; block parts lie inside the chunk's text.
#[test]
fn fuzz_markdown_chunker() {
    Fuzz::new("markdown-chunker")
        .seeds(MARKDOWN)
        .dict([
            "\n", "\n\n", "# ", "## ", "- ", "  - ", "```", "---\n", "...\n", "===\n", "> ", "1. ",
        ])
        .run(|data| {
            let doc = text(data);
            let chunks = crate::fuzzing::check_markdown_chunker(&doc, data);
            fingerprint(&(chunks.min(16), chunk::front_matter(&doc)))
        });
}

/// Whatever the query, its tokens, phrases, identifiers, indexed text and
/// snippets come out without splitting a character (the MATCH expression
/// a backend makes of them is checked where it is made: mnemo-index-sqlite).
#[test]
fn fuzz_query_text() {
    Fuzz::new("query-text")
        .seeds(QUERY_SEEDS)
        .dict([
            "\"", "AND", "OR", "NEAR(", ")", "(", "*", "^", ":", "-", "'", "-4711",
        ])
        .run(|data| {
            let q = text(data);
            let tokens = fts::query_tokens(&q);
            let phrases = fts::query_phrases(&q);
            let _ = fts::identifiers(&q);
            let _ = fts::index_text(&q);
            let snippet = fts::snippet(&q, &tokens, 40);
            assert!(snippet.chars().count() <= q.chars().count().max(41) + 2);
            fingerprint(&(tokens.len().min(8), phrases.len().min(4)))
        });
}

/// Every period the date parser finds can be described and scored against
/// any day, including the calendar's first and last.
#[test]
fn fuzz_date_parser() {
    let days = [
        NaiveDate::from_ymd_opt(2026, 11, 29),
        NaiveDate::from_ymd_opt(2024, 2, 29),
        NaiveDate::from_ymd_opt(1, 1, 1),
        NaiveDate::from_ymd_opt(9999, 12, 31),
    ];
    Fuzz::new("date-parser")
        .seeds([
            "what did we decide on 3 June 2023?",
            "in May 2023, April 27th and 2026-01-31",
            "yesterday, last week, on Monday, 3 days ago",
            "5月2日 五月三日 上周五 2023年5月2日 5월 2일 昨日 지난주 先週の金曜日",
            "le 3 juin, am 3. Juni 2023, el 3 de junio, a giugno, em maio, hier, gestern",
            "vor 3 Tagen, hace 3 días, lundi dernier, am Montag, el lunes pasado",
            "memory/2026-11-29-deploy.md",
        ])
        .dict([
            " ",
            "2023",
            "31",
            "0",
            "99999999",
            "June",
            "juin",
            "Juni",
            "月",
            "日",
            "년",
            "월",
            "일",
            "ago",
            "last",
            "next",
            "week",
            "yesterday",
            "vor",
            "hace",
            "Tagen",
            "días",
            "-",
        ])
        .run(|data| {
            let q = text(data);
            let today = days
                .get(usize::from(data.first().copied().unwrap_or(0)) % days.len())
                .copied()
                .flatten()
                .unwrap_or_default();
            let found = when::dates(&q, today);
            for p in &found.periods {
                assert!(!p.describe().is_empty(), "{p:?} from {q:?}");
            }
            for day in days.iter().flatten() {
                let a = when::affinity(&found.periods, *day, today.max(*day));
                assert!((0.0..=1.0).contains(&a), "affinity {a} for {q:?}");
            }
            let _ = when::date_in_path(&q);
            fingerprint(&(found.periods.len().min(4), found.rest.len() == q.len()))
        });
}

/// The index's session reader: any bytes give messages with sane lines and
/// days, and redaction leaves no secret it recognises.
#[test]
fn fuzz_transcript_reader() {
    Fuzz::new("transcript-reader")
        .seeds([
            concat!(
                "{\"_type\":\"metadata\",\"key\":\"cli:direct\",\"created_at\":\"2026-01-01T00:00:00\",\"metadata\":{},\"last_consolidated\":0}\n",
                "{\"role\":\"user\",\"content\":\"my key is sk-proj-Wm4nQx7Tz1Vb9Lc3Rd8Ke2Jf6Hs0Gp5Y\",\"timestamp\":\"2026-01-01T10:00:00\"}\n",
                "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"exec\",\"arguments\":\"{}\"}}]}\n",
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"name\":\"exec\",\"content\":\"password=hunter2\"}\n",
                "{\"_type\":\"compaction\",\"kind\":\"summary\"}\n",
            ),
            "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"日本語\"}],\"timestamp\":\"2026-13-45\"}\n{torn",
        ])
        .dict(["{", "}", "\"role\":", "\"user\"", "\"content\":", "\"timestamp\":", "\"2026-01-01T", "\n", "null", "[", "]"])
        .run(|data| {
            let doc = text(data);
            let t = crate::fuzzing::check_transcript_reader(&doc, data);
            fingerprint(&(t.messages.len().min(8), t.skipped_lines.min(4), t.key.is_some()))
        });
}
