//! `mnemo setup claude-code` and the hooks it installs, through the real
//! binary: setup merges into a project's `.mcp.json` and Claude Code
//! settings (other servers, hooks and keys kept), is idempotent, and
//! `--undo` gives the files back byte for byte; a broken settings file is
//! refused with nothing written. Each hook runs as Claude Code runs it:
//! a `mnemo` process with the JSON payload Claude Code 2.1.x sends on
//! stdin, on the transcript Claude Code 2.1.332 wrote (the import
//! fixture, copied), recording it incrementally and distilling it with a
//! scripted chat model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use mnemo_test_support::cli::{mnemo_command, run_with_stdin, stdout_of_success};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");
const PROJECT: &str = "-ex-ample-src-garden";
const SESSION: &str = "7478d210-f5c8-4a0c-8186-2054d33d6919";
const HOOKED: [&str; 5] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreCompact",
    "Stop",
    "SessionEnd",
];

fn mnemo(ws: &Path, args: &[&str]) -> Output {
    mnemo_command(BIN, ws, args).output().unwrap()
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap()
}

fn parse(p: &Path) -> Value {
    serde_json::from_str(&read(p)).unwrap()
}

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

// ----- setup -----

const MCP_JSON: &str = r#"{
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}
        }
    }
}
"#;

const SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm run test:*)"], "deny": []},
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}
    ],
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/check.sh"}]}
    ]
  },
  "model": "opus",
  "env": {"FOO": "1"}
}
"#;

fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .map(|groups| {
            groups
                .iter()
                .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
                .map(|h| h["command"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn setup_merges_into_the_project_settings_runs_again_unchanged_and_undo_gives_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("app");
    let ws = dir.path().join("memory ws");
    let mcp = project.join(".mcp.json");
    let local = project.join(".claude/settings.local.json");
    write(&mcp, MCP_JSON);
    write(&local, SETTINGS);
    let p = project.to_str().unwrap();

    let out = stdout_of_success(&mnemo(&ws, &["setup", "claude-code", "--project", p]));
    assert!(out.contains("created workspace"), "{out}");
    assert!(
        out.contains(".mcp.json: added the MCP server `mnemo`"),
        "{out}"
    );
    assert!(
        out.contains(".claude/settings.local.json: added mnemo's hooks (SessionStart, UserPromptSubmit, PreCompact, Stop, SessionEnd)"),
        "{out}"
    );
    assert!(ws.join("MEMORY.md").is_file(), "the workspace was created");

    // The other server is there as it was; mnemo's runs `mnemo mcp` on the workspace.
    let m = parse(&mcp);
    let before: Value = serde_json::from_str(MCP_JSON).unwrap();
    assert_eq!(m["mcpServers"]["github"], before["mcpServers"]["github"]);
    let server = &m["mcpServers"]["mnemo"];
    assert_eq!(server["type"], "stdio");
    assert!(server["command"].as_str().unwrap().ends_with("mnemo"));
    let ws_abs = ws.canonicalize().unwrap();
    assert_eq!(
        server["args"],
        json!(["--workspace", ws_abs.to_str().unwrap(), "mcp"])
    );
    // Indented as the file was (four spaces).
    assert!(read(&mcp).contains("\n    \"mcpServers\": {\n        \"github\""));

    // Every other key and hook is kept, in its order; each event gets
    // mnemo's hook, the workspace quoted for the shell.
    let s = parse(&local);
    let original: Value = serde_json::from_str(SETTINGS).unwrap();
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["permissions", "hooks", "model", "env"]);
    for k in ["permissions", "model", "env"] {
        assert_eq!(s[k], original[k], "{k}");
    }
    assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    let stop = commands(&s, "Stop");
    assert_eq!(stop.len(), 2, "{stop:?}");
    assert_eq!(stop[0], "notify-send done");
    assert!(stop[1].ends_with(&format!(
        " --workspace '{}' hook claude-code stop",
        ws_abs.display()
    )));
    for (event, slug) in [
        ("SessionStart", "session-start --tokens 2000"),
        ("UserPromptSubmit", "user-prompt-submit --tokens 1000"),
        ("PreCompact", "pre-compact"),
        ("SessionEnd", "session-end"),
    ] {
        let c = commands(&s, event);
        assert_eq!(c.len(), 1, "{event}: {c:?}");
        assert!(c[0].ends_with(&format!("hook claude-code {slug}")), "{c:?}");
    }
    assert_eq!(s["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"], 15);

    // Again: nothing changes, not a byte.
    let (mcp_1, local_1) = (read(&mcp), read(&local));
    let again = stdout_of_success(&mnemo(&ws, &["setup", "claude-code", "--project", p]));
    assert!(again.contains("already set up"), "{again}");
    assert_eq!((read(&mcp), read(&local)), (mcp_1, local_1));

    // Undo: the files as they were, byte for byte.
    let undo = stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--undo"],
    ));
    assert!(
        undo.contains(".mcp.json: removed the MCP server `mnemo`"),
        "{undo}"
    );
    assert_eq!(read(&mcp), MCP_JSON);
    assert_eq!(read(&local), SETTINGS);
    assert!(!project.join(".claude/settings.json").exists());
    let twice = stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--undo"],
    ));
    assert!(twice.contains("nothing to remove"), "{twice}");
    assert_eq!(
        (read(&mcp), read(&local)),
        (MCP_JSON.into(), SETTINGS.into())
    );
}

