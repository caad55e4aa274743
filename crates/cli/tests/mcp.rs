//! End-to-end tests of `mnemo mcp`: the real binary, spoken to in JSON-RPC
//! over stdio and over streamable HTTP on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use mnemo_test_support::cli::{free_port, http_request, mnemo_command, start_listening};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");

use mnemo_test_support::model_dir;

fn command(ws: &Path, extra: &[&str]) -> Command {
    mnemo_command(BIN, ws, extra)
}

fn init(ws: &Path) {
    let out = command(ws, &["init"]).output().unwrap();
    assert!(
        out.status.success(),
        "init failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `mnemo mcp` child on stdio.
struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Stdio_ {
    fn start(ws: &Path, set: &[&str]) -> Self {
        let mut args: Vec<&str> = Vec::new();
        for s in set {
            args.push("--set");
            args.push(s);
        }
        args.push("mcp");
        let mut child = command(ws, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Stdio_ {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "mnemo", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        assert!(
            init["result"]["capabilities"]["resources"].is_object(),
            "{init}"
        );
        assert!(init["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("memory_search"));
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "the server closed stdout while we waited for {method}"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// tools/call; returns (is_error, structured content).
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &r["result"];
        assert!(
            result.is_object(),
            "tools/call {tool} failed at the protocol level: {r}"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed, result["structuredContent"]);
        (result["isError"] == json!(true), parsed)
    }
}

impl Drop for Stdio_ {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_tools_resources_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let mut s = Stdio_::start(ws, &["embedder.kind=none"]);

    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "memory_search",
            "memory_get",
            "memory_write",
            "memory_forget",
            "memory_history",
            "session_append",
            "session_context"
        ]
    );

    // Write: a typed memory, a daily note and a MEMORY.md section.
    let (err, typed) = s.call(
        "memory_write",
        json!({"mode": "typed", "name": "deploy freeze", "description": "when deploys are frozen",
               "type": "project", "body": "Deploys are frozen from 2026-12-01 because of ticket QX-4711."}),
    );
    assert!(!err, "{typed}");
    assert_eq!(typed["path"], "memory/deploy-freeze.md");
    let (err, daily) = s.call(
        "memory_write",
        json!({"mode": "daily", "text": "Met Ana about the zebrafish rollout"}),
    );
    assert!(!err, "{daily}");
    assert_eq!(daily["written"], 1);
    let daily_path = daily["path"].as_str().unwrap().to_string();
    let (err, sec) = s.call(
        "memory_write",
        json!({"mode": "memory_section", "heading": "Preferences", "body": "- prefers green tea"}),
    );
    assert!(!err, "{sec}");
    assert_eq!(sec["action"], "added");
    let memory_md = common::read(ws, "MEMORY.md");
    assert!(
        memory_md.contains("## Preferences\n\n- prefers green tea"),
        "{memory_md}"
    );
    assert!(memory_md.contains("memory/deploy-freeze.md"), "{memory_md}");
    let (err, _) = s.call(
        "memory_write",
        json!({"mode": "memory_section", "heading": "Preferences", "body": "- prefers black coffee"}),
    );
    assert!(!err);
    let memory_md = common::read(ws, "MEMORY.md");
    assert!(
        memory_md.contains("black coffee") && !memory_md.contains("green tea"),
        "{memory_md}"
    );

    // Search, keyword-only, finds the daily note with a citation.
    let (err, found) = s.call(
        "memory_search",
        json!({"query": "zebrafish rollout", "max_results": 3}),
    );
    assert!(!err, "{found}");
    assert_eq!(found["mode"], "keyword");
    let hit = &found["results"][0];
    assert_eq!(hit["path"], daily_path.as_str(), "{found}");
    assert_eq!(hit["source"], "memory");
    let (start, end) = (
        hit["start_line"].as_u64().unwrap(),
        hit["end_line"].as_u64().unwrap(),
    );
    assert_eq!(hit["citation"], format!("{daily_path}#L{start}-L{end}"));
    assert!(hit["snippet"].as_str().unwrap().contains("zebrafish"));
    assert!(found.get("dates").is_none(), "{found}");

    // A date alone finds that day's log, and the answer says how it was read.
    let day = daily_path
        .trim_start_matches("memory/")
        .trim_end_matches(".md");
    let (err, on_day) = s.call(
        "memory_search",
        json!({"query": format!("what happened on {day}?")}),
    );
    assert!(!err, "{on_day}");
    assert_eq!(on_day["dates"], json!([day]), "{on_day}");
    assert_eq!(
        on_day["results"][0]["path"],
        daily_path.as_str(),
        "{on_day}"
    );

    // Get the cited lines.
    let (err, got) = s.call(
        "memory_get",
        json!({"path": daily_path, "from": start, "lines": end - start + 1}),
    );
    assert!(!err, "{got}");
    assert!(got["text"].as_str().unwrap().contains("zebrafish"), "{got}");
    let (err, missing) = s.call("memory_get", json!({"path": "memory/not-yet.md"}));
    assert!(!err, "{missing}");
    assert_eq!(missing["text"], "");

    // Refusals are tool errors with a message, and read nothing.
    for bad in [
        "../outside.md",
        "/etc/passwd",
        "sessions/../mnemo.toml",
        "mnemo.toml",
    ] {
        let (err, v) = s.call("memory_get", json!({"path": bad}));
        assert!(err, "{bad} was not refused: {v}");
        assert_eq!(v["error"]["code"], "forbidden", "{bad}: {v}");
        assert!(!v["error"]["message"].as_str().unwrap().is_empty());
    }
    let (err, v) = s.call("memory_search", json!({"query": "  "}));
    assert!(err);
    assert_eq!(v["error"]["code"], "invalid_input");
    let (err, v) = s.call("memory_write", json!({"mode": "weekly", "text": "x"}));
    assert!(err, "{v}");
    let unknown = s.request("tools/call", json!({"name": "nope", "arguments": {}}));
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("memory_search"),
        "{unknown}"
    );

    // Resources.
    let listed = s.request("resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"mnemo://workspace/MEMORY.md"), "{uris:?}");
    assert!(
        uris.contains(&"mnemo://workspace/memory/deploy-freeze.md"),
        "{uris:?}"
    );
    let read = s.request(
        "resources/read",
        json!({"uri": "mnemo://workspace/MEMORY.md"}),
    );
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("black coffee"),
        "{read}"
    );
    let bad = s.request(
        "resources/read",
        json!({"uri": "mnemo://workspace/../etc/passwd"}),
    );
    assert!(bad["error"].is_object(), "{bad}");

    // Forget removes the file and its index line.
    let (err, gone) = s.call("memory_forget", json!({"name": "deploy freeze"}));
    assert!(!err, "{gone}");
    assert!(!common::exists(ws, "memory/deploy-freeze.md"));
    assert!(!common::read(ws, "MEMORY.md").contains("deploy-freeze"));
    let (_, found) = s.call("memory_search", json!({"query": "QX-4711"}));
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["path"] != "memory/deploy-freeze.md"),
        "{found}"
    );
    let (err, v) = s.call("memory_forget", json!({"name": "deploy freeze"}));
    assert!(err);
    assert_eq!(v["error"]["code"], "not_found");

    // Sessions: append, then build the context.
    let (err, app) = s.call(
        "session_append",
        json!({"key": "chat:1", "messages": [
            {"role": "user", "content": "what is the plan for the pelican launch?"},
            {"role": "assistant", "content": "launch on Friday"}]}),
    );
    assert!(!err, "{app}");
    assert_eq!(app["appended"], 2);
    let (err, ctx) = s.call(
        "session_context",
        json!({"key": "chat:1", "message": "and after that?"}),
    );
    assert!(!err, "{ctx}");
    assert!(
        ctx["system"].as_str().unwrap().contains("black coffee"),
        "{ctx}"
    );
    let texts: Vec<&str> = ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "what is the plan for the pelican launch?",
            "launch on Friday",
            "and after that?"
        ]
    );
    let (err, v) = s.call("session_context", json!({"key": "nobody"}));
    assert!(err);
    assert_eq!(v["error"]["code"], "not_found");
    let before = session_bytes(ws);
    let (err, _) = s.call(
        "session_append",
        json!({"key": "chat:1", "messages": [{"role": "wizard", "content": "x"}]}),
    );
    assert!(err);
    assert_eq!(
        session_bytes(ws),
        before,
        "a refused append changed the session log"
    );
}

