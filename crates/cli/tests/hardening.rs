//! Hostile input through the real binary: a reader that closes the pipe,
//! text that once panicked the daily log, and the servers' refusal of a
//! foreign `Host` (DNS rebinding) on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success as ok};

fn mnemo(ws: &Path, args: &[&str]) -> Command {
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
}

/// `mnemo get MEMORY.md | head -1`, `mnemo status | head -1`: the reader
/// is gone before mnemo writes; the command ends quietly, no panic.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(&run_with_stdin(mnemo(ws, &["init"]), b""));
    let long: String = (0..20_000).map(|i| format!("- fact {i}\n")).collect();
    common::write(ws, "MEMORY.md", long);
    for args in [
        &["get", "MEMORY.md"][..],
        &["status"][..],
        &["memory", "show"][..],
    ] {
        let mut child = mnemo(ws, args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then hang up, as `head -1` does.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        let _ = stdout.read(&mut first);
        drop(stdout);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    }
}

/// `mnemo log "[12:34]éx"` (and a log already holding such a line) logs.
#[test]
fn stamps_followed_by_any_character_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(&run_with_stdin(mnemo(ws, &["init"]), b""));
    ok(&run_with_stdin(mnemo(ws, &["log", "[12:34]éx"]), b""));
    ok(&run_with_stdin(
        mnemo(ws, &["log", "[09:00]über wichtig"]),
        b"",
    ));
    ok(&run_with_stdin(mnemo(ws, &["log", "something else"]), b""));
}

/// A raw request with the given Host; returns the status.
fn status_for_host(port: u16, method: &str, path: &str, host: &str) -> u16 {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = "{}";
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    raw.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0)
}

/// Both servers, started as a user starts them, refuse a foreign Host on
/// loopback with 403 and answer their own.
#[test]
fn the_servers_refuse_a_foreign_host_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(&run_with_stdin(mnemo(ws, &["init"]), b""));
    for (args, path) in [
        (&["serve", "--http", "127.0.0.1:0"][..], "/v1/sessions"),
        (&["mcp", "--http", "127.0.0.1:0"][..], "/mcp"),
    ] {
        let mut cmd = mnemo(ws, args);
        cmd.args(["--set", "embedder.kind=none"]);
        let mut child = Server(
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        // The server says where it listens on stderr.
        let mut err = child.0.stderr.take().unwrap();
        let mut seen = String::new();
        let mut buf = [0u8; 256];
        let port = loop {
            let n = err.read(&mut buf).unwrap();
            assert!(n > 0, "the server ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            if let Some(p) = seen
                .split("127.0.0.1:")
                .nth(1)
                .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|p| p.parse::<u16>().ok())
            {
                break p;
            }
        };
        let method = if path == "/mcp" { "POST" } else { "GET" };
        assert_eq!(
            status_for_host(port, method, path, "evil.example"),
            403,
            "{args:?}"
        );
        assert_ne!(
            status_for_host(port, method, path, &format!("127.0.0.1:{port}")),
            403,
            "{args:?}"
        );
        drop(child);
    }
}

/// A server process, stopped when dropped (also when an assertion fails).
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