#[test]
fn undo_removes_only_mnemos_entries_when_the_files_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("app");
    let ws = dir.path().join("ws");
    let local = project.join(".claude/settings.local.json");
    write(&local, SETTINGS);
    let p = project.to_str().unwrap();
    stdout_of_success(&mnemo(&ws, &["setup", "claude-code", "--project", p]));
    // The user adds a hook of their own to the Stop group mnemo made, and
    // a server; Claude Code adds a key.
    let mut s = parse(&local);
    s["hooks"]["Stop"][1]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "echo bye"}));
    s["outputStyle"] = json!("Explanatory");
    write(&local, &serde_json::to_string_pretty(&s).unwrap());
    let mcp = project.join(".mcp.json");
    let mut m = parse(&mcp);
    m["mcpServers"]["other"] = json!({"command": "other-server"});
    write(&mcp, &serde_json::to_string(&m).unwrap());

    stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--undo"],
    ));
    let s = parse(&local);
    let original: Value = serde_json::from_str(SETTINGS).unwrap();
    assert_eq!(
        commands(&s, "Stop"),
        ["notify-send done", "echo bye"],
        "{s:#}"
    );
    for e in [
        "SessionStart",
        "UserPromptSubmit",
        "PreCompact",
        "SessionEnd",
    ] {
        assert!(s["hooks"].get(e).is_none(), "{e}: {s:#}");
    }
    assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    assert_eq!(s["outputStyle"], "Explanatory");
    assert_eq!(
        parse(&mcp),
        json!({"mcpServers": {"other": {"command": "other-server"}}})
    );
}