/// Every session log's content, concatenated in name order.
fn session_bytes(ws: &Path) -> Vec<u8> {
    let storage = common::storage(ws);
    storage
        .session_files()
        .unwrap()
        .iter()
        .flat_map(|e| storage.read_session_file(&e.rel).unwrap().unwrap())
        .collect()
}

#[test]
fn stdio_search_with_the_local_model_is_hybrid() {
    let model = model_dir();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let set = format!("embedder.path={}", model.display());
    let mut s = Stdio_::start(ws, &["embedder.kind=local", &set]);
    for text in [
        "The user adopted a small grey kitten named Miso last week",
        "Quarterly budget review moved to Thursday afternoon",
        "Car needs new winter tyres before December",
    ] {
        let (err, v) = s.call("memory_write", json!({"mode": "daily", "text": text}));
        assert!(!err, "{v}");
    }
    let (err, found) = s.call(
        "memory_search",
        json!({"query": "pet cat", "max_results": 3, "min_score": 0.0}),
    );
    assert!(!err, "{found}");
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert!(
        found["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("kitten"),
        "{found}"
    );
}

/// A raw HTTP/1.1 POST; returns (status, body).
fn post(port: u16, path: &str, token: Option<&str>, body: &Value) -> (u16, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    http_request(port, "POST", path, &headers, Some(&body.to_string()))
}

/// The JSON-RPC message in a JSON or SSE body.
fn rpc(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str(body) {
        return v;
    }
    let data: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .collect();
    data.iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|v| v.get("id").is_some())
        .unwrap()
}

