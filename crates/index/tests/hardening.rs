//! Hostile workspaces: links inside the workspace that lead a memory file to
//! `mnemo.toml` or to a session log, FIFOs named like memory files, and the
//! index generations a killed rebuild leaves behind.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use common::Fixture;
use mnemo_core::ErrorCode;
use mnemo_index::{IndexSettings, MemoryIndex, SearchRequest};

fn keyword_index(f: &Fixture) -> MemoryIndex {
    mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), None).unwrap()
}

fn hits(index: &MemoryIndex, query: &str) -> Vec<String> {
    index
        .search(&SearchRequest::new(query))
        .unwrap()
        .results
        .into_iter()
        .map(|h| format!("{} {}", h.path, h.snippet))
        .collect()
}

/// `memory/settings.md -> ../mnemo.toml` must not make an API key
/// searchable, and a link to a session log must not bypass the transcript
/// redaction.
#[cfg(unix)]
#[test]
fn links_to_config_or_session_logs_are_not_indexed_as_memory() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n- Dana lives in Porto.\n");
    f.write(
        "mnemo.toml",
        "[provider]\napi_key = \"sk-proj-Zq8uXv2Lw9Rt4Yb7Nc1Md6Kp3Hs5Jg0F\"\n",
    );
    f.write(
        "sessions/cli_direct.jsonl",
        concat!(
            "{\"_type\":\"metadata\",\"key\":\"cli:direct\",\"created_at\":\"2026-01-01T00:00:00\",",
            "\"updated_at\":\"2026-01-01T00:00:00\",\"metadata\":{},\"last_consolidated\":0}\n",
            "{\"role\":\"user\",\"content\":\"my key is sk-proj-Wm4nQx7Tz1Vb9Lc3Rd8Ke2Jf6Hs0Gp5Y, keep it\",",
            "\"timestamp\":\"2026-01-01T10:00:00\"}\n"
        ),
    );
    std::fs::create_dir_all(f.root().join("memory")).unwrap();
    symlink(
        f.root().join("mnemo.toml"),
        f.root().join("memory/settings.md"),
    )
    .unwrap();
    symlink(
        f.root().join("sessions/cli_direct.jsonl"),
        f.root().join("memory/chat.md"),
    )
    .unwrap();
    let index = keyword_index(&f);
    let report = index.sync(&|_| {}).unwrap();
    for skipped in ["memory/settings.md", "memory/chat.md"] {
        assert!(
            report.issues.iter().any(|i| i.path == skipped),
            "{skipped}: {:?}",
            report.issues
        );
    }
    for secret in [
        "sk-proj-Zq8uXv2Lw9Rt4Yb7Nc1Md6Kp3Hs5Jg0F",
        "sk-proj-Wm4nQx7Tz1Vb9Lc3Rd8Ke2Jf6Hs0Gp5Y",
        "api_key",
    ] {
        let found = hits(&index, secret);
        assert!(
            found.iter().all(|h| !h.contains("sk-proj")),
            "{secret}: {found:?}"
        );
    }
    // The session log itself is indexed, redacted.
    assert!(!hits(&index, "keep it").is_empty());
}

/// `memory_get` on a FIFO named like a memory file answers at once with a
/// refusal instead of hanging forever.
#[cfg(unix)]
#[test]
fn memory_get_on_a_fifo_does_not_hang() {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n");
    std::fs::create_dir_all(f.root().join("memory")).unwrap();
    let fifo = f.root().join("memory/pipe.md");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let index = keyword_index(&f);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let got = index.get("memory/pipe.md", None, None);
        let synced = index.sync(&|_| {}).map(|r| r.files_scanned);
        let _ = tx.send((got.map(|g| g.text), synced));
    });
    let (got, synced) = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("memory_get on a FIFO hung");
    let e = got.unwrap_err();
    assert_eq!(e.code(), ErrorCode::Forbidden, "{e}");
    assert!(e.to_string().contains("regular file"), "{e}");
    assert_eq!(synced.unwrap(), 1, "only MEMORY.md is a memory file");
}

/// A rebuild killed before its swap leaves `index-<ms>.sqlite` (and its WAL)
/// behind: the next open removes them, keeps the live index, and leaves a
/// generation alone while a sync holds the lock.
#[test]
fn stale_index_generations_are_collected_on_open() {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core\n- Dana lives in Porto.\n");
    let index = keyword_index(&f);
    index.reindex(true, &|_| {}).unwrap();
    let live = index.status().unwrap().location;
    drop(index);
    let state = f.root().join(".mnemo");
    let orphans = [
        "index-1764000000000.sqlite",
        "index-1764000000000.sqlite-wal",
        "index-1764000000000.sqlite-shm",
        "index-1764000000001.sqlite",
    ];
    for o in orphans {
        std::fs::copy(&live, state.join(o)).unwrap();
    }
    std::fs::write(state.join("index-notes.txt"), "not an index").unwrap();

    // While another sync holds the lock, a new generation may be one being
    // built: it is left alone.
    let lock = std::fs::File::options()
        .write(true)
        .open(state.join("sync.lock"))
        .unwrap();
    lock.lock().unwrap();
    drop(keyword_index(&f));
    for o in orphans {
        assert!(state.join(o).exists(), "{o} removed during a sync");
    }
    lock.unlock().unwrap();

    let index = keyword_index(&f);
    for o in orphans {
        assert!(!state.join(o).exists(), "{o} left behind");
    }
    assert!(state.join("index-notes.txt").exists());
    assert_eq!(index.status().unwrap().location, live);
    assert!(!hits(&index, "Porto").is_empty());
}