#[test]
fn setup_in_a_bare_project_creates_the_files_shared_moves_the_hooks_and_undo_deletes_them() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("app");
    fs::create_dir_all(&project).unwrap();
    let ws = dir.path().join("ws");
    stdout_of_success(&mnemo(&ws, &["init"]));
    let p = project.to_str().unwrap();
    let dry = stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--dry-run"],
    ));
    assert!(dry.contains("dry run: .mcp.json: created with"), "{dry}");
    assert!(dry.contains("nothing was written"), "{dry}");
    assert_eq!(
        fs::read_dir(&project).unwrap().count(),
        0,
        "a dry run wrote"
    );

    let out = stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--binary", "mnemo"],
    ));
    assert!(!out.contains("created workspace"), "{out}");
    let m = parse(&project.join(".mcp.json"));
    assert_eq!(m["mcpServers"]["mnemo"]["command"], "mnemo");
    let local = project.join(".claude/settings.local.json");
    for e in HOOKED {
        let c = commands(&parse(&local), e);
        assert!(c[0].starts_with("mnemo --workspace "), "{c:?}");
    }
    // --shared: the hooks move to the checked-in settings, never in both.
    let out = stdout_of_success(&mnemo(
        &ws,
        &[
            "setup",
            "claude-code",
            "--project",
            p,
            "--binary",
            "mnemo",
            "--shared",
        ],
    ));
    assert!(
        out.contains(".claude/settings.json: created with mnemo's hooks"),
        "{out}"
    );
    assert!(!local.exists(), "{out}");
    let shared = parse(&project.join(".claude/settings.json"));
    assert_eq!(commands(&shared, "Stop").len(), 1);

    stdout_of_success(&mnemo(
        &ws,
        &["setup", "claude-code", "--project", p, "--undo"],
    ));
    assert_eq!(
        fs::read_dir(&project).unwrap().count(),
        0,
        "undo left {:?}",
        fs::read_dir(&project)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_broken_settings_file_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("app");
    let ws = dir.path().join("ws");
    let broken = "{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n";
    write(&project.join(".mcp.json"), MCP_JSON);
    write(&project.join(".claude/settings.local.json"), broken);
    let o = mnemo(
        &ws,
        &[
            "setup",
            "claude-code",
            "--project",
            project.to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("settings.local.json is not valid JSON (line 3")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert_eq!(read(&project.join(".mcp.json")), MCP_JSON);
    assert_eq!(read(&project.join(".claude/settings.local.json")), broken);
    assert!(!ws.exists(), "the workspace was created");

    // A server named mnemo that is someone else's is not replaced.
    write(&project.join(".claude/settings.local.json"), SETTINGS);
    let theirs = r#"{"mcpServers": {"mnemo": {"command": "npx", "args": ["mnemo-notes"]}}}"#;
    write(&project.join(".mcp.json"), theirs);
    let o = mnemo(
        &ws,
        &[
            "setup",
            "claude-code",
            "--project",
            project.to_str().unwrap(),
        ],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("already has a server named `mnemo`"), "{err}");
    assert_eq!(read(&project.join(".mcp.json")), theirs);
    assert_eq!(read(&project.join(".claude/settings.local.json")), SETTINGS);
}

// ----- the hooks -----

/// A home with the Claude Code 2.1.332 fixture project (its transcript,
/// subagent and memory folder) and an empty workspace.
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    transcript: PathBuf,
}

fn fixture_project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/peers/claude-code-2.1.332/.claude/projects")
        .join(PROJECT)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let project = root.join(".claude/projects").join(PROJECT);
    copy_dir(&fixture_project(), &project);
    let ws = root.join("ws");
    stdout_of_success(&mnemo(&ws, &["init"]));
    Home {
        transcript: project.join(format!("{SESSION}.jsonl")),
        _dir: dir,
        root,
        ws,
    }
}

