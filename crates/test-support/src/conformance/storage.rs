//! The [`Storage`] conformance suite: what every place a workspace's truth
//! is kept must do, checked through the stores that use it
//! ([`SessionStore`], [`MemoryStore`]) as well as on the trait itself:
//! documents and their versions, compare-and-swap, appends from many
//! threads, session logs appended and replayed (cursor, compaction
//! records, malformed lines, tool-result files), MEMORY.md's caps, typed
//! memories, the history and the daily logs.
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.
// A test suite: a failed storage call is a failed scenario, and the
// unwrap's panic names the call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use chrono::{TimeZone, Utc};
use mnemo_core::{Message, Workspace};
use mnemo_store::session::{CompactionRecord, Record, WarningKind};
use mnemo_store::{
    Error, Expect, FrontMatter, MemorySettings, MemoryStore, MemoryType, SaveMode, SessionOptions,
    SessionStore, SharedStorage,
};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "documents_round_trip_with_versions",
    "a_stale_version_is_a_conflict_and_writes_nothing",
    "appends_from_many_threads_never_interleave",
    "documents_are_listed_by_folder",
    "a_session_replays_what_was_appended",
    "concurrent_session_appends_never_collide",
    "malformed_lines_are_reported_and_kept",
    "oversized_tool_results_become_documents",
    "memory_md_edits_from_many_threads_all_land",
    "memory_md_is_capped_in_the_prompt",
    "typed_memories_are_saved_found_and_forgotten",
    "history_and_daily_logs_only_grow",
    "the_whole_workspace_reads_back_for_an_export",
    "a_named_lock_has_one_holder",
    "state_documents_are_kept_apart_from_memory",
];

/// One storage under test: a fresh, empty workspace. `workspace` is the
/// folder for derived state the stores are given; `_keep` holds whatever
/// must outlive the case (a temporary folder, a database's rows to drop).
pub struct StorageCase {
    /// The storage.
    pub storage: SharedStorage,
    /// The workspace folder the stores are opened with.
    pub workspace: Workspace,
    /// Kept alive as long as the case.
    pub _keep: Box<dyn std::any::Any>,
}

impl std::fmt::Debug for StorageCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageCase").finish_non_exhaustive()
    }
}

impl StorageCase {
    fn sessions(&self) -> SessionStore {
        SessionStore::with_storage(self.storage.clone(), SessionOptions::default())
    }

    fn memory(&self, settings: MemorySettings) -> MemoryStore {
        MemoryStore::with_storage(&self.workspace, settings, self.storage.clone())
    }
}

/// Generates one `#[test]` per scenario of the [`Storage`] suite, in a
/// module named `$name`, for the case `$make` builds; each test gets a
/// fresh, empty workspace.
///
/// [`Storage`]: mnemo_store::Storage
#[macro_export]
macro_rules! storage_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::storage as suite;

            fn make_case() -> ::std::option::Option<suite::StorageCase> {
                $crate::conformance::IntoCase::into_case(($make)())
            }

            $crate::storage_suite!(@tests
                documents_round_trip_with_versions,
                a_stale_version_is_a_conflict_and_writes_nothing,
                appends_from_many_threads_never_interleave,
                documents_are_listed_by_folder,
                a_session_replays_what_was_appended,
                concurrent_session_appends_never_collide,
                malformed_lines_are_reported_and_kept,
                oversized_tool_results_become_documents,
                memory_md_edits_from_many_threads_all_land,
                memory_md_is_capped_in_the_prompt,
                typed_memories_are_saved_found_and_forgotten,
                history_and_daily_logs_only_grow,
                the_whole_workspace_reads_back_for_an_export,
                a_named_lock_has_one_holder,
                state_documents_are_kept_apart_from_memory
            );
        }
    };
    (@tests $($scenario:ident),*) => {
        $(
            #[test]
            fn $scenario() {
                if let Some(case) = make_case() {
                    suite::$scenario(&case);
                }
            }
        )*
        #[test]
        fn suite_is_complete() {
            $crate::conformance::assert_covers(
                "storage",
                suite::SCENARIOS,
                &[$(stringify!($scenario)),*],
            );
        }
    };
}

fn user(text: &str) -> Message {
    Message::user(text)
}

