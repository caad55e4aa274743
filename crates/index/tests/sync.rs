//! Incremental sync (edit, delete, rename), full rebuilds swapped in while
//! searches keep answering, concurrent searches during a forced reindex, and
//! `memory_get` confinement.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use common::{daily_log, model, Fixture};
use mnemo_core::ErrorCode;
use mnemo_index::{
    IndexBackend, IndexSettings, MemoryIndex, SearchMode, SearchRequest, SyncProgress,
};
use mnemo_index_sqlite::SqliteBackend;

fn fixture(n: usize) -> Fixture {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n- Dana lives in Porto.\n");
    for i in 0..n {
        f.write(&format!("memory/2026-01-{:02}.md", i + 1), daily_log(i));
    }
    f
}

#[test]
fn incremental_sync_after_edit_delete_and_rename() {
    let f = fixture(5);
    let index = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(model())).unwrap();
    let events = std::sync::Mutex::new(Vec::new());
    let first = index.sync(&|p| events.lock().unwrap().push(p)).unwrap();
    assert_eq!(first.indexed.len(), 6);
    assert!(!first.full_rebuild);
    let events = events.into_inner().unwrap();
    assert_eq!(
        events.first(),
        Some(&SyncProgress::Started {
            total: 6,
            full: false
        })
    );
    assert!(events.iter().any(|e| matches!(
        e,
        SyncProgress::File {
            done: 6,
            total: 6,
            ..
        }
    )));
    assert_eq!(events.last(), Some(&SyncProgress::Finished));

    // Nothing changed: nothing re-read, nothing embedded.
    let again = index.sync(&|_| {}).unwrap();
    assert!(
        again.indexed.is_empty() && again.removed.is_empty() && again.chunks_embedded == 0,
        "{again:?}"
    );
    assert!(!index.is_dirty().unwrap());

    // Edit one file.
    f.write(
        "memory/2026-01-02.md",
        "# Daily log\n\n- Adopted a grey cat called Miso.\n",
    );
    assert!(index.is_dirty().unwrap());
    let r = index.sync(&|_| {}).unwrap();
    assert_eq!(r.indexed, vec!["memory/2026-01-02.md".to_string()]);
    assert_eq!(r.chunks_embedded, 1);
    let hits = index.search(&SearchRequest::new("pet cat name")).unwrap();
    assert_eq!(hits.results[0].path, "memory/2026-01-02.md");

    // Same content rewritten: hashed, only touched.
    std::thread::sleep(std::time::Duration::from_millis(20));
    f.write(
        "memory/2026-01-02.md",
        "# Daily log\n\n- Adopted a grey cat called Miso.\n",
    );
    let r = index.sync(&|_| {}).unwrap();
    assert!(r.indexed.is_empty(), "{r:?}");

    // Delete one file.
    f.remove("memory/2026-01-03.md");
    let r = index.sync(&|_| {}).unwrap();
    assert_eq!(r.removed, vec!["memory/2026-01-03.md".to_string()]);
    assert!(r.indexed.is_empty());

    // Rename: the vectors come from the embedding cache.
    f.rename("memory/2026-01-04.md", "memory/archive/2025-12-31.md");
    let r = index.sync(&|_| {}).unwrap();
    assert_eq!(r.removed, vec!["memory/2026-01-04.md".to_string()]);
    assert_eq!(r.indexed, vec!["memory/archive/2025-12-31.md".to_string()]);
    assert_eq!(r.chunks_embedded, 0, "{r:?}");
    assert!(r.cache_hits >= 1);
    let st = index.status().unwrap();
    assert_eq!(st.files, 5);
    assert_eq!(st.vectors, st.chunks);

    // A search syncs first when the workspace is dirty.
    f.write(
        "memory/new.md",
        "The spare key is under the blue flowerpot.\n",
    );
    let r = index
        .search(&SearchRequest::new("where is the spare key hidden"))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/new.md");
}