/// The payload Claude Code 2.1.x sends `event`: the common fields and
/// `extra`.
fn payload(h: &Home, event: &str, extra: Value) -> String {
    let mut p = json!({
        "session_id": SESSION,
        "transcript_path": h.transcript,
        "cwd": "/ex/ample/src/garden",
        "permission_mode": "default",
        "hook_event_name": event,
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p.to_string()
}

/// Runs `mnemo hook claude-code <event> args…` keyword-only with `input`
/// on stdin; every hook exits 0.
fn hook(ws: &Path, event: &str, args: &[&str], input: &str) -> (String, String) {
    let mut all = vec!["--set", "embedder.kind=none", "hook", "claude-code", event];
    all.extend_from_slice(args);
    let o = run_with_stdin(mnemo_command(BIN, ws, &all), input.as_bytes());
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{event} exited {}: {err}", o.status);
    (out, err)
}

fn log_path(h: &Home) -> PathBuf {
    h.ws.join("sessions")
        .join(format!("claude-code_{PROJECT}_{SESSION}.jsonl"))
}

/// The lines of a session log after its metadata (its later metadata
/// records, which only move the cursor, left out).
fn log_lines(path: &Path) -> Vec<String> {
    read(path)
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("{\"_type\":\"metadata\""))
        .map(str::to_string)
        .collect()
}

/// The additionalContext of a hook's answer, checked for the shape Claude
/// Code reads.
fn context_of(out: &str, event: &str) -> String {
    let v: Value = serde_json::from_str(out.trim()).expect("one JSON object on stdout");
    let o = v["hookSpecificOutput"]
        .as_object()
        .expect("hookSpecificOutput");
    assert_eq!(o["hookEventName"], event);
    assert_eq!(o.len(), 2, "{v}");
    o["additionalContext"].as_str().unwrap().to_string()
}

#[test]
fn the_recording_hooks_take_the_transcript_incrementally_as_the_import_does() {
    let h = home();
    let full = read(&h.transcript);
    let lines: Vec<&str> = full.split_inclusive('\n').collect();
    // Where each prompt the user typed starts: Claude Code's transcript
    // as it stood at the end of each turn, the next one's first line half
    // written.
    let prompts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["type"] == "user" && v["message"]["content"].is_string() && v.get("isMeta").is_none()
        })
        .map(|(i, _)| i)
        .collect();
    assert!(prompts.len() >= 5, "{prompts:?}");
    let mut seen = Vec::new();
    for (turn, &end) in prompts.iter().enumerate().skip(1) {
        let mut text: String = lines[..end].concat();
        text.push_str(&lines[end][..lines[end].len() / 2]);
        fs::write(&h.transcript, &text).unwrap();
        let event = if turn == 3 { "PreCompact" } else { "Stop" };
        let extra = if event == "Stop" {
            json!({"stop_hook_active": false, "last_assistant_message": "…"})
        } else {
            json!({"trigger": "auto", "custom_instructions": ""})
        };
        let slug = if event == "Stop" {
            "stop"
        } else {
            "pre-compact"
        };
        let (out, err) = hook(&h.ws, slug, &["--wait"], &payload(&h, event, extra.clone()));
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("new message(s)"), "{err}");
        let now = log_lines(&log_path(&h));
        assert!(now.len() > seen.len(), "turn {turn} added nothing: {err}");
        assert_eq!(
            now[..seen.len()],
            seen[..],
            "turn {turn} changed what was recorded"
        );
        // The reply of the turn is left for the next hook: Claude Code may
        // still be writing it.
        assert!(
            now.last().unwrap().contains("\"role\":\"user\""),
            "{}",
            now.last().unwrap()
        );
        // Running it again appends nothing.
        let bytes = read(&log_path(&h));
        let (_, err) = hook(&h.ws, slug, &["--wait"], &payload(&h, event, extra));
        assert!(
            err.contains("recorded 0 new message(s) and 0 other record(s)"),
            "{err}"
        );
        assert_eq!(read(&log_path(&h)), bytes);
        seen = now;
    }
    // The session ends: the whole transcript, its last reply too.
    fs::write(&h.transcript, &full).unwrap();
    let (out, err) = hook(
        &h.ws,
        "session-end",
        &["--wait"],
        &payload(&h, "SessionEnd", json!({"reason": "prompt_input_exit"})),
    );
    assert!(
        out.is_empty() && err.contains("at the end of the session (prompt_input_exit)"),
        "{err}"
    );
    let recorded = log_lines(&log_path(&h));
    assert!(
        recorded[seen.len()..]
            .iter()
            .any(|l| l.contains("With tabs: you prefer tabs over spaces.")),
        "the last reply was not recorded"
    );
    let (_, err) = hook(
        &h.ws,
        "session-end",
        &["--wait"],
        &payload(&h, "SessionEnd", json!({"reason": "other"})),
    );
    assert!(err.contains("recorded 0 new message(s)"), "{err}");

    // The same lines as `mnemo import` of the project writes, so that an
    // import later finds the session already there.
    let other = h.root.join("imported");
    stdout_of_success(&mnemo(&other, &["init"]));
    let project = h.transcript.parent().unwrap().to_str().unwrap().to_string();
    let o = mnemo(&other, &["import", "claude-code", &project]);
    stdout_of_success(&o);
    assert_eq!(
        log_lines(
            &other
                .join("sessions")
                .join(format!("claude-code_{PROJECT}_{SESSION}.jsonl"))
        ),
        recorded
    );
    let again = stdout_of_success(&mnemo(&h.ws, &["import", "claude-code", &project]));
    assert!(
        again.contains(&format!("{SESSION}.jsonl: already imported (19 messages)")),
        "{again}"
    );
    // No chat model: said, and the hook still succeeded.
    assert!(err.contains("no chat model is configured"), "{err}");
}

