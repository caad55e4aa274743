//! The command line's rough edges a new user hit (issue 43), through the
//! real binary: a missing workspace and a missing file are errors a script
//! can tell apart, every writing command answers `--json`, `context` needs
//! no model, `log` takes one text or stdin, `session append` is all or
//! nothing, and search snippets and warnings say what is true.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success as ok};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::{json, Value};

fn mnemo(ws: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args);
    c.args(["--set", "embedder.kind=none"]);
    run_with_stdin(c, stdin.unwrap_or("").as_bytes())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// Appends the user's `text` to session `key`.
fn say(ws: &Path, key: &str, text: &str) {
    ok(&mnemo(
        ws,
        &[
            "session",
            "append",
            key,
            "--role",
            "user",
            "--content",
            text,
        ],
        None,
    ));
}

fn init(ws: &Path) {
    ok(&mnemo(ws, &["init"], None));
}

fn read(ws: &Path, rel: &str) -> String {
    common::read(ws, rel)
}

/// A command on a workspace that was never created exits 8 (not 1, "a
/// bug"), says to run `mnemo init`, and answers `no_workspace` with --json.
#[test]
fn a_missing_workspace_has_its_own_exit_code_and_says_run_init() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("nosuch-ws");
    for args in [
        &["memory", "show"][..],
        &["session", "list"],
        &["log", "x"],
        &["get", "MEMORY.md"],
        &["search", "tea"],
        &["context", "k", "-m", "hi"],
    ] {
        let o = mnemo(&ws, args, None);
        assert_eq!(o.status.code(), Some(8), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        // A database's workspace is missing from its rows, not its folder.
        let says = if common::on_database() {
            err.contains("no workspace") && err.contains("mnemo init --database")
        } else {
            err.contains("does not exist") && err.contains("mnemo init --workspace")
        };
        assert!(says, "{args:?}: {err}");
    }
    let o = mnemo(&ws, &["status", "--json"], None);
    assert_eq!(o.status.code(), Some(8), "{}", stderr(&o));
    assert_eq!(json_of(&o)["error"]["code"], "no_workspace");
    assert!(!ws.exists(), "nothing was created");

    let help = ok(&mnemo(&ws, &["--help"], None));
    assert!(help.contains("8 the workspace does not exist"), "{help}");
}

/// `mnemo get` of a file that is not there is "not found" (exit 3), with
/// advice; an empty file that is there is an answer (exit 0).
#[test]
fn get_of_a_missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    // Names no file can have (longer than the file system takes, or
    // through a file) are missing too, not a failure to read: a fuzzer's
    // 400-byte session name was a 500.
    let long = "y".repeat(300);
    say(ws, "k", "hi");
    let k_log = common::storage(ws).session_files().unwrap().remove(0).rel;
    for path in [
        "memory/nope.md".to_string(),
        "memory/nope.md#L1-L3".to_string(),
        "sessions/nope.jsonl".to_string(),
        format!("sessions/{long}.jsonl"),
        format!("memory/{long}.md"),
        format!("{k_log}/x.jsonl"),
    ] {
        let path = path.as_str();
        let o = mnemo(ws, &["get", path], None);
        assert_eq!(o.status.code(), Some(3), "{path}: {}", stderr(&o));
        assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    }
    let o = mnemo(ws, &["get", "memory/nope.md", "--json"], None);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(json_of(&o)["error"]["code"], "not_found");
    // The sessions folder is no log: the caller's mistake, not a failure
    // to read (a fuzzer's `GET /v1/memory/get?path=sessions//` was a 500).
    for path in ["sessions/", "sessions//", "sessions/./"] {
        let o = mnemo(ws, &["get", path, "--json"], None);
        assert_eq!(json_of(&o)["error"]["code"], "invalid_input", "{path}");
    }

    common::write(ws, "memory/empty.md", "");
    let o = mnemo(ws, &["get", "memory/empty.md"], None);
    assert_eq!(ok(&o), "");
    assert!(stderr(&o).contains("is empty"), "{}", stderr(&o));
    ok(&mnemo(ws, &["log", "deploy on Thursday"], None));
    let day = ok(&mnemo(ws, &["log", "--json", "again"], None));
    let path = json_of_str(&day)["path"].as_str().unwrap().to_string();
    assert!(ok(&mnemo(ws, &["get", &path], None)).contains("deploy on Thursday"));
}