#[test]
fn chunking_change_rebuilds_into_a_new_database_while_old_one_answers() {
    let f = fixture(30);
    let old = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(model())).unwrap();
    old.sync(&|_| {}).unwrap();
    let old_status = old.status().unwrap();

    let mut small = IndexSettings::default();
    small.index.chunk_tokens = 24;
    small.index.chunk_overlap = 4;
    let new = mnemo_index_sqlite::open(&f.ws, small, Some(model())).unwrap();
    let st = new.status().unwrap();
    assert!(st.needs_full_reindex && st.dirty);

    let done = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let searcher = {
        let (old, done, answered) = (old.clone(), done.clone(), answered.clone());
        std::thread::spawn(move || {
            let mut during = 0;
            while !done.load(Ordering::SeqCst) {
                let r = old
                    .search(&SearchRequest::new("Lisbon trip hotel"))
                    .expect("search during rebuild");
                assert!(!r.results.is_empty());
                answered.fetch_add(1, Ordering::SeqCst);
                during += 1;
            }
            during
        })
    };
    let started = Arc::new(AtomicBool::new(false));
    let report = new
        .sync(&|p| {
            if let SyncProgress::File { done: 1, .. } = p {
                started.store(true, Ordering::SeqCst);
                // Let the searcher run against the old database mid-rebuild.
                let t = std::time::Instant::now();
                while answered.load(Ordering::SeqCst) < 3 && t.elapsed().as_secs() < 30 {
                    std::thread::yield_now();
                }
            }
        })
        .unwrap();
    done.store(true, Ordering::SeqCst);
    let during = searcher.join().unwrap();
    assert!(during >= 3);
    assert!(report.full_rebuild);
    let st = new.status().unwrap();
    assert!(!st.needs_full_reindex && !st.dirty);
    assert_ne!(st.location, old_status.location);
    assert!(
        st.chunks > old_status.chunks,
        "{} vs {}",
        st.chunks,
        old_status.chunks
    );
    assert!(
        !std::path::Path::new(&old_status.location).exists(),
        "old generation removed"
    );
    // The old handle follows the swap and still answers (with a warning that
    // its settings differ).
    let r = old
        .search(&SearchRequest::new("Lisbon trip hotel"))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert!(!r.results.is_empty());
    assert!(
        r.warnings.iter().any(|w| w.contains("other settings")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn searches_in_threads_never_fail_during_forced_reindex() {
    let f = fixture(20);
    let index = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(model())).unwrap();
    index.sync(&|_| {}).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..3)
        .map(|t| {
            let (index, stop) = (index.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0usize;
                let queries = ["budget with Alice", "knee physio run", "lentil soup recipe"];
                while !stop.load(Ordering::SeqCst) || n == 0 {
                    let r = index
                        .search(&SearchRequest::new(queries[(t + n) % 3]))
                        .unwrap();
                    assert!(!r.results.is_empty());
                    n += 1;
                }
                n
            })
        })
        .collect();
    for _ in 0..3 {
        let r = index.reindex(true, &|_| {}).unwrap();
        assert!(r.full_rebuild);
        assert_eq!(r.chunks_embedded, 0, "cache carried over");
    }
    stop.store(true, Ordering::SeqCst);
    let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(total >= 3);
    // Only the live generation's database (and its WAL and shared memory)
    // is left beside the other state files.
    let files: Vec<String> = std::fs::read_dir(f.root().join(".mnemo"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let databases: Vec<&String> = files
        .iter()
        .filter(|n| n.starts_with("index") && n.contains(".sqlite"))
        .collect();
    assert!(
        databases.len() <= 3,
        "old generations cleaned up: {files:?}"
    );
}

#[test]
fn memory_get_reads_memory_only_and_refuses_escapes() {
    let f = fixture(1);
    f.write("memory/notes/a.md", "one\ntwo\nthree\nfour\n");
    f.write("sessions/x.jsonl", "{}\n");
    f.write("memory/data.txt", "not markdown");
    let index = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), None).unwrap();
    let g = index.get("memory/notes/a.md", Some(2), Some(2)).unwrap();
    assert_eq!(
        (g.text.as_str(), g.from, g.lines, g.total_lines),
        ("two\nthree", 2, 2, 4)
    );
    let g = index.get("MEMORY.md", None, None).unwrap();
    assert!(g.text.contains("Porto"));
    let g = index.get("memory/missing.md", None, None).unwrap();
    assert_eq!((g.text.as_str(), g.total_lines), ("", 0));
    let g = index.get("memory/notes/a.md", Some(10), None).unwrap();
    assert_eq!((g.text.as_str(), g.lines), ("", 0));

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "secret").unwrap();
    f.write("mnemo.toml", "[provider]\napi_key = \"secret\"\n");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(
            outside.path().join("secret.md"),
            f.root().join("memory/link.md"),
        )
        .unwrap();
        // A link to a workspace file that is not memory.
        std::os::unix::fs::symlink(
            f.root().join("mnemo.toml"),
            f.root().join("memory/config.md"),
        )
        .unwrap();
    }
    let mut refused = vec![
        "../x.md",
        "/etc/passwd",
        "memory/../../x.md",
        "memory/data.txt",
        "sessions/x.jsonl",
        "mnemo.toml",
    ];
    if cfg!(unix) {
        refused.push("memory/link.md");
        refused.push("memory/config.md");
    }
    for p in refused {
        let e = index.get(p, None, None).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Forbidden, "{p}: {e}");
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn watch_reindexes_after_a_change() {
    let f = fixture(2);
    let mut settings = IndexSettings::default();
    settings.index.watch_debounce_ms = 200;
    settings.search.sync_on_search = false;
    let index = mnemo_index_sqlite::open(&f.ws, settings, None).unwrap();
    index.sync(&|_| {}).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = index
        .watch(move |r| {
            let _ = tx.send(r.map(|r| r.indexed));
        })
        .unwrap();
    f.write("memory/watched.md", "Zanzibar ferry schedule noted.\n");
    // The watcher may see the file created before its text is written (a
    // sync of the empty file): wait for the sync that finds the text.
    let found = |index: &MemoryIndex| {
        let r = index
            .search(&SearchRequest::new("Zanzibar").min_score(0.0))
            .unwrap();
        r.results.first().map(|h| h.path.clone())
    };
    let mut seen = None;
    while let Ok(r) = rx.recv_timeout(std::time::Duration::from_secs(20)) {
        if r.unwrap().contains(&"memory/watched.md".to_string()) {
            seen = found(&index);
            if seen.is_some() {
                break;
            }
        }
    }
    handle.stop();
    assert_eq!(
        seen.as_deref(),
        Some("memory/watched.md"),
        "watcher did not sync the new file"
    );
}