#[test]
fn session_start_puts_memory_in_front_of_the_session_within_its_budget() {
    let h = home();
    let start = |tokens: &str, source: &str| {
        hook(
            &h.ws,
            "session-start",
            &["--wait", "--tokens", tokens],
            &payload(
                &h,
                "SessionStart",
                json!({"source": source, "model": "claude-sonnet-4-6"}),
            ),
        )
    };
    // A new workspace holds nothing to say: no output at all.
    fs::remove_file(&h.transcript).unwrap();
    let (out, _) = start("2000", "startup");
    assert_eq!(out, "");

    let o = run_with_stdin(
        mnemo_command(
            BIN,
            &h.ws,
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
        ),
        b"Prefers green tea, no sugar.",
    );
    stdout_of_success(&o);
    let o = run_with_stdin(
        mnemo_command(BIN, &h.ws, &["log"]),
        b"- Ada planted tomatoes in the garden",
    );
    stdout_of_success(&o);
    let (out, _) = start("2000", "startup");
    let context = context_of(&out, "SessionStart");
    assert!(
        context.contains("## Long-term memory (MEMORY.md)"),
        "{context}"
    );
    assert!(
        context.contains("- [Tea](memory/tea.md): prefers green tea"),
        "{context}"
    );
    assert!(
        context.contains("Ada planted tomatoes in the garden"),
        "{context}"
    );
    assert!(context.contains("memory_search"), "{context}");
    // MEMORY.md's own explanation (written by `mnemo init`) is for people.
    assert!(
        !context.contains("Core facts that hold across sessions"),
        "{context}"
    );

    // A long MEMORY.md is cut to the budget, saying what was left out.
    let mut long = read(&h.ws.join("MEMORY.md"));
    for i in 0..200 {
        long.push_str(&format!(
            "- fact number {i} about the garden and its many plants\n"
        ));
    }
    fs::write(h.ws.join("MEMORY.md"), long).unwrap();
    let (out, _) = start("300", "compact");
    let context = context_of(&out, "SessionStart");
    assert!(
        context.chars().count() <= 1200,
        "{}",
        context.chars().count()
    );
    assert!(
        context.contains("more lines of MEMORY.md are not shown here"),
        "{context}"
    );
    assert!(context.contains("was just compacted"), "{context}");
}