/// A document reads back as written; its version changes with each write.
pub fn documents_round_trip_with_versions(case: &StorageCase) {
    let s = &*case.storage;
    assert!(s.read("MEMORY.md").unwrap().is_none());
    assert!(!s.exists("MEMORY.md").unwrap());
    let v1 = s.write("MEMORY.md", "# Memory\n", Expect::Absent).unwrap();
    let doc = s.read("MEMORY.md").unwrap().unwrap();
    assert_eq!(doc.text, "# Memory\n");
    assert_eq!(doc.version, v1);
    let v2 = s
        .write("MEMORY.md", "# Memory\n- café ☕\n", Expect::Any)
        .unwrap();
    assert_ne!(v1, v2, "a write must change the version");
    let doc = s.read("MEMORY.md").unwrap().unwrap();
    assert_eq!(
        (doc.text.as_str(), &doc.version),
        ("# Memory\n- café ☕\n", &v2)
    );
    assert_eq!(s.read_head("MEMORY.md", 3).unwrap().unwrap(), b"# M");
    assert!(s.exists("MEMORY.md").unwrap());
    assert!(s.remove("MEMORY.md").unwrap());
    assert!(!s.remove("MEMORY.md").unwrap());
    assert!(s.read("MEMORY.md").unwrap().is_none());
}

/// A write naming an old version, or creating what exists, is a conflict
/// and leaves the document as the other writer left it.
pub fn a_stale_version_is_a_conflict_and_writes_nothing(case: &StorageCase) {
    let s = &*case.storage;
    let v1 = s.write("memory/a.md", "one\n", Expect::Any).unwrap();
    let v2 = s
        .write("memory/a.md", "two\n", Expect::Version(v1.clone()))
        .unwrap();
    match s.write("memory/a.md", "lost\n", Expect::Version(v1)) {
        Err(Error::Conflict(_)) => {}
        other => panic!("a stale version must be a conflict, got {other:?}"),
    }
    match s.write("memory/a.md", "lost\n", Expect::Absent) {
        Err(Error::Conflict(_)) => {}
        other => panic!("creating an existing document must be a conflict, got {other:?}"),
    }
    let doc = s.read("memory/a.md").unwrap().unwrap();
    assert_eq!((doc.text.as_str(), doc.version), ("two\n", v2));
}

/// Appends from several threads at once all land, each whole.
pub fn appends_from_many_threads_never_interleave(case: &StorageCase) {
    let line = |t: usize, i: usize| format!("thread {t} entry {i} {}\n", "x".repeat(200));
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = case.storage.clone();
            scope.spawn(move || {
                for i in 0..25 {
                    s.append("memory/HISTORY.md", &line(t, i)).unwrap();
                }
            });
        }
    });
    let text = case
        .storage
        .read("memory/HISTORY.md")
        .unwrap()
        .unwrap()
        .text;
    let lines: HashSet<&str> = text.lines().collect();
    assert_eq!(text.lines().count(), 100);
    for t in 0..4 {
        for i in 0..25 {
            assert!(
                lines.contains(line(t, i).trim_end()),
                "entry {t}/{i} is missing or torn"
            );
        }
    }
}

/// A folder lists its `.md` documents at any depth, by path, and nothing
/// outside it.
pub fn documents_are_listed_by_folder(case: &StorageCase) {
    let s = &*case.storage;
    for rel in [
        "memory/b.md",
        "memory/a.md",
        "memory/people/c.md",
        "MEMORY.md",
    ] {
        s.write(rel, "text\n", Expect::Any).unwrap();
    }
    s.write("memory/notes.txt", "not markdown\n", Expect::Any)
        .unwrap();
    let listed: Vec<String> = s
        .list("memory")
        .unwrap()
        .into_iter()
        .map(|e| e.rel)
        .collect();
    assert_eq!(listed, ["memory/a.md", "memory/b.md", "memory/people/c.md"]);
    let entry = s.list("memory").unwrap().into_iter().next().unwrap();
    assert_eq!(entry.len, 5);
    assert!(s.list("memory/people").unwrap().len() == 1);
}

