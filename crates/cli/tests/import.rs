//! `mnemo import` through the real binary: a nanobot workspace is listed by
//! a dry run (nothing written), imported, and a second run skips everything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success as ok};

fn mnemo(ws: &Path, args: &[&str]) -> Output {
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .output()
        .unwrap()
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.display().to_string(), fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn import_nanobot_dry_run_then_real_then_again() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("nanobot");
    let ws = dir.path().join("ws");
    write(
        &src,
        "sessions/cli_direct.jsonl",
        "{\"_type\":\"metadata\",\"key\":\"cli:direct\",\"created_at\":\"2026-03-03T12:00:00\",\"updated_at\":\"2026-03-03T12:00:00\",\"metadata\":{},\"last_consolidated\":1}\n{\"role\":\"user\",\"content\":\"my cat is Mochi\",\"timestamp\":\"2026-03-03T12:00:00\"}\n{\"role\":\"assistant\",\"content\":\"Noted.\",\"timestamp\":\"2026-03-03T12:00:01\"}\n",
    );
    write(&src, "memory/MEMORY.md", "- The user's cat is Mochi\n");
    write(
        &src,
        "memory/HISTORY.md",
        "[2026-03-03 12:00] Talked about Mochi.\n\n",
    );
    ok(&mnemo(&ws, &["init"]));

    let before = snapshot(&ws);
    let dry = ok(&mnemo(
        &ws,
        &["import", "nanobot", src.to_str().unwrap(), "--dry-run"],
    ));
    assert!(
        dry.contains("create  session      sessions/cli_direct.jsonl"),
        "{dry}"
    );
    assert!(dry.contains("dry run"), "{dry}");
    assert_eq!(snapshot(&ws), before, "the dry run wrote");

    let out = ok(&mnemo(&ws, &["import", "nanobot", src.to_str().unwrap()]));
    assert!(out.contains("2 message(s)"), "{out}");
    let log = fs::read_to_string(ws.join("sessions/cli_direct.jsonl")).unwrap();
    assert!(log.contains("my cat is Mochi") && log.contains("\"last_consolidated\":1"));
    assert!(fs::read_to_string(ws.join("MEMORY.md"))
        .unwrap()
        .contains("- The user's cat is Mochi"));
    assert!(fs::read_to_string(ws.join("memory/HISTORY.md"))
        .unwrap()
        .contains("Talked about Mochi."));

    let after = snapshot(&ws);
    let again = ok(&mnemo(&ws, &["import", "nanobot", src.to_str().unwrap()]));
    assert!(
        !again.contains("create") && again.contains("skip"),
        "{again}"
    );
    assert_eq!(snapshot(&ws), after, "the second run changed the workspace");

    let bad = mnemo(&ws, &["import", "hermes", src.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("use nanobot, openclaw or claude-code"));
}

/// The fixtures the peers' own releases wrote (crates/import/tests/peers).
fn peers() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/peers")
}

