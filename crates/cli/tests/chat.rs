//! `mnemo run` and `mnemo chat` through the real binary against the
//! scripted loopback model server: the tool loop end to end, what the
//! session log records, memory_write into the daily log, a missing
//! provider, a failing model, the iteration bound, and the interactive
//! REPL driven in tmux.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mnemo::core::{Message, Workspace};
use mnemo::store::{SessionOptions, SessionStore};
use mnemo_test_support::cli::{
    mnemo_command, run_with_stdin as piped, stdout_of_success as ok, SCRUBBED_ENV,
};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::{json, Value};

/// `mnemo --workspace WS ARGS… --set …` with no provider from the environment.
fn bare(ws: &Path, args: &[&str]) -> Command {
    let mut c = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args);
    c.args([
        "--set",
        "embedder.kind=none",
        "--set",
        "memory.timezone=UTC",
    ]);
    c
}

/// The same with the scripted server as the provider (no retries).
fn with_model(ws: &Path, server: &ScriptedServer, args: &[&str]) -> Command {
    let mut c = bare(ws, args);
    c.args([
        "--provider",
        "openai",
        "--base-url",
        &server.openai_base(),
        "--model",
        "test-model",
        "--set",
        "provider.max_retries=0",
    ]);
    c
}

/// A scripted model server and an initialised workspace.
fn setup() -> (ScriptedServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    init(dir.path());
    (ScriptedServer::start_blocking(), dir)
}

fn init(ws: &Path) {
    ok(&bare(ws, &["init"]).output().unwrap());
}

fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}

fn session(ws: &Path, key: &str) -> Vec<Message> {
    SessionStore::new(&Workspace::new(ws), SessionOptions::default())
        .load(key)
        .unwrap()
        .messages
}

fn write_session(ws: &Path, key: &str, messages: &[Message]) {
    SessionStore::new(&Workspace::new(ws), SessionOptions::default())
        .open(key)
        .unwrap()
        .append(messages)
        .unwrap();
}

fn shape(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match &m.tool_calls {
            Some(c) => format!("assistant calls {}", c[0].function.name),
            None => format!("{}: {}", m.role.as_str(), m.text()),
        })
        .collect()
}