/// Every edit leaves the old version's vectors in the embedding cache; past
/// `embedding_cache_max` the unused ones go, oldest first, and the vectors
/// in use stay whatever the cap.
#[test]
fn the_embedding_cache_stays_within_its_cap() {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n- Dana lives in Porto.\n");
    let mut settings = IndexSettings::default();
    settings.index.embedding_cache_max = 3;
    let index = mnemo_index_sqlite::open(&f.ws, settings, Some(model())).unwrap();
    // Read through the backend itself: the cache's rows, and the vectors
    // in use (a hash no chunk uses is what pruning may drop).
    let model_id = Some((model().id(), model().dims()));
    let rows = |index: &MemoryIndex| -> (usize, usize) {
        let location = index.status().unwrap().location;
        let db = SqliteBackend::open(std::path::Path::new(&location), model_id.clone()).unwrap();
        let total = db.embedding_cache_page("", 1000).unwrap().len();
        (total, total.saturating_sub(db.counts().unwrap().vectors))
    };
    let mut pruned = 0;
    for day in 1..=8 {
        f.write(
            "memory/notes.md",
            format!("# Notes\n\nVersion {day}: the release train leaves on day {day}.\n"),
        );
        pruned += index.sync(&|_| {}).unwrap().cache_pruned;
        let (total, unused) = rows(&index);
        assert!(total <= 3, "version {day}: {total} rows");
        assert!(unused <= 1, "version {day}: {unused} unused rows");
    }
    assert!(pruned >= 5, "{pruned}");
    let st = index.status().unwrap();
    assert_eq!(st.vectors, st.chunks, "every chunk keeps its vector");
    let hits = index
        .search(&SearchRequest::new("when does the release train leave"))
        .unwrap();
    assert_eq!(hits.mode, SearchMode::Hybrid);
    assert!(hits.results[0].snippet.contains("Version 8"), "{hits:?}");

    // A cap below what is in use deletes nothing that is in use.
    let mut settings = IndexSettings::default();
    settings.index.embedding_cache_max = 0;
    let strict = mnemo_index_sqlite::open(&f.ws, settings, Some(model())).unwrap();
    f.write("MEMORY.md", "# Core\n- Dana lives in Lisbon now.\n");
    strict.sync(&|_| {}).unwrap();
    let (total, unused) = rows(&strict);
    assert_eq!(unused, 0);
    let st = strict.status().unwrap();
    assert_eq!(total, st.chunks);
    assert_eq!(st.vectors, st.chunks);
}

