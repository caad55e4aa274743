//! The [`IndexStore`] conformance suite: the lifecycle of an index's
//! generations that every store must keep, whatever it keeps them in
//! (SQLite files, PostgreSQL schemas). A fresh store has an empty live
//! generation; a rebuild's generation starts empty with the live one's
//! embedding cache and is seen by no search until its swap; the swap
//! makes it live for every handle at once and retires the generation it
//! replaces; a generation dropped without its swap leaves nothing behind;
//! the writer lock has one holder and waits as asked; a scrub keeps what
//! is live and erases what a delete left behind.
//!
//! Each scenario opens the index through the case as often as it needs:
//! two handles on one index stand for two processes (the lock is between
//! processes, and `live` follows another process's swap).
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.
// A test suite: a failed store call is a failed scenario, and the
// unwrap's panic names the call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use mnemo_core::EmbedderId;
use mnemo_index::backend::{FileRecord, NewChunk};
use mnemo_index::{IndexBackend, IndexStore, LockWait, Source};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "a_fresh_store_has_an_empty_live_generation",
    "another_handle_reads_what_the_live_generation_holds",
    "a_new_generation_is_unseen_until_its_swap",
    "a_new_generation_starts_empty_with_the_embedding_cache",
    "the_swap_retires_the_replaced_generation",
    "a_generation_dropped_without_its_swap_leaves_nothing",
    "a_reader_of_the_replaced_generation_never_sees_the_new",
    "rebuilds_in_a_row_each_replace_the_last",
    "the_writer_lock_has_one_holder",
    "a_writer_waiting_forever_gets_the_lock_when_it_is_freed",
    "a_scrub_keeps_what_is_live",
    "a_scrub_erases_what_a_delete_left_behind",
];

/// Dimension of the suite's vectors; a case opens its store for
/// [`StoreCase::embedder`] with vectors of this size.
pub const DIMS: usize = 8;

/// What a case reads the storage's raw bytes with: the places holding a
/// text (see [`StoreCase::holding`]).
pub type Holding = Box<dyn Fn(&str) -> Vec<String>>;

/// One index under test, with no generation built yet.
pub struct StoreCase {
    /// Opens a handle on the index (the first call creates it): every call
    /// is another handle on the same index, as another process would open.
    pub open: Box<dyn Fn() -> Box<dyn IndexStore>>,
    /// The names of the index's generations that exist now, in the store's
    /// own terms (database files, schemas), to see what a swap retires.
    pub generations: Box<dyn Fn() -> Vec<String>>,
    /// Where the index's storage still holds `text` below what queries
    /// see (deleted rows, free pages, logs), read from its raw bytes: the
    /// files or relations, none when nowhere; `None` when the case cannot
    /// read those bytes.
    pub holding: Option<Holding>,
    /// Kept alive as long as the case.
    pub _keep: Box<dyn std::any::Any>,
}

impl StoreCase {
    /// The embedder a case opens its store for: vectors of [`DIMS`].
    pub fn embedder() -> (EmbedderId, usize) {
        (
            EmbedderId {
                provider: "suite".into(),
                model: "suite-vectors".into(),
                provider_key: "k".into(),
            },
            DIMS,
        )
    }
}

impl std::fmt::Debug for StoreCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreCase").finish_non_exhaustive()
    }
}

/// Generates one `#[test]` per scenario of the [`IndexStore`] suite, in a
/// module named `$name`, for the case `$make` builds (a `fn() -> StoreCase`
/// or `fn() -> Option<StoreCase>`, or a closure without captures); each
/// test gets an index of its own. `suite_is_complete` fails when the macro
/// misses a scenario.
///
/// ```text
/// mnemo_test_support::index_store_suite!(sqlite, sqlite_case);
/// ```
#[macro_export]
macro_rules! index_store_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::index_store as suite;

            fn make_case() -> ::std::option::Option<suite::StoreCase> {
                $crate::conformance::IntoCase::into_case(($make)())
            }

            $crate::index_store_suite!(@tests
                a_fresh_store_has_an_empty_live_generation,
                another_handle_reads_what_the_live_generation_holds,
                a_new_generation_is_unseen_until_its_swap,
                a_new_generation_starts_empty_with_the_embedding_cache,
                the_swap_retires_the_replaced_generation,
                a_generation_dropped_without_its_swap_leaves_nothing,
                a_reader_of_the_replaced_generation_never_sees_the_new,
                rebuilds_in_a_row_each_replace_the_last,
                the_writer_lock_has_one_holder,
                a_writer_waiting_forever_gets_the_lock_when_it_is_freed,
                a_scrub_keeps_what_is_live,
                a_scrub_erases_what_a_delete_left_behind
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
                "index store",
                suite::SCENARIOS,
                &[$(stringify!($scenario)),*],
            );
        }
    };
}

