//! The Markdown memory store on real files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use chrono::{TimeZone, Utc};
use mnemo_core::Workspace;
use mnemo_store::{Error, FrontMatter, MemorySettings, MemoryStore, MemoryType};
use pretty_assertions::assert_eq;

fn store(dir: &std::path::Path, tz: &str) -> MemoryStore {
    MemoryStore::new(
        &Workspace::new(dir),
        MemorySettings {
            timezone: tz.into(),
            ..MemorySettings::default()
        },
    )
}

#[test]
fn every_file_kind_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 21, 30, 0).unwrap();

    // MEMORY.md: atomic rewrite, unchanged content is not rewritten.
    assert!(s.write_memory_md("# Memory\n\n- likes tea\n").unwrap());
    assert!(!s.write_memory_md("# Memory\n\n- likes tea\n").unwrap());
    assert_eq!(s.read_memory_md().unwrap(), "# Memory\n\n- likes tea\n");

    // History: stamped, append-only.
    s.append_history("Talked about tea.", now).unwrap();
    s.append_history("[2026-11-29 22:00] Already stamped.", now)
        .unwrap();
    assert_eq!(
        s.read_history().unwrap(),
        "[2026-11-29 21:30] Talked about tea.\n\n[2026-11-29 22:00] Already stamped.\n\n"
    );

    // Daily log: header once, items, duplicates skipped, headings flattened.
    let a = s
        .append_daily("deploy is on Thursday\n# not a heading", now, true)
        .unwrap();
    assert_eq!((a.written, a.duplicates), (2, 0));
    let b = s
        .append_daily("- Deploy is on Thursday", now, false)
        .unwrap();
    assert_eq!((b.written, b.duplicates), (0, 1));
    let day = s.read_daily(s.today(now)).unwrap().unwrap();
    assert_eq!(day.path, "memory/2026-11-29.md");
    assert_eq!(
        day.text,
        "# 2026-11-29\n\n- [21:30] deploy is on Thursday\n- [21:30] not a heading\n"
    );

    // Session note: never overwritten.
    let p1 = s
        .write_session_note(s.today(now), "Tea Talk!", "# Session\n")
        .unwrap();
    let p2 = s
        .write_session_note(s.today(now), "tea-talk", "# Session 2\n")
        .unwrap();
    assert_eq!(
        (p1.as_str(), p2.as_str()),
        (
            "memory/2026-11-29-tea-talk.md",
            "memory/2026-11-29-tea-talk-2.md"
        )
    );
    assert_eq!(
        fs::read_to_string(dir.path().join(&p1)).unwrap(),
        "# Session\n"
    );

    // Typed memory: front matter plus index line; read back; forget.
    let fm = FrontMatter {
        name: "Tea preference".into(),
        description: "likes green tea, no sugar".into(),
        kind: MemoryType::User,
    };
    let saved = s
        .save_typed(fm.clone(), "Likes green tea.\n\n**Why:** said so twice.\n")
        .unwrap();
    assert_eq!(saved.path, "memory/tea-preference.md");
    let back = s.read_typed(&saved.path).unwrap();
    assert_eq!(back.front, fm);
    assert!(back.body.contains("**Why:**"));
    assert!(s
        .read_memory_md()
        .unwrap()
        .contains("- [Tea preference](memory/tea-preference.md): likes green tea, no sugar"));
    let listed = s.scan_memory_files(200, 30).unwrap();
    assert!(listed
        .iter()
        .any(|h| h.path == "memory/tea-preference.md" && h.front.as_ref() == Some(&fm)));
    s.forget_typed("Tea preference").unwrap();
    assert!(!dir.path().join("memory/tea-preference.md").exists());
    assert!(!s.read_memory_md().unwrap().contains("tea-preference"));
    assert!(matches!(
        s.forget_typed("Tea preference"),
        Err(Error::NotFound(_))
    ));
    assert!(s.forget_typed("../../etc/passwd.md").is_err());
}

#[test]
fn prompt_block_has_capped_memory_and_two_days() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "Asia/Shanghai");
    // 23:30 UTC is already the next day in Shanghai.
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 23, 30, 0).unwrap();
    assert_eq!(s.today(now).to_string(), "2026-11-30");
    let long: String = (0..250).map(|i| format!("- fact {i}\n")).collect();
    s.write_memory_md(&long).unwrap();
    fs::create_dir_all(dir.path().join("memory")).unwrap();
    fs::write(
        dir.path().join("memory/2026-11-30.md"),
        "# 2026-11-30\n\n- today item\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("memory/2026-11-29.md"),
        "# 2026-11-29\n\n- yesterday item\n",
    )
    .unwrap();
    fs::write(dir.path().join("memory/2026-11-28.md"), "- too old\n").unwrap();
    let block = s.render_prompt_block(now).unwrap();
    assert!(block.contains("- fact 199\n") && !block.contains("- fact 200\n"));
    assert!(block.contains("WARNING: MEMORY.md is 250 lines"));
    assert!(
        block.contains("today item")
            && block.contains("yesterday item")
            && !block.contains("too old")
    );
    assert!(block.find("today item").unwrap() < block.find("yesterday item").unwrap());
}

#[test]
fn broken_front_matter_names_file_and_line_and_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    fs::create_dir_all(dir.path().join("memory")).unwrap();
    let text = "---\nname: x\ndescription: y\ntype: wizard\n---\n\nthe body survives\n";
    fs::write(dir.path().join("memory/bad.md"), text).unwrap();
    match s.read_typed("memory/bad.md") {
        Err(Error::Corrupt {
            path,
            line,
            message,
        }) => {
            assert!(path.ends_with("memory/bad.md"));
            assert!(line >= 2, "line {line}: {message}");
        }
        other => panic!("{other:?}"),
    }
    // Listed (not hidden), without front matter, and the file is untouched.
    let listed = s.scan_memory_files(200, 30).unwrap();
    let h = listed.iter().find(|h| h.path == "memory/bad.md").unwrap();
    assert!(h.front.is_none() && h.head.contains("name: x"));
    assert_eq!(
        fs::read_to_string(dir.path().join("memory/bad.md")).unwrap(),
        text
    );
}

#[test]
fn invalid_utf8_memory_is_an_error_naming_the_line_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    let bytes = b"# Memory\n- ok\n- bad \xfe\n".to_vec();
    fs::write(dir.path().join("MEMORY.md"), &bytes).unwrap();
    let err = s.render_memory_md().unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: 3, .. }), "{err}");
    assert!(s.write_memory_md("replacement").is_err());
    assert_eq!(fs::read(dir.path().join("MEMORY.md")).unwrap(), bytes);
}

#[test]
fn bounded_daily_appends_and_bad_timezone() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    let now = Utc::now();
    assert!(s.append_daily(&"x".repeat(5000), now, false).is_err());
    assert!(s.append_daily("   ", now, false).is_err());
    assert!(store(dir.path(), "Mars/Olympus").validate().is_err());
    assert!(store(dir.path(), "Europe/Paris").validate().is_ok());
}
