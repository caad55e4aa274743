//! The index's session reader and the secret redaction on any bytes: the
//! checks of `mnemo_index::fuzzing::check_transcript_reader`, which the
//! `fuzz_transcript_reader` test runs too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let doc = mnemo_fuzz::text(data);
    mnemo_index::fuzzing::check_transcript_reader(&doc, data);
});
