//! Hostile workspaces and hostile input: no panic on text of any script, no
//! read or write through a link that leaves the workspace (or the memory
//! files), no hang on a FIFO, no slow parse of pathological front matter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use chrono::{TimeZone, Utc};
use mnemo_core::{Message, Workspace};
use mnemo_store::{
    Error, FrontMatter, MemorySettings, MemoryStore, MemoryType, SaveMode, SessionOptions,
    SessionStore,
};

fn store(dir: &Path) -> MemoryStore {
    MemoryStore::new(
        &Workspace::new(dir),
        MemorySettings {
            timezone: "UTC".into(),
            ..MemorySettings::default()
        },
    )
}

fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 9, 30, 0).unwrap()
}

/// `mnemo log "[12:34]éx"`: the stamp check must not slice inside `é`.
#[test]
fn a_stamp_followed_by_any_character_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let out = s.append_daily("[12:34]éx", now(), true).unwrap();
    assert_eq!(out.written, 1);
    let again = s.append_daily("[12:34]éx", now(), true).unwrap();
    assert_eq!((again.written, again.duplicates), (0, 1));
    // A text with a bullet of its own is written "- [09:30] - x": the same
    // text again is still a duplicate (found by fuzz_daily_log_items).
    assert_eq!(s.append_daily("- - x", now(), true).unwrap().written, 1);
    assert_eq!(s.append_daily("- - x", now(), true).unwrap().duplicates, 1);
}

/// A hand-edited (or imported) line like `[09:00]über wichtig` in today's
/// log must not break every later append.
#[test]
fn a_hand_edited_daily_log_does_not_break_appends() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    fs::create_dir_all(dir.path().join("memory")).unwrap();
    fs::write(
        dir.path().join("memory/2026-11-29.md"),
        "# 2026-11-29\n\n[09:00]über wichtig\n- [09:01]日本語のメモ\n[1]\n",
    )
    .unwrap();
    let out = s
        .append_daily("Über wichtig\nsomething new", now(), true)
        .unwrap();
    assert_eq!((out.written, out.duplicates), (1, 1));
    let text = s.read_daily(s.today(now())).unwrap().unwrap().text;
    assert!(text.ends_with("- [09:30] something new\n"), "{text}");
}