#[test]
fn run_answers_after_a_memory_search_and_logs_every_step() {
    let (server, dir) = setup();
    let ws = dir.path();
    ok(&bare(ws, &["log", "The deploy key lives in vault/ops."])
        .output()
        .unwrap());
    server.push(
        Reply::tool_call("memory_search", json!({"query": "deploy key"}))
            .with_text("Let me check my notes."),
    );
    server.push(Reply::text("The deploy key lives in vault/ops."));
    let o = with_model(
        ws,
        &server,
        &["run", "--session", "cli:run", "where is the deploy key?"],
    )
    .output()
    .unwrap();
    let out = ok(&o);
    assert_eq!(out, "The deploy key lives in vault/ops.\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("memory_search"), "{err}");
    // What the model said beside its call is shown, not taken for the answer.
    assert!(err.contains("mnemo> Let me check my notes."), "{err}");

    // The log: user, the call, its result, the answer, in that order.
    let log = session(ws, "cli:run");
    let s = shape(&log);
    assert_eq!(s.len(), 4, "{s:#?}");
    assert_eq!(s[0], "user: where is the deploy key?");
    assert_eq!(s[1], "assistant calls memory_search");
    assert_eq!(log[1].text(), "Let me check my notes.");
    assert!(
        s[2].starts_with("tool: ") && s[2].contains("vault/ops"),
        "{s:#?}"
    );
    assert_eq!(s[3], "assistant: The deploy key lives in vault/ops.");
    let call_id = &log[1].tool_calls.as_ref().unwrap()[0].id;
    assert_eq!(log[2].tool_call_id.as_ref(), Some(call_id));
    let result: Value = serde_json::from_str(&log[2].text()).unwrap();
    let daily = format!("memory/{}.md#L", today());
    assert!(
        result["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["citation"].as_str().unwrap().starts_with(&daily)),
        "{result}"
    );

    // The second request carried the tool result, after the call.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], json!(call_id));
    assert!(last["content"].as_str().unwrap().contains("vault/ops"));
    assert_eq!(
        msgs[msgs.len() - 2]["tool_calls"][0]["function"]["name"],
        "memory_search"
    );
    // The memory tools were offered.
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["memory_search", "memory_get", "memory_write"]);
}

#[test]
fn run_json_reports_a_memory_write_that_lands_in_todays_log() {
    let (server, dir) = setup();
    let ws = dir.path();
    server.push(Reply::tool_call(
        "memory_write",
        json!({"text": "The user's cat is named Miso."}),
    ));
    server.push(Reply::text("Noted: Miso."));
    let o = with_model(
        ws,
        &server,
        &["run", "--json", "-s", "cli:json", "my cat is called Miso"],
    )
    .output()
    .unwrap();
    let out: Value = serde_json::from_str(ok(&o).trim()).unwrap();
    assert_eq!(out["answer"], "Noted: Miso.");
    assert_eq!(out["session"], "cli:json");
    assert_eq!(out["iterations"], 2);
    assert_eq!(out["hit_iteration_limit"], false);
    assert!(out["events"].is_array());
    let call = &out["tool_calls"][0];
    assert_eq!(call["name"], "memory_write");
    assert_eq!(call["is_error"], false);
    let daily_rel = format!("memory/{}.md", today());
    let result: Value = serde_json::from_str(call["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["path"], json!(daily_rel));
    let daily = std::fs::read_to_string(ws.join(&daily_rel)).unwrap();
    assert!(daily.contains("The user's cat is named Miso."), "{daily}");
}

#[test]
fn run_with_an_anthropic_provider_sends_tool_results_back() {
    let (server, dir) = setup();
    let ws = dir.path();
    std::fs::write(ws.join("MEMORY.md"), "# Memory\n\n- Prefers green tea.\n").unwrap();
    server.push(Reply::tool_call("memory_get", json!({"path": "MEMORY.md"})));
    server.push(Reply::text("You prefer green tea."));
    let o = bare(ws, &["run", "-s", "cli:claude", "what do I drink?"])
        .args([
            "--provider",
            "anthropic",
            "--base-url",
            &server.url(),
            "--model",
            "claude-test",
            "--set",
            "provider.max_retries=0",
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&o), "You prefer green tea.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].path, "/v1/messages");
    let body = reqs[1].body.to_string();
    assert!(body.contains("tool_result"), "{body}");
    assert!(body.contains("Prefers green tea."), "{body}");
    let log = shape(&session(ws, "cli:claude"));
    assert_eq!(log[1], "assistant calls memory_get");
    assert!(log[2].starts_with("tool: ") && log[2].contains("green tea"));
}

#[test]
fn run_without_a_provider_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let o = bare(ws, &["run", "hello"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    for hint in ["--provider", "MNEMO_PROVIDER", "[provider]", "mnemo.toml"] {
        assert!(err.contains(hint), "missing {hint:?} in: {err}");
    }
    let o = bare(ws, &["chat"]).stdin(Stdio::null()).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--provider"));
}

#[test]
fn a_failing_model_gives_a_clear_error_and_keeps_the_log() {
    let (server, dir) = setup();
    let ws = dir.path();
    write_session(
        ws,
        "cli:fail",
        &[Message::user("hello"), Message::assistant("Hi!")],
    );
    let before = std::fs::read_to_string(ws.join("sessions/cli_fail.jsonl")).unwrap();
    // Nothing scripted: every request gets a 500; one retry after the first.
    let o = with_model(ws, &server, &["run", "-s", "cli:fail", "are you there?"])
        .args([
            "--set",
            "provider.max_retries=1",
            "--set",
            "provider.retry_backoff_ms=1",
        ])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("500"), "{err}");
    assert!(
        err.contains("cli:fail") && err.contains("log keeps"),
        "{err}"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the first attempt and one retry"
    );
    // The log is intact: what was there, plus the user's message.
    let after = std::fs::read_to_string(ws.join("sessions/cli_fail.jsonl")).unwrap();
    assert!(after.starts_with(&before));
    assert_eq!(
        shape(&session(ws, "cli:fail")),
        ["user: hello", "assistant: Hi!", "user: are you there?"]
    );
}

#[test]
fn a_turn_says_when_the_engine_consolidated_and_what_it_freed() {
    let (server, dir) = setup();
    let ws = dir.path();
    let mut old = Vec::new();
    for i in 0..4 {
        old.push(Message::user(format!(
            "fact {i}: {}",
            "alpha beta gamma delta ".repeat(1_000)
        )));
        old.push(Message::assistant(format!("noted {i}")));
    }
    write_session(ws, "cli:big", &old);
    // Consolidation forces save_memory; the turn itself gets a plain answer.
    server.respond_with(|req| {
        if req.body["tool_choice"]["function"]["name"] == "save_memory" {
            Reply::tool_call(
                "save_memory",
                json!({"history_entry": "[2026-11-30 10:00] Four facts about greek letters.",
                       "memory_update": "# Memory\n\n- Four facts were given.\n"}),
            )
        } else {
            Reply::text("All set.")
        }
    });
    let o = with_model(ws, &server, &["run", "-s", "cli:big", "anything new?"])
        .args([
            "--set",
            "engine.context_window=100000",
            "--set",
            "engine.max_output=4000",
            "--set",
            "engine.consolidation_ratio=0.1",
        ])
        .output()
        .unwrap();
    assert_eq!(ok(&o), "All set.\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("[mnemo] consolidated messages 0.."), "{err}");
    let freed: usize = err
        .lines()
        .find_map(|l| l.strip_prefix("[mnemo] prompt before this turn: "))
        .and_then(|l| l.split("(freed ").nth(1))
        .and_then(|r| r.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no tokens-freed line in: {err}"));
    assert!(freed > 1_000, "{err}");
}

#[test]
fn the_iteration_bound_is_reported() {
    let (server, dir) = setup();
    let ws = dir.path();
    server.set_default(Reply::tool_call("memory_search", json!({"query": "x"})));
    let o = with_model(
        ws,
        &server,
        &[
            "run",
            "-s",
            "cli:loop",
            "--max-iterations",
            "2",
            "search forever",
        ],
    )
    .output()
    .unwrap();
    let out = ok(&o);
    assert_eq!(out.trim(), mnemo::engine::iteration_limit_notice(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bound of 2 model calls"), "{err}");
    assert_eq!(server.requests().len(), 2);
    let log = shape(&session(ws, "cli:loop"));
    assert_eq!(log.len(), 6, "{log:#?}");
    assert_eq!(
        log[5],
        format!("assistant: {}", mnemo::engine::iteration_limit_notice(2))
    );
}

#[test]
fn piped_chat_prints_help_and_leaves_on_exit() {
    let (server, dir) = setup();
    let ws = dir.path();
    let o = piped(
        with_model(ws, &server, &["chat"]),
        b"/help\n/exit\nnever read\n",
    );
    let out = ok(&o);
    insta::assert_snapshot!("chat_help", out);
    assert!(server.requests().is_empty());
}

#[test]
fn piped_chat_forgets_a_memory_and_starts_a_new_conversation() {
    let (server, dir) = setup();
    let ws = dir.path();
    let add = bare(
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
    ok(&piped(add, b"Prefers green tea.\n"));
    assert!(ws.join("memory/tea.md").exists());
    write_session(
        ws,
        "cli:direct",
        &[
            Message::user("I deploy on Fridays."),
            Message::assistant("Noted."),
        ],
    );
    // /new: consolidation, then the note's slug.
    server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-11-30 10:00] The user deploys on Fridays.",
               "memory_update": "# Memory\n\n- Deploys on Fridays.\n"}),
    ));
    server.push(Reply::text("friday-deploys"));
    // End of input (Ctrl-D) leaves the chat.
    let out = ok(&piped(
        with_model(ws, &server, &["chat"]),
        b"/forget Tea\n/nope\n/search\n/new\n",
    ));
    assert!(
        out.contains("removed memory/tea.md and its index line"),
        "{out}"
    );
    assert!(!ws.join("memory/tea.md").exists());
    assert!(!std::fs::read_to_string(ws.join("MEMORY.md"))
        .unwrap()
        .contains("tea.md"));
    assert!(out.contains("unknown command /nope"), "{out}");
    assert!(out.contains("usage: /search QUERY"), "{out}");
    assert!(out.contains("consolidated messages 0..2"), "{out}");
    assert!(
        out.contains(&format!(
            "session note written to memory/{}-friday-deploys.md",
            today()
        )),
        "{out}"
    );
    assert!(
        out.contains("new conversation in session cli:direct"),
        "{out}"
    );
    assert!(std::fs::read_to_string(ws.join("MEMORY.md"))
        .unwrap()
        .contains("Deploys on Fridays."));
}

/// tmux servers started by this test binary.
static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A tmux server of its own (its own socket), killed on drop.
struct Tmux {
    socket: String,
    session: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn start(command: &str) -> Tmux {
        let t = Tmux {
            // One server per test: tests run at once, and each kills its own.
            socket: format!(
                "mnemo-chat-test-{}-{}",
                std::process::id(),
                SERVERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            ),
            session: "chat".into(),
        };
        let st = t
            .cmd()
            .args([
                "new-session",
                "-d",
                "-s",
                &t.session,
                "-x",
                "200",
                "-y",
                "50",
                command,
            ])
            .status()
            .unwrap();
        assert!(st.success(), "tmux new-session failed");
        t
    }

    fn send(&self, line: &str) {
        let st = self
            .cmd()
            .args(["send-keys", "-t", &self.session, "-l", line])
            .status()
            .unwrap();
        assert!(st.success());
        let st = self
            .cmd()
            .args(["send-keys", "-t", &self.session, "Enter"])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Sends a key such as `C-c`.
    fn key(&self, key: &str) {
        let st = self
            .cmd()
            .args(["send-keys", "-t", &self.session, key])
            .status()
            .unwrap();
        assert!(st.success());
    }

    fn screen(&self) -> String {
        let o = self
            .cmd()
            .args([
                "capture-pane",
                "-p",
                "-J",
                "-S",
                "-1000",
                "-t",
                &self.session,
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Polls the pane until `needle` appears `times` times (60 s at most).
    fn wait_for(&self, needle: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.matches(needle).count() >= times {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?} ×{times}; the pane shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Whether tmux runs here; in CI its absence fails the test (.ci/run
/// installs it), elsewhere the interactive test is skipped with a notice.
fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is missing in CI: .ci/run installs it"
    );
    eprintln!("notice: tmux is not installed; skipping the interactive chat test");
    false
}

/// `env -u VAR ...` for the variables a test's mnemo must not inherit: the
/// start of a command line run inside tmux.
fn scrubbed_env() -> String {
    let mut command = String::from("env");
    for v in SCRUBBED_ENV {
        command.push_str(&format!(" -u {v}"));
    }
    command
}

#[test]
fn interactive_chat_in_tmux() {
    if !have_tmux() {
        return;
    }
    let (server, dir) = setup();
    let ws = dir.path();
    ok(&bare(ws, &["log", "The deploy key lives in vault/ops."])
        .output()
        .unwrap());
    std::fs::write(
        ws.join("MEMORY.md"),
        "# Memory\n\n- Prefers green tea, no sugar.\n",
    )
    .unwrap();
    // An earlier exchange with a failed tool call that snip can drop.
    let mut call = Message::assistant("");
    call.content = None;
    call.tool_calls = Some(vec![serde_json::from_value(json!({
        "id": "e1", "type": "function",
        "function": {"name": "exec", "arguments": "{\"cmd\":\"make\"}"}
    }))
    .unwrap()]);
    write_session(
        ws,
        "cli:tmux",
        &[
            Message::user("run make please"),
            call,
            Message::tool_result(
                "e1",
                "exec",
                format!("Error: make failed {}", "x".repeat(2_000)),
            ),
            Message::assistant("make failed."),
        ],
    );
    server.push(Reply::text("Hi from the scripted model."));
    // /compact: autocompact flushes memory first (nothing new), then summarises.
    server.push(Reply::tool_call(
        "extract_facts",
        serde_json::json!({"facts": []}),
    ));
    server.push(Reply::text("## Summary\nThe user ran make; it failed."));

    let mut command = scrubbed_env();
    let bin = env!("CARGO_BIN_EXE_mnemo");
    command.push_str(&format!(
        " {} --workspace {} chat --session cli:tmux --provider openai --base-url {} --model test-model \
         --set embedder.kind=none --set memory.timezone=UTC --set provider.max_retries=0; \
         echo CHAT-EXITED-$?; sleep 120",
        shell_quote(bin),
        shell_quote(&ws.display().to_string()),
        server.openai_base(),
    ));
    let tmux = Tmux::start(&command);
    tmux.wait_for("you> ", 1);

    tmux.send("hello there");
    tmux.wait_for("mnemo> Hi from the scripted model.", 1);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].body.to_string().contains("hello there"));

    tmux.send("/search deploy key");
    // The hit's text is printed after its citation line: waiting for the
    // citation alone can catch the screen between the two.
    let screen = tmux.wait_for("vault/ops", 1);
    assert!(
        screen.contains(&format!("memory/{}.md#L", today())),
        "{screen}"
    );
    assert!(screen.contains(&format!(", {})", today())), "{screen}");
    assert!(!screen.contains("dates understood"), "{screen}");
    tmux.send(&format!("/search deploy key on {}", today()));
    let screen = tmux.wait_for(&format!("(dates understood: {};", today()), 1);
    assert!(screen.contains("vault/ops"), "{screen}");

    tmux.send("/memory");
    tmux.wait_for("Prefers green tea, no sugar.", 1);

    tmux.send("/compact keep the deploy facts");
    let screen = tmux.wait_for("tokens in total", 1);
    assert!(screen.contains("snip:"), "{screen}");
    let summary_req = server.requests().last().unwrap().body.to_string();
    assert!(
        summary_req.contains("You are summarising")
            && summary_req.contains("<focus>\\nkeep the deploy facts\\n</focus>"),
        "{summary_req}"
    );
    assert!(!screen.contains("failed ("), "{screen}");
    let freed: usize = screen
        .lines()
        .find_map(|l| l.split("[mnemo] freed ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no freed count in:\n{screen}"));
    assert!(freed > 0, "{screen}");

    // Ctrl-C during a turn cancels it; the chat goes on.
    server.push(Reply::delay(
        Duration::from_secs(30),
        Reply::text("too late"),
    ));
    let before = server.request_count();
    tmux.send("a slow question");
    // Cancel once the model has the request, so the turn is really waiting.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.request_count() == before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.key("C-c");
    tmux.wait_for("turn cancelled (Ctrl-C)", 1);
    server.push(Reply::text("Back again."));
    tmux.send("are you there?");
    tmux.wait_for("mnemo> Back again.", 1);

    // At the prompt, Ctrl-C leaves as a terminal program does.
    tmux.key("C-c");
    tmux.wait_for("CHAT-EXITED-130", 1);
    let log = shape(&session(ws, "cli:tmux"));
    assert_eq!(log[4], "user: hello there");
    assert!(log.iter().any(|l| l == "user: a slow question"), "{log:#?}");
    assert!(!log.iter().any(|l| l.contains("too late")), "{log:#?}");
    assert_eq!(
        log.last().map(String::as_str),
        Some("assistant: Back again.")
    );
    assert_eq!(log[5], "assistant: Hi from the scripted model.");
}

/// A session over its consolidation target with the `--set`s of
/// [`background`] (as in `a_turn_says_when_the_engine_consolidated…`).
fn big_session(ws: &Path, key: &str) {
    let mut old = Vec::new();
    for i in 0..4 {
        old.push(Message::user(format!(
            "fact {i}: {}",
            "alpha beta gamma delta ".repeat(1_000)
        )));
        old.push(Message::assistant(format!("noted {i}")));
    }
    write_session(ws, key, &old);
}

/// `--set`s that put [`big_session`] over its target, with the memory
/// work after the answer.
const BACKGROUND: [&str; 8] = [
    "--set",
    "engine.context_window=100000",
    "--set",
    "engine.max_output=4000",
    "--set",
    "engine.consolidation_ratio=0.1",
    "--set",
    "engine.memory_work=background",
];

/// Consolidation answers after `delay`; anything else is the answer.
fn consolidate_after(server: &ScriptedServer, delay: Duration) {
    server.respond_with(move |req| {
        if req.body["tool_choice"]["function"]["name"] == "save_memory" {
            Reply::delay(
                delay,
                Reply::tool_call(
                    "save_memory",
                    json!({"history_entry": "[2026-11-30 10:00] Four facts about greek letters.",
                           "memory_update": "# Memory\n\n- Four facts were given.\n"}),
                ),
            )
        } else {
            Reply::text("All set.")
        }
    });
}

fn cursor(ws: &Path, key: &str) -> usize {
    SessionStore::new(&Workspace::new(ws), SessionOptions::default())
        .load(key)
        .unwrap()
        .meta
        .last_consolidated
}

#[test]
fn piped_chat_answers_before_the_memory_work_and_waits_for_it_on_exit() {
    let (server, dir) = setup();
    let ws = dir.path();
    big_session(ws, "cli:bg");
    consolidate_after(&server, Duration::from_secs(1));
    let mut cmd = with_model(ws, &server, &["chat", "-s", "cli:bg"]);
    cmd.args(BACKGROUND);
    let o = piped(cmd, b"anything new?\n/exit\n");
    let out = ok(&o);
    let answer = out
        .find("mnemo> All set.")
        .unwrap_or_else(|| panic!("{out}"));
    let leaving = out
        .find("[mnemo] saving memory from this conversation before leaving")
        .unwrap_or_else(|| panic!("{out}"));
    let consolidated = out
        .find("[mnemo] consolidated messages 0..")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(answer < leaving && leaving < consolidated, "{out}");
    assert!(out.contains("[mnemo] memory saved ("), "{out}");
    // The model answered first, then consolidated.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].body.to_string().contains("anything new?"));
    assert_eq!(
        reqs[1].body["tool_choice"]["function"]["name"],
        "save_memory"
    );
    assert!(cursor(ws, "cli:bg") > 0);

    // `mnemo run` prints the answer, then saves memory before it exits.
    big_session(ws, "cli:run-bg");
    let o = with_model(
        ws,
        &server,
        &["run", "-s", "cli:run-bg", "--json", "and now?"],
    )
    .args(BACKGROUND)
    .output()
    .unwrap();
    let turn: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert_eq!(turn["answer"], "All set.", "{turn}");
    assert_eq!(turn["memory_work"], "background", "{turn}");
    assert!(
        !turn["events"].to_string().contains("consolidated"),
        "{turn}"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("[mnemo] consolidated messages 0.."), "{err}");
    assert!(cursor(ws, "cli:run-bg") > 0);
}

#[test]
fn chat_in_tmux_stops_memory_work_for_the_next_turn_and_ctrl_c_stops_the_wait_on_exit() {
    if !have_tmux() {
        return;
    }
    let (server, dir) = setup();
    let ws = dir.path();
    big_session(ws, "cli:bgtmux");
    // Consolidation would take a minute: nothing may wait for it.
    consolidate_after(&server, Duration::from_secs(60));
    let mut command = scrubbed_env();
    command.push_str(&format!(
        " {} --workspace {} chat --session cli:bgtmux --provider openai --base-url {} --model test-model \
         --set embedder.kind=none --set memory.timezone=UTC --set provider.max_retries=0 {}; \
         echo CHAT-EXITED-$?; sleep 120",
        shell_quote(env!("CARGO_BIN_EXE_mnemo")),
        shell_quote(&ws.display().to_string()),
        server.openai_base(),
        BACKGROUND.join(" "),
    ));
    let tmux = Tmux::start(&command);
    tmux.wait_for("memory is saved after each answer, while you type", 1);
    tmux.wait_for("you> ", 1);
    let consolidations = || {
        server
            .requests()
            .iter()
            .filter(|r| r.body["tool_choice"]["function"]["name"] == "save_memory")
            .count()
    };

    tmux.send("first question");
    tmux.wait_for("mnemo> All set.", 1);
    let deadline = Instant::now() + Duration::from_secs(30);
    while consolidations() == 0 {
        assert!(
            Instant::now() < deadline,
            "no consolidation after the answer"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The next turn stops it and answers at once.
    let asked = Instant::now();
    tmux.send("second question");
    let screen = tmux.wait_for("mnemo> All set.", 2);
    assert!(asked.elapsed() < Duration::from_secs(30), "{screen}");
    assert!(
        screen.contains("[mnemo] memory work from the last turn stopped after"),
        "{screen}"
    );
    // ...and starts it again after the answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    while consolidations() < 2 {
        assert!(
            Instant::now() < deadline,
            "the memory work did not start again"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Leaving waits for it; Ctrl-C stops the wait.
    tmux.send("/exit");
    tmux.wait_for("saving memory from this conversation before leaving", 1);
    tmux.key("C-c");
    let screen = tmux.wait_for("CHAT-EXITED-0", 1);
    assert!(
        screen.contains("[mnemo] memory work stopped after"),
        "{screen}"
    );
    // Nothing half-written: the cursor and the history are as they were,
    // and both messages are in the log.
    assert_eq!(cursor(ws, "cli:bgtmux"), 0);
    assert!(
        !ws.join("memory/HISTORY.md").exists()
            || !std::fs::read_to_string(ws.join("memory/HISTORY.md"))
                .unwrap()
                .contains("[consolidated from")
    );
    let log = shape(&session(ws, "cli:bgtmux"));
    assert_eq!(log[8], "user: first question");
    assert_eq!(log[9], "assistant: All set.");
    assert_eq!(log[10], "user: second question");
    assert_eq!(log[11], "assistant: All set.");
}

/// The flags that run the chat on the local SmolLM2-135M fixture, with a
/// small window, a short answer and one model call a turn (a loaded
/// machine takes a while even for this model).
fn local_model_flags() -> Vec<String> {
    let gguf = mnemo_test_support::smollm2_gguf();
    [
        "--provider",
        "local",
        "--set",
        &format!("provider.path={}", gguf.display()),
        "--set",
        "provider.context_window=2048",
        "--set",
        "provider.max_output=48",
        "--max-iterations",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A local model's turn takes a minute on the 1.5B model: on a terminal,
/// the spinner says how far it is (the prompt it reads, the tokens it has
/// written); piped, stderr gets none of it.
#[test]
fn the_spinner_says_how_far_the_local_model_is_on_a_terminal_only() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let flags = local_model_flags();

    // Piped: the answer, and no progress line on stderr.
    let mut run = bare(ws, &["run", "--session", "cli:piped", "Say hello."]);
    run.args(&flags);
    let o = run.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        !err.contains("written after a") && !err.contains("reading the prompt"),
        "{err}"
    );

    let mut command = scrubbed_env();
    command.push_str(&format!(
        " {} --workspace {} chat --session cli:tmux --set embedder.kind=none --set memory.timezone=UTC",
        shell_quote(env!("CARGO_BIN_EXE_mnemo")),
        shell_quote(&ws.display().to_string()),
    ));
    for f in &flags {
        command.push(' ');
        command.push_str(&shell_quote(f));
    }
    command.push_str("; echo CHAT-EXITED-$?; sleep 120");
    let tmux = Tmux::start(&command);
    tmux.wait_for("you> ", 1);
    tmux.send("Count from one to ten, please.");
    // Caught while the model works: the spinner is cleared once it answers.
    let deadline = Instant::now() + Duration::from_secs(120);
    let seen = loop {
        let screen = tmux.screen();
        if let Some(line) = screen.lines().find(|l| {
            l.contains("the model is answering: ")
                && (l.contains("token(s) written after a") || l.contains("reading the prompt ("))
        }) {
            break line.to_string();
        }
        assert!(
            !screen.contains("mnemo> ") || Instant::now() < deadline,
            "no progress line before the answer; the pane shows:\n{screen}"
        );
        assert!(
            Instant::now() < deadline,
            "timed out; the pane shows:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        seen.contains("-token prompt") || seen.contains(" tokens)"),
        "{seen}"
    );
    // Dropping the tmux server ends the chat: its answer is not the point.
}

/// Ctrl-C while a slow preparation runs (memory work before the turn, as
/// `[engine] memory_work = "inline"` does it) cancels the turn and keeps
/// the message the user typed: it is logged before anything slow.
#[test]
fn ctrl_c_during_a_slow_preparation_keeps_the_typed_message() {
    if !have_tmux() {
        return;
    }
    let (server, dir) = setup();
    let ws = dir.path();
    big_session(ws, "cli:slow");
    consolidate_after(&server, Duration::from_secs(60));
    let mut command = scrubbed_env();
    command.push_str(&format!(
        " {} --workspace {} chat --session cli:slow --provider openai --base-url {} --model test-model \
         --set embedder.kind=none --set memory.timezone=UTC --set provider.max_retries=0",
        shell_quote(env!("CARGO_BIN_EXE_mnemo")),
        shell_quote(&ws.display().to_string()),
        server.openai_base(),
    ));
    for a in BACKGROUND {
        command.push(' ');
        command.push_str(&shell_quote(a));
    }
    // The memory work before the turn, where a slow first turn spends it.
    command.push_str(" --set engine.memory_work=inline; echo CHAT-EXITED-$?; sleep 120");
    let tmux = Tmux::start(&command);
    tmux.wait_for("you> ", 1);
    tmux.send("I like hiking in the Alps, please remember.");
    // The consolidation of the preparation has the model now.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.request_count() == 0 {
        assert!(Instant::now() < deadline, "{}", tmux.screen());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        server.requests()[0].body["tool_choice"]["function"]["name"],
        "save_memory",
        "the preparation's consolidation, not the turn's answer"
    );
    tmux.key("C-c");
    tmux.wait_for("turn cancelled (Ctrl-C)", 1);
    let log = shape(&session(ws, "cli:slow"));
    assert_eq!(
        log.last().map(String::as_str),
        Some("user: I like hiking in the Alps, please remember."),
        "{log:#?}"
    );
}

/// `mnemo new` with the local model (a minute or more on the 1.5B model)
/// says on a terminal how far the model is too.
#[test]
fn new_says_how_far_the_local_model_is_on_a_terminal() {
    if !have_tmux() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    for (role, text) in [
        ("user", "My name is Ada. I moved to Lisbon last week."),
        ("assistant", "Welcome to Lisbon, Ada."),
        ("user", "I drink green tea, never coffee."),
        ("assistant", "Green tea it is."),
    ] {
        ok(&bare(
            ws,
            &[
                "session",
                "append",
                "cli:new",
                "--role",
                role,
                "--content",
                text,
            ],
        )
        .output()
        .unwrap());
    }
    let mut flags = local_model_flags();
    // `new` has no turn, so no bound on its model calls.
    flags.truncate(flags.len() - 2);
    let mut command = scrubbed_env();
    command.push_str(&format!(
        " {} --workspace {} new cli:new --set embedder.kind=none --set memory.timezone=UTC",
        shell_quote(env!("CARGO_BIN_EXE_mnemo")),
        shell_quote(&ws.display().to_string()),
    ));
    for f in &flags {
        command.push(' ');
        command.push_str(&shell_quote(f));
    }
    command.push_str("; echo NEW-EXITED-$?; sleep 120");
    let tmux = Tmux::start(&command);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let screen = tmux.screen();
        if screen.lines().any(|l| {
            l.contains("writing its session note: ")
                && (l.contains("token(s) written after a") || l.contains("reading the prompt ("))
        }) {
            break;
        }
        assert!(
            !screen.contains("NEW-EXITED") && Instant::now() < deadline,
            "no progress line while the model worked; the pane shows:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
