//! The foundation commands through the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success as ok};

fn mnemo(ws: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let c = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args);
    run_with_stdin(c, stdin.unwrap_or("").as_bytes())
}

#[test]
fn init_append_show_list_memory_log() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let out = ok(&mnemo(&ws, &["init"], None));
    assert!(out.contains("initialised"));
    if common::on_database() {
        assert!(common::exists(&ws, "MEMORY.md"), "MEMORY.md missing");
    } else {
        for p in ["MEMORY.md", "memory", "sessions", "mnemo.toml", ".mnemo"] {
            assert!(ws.join(p).exists(), "{p} missing");
        }
    }
    assert!(ok(&mnemo(&ws, &["init"], None)).contains("nothing changed"));

    ok(&mnemo(
        &ws,
        &[
            "session",
            "append",
            "cli:direct",
            "--role",
            "user",
            "--content",
            "I like green tea",
        ],
        None,
    ));
    let lines = "{\"role\":\"assistant\",\"content\":\"Noted.\"}\n\n{\"role\":\"user\",\"content\":\"你好\"}\n";
    ok(&mnemo(
        &ws,
        &["session", "append", "cli:direct"],
        Some(lines),
    ));
    let json = ok(&mnemo(
        &ws,
        &["session", "show", "cli:direct", "--json"],
        None,
    ));
    let msgs: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[2]["content"], "你好");
    assert!(msgs.iter().all(|m| m["timestamp"].is_string()));
    let text = ok(&mnemo(&ws, &["session", "show", "cli:direct"], None));
    assert!(text.contains("user: I like green tea"));
    let list = ok(&mnemo(&ws, &["session", "list", "--json"], None));
    let info: serde_json::Value = serde_json::from_str(list.lines().next().unwrap()).unwrap();
    assert_eq!(
        (info["key"].as_str(), info["messages"].as_u64()),
        (Some("cli:direct"), Some(3))
    );

    ok(&mnemo(
        &ws,
        &[
            "memory",
            "add",
            "--type",
            "user",
            "--name",
            "Tea",
            "--description",
            "likes green tea",
        ],
        Some("Likes green tea, no sugar.\n"),
    ));
    ok(&mnemo(&ws, &["log", "deploy moved to Thursday"], None));
    let block = ok(&mnemo(&ws, &["memory", "show"], None));
    assert!(
        block.contains("- [Tea](memory/tea.md): likes green tea"),
        "{block}"
    );
    assert!(block.contains("deploy moved to Thursday"), "{block}");
    assert!(ok(&mnemo(&ws, &["memory", "list"], None)).contains("memory/tea.md"));
    ok(&mnemo(&ws, &["memory", "forget", "Tea"], None));
    assert!(!ok(&mnemo(&ws, &["memory", "show"], None)).contains("memory/tea.md"));
}