/// Messages, the cursor and compaction records read back as appended, in
/// order; the session is listed.
pub fn a_session_replays_what_was_appended(case: &StorageCase) {
    let sessions = case.sessions();
    assert!(!sessions.exists("cli:demo").unwrap());
    let mut log = sessions.open("cli:demo").unwrap();
    let stored = log
        .append(&[user("first ☕"), Message::assistant("second")])
        .unwrap();
    assert!(stored.iter().all(|m| m.timestamp.is_some()));
    log.append(&[user("third")]).unwrap();
    log.set_cursor(2).unwrap();
    let record = CompactionRecord {
        kind: "autocompact".into(),
        tokens_before: 900,
        tokens_after: 300,
        summary: Some("the first two".into()),
        first_kept: Some(2),
        timestamp: "2026-03-14T09:30:00Z".into(),
        extra: Default::default(),
    };
    log.append_record(&Record::Compaction(record)).unwrap();
    log.append(&[user("fourth")]).unwrap();
    drop(log);
    let loaded = sessions.load("cli:demo").unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["first ☕", "second", "third", "fourth"]);
    assert_eq!(
        loaded.messages[..2],
        stored[..],
        "messages read back as stored"
    );
    assert_eq!(loaded.meta.key, "cli:demo");
    assert_eq!(loaded.meta.last_consolidated, 2);
    assert_eq!(loaded.compactions.len(), 1);
    assert_eq!(
        loaded.compactions[0].0, 3,
        "the record sits after the third message"
    );
    assert_eq!(
        loaded.compactions[0].1.summary.as_deref(),
        Some("the first two")
    );
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // Folding keeps everything and leaves one metadata record.
    let mut log = sessions.open("cli:demo").unwrap();
    log.set_cursor(3).unwrap();
    log.fold().unwrap();
    let folded = sessions.load("cli:demo").unwrap();
    assert_eq!(folded.messages, loaded.messages);
    assert_eq!(folded.meta.last_consolidated, 3);
    assert_eq!(folded.metadata_records, 1);
    assert_eq!(folded.compactions.len(), 1);
    let listed = sessions.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].key.as_str(), listed[0].messages),
        ("cli:demo", 4)
    );
    assert!(matches!(
        sessions.load("cli:other"),
        Err(Error::NotFound(_))
    ));
}

/// Four writers appending to one session at once: every message once, in
/// one log, each writer's in its own order.
pub fn concurrent_session_appends_never_collide(case: &StorageCase) {
    std::thread::scope(|scope| {
        for t in 0..4 {
            let sessions = case.sessions();
            scope.spawn(move || {
                let mut log = sessions.open("api:shared").unwrap();
                for i in 0..15 {
                    log.append(&[user(&format!("writer {t} message {i}"))])
                        .unwrap();
                }
            });
        }
    });
    let loaded = case.sessions().load("api:shared").unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(texts.len(), 60);
    assert_eq!(
        texts.iter().collect::<HashSet<_>>().len(),
        60,
        "a message was duplicated"
    );
    for t in 0..4 {
        let mine: Vec<&String> = texts
            .iter()
            .filter(|m| m.starts_with(&format!("writer {t} ")))
            .collect();
        let want: Vec<String> = (0..15).map(|i| format!("writer {t} message {i}")).collect();
        assert_eq!(mine, want.iter().collect::<Vec<_>>());
    }
    assert_eq!(
        loaded.metadata_records, 1,
        "one metadata record heads the log"
    );
}

/// A malformed line and a line of invalid UTF-8 are reported by the load,
/// the messages around them load, and the lines are kept.
pub fn malformed_lines_are_reported_and_kept(case: &StorageCase) {
    let sessions = case.sessions();
    let mut log = sessions.open("cli:bad").unwrap();
    log.append(&[user("before")]).unwrap();
    drop(log);
    let mut writer = case
        .storage
        .open_session("cli:bad", &SessionOptions::default())
        .unwrap();
    writer.append_lines(b"{not json\n", true).unwrap();
    writer.append_lines(b"\xff\xfe broken\n", true).unwrap();
    drop(writer);
    let mut log = sessions.open("cli:bad").unwrap();
    log.append(&[user("after")]).unwrap();
    drop(log);
    let loaded = sessions.load("cli:bad").unwrap();
    let texts: Vec<String> = loaded.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["before", "after"]);
    let kinds: Vec<&WarningKind> = loaded.warnings.iter().map(|w| &w.kind).collect();
    assert_eq!(kinds, [&WarningKind::Malformed, &WarningKind::InvalidUtf8]);
    // Kept: a fold does not drop them either.
    sessions.open("cli:bad").unwrap().fold().unwrap();
    assert_eq!(sessions.load("cli:bad").unwrap().warnings.len(), 2);
}

