//! Freshness without a walk per search: a one-shot search (a new
//! `MemoryIndex`, as `mnemo search` opens) sees files created, replaced,
//! removed, appended to by mnemo's writers, and MEMORY.md edited in place;
//! an index kept fresh by its watcher sees any file edited in place at the
//! very next search.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use common::{daily_log, Fixture};
use mnemo_index::{IndexSettings, SearchRequest};

fn settings(reconcile_secs: u64) -> IndexSettings {
    let mut s = IndexSettings::default();
    s.index.reconcile_secs = reconcile_secs;
    s
}

/// The files of the hits for `query` (each once, best first), from a newly
/// opened index (keyword search: the point is which files are in it).
fn paths(f: &Fixture, settings: &IndexSettings, query: &str) -> Vec<String> {
    let index = mnemo_index_sqlite::open(&f.ws, settings.clone(), None).unwrap();
    let mut out: Vec<String> = Vec::new();
    for hit in index
        .search(&SearchRequest::new(query).min_score(0.0))
        .unwrap()
        .results
    {
        if !out.contains(&hit.path) {
            out.push(hit.path);
        }
    }
    out
}

fn fixture() -> Fixture {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n- Dana lives in Porto.\n");
    for i in 0..4 {
        f.write(&format!("memory/2026-01-{:02}.md", i + 1), daily_log(i));
    }
    f.write("memory/people/ann.md", "Ann plays the cello.\n");
    f
}

/// An edit in place changes no folder; the clock of a fast machine may not
/// tick between two writes, so each edit waits for it.
fn tick() {
    std::thread::sleep(std::time::Duration::from_millis(20));
}

#[test]
fn one_shot_searches_see_what_changed_without_walking() {
    let f = fixture();
    let s = settings(3600);
    mnemo_index_sqlite::open(&f.ws, s.clone(), None)
        .unwrap()
        .sync(&|_| {})
        .unwrap();

    // A new file (in a new sub-folder) written by hand.
    f.write("memory/people/zed/notes.md", "Zed keeps bees in Ghent.\n");
    assert_eq!(paths(&f, &s, "bees Ghent"), ["memory/people/zed/notes.md"]);

    // A file replaced through a temporary file, as editors and mnemo save.
    tick();
    f.write("memory/.tmp-save", "Ann took up quokka watching.\n");
    f.rename("memory/.tmp-save", "memory/people/ann.md");
    assert_eq!(paths(&f, &s, "quokka"), ["memory/people/ann.md"]);
    assert!(paths(&f, &s, "cello").is_empty());

    // A file removed.
    f.remove("memory/2026-01-04.md");
    let all = paths(&f, &s, "the");
    assert!(!all.iter().any(|p| p == "memory/2026-01-04.md"), "{all:?}");

    // An append by mnemo's writers: no folder changes, the journal says so.
    tick();
    let day = f.root().join("memory/2026-01-02.md");
    let mut log = std::fs::OpenOptions::new().append(true).open(&day).unwrap();
    log.write_all(b"- [09:00] Booked the Oslo ferry.\n")
        .unwrap();
    drop(log);
    mnemo_core::journal::note(&f.ws, &day);
    assert_eq!(paths(&f, &s, "Oslo ferry"), ["memory/2026-01-02.md"]);

    // MEMORY.md edited in place by hand.
    tick();
    f.write("MEMORY.md", "# Core\n- Dana moved to Lisbon.\n");
    assert_eq!(paths(&f, &s, "Lisbon"), ["MEMORY.md"]);

    // Another file edited in place by another program changes no folder and
    // is noted nowhere: the check does not see it (it reads no file's
    // metadata) until the next full comparison, which `reconcile_secs = 0`
    // makes every search do.
    tick();
    f.write(
        "memory/2026-01-03.md",
        "# 2026-01-03\n- Learned to juggle.\n",
    );
    assert!(paths(&f, &s, "juggle").is_empty());
    assert_eq!(paths(&f, &settings(0), "juggle"), ["memory/2026-01-03.md"]);
}

#[test]
fn a_watching_index_sees_edits_in_place_at_the_next_search() {
    let f = fixture();
    let mut s = settings(3600);
    // Only the search's own fence can bring the edits in this fast.
    s.index.watch_debounce_ms = 600_000;
    let index = mnemo_index_sqlite::open(&f.ws, s, None).unwrap();
    index.sync(&|_| {}).unwrap();
    let handle = index.keep_fresh().unwrap();
    for round in 0..5 {
        tick();
        let word = format!("marmot{round}");
        f.write(
            "memory/2026-01-03.md",
            format!("# 2026-01-03\n- Saw a {word} on the hike.\n"),
        );
        let found = index
            .search(&SearchRequest::new(&word).min_score(0.0))
            .unwrap();
        assert_eq!(
            found.results.first().map(|h| h.path.as_str()),
            Some("memory/2026-01-03.md"),
            "round {round}: {:?}",
            found.warnings
        );
    }
    // New and removed files too.
    f.write("memory/new.md", "Otters hold hands while sleeping.\n");
    let found = index.search(&SearchRequest::new("otters")).unwrap();
    assert_eq!(found.results[0].path, "memory/new.md");
    f.remove("memory/new.md");
    let found = index.search(&SearchRequest::new("otters")).unwrap();
    assert!(found.results.is_empty(), "{:?}", found.results);
    handle.stop();
}