#[test]
fn bad_input_gets_clear_errors_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(&mnemo(ws, &["init"], None));
    // A malformed line stops with its number; nothing is written (without
    // --ack, which writes each line as it is read).
    let input = "{\"role\":\"user\",\"content\":\"one\"}\nnot json\n{\"role\":\"user\",\"content\":\"three\"}\n";
    let o = mnemo(ws, &["session", "append", "k"], Some(input));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("stdin line 2") && err.contains("nothing was written"),
        "{err}"
    );
    let o = mnemo(ws, &["session", "append", "k", "--ack"], Some(input));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("stdin line 2") && err.contains("1 message(s) before it were written"),
        "{err}"
    );
    let shown = ok(&mnemo(ws, &["session", "show", "k", "--json"], None));
    assert_eq!(shown.lines().count(), 1);

    // An unknown role and an unknown memory type are usage errors.
    assert_eq!(
        mnemo(
            ws,
            &[
                "session",
                "append",
                "k",
                "--role",
                "wizard",
                "--content",
                "x"
            ],
            None
        )
        .status
        .code(),
        Some(2)
    );
    let o = mnemo(
        ws,
        &[
            "memory",
            "add",
            "--type",
            "secret",
            "--name",
            "x",
            "--description",
            "y",
        ],
        Some("b"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("user, feedback, project or reference"));

    // An unknown session is "not found", with a hint.
    let o = mnemo(ws, &["session", "show", "nope"], None);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mnemo session list"));

    // A traversal key is mapped inside sessions/.
    ok(&mnemo(
        ws,
        &[
            "session",
            "append",
            "../../evil",
            "--role",
            "user",
            "--content",
            "x",
        ],
        None,
    ));
    assert!(!dir.path().parent().unwrap().join("evil.jsonl").exists());
    assert!(common::session_files(ws) >= 2);

    // A broken mnemo.toml names the file and what to do.
    std::fs::write(ws.join("mnemo.toml"), "[session\nfsync=").unwrap();
    let o = mnemo(ws, &["session", "list"], None);
    assert_eq!(o.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mnemo.toml is not valid TOML"));

    // Commands on a workspace that does not exist say to run init.
    let o = mnemo(&ws.join("missing"), &["memory", "show"], None);
    assert!(String::from_utf8_lossy(&o.stderr).contains("mnemo init"));
    assert_eq!(o.status.code(), Some(8));
}

#[test]
fn help_explains_commands() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&mnemo(dir.path(), &["--help"], None));
    for cmd in ["init", "session", "memory", "log"] {
        assert!(out.contains(cmd), "{out}");
    }
    let out = ok(&mnemo(dir.path(), &["session", "append", "--help"], None));
    assert!(out.contains("JSON lines on stdin"), "{out}");
}

/// Settings and errors as a script relies on them: every `--set` counts,
/// before and after the subcommand; an unknown key is refused at once; a
/// command run with `--json` answers its error as JSON too, with the code
/// that the exit status says.
#[test]
fn settings_and_errors_are_what_a_script_expects() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    ok(&mnemo(&ws, &["init"], None));
    for i in 0..5 {
        ok(&mnemo(
            &ws,
            &["log", &format!("apple pie number {i}")],
            None,
        ));
    }
    ok(&mnemo(
        &ws,
        &[
            "session",
            "append",
            "k",
            "--role",
            "user",
            "--content",
            "pear",
        ],
        None,
    ));
    let out = ok(&mnemo(
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "search",
            "--set",
            "search.max_results=2",
            "--json",
            "apple",
        ],
        None,
    ));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["mode"], "keyword", "the first --set counts: {v}");
    assert_eq!(
        v["results"].as_array().unwrap().len(),
        2,
        "the second counts: {v}"
    );

    let typo = mnemo(
        &ws,
        &["--set", "search.max_result=2", "search", "apple"],
        None,
    );
    assert_eq!(typo.status.code(), Some(2));
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(
        err.contains("max_results"),
        "names the keys it takes: {err}"
    );

    let bad = mnemo(
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "search",
            "--json",
            "-n",
            "0",
            "apple",
        ],
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["error"]["code"], "invalid_input", "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_results"));

    let missing = mnemo(
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "consolidate",
            "nope",
            "--json",
        ],
        None,
    );
    assert_ne!(missing.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert!(v["error"]["code"].is_string(), "{v}");

    let help = ok(&mnemo(&ws, &["--help"], None));
    assert!(
        help.contains("Exit codes") && help.contains("6 the model provider failed"),
        "{help}"
    );
}

/// The files scripts/test.sh runs again against database workspaces
/// exist, and read their workspaces' files through tests/common.
#[test]
fn the_database_run_lists_test_files_that_know_both_kinds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let list = std::fs::read_to_string(dir.join("on_database.txt")).unwrap();
    let names: Vec<&str> = list.lines().filter_map(|l| l.strip_prefix("  ")).collect();
    assert!(names.contains(&"cli"), "{names:?}");
    for name in names {
        let text = std::fs::read_to_string(dir.join(format!("{name}.rs")))
            .unwrap_or_else(|e| panic!("tests/{name}.rs: {e}"));
        assert!(
            text.contains("mod common;") || !text.contains("ws.join("),
            "tests/{name}.rs reads its workspace's folder: go through tests/common"
        );
    }
}