#[test]
fn the_prompt_hook_recalls_within_its_budget_and_leaves_the_sessions_own_turns_out() {
    let h = home();
    let add = |name: &str, description: &str, body: &str| {
        let o = run_with_stdin(
            mnemo_command(
                BIN,
                &h.ws,
                &[
                    "memory",
                    "add",
                    "--type",
                    "project",
                    "--name",
                    name,
                    "--description",
                    description,
                ],
            ),
            body.as_bytes(),
        );
        stdout_of_success(&o);
    };
    add(
        "Tea",
        "green tea",
        "Ada drinks green tea without sugar every morning.",
    );
    add(
        "Deploys",
        "deploy days",
        &"Deploys of the garden planner happen on Fridays after the review. ".repeat(30),
    );
    let prompt = |text: &str, tokens: &str| {
        hook(
            &h.ws,
            "user-prompt-submit",
            &["--tokens", tokens],
            &payload(&h, "UserPromptSubmit", json!({"prompt": text})),
        )
        .0
    };
    let started = Instant::now();
    let out = prompt("Which tea does Ada drink?", "1000");
    let took = started.elapsed();
    let context = context_of(&out, "UserPromptSubmit");
    assert!(context.contains("memory/tea.md#L"), "{context}");
    assert!(context.contains("green tea without sugar"), "{context}");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Within the budget: 100 tokens are 400 characters.
    let out = prompt("When do the garden planner deploys happen?", "100");
    let context = context_of(&out, "UserPromptSubmit");
    assert!(
        context.chars().count() <= 400,
        "{}: {context}",
        context.chars().count()
    );
    assert!(context.contains("memory/deploys.md#L"), "{context}");

    // A long memory gives the line that shares the prompt's words.
    let mut garden = String::new();
    for i in 0..30 {
        garden.push_str(&format!(
            "- Row {i} of the vegetable beds was weeded and watered.\n"
        ));
    }
    garden.push_str("- The compost bin stands behind the blue shed.\n");
    for i in 30..60 {
        garden.push_str(&format!(
            "- Row {i} of the vegetable beds was weeded and watered.\n"
        ));
    }
    add("Garden", "the garden's layout", &garden);
    let out = prompt("Where does the compost bin stand?", "150");
    let context = context_of(&out, "UserPromptSubmit");
    assert!(context.contains("memory/garden.md#L"), "{context}");
    assert!(
        context.contains("compost bin stands behind the blue shed"),
        "{context}"
    );

    // Nothing relevant, a bare slash command, an empty prompt: no output.
    assert_eq!(prompt("xylophone quantum zebra", "1000"), "");
    assert_eq!(prompt("/compact", "1000"), "");
    assert_eq!(prompt("", "1000"), "");

    // This session's turns are in its context already; another session's
    // are recalled.
    hook(
        &h.ws,
        "stop",
        &["--wait"],
        &payload(&h, "Stop", json!({"stop_hook_active": false})),
    );
    let out = prompt("What files are in this project?", "1000");
    assert!(!out.contains(SESSION), "{out}");
    let other = hook(
        &h.ws,
        "user-prompt-submit",
        &[],
        &json!({
            "session_id": "0b8c3a52-0000-4000-8000-000000000001",
            "transcript_path": h.transcript.with_file_name("0b8c3a52-0000-4000-8000-000000000001.jsonl"),
            "cwd": "/ex/ample/src/garden",
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "What files are in this project?",
        })
        .to_string(),
    )
    .0;
    let context = context_of(&other, "UserPromptSubmit");
    assert!(
        context.contains(&format!("claude-code_{PROJECT}_{SESSION}.jsonl#L")),
        "{context}"
    );
    assert!(context.contains("conversation of 2026-"), "{context}");
}

