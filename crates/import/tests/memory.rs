//! The memory an import takes stays bounded however far the compressed
//! rows of its source expand: a conversation of a database is decoded up to
//! a limit, held once, and written a line at a time.
//!
//! A test binary of its own, with one test: it measures the peak resident
//! memory of the process, which other tests running beside it would
//! disturb.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "fixtures.rs"]
mod fixtures;

use fixtures::*;
use mnemo_core::Workspace;
use mnemo_import::{import, ImportOptions, Report, Select, Tool, Verb};

/// A field of `/proc/self/status`, in bytes.
fn status(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line
        .trim_start_matches(field)
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// The peak resident memory of `f`, over what was resident before it.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, u64) {
    // Writing 5 resets the peak (VmHWM) to what is resident now.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before = status("VmRSS");
    let out = f();
    (out, status("VmHWM").saturating_sub(before))
}

fn run(ws: &std::path::Path, src: &std::path::Path) -> Report {
    let opts = ImportOptions {
        select: Select::All,
        ..ImportOptions::default()
    };
    import(&Workspace::new(ws), Tool::OpenClaw, src, &opts).unwrap()
}

#[test]
fn an_openclaw_import_takes_bounded_memory_however_far_its_rows_expand() {
    let dir = tempfile::tempdir().unwrap();
    let home = copy_fixture("openclaw-2026.9.6", &dir.path().join("home"));
    let src = home.join(".openclaw");
    let db = src.join("agents/main/agent/openclaw-agent.sqlite");
    // Two conversations of 24 rows of 4 MiB (96 MiB each, under the 256
    // MiB a conversation could decode to before), each message line
    // holding its content and its original entry.
    add_expanding_conversations(&db, &["bomb-1", "bomb-2"], 24);
    let ws = dir.path().join("ws");
    // A conversation at the window limit is held as its records (about
    // twice its decoded bytes: 2.4 times the limit measured, the rest is
    // room for the allocator); before, it was held about eleven times over
    // (2.7 GB for the 256 MiB a conversation could then decode to).
    let bound = 4 * WINDOW;
    let (report, peak) = peak_of(|| run(&ws, &src));
    eprintln!("import: peak {} MiB over the start", peak >> 20);
    assert!(peak < bound, "peak {peak} bytes, bound {bound}");
    // The rows past the limit are errors.
    assert!(report.count(Verb::Error) > 0, "{}", lines(&report));
    // Again: the logs now there are read a line at a time to be compared.
    let (again, peak) = peak_of(|| run(&ws, &src));
    eprintln!("import again: peak {} MiB over the start", peak >> 20);
    assert!(!again.changed(), "{}", lines(&again));
    assert!(peak < bound, "peak {peak} bytes again, bound {bound}");
}