/// A fresh store has a live generation, and it is empty; the store names
/// its kind and where it is.
pub fn a_fresh_store_has_an_empty_live_generation(case: &StoreCase) {
    let store = (case.open)();
    let live = store.live().unwrap();
    let counts = live.counts().unwrap();
    assert_eq!((counts.files, counts.chunks, counts.vectors), (0, 0, 0));
    assert!(live.files().unwrap().is_empty());
    assert!(!store.kind().is_empty());
    assert!(!store.location().trim().is_empty());
    assert!(!store.lock_location().trim().is_empty());
    assert_eq!((case.generations)().len(), 1, "{:?}", (case.generations)());
}

/// What is written to the live generation is there for the next `live`,
/// for another handle open at the time and for one opened afterwards.
pub fn another_handle_reads_what_the_live_generation_holds(case: &StoreCase) {
    let a = (case.open)();
    let b = (case.open)();
    put(&*a.live().unwrap(), "memory/a.md", &["harbour lantern"]);
    for (who, store) in [("the writer", &a), ("another handle", &b)] {
        assert_eq!(found(&**store, "harbour"), ["harbour lantern"], "{who}");
    }
    drop((a, b));
    let reopened = (case.open)();
    assert_eq!(found(&*reopened, "lantern"), ["harbour lantern"]);
    assert_eq!(reopened.live().unwrap().counts().unwrap().vectors, 1);
}

/// A rebuild's generation is seen by no handle until its swap; the swap
/// makes it live for every handle, the one that built it, one open at the
/// time and one opened afterwards, and the old data is gone from search.
pub fn a_new_generation_is_unseen_until_its_swap(case: &StoreCase) {
    let a = (case.open)();
    let b = (case.open)();
    put(&*a.live().unwrap(), "memory/old.md", &["alpha before"]);
    let _lock = a.lock(LockWait::Forever).unwrap().expect("a free lock");
    let generation = a.new_generation().unwrap();
    put(
        &*generation.backend(),
        "memory/new.md",
        &["alpha after", "bravo after"],
    );
    for (who, store) in [("the builder", &a), ("another handle", &b)] {
        assert_eq!(
            found(&**store, "alpha"),
            ["alpha before"],
            "{who} before the swap"
        );
        assert!(found(&**store, "bravo").is_empty(), "{who} before the swap");
    }
    generation.swap_in().unwrap();
    let c = (case.open)();
    for (who, store) in [
        ("the builder", &a),
        ("another handle", &b),
        ("a new handle", &c),
    ] {
        assert_eq!(
            found(&**store, "alpha"),
            ["alpha after"],
            "{who} after the swap"
        );
        assert_eq!(
            found(&**store, "bravo"),
            ["bravo after"],
            "{who} after the swap"
        );
        let counts = store.live().unwrap().counts().unwrap();
        assert_eq!(
            (counts.files, counts.chunks),
            (1, 2),
            "{who} after the swap"
        );
    }
    assert_eq!(
        a.location(),
        b.location(),
        "both handles name the live generation"
    );
    assert_eq!(
        a.location(),
        c.location(),
        "both handles name the live generation"
    );
}

