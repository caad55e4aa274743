//! A MEMORY.md answer made of copied messages, through the real binary
//! under the `nanobot` profile: refused with exit 6 and the cursor kept;
//! a partial copy saved without its copied lines, and the command says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::json;

fn mnemo(ws: &Path, server: &ScriptedServer, args: &[&str]) -> Output {
    let model_flags = if args[0] == "consolidate" {
        server.model_flags()
    } else {
        Vec::new()
    };
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .args(model_flags)
        .args([
            "--set",
            "embedder.kind=none",
            "--set",
            "memory.profile=nanobot",
        ])
        .output()
        .unwrap()
}

const SAID: [(&str, &str); 4] = [
    ("user", "I live in Lisbon, near the river."),
    ("assistant", "Lisbon is lovely."),
    ("user", "I work as a nurse at the city hospital."),
    ("assistant", "That must be demanding."),
];

fn workspace(server: &ScriptedServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    stdout_of_success(&mnemo(ws, server, &["init"]));
    for (role, text) in SAID {
        stdout_of_success(&mnemo(
            ws,
            server,
            &[
                "session",
                "append",
                "cli:direct",
                "--role",
                role,
                "--content",
                text,
            ],
        ));
    }
    dir
}

fn save_memory(update: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-12-05 10:00] Lisbon, the river, the hospital.", "memory_update": update}),
    )
}

#[test]
fn a_transcript_for_memory_is_refused_and_the_cursor_stays() {
    let server = ScriptedServer::start_blocking();
    let dir = workspace(&server);
    let ws = dir.path();
    let before = common::read(ws, "MEMORY.md");
    let transcript: String = SAID
        .iter()
        .map(|(role, text)| {
            let role = if *role == "user" { "User" } else { "Assistant" };
            format!("**{role}:** {text}\n")
        })
        .collect();
    server.push(save_memory(&format!("{transcript}{before}")));
    let o = mnemo(ws, &server, &["consolidate", "cli:direct"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{err}");
    assert!(
        err.contains("4 of the 4 new lines of its MEMORY.md are not memory")
            && err.contains("the cursor stays at 0"),
        "{err}"
    );
    assert_eq!(common::read(ws, "MEMORY.md"), before);
    assert!(!common::exists(ws, "memory/HISTORY.md"));
}

#[test]
fn a_partial_copy_is_saved_without_its_copied_lines() {
    let server = ScriptedServer::start_blocking();
    let dir = workspace(&server);
    let ws = dir.path();
    server.push(save_memory(
        "# Memory\n\n- Lives in Lisbon, near the river.\n- Works as a nurse at the city hospital.\n**User:** I work as a nurse at the city hospital.\n",
    ));
    let out = stdout_of_success(&mnemo(ws, &server, &["consolidate", "cli:direct"]));
    insta::assert_snapshot!("consolidate_output_after_a_partial_copy", out);
    let memory = common::read(ws, "MEMORY.md");
    assert!(
        memory.contains("- Works as a nurse at the city hospital.")
            && !memory.contains("**User:**"),
        "{memory}"
    );
}