/// `Embedder::embed` refuses blank texts: blank and empty files still
/// index (kept for `memory_get`, no vector for a blank chunk), the files
/// count as embedded (no retry on every sync), and search stays hybrid.
#[test]
fn blank_and_empty_files_index_with_an_embedder_that_refuses_blank_text() {
    let f = fixture(2);
    f.write("memory/empty.md", "");
    f.write("memory/blank.md", "\n   \n\t\n");
    f.write(
        "memory/spaces.md",
        "# Title\n\n   \n\n- Dana keeps a spare key under the mat.\n",
    );
    let embedder: Arc<dyn mnemo_core::Embedder> = Arc::new(mnemo_embed::HashEmbedder::default());
    let index = mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(embedder)).unwrap();
    let report = index.sync(&|_| {}).unwrap();
    assert!(report.issues.is_empty(), "{:?}", report.issues);
    assert_eq!(report.indexed.len(), 6, "{report:?}");
    assert!(
        !index.is_dirty().unwrap(),
        "a blank file must not stay due for vectors"
    );
    let again = index.sync(&|_| {}).unwrap();
    assert!(
        again.indexed.is_empty() && again.chunks_embedded == 0,
        "{again:?}"
    );
    let hits = index
        .search(&SearchRequest::new("where is the spare key"))
        .unwrap();
    assert_eq!(hits.mode, SearchMode::Hybrid);
    assert!(
        hits.warnings
            .iter()
            .all(|w| !w.contains("embedding failed")),
        "{:?}",
        hits.warnings
    );
    assert!(hits.results[0].snippet.contains("spare key"), "{hits:?}");
}

/// A store of the caller's own: SQLite underneath, every lifecycle call
/// counted, so the test sees `MemoryIndex` go through the seam.
struct CountingStore {
    inner: mnemo_index_sqlite::SqliteStore,
    locks: AtomicUsize,
    generations: AtomicUsize,
    scrubs: AtomicUsize,
}

impl mnemo_index::IndexStore for CountingStore {
    fn kind(&self) -> &'static str {
        "counted"
    }
    fn schema_version(&self) -> String {
        self.inner.schema_version()
    }
    fn location(&self) -> String {
        format!("counted:{}", self.inner.location())
    }
    fn live(&self) -> mnemo_index::Result<Arc<dyn mnemo_index::IndexBackend>> {
        self.inner.live()
    }
    fn lock(
        &self,
        wait: mnemo_index::LockWait,
    ) -> mnemo_index::Result<Option<mnemo_index::WriterLock>> {
        self.locks.fetch_add(1, Ordering::SeqCst);
        self.inner.lock(wait)
    }
    fn lock_location(&self) -> String {
        self.inner.lock_location()
    }
    fn new_generation(&self) -> mnemo_index::Result<Box<dyn mnemo_index::Generation>> {
        self.generations.fetch_add(1, Ordering::SeqCst);
        self.inner.new_generation()
    }
    fn scrub(&self) -> mnemo_index::Result<()> {
        self.scrubs.fetch_add(1, Ordering::SeqCst);
        self.inner.scrub()
    }
}