#[test]
fn the_flush_distils_the_new_turns_with_the_chat_model_once() {
    let server = ScriptedServer::start_blocking();
    server.set_default(Reply::tool_call(
        "save_memory",
        json!({
            "history_entry": "[2026-12-01 10:00] Ada set up her garden project and asked about indentation.",
            "memory_update": "- Indentation preference: tabs.\n",
        }),
    ));
    let h = home();
    let run = |event: &str, slug: &str, args: &[&str], extra: Value| {
        let mut all = vec![
            "--set",
            "embedder.kind=none",
            "--set",
            "provider.max_retries=0",
        ];
        all.extend(["hook", "claude-code", slug]);
        all.extend_from_slice(args);
        let mut c = mnemo_command(BIN, &h.ws, &all);
        c.env("MNEMO_PROVIDER", "openai")
            .env("MNEMO_BASE_URL", server.openai_base())
            .env("MNEMO_MODEL", "test-model");
        let o = run_with_stdin(c, payload(&h, event, extra).as_bytes());
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run(
        "Stop",
        "stop",
        &["--wait"],
        json!({"stop_hook_active": false}),
    );
    assert!(!err.contains("no chat model"), "{err}");
    assert!(err.contains("recorded 18 new message(s)"), "{err}");
    let chats = |s: &ScriptedServer| {
        s.requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .count()
    };
    assert_eq!(chats(&server), 1, "one consolidation request");
    let memory = read(&h.ws.join("MEMORY.md"));
    assert!(
        memory.contains("- Indentation preference: tabs."),
        "{memory}"
    );
    let history = read(&h.ws.join("memory/HISTORY.md"));
    assert!(
        history.contains("Ada set up her garden project"),
        "{history}"
    );
    let meta: Value = serde_json::from_str(read(&log_path(&h)).lines().last().unwrap()).unwrap();
    assert!(meta["last_consolidated"].as_u64().unwrap() > 0, "{meta}");

    // Nothing new: no model call.
    run(
        "Stop",
        "stop",
        &["--wait"],
        json!({"stop_hook_active": true}),
    );
    assert_eq!(chats(&server), 1);

    // In the background (as Claude Code runs it): the hook returns at
    // once, and the flush distils the last reply, written to the log.
    let log = h.ws.join(".mnemo/claude-code-hooks.log");
    let err = run(
        "SessionEnd",
        "session-end",
        &[],
        json!({"reason": "prompt_input_exit"}),
    );
    assert!(err.contains("recording session"), "{err}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while chats(&server) < 2
        || !fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("done in")
    {
        assert!(
            Instant::now() < deadline,
            "no flush: {}",
            fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let logged = read(&log);
    assert!(
        logged.contains("recorded 1 new message(s)") && logged.contains("consolidated messages"),
        "{logged}"
    );
}

#[test]
fn a_hook_never_gets_in_claude_codes_way() {
    let h = home();
    // Not JSON on stdin, a workspace that does not exist, a transcript that
    // is not there, an option this release does not know: exit 0, a word
    // on stderr, nothing on stdout.
    let (out, err) = hook(&h.ws, "user-prompt-submit", &[], "not json");
    assert!(
        out.is_empty() && err.contains("is not the JSON object Claude Code sends"),
        "{err}"
    );
    let (out, err) = hook(
        &h.root.join("nowhere"),
        "session-start",
        &[],
        &payload(&h, "SessionStart", json!({"source": "startup"})),
    );
    assert!(out.is_empty() && err.contains("does not exist"), "{err}");
    assert!(!h.root.join("nowhere").exists());
    let mut p: Value = serde_json::from_str(&payload(&h, "Stop", json!({}))).unwrap();
    p["transcript_path"] = json!(h.root.join("gone.jsonl"));
    let (out, err) = hook(&h.ws, "stop", &[], &p.to_string());
    assert!(
        out.is_empty() && err.contains("has no transcript to record"),
        "{err}"
    );
    let (out, err) = hook(&h.ws, "stop", &["--from-the-future"], "{}");
    assert!(
        out.is_empty() && err.contains("the session goes on without the hook"),
        "{err}"
    );
}

#[test]
fn hooks_running_at_once_record_each_line_once() {
    let h = home();
    let input = payload(&h, "Stop", json!({"stop_hook_active": false}));
    let children: Vec<_> = (0..4)
        .map(|_| {
            let mut c = mnemo_command(
                BIN,
                &h.ws,
                &[
                    "--set",
                    "embedder.kind=none",
                    "hook",
                    "claude-code",
                    "stop",
                    "--wait",
                ],
            );
            c.stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            let mut child = c.spawn().unwrap();
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            child
        })
        .collect();
    let mut recorded = 0;
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        if err.contains("recorded 18 new message(s)") {
            recorded += 1;
        } else {
            assert!(err.contains("recorded 0 new message(s)"), "{err}");
        }
    }
    assert_eq!(recorded, 1, "the new turns were recorded by one hook");
    let lines = log_lines(&log_path(&h));
    let unique: std::collections::HashSet<&String> = lines.iter().collect();
    assert_eq!(unique.len(), lines.len(), "a line was recorded twice");
}
