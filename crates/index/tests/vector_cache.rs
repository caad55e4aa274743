//! The on-disk vector cache (`.mnemo/vectors.cache`): written after a load
//! from SQLite, used by a fresh process while the database is unchanged,
//! and ignored (then rewritten) when stale, truncated or damaged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

use common::{daily_log, Fixture};
use mnemo_core::Embedder;
use mnemo_embed::HashEmbedder;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};

fn open(f: &Fixture) -> MemoryIndex {
    let mut s = IndexSettings::default();
    s.search.vector_weight = 1.0;
    s.search.text_weight = 0.0;
    s.search.sync_on_search = false;
    let emb: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(64));
    mnemo_index_sqlite::open(&f.ws, s, Some(emb)).unwrap()
}

fn top(index: &MemoryIndex) -> Vec<(String, f32)> {
    index
        .search(
            &SearchRequest::new("the budget for the river trip")
                .max_results(10)
                .min_score(-1.0),
        )
        .unwrap()
        .results
        .into_iter()
        .map(|h| (h.path, h.vector_score.unwrap()))
        .collect()
}

fn cache(f: &Fixture) -> PathBuf {
    f.root().join(".mnemo/vectors.cache")
}

#[test]
fn cache_is_used_when_current_and_rebuilt_when_stale_or_damaged() {
    let f = Fixture::new();
    for i in 0..40 {
        f.write(
            &format!("memory/2026-01-{:02}.md", i % 28 + 1),
            daily_log(i),
        );
        f.write(&format!("memory/extra/n{i}.md"), daily_log(i * 3 + 1));
    }
    let writer = open(&f);
    writer.sync(&|_| {}).unwrap();
    let want = top(&writer);
    assert_eq!(want.len(), 10);
    // The writer's vectors never came from a load (its own writes were
    // applied in memory), so the first fresh process writes the cache ...
    assert!(!cache(&f).exists());
    assert_eq!(top(&open(&f)), want);
    let ino = std::fs::metadata(cache(&f)).unwrap().ino();

    // ... and the next one reads it (not rewritten).
    assert_eq!(top(&open(&f)), want);
    assert_eq!(std::fs::metadata(cache(&f)).unwrap().ino(), ino);

    // Damaged content of the right length: the checksum refuses it, the
    // vectors come from SQLite and the cache is rewritten.
    let mut bytes = std::fs::read(cache(&f)).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x55;
    std::fs::write(cache(&f), &bytes).unwrap();
    assert_eq!(top(&open(&f)), want);
    assert_ne!(std::fs::read(cache(&f)).unwrap(), bytes);

    // Truncated: ignored as well.
    std::fs::write(cache(&f), &bytes[..n / 2]).unwrap();
    assert_eq!(top(&open(&f)), want);
    assert_eq!(std::fs::read(cache(&f)).unwrap().len(), n);

    // A write since the cache was made: the stale cache must not hide it.
    f.write("memory/extra/budget.md", "the budget for the river trip\n");
    writer.sync(&|_| {}).unwrap();
    let fresh = top(&open(&f));
    assert_eq!(fresh[0].0, "memory/extra/budget.md", "{fresh:?}");
    assert_eq!(fresh, top(&writer));
    f.remove("memory/extra/budget.md");
    writer.sync(&|_| {}).unwrap();
    assert_eq!(top(&open(&f)), want);
}