fn json_of_str(s: &str) -> Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// `mnemo log "a" "b"` is refused rather than joined into one entry;
/// without a text (or with `-`) the entries come from stdin, one per line.
#[test]
fn log_takes_one_text_or_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let o = mnemo(ws, &["log", "first thing", "second thing"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("one argument"), "{}", stderr(&o));
    let out = ok(&mnemo(
        ws,
        &["log", "--json"],
        Some("from stdin one\nfrom stdin two\n"),
    ));
    let v = json_of_str(&out);
    assert_eq!(v["written"], 2, "{v}");
    let path = v["path"].as_str().unwrap().to_string();
    ok(&mnemo(ws, &["log", "-"], Some("dash reads stdin\n")));
    let log = read(ws, &path);
    for item in ["from stdin one", "from stdin two", "dash reads stdin"] {
        assert_eq!(
            log.lines()
                .filter(|l| l.starts_with("- [") && l.ends_with(item))
                .count(),
            1,
            "{item}: {log}"
        );
    }
    assert!(!log.contains("first thing"), "{log}");
    let o = mnemo(ws, &["log"], Some("  \n"));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let help = ok(&mnemo(ws, &["log", "--help"], None));
    assert!(help.contains("read from stdin"), "{help}");
}

/// Without --ack, `session append` writes all the lines or none: a
/// malformed line leaves the log as it was. --json answers one object.
#[test]
fn session_append_is_all_or_nothing_and_answers_json() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let good = "{\"role\":\"user\",\"content\":\"one\"}\n";
    let input = format!("{good}not json\n{good}");
    let o = mnemo(ws, &["session", "append", "k"], Some(&input));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("stdin line 2") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(
        !common::exists(ws, "sessions/k.jsonl"),
        "the log was created"
    );
    let o = mnemo(ws, &["session", "show", "k"], None);
    assert_eq!(o.status.code(), Some(3));

    let out = ok(&mnemo(
        ws,
        &["session", "append", "k", "--json"],
        Some(&format!("{good}{good}")),
    ));
    assert_eq!(
        json_of_str(&out),
        json!({"key": "k", "appended": 2, "path": "sessions/k.jsonl"})
    );
    let out = ok(&mnemo(
        ws,
        &[
            "session",
            "append",
            "k",
            "--role",
            "assistant",
            "--content",
            "two",
            "--json",
        ],
        None,
    ));
    assert_eq!(json_of_str(&out)["appended"], 1);
    let shown = ok(&mnemo(ws, &["session", "show", "k", "--json"], None));
    assert_eq!(shown.lines().count(), 3, "{shown}");

    // --ack streams: the lines before a bad one are written and acknowledged.
    let o = mnemo(ws, &["session", "append", "k", "--ack"], Some(&input));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "ok 1\n");
    assert!(stderr(&o).contains("1 message(s) before it were written"));
    let shown = ok(&mnemo(ws, &["session", "show", "k", "--json"], None));
    assert_eq!(shown.lines().count(), 4, "{shown}");
}

/// `mnemo index --json` and `mnemo memory undo --json` answer one JSON
/// object, as the other commands do.
#[test]
fn index_and_memory_undo_answer_json() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let lines = "{\"role\":\"user\",\"content\":\"My name is Ada and I deploy on Fridays.\"}\n\
                 {\"role\":\"assistant\",\"content\":\"Noted, Ada.\"}\n\
                 {\"role\":\"user\",\"content\":\"Thanks!\"}\n";
    ok(&mnemo(
        ws,
        &["session", "append", "cli:direct"],
        Some(lines),
    ));

    let v = json_of_str(&ok(&mnemo(ws, &["index", "--json"], None)));
    let indexed = v["indexed"].as_array().unwrap();
    assert!(indexed.contains(&json!("sessions/cli_direct.jsonl")), "{v}");
    assert!(v["chunks_written"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["warnings"].is_array(), "{v}");

    server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-11-29 10:00] Ada deploys on Fridays.",
               "memory_update": "# Memory\n\n- User is Ada; deploys on Fridays.\n"}),
    ));
    let mut c = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &["consolidate", "cli:direct"],
    );
    c.args(server.model_flags())
        .args(["--set", "embedder.kind=none"]);
    ok(&run_with_stdin(c, b""));
    assert!(read(ws, "MEMORY.md").contains("deploys on Fridays"));

    let v = json_of_str(&ok(&mnemo(ws, &["memory", "undo", "--json"], None)));
    assert_eq!(v["consolidation"], "cli:direct messages 0..2", "{v}");
    assert!(v["lines"].as_u64().unwrap() >= 1, "{v}");
    assert!(!read(ws, "MEMORY.md").contains("deploys on Fridays"));
    let o = mnemo(ws, &["memory", "undo", "--json"], None);
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(json_of(&o)["error"]["code"], "not_found");
}

