//! The Markdown chunker and block splitter (`mnemo_index::chunk`) on any
//! text: the checks of `mnemo_index::fuzzing::check_markdown_chunker`,
//! which the `fuzz_markdown_chunker` test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let doc = mnemo_fuzz::text(data);
    mnemo_index::fuzzing::check_markdown_chunker(&doc, data);
});
