//! Property tests (proptest) of the chunker: the message parts the index
//! stores survive their encoding, and Markdown chunks cover the file's
//! lines in order and hold the text of the lines they name. Random inputs
//! that are not about a property (any bytes, no panic) are the
//! coverage-guided fuzz targets' job (`fuzz/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{Datelike, NaiveDate};
use mnemo_index::chunk::{self, ChunkLimits, MessagePart};
use proptest::prelude::*;

/// Any day chrono can hold, the calendar's ends included.
fn any_day() -> impl Strategy<Value = NaiveDate> {
    let first = NaiveDate::MIN.num_days_from_ce();
    let last = NaiveDate::MAX.num_days_from_ce();
    prop_oneof![
        (first..=last).prop_map(|n| NaiveDate::from_num_days_from_ce_opt(n).unwrap()),
        (700_000..=740_000).prop_map(|n| NaiveDate::from_num_days_from_ce_opt(n).unwrap()),
    ]
}

fn any_part() -> impl Strategy<Value = MessagePart> {
    (
        any::<usize>(),
        any::<usize>(),
        any::<usize>(),
        prop::option::of(any_day()),
    )
        .prop_map(|(ordinal, line, offset, day)| MessagePart {
            ordinal,
            line,
            offset,
            day,
        })
}

/// Markdown-like lines: headings, items, fences, rules, front matter
/// rules, long words, other scripts, blank lines.
fn markdown() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just(String::new()),
        "(#{1,3} )?[A-Za-z ]{0,30}",
        "(- |  - |1\\. |> )\\PC{0,40}",
        Just("```".to_string()),
        Just("---".to_string()),
        Just("===".to_string()),
        "[a-z]{50,200}",
        "\\PC{0,60}",
    ];
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// What `MessagePart::encode` writes, `decode` reads back.
    #[test]
    fn message_parts_encode_and_decode(parts in prop::collection::vec(any_part(), 0..6)) {
        let encoded = MessagePart::encode(&parts);
        prop_assert_eq!(MessagePart::decode(&encoded), parts, "{}", encoded);
    }

    /// Chunks name lines within the file, hold the text of the lines they
    /// name, and leave no line with text out. (Not that they come in line
    /// order: the overlap before a fenced block can open a chunk on a line
    /// before the previous chunk's first.)
    #[test]
    fn markdown_chunks_cover_the_lines_they_name(doc in markdown(), max_tokens in 8usize..128) {
        let count = |s: &str| chunk::estimate_tokens(s);
        let limits = ChunkLimits { max_tokens, overlap_tokens: max_tokens / 4, count: &count };
        let chunks = chunk::chunk_markdown(&doc, &limits);
        let lines: Vec<&str> = doc.lines().collect();
        let mut covered = vec![false; lines.len()];
        for c in &chunks {
            prop_assert!(1 <= c.start_line && c.start_line <= c.end_line && c.end_line <= lines.len(), "chunk {}..{} of {} lines", c.start_line, c.end_line, lines.len());
            let named = lines.get(c.start_line - 1..c.end_line).unwrap_or_default().join("\n");
            // An over-long line is split across chunks: each holds a piece.
            prop_assert!(named.contains(c.text.as_str()), "{:?} is not in lines {}..{}", c.text, c.start_line, c.end_line);
            covered.iter_mut().take(c.end_line).skip(c.start_line - 1).for_each(|l| *l = true);
        }
        for (i, line) in lines.iter().enumerate() {
            prop_assert!(covered[i] || line.trim().is_empty(), "line {} ({:?}) is in no chunk", i + 1, line);
        }
    }
}