#[test]
fn the_index_runs_over_a_store_of_the_callers_own() {
    use mnemo_index::IndexStore;
    let f = fixture(3);
    let emb = model();
    let store = Arc::new(CountingStore {
        inner: mnemo_index_sqlite::SqliteStore::open(
            &f.ws.state_dir(),
            Some((emb.id(), emb.dims())),
            Default::default(),
        )
        .unwrap(),
        locks: AtomicUsize::new(0),
        generations: AtomicUsize::new(0),
        scrubs: AtomicUsize::new(0),
    });
    let index =
        MemoryIndex::with_store(&f.ws, IndexSettings::default(), Some(emb), store.clone()).unwrap();
    assert_eq!(index.sync(&|_| {}).unwrap().indexed.len(), 4);
    assert_eq!(store.locks.load(Ordering::SeqCst), 1);
    assert_eq!(store.generations.load(Ordering::SeqCst), 0);
    let hits = index.search(&SearchRequest::new("Porto")).unwrap();
    assert_eq!(hits.results[0].path, "MEMORY.md");
    // A forced rebuild fills a new generation and swaps it in.
    let before = index.status().unwrap().location;
    assert!(before.starts_with("counted:"), "{before}");
    assert!(index.reindex(true, &|_| {}).unwrap().full_rebuild);
    assert_eq!(store.generations.load(Ordering::SeqCst), 1);
    assert_ne!(index.status().unwrap().location, before);
    let hits = index.search(&SearchRequest::new("Porto")).unwrap();
    assert_eq!(hits.results[0].path, "MEMORY.md");
    index.forget_unused().unwrap();
    assert_eq!(store.scrubs.load(Ordering::SeqCst), 1);
    // The lock keeps a second writer out until it is dropped.
    let now = || mnemo_index::LockWait::Until(std::time::Instant::now());
    let held = store.lock(mnemo_index::LockWait::Forever).unwrap();
    assert!(held.is_some());
    assert!(store.lock(now()).unwrap().is_none());
    drop(held);
    assert!(store.lock(now()).unwrap().is_some());
}

/// The counting store registered as a backend of the caller's own.
struct Counted;

impl mnemo_index::IndexBackendKind for Counted {
    fn name(&self) -> &'static str {
        "counted"
    }
    fn open(
        &self,
        ws: &mnemo_core::Workspace,
        settings: &IndexSettings,
        model: Option<(mnemo_core::EmbedderId, usize)>,
    ) -> mnemo_index::Result<Arc<dyn mnemo_index::IndexStore>> {
        Ok(Arc::new(CountingStore {
            inner: mnemo_index_sqlite::SqliteStore::open(
                &ws.state_dir(),
                model,
                settings.index.vector_scan,
            )?,
            locks: AtomicUsize::new(0),
            generations: AtomicUsize::new(0),
            scrubs: AtomicUsize::new(0),
        }))
    }
}

/// `[index] backend` names a registered backend, shipped or the caller's
/// own; a name nobody registered is refused with the names that are.
#[test]
fn a_backend_of_the_callers_own_is_opened_by_its_registered_name() {
    let f = fixture(3);
    let kinds: [&dyn mnemo_index::IndexBackendKind; 2] = [&mnemo_index_sqlite::Sqlite, &Counted];
    let mut settings = IndexSettings::default();
    settings.index.backend = mnemo_index::BackendKind("counted".into());
    let index =
        mnemo_index::open_index_with(&kinds, &f.ws, settings.clone(), Some(model()), None).unwrap();
    assert_eq!(index.sync(&|_| {}).unwrap().indexed.len(), 4);
    let st = index.status().unwrap();
    assert!(st.location.starts_with("counted:"), "{}", st.location);
    let hits = index.search(&SearchRequest::new("Porto")).unwrap();
    assert_eq!(hits.results[0].path, "MEMORY.md");

    let config = mnemo_core::Config::parse("[index]\nbackend = \"counted\"").unwrap();
    assert_eq!(
        IndexSettings::from_config(&config).unwrap().index.backend,
        settings.index.backend
    );

    settings.index.backend = mnemo_index::BackendKind("elastic".into());
    let e = mnemo_index::open_index_with(&kinds, &f.ws, settings, None, None).unwrap_err();
    assert!(e.to_string().contains("sqlite, counted"), "{e}");
    assert_eq!(e.code(), ErrorCode::Config);
}
