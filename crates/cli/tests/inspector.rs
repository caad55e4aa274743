//! The memory inspector in a real browser: Debian's headless Chromium,
//! driven over WebDriver, against a real `mnemo serve` over a workspace
//! made by the binary itself (sessions, a compaction, facts with a
//! supersession and a refusal, a consolidation of MEMORY.md, a dream, a
//! transcript holding script). Screenshots of each view go to
//! `target/inspector-screenshots/`, and to `docs/inspector/` with
//! `MNEMO_UPDATE_SCREENSHOTS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Output;

use mnemo_test_support::cli::{
    free_port, mnemo_command, start_listening, stdout_of_success, Server,
};
use mnemo_test_support::webdriver::{self, Browser};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::json;

const TOKEN: &str = "inspector-test-token";
const HOSTILE: &str = "<script>window.pwned = 1; document.title = 'pwned'</script><img src=x onerror=\"window.pwned = 2\"> look at this";

fn mnemo(ws: &Path, model: &ScriptedServer, args: &[&str]) -> Output {
    mnemo_test_support::cli::mnemo_with_model(env!("CARGO_BIN_EXE_mnemo"), ws, model, args)
}

fn ok(o: Output) -> String {
    stdout_of_success(&o)
}

fn append(ws: &Path, model: &ScriptedServer, key: &str, turns: &[(&str, &str)]) {
    for (role, text) in turns {
        ok(mnemo(
            ws,
            model,
            &["session", "append", key, "--role", role, "--content", text],
        ));
    }
}

fn proposal(quote: &str, value: &str, fact: &str) -> serde_json::Value {
    json!({"quote": quote, "subject": "user", "attribute": "home city", "value": value, "kind": "states", "fact": fact})
}

