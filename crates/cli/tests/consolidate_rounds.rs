//! `mnemo consolidate` through the real binary on long sessions and a
//! failing model (issue 43: N6 and its rough edges): a session larger than
//! the model's window goes in rounds that fit, quick re-runs against a
//! failing model are one failed run, the run that archives messages raw
//! exits non-zero and says so, and a terminal sees which round runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success};
use mnemo_test_support::{RecordedRequest, Reply, ScriptedServer};
use serde_json::json;

/// The model's window (tokens of chars/4 over the request body).
const WINDOW: usize = 8_000;

fn mnemo(ws: &Path, server: &ScriptedServer, args: &[&str]) -> Output {
    command(ws, server, args).output().unwrap()
}

fn command(ws: &Path, server: &ScriptedServer, args: &[&str]) -> Command {
    let mut c = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args);
    if args[0] == "consolidate" {
        c.args(server.model_flags());
    }
    c.args(["--set", "embedder.kind=none"])
        .args(["--set", &format!("provider.context_window={WINDOW}")])
        .args(["--set", "provider.max_output=1000"])
        .args(["--set", "provider.max_retries=0"]);
    c
}

/// A session of `turns` question/answer pairs, appended as JSONL.
fn session(ws: &Path, server: &ScriptedServer, turns: usize) {
    stdout_of_success(&mnemo(ws, server, &["init"]));
    let mut lines = String::new();
    for i in 0..turns {
        lines.push_str(
            &json!({"role": "user", "content": format!("question {i} about the weather {}", "q".repeat(200))})
                .to_string(),
        );
        lines.push('\n');
        lines.push_str(
            &json!({"role": "assistant", "content": format!("answer {i} {}", "a".repeat(200))})
                .to_string(),
        );
        lines.push('\n');
    }
    let o = run_with_stdin(
        command(ws, server, &["session", "append", "big:1"]),
        lines.as_bytes(),
    );
    stdout_of_success(&o);
}

/// save_memory to a request within the window; 400
/// `context_length_exceeded` (as OpenAI answers) to a longer one.
fn windowed(server: &ScriptedServer) {
    server.respond_with(|req: &RecordedRequest| {
        let tokens = req.raw_body.len() / 4;
        if tokens > WINDOW {
            return Reply::error(
                400,
                json!({"error": {"message": format!("maximum context length is {WINDOW} tokens, you sent {tokens}"), "code": "context_length_exceeded"}}),
            );
        }
        Reply::tool_call(
            "save_memory",
            json!({"history_entry": "[2026-03-01 10:00] talked about the weather", "memory_update": "- talks about the weather\n"}),
        )
    });
}

#[test]
fn a_session_larger_than_the_window_is_consolidated_in_rounds() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    // About 60,000 tokens, seven windows.
    session(ws, &server, 500);
    windowed(&server);
    let o = mnemo(ws, &server, &["consolidate", "big:1"]);
    let out = stdout_of_success(&o);
    let rounds = out.matches("consolidated messages ").count();
    assert!(rounds >= 8, "{out}");
    assert!(out.contains("..1000 into long-term memory"), "{out}");
    assert!(!out.contains("archived raw"), "{out}");
    for r in server.requests() {
        assert!(r.raw_body.len() / 4 <= WINDOW, "{}", r.raw_body.len());
    }
    // Not a terminal: no progress lines in the captured stderr.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("round 1"), "{err}");
}

