//! Property tests (proptest) of the store's round trips: front matter
//! rendered and read back, session keys mapped to safe file names, messages
//! appended to a session log and loaded back, and a daily-log item that is
//! a duplicate once written. Random inputs that are not about a property
//! (any bytes, no panic) are the coverage-guided fuzz targets' job
//! (`fuzz/`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{TimeZone, Utc};
use mnemo_core::{Message, Workspace};
use mnemo_store::memory::{render_front_matter, split_front_matter};
use mnemo_store::session::{disambiguated_stem, file_stem};
use mnemo_store::{FrontMatter, MemorySettings, MemoryStore, MemoryType, SessionStore};
use proptest::prelude::*;

/// Text of every kind a user or a model writes: ASCII with the characters
/// YAML and Markdown care about, the characters YAML reads as line breaks
/// or refuses (NEL, LS, PS, DEL, C1 controls, BOM, noncharacters), other
/// scripts, emoji, controls.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,40}",
        "[a-z:#\\-\"'\\[\\]{}&*!|>%@` ]{0,30}",
        "[a-z \\x{7f}-\\x{9f}\\x{2028}\\x{2029}\\x{feff}\\x{fffe}\\x{ffff}]{0,20}",
        "\\PC{0,30}",
        any::<String>(),
    ]
}

fn memory_type() -> impl Strategy<Value = MemoryType> {
    prop_oneof![
        Just(MemoryType::User),
        Just(MemoryType::Feedback),
        Just(MemoryType::Project),
        Just(MemoryType::Reference),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Front matter renders and parses back to the same fields, and the
    /// body read back is the body written (without trailing whitespace).
    #[test]
    fn front_matter_renders_and_reads_back(
        name in any_text(),
        description in any_text().prop_filter("one line", |d| !d.contains(['\n', '\r'])),
        kind in memory_type(),
        body in any_text(),
    ) {
        let fm = FrontMatter { name, description, kind };
        let file = render_front_matter(&fm, &body);
        let (parsed, read_body) = split_front_matter(&file);
        prop_assert_eq!(parsed, Some(Ok(fm)), "{:?}", file);
        prop_assert_eq!(read_body.trim(), body.trim());
    }

    /// Whatever the text, the body `split_front_matter` returns is the end
    /// of the file.
    #[test]
    fn the_body_is_the_end_of_the_file(text in any_text(), head in "(---\r?\n)?") {
        let doc = format!("{head}{text}");
        let (_, body) = split_front_matter(&doc);
        prop_assert!(doc.ends_with(body));
    }

    /// Any key maps to a file name inside the sessions folder (no
    /// separator, no leading dot, no NUL, bounded length), distinct from
    /// its disambiguated form, or is refused with a message.
    #[test]
    fn session_keys_map_to_safe_file_names(key in any_text()) {
        match file_stem(&key) {
            Ok(stem) => {
                prop_assert!(!stem.is_empty() && stem.len() <= 200, "{:?}", stem);
                prop_assert!(!stem.contains(['/', '\\', '\0']) && !stem.starts_with('.'), "{:?}", stem);
                let other = disambiguated_stem(&key).unwrap();
                prop_assert!(other.starts_with(&stem) && other != stem);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

proptest! {
    // Each case writes real files: fewer of them.
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Messages appended to a session log load back as written.
    #[test]
    fn appended_messages_load_back(texts in prop::collection::vec(any_text(), 1..6)) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(&Workspace::new(dir.path()), Default::default());
        let messages: Vec<Message> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let m = if i % 2 == 0 { Message::user(t.as_str()) } else { Message::assistant(t.as_str()) };
                m.with_timestamp("2026-11-29T09:30:00")
            })
            .collect();
        let stored = store.open("cli:direct").unwrap().append(&messages).unwrap();
        prop_assert_eq!(&stored, &messages);
        let loaded = store.load("cli:direct").unwrap();
        prop_assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        prop_assert_eq!(loaded.messages, messages);
    }

    /// Appending an item to the daily log is idempotent: written once, the
    /// same text is a duplicate the second time.
    #[test]
    fn a_daily_item_is_written_once(existing in any_text(), item in any_text()) {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(
            &Workspace::new(dir.path()),
            MemorySettings { timezone: "UTC".into(), ..MemorySettings::default() },
        );
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 9, 30, 0).unwrap();
        std::fs::create_dir_all(dir.path().join("memory")).unwrap();
        std::fs::write(dir.path().join("memory/2026-11-29.md"), &existing).unwrap();
        if let Ok(first) = store.append_daily(&item, now, true) {
            let again = store.append_daily(&item, now, true).unwrap();
            prop_assert_eq!(again.written, 0, "{:?} was logged twice ({} the first time)", item, first.written);
        }
    }
}