/// `mnemo context` shows the prompt without a chat model, as HTTP's
/// `/context` does, and says the recall side query was skipped.
#[test]
fn context_needs_no_model() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    common::write(ws, "MEMORY.md", "# Memory\n\n- Prefers green tea.\n");
    ok(&mnemo(
        ws,
        &[
            "session",
            "append",
            "cli:direct",
            "--role",
            "user",
            "--content",
            "hello",
        ],
        None,
    ));
    let o = mnemo(
        ws,
        &["context", "cli:direct", "-m", "what do I drink?"],
        None,
    );
    let out = ok(&o);
    assert!(out.contains("(none)"), "{out}");
    assert!(out.contains("Prefers green tea."), "{out}");
    assert!(
        stderr(&o).contains("no recall side query"),
        "{}",
        stderr(&o)
    );
    let v = json_of_str(&ok(&mnemo(
        ws,
        &["context", "cli:direct", "-m", "what do I drink?", "--json"],
        None,
    )));
    assert_eq!(v["model"], "none", "{v}");
    assert!(v["system"].as_str().unwrap().contains("Prefers green tea."));
    // An unknown session is still "not found".
    let o = mnemo(ws, &["context", "nope", "-m", "x"], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// A typed memory's hit shows what it says, not its YAML front matter.
#[test]
fn typed_memory_snippets_skip_the_front_matter() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    add_tea(
        ws,
        "what the user drinks",
        "Drinks green tea every morning, no sugar.\n",
    );
    let v = json_of_str(&ok(&mnemo(
        ws,
        &["search", "green tea drinks", "--json"],
        None,
    )));
    let hit = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["path"] == "memory/tea.md")
        .unwrap_or_else(|| panic!("no hit of memory/tea.md: {v}"));
    let snippet = hit["snippet"].as_str().unwrap();
    assert!(snippet.contains("Drinks green tea every morning"), "{v}");
    for front in ["---", "name:", "type:", "description:"] {
        assert!(!snippet.contains(front), "{front} in {snippet:?}");
    }
    let text = ok(&mnemo(ws, &["search", "green tea drinks"], None));
    assert!(!text.contains("name: Tea"), "{text}");
}

/// Offline, with the default local embedding model not downloadable:
/// search still answers (keywords) and gives the one real reason, not
/// "no embedding model configured" beside it.
#[test]
fn offline_search_gives_one_reason_for_keyword_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let cache = dir.path().join("empty-cache");
    let run = |args: &[&str]| {
        let mut c = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), &ws, args);
        c.env("HF_HUB_CACHE", &cache)
            .env("HOME", dir.path())
            // Nothing listens on the discard port: the download fails at once.
            .env("MNEMO_PYPI_URL", "http://127.0.0.1:9/simple")
            .env_remove("PIP_INDEX_URL");
        run_with_stdin(c, b"")
    };
    ok(&run(&["init"]));
    ok(&run(&["log", "Alice drinks espresso."]));
    let o = run(&["search", "espresso", "--json"]);
    let v = json_of_str(&ok(&o));
    assert_eq!(v["mode"], "keyword", "{v}");
    assert!(
        v["results"][0]["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("Alice drinks espresso.")),
        "{v}"
    );
    let warnings: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("could not be downloaded")),
        "{warnings:?}"
    );
    assert!(
        !warnings
            .iter()
            .any(|w| w.contains("no embedding model configured")),
        "{warnings:?}"
    );
    let o = run(&["search", "espresso"]);
    let out = ok(&o);
    assert!(out.contains("could not be downloaded"), "{out}");
    assert!(!out.contains("no embedding model configured"), "{out}");
}

