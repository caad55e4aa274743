//! The whole memory pipeline offline, through the real binary, on the local
//! provider with the real SmolLM2-135M-Instruct GGUF: record, consolidate,
//! session notes, compaction, recall and an agent turn, with no server and
//! no key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success};

fn mnemo(ws: &Path, args: &[&str]) -> Output {
    let gguf = mnemo_test_support::smollm2_gguf();
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .args(["--set", "embedder.kind=none"])
        .args(["--set", "provider.kind=local"])
        .arg("--set")
        .arg(format!("provider.path={}", gguf.display()))
        .args(["--set", "provider.context_window=2048"])
        .args(["--set", "provider.max_output=160"])
        // One try per chunk: a failed forced call is archived raw at once
        // (the fallback a remote model gets after its tries), which keeps
        // this test's model time bounded.
        .args(["--set", "engine.consolidation_max_failures=1"])
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    stdout_of_success(&o)
}

fn append(ws: &Path, key: &str, role: &str, text: &str) {
    ok(mnemo(
        ws,
        &["session", "append", key, "--role", role, "--content", text],
    ));
}

#[test]
fn the_memory_pipeline_runs_offline_on_the_local_model() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    for (role, text) in [
        ("user", "My name is Ada. I moved to Lisbon last week."),
        ("assistant", "Welcome to Lisbon, Ada."),
        ("user", "I drink green tea, never coffee."),
        ("assistant", "Green tea it is."),
        ("user", "Thanks!"),
    ] {
        append(ws, "cli:direct", role, text);
    }

    // Consolidation: with the local model the default profile works per
    // fact (a forced extract_facts call, constrained to its bounded
    // schema; what the model proposes is checked before it is kept).
    let out = ok(mnemo(ws, &["consolidate", "cli:direct"]));
    assert!(out.contains("consolidated messages 0..4"), "{out}");
    assert!(out.contains("memory/facts.md:"), "{out}");
    let history = std::fs::read_to_string(ws.join("memory/HISTORY.md")).unwrap();
    assert!(!history.trim().is_empty());

    // Compaction's summary level calls the model for a summary.
    let out = ok(mnemo(ws, &["compact", "cli:direct", "--level", "5"]));
    assert!(!out.trim().is_empty(), "{out}");

    // Recall: the side query reads the typed memories' manifest.
    let mut add = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &[
            "memory",
            "add",
            "--type",
            "user",
            "--name",
            "Tea",
            "--description",
            "prefers green tea",
        ],
    );
    add.args(["--set", "embedder.kind=none"]);
    let o = run_with_stdin(add, b"Prefers green tea, never coffee.");
    assert!(o.status.success(), "{o:?}");
    let out = ok(mnemo(
        ws,
        &["context", "cli:direct", "-m", "what do I drink?", "--json"],
    ));
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["model"], "SmolLM2-135M-Instruct.Q4_1", "{report}");

    // An agent turn answers offline and is logged. With the local model
    // its memory work runs after the answer, and recall is the index's
    // (no side query that would time out and hold the model).
    let o = mnemo(ws, &["run", "--session", "cli:direct", "--json", "Say hi."]);
    let turn: serde_json::Value = serde_json::from_str(&ok(o.clone())).unwrap();
    assert!(turn.get("answer").is_some(), "{turn}");
    assert_eq!(turn["memory_work"], "background", "{turn}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("side query timed out"), "{err}");
    let log = std::fs::read_to_string(ws.join("sessions/cli_direct.jsonl")).unwrap();
    assert!(log.contains("Say hi."), "{log}");

    // A new session: consolidation of the rest and a session note.
    append(ws, "cli:direct", "user", "I deploy on Fridays.");
    append(ws, "cli:direct", "assistant", "Noted.");
    let out = ok(mnemo(ws, &["new", "cli:direct"]));
    assert!(out.contains("note"), "{out}");
    let notes: Vec<_> = std::fs::read_dir(ws.join("memory"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.len() > 14 && n.as_bytes()[4] == b'-' && n.ends_with(".md") && n != "HISTORY.md"
        })
        .collect();
    assert!(!notes.is_empty(), "a session note was written: {notes:?}");
}

#[test]
fn with_no_provider_a_command_says_how_to_turn_one_on() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let init = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &["init"])
        .output()
        .unwrap();
    assert!(init.status.success());
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &["run", "--session", "s", "hello"],
    )
    .args(["--set", "embedder.kind=none"])
    .output()
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--provider local") && err.contains("--provider openai"),
        "{err}"
    );
}

#[test]
fn a_missing_model_file_is_a_clear_error_and_the_log_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    append(ws, "k", "user", "hello");
    append(ws, "k", "assistant", "hi");
    append(ws, "k", "user", "bye");
    let before = std::fs::read(ws.join("sessions/k.jsonl")).unwrap();
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &[
            "consolidate",
            "k",
            "--provider",
            "local",
            "--model",
            "/nonexistent/model.gguf",
        ],
    )
    .args(["--set", "embedder.kind=none"])
    .output()
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent/model.gguf") && err.contains("fetch-models.sh"),
        "{err}"
    );
    assert_eq!(std::fs::read(ws.join("sessions/k.jsonl")).unwrap(), before);
}

/// `mnemo search --rerank` on the local model: each hit is judged yes or
/// no from the model's probabilities (no written answer to parse), the
/// judgements move the index's order rather than replace it, and the
/// answer says it was re-ranked, with nothing dropped.
#[test]
fn search_reranks_with_the_local_models_judgements() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    let notes = ws.join("memory");
    std::fs::create_dir_all(&notes).unwrap();
    for (file, text) in [
        ("tea.md", "# Tea\n\nAda drinks green tea every morning.\n"),
        (
            "pets.md",
            "# Pets\n\nAda's cat Miso sleeps on the radiator.\n",
        ),
        ("work.md", "# Work\n\nAda leads the billing migration.\n"),
    ] {
        std::fs::write(notes.join(file), text).unwrap();
    }
    ok(mnemo(ws, &["index"]));
    let plain: serde_json::Value =
        serde_json::from_str(&ok(mnemo(ws, &["search", "Ada", "--json"]))).unwrap();
    let cited = |v: &serde_json::Value| -> Vec<String> {
        let mut c: Vec<String> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["citation"].as_str().unwrap().to_string())
            .collect();
        c.sort();
        c
    };
    assert_eq!(cited(&plain).len(), 3, "{plain:#}");
    let out: serde_json::Value = serde_json::from_str(&ok(mnemo(
        ws,
        &[
            "search",
            "Ada",
            "--rerank",
            "--explain",
            "--json",
            "--set",
            "engine.rerank_timeout_ms=600000",
        ],
    )))
    .unwrap();
    assert_eq!(out["reranked"], serde_json::json!(true), "{out:#}");
    assert!(
        !out["warnings"].to_string().contains("re-rank"),
        "the model judged every hit: {out:#}"
    );
    assert!(out["rerank_ms"].as_u64().is_some(), "{out:#}");
    assert_eq!(cited(&out), cited(&plain), "every hit is kept: {out:#}");
    for hit in out["results"].as_array().unwrap() {
        assert!(hit["parts"]["before_rerank"].as_u64().is_some(), "{hit:#}");
    }
}
