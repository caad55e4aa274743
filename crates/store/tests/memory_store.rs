//! The Markdown memory store on real files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::fs;

use chrono::{TimeZone, Utc};
use mnemo_core::Workspace;
use mnemo_store::{
    Error, FrontMatter, MemorySettings, MemoryStore, MemoryType, SaveAction, SaveMode,
};
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
        .save_typed(
            fm.clone(),
            "Likes green tea.\n\n**Why:** said so twice.\n",
            SaveMode::Create,
        )
        .unwrap()
        .memory;
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
    // Listed (not hidden), with why its front matter is unreadable, and the
    // file is untouched.
    let listed = s.scan_memory_files(200, 30).unwrap();
    let h = listed.iter().find(|h| h.path == "memory/bad.md").unwrap();
    assert!(h.front.is_none() && h.head.contains("name: x"));
    assert!(
        h.front_error
            .as_deref()
            .is_some_and(|e| e.starts_with("line ")),
        "{h:?}"
    );
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

fn typed(name: &str, description: &str) -> FrontMatter {
    FrontMatter {
        name: name.into(),
        description: description.into(),
        kind: MemoryType::User,
    }
}

/// Names are never overwritten unless asked; distinct names never share a
/// file, whatever their script; lookups go by the front matter's name.
#[test]
fn typed_memories_never_overwrite_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    let zhang = s
        .save_typed(
            typed("张三 phone", "张三's number"),
            "138 0000 0000",
            SaveMode::Create,
        )
        .unwrap();
    let li = s
        .save_typed(
            typed("李四 phone", "李四's number"),
            "139 1111 1111",
            SaveMode::Create,
        )
        .unwrap();
    assert_eq!(zhang.memory.path, "memory/张三-phone.md");
    assert_eq!(li.memory.path, "memory/李四-phone.md");
    let allergy = s
        .save_typed(
            typed("过敏", "对花生过敏"),
            "对花生过敏。",
            SaveMode::Create,
        )
        .unwrap();
    assert_eq!(allergy.memory.path, "memory/过敏.md");
    assert!(s
        .read_typed("memory/张三-phone.md")
        .unwrap()
        .body
        .contains("138"));

    // The same name again is refused, and nothing changes.
    let err = s
        .save_typed(typed("张三 Phone", "new"), "000", SaveMode::Create)
        .unwrap_err();
    assert!(matches!(err, Error::Exists(_)), "{err}");
    assert!(err.to_string().contains("--replace"), "{err}");
    assert!(s
        .read_typed("memory/张三-phone.md")
        .unwrap()
        .body
        .contains("138"));
    // Saving exactly what is there (a retry) is fine.
    let again = s
        .save_typed(
            typed("过敏", "对花生过敏"),
            "对花生过敏。\n",
            SaveMode::Create,
        )
        .unwrap();
    assert_eq!(again.action, SaveAction::Unchanged);
    // Replace updates the file of that name.
    let replaced = s
        .save_typed(
            typed("张三 phone", "张三's new number"),
            "137",
            SaveMode::Replace,
        )
        .unwrap();
    assert_eq!(replaced.action, SaveAction::Replaced);
    assert_eq!(replaced.memory.path, "memory/张三-phone.md");
    let memory = s.read_memory_md().unwrap();
    assert!(
        memory.contains("- [张三 phone](memory/张三-phone.md): 张三's new number"),
        "{memory}"
    );
    assert!(
        memory.contains("- [李四 phone](memory/李四-phone.md)"),
        "{memory}"
    );
    assert_eq!(
        memory.matches("memory/张三-phone.md").count(),
        1,
        "{memory}"
    );

    // Names with the same letters, a daily log's date and the history
    // never take another file.
    let tea = s
        .save_typed(typed("Tea", "a"), "a", SaveMode::Create)
        .unwrap();
    let tea2 = s
        .save_typed(typed("tea!", "b"), "b", SaveMode::Create)
        .unwrap();
    assert_eq!(tea.memory.path, "memory/tea.md");
    assert!(
        tea2.memory.path.starts_with("memory/tea-") && tea2.memory.path != tea.memory.path,
        "{}",
        tea2.memory.path
    );
    let day = s
        .save_typed(typed("2026-11-28", "a date"), "x", SaveMode::Create)
        .unwrap();
    assert_ne!(day.memory.path, "memory/2026-11-28.md");
    let history = s
        .save_typed(typed("History", "h"), "x", SaveMode::Create)
        .unwrap();
    assert_ne!(history.memory.path.to_lowercase(), "memory/history.md");

    // Found by its front matter's name, whatever the file is called.
    fs::write(
        dir.path().join("memory/renamed-by-hand.md"),
        "---\nname: Coffee\ndescription: \"espresso\"\ntype: user\n---\n\nEspresso.\n",
    )
    .unwrap();
    assert_eq!(
        s.find_typed("coffee").unwrap().unwrap().path,
        "memory/renamed-by-hand.md"
    );
    assert!(matches!(
        s.save_typed(typed("Coffee", "x"), "x", SaveMode::Create),
        Err(Error::Exists(_))
    ));
    assert_eq!(
        s.forget_typed("Coffee").unwrap(),
        "memory/renamed-by-hand.md"
    );
    // Names that YAML escapes are found too.
    let quoted = typed("Likes \"green\" tea: yes", "q");
    s.save_typed(quoted.clone(), "x", SaveMode::Create).unwrap();
    assert!(matches!(
        s.save_typed(quoted, "y", SaveMode::Create),
        Err(Error::Exists(_))
    ));
}

