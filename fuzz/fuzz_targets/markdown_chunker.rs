//! The Markdown chunker and block splitter (`mnemo_index::chunk`) on any
//! text: chunks cover the file's lines in order, within its line count;
//! block parts lie inside the chunk's text on character boundaries and
//! survive their encoding. Same checks as the `fuzz_markdown_chunker` test.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_index::chunk::{self, ChunkLimits, MessagePart};

fuzz_target!(|data: &[u8]| {
    let doc = mnemo_fuzz::text(data);
    let max_tokens = 8 + usize::from(data.first().copied().unwrap_or(0) % 120);
    let count = |s: &str| chunk::estimate_tokens(s);
    let limits = ChunkLimits {
        max_tokens,
        overlap_tokens: max_tokens / 4,
        count: &count,
    };
    let chunks = chunk::chunk_markdown(&doc, &limits);
    let lines = doc.lines().count().max(1);
    for c in &chunks {
        assert!(
            1 <= c.start_line && c.start_line <= c.end_line && c.end_line <= lines,
            "chunk {}..{} of {lines} lines",
            c.start_line,
            c.end_line
        );
        let parts = chunk::markdown_parts(&c.text, c.start_line);
        for i in 0..parts.len() {
            let _ = MessagePart::text_of(&parts, i, &c.text);
        }
        for p in &parts {
            assert!(p.offset <= c.text.len() && c.text.is_char_boundary(p.offset));
        }
        assert_eq!(MessagePart::decode(&MessagePart::encode(&parts)), parts);
    }
    let _ = chunk::front_matter(&doc);
});