/// A tool result over the budget is stored as a document beside the
/// session, and the log holds its preview and path.
pub fn oversized_tool_results_become_documents(case: &StorageCase) {
    let sessions = case.sessions();
    let big = "line of output\n".repeat(5_000);
    let mut log = sessions.open("cli:tools").unwrap();
    let stored = log
        .append(&[Message::tool_result("call_big", "shell", big.clone())])
        .unwrap();
    let path = mnemo_store::session::persisted_path(&stored[0])
        .unwrap()
        .to_string();
    assert!(
        path.starts_with("sessions/") && path.ends_with("/call_big.txt"),
        "{path}"
    );
    assert_eq!(case.storage.read(&path).unwrap().unwrap().text, big);
    assert!(
        stored[0].text().len() < 4_000,
        "the log keeps a preview only"
    );
    // The same result appended again reuses its document.
    let again = log
        .append(&[Message::tool_result("call_big", "shell", big)])
        .unwrap();
    assert_eq!(
        mnemo_store::session::persisted_path(&again[0]),
        Some(path.as_str())
    );
}

/// Read-modify-writes of MEMORY.md from several threads under the memory
/// lock: no edit is lost.
pub fn memory_md_edits_from_many_threads_all_land(case: &StorageCase) {
    std::thread::scope(|scope| {
        for t in 0..4 {
            let memory = case.memory(MemorySettings::default());
            scope.spawn(move || {
                for i in 0..10 {
                    memory
                        .update_memory_md(|text| Ok(Some(format!("{text}- fact {t}.{i}\n"))))
                        .unwrap();
                }
            });
        }
    });
    let text = case
        .memory(MemorySettings::default())
        .read_memory_md()
        .unwrap();
    assert_eq!(text.lines().count(), 40, "{text}");
}

/// MEMORY.md is shown within its line cap, with a warning, and kept whole.
pub fn memory_md_is_capped_in_the_prompt(case: &StorageCase) {
    let settings = MemorySettings {
        memory_md_max_lines: 10,
        ..Default::default()
    };
    let memory = case.memory(settings);
    let text: String = (0..50).map(|i| format!("- fact {i}\n")).collect();
    assert!(memory.write_memory_md(&text).unwrap());
    assert!(
        !memory.write_memory_md(&text).unwrap(),
        "an unchanged write writes nothing"
    );
    let rendered = memory.render_memory_md().unwrap();
    let shown = rendered
        .text
        .lines()
        .filter(|l| l.starts_with("- fact"))
        .count();
    assert!(shown <= 10 && rendered.truncated, "{}", rendered.text);
    assert_eq!(rendered.total_lines, 50);
    assert!(rendered.text.contains("- fact 0"));
    assert!(!rendered.text.contains("- fact 49"));
    assert_eq!(memory.read_memory_md().unwrap(), text);
    let section = memory
        .write_section("Preferences", "- tea, not coffee")
        .unwrap();
    assert!(section.changed && !section.replaced);
    assert!(memory
        .read_memory_md()
        .unwrap()
        .contains("## Preferences\n"));
}

