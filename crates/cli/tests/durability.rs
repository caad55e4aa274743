//! The session log under abuse, through the real `mnemo` binary: writers
//! killed with SIGKILL mid-stream, and several processes appending to one
//! session at once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mnemo::store::session::WarningKind;
use mnemo_test_support::cli::mnemo_command;
use rand::{RngExt, SeedableRng};

fn mnemo(ws: &Path) -> Command {
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &[])
}

fn message_line(writer: usize, i: usize) -> String {
    // Varying sizes so that kills land inside writes of different lengths.
    let pad = "z".repeat((i * 37) % 700);
    format!("{{\"role\":\"user\",\"content\":\"w{writer} m{i} {pad}\"}}\n")
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_message() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    assert!(mnemo(ws).arg("init").output().unwrap().status.success());
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut total_acked = 0usize;
    let mut torn_seen = 0usize;
    let store = common::session_store(ws);
    for run in 0..50 {
        let key = format!("crash:{run}");
        let mut child = mnemo(ws)
            .args([
                "session",
                "append",
                &key,
                "--ack",
                "--set",
                "session.fsync=never",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            for i in 0..10_000 {
                if stdin.write_all(message_line(run, i).as_bytes()).is_err() {
                    break;
                }
            }
        });
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acked = 0usize;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let n: usize = line.strip_prefix("ok ").unwrap().parse().unwrap();
                assert_eq!(n, acked + 1);
                acked = n;
            }
            acked
        });
        std::thread::sleep(Duration::from_micros(rng.random_range(2_000..60_000)));
        unsafe {
            libc::kill(child.id() as i32, libc::SIGKILL);
        }
        let _ = child.wait();
        let acked = reader.join().unwrap();
        let _ = feeder.join();

        let rel = common::storage(ws).session_rel(&key).unwrap();
        if !common::exists(ws, &rel) {
            assert_eq!(acked, 0, "run {run}: acknowledged messages but no file");
            continue;
        }
        let loaded = store.load(&key).unwrap();
        let torn = loaded
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::TornTail)
            .count();
        let other = loaded
            .warnings
            .iter()
            .filter(|w| w.kind != WarningKind::TornTail)
            .count();
        assert_eq!(other, 0, "run {run}: {:?}", loaded.warnings);
        torn_seen += torn;
        assert!(
            loaded.messages.len() >= acked,
            "run {run}: {} loaded < {acked} acknowledged",
            loaded.messages.len()
        );
        for (i, m) in loaded.messages.iter().enumerate() {
            assert!(
                m.text().starts_with(&format!("w{run} m{i} ")),
                "run {run}: message {i} out of order"
            );
        }
        // The next writer sets any torn tail aside and appends cleanly.
        let mut log = store.open(&key).unwrap();
        log.append(&[mnemo::core::Message::user("after crash")])
            .unwrap();
        let reloaded = store.load(&key).unwrap();
        assert!(
            reloaded.warnings.is_empty(),
            "run {run}: {:?}",
            reloaded.warnings
        );
        assert_eq!(reloaded.messages.last().unwrap().text(), "after crash");
        if torn > 0 {
            assert!(
                log.torn_path().exists(),
                "run {run}: torn tail not kept in a sidecar"
            );
        }
        total_acked += acked;
    }
    assert!(
        total_acked > 0,
        "no run acknowledged anything: the writer never started?"
    );
    eprintln!("acknowledged {total_acked} messages over 50 kills; {torn_seen} torn tail(s) seen and set aside");
}

#[test]
fn four_processes_appending_2500_each_give_10000_intact_lines() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    assert!(mnemo(ws).arg("init").output().unwrap().status.success());
    let children: Vec<_> = (0..4)
        .map(|w| {
            let mut child = mnemo(ws)
                .args(["session", "append", "shared:chat"])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let feeder = std::thread::spawn(move || {
                let mut buf = String::new();
                for i in 0..2_500 {
                    buf.push_str(&message_line(w, i));
                }
                stdin.write_all(buf.as_bytes()).unwrap();
            });
            (child, feeder)
        })
        .collect();
    for (child, feeder) in children {
        feeder.join().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let loaded = common::session_store(ws).load("shared:chat").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages.len(), 10_000);
    assert_eq!(loaded.metadata_records, 1);
    let rel = common::storage(ws).session_rel("shared:chat").unwrap();
    let text = common::read(ws, &rel);
    assert_eq!(text.lines().count(), 10_001);
    for w in 0..4 {
        let prefix = format!("w{w} m");
        let seq: Vec<usize> = loaded
            .messages
            .iter()
            .filter_map(|m| {
                let t = m.text();
                t.strip_prefix(&prefix)
                    .map(|r| r.split(' ').next().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(seq, (0..2_500).collect::<Vec<_>>(), "writer {w}");
    }
}
