//! Forget on real files (issue 43 N7, N8, N10): a forgotten fact leaves no
//! copy of its text in the memory files; a forget killed at any step is
//! finished by the next one; a typed memory's long name fits the file
//! system; errors name workspace-relative paths.
//!
//! The crash tests run this test binary again as a child that aborts at a
//! failpoint (`MNEMO_FAILPOINTS`), as `kill -9` would stop it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use chrono::{TimeZone, Utc};
use mnemo_core::Workspace;
use mnemo_store::memory::facts::{AuditRecord, AUDIT_FILE, FACTS_FILE};
use mnemo_store::{FrontMatter, MemorySettings, MemoryStore, MemoryType, SaveMode};

fn store(dir: &Path) -> MemoryStore {
    MemoryStore::new(
        &Workspace::new(dir),
        MemorySettings {
            timezone: "UTC".into(),
            ..MemorySettings::default()
        },
    )
}

/// Every file under `dir` whose bytes hold `needle`, workspace-relative.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                if String::from_utf8_lossy(&bytes).contains(needle) {
                    found.push(p.strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
    }
    found.sort();
    found
}

/// The workspace of the probe's N7: two facts with one text, the second
/// ended by a dream's merge (its diff in the history, its record in the
/// audit log), the text in a daily log and in a session note, and an
/// unrelated fact.
fn leaky_workspace(dir: &Path) -> MemoryStore {
    let s = store(dir);
    std::fs::create_dir_all(dir.join("memory")).unwrap();
    std::fs::write(
        dir.join(FACTS_FILE),
        "# Facts\n\n\
         - The user's locker code is FORGET-FACT-4242. (f1; since 2026-11-01; recorded 2026-11-01 10:00; by cli:direct 0..2)\n\
         - Likes green tea. (f3; since 2026-11-01)\n\
         \n\
         ## No longer true\n\
         \n\
         - ~~The user's locker code is FORGET-FACT-4242~~ (f2; since 2026-11-01; until 2026-11-02; superseded by f1; recorded 2026-11-02 10:00; by cli:direct 2..4)\n",
    )
    .unwrap();
    let now = Utc.with_ymd_and_hms(2026, 11, 3, 9, 0, 0).unwrap();
    s.append_history(
        "[2026-11-03 09:00] [memory/facts.md] dream d1\n\
         --- memory/facts.md\n\
         +++ memory/facts.md\n\
         @@ -3,2 +3,5 @@\n\
         \x20- The user's locker code is FORGET-FACT-4242. (f1; since 2026-11-01; recorded 2026-11-01 10:00; by cli:direct 0..2)\n\
         -- The user's locker code is FORGET-FACT-4242 (f2; since 2026-11-02; recorded 2026-11-02 10:00; by cli:direct 2..4)\n\
         +- Likes green tea. (f3; since 2026-11-01)",
        now,
    )
    .unwrap();
    s.append_history("Talked about tea and the weather.", now)
        .unwrap();
    std::fs::write(
        dir.join("memory/2026-11-01.md"),
        "# 2026-11-01\n\n- [10:00] The user's locker code is FORGET-FACT-4242\n- [10:05] Likes green tea\n",
    )
    .unwrap();
    s.write_session_note(
        now.date_naive(),
        "lockers",
        "# Session: 2026-11-01 10:10:00 UTC\n\n## Conversation Summary\n\n\
         user: The user's locker code is FORGET-FACT-4242\n\nuser: I like green tea\n",
    )
    .unwrap();
    s.append_audit(&[
        AuditRecord::change(
            now,
            "consolidation",
            "add",
            "f1",
            None,
            None,
            Some("The user's locker code is FORGET-FACT-4242."),
        ),
        AuditRecord::change(
            now,
            "dream",
            "merge",
            "f1",
            Some("f2"),
            Some("The user's locker code is FORGET-FACT-4242"),
            Some("The user's locker code is FORGET-FACT-4242."),
        ),
        AuditRecord::change(
            now,
            "consolidation",
            "add",
            "f3",
            None,
            None,
            Some("Likes green tea."),
        ),
    ])
    .unwrap();
    s
}

