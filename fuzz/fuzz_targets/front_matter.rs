//! The front-matter parser (`mnemo_store::memory::split_front_matter`) on
//! any text: the body is a suffix of the file, and what parses renders and
//! parses back to the same fields. Same checks as the `fuzz_front_matter`
//! test.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_store::memory::{render_front_matter, split_front_matter};

fuzz_target!(|data: &[u8]| {
    let doc = mnemo_fuzz::text(data);
    let (front, body) = split_front_matter(&doc);
    assert!(doc.ends_with(body), "the body is the end of the file");
    if let Some(Ok(fm)) = &front {
        if !fm.description.contains('\n') {
            let again = render_front_matter(fm, body);
            let (parsed, _) = split_front_matter(&again);
            match parsed {
                Some(Ok(back)) => assert_eq!(&back, fm),
                other => panic!("rendered {again:?} reads back as {other:?}"),
            }
        }
    }
});