/// Forget removes typed memories only: the history, daily logs and
/// session notes stay, with an error that says why.
#[test]
fn forget_never_removes_history_daily_logs_or_notes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "UTC");
    let now = Utc.with_ymd_and_hms(2026, 11, 28, 10, 0, 0).unwrap();
    s.append_history("the only copy of the raw archive", now)
        .unwrap();
    s.append_daily("deploy key rotated", now, true).unwrap();
    let note = s
        .write_session_note(s.today(now), "tea", "# Session\n")
        .unwrap();
    for target in [
        "memory/HISTORY.md",
        "HISTORY",
        "2026-11-28",
        "memory/2026-11-28.md",
        note.as_str(),
        "MEMORY.md",
    ] {
        let err = s.forget_typed(target).unwrap_err();
        assert!(
            matches!(err, Error::Refused(_) | Error::NotFound(_)),
            "{target}: {err}"
        );
    }
    let err = s.forget_typed("memory/HISTORY.md").unwrap_err();
    assert!(err.to_string().contains("typed memories only"), "{err}");
    assert_eq!(err.code(), mnemo_core::ErrorCode::Forbidden);
    assert!(s.read_history().unwrap().contains("the only copy"));
    assert!(dir.path().join("memory/2026-11-28.md").exists());
    assert!(dir.path().join(&note).exists());
}

/// Threads of one process each write with their own store: under the
/// memory lock every index line and every section survives.
#[test]
fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let root = root.clone();
            std::thread::spawn(move || {
                let s = store(&root, "UTC");
                for i in 0..10 {
                    s.save_typed(
                        typed(&format!("fact {t}-{i}"), "d"),
                        "body",
                        SaveMode::Create,
                    )
                    .unwrap();
                    s.write_section(&format!("Section {t}-{i}"), "- kept")
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let memory = store(&root, "UTC").read_memory_md().unwrap();
    for t in 0..8 {
        for i in 0..10 {
            assert!(
                memory.contains(&format!("](memory/fact-{t}-{i}.md)")),
                "{t}-{i}"
            );
            assert!(memory.contains(&format!("## Section {t}-{i}\n")), "{t}-{i}");
        }
    }
}
