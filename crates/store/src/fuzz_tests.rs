//! Quick fuzz passes of the store's readers of user text, run by
//! `mnemo_test_support::fuzz` inside `cargo test` (the budget comes from
//! `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`): the JSONL session reader and
//! the daily-log item normaliser (with real appends). Every target checks
//! what must hold for any input, not only that it returns. The long,
//! coverage-guided runs of the same checks are the targets in `fuzz/`; the
//! front matter's and the session keys' properties are proptest tests
//! (`tests/properties.rs`).

use std::path::Path;

use chrono::{TimeZone, Utc};
use mnemo_core::Workspace;
use mnemo_test_support::fuzz::{fingerprint, text, Fuzz};

use crate::memory::{self, cap_memory, sanitize_slug, MemorySettings};
use crate::session::{parse_session_bytes, replay, WarningKind};

/// Any bytes load: complete lines are messages, records or warnings, a
/// partial last line is a torn tail, and the replay keeps the invariants
/// a model needs (it never opens with a tool result).
#[test]
fn fuzz_session_reader() {
    Fuzz::new("session-reader")
        .seeds([
            concat!(
                "{\"_type\":\"metadata\",\"key\":\"telegram:123\",\"created_at\":\"2026-01-01T00:00:00\",\"updated_at\":\"2026-01-01T00:00:00\",\"metadata\":{},\"last_consolidated\":1}\n",
                "{\"role\":\"user\",\"content\":\"hello\",\"timestamp\":\"2026-01-01T10:00:00\"}\n",
                "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"exec\",\"arguments\":\"{}\"}}]}\n",
                "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"name\":\"exec\",\"content\":\"ok\"}\n",
                "{\"_type\":\"compaction\",\"kind\":\"summary\",\"summary\":\"s\"}\n",
                "{\"_type\":\"custom\",\"x\":1}\n",
                "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"über\"}]}\n",
                "{\"role\":\"user\",\"content\":\"torn",
            ),
            "\n\n\u{feff}{}\n[1,2]\n\"x\"\n",
        ])
        .dict([
            "{", "}", "\n", "\"role\":", "\"user\"", "\"assistant\"", "\"tool\"", "\"system\"",
            "\"content\":", "\"_type\":", "\"metadata\"", "\"last_consolidated\":", "\"tool_calls\":",
            "\"tool_call_id\":", "\"timestamp\":", "null", "[]", "18446744073709551615",
        ])
        .max_len(16 * 1024)
        .run(|data| {
            let loaded = parse_session_bytes(Path::new("sessions/cli_direct.jsonl"), data);
            let lines = data.split(|b| *b == b'\n').count();
            for w in &loaded.warnings {
                assert!(w.line >= 1 && w.line <= lines, "{w:?}");
            }
            let replayed = replay(&loaded.messages, loaded.meta.last_consolidated);
            if let Some(first) = replayed.first() {
                assert_eq!(first.role.as_str(), "user", "a replay opens with a user message");
            }
            for m in &loaded.messages {
                // What was read can be written again.
                assert!(serde_json::to_vec(m).is_ok());
            }
            let kinds = |k: WarningKind| loaded.warnings.iter().filter(|w| w.kind == k).count().min(3);
            fingerprint(&(
                loaded.messages.len().min(8),
                replayed.len().min(8),
                kinds(WarningKind::Malformed),
                kinds(WarningKind::InvalidUtf8),
                kinds(WarningKind::TornTail),
                loaded.metadata_records.min(3),
            ))
        });
}

/// The daily-log helpers on any text, and real appends to a daily log that
/// holds any text: never a panic, and an item just written is a duplicate
/// when written again.
#[test]
fn fuzz_daily_log_items() {
    let dir = tempfile::tempdir().unwrap();
    let store = memory::MemoryStore::new(
        &Workspace::new(dir.path()),
        MemorySettings {
            timezone: "UTC".into(),
            ..MemorySettings::default()
        },
    );
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 9, 30, 0).unwrap();
    let log = dir.path().join("memory/2026-11-29.md");
    let mut n = 0u64;
    Fuzz::new("daily-log-items")
        .seeds([
            "- [09:00] über wichtig",
            "[12:34]éx",
            "# 2026-11-29\n\n- [09:00] a\n[09:01]日本語\n- x\n",
            "[2026-11-29 22:00] stamped history entry",
            "- [",
        ])
        .dict([
            "[",
            "]",
            ":",
            "- ",
            "# ",
            "[09:00]",
            "[2026-11-29 22:00]",
            "\n",
            "é",
            "日",
        ])
        .run(|data| {
            let line = text(data);
            let key = memory::normalise_item(&line);
            assert_eq!(key, key.trim(), "keys are trimmed");
            let _ = memory::has_stamp(&line);
            let slug = sanitize_slug(&line);
            assert!(
                slug.len() <= 60
                    && slug
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
            let capped = cap_memory(&line, 3, 64);
            assert!(capped.text.len() <= line.len() + 400);
            let _ = memory::tail_within(&line, usize::from(data.first().copied().unwrap_or(8)));
            n += 1;
            if n.is_multiple_of(8) {
                // The same text as the log's content, then as an append.
                std::fs::create_dir_all(log.parent().unwrap()).unwrap();
                std::fs::write(&log, data).unwrap();
                match store.append_daily(&line, now, true) {
                    Ok(out) if out.written > 0 => {
                        let again = store.append_daily(&line, now, true).unwrap();
                        assert_eq!(again.written, 0, "{line:?} was logged twice");
                    }
                    Ok(_) | Err(crate::Error::Invalid(_)) => {}
                    // Invalid UTF-8 in the existing log is reported, not a
                    // reason to panic.
                    Err(crate::Error::Corrupt { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
            fingerprint(&(key.is_empty(), slug.is_empty(), capped.truncated))
        });
}
