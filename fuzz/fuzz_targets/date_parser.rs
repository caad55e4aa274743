//! The date parser (`mnemo_index`'s `dates`) on any query: every period it
//! finds can be described and scored against any day, including the
//! calendar's first and last. Same checks as the `fuzz_date_parser` test.
#![no_main]

use chrono::NaiveDate;
use libfuzzer_sys::fuzz_target;
use mnemo_index::fuzzing::{affinity, date_in_path, dates};

fuzz_target!(|data: &[u8]| {
    let days = [
        NaiveDate::from_ymd_opt(2026, 11, 29),
        NaiveDate::from_ymd_opt(2024, 2, 29),
        NaiveDate::from_ymd_opt(1, 1, 1),
        NaiveDate::from_ymd_opt(9999, 12, 31),
    ];
    let q = mnemo_fuzz::text(data);
    let today = days
        .get(usize::from(data.first().copied().unwrap_or(0)) % days.len())
        .copied()
        .flatten()
        .unwrap_or_default();
    let found = dates(&q, today);
    for p in &found.periods {
        assert!(!p.describe().is_empty(), "{p:?} from {q:?}");
    }
    for day in days.iter().flatten() {
        let a = affinity(&found.periods, *day, today.max(*day));
        assert!((0.0..=1.0).contains(&a), "affinity {a} for {q:?}");
    }
    let _ = date_in_path(&q);
});