/// A workspace with everything the inspector shows, written by the binary.
fn workspace(ws: &Path, model: &ScriptedServer) {
    ok(mnemo(ws, model, &["init"]));
    let facts = ["--set", "engine.consolidation_mode=facts"];
    // Facts: Paris, then Berlin replaces it; one proposal refused.
    append(
        ws,
        model,
        "chat:1",
        &[
            ("user", "I live in Paris."),
            ("assistant", "Noted."),
            ("user", "Thanks."),
        ],
    );
    model.push(Reply::tool_call(
        "extract_facts",
        json!({"facts": [
            proposal("I live in Paris", "Paris", "I live in Paris."),
            json!({"quote": "I live in Paris", "subject": "user", "attribute": "employer", "value": "Initech", "kind": "states", "fact": "The user works at Initech."}),
        ]}),
    ));
    let mut args = vec!["consolidate", "chat:1"];
    args.extend(facts);
    ok(mnemo(ws, model, &args));
    // A tool call whose result is over the budget: stored beside the log.
    let big = format!("RESULT-START {} RESULT-END", "row of output ".repeat(5_000));
    let lines = format!(
        "{}\n{}\n",
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"notes.md\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": big})
    );
    let stdin_append = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &["--set", "embedder.kind=none", "session", "append", "chat:1"],
    );
    stdout_of_success(&mnemo_test_support::cli::run_with_stdin(
        stdin_append,
        lines.as_bytes(),
    ));
    append(
        ws,
        model,
        "chat:1",
        &[
            ("user", "I live in Berlin now."),
            ("assistant", "Got it."),
            ("user", HOSTILE),
            ("assistant", "That is only text."),
            ("user", "Bye."),
        ],
    );
    // A compaction with a summary (of all but the last message).
    model.push(Reply::text(
        "<summary>## Goal\nKeep the user's home current.</summary>",
    ));
    let compacted = ok(mnemo(
        ws,
        model,
        &[
            "compact",
            "chat:1",
            "--level",
            "5",
            "--set",
            "engine.tail_tokens=12",
            "--set",
            "engine.flush_enabled=false",
        ],
    ));
    assert_eq!(model.remaining(), 0, "{compacted}");
    model.push(Reply::tool_call(
        "extract_facts",
        json!({"facts": [proposal("I live in Berlin now", "Berlin", "I live in Berlin now.")]}),
    ));
    ok(mnemo(ws, model, &args));
    // A consolidation of MEMORY.md, to undo from the page.
    append(
        ws,
        model,
        "notes:2",
        &[
            ("user", "My name is Ada and I deploy on Fridays."),
            ("assistant", "Noted, Ada."),
            ("user", "Thanks!"),
        ],
    );
    model.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-11-29 10:00] Ada said she deploys on Fridays.",
               "memory_update": "# Memory\n\n- User is Ada; deploys on Fridays.\n"}),
    ));
    ok(mnemo(ws, model, &["consolidate", "notes:2"]));
    // A session closed with a note (consolidation off: the note alone).
    append(
        ws,
        model,
        "talk:3",
        &[
            ("user", "Shall we talk about tea?"),
            ("assistant", "Gladly."),
        ],
    );
    model.push(Reply::text("tea-talk"));
    let closed = ok(mnemo(
        ws,
        model,
        &[
            "new",
            "talk:3",
            "--set",
            "engine.consolidation_enabled=false",
        ],
    ));
    assert!(closed.contains("session note written"), "{closed}");
    assert_eq!(model.remaining(), 0, "{closed}");
    // A typed memory, a dream, and a torn last line in a log.
    let add = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "memory",
            "add",
            "--type",
            "user",
            "--name",
            "drinks",
            "--description",
            "what the user drinks",
        ],
    );
    let out = mnemo_test_support::cli::run_with_stdin(add, b"Prefers green tea.\n");
    stdout_of_success(&out);
    ok(mnemo(
        ws,
        model,
        &["log", "The user's favourite colour is teal."],
    ));
    let dreamt = ok(mnemo(
        ws,
        model,
        &["dream", "--set", "engine.dream_fold_days=0"],
    ));
    assert!(dreamt.contains("1 fact(s) added"), "{dreamt}");
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(ws.join("sessions/notes_2.jsonl"))
        .or_else(|_| {
            let name = std::fs::read_dir(ws.join("sessions"))
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains("deploy on Fridays")))
                .unwrap();
            std::fs::OpenOptions::new().append(true).open(name)
        })
        .unwrap();
    log.write_all(b"{\"role\":\"user\",\"cont").unwrap();
    // A retrieval evaluation, saved for the index view.
    let data = ws.join("eval-data.json");
    std::fs::write(&data, EVAL_DATA).unwrap();
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "eval",
            "retrieval",
            data.to_str().unwrap(),
            "--mode",
            "keyword",
            "--save",
        ],
    )
    .output()
    .unwrap();
    stdout_of_success(&o);
    std::fs::remove_file(&data).unwrap();
}

/// A two-session conversation for a saved retrieval evaluation.
const EVAL_DATA: &str = r#"{"dataset": "handmade", "language": "en",
  "conversations": [{"conv_id": "a", "speakers": ["Ann", "Bob"], "sessions": [
    {"session_id": "s1", "date_time": "2023-05-08", "turns": [
      {"turn_id": "a1", "speaker": "Ann", "text": "I spent Sunday baking sourdough bread with my sister."}]},
    {"session_id": "s2", "date_time": "2023-05-20", "turns": [
      {"turn_id": "a2", "speaker": "Bob", "text": "The garden fence needs a new coat of paint."}]}]}],
  "questions": [{"qid": "q1", "conv_id": "a", "question": "What did Ann bake on Sunday?",
    "evidence_turns": ["a1"], "evidence_sessions": ["s1"]}]}"#;

fn serve(ws: &Path) -> Server {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = start_listening(mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "serve",
            "--http",
            &addr,
            "--token",
            TOKEN,
        ],
    ));
    Server { child, port }
}

/// Where this run's screenshots go.
fn shots() -> PathBuf {
    if std::env::var_os("MNEMO_UPDATE_SCREENSHOTS").is_some() {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/inspector")
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/inspector-screenshots")
    }
}

/// A page of another origin whose form posts to the API.
fn attacker_page(target: &str) -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let page = format!(
        "<!doctype html><form id=f method=post enctype=text/plain action=\"{target}\">\
         <input name='{{\"name\":\"drinks\",\"x\":\"' value='\"}}'></form>\
         <script>document.getElementById('f').submit()</script>"
    );
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(2) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (port, handle)
}