#[test]
fn a_forgotten_fact_leaves_no_copy_in_the_memory_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = leaky_workspace(dir.path());
    let now = Utc.with_ymd_and_hms(2026, 11, 4, 9, 0, 0).unwrap();
    let removed = s.forget_fact("f1", now).unwrap();
    assert_eq!(removed.id, "f1");
    assert_eq!(
        files_holding(dir.path(), "FORGET-FACT-4242"),
        Vec::<String>::new(),
        "the text survived"
    );
    // The ended duplicate went with it; the other fact stays.
    let facts = s.read_facts().unwrap();
    assert!(facts.get("f2").is_none() && facts.get("f3").is_some());
    // What was said about tea stays, in every file.
    let history = s.read_history().unwrap();
    assert!(history.contains("[forgotten]"), "{history}");
    assert!(history.contains("Likes green tea. (f3"), "{history}");
    assert!(history.contains("Talked about tea"), "{history}");
    let log = s.read_document("memory/2026-11-01.md").unwrap().unwrap();
    assert_eq!(
        log,
        "# 2026-11-01\n\n- [10:00] [forgotten]\n- [10:05] Likes green tea\n"
    );
    let note = s
        .read_document("memory/2026-11-03-lockers.md")
        .unwrap()
        .unwrap();
    assert!(
        note.contains("user: [forgotten]") && note.contains("I like green tea"),
        "{note}"
    );
    // The audit log says what happened to both, without the text.
    let audit = s.read_document(AUDIT_FILE).unwrap().unwrap();
    assert!(audit.contains("Likes green tea."), "{audit}");
    let forgets: Vec<_> = s
        .memory_history("f2")
        .unwrap()
        .into_iter()
        .filter(|r| r.op == "forget")
        .collect();
    assert_eq!(forgets.len(), 1, "{audit}");
}

#[test]
fn a_memory_md_line_saying_the_forgotten_fact_goes_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = leaky_workspace(dir.path());
    s.write_memory_md(
        "# Memory\n\n- The user's locker code is FORGET-FACT-4242\n- Likes hiking.\n- The user's locker code is FORGET-FACT-4242 or 1111\n",
    )
    .unwrap();
    s.forget_fact("f1", Utc::now()).unwrap();
    // The line with the same words goes; from a line that says more, the
    // fact's words go.
    assert_eq!(
        s.read_memory_md().unwrap(),
        "# Memory\n\n- Likes hiking.\n- [forgotten] or 1111\n"
    );
}

#[test]
fn forgetting_the_ended_copy_takes_the_current_one_with_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    let s = leaky_workspace(dir.path());
    let now = Utc.with_ymd_and_hms(2026, 11, 4, 9, 0, 0).unwrap();
    s.forget_fact("f2", now).unwrap();
    assert!(s.read_facts().unwrap().get("f1").is_none());
    assert_eq!(
        files_holding(dir.path(), "FORGET-FACT-4242"),
        Vec::<String>::new()
    );
}

#[test]
fn redaction_takes_whole_words_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(
        dir.path().join(FACTS_FILE),
        "# Facts\n\n- Likes tea a lot. (f1; since 2026-11-01)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("memory/2026-11-01.md"),
        "# 2026-11-01\n\n- Dislikes tea a lot\n- likes tea a lot!\n",
    )
    .unwrap();
    s.forget_fact("f1", Utc::now()).unwrap();
    assert_eq!(
        s.read_document("memory/2026-11-01.md").unwrap().unwrap(),
        "# 2026-11-01\n\n- Dislikes tea a lot\n- [forgotten]!\n"
    );
}

fn front(name: &str) -> FrontMatter {
    FrontMatter {
        name: name.into(),
        description: "a code".into(),
        kind: MemoryType::User,
    }
}

#[test]
fn an_index_line_whose_file_is_gone_is_forgotten_by_name() {
    // What a forget killed between its steps left before issue 43 N8: the
    // file removed, its line in MEMORY.md.
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let saved = s
        .save_typed(front("K12"), "body", SaveMode::Create)
        .unwrap();
    s.remove_document(&saved.memory.path).unwrap();
    assert!(s.read_memory_md().unwrap().contains("[K12]"));
    assert_eq!(s.forget_typed("K12").unwrap(), "memory/k12.md");
    assert!(!s.read_memory_md().unwrap().contains("K12"));
    // Now there is nothing left: not found.
    assert!(matches!(
        s.forget_typed("K12"),
        Err(mnemo_store::Error::NotFound(_))
    ));
    // By its path as well.
    let saved = s
        .save_typed(front("K13"), "body", SaveMode::Create)
        .unwrap();
    s.remove_document(&saved.memory.path).unwrap();
    assert_eq!(s.forget_typed("memory/k13.md").unwrap(), "memory/k13.md");
    assert!(!s.read_memory_md().unwrap().contains("K13"));
}