#[test]
fn http_requires_the_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = start_listening(command(
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "mcp",
            "--http",
            &addr,
            "--token",
            "s3cret-token",
        ],
    ));
    let init_req = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let write_req = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_write", "arguments": {"mode": "daily", "text": "the heron project starts in May"}}});

    let (status, body) = post(port, "/mcp", None, &init_req);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Bearer"), "{body}");
    let (status, _) = post(port, "/mcp", Some("wrong"), &write_req);
    assert_eq!(status, 401);
    assert!(!e_is_daily(ws), "a refused request wrote a daily log");

    let (status, body) = post(port, "/mcp", Some("s3cret-token"), &init_req);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        rpc(&body)["result"]["serverInfo"]["name"],
        "mnemo",
        "{body}"
    );
    let (status, body) = post(port, "/mcp", Some("s3cret-token"), &write_req);
    assert_eq!(status, 200, "{body}");
    assert_eq!(rpc(&body)["result"]["isError"], false, "{body}");
    let search = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": "heron project"}}});
    let (status, body) = post(port, "/mcp", Some("s3cret-token"), &search);
    assert_eq!(status, 200, "{body}");
    let found = &rpc(&body)["result"]["structuredContent"];
    assert!(
        found["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("heron"),
        "{body}"
    );

    let _ = child.kill();
    let _ = child.wait();
}

/// True when a daily log exists in the workspace.
fn e_is_daily(ws: &Path) -> bool {
    common::list(ws, "memory").iter().any(|rel| {
        let n = rel.strip_prefix("memory/").unwrap();
        n.len() == 13 && n.ends_with(".md") && n.starts_with("20")
    })
}

#[test]
fn http_refuses_a_public_address_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    // An existing workspace: a database's must be created to be opened.
    init(dir.path());
    let out = command(dir.path(), &["mcp", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token"), "{err}");
}

/// `memory_forget` removes typed memories only: the history, a daily log
/// and a session note are refused and stay; `memory_write` never overwrites
/// a typed memory unless `replace` is set.
#[test]
fn stdio_forget_and_typed_writes_never_lose_history_or_memories() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let files = common::write_append_only_files(ws);
    let mut s = Stdio_::start(ws, &["embedder.kind=none"]);
    for name in [
        "memory/HISTORY.md",
        "2026-11-28",
        "memory/2026-11-28-tea.md",
    ] {
        let (err, v) = s.call("memory_forget", json!({"name": name}));
        assert!(err, "{name}: {v}");
        assert!(v.to_string().contains("typed memories only"), "{name}: {v}");
    }
    for kept in files {
        assert!(common::exists(ws, kept), "{kept} is gone");
    }
    let write = |body: &str, replace: bool| {
        json!({"mode": "typed", "name": "过敏", "description": "allergy", "type": "user",
               "body": body, "replace": replace})
    };
    let (err, v) = s.call("memory_write", write("对花生过敏", false));
    assert!(!err, "{v}");
    assert_eq!(v["path"], "memory/过敏.md");
    let (err, v) = s.call("memory_write", write("对猫过敏", false));
    assert!(err && v.to_string().contains("already exists"), "{v}");
    let (err, v) = s.call("memory_write", write("对猫过敏", true));
    assert!(!err && v["action"] == "replaced", "{v}");
    let text = common::read(ws, "memory/过敏.md");
    assert!(text.contains("对猫过敏"), "{text}");
}