#[test]
fn quick_reruns_are_one_failed_run_and_the_raw_archive_exits_non_zero() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server, 3);
    server.set_default(Reply::error(
        500,
        json!({"error": {"message": "upstream down", "type": "server_error"}}),
    ));
    let history = || common::read(ws, "memory/HISTORY.md");
    // A script's retry loop: three runs within a second.
    for run in 1..=3 {
        let o = mnemo(ws, &server, &["consolidate", "big:1"]);
        assert_eq!(o.status.code(), Some(6), "run {run}");
        let err = String::from_utf8_lossy(&o.stderr);
        if run == 1 {
            assert!(err.contains("failed run 1 of 3"), "{err}");
        } else {
            assert!(
                err.contains("Not counted as another failed run")
                    && err.contains("1 of 3 counted so far"),
                "{err}"
            );
        }
        assert!(!history().contains("[RAW]"), "{}", history());
    }
    // Failed runs far enough apart (here: no spacing) reach the limit, and
    // the run that archives the messages raw fails (exit 6), saying what
    // it did.
    let spaced = |json: bool| {
        let mut args = vec![
            "consolidate",
            "big:1",
            "--set",
            "engine.consolidation_failure_spacing_secs=0",
        ];
        if json {
            args.push("--json");
        }
        mnemo(ws, &server, &args)
    };
    let o = spaced(false);
    assert_eq!(o.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&o.stderr).contains("failed run 2 of 3"));
    let o = spaced(true);
    assert_eq!(o.status.code(), Some(6));
    let out = String::from_utf8_lossy(&o.stdout);
    let body: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(body["error"]["code"], "provider", "{out}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("failed 3 time(s) in a row")
            && message.contains("messages 0..6 were archived raw into memory/HISTORY.md")
            && message.contains("upstream down"),
        "{message}"
    );
    assert!(history().contains("[RAW] 6 messages"), "{}", history());
    // Nothing more to do: the next run succeeds.
    let o = spaced(false);
    assert!(stdout_of_success(&o).contains("nothing to do"));
}

#[test]
fn a_raw_archive_in_text_mode_prints_what_it_did_and_exits_6() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server, 2);
    server.set_default(Reply::text("I would rather chat."));
    let o = mnemo(
        ws,
        &server,
        &[
            "consolidate",
            "big:1",
            "--set",
            "engine.consolidation_max_failures=1",
        ],
    );
    assert_eq!(o.status.code(), Some(6));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        out.contains("archived raw after repeated failed runs"),
        "{out}"
    );
    assert!(
        err.contains("were archived raw") && err.contains("did not call save_memory"),
        "{err}"
    );
}

#[test]
fn a_terminal_sees_which_round_runs() {
    if Command::new("script").arg("--version").output().is_err() {
        // util-linux's `script` is part of every Debian system (bsdutils).
        assert!(
            std::env::var_os("CI").is_none(),
            "`script` is missing in CI"
        );
        eprintln!("notice: `script` (util-linux) is missing; skipping the terminal progress test");
        return;
    }
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server, 200);
    // Each answer takes a while, as a local model's does.
    server.respond_with(|req: &RecordedRequest| {
        let _ = req;
        Reply::delay(
            Duration::from_millis(700),
            Reply::tool_call(
                "save_memory",
                json!({"history_entry": "[2026-03-01 10:00] weather", "memory_update": "- weather\n"}),
            ),
        )
    });
    let cmd = command(ws, &server, &["consolidate", "big:1"]);
    let line = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    // `script` gives the command a terminal; its output is what it drew.
    // The command's environment (the database workspace, on that run)
    // goes through `script` to it.
    let mut script = Command::new("script");
    script
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("MNEMO_WORKSPACE");
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let o = script.output().unwrap();
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{screen}");
    assert!(
        screen.contains("consolidating messages 0..")
            && screen.contains("(round 1; 0 of 400 messages done, 0%"),
        "{screen}"
    );
    assert!(screen.contains("(round 2; "), "{screen}");
}

#[test]
fn new_exits_6_when_it_archived_the_conversation_raw() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server, 2);
    server.set_default(Reply::text("I would rather chat."));
    let mut c = command(ws, &server, &["new", "big:1"]);
    c.args(server.model_flags())
        .args(["--set", "engine.consolidation_max_failures=1"]);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(6));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    // The conversation is closed (note, cursor) and nothing is lost, but
    // the command says the consolidation failed.
    assert!(
        out.contains("archived raw") && out.contains("the next turn starts a new conversation"),
        "{out}"
    );
    assert!(err.contains("were archived raw"), "{err}");
}