/// A typed memory is saved with its index line, found by name, refused a
/// silent overwrite, replaced on request, listed and forgotten.
pub fn typed_memories_are_saved_found_and_forgotten(case: &StorageCase) {
    let memory = case.memory(MemorySettings::default());
    let front = |description: &str| FrontMatter {
        name: "Coffee order".into(),
        description: description.into(),
        kind: MemoryType::User,
    };
    let saved = memory
        .save_typed(
            front("how the user takes coffee"),
            "Flat white, no sugar.",
            SaveMode::Create,
        )
        .unwrap();
    assert_eq!(saved.memory.path, "memory/coffee-order.md");
    assert!(memory
        .read_memory_md()
        .unwrap()
        .contains("memory/coffee-order.md"));
    let found = memory.find_typed("coffee  ORDER").unwrap().unwrap();
    assert_eq!(found.body.trim(), "Flat white, no sugar.");
    assert!(matches!(
        memory.save_typed(front("changed"), "Espresso.", SaveMode::Create),
        Err(Error::Exists(_))
    ));
    memory
        .save_typed(front("changed"), "Espresso.", SaveMode::Replace)
        .unwrap();
    assert_eq!(
        memory
            .read_typed("memory/coffee-order.md")
            .unwrap()
            .body
            .trim(),
        "Espresso."
    );
    assert_eq!(memory.list_typed().unwrap().len(), 1);
    memory
        .append_audit(&[mnemo_store::memory::facts::AuditRecord {
            op: "write".into(),
            memory: "Coffee order".into(),
            new: Some("Espresso.".into()),
            by: "memory_write".into(),
            ..Default::default()
        }])
        .unwrap();
    assert_eq!(
        memory.forget_typed("Coffee order").unwrap(),
        "memory/coffee-order.md"
    );
    let audit = case
        .storage
        .read("memory/audit.jsonl")
        .unwrap()
        .unwrap()
        .text;
    assert!(
        !audit.contains("Espresso"),
        "a forget leaves no text in the audit log: {audit}"
    );
    assert_eq!(
        memory.memory_history("Coffee order").unwrap().len(),
        1,
        "the record stays"
    );
    assert!(memory.find_typed("Coffee order").unwrap().is_none());
    assert!(!memory.read_memory_md().unwrap().contains("coffee-order"));
    assert!(!case.storage.exists("memory/coffee-order.md").unwrap());
}

/// The history and the daily logs are appended to, never rewritten: a
/// repeated daily item is written once; history and logs cannot be
/// forgotten; session notes never replace one another.
pub fn history_and_daily_logs_only_grow(case: &StorageCase) {
    let memory = case.memory(MemorySettings {
        timezone: "UTC".into(),
        ..Default::default()
    });
    let now = Utc.with_ymd_and_hms(2026, 3, 14, 9, 30, 0).unwrap();
    memory.append_history("first round", now).unwrap();
    memory.append_history("second round", now).unwrap();
    let history = memory.read_history().unwrap();
    assert!(
        history.starts_with("[2026-03-14 09:30] first round\n\n"),
        "{history}"
    );
    assert!(history.contains("second round"));
    let first = memory
        .append_daily("- met Ana\n- booked a flight", now, false)
        .unwrap();
    assert_eq!(
        (first.path.as_str(), first.written),
        ("memory/2026-03-14.md", 2)
    );
    let again = memory.append_daily("met Ana", now, false).unwrap();
    assert_eq!((again.written, again.duplicates), (0, 1));
    let log = memory.read_daily(now.date_naive()).unwrap().unwrap();
    assert_eq!(log.text.matches("met Ana").count(), 1);
    assert!(matches!(
        memory.forget_typed("memory/HISTORY.md"),
        Err(Error::Refused(_))
    ));
    assert!(matches!(
        memory.forget_typed("memory/2026-03-14.md"),
        Err(Error::Refused(_))
    ));
    let day = now.date_naive();
    let a = memory
        .write_session_note(day, "trip", "note one\n")
        .unwrap();
    let b = memory
        .write_session_note(day, "trip", "note two\n")
        .unwrap();
    assert_eq!(a, "memory/2026-03-14-trip.md");
    assert_ne!(a, b);
    assert_eq!(case.storage.read(&a).unwrap().unwrap().text, "note one\n");
}