#[test]
fn the_inspector_in_a_real_browser() {
    if let Some(why) = webdriver::missing() {
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    let model = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    workspace(ws, &model);
    let facts = std::fs::read_to_string(ws.join("memory/facts.md")).unwrap();
    assert!(
        facts.contains("Berlin") && facts.contains("Paris"),
        "{facts}"
    );
    let srv = serve(ws);
    let base = format!("http://127.0.0.1:{}", srv.port);
    let shots = shots();
    let b = Browser::start(1280, 900);

    // Without the token: nothing but the page that asks for it.
    b.goto(&format!("{base}/"));
    b.wait_text("main", "needs a token");

    // Memory: facts with their state, the replaced one marked.
    b.goto(&format!("{base}/#token={TOKEN}"));
    let berlin = b.wait_for("#facts tr[data-fact]");
    let _ = berlin;
    let table = b.wait_text("#facts", "Berlin");
    assert!(table.contains("Paris"), "{table}");
    assert!(
        table.contains("current") && table.contains("ended"),
        "{table}"
    );
    assert!(
        !b.url().contains(TOKEN),
        "the token stays out of the address: {}",
        b.url()
    );
    b.screenshot(&shots.join("memory.png"));
    keyboard(&b);
    // A typed memory's history: its save.
    b.click("#files button.history");
    b.wait_text("#files .provenance", "write");
    // As of a day before everything: the notes and daily logs of later
    // days are left out, and the page says the rest is today's.
    let files = b.wait_text("#files", "tea-talk");
    assert!(files.contains("daily"), "{files}");
    b.goto(&format!("{base}/#/memory?as_of=2001-01-01"));
    b.wait_text("#files-as-of", "As they are today");
    let files = b.text_of("#files tbody");
    assert!(
        !files.contains("tea-talk") && !files.contains("daily"),
        "{files}"
    );
    assert!(files.contains("drinks"), "{files}");
    b.goto(&format!("{base}/#/memory"));
    b.wait_for("#facts tr[data-fact]");

    // A fact's provenance: its history, then the message it came from.
    let id = b
        .execute(
            "return [...document.querySelectorAll('#facts tr[data-fact]')].find(r => r.textContent.includes('Berlin')).dataset.fact",
            json!([]),
        )
        .as_str()
        .unwrap()
        .to_string();
    b.click(&format!("#fact-{id} button.history"));
    let chain = b.wait_text(&format!("#fact-{id} .provenance"), "replacing");
    assert!(chain.contains("chat:1"), "{chain}");
    b.click(&format!("#fact-{id} td a[href^='#/sessions/']"));
    let highlighted = b.wait_text("#timeline tr.highlight", "Berlin");
    assert!(
        highlighted.contains("I live in Berlin now."),
        "{highlighted}"
    );

    // The session: a transcript holding script shows it as text, and
    // runs none of it; the chart and the compaction are drawn.
    let page = b.wait_text("#timeline", "look at this");
    assert!(page.contains("<script>window.pwned"), "{page}");
    assert_eq!(
        b.execute(
            "return window.pwned === undefined && document.title === 'mnemo inspector'",
            json!([])
        ),
        json!(true)
    );
    assert!(!b.find_all("svg.chart path").is_empty());
    b.wait_text("#timeline", "autocompact");
    b.execute("window.scrollTo(0, 0)", json!([]));
    b.screenshot(&shots.join("session.png"));
    // A large tool result: its preview in the row, the whole on a click.
    b.click("#timeline a.stored-link");
    let whole = b.wait_text("#timeline pre.stored", "RESULT-END");
    assert!(
        whole.contains("RESULT-START"),
        "{}",
        &whole[..200.min(whole.len())]
    );
    // What memory made of the session sits among its messages: each
    // consolidation opens its entry under Changes.
    let event = b.wait_text("#timeline tr.event", "consolidated");
    assert!(event.contains("chat:1 messages"), "{event}");
    assert!(!b.find_all("svg.chart g.event-mark").is_empty());
    b.click("#timeline tr.event a[href*='changes?entry=']");
    let entry = b.wait_text("#history details.highlight", "chat:1 messages");
    assert!(entry.contains("fact(s) proposed"), "{entry}");
    // A session note, opened from its row.
    b.goto(&format!("{base}/#/sessions/talk%3A3"));
    b.wait_text("#timeline tr.event", "session note");
    b.click("#timeline a.note-link");
    b.wait_text("#timeline pre.note-text", "Session Key");
    // A torn line shows with its number.
    b.goto(&format!("{base}/#/sessions"));
    b.wait_text("#sessions", "notes:2");
    b.click("#sessions a[href*='notes']");
    b.wait_text("#timeline", "cannot be read");

    // A line of MEMORY.md: the consolidation that wrote it, and the
    // messages it was taken from, opened in the session on a click.
    b.goto(&format!("{base}/#/memory"));
    let line = b.wait_text("#memory-md-lines", "deploys on Fridays");
    assert!(
        line.contains("written by hand or before the history"),
        "{line}"
    );
    let n = b.execute(
        "return [...document.querySelectorAll('#memory-md-lines tr[data-line]')].find(r => r.textContent.includes('deploys on Fridays')).dataset.line",
        json!([]),
    );
    let row = format!("#memory-md-lines tr[data-line='{}']", n.as_str().unwrap());
    let origin = b.text_of(&row);
    assert!(
        origin.contains("deploys on Fridays") && origin.contains("notes:2 0..2"),
        "{origin}"
    );
    b.click(&format!("{row} a[href^='#/sessions/']"));
    let highlighted = b.wait_text("#timeline tr.highlight", "deploy on Fridays");
    assert!(highlighted.contains("My name is Ada"), "{highlighted}");
    assert_eq!(b.find_all("#timeline tr.highlight").len(), 2);
    b.goto(&format!("{base}/#/memory"));
    b.click(&format!("{row} a[href*='changes?entry=']"));
    let entry = b.wait_text("#history details.highlight", "consolidation of notes:2");
    assert!(
        entry.contains("+- User is Ada; deploys on Fridays."),
        "{entry}"
    );
    // Leave by another view: the next one's elements are then its own.
    b.goto(&format!("{base}/#/memory"));
    b.wait_for("#memory-md-lines");

    // Changes: the refused fact with why, then undo of the consolidation.
    b.goto(&format!("{base}/#/changes"));
    let refused = b.wait_text("#refused", "Initech");
    assert!(refused.contains("why"), "{refused}");
    let history = b.wait_text("#history", "consolidation");
    assert!(history.contains("dream"), "{history}");
    b.screenshot(&shots.join("changes.png"));
    let before = std::fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert!(before.contains("deploys on Fridays"), "{before}");
    b.execute("window.confirm = () => true", json!([]));
    b.click("#history details.kind-consolidation button.undo");
    b.wait_text("#status", "undid the consolidation");
    let after = std::fs::read_to_string(ws.join("MEMORY.md")).unwrap();
    assert!(!after.contains("deploys on Fridays"), "{after}");
    let history = std::fs::read_to_string(ws.join("memory/HISTORY.md")).unwrap();
    assert!(history.contains("undo of the consolidation"), "{history}");
    b.wait_text("#history", "(undone)");
    // The audit log records the undo, and MEMORY.md's history shows it.
    b.wait_text("#audit", "undo of the consolidation of notes:2");
    b.goto(&format!("{base}/#/memory"));
    b.click("#memory-md button.history");
    let chain = b.wait_text("#memory-md .provenance", "undo");
    assert!(chain.contains("notes:2"), "{chain}");

    // The prompt, part by part.
    b.goto(&format!("{base}/#/prompt?session=chat%3A1"));
    b.wait_text("#prompt-parts", "tokens of a");
    assert!(!b.find_all("#prompt-parts .bar span").is_empty());
    let legend = b.wait_text("#prompt-parts .legend", "tail");
    assert!(legend.contains("summary"), "{legend}");
    b.screenshot(&shots.join("prompt.png"));

    // Search: the expected hit and the parts of its score.
    b.goto(&format!("{base}/#/search"));
    b.type_into("#search-query", "Berlin");
    b.click("form[role=search] button");
    let hits = b.wait_text("#search-out", "memory/facts.md");
    assert!(
        hits.contains("keyword 1") && hits.contains("fused"),
        "{hits}"
    );
    b.screenshot(&shots.join("search.png"));
    b.click("#search-out .citation");
    b.wait_text("#search-out pre.cited", "Berlin");
    // A mode asked for, and what the search read in a dialogue: the date
    // and the focus.
    b.execute(
        "document.getElementById('search-query').value = arguments[0]; \
         document.getElementById('search-mode').value = 'keyword'",
        json!(["Ann: The weather was awful.\nBob: Sorry to hear that.\nAnn: Where did I live on 2026-11-01?"]),
    );
    b.click("form[role=search] button");
    let reading = b.wait_text("#search-reading", "2026-11-01");
    assert!(
        reading.contains("Where did I live on 2026-11-01?"),
        "{reading}"
    );
    let out = b.wait_text("#search-out", "keyword search");
    assert!(!out.contains("hybrid search"), "{out}");

    // Index.
    b.goto(&format!("{base}/#/index"));
    b.wait_text("#index-status", "sqlite");
    let evals = b.wait_text("#evals", "retrieval-");
    assert!(evals.contains("mrr") || evals.contains("recall"), "{evals}");
    assert!(!b.find_all("#evals svg.chart rect").is_empty());
    b.screenshot(&shots.join("index.png"));

    // On a phone-sized window: every view fits its width (what is wider,
    // a table, scrolls inside its box).
    b.execute("return 1", json!([]));
    drop(b);
    let phone = Browser::start(390, 844);
    phone.goto(&format!("{base}/#token={TOKEN}"));
    phone.wait_text("#facts", "Berlin");
    fits(&phone, "memory");
    phone.screenshot(&shots.join("memory-phone.png"));
    for (hash, ready, needle) in [
        ("#/changes", "#audit", "Audit log"),
        ("#/sessions", "#sessions", "chat:1"),
        ("#/sessions/chat%3A1?message=3", "#timeline", "RESULT-START"),
        ("#/prompt?session=chat%3A1", "#prompt-parts", "tokens of a"),
        ("#/index", "#evals", "retrieval-"),
    ] {
        // By the memory view: a view's elements are then its own.
        phone.goto(&format!("{base}/#/memory"));
        phone.wait_for("#facts tr[data-fact]");
        phone.goto(&format!("{base}/{hash}"));
        phone.wait_text(ready, needle);
        fits(&phone, hash);
    }
    phone.goto(&format!("{base}/#/search?q=Berlin"));
    phone.wait_text("#search-out", "memory/facts.md");
    fits(&phone, "search");
    phone.click("#search-out .citation");
    phone.wait_text("#search-out pre.cited", "Berlin");
    fits(&phone, "search, a citation opened");

    // Undo of the newest facts round (Berlin replacing Paris) from the
    // page: Berlin goes, Paris is current again.
    phone.goto(&format!("{base}/#/memory"));
    phone.wait_for("#facts tr[data-fact]");
    phone.goto(&format!("{base}/#/changes"));
    phone.wait_text("#history", "fact(s) proposed");
    phone.execute("window.confirm = () => true", json!([]));
    phone.click("#history details.kind-facts button.undo");
    let undid = phone.wait_text("#status", "undid the facts round of chat:1 messages");
    assert!(
        undid.contains("removed") && undid.contains("current again"),
        "{undid}"
    );
    let facts = std::fs::read_to_string(ws.join("memory/facts.md")).unwrap();
    assert!(!facts.contains("Berlin"), "{facts}");
    assert!(
        facts.contains("- The user's home city is Paris. (") && !facts.contains("~~"),
        "{facts}"
    );
    phone.wait_text(
        "#history details.kind-facts_undo",
        "undo of the facts round",
    );
    phone.wait_text("#audit", "the round added it; removed");
    fits(&phone, "changes, after an undo");

    // A form of another site posting to the API is refused, and nothing
    // is forgotten.
    let (evil, attacker) = attacker_page(&format!("{base}/v1/memory/forget"));
    phone.goto(&format!("http://127.0.0.1:{evil}/"));
    let refused = phone.wait_text("body", "\"error\"");
    assert!(!refused.contains("removed"), "{refused}");
    drop(phone);
    drop(attacker);
    assert!(ws.join("memory/drinks.md").exists());
}

const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";

/// The page by keyboard: Tab reaches the views' links and Enter opens
/// one; focus then moves to the view, and Enter opens a history.
fn keyboard(b: &Browser) {
    let active = "const a = document.activeElement; \
                  return a ? (a.id || a.dataset.view || a.tagName) : ''";
    // A page just opened: Tab starts at its top.
    b.execute("location.reload()", json!([]));
    b.wait_for("#memory-md-lines");
    let mut reached = false;
    for _ in 0..12 {
        b.press(TAB);
        if b.execute(active, json!([])) == json!("changes") {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reached the Changes link");
    b.press(ENTER);
    b.wait_text("#view h1", "Changes to review");
    b.wait_for("#audit");
    assert_eq!(
        b.execute(active, json!([])),
        json!("view"),
        "focus moves to the view opened"
    );
    // Back to Memory by keyboard: Shift+Tab is not needed, the links
    // come first; from the view, a history opens with Enter.
    b.execute(
        "document.querySelector('nav a[data-view=memory]').focus()",
        json!([]),
    );
    b.press(ENTER);
    b.wait_for("#memory-md-lines");
    assert_eq!(b.execute(active, json!([])), json!("view"));
    b.execute(
        "document.querySelector('#facts button.history').focus()",
        json!([]),
    );
    b.press(ENTER);
    b.wait_text("#facts .provenance:not([hidden])", "chat:1");
    assert_eq!(
        b.execute(
            "return document.querySelector('#facts button.history').getAttribute('aria-expanded')",
            json!([])
        ),
        json!("true")
    );
    // Tab from the view goes on inside it.
    b.execute("document.getElementById('view').focus()", json!([]));
    b.press(TAB);
    assert_eq!(
        b.execute(
            "return document.getElementById('view').contains(document.activeElement)",
            json!([])
        ),
        json!(true)
    );
}

/// The page is no wider than the window: nothing to scroll sideways.
fn fits(b: &Browser, what: &str) {
    let got = b.execute(
        "const w = document.documentElement.scrollWidth; \
         const screenW = Math.min(window.innerWidth, screen.width); \
         const wide = [...document.querySelectorAll('body *')] \
           .filter(e => e.getBoundingClientRect().right > screenW + 1 && !e.closest('.scroll')) \
           .slice(-6).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60)); \
         return [w, screenW, wide]",
        json!([]),
    );
    assert!(
        got[0].as_u64().unwrap() <= got[1].as_u64().unwrap(),
        "{what} is wider than a phone: {got}"
    );
}

/// `mnemo inspect` prints the address that opens the page, with a token
/// made for the run: the API answers with it and refuses without it.
#[test]
fn inspect_prints_an_address_with_a_token_of_its_own() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let bin = env!("CARGO_BIN_EXE_mnemo");
    stdout_of_success(&mnemo_command(bin, ws, &["init"]).output().unwrap());
    let mut child = mnemo_command(
        bin,
        ws,
        &[
            "--set",
            "embedder.kind=none",
            "inspect",
            "--http",
            "127.0.0.1:0",
        ],
    )
    .env_remove("MNEMO_TOKEN")
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "no address printed");
    }
    let server = Server { port: 0, child };
    let address = line
        .split("open ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let (origin, token) = address.split_once("/#token=").unwrap();
    assert!(token.starts_with("mnemo_") && token.len() > 40, "{line}");
    let port: u16 = origin.rsplit(':').next().unwrap().parse().unwrap();
    let auth = format!("Bearer {token}");
    let (status, body) = mnemo_test_support::cli::http_request(
        port,
        "GET",
        "/v1/inspect/memory",
        &[("Authorization", &auth)],
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (status, _) =
        mnemo_test_support::cli::http_request(port, "GET", "/v1/inspect/memory", &[], None);
    assert_eq!(status, 401);
    let (status, page) = mnemo_test_support::cli::http_request(port, "GET", "/", &[], None);
    assert_eq!(status, 200);
    assert!(page.contains("/inspector/app.js"), "{page}");
    drop(server);
}
