//! What one writer at a time costs: the memory lock alone, and the memory
//! writes that take it (a MEMORY.md section, a typed memory found by name
//! among many files, a daily-log line), each fsynced as in use. Inputs are
//! generated without randomness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use chrono::{TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use mnemo_core::Workspace;
use mnemo_store::{FrontMatter, MemorySettings, MemoryStore, MemoryType, SaveMode};

fn front(name: &str) -> FrontMatter {
    FrontMatter {
        name: name.into(),
        description: "a fact about the user's projects".into(),
        kind: MemoryType::Project,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("memory_writes");
    g.sample_size(30);
    for files in [100usize, 1_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(&Workspace::new(dir.path()), MemorySettings::default());
        let memory: String = (0..150)
            .map(|i| format!("- durable fact number {i} about the user's projects\n"))
            .collect();
        store.write_memory_md(&memory).unwrap();
        for i in 0..files {
            store
                .save_typed(
                    front(&format!("memory {i}")),
                    "A body line.\n",
                    SaveMode::Create,
                )
                .unwrap();
        }
        if files == 100 {
            g.bench_function("lock_acquire_release", |b| {
                b.iter(|| black_box(store.lock().unwrap()))
            });
            let mut n = 0u64;
            g.bench_function("write_section_150_lines", |b| {
                b.iter(|| {
                    n += 1;
                    store
                        .write_section("Bench", &format!("- value {n}"))
                        .unwrap()
                })
            });
            let now = Utc.with_ymd_and_hms(2026, 11, 29, 10, 0, 0).unwrap();
            g.bench_function("append_daily_line", |b| {
                b.iter(|| {
                    n += 1;
                    // A thousand days in turn: each log stays short.
                    let day = now + chrono::Duration::days((n % 1_000) as i64);
                    store.append_daily(&format!("fact {n}"), day, true).unwrap()
                })
            });
        }
        // What a new name costs on top: every memory file is looked at.
        g.bench_function(format!("find_new_name_among_{files}_files"), |b| {
            b.iter(|| black_box(store.find_typed("a name nobody used").unwrap()))
        });
        let mut n = 0u64;
        g.bench_function(format!("save_typed_replace_among_{files}_files"), |b| {
            b.iter(|| {
                n += 1;
                store
                    .save_typed(
                        front("memory 7"),
                        &format!("Body {n}.\n"),
                        SaveMode::Replace,
                    )
                    .unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