/// Every document and every session log can be listed and read back
/// byte for byte (what an export and the index read), and the revision,
/// when the storage has one, moves with every write and only then.
pub fn the_whole_workspace_reads_back_for_an_export(case: &StorageCase) {
    let s = &*case.storage;
    let before = s.revision().unwrap();
    s.write("MEMORY.md", "# Memory\n", Expect::Any).unwrap();
    s.write("memory/facts.md", "- a fact\n", Expect::Any)
        .unwrap();
    s.append("memory/audit.jsonl", "{\"op\":\"add\"}\n")
        .unwrap();
    let sessions = case.sessions();
    let mut log = sessions.open("cli:export").unwrap();
    log.append(&[user("hello"), Message::assistant("hi")])
        .unwrap();
    log.append(&[Message::tool_result("call_x", "shell", "y".repeat(60_000))])
        .unwrap();
    drop(log);
    let docs: Vec<String> = s.documents().unwrap().into_iter().map(|e| e.rel).collect();
    assert!(docs.contains(&"MEMORY.md".to_string()), "{docs:?}");
    assert!(docs.contains(&"memory/audit.jsonl".to_string()), "{docs:?}");
    assert!(docs.iter().any(|d| d.ends_with("/call_x.txt")), "{docs:?}");
    let files = s.session_files().unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].rel, s.session_rel("cli:export").unwrap());
    let bytes = s.read_session_file(&files[0].rel).unwrap().unwrap();
    assert_eq!(files[0].len, bytes.len() as u64);
    let parsed =
        mnemo_store::session::parse_session_bytes(std::path::Path::new(&files[0].rel), &bytes);
    assert_eq!(
        parsed.messages,
        sessions.load("cli:export").unwrap().messages
    );
    assert!(s
        .read_session_file("sessions/none.jsonl")
        .unwrap()
        .is_none());
    let after = s.revision().unwrap();
    if before.is_some() {
        assert_ne!(before, after, "writes must move the revision");
        assert_eq!(after, s.revision().unwrap(), "no write, same revision");
        s.append("memory/HISTORY.md", "x\n").unwrap();
        assert_ne!(after, s.revision().unwrap());
    }
}

/// A named lock has one holder at a time, even within one process (two
/// servers of one workspace, or two handles), and is free once dropped.
pub fn a_named_lock_has_one_holder(case: &StorageCase) {
    let s = &*case.storage;
    let held = s
        .try_lock("cli_demo")
        .unwrap()
        .expect("a free lock is taken");
    assert!(
        s.try_lock("cli_demo").unwrap().is_none(),
        "a held lock has one holder"
    );
    let other = s.try_lock("cli_other").unwrap();
    assert!(other.is_some(), "locks of other names are apart");
    drop(held);
    assert!(
        s.try_lock("cli_demo").unwrap().is_some(),
        "a dropped lock is free"
    );
    assert!(!s.lock_location("cli_demo").is_empty());
}

/// The engine's state documents (`.mnemo/…`) read back as written, in the
/// folder's `.mnemo/` for a folder, and are never memory: no listing, no
/// export, no revision the index watches, no memory document path reaches
/// them.
pub fn state_documents_are_kept_apart_from_memory(case: &StorageCase) {
    let s = &*case.storage;
    let rel = ".mnemo/engine/cli_demo.json";
    assert_eq!(s.read_state(rel).unwrap(), None);
    s.write("memory/a.md", "text\n", Expect::Any).unwrap();
    let before = s.revision().unwrap();
    s.write_state(rel, "{\"compact_failures\": 1}").unwrap();
    s.write_state(rel, "{\"compact_failures\": 2}").unwrap();
    s.write_state(".mnemo/engine/memory.md", "not memory\n")
        .unwrap();
    assert_eq!(
        s.read_state(rel).unwrap().as_deref(),
        Some("{\"compact_failures\": 2}")
    );
    if let Some(root) = s.root() {
        assert!(root.join(rel).is_file(), "a folder keeps it where it was");
    }
    let docs: Vec<String> = s.documents().unwrap().into_iter().map(|e| e.rel).collect();
    assert_eq!(docs, ["memory/a.md"]);
    assert_eq!(s.list("memory").unwrap().len(), 1);
    assert_eq!(
        before,
        s.revision().unwrap(),
        "state writes are not memory's"
    );
    let memory = case.memory(MemorySettings::default());
    assert!(memory.read_document(rel).is_err());
    for bad in [
        "MEMORY.md",
        "memory/a.md",
        ".mnemo",
        ".mnemo/",
        ".mnemo/../MEMORY.md",
        ".mnemo//x.json",
        ".mnemoX/x.json",
    ] {
        assert!(
            matches!(s.write_state(bad, "x"), Err(Error::Invalid(_))),
            "{bad} is not a state document"
        );
        assert!(s.read_state(bad).is_err(), "{bad}");
    }
}