/// A new generation holds no file and no chunk, but the live generation's
/// cached vectors, so a rebuild embeds only what changed; the live
/// generation keeps all it had.
pub fn a_new_generation_starts_empty_with_the_embedding_cache(case: &StoreCase) {
    let store = (case.open)();
    let live = store.live().unwrap();
    put(&*live, "memory/c.md", &["kilo cached", "lima cached"]);
    let _lock = store.lock(LockWait::Forever).unwrap().expect("a free lock");
    let generation = store.new_generation().unwrap();
    let fresh = generation.backend();
    let counts = fresh.counts().unwrap();
    assert_eq!((counts.files, counts.chunks, counts.vectors), (0, 0, 0));
    assert!(fresh
        .keyword_search(&["kilo".into()], 10, &[])
        .unwrap()
        .is_empty());
    let hashes = [
        hash_of("kilo cached"),
        hash_of("lima cached"),
        hash_of("never"),
    ];
    let refs: Vec<&str> = hashes.iter().map(String::as_str).collect();
    let cached = fresh.cached_embeddings(&refs).unwrap();
    assert_eq!(cached.len(), 2, "{:?}", cached.keys());
    for text in ["kilo cached", "lima cached"] {
        let want = vector_of(text);
        let got = &cached[&hash_of(text)];
        assert!(
            got.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-6),
            "{text}: {got:?}"
        );
    }
    assert_eq!(
        live.counts().unwrap().chunks,
        2,
        "the live generation is untouched"
    );
    drop(generation);
    assert_eq!(found(&*store, "kilo"), ["kilo cached"]);
}

/// A swap retires the generation it replaces: afterwards the index has
/// one generation again, the new one.
pub fn the_swap_retires_the_replaced_generation(case: &StoreCase) {
    let store = (case.open)();
    put(&*store.live().unwrap(), "memory/a.md", &["retired text"]);
    let first = (case.generations)();
    assert_eq!(first.len(), 1, "{first:?}");
    let _lock = store.lock(LockWait::Forever).unwrap().expect("a free lock");
    let generation = store.new_generation().unwrap();
    let during = (case.generations)();
    assert_eq!(
        during.len(),
        2,
        "the live one and the one being built: {during:?}"
    );
    put(&*generation.backend(), "memory/a.md", &["current text"]);
    generation.swap_in().unwrap();
    let after = (case.generations)();
    assert_eq!(after.len(), 1, "{after:?}");
    assert!(
        !after.contains(&first[0]),
        "{first:?} was not retired: {after:?}"
    );
    assert!(
        during.contains(&after[0]),
        "{after:?} is not the one built: {during:?}"
    );
    assert_eq!(found(&*store, "current"), ["current text"]);
    assert!(found(&*store, "retired").is_empty());
}

/// A generation dropped without its swap (a rebuild that failed) is
/// discarded: its storage goes, and the live generation is as it was.
pub fn a_generation_dropped_without_its_swap_leaves_nothing(case: &StoreCase) {
    let store = (case.open)();
    put(&*store.live().unwrap(), "memory/a.md", &["kept text"]);
    let before = (case.generations)();
    let location = store.location();
    let _lock = store.lock(LockWait::Forever).unwrap().expect("a free lock");
    let generation = store.new_generation().unwrap();
    put(&*generation.backend(), "memory/b.md", &["abandoned text"]);
    drop(generation);
    assert_eq!((case.generations)(), before);
    assert_eq!(store.location(), location);
    assert_eq!(found(&*store, "kept"), ["kept text"]);
    assert!(found(&*store, "abandoned").is_empty());
    let reopened = (case.open)();
    assert!(found(&*reopened, "abandoned").is_empty());
    assert_eq!(reopened.live().unwrap().counts().unwrap().files, 1);
}

/// A search that took the live generation before a swap finishes on it:
/// it answers from the old data or fails (the store dropped it under the
/// search, which then retries on the live one), and never answers from
/// the new generation.
pub fn a_reader_of_the_replaced_generation_never_sees_the_new(case: &StoreCase) {
    let store = (case.open)();
    let held = store.live().unwrap();
    put(&*held, "memory/a.md", &["charlie old"]);
    let _lock = store.lock(LockWait::Forever).unwrap().expect("a free lock");
    let generation = store.new_generation().unwrap();
    put(&*generation.backend(), "memory/a.md", &["charlie new"]);
    generation.swap_in().unwrap();
    if let Ok(hits) = held.keyword_search(&["charlie".into()], 10, &[]) {
        let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
        if let Ok(chunks) = held.chunks(&ids) {
            let texts: Vec<String> = chunks.into_iter().map(|c| c.text).collect();
            assert!(
                texts.iter().all(|t| t == "charlie old"),
                "the replaced generation answered {texts:?}"
            );
        }
    }
    assert_eq!(found(&*store, "charlie"), ["charlie new"]);
}