/// The CLI with `args`; its stdout, after checking it succeeded.
fn cli_ok(ws: &Path, args: &[&str]) -> String {
    let out = command(ws, args).output().unwrap();
    assert!(
        out.status.success(),
        "mnemo {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One service behind every surface: `mnemo search --json`, `POST
/// /v1/memory/search` and MCP's `memory_search` answer the same query with
/// the same JSON, hit for hit; the CLI honours `[search] max_results` and
/// validates as the servers do; and `mnemo get` opens the citations a
/// search printed, session logs included.
#[test]
fn every_surface_answers_a_search_alike() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    for i in 0..12 {
        cli_ok(ws, &["log", &format!("zebrafish tank {i} needs cleaning")]);
    }
    cli_ok(ws, &["log", "the new cartridge arrived"]);
    cli_ok(
        ws,
        &[
            "session",
            "append",
            "cli:direct",
            "--role",
            "user",
            "--content",
            "the zebrafish tank filter is broken",
        ],
    );
    fn with<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["--set", "embedder.kind=none"];
        a.extend_from_slice(extra);
        a
    }

    let cli: Value = serde_json::from_str(&cli_ok(
        ws,
        &with(&["search", "--json", "-n", "4", "zebrafish tank"]),
    ))
    .unwrap();
    let args = json!({"query": "zebrafish tank", "max_results": 4});
    let mut mcp = Stdio_::start(ws, &["embedder.kind=none"]);
    let (is_error, over_mcp) = mcp.call("memory_search", args.clone());
    assert!(!is_error, "{over_mcp}");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = start_listening(command(ws, &with(&["serve", "--http", &addr])));
    let (status, body) = post(port, "/v1/memory/search", None, &args);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(status, 200, "{body}");
    let over_http: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(cli["results"].as_array().map(Vec::len), Some(4), "{cli}");
    assert_eq!(cli, over_mcp, "CLI and MCP differ");
    assert_eq!(cli, over_http, "CLI and HTTP differ");

    // `[search] max_results` (here through --set) is the CLI's default too.
    let count = |extra: &[&'static str]| -> usize {
        let v: Value = serde_json::from_str(&cli_ok(ws, &with(extra))).unwrap();
        v["results"].as_array().unwrap().len()
    };
    assert_eq!(count(&["search", "--json", "zebrafish"]), 6);
    assert_eq!(
        count(&[
            "--set",
            "search.max_results=9",
            "search",
            "--json",
            "zebrafish"
        ]),
        9
    );
    // And it refuses what the servers refuse, with the same exit code.
    for bad in [
        with(&["search", "-n", "0", "zebrafish"]),
        with(&["search", "--min-score", "2", "zebrafish"]),
    ] {
        let out = command(ws, &bad).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }

    // Every citation a search printed opens with `mnemo get`.
    let all: Value = serde_json::from_str(&cli_ok(
        ws,
        &with(&["search", "--json", "-n", "20", "cartridge broken"]),
    ))
    .unwrap();
    let hits = all["results"].as_array().unwrap();
    let session = hits
        .iter()
        .find(|h| h["source"] == "sessions")
        .expect("the session message is found");
    let memory = hits.iter().find(|h| h["source"] == "memory").unwrap();
    for hit in [session, memory] {
        let citation = hit["citation"].as_str().unwrap();
        let got: Value = serde_json::from_str(&cli_ok(ws, &["get", "--json", citation])).unwrap();
        let lines = hit["end_line"].as_u64().unwrap() - hit["start_line"].as_u64().unwrap() + 1;
        assert_eq!(got["from"], hit["start_line"], "{citation}: {got}");
        assert_eq!(got["lines"].as_u64(), Some(lines), "{citation}: {got}");
        let text = got["text"].as_str().unwrap();
        assert!(
            text.contains("cartridge") || text.contains("broken"),
            "{citation}: {got}"
        );
    }
    // The agents' memory_get opens the session citation too, with the
    // same lines (secrets, had there been any, taken out).
    let (is_error, got) = mcp.call(
        "memory_get",
        json!({"path": session["citation"].as_str().unwrap()}),
    );
    assert!(!is_error, "{got}");
    assert_eq!(got["from"], session["start_line"], "{got}");
    let text = got["text"].as_str().unwrap();
    assert!(
        text.contains("cartridge") || text.contains("broken"),
        "{got}"
    );
}
