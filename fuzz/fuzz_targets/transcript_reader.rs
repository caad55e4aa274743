//! The index's session reader (`mnemo_index`'s transcript `parse`) and the
//! secret redaction on any bytes: messages with sane lines and days, chunks
//! whose parts read, and no secret left that a rule recognises. Same checks
//! as the `fuzz_transcript_reader` test.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_index::chunk::{self, ChunkLimits, MessagePart};
use mnemo_index::fuzzing::parse_transcript;

const KEY: &str = "sk-proj-Wm4nQx7Tz1Vb9Lc3Rd8Ke2Jf6Hs0Gp5Y";

/// The seed's key is gone from `text` wherever it stands as a word of its
/// own: glued to ASCII letters or digits ("Tsk-proj-…") it is another
/// word, which no rule can tell from an identifier.
fn assert_no_key(text: &str) {
    for (at, _) in text.match_indices(KEY) {
        let before = text.get(..at).and_then(|b| b.bytes().last());
        assert!(
            before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "a key survived redaction at byte {at}: {text:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let doc = mnemo_fuzz::text(data);
    let include_tools = data.first().is_some_and(|b| b & 1 == 1);
    let t = parse_transcript(&doc, include_tools, true);
    let lines = doc.lines().count();
    for m in &t.messages {
        assert!(m.line >= 1 && m.line <= lines.max(1), "{m:?}");
        assert_no_key(&m.text);
    }
    if !t.messages.is_empty() {
        let _ = t.days_between(0, t.messages.len() + 3);
        let count = |s: &str| chunk::estimate_tokens(s);
        let limits = ChunkLimits {
            max_tokens: 32,
            overlap_tokens: 8,
            count: &count,
        };
        for c in chunk::chunk_transcript(&t.messages, &limits) {
            for i in 0..c.parts.len() {
                let _ = MessagePart::text_of(&c.parts, i, &c.text);
            }
        }
    }
    assert_no_key(&mnemo_core::redact::redact(&doc));
});
