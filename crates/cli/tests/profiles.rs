//! The profiles through the real binary: a profile whose consolidation is
//! off refuses `mnemo consolidate` (exit 7, the way to turn it on named)
//! and `mnemo new` writes its note without consolidating; a profile that
//! rewrites MEMORY.md warns when the model is the small local one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::{Reply, ScriptedServer};

/// `mnemo --set memory.profile=PROFILE ARGS…` with the scripted model.
fn mnemo(ws: &Path, server: &ScriptedServer, profile: &str, args: &[&str]) -> Output {
    let model_flags = if ["consolidate", "new"].contains(&args[0]) {
        server.model_flags()
    } else {
        Vec::new()
    };
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .args(model_flags)
        .args(["--set", "embedder.kind=none"])
        .arg("--set")
        .arg(format!("memory.profile={profile}"))
        .output()
        .unwrap()
}

fn session(ws: &Path, server: &ScriptedServer) {
    stdout_of_success(&mnemo(ws, server, "mnemo", &["init"]));
    for (role, text) in [
        ("user", "I live in Lisbon, near the river."),
        ("assistant", "Lisbon is lovely."),
        ("user", "I work as a nurse at the city hospital."),
        ("assistant", "That must be demanding."),
    ] {
        stdout_of_success(&mnemo(
            ws,
            server,
            "mnemo",
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
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn consolidate_is_refused_where_the_profile_has_it_off() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server);
    let memory_before = common::read(ws, "MEMORY.md");
    for profile in ["openclaw", "claude-code"] {
        let o = mnemo(ws, &server, profile, &["consolidate", "cli:direct"]);
        assert_eq!(o.status.code(), Some(7), "{}", text(&o.stderr));
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("the `{profile}` profile does not consolidate"))
                && err.contains("set `[engine] consolidation_enabled = true`"),
            "{err}"
        );
        let o = mnemo(
            ws,
            &server,
            profile,
            &["consolidate", "cli:direct", "--json"],
        );
        assert_eq!(o.status.code(), Some(7));
        let body: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(body["error"]["code"], "config", "{body}");
    }
    assert_eq!(server.request_count(), 0, "the model was never asked");
    assert_eq!(common::read(ws, "MEMORY.md"), memory_before);
    assert!(!common::exists(ws, "memory/HISTORY.md"));
    // Turned on by its key, the same profile consolidates.
    server.push(Reply::tool_call(
        "save_memory",
        serde_json::json!({"history_entry": "[2026-12-05 10:00] Lisbon and the hospital.", "memory_update": "- Lives in Lisbon; works as a nurse.\n"}),
    ));
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &["consolidate", "cli:direct"],
    )
    .args(server.model_flags())
    .args(["--set", "embedder.kind=none"])
    .args(["--set", "memory.profile=openclaw"])
    .args(["--set", "engine.consolidation_enabled=true"])
    .output()
    .unwrap();
    assert!(
        stdout_of_success(&o).contains("consolidated messages 0.."),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn new_writes_the_note_without_consolidating_where_it_is_off() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    session(ws, &server);
    server.push(Reply::text("Lisbon Nurse"));
    let out = stdout_of_success(&mnemo(ws, &server, "openclaw", &["new", "cli:direct"]));
    assert!(
        out.contains("consolidation is off in this workspace (profile `openclaw`)")
            && out.contains("session note written: memory/")
            && !out.contains("consolidated messages"),
        "{out}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "only the note's title");
    assert!(reqs[0].body.get("tools").is_none());
    assert!(!common::exists(ws, "memory/HISTORY.md"));
}

#[test]
fn nanobot_with_the_local_model_warns_that_it_cannot_rewrite_memory_md() {
    let gguf = mnemo_test_support::smollm2_gguf();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    // An existing workspace: a database's must be created to be opened.
    stdout_of_success(
        &mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &["init"])
            .output()
            .unwrap(),
    );
    let local = |profile: &str| {
        mnemo_command(
            env!("CARGO_BIN_EXE_mnemo"),
            ws,
            // No such session: the warning comes before the model works.
            &["consolidate", "cli:nobody"],
        )
        .args(["--set", "embedder.kind=none"])
        .args(["--set", "provider.kind=local"])
        .arg("--set")
        .arg(format!("provider.path={}", gguf.display()))
        .args(["--set", "provider.context_window=2048"])
        .arg("--set")
        .arg(format!("memory.profile={profile}"))
        .output()
        .unwrap()
    };
    let o = local("nanobot");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("warning: the `nanobot` profile consolidates by rewriting MEMORY.md, which a small local model cannot do")
            && err.contains("The `mnemo` or `mem0` profile keeps facts instead"),
        "{err}"
    );
    // The default profile keeps facts with the local model: no warning.
    let o = local("mnemo");
    assert_eq!(o.status.code(), Some(3));
    assert!(!text(&o.stderr).contains("warning:"), "{}", text(&o.stderr));
}