#[test]
fn import_asks_which_agent_then_takes_one_or_all_and_exports_to_nanobot() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    ok(&mnemo(&ws, &["init"]));
    let openclaw = peers().join("openclaw-2026.9.6/.openclaw");
    let openclaw = openclaw.to_str().unwrap();

    // Two agents and no choice: exit 2, the names and the flags to choose.
    let asked = mnemo(&ws, &["import", "openclaw", openclaw]);
    assert_eq!(asked.status.code(), Some(2));
    let err = String::from_utf8_lossy(&asked.stderr);
    assert!(
        err.contains("found 2 agents (main, work)")
            && err.contains("--only NAME")
            && err.contains("--all"),
        "{err}"
    );

    let one = ok(&mnemo(
        &ws,
        &["import", "openclaw", openclaw, "--only", "work"],
    ));
    assert!(one.contains("1 conversation(s) found"), "{one}");
    assert!(one.contains("another agent, not chosen"), "{one}");
    let all = ok(&mnemo(&ws, &["import", "openclaw", openclaw, "--all"]));
    assert!(all.contains("2 conversation(s) found"), "{all}");

    // A memory folder alone: imported, but the missing conversations fail
    // the command unless allowed.
    let memory = peers().join("claude-code-2.1.332/.claude/projects/-ex-ample-src-garden/memory");
    let memory = memory.to_str().unwrap();
    let strict = mnemo(&ws, &["import", "claude-code", memory]);
    assert_eq!(strict.status.code(), Some(1));
    let out = String::from_utf8_lossy(&strict.stdout);
    assert!(
        out.contains("no conversations found where claude-code keeps them"),
        "{out}"
    );
    ok(&mnemo(
        &ws,
        &["import", "claude-code", memory, "--allow-no-sessions"],
    ));

    // The sessions go to nanobot's data folder; a dry run writes nothing.
    let nanobot = dir.path().join("home/.nanobot");
    fs::create_dir_all(nanobot.join("workspace")).unwrap();
    let before = snapshot(&nanobot);
    let dry = ok(&mnemo(
        &ws,
        &["export", "nanobot", nanobot.to_str().unwrap(), "--dry-run"],
    ));
    assert!(dry.contains("dry run"), "{dry}");
    assert_eq!(snapshot(&nanobot), before);
    let out = ok(&mnemo(
        &ws,
        &["export", "nanobot", nanobot.to_str().unwrap()],
    ));
    assert!(out.contains("create  session"), "{out}");
    let logs: Vec<_> = fs::read_dir(nanobot.join("sessions"))
        .unwrap()
        .flatten()
        .flat_map(|ns| fs::read_dir(ns.path()).unwrap().flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 2, "{out}");
    let again = ok(&mnemo(
        &ws,
        &["export", "nanobot", nanobot.to_str().unwrap()],
    ));
    assert!(
        again.contains("already exported, unchanged") && !again.contains("create "),
        "{again}"
    );

    // Claude Code's project names start with `-`.
    let project = peers().join("claude-code-2.1.332/.claude");
    let chosen = ok(&mnemo(
        &ws,
        &[
            "import",
            "claude-code",
            project.to_str().unwrap(),
            "--only",
            "-ex-ample-src-garden",
            "--dry-run",
        ],
    ));
    assert!(chosen.contains("2 conversation(s) found"), "{chosen}");

    let help = ok(&mnemo(&ws, &["import", "--help"]));
    assert!(
        help.contains("sessions/<workspace id>/") && help.contains("openclaw-agent.sqlite"),
        "{help}"
    );
}

/// `--json` on import and export: one object with the actions and counts
/// (issue 43); a report with problems still fails, its error following as
/// an object of its own.
#[test]
fn import_and_export_answer_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    ok(&mnemo(&ws, &["init"]));
    let src = dir.path().join("nanobot");
    write(
        &src,
        "sessions/cli_direct.jsonl",
        "{\"_type\":\"metadata\",\"key\":\"cli:direct\",\"created_at\":\"2026-03-03T12:00:00\",\"updated_at\":\"2026-03-03T12:00:00\",\"metadata\":{},\"last_consolidated\":0}\n{\"role\":\"user\",\"content\":\"my cat is Mochi\",\"timestamp\":\"2026-03-03T12:00:00\"}\n",
    );
    let out = ok(&mnemo(
        &ws,
        &["import", "nanobot", src.to_str().unwrap(), "--json"],
    ));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["messages"], 1, "{v}");
    assert_eq!(v["conversations"], 1, "{v}");
    assert_eq!(v["problems"], 0, "{v}");
    assert_eq!(v["dry_run"], false, "{v}");
    assert!(v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["verb"] == "create" && a["target"] == "sessions/cli_direct.jsonl"));

    // No workspace/ in nanobot's folder: created, as the README says.
    let nanobot = dir.path().join("home/.nanobot");
    fs::create_dir_all(&nanobot).unwrap();
    let out = ok(&mnemo(
        &ws,
        &["export", "nanobot", nanobot.to_str().unwrap(), "--json"],
    ));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["messages"], 1, "{v}");
    assert!(nanobot.join("workspace").is_dir());

    // Problems: the report, then the error, each an object; exit 1.
    let memory = dir.path().join("cc-memory");
    write(&memory, "MEMORY.md", "- a note\n");
    let failed = mnemo(
        &ws,
        &["import", "claude-code", memory.to_str().unwrap(), "--json"],
    );
    assert_eq!(failed.status.code(), Some(1));
    let out = String::from_utf8_lossy(&failed.stdout);
    let objects: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{out}");
    assert_eq!(objects[0]["problems"], 1, "{out}");
    assert!(objects[1]["error"]["message"].is_string(), "{out}");
}