/// Rebuilds one after another, as fast as they come: each swap replaces
/// the last one's generation, and what the last one built is live.
pub fn rebuilds_in_a_row_each_replace_the_last(case: &StoreCase) {
    let store = (case.open)();
    let _lock = store.lock(LockWait::Forever).unwrap().expect("a free lock");
    for round in 0..3 {
        let generation = store.new_generation().unwrap();
        let text = format!("round{round} text");
        put(&*generation.backend(), "memory/r.md", &[&text]);
        generation.swap_in().unwrap();
        assert_eq!(found(&*store, &format!("round{round}")), [text]);
        let generations = (case.generations)();
        assert_eq!(generations.len(), 1, "round {round}: {generations:?}");
    }
    let reopened = (case.open)();
    assert_eq!(found(&*reopened, "round2"), ["round2 text"]);
    assert!(found(&*reopened, "round1").is_empty());
}

/// The writer lock has one holder: another handle that may wait until a
/// deadline gets `None` once it passes (not before), and the lock once the
/// holder drops it.
pub fn the_writer_lock_has_one_holder(case: &StoreCase) {
    let a = (case.open)();
    let b = (case.open)();
    let held = a.lock(LockWait::Forever).unwrap().expect("free at first");
    let started = Instant::now();
    let wait = Duration::from_millis(150);
    let refused = b.lock(LockWait::Until(started + wait)).unwrap();
    assert!(refused.is_none(), "two writers at once");
    assert!(
        started.elapsed() >= wait,
        "gave up after {:?}, before its deadline",
        started.elapsed()
    );
    // A deadline already past is a try.
    assert!(b.lock(LockWait::Until(Instant::now())).unwrap().is_none());
    drop(held);
    let again = b
        .lock(LockWait::Until(Instant::now() + Duration::from_secs(10)))
        .unwrap();
    assert!(again.is_some(), "released when its holder dropped it");
    assert!(
        a.lock(LockWait::Until(Instant::now())).unwrap().is_none(),
        "the other handle holds it now"
    );
}

/// A writer that waits forever blocks while another holds the lock and
/// gets it when that one lets go.
pub fn a_writer_waiting_forever_gets_the_lock_when_it_is_freed(case: &StoreCase) {
    let a = (case.open)();
    let b = (case.open)();
    let held = a.lock(LockWait::Forever).unwrap().expect("free at first");
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let got = b.lock(LockWait::Forever);
            let _ = tx.send(got.map(|l| l.is_some()).map_err(|e| e.to_string()));
            // Held until the scope ends: dropped with `got`.
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "the waiter got the lock while another held it"
        );
        drop(held);
        let got = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the waiter never got the freed lock");
        assert_eq!(got, Ok(true));
    });
}

/// A scrub after a delete keeps everything live: files, chunks, vectors,
/// cached embeddings and both searches answer as before it.
pub fn a_scrub_keeps_what_is_live(case: &StoreCase) {
    let store = (case.open)();
    let live = store.live().unwrap();
    put(&*live, "memory/keep.md", &["echo kept", "foxtrot kept"]);
    put(&*live, "memory/gone.md", &["golf deleted"]);
    live.delete_file("memory/gone.md").unwrap();
    let before = live.counts().unwrap();
    store.scrub().unwrap();
    let after = store.live().unwrap();
    let counts = after.counts().unwrap();
    assert_eq!(
        (counts.files, counts.chunks, counts.vectors),
        (before.files, before.chunks, before.vectors)
    );
    assert_eq!((counts.files, counts.chunks, counts.vectors), (1, 2, 2));
    assert_eq!(found(&*store, "echo"), ["echo kept"]);
    assert!(found(&*store, "golf").is_empty());
    let hits = after
        .vector_search(&vector_of("foxtrot kept"), 1, &[])
        .unwrap();
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    let texts: Vec<String> = after
        .chunks(&ids)
        .unwrap()
        .into_iter()
        .map(|c| c.text)
        .collect();
    assert_eq!(texts, ["foxtrot kept"]);
    let cached = after.cached_embeddings(&[&hash_of("echo kept")]).unwrap();
    assert_eq!(cached.len(), 1);
    // The index still takes writes.
    put(&*after, "memory/later.md", &["hotel later"]);
    assert_eq!(found(&*(case.open)(), "hotel"), ["hotel later"]);
}

