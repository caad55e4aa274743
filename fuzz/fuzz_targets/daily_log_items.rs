//! The daily-log helpers of `mnemo_store::memory` on any text, and real
//! appends (`MemoryStore::append_daily`) to a daily log that holds any
//! text: never a panic, and an item just written is a duplicate when
//! written again. Same checks as the `fuzz_daily_log_items` test.
#![no_main]

use std::cell::Cell;
use std::path::PathBuf;
use std::sync::LazyLock;

use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use mnemo_core::Workspace;
use mnemo_store::memory::{self, cap_memory, sanitize_slug, MemorySettings, MemoryStore};

struct Log {
    store: MemoryStore,
    path: PathBuf,
    now: DateTime<Utc>,
}

// One workspace for the whole run (in scripts/fuzz.sh's TMPDIR).
static LOG: LazyLock<Log> = LazyLock::new(|| {
    let dir = tempfile::Builder::new()
        .prefix("mnemo-fuzz-")
        .tempdir()
        .unwrap()
        .keep();
    let store = MemoryStore::new(
        &Workspace::new(&dir),
        MemorySettings {
            timezone: "UTC".into(),
            ..MemorySettings::default()
        },
    );
    let path = dir.join("memory/2026-11-29.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    Log {
        store,
        path,
        now: Utc.with_ymd_and_hms(2026, 11, 29, 9, 30, 0).unwrap(),
    }
});

thread_local! {
    static RUNS: Cell<u64> = const { Cell::new(0) };
}

fuzz_target!(|data: &[u8]| {
    let line = mnemo_fuzz::text(data);
    let key = memory::normalise_item(&line);
    assert_eq!(key, key.trim(), "keys are trimmed");
    let _ = memory::has_stamp(&line);
    let slug = sanitize_slug(&line);
    assert!(
        slug.len() <= 60
            && slug
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
        "{slug:?}"
    );
    let capped = cap_memory(&line, 3, 64);
    assert!(capped.text.len() <= line.len() + 400);
    let _ = memory::tail_within(&line, usize::from(data.first().copied().unwrap_or(8)));
    // Every eighth input, as the test does: the disk is slow next to the
    // helpers, and the helpers are where most of the branches are.
    let n = RUNS.with(|r| {
        r.set(r.get() + 1);
        r.get()
    });
    if n % 8 == 0 {
        let log = &*LOG;
        // The same text as the log's content, then as an append.
        std::fs::write(&log.path, data).unwrap();
        match log.store.append_daily(&line, log.now, true) {
            Ok(out) if out.written > 0 => {
                let again = log.store.append_daily(&line, log.now, true).unwrap();
                assert_eq!(again.written, 0, "{line:?} was logged twice");
            }
            Ok(_) | Err(mnemo_store::Error::Invalid(_)) => {}
            // Invalid UTF-8 in the existing log is reported, not a reason
            // to panic.
            Err(mnemo_store::Error::Corrupt { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
});
