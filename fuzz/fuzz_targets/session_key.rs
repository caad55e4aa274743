//! The session-key encoding (`mnemo_store::session::file_stem`): any key
//! maps to a file name inside the sessions folder (no separator, no
//! leading dot, no NUL, bounded length) or is refused with an error. Same
//! checks as the `fuzz_session_key` test.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mnemo_store::session::{disambiguated_stem, file_stem};

fuzz_target!(|data: &[u8]| {
    let key = mnemo_fuzz::text(data);
    match file_stem(&key) {
        Ok(stem) => {
            assert!(!stem.is_empty() && stem.len() <= 200, "{stem:?}");
            assert!(
                !stem.contains(['/', '\\', '\0']) && !stem.starts_with('.'),
                "{stem:?}"
            );
            let other = disambiguated_stem(&key).unwrap();
            assert!(other.starts_with(&stem) && other != stem);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