/// A session key over 4,096 bytes whose 64th byte falls inside a character
/// is refused with a clear error, not a panic.
#[test]
fn an_overlong_key_is_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = SessionStore::new(&Workspace::new(dir.path()), SessionOptions::default());
    let key = format!("x{}", "é".repeat(2100));
    match sessions.open(&key) {
        Err(Error::BadKey { reason, .. }) => assert!(reason.contains("4096"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[cfg(unix)]
mod links {
    use super::*;
    use std::os::unix::fs::symlink;

    fn forbidden<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
        match r {
            Err(e @ Error::Path(_)) => e.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn typed(name: &str) -> FrontMatter {
        FrontMatter {
            name: name.into(),
            description: "d".into(),
            kind: MemoryType::User,
        }
    }

    /// Today's log linked outside: the append is refused and nothing is
    /// written there; reading it is refused the same way.
    #[test]
    fn daily_log_linked_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        fs::create_dir_all(dir.path().join("memory")).unwrap();
        let target = outside.path().join("victim.md");
        fs::write(&target, "keep\n").unwrap();
        symlink(&target, dir.path().join("memory/2026-11-29.md")).unwrap();
        let msg = forbidden(s.append_daily("note", now(), true));
        assert!(msg.contains("memory/2026-11-29.md"), "{msg}");
        forbidden(s.read_daily(s.today(now())));
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
        // A link that does not lead anywhere yet would create its target.
        fs::remove_file(dir.path().join("memory/2026-11-29.md")).unwrap();
        let fresh = outside.path().join("created.md");
        symlink(&fresh, dir.path().join("memory/2026-11-29.md")).unwrap();
        forbidden(s.append_daily("note", now(), true));
        assert!(!fresh.exists());
    }

    /// `memory/` linked outside: no daily write, no typed memory, no note,
    /// no history, and the scan does not read it.
    #[test]
    fn memory_folder_linked_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        fs::write(outside.path().join("secret.md"), "secret").unwrap();
        symlink(outside.path(), dir.path().join("memory")).unwrap();
        forbidden(s.append_daily("note", now(), true));
        forbidden(s.save_typed(typed("Tea"), "body", SaveMode::Create));
        forbidden(s.append_history("entry", now()));
        forbidden(s.write_session_note(s.today(now()), "x", "note"));
        forbidden(s.scan_memory_files(10, 3));
        let names: Vec<_> = fs::read_dir(outside.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "only secret.md is there");
    }

    /// MEMORY.md linked outside is never read into a prompt nor written.
    #[test]
    fn memory_md_linked_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let target = outside.path().join("MEMORY.md");
        fs::write(&target, "outside facts\n").unwrap();
        symlink(&target, dir.path().join("MEMORY.md")).unwrap();
        forbidden(s.read_memory_md());
        forbidden(s.render_prompt_block(now()));
        forbidden(s.save_typed(typed("Tea"), "body", SaveMode::Create));
        forbidden(s.write_memory_md("new\n"));
        assert_eq!(fs::read_to_string(&target).unwrap(), "outside facts\n");
    }

    /// Inside the workspace, a memory file may not be a link to another kind
    /// of file: mnemo.toml (API keys) or a session log.
    #[test]
    fn memory_links_to_other_workspace_files() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let root = dir.path();
        fs::create_dir_all(root.join("memory")).unwrap();
        fs::write(
            root.join("mnemo.toml"),
            "[provider]\napi_key = \"sk-secret\"\n",
        )
        .unwrap();
        symlink(root.join("mnemo.toml"), root.join("MEMORY.md")).unwrap();
        let msg = forbidden(s.read_memory_md());
        assert!(msg.contains("mnemo.toml"), "{msg}");
        forbidden(s.write_memory_md("x"));
        assert!(fs::read_to_string(root.join("mnemo.toml"))
            .unwrap()
            .contains("sk-secret"));
        // A link within the memory files is followed both ways, and a write
        // keeps the link.
        fs::remove_file(root.join("MEMORY.md")).unwrap();
        fs::write(root.join("memory/core.md"), "core\n").unwrap();
        symlink(root.join("memory/core.md"), root.join("MEMORY.md")).unwrap();
        assert_eq!(s.read_memory_md().unwrap(), "core\n");
        s.write_memory_md("core, edited\n").unwrap();
        assert!(root
            .join("MEMORY.md")
            .symlink_metadata()
            .unwrap()
            .is_symlink());
        assert_eq!(
            fs::read_to_string(root.join("memory/core.md")).unwrap(),
            "core, edited\n"
        );
    }

    /// A session log (or `sessions/`) linked outside: appends and loads are
    /// refused, and the outside file is untouched.
    #[test]
    fn session_log_linked_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        let sessions = SessionStore::new(&ws, SessionOptions::default());
        fs::create_dir_all(dir.path().join("sessions")).unwrap();
        let target = outside.path().join("victim.jsonl");
        fs::write(&target, "").unwrap();
        symlink(&target, dir.path().join("sessions/cli_direct.jsonl")).unwrap();
        forbidden(sessions.open("cli:direct"));
        forbidden(sessions.load("cli:direct"));
        forbidden(sessions.list());
        assert_eq!(fs::read_to_string(&target).unwrap(), "");

        let dir2 = tempfile::tempdir().unwrap();
        symlink(outside.path(), dir2.path().join("sessions")).unwrap();
        let sessions = SessionStore::new(&Workspace::new(dir2.path()), SessionOptions::default());
        match sessions.open("cli:direct") {
            Err(Error::Path(_)) => {}
            Ok(mut log) => {
                let r = log.append(&[Message::user("hello")]);
                assert!(r.is_err(), "appended outside the workspace");
            }
            Err(other) => panic!("{other:?}"),
        }
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
    }
}

/// A FIFO named like today's log, or like a memory file, must not hang a
/// read, an append or the memory scan.
#[cfg(unix)]
#[test]
fn a_fifo_in_memory_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("memory")).unwrap();
    for name in ["memory/2026-11-29.md", "memory/pipe.md"] {
        let c = std::ffi::CString::new(dir.path().join(name).to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }
    let root = dir.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let s = store(&root);
        let read = s.read_daily(s.today(now())).map(|_| ());
        let append = s.append_daily("x", now(), true).map(|_| ());
        let scan = s.scan_memory_files(10, 3).map(|f| f.len());
        let _ = tx.send((read, append, scan));
    });
    let (read, append, scan) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a FIFO in memory/ hung the store");
    assert!(read.is_err() && append.is_err(), "{read:?} {append:?}");
    assert_eq!(scan.unwrap(), 0, "FIFOs are not memory files");
}

/// Front matter nested thousands deep is refused before parsing: the scan
/// lists the file as broken and goes on.
#[test]
fn deeply_nested_front_matter_is_listed_as_broken() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    fs::create_dir_all(dir.path().join("memory")).unwrap();
    let deep = format!(
        "---\nname: {}x{}\ntype: user\n---\nbody\n",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    fs::write(dir.path().join("memory/deep.md"), &deep).unwrap();
    s.save_typed(
        FrontMatter {
            name: "Tea".into(),
            description: "d".into(),
            kind: MemoryType::User,
        },
        "green",
        SaveMode::Create,
    )
    .unwrap();
    let files = s.scan_memory_files(10, 2).unwrap();
    assert_eq!(files.len(), 2);
    let deep = files.iter().find(|f| f.path == "memory/deep.md").unwrap();
    assert!(deep.front.is_none());
    match s.read_typed("memory/deep.md") {
        Err(Error::Corrupt { message, .. }) => {
            assert!(message.contains("levels deep"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}