/// What a delete leaves of the deleted text in the storage's bytes (dead
/// rows, free pages, logs) is gone after a scrub, where the case can read
/// those bytes. The needles are the deleted lines, not single words: a
/// word may rightly stay while another file uses it.
pub fn a_scrub_erases_what_a_delete_left_behind(case: &StoreCase) {
    let Some(holding) = &case.holding else {
        eprintln!(
            "note: this store's raw bytes cannot be read here; the scrub's erasure is unchecked"
        );
        return;
    };
    let store = (case.open)();
    let live = store.live().unwrap();
    // Enough lines to fill pages of their own.
    let lines: Vec<String> = (0..40)
        .map(|i| format!("zanzibar secret note{i} with words enough to fill a page"))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    put(&*live, "memory/secret.md", &refs);
    put(&*live, "memory/other.md", &["india remains"]);
    live.delete_file("memory/secret.md").unwrap();
    // The cached vectors are keyed by the lines' hashes, not their text.
    live.prune_embedding_cache(0).unwrap();
    let needles = [lines[0].as_str(), lines[39].as_str()];
    for needle in needles {
        assert!(
            !holding(needle).is_empty(),
            "{needle:?} is not in the storage's bytes before the scrub: the case's \
             byte reader cannot see it, so the check below would prove nothing"
        );
    }
    store.scrub().unwrap();
    for needle in needles {
        let left = holding(needle);
        assert!(left.is_empty(), "the scrub left {needle:?} in {left:?}");
    }
    assert_eq!(found(&*store, "india"), ["india remains"]);
    assert!(found(&*store, "zanzibar").is_empty());
}

// Helpers (not scenarios: private, so the completeness check skips them).

fn hash_of(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// A deterministic unit vector for a text (as the backend suite's).
fn vector_of(text: &str) -> Vec<f32> {
    let mut v = vec![0.05f32; DIMS];
    for (i, byte) in text.bytes().enumerate() {
        v[(i * 7 + byte as usize) % DIMS] += (byte % 13) as f32 / 13.0 - 0.3;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// Writes `texts` as the chunks of `path` (one line each), with vectors.
fn put(b: &dyn IndexBackend, path: &str, texts: &[&str]) {
    let content = texts.join("\n");
    let file = FileRecord {
        path: path.to_string(),
        source: Source::Memory,
        hash: hash_of(&content),
        mtime_ms: 1_772_000_000_000,
        size: content.len() as u64,
        embedded: true,
        session_key: None,
    };
    let chunks: Vec<NewChunk> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| NewChunk {
            start_line: i + 1,
            end_line: i + 1,
            hash: hash_of(t),
            text: t.to_string(),
            tokens: t.to_lowercase(),
            messages: None,
            parts: Vec::new(),
            days: None,
        })
        .collect();
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
    b.upsert_file(&file, &chunks, Some(&vectors)).unwrap();
}

/// The texts of the live generation's chunks holding `word`, sorted.
fn found(store: &dyn IndexStore, word: &str) -> Vec<String> {
    let live = store.live().unwrap();
    let hits = live.keyword_search(&[word.to_string()], 50, &[]).unwrap();
    let ids: Vec<i64> = hits.iter().map(|h| h.0).collect();
    let mut texts: Vec<String> = live
        .chunks(&ids)
        .unwrap()
        .into_iter()
        .map(|c| c.text)
        .collect();
    texts.sort();
    texts
}