/// Runs [`child_forget`] in a child process that forgets `what` in `dir`
/// with `MNEMO_FAILPOINTS=point`; true when the failpoint stopped it (a
/// signal, not a failed test).
fn crash_child(dir: &Path, what: &str, point: &str) -> bool {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["child_forget", "--exact", "--nocapture", "--test-threads=1"])
        .env("FORGET_CHILD_DIR", dir)
        .env("FORGET_CHILD_WHAT", what)
        .env("MNEMO_FAILPOINTS", point)
        .output()
        .unwrap();
    let stopped = out.status.code().is_none();
    assert!(
        stopped || !out.status.success(),
        "the child finished: the failpoint {point} was not reached"
    );
    stopped
}

/// The child's half of the crash tests: forget what the parent names.
#[test]
fn child_forget() {
    let (Ok(dir), Ok(what)) = (
        std::env::var("FORGET_CHILD_DIR"),
        std::env::var("FORGET_CHILD_WHAT"),
    ) else {
        return; // run as a test of its own: nothing to do
    };
    let s = store(Path::new(&dir));
    if what == "f1" {
        s.forget_fact(&what, Utc::now()).unwrap();
    } else {
        s.forget_typed(&what).unwrap();
    }
}

#[test]
fn a_typed_forget_killed_midway_is_finished_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let saved = s
        .save_typed(front("Locker"), "code 9137", SaveMode::Create)
        .unwrap();
    let stopped = crash_child(dir.path(), "Locker", "memory.forget_typed_index_removed");
    assert!(stopped, "the child was not stopped at the failpoint");
    // Stopped between the steps: the index line went first, so nothing
    // in the prompt names a memory that is gone.
    assert!(!s.read_memory_md().unwrap().contains("Locker"));
    // The next forget finishes the job.
    assert_eq!(s.forget_typed("Locker").unwrap(), saved.memory.path);
    assert!(!dir.path().join(&saved.memory.path).exists());
    assert_eq!(files_holding(dir.path(), "9137"), Vec::<String>::new());
}

#[test]
fn a_fact_forget_killed_midway_is_finished_by_the_next() {
    for point in ["memory.forget_fact_start", "memory.forget_fact_scrubbed"] {
        let dir = tempfile::tempdir().unwrap();
        let s = leaky_workspace(dir.path());
        assert!(crash_child(dir.path(), "f1", point), "{point}");
        // The fact is still there to be forgotten again.
        assert!(s.read_facts().unwrap().get("f1").is_some(), "{point}");
        s.forget_fact("f1", Utc::now()).unwrap();
        assert_eq!(
            files_holding(dir.path(), "FORGET-FACT-4242"),
            Vec::<String>::new(),
            "{point}"
        );
    }
}

#[test]
fn a_long_name_of_four_byte_characters_fits_the_file_system() {
    // Issue 43 N10: 56 emoji made a file name of 224 bytes, and its temp
    // file's name passed 255.
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    for name in ["\u{1F642}".repeat(56), "\u{20000}".repeat(60)] {
        let saved = s.save_typed(front(&name), "x", SaveMode::Create).unwrap();
        let file = Path::new(&saved.memory.path).file_name().unwrap();
        assert!(file.len() <= 255, "{}", saved.memory.path);
        assert_eq!(
            s.find_typed(&name).unwrap().unwrap().path,
            saved.memory.path
        );
        // A second name with the same first letters gets a file of its own.
        let other = format!("{name} 2");
        let saved2 = s.save_typed(front(&other), "y", SaveMode::Create).unwrap();
        assert_ne!(saved2.memory.path, saved.memory.path);
        s.forget_typed(&name).unwrap();
        s.forget_typed(&other).unwrap();
    }
}

#[test]
fn a_write_error_names_the_workspace_relative_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let long = format!("memory/{}.md", "x".repeat(300));
    let err = s.write_document(&long, "text").unwrap_err().to_string();
    let root = dir.path().display().to_string();
    assert!(!err.contains(&root), "{err}");
    assert!(err.contains("memory/.xxx"), "{err}");
}