/// The memory block (`memory show`, and the prompt `context` shows) is
/// titled `# Memory` once: MEMORY.md's own title is not repeated in it.
#[test]
fn the_memory_block_has_one_memory_title() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    add_tea(ws, "likes green tea", "Likes green tea.\n");
    assert!(
        read(ws, "MEMORY.md").starts_with("# Memory\n"),
        "the file keeps it"
    );
    let titles = |text: &str| text.lines().filter(|l| l.trim() == "# Memory").count();
    let block = ok(&mnemo(ws, &["memory", "show"], None));
    assert_eq!(titles(&block), 1, "{block}");
    assert!(
        block.contains("- [Tea](memory/tea.md): likes green tea"),
        "{block}"
    );
    say(ws, "k", "hi");
    let v = json_of_str(&ok(&mnemo(
        ws,
        &["context", "k", "-m", "tea?", "--json"],
        None,
    )));
    let system = v["system"].as_str().unwrap();
    assert_eq!(titles(system), 1, "{system}");
    assert!(system.contains("memory/tea.md"), "{system}");
}

/// Forgetting a fact says what was removed: a fact has no index line in
/// MEMORY.md (a typed memory does).
#[test]
fn forgetting_a_fact_does_not_claim_an_index_line() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    common::write(
        ws,
        "memory/facts.md",
        "# Facts\n\n- Likes tea. (f1; since 2026-02-01)\n- Works at Acme. (f2)\n",
    );
    let out = ok(&mnemo(ws, &["memory", "forget", "f1"], None));
    assert_eq!(out.trim(), "removed fact f1 from memory/facts.md", "{out}");
    assert!(!read(ws, "memory/facts.md").contains("Likes tea"));
    let out = add_tea(ws, "tea", "Likes tea.\n");
    assert!(out.contains("memory/tea.md"), "{out}");
    let out = ok(&mnemo(ws, &["memory", "forget", "Tea"], None));
    assert_eq!(
        out.trim(),
        "removed memory/tea.md and its index line in MEMORY.md"
    );
}

/// Adds the user-type memory "Tea" with `description` and `body`; returns
/// what `mnemo memory add` printed.
fn add_tea(ws: &Path, description: &str, body: &str) -> String {
    ok(&mnemo(
        ws,
        &[
            "memory",
            "add",
            "--type",
            "user",
            "--name",
            "Tea",
            "--description",
            description,
        ],
        Some(body),
    ))
}

/// `mnemo memory undo --facts` undoes the newest round of memory/facts.md
/// as the inspector's page does: what it added goes, what it ended is
/// current again; with no round left it says so and changes nothing.
#[test]
fn memory_undo_facts_reverses_the_newest_round() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    common::write(ws, "memory/facts.md", "# Facts\n\n\
         - The user lives in Berlin. (f2; since 2026-03-05; by chat:1 2..3)\n\n\
         ## No longer true\n\n\
         - ~~The user lives in Paris.~~ (f1; since 2026-03-01; until 2026-03-05; superseded by f2; by chat:1 0..1)\n");
    common::write(
        ws,
        "memory/HISTORY.md",
        "[2026-03-01 10:00] chat:1 messages 0..2: 1 fact(s) proposed\n\
         [memory/facts.md: added f1]\n\n\
         [2026-03-05 10:00] chat:1 messages 2..4: 1 fact(s) proposed\n\
         [memory/facts.md: replaced f1 by f2]\n\n",
    );
    let v = json_of(&mnemo(ws, &["memory", "undo", "--facts", "--json"], None));
    assert_eq!(v["removed"], json!(["f2"]), "{v}");
    assert_eq!(v["restored"], json!(["f1"]), "{v}");
    let facts = read(ws, "memory/facts.md");
    assert!(
        facts.contains("- The user lives in Paris.") && !facts.contains("Berlin"),
        "{facts}"
    );
    // The first round next, then nothing left.
    ok(&mnemo(ws, &["memory", "undo", "--facts"], None));
    let o = mnemo(ws, &["memory", "undo", "--facts"], None);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// `mnemo search --budget N` answers within about N tokens and says how
/// many it spent.
#[test]
fn search_within_a_budget_says_what_it_spent() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let body: String = (0..30)
        .map(|i| format!("- Line {i} about the harbour schedule.\n"))
        .collect::<String>()
        + "- Alice drinks espresso every morning.\n";
    common::write(ws, "memory/notes.md", format!("# Notes\n\n{body}"));
    let o = mnemo(
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "search",
            "what does Alice drink",
            "--budget",
            "30",
            "--json",
        ],
        None,
    );
    let v = json_of(&o);
    let tokens = v["tokens"].as_u64().unwrap();
    let hits = v["results"].as_array().unwrap();
    assert!(tokens <= 30 + hits.len() as u64, "{v}");
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains("espresso"),
        "{v}"
    );
}
