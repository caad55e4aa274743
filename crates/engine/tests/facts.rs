//! Fact-level consolidation (`consolidation_mode = "facts"`) against the
//! loopback model server: facts extracted, compared with the similar ones,
//! added, updated (the old value kept as no longer true), ended, left; the
//! audit log; and models that answer badly, which lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mnemo_core::Message;
use mnemo_engine::EngineEvent;
use mnemo_test_support::Reply;
use serde_json::json;

const FACTS: &str = "consolidation_mode = \"facts\"";

/// A user message and an answer per line, then a user message that stays
/// past the boundary, at `day` (YYYY-MM-DD).
fn said(ws: &mnemo_core::Workspace, day: &str, lines: &[&str]) {
    let mut msgs = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let at = format!("{day}T10:{:02}:00Z", i * 2);
        msgs.push(Message::user(*l).with_timestamp(at.clone()));
        msgs.push(Message::assistant("Noted.").with_timestamp(at));
    }
    msgs.push(Message::user("anything else?").with_timestamp(format!("{day}T11:00:00Z")));
    write_session(ws, &msgs);
}

fn extract(facts: &[&str]) -> Reply {
    Reply::tool_call(
        "extract_facts",
        json!({"facts": facts, "history_entry": "[2026-03-01 10:00] the user talked about home"}),
    )
}

fn decide(ops: serde_json::Value) -> Reply {
    Reply::tool_call("update_memory", json!({ "operations": ops }))
}

fn facts_md(env: &Env) -> String {
    std::fs::read_to_string(env.ws.root().join("memory/facts.md")).unwrap_or_default()
}

fn round(events: &[EngineEvent]) -> mnemo_engine::FactRound {
    events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Consolidated(r) => r.facts.clone(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no fact round in {events:#?}"))
}

#[tokio::test]
async fn facts_are_added_updated_ended_and_the_old_value_stays() {
    let env = env().await;
    said(
        &env.ws,
        "2026-03-01",
        &["I live in Paris.", "I have a cat named Biscuit."],
    );
    env.server
        .push(extract(&["Lives in Paris.", "Has a cat named Biscuit."]));
    env.server.push(decide(json!([{"fact": 0, "event": "ADD", "text": "Lives in Paris."}, {"fact": 1, "event": "ADD", "text": "Has a cat named Biscuit."}])));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let events = engine.consolidate_now(KEY).await.unwrap();
    let r = round(&events);
    assert_eq!(
        (r.extracted, r.added.clone(), r.model_calls),
        (2, vec!["f1".to_string(), "f2".to_string()], 2)
    );
    let reqs = env.server.requests();
    assert_eq!(
        reqs[0].body["tool_choice"]["function"]["name"],
        "extract_facts"
    );
    assert_eq!(
        reqs[1].body["tool_choice"]["function"]["name"],
        "update_memory"
    );
    insta::assert_snapshot!("facts_extract_request", shape(&reqs[0].body));
    insta::assert_snapshot!("facts_update_request", shape(&reqs[1].body));
    assert!(reqs[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("(none)"));
    assert_eq!(load(&env.ws).meta.last_consolidated, 4);

    // Later: the user moved, and asks to forget the cat.
    let store = mnemo_store::SessionStore::new(&env.ws, Default::default());
    let mut log = store.open(KEY).unwrap();
    log.append(&[
        Message::assistant("Nothing else.").with_timestamp("2026-03-05T09:00:00Z".to_string()),
        Message::user("I moved to Berlin last week.")
            .with_timestamp("2026-03-05T09:01:00Z".to_string()),
        Message::assistant("Noted.").with_timestamp("2026-03-05T09:01:00Z".to_string()),
        Message::user("Forget about the cat.").with_timestamp("2026-03-05T09:02:00Z".to_string()),
        Message::assistant("Done.").with_timestamp("2026-03-05T09:02:00Z".to_string()),
        Message::user("thanks").with_timestamp("2026-03-05T09:03:00Z".to_string()),
    ])
    .unwrap();
    env.server.clear_requests();
    env.server
        .push(extract(&["Lives in Berlin.", "Asked to forget the cat."]));
    env.server.push(decide(json!([{"fact": 0, "event": "UPDATE", "id": "f1", "text": "Lives in Berlin."}, {"fact": 1, "event": "DELETE", "id": "f2"}])));
    let events = engine.consolidate_now(KEY).await.unwrap();
    let r = round(&events);
    assert_eq!(r.updated, vec![("f1".to_string(), "f3".to_string())]);
    assert_eq!(r.deleted, vec!["f2".to_string()]);
    assert!(r.refused.is_empty(), "{:?}", r.refused);
    // The similar memories were shown with their ids.
    let user = env.server.requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        user.contains("- [f1] Lives in Paris. (since 2026-03-01)"),
        "{user}"
    );
    assert!(user.contains("- [f2] Has a cat named Biscuit."), "{user}");

    let text = facts_md(&env);
    insta::assert_snapshot!("facts_md_after_update", text);
    let file = engine.memory().read_facts().unwrap();
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(current, vec!["Lives in Berlin."]);
    let paris = file.get("f1").unwrap();
    assert_eq!(paris.until, Some("2026-03-05".parse().unwrap()));
    assert!(paris.valid_on("2026-03-02".parse().unwrap()));
    assert_eq!(paris.superseded_by.as_deref(), Some("f3"));

    // The audit says what changed, when, and which messages caused it.
    let h = engine.memory().memory_history("f1").unwrap();
    assert_eq!(h.len(), 2, "{h:#?}");
    assert_eq!(
        (h[0].op.as_str(), h[0].new.as_deref()),
        ("add", Some("Lives in Paris."))
    );
    assert_eq!(h[1].op, "update");
    assert_eq!(h[1].memory, "f3");
    assert_eq!(h[1].old.as_deref(), Some("Lives in Paris."));
    assert_eq!(h[1].new.as_deref(), Some("Lives in Berlin."));
    assert_eq!(h[1].session.as_deref(), Some(KEY));
    assert_eq!(h[1].messages.as_deref(), Some("4..10"));
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("[memory/facts.md: updated f1 -> f3; ended f2]"),
        "{history}"
    );
    assert!(
        history.contains(&format!("[consolidated from {KEY} messages 4..10]")),
        "{history}"
    );
    // The prompt shows the current facts only.
    let block = engine.memory().render_prompt_block(t0()).unwrap();
    assert!(
        block.contains("## Facts (memory/facts.md)\n\n- Lives in Berlin. (f3)"),
        "{block}"
    );
    assert!(!block.contains("Paris"), "{block}");
    // And so does the request of the next turn.
    let ctx = engine
        .build_context_with(KEY, "where do I live?", &[])
        .unwrap();
    assert!(
        ctx.system
            .contains("## Facts (memory/facts.md)\n\n- Lives in Berlin. (f3)"),
        "{}",
        ctx.system
    );
    assert!(!ctx.system.contains("Paris"), "{}", ctx.system);
}

#[tokio::test]
async fn bad_operations_are_refused_and_lose_nothing() {
    let env = env().await;
    std::fs::create_dir_all(env.ws.root().join("memory")).unwrap();
    std::fs::write(
        env.ws.root().join("memory/facts.md"),
        "# Facts\n\nMy own notes, kept.\n\n- Likes green tea.\n- Works at Acme. (f1; since 2026-02-01)\n",
    )
    .unwrap();
    said(&env.ws, "2026-03-01", &["a", "b", "c", "d"]);
    env.server.push(extract(&[
        "Drinks oolong now.",
        "Works at Initech.",
        "Plays chess.",
        "Owns a bike.",
        "Runs marathons.",
    ]));
    env.server.push(decide(json!([
        {"fact": 0, "event": "UPDATE", "id": "f42", "text": "Drinks oolong now."},
        {"fact": 1, "event": "UPDATE", "id": "f1", "text": ""},
        {"fact": 2, "event": "MERGE", "id": "f1"},
        {"fact": 3, "event": "NOOP", "id": "nope"},
        {"fact": 9, "event": "DELETE", "id": "f1"},
        {"fact": 4, "event": "DELETE", "id": "f77"}
    ])));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.refused.len(), 6, "{:#?}", r.refused);
    assert!(
        r.refused[0].contains("UPDATE of \"f42\": no such current memory"),
        "{}",
        r.refused[0]
    );
    assert!(
        r.refused[1].contains("UPDATE of f1 with empty text"),
        "{}",
        r.refused[1]
    );
    assert!(
        r.refused[2].contains("unknown operation \"MERGE\""),
        "{}",
        r.refused[2]
    );
    assert!(
        r.refused[3].contains("NOOP on \"nope\""),
        "{}",
        r.refused[3]
    );
    assert!(r.refused[4].contains("no new fact 9"), "{}", r.refused[4]);
    let text = facts_md(&env);
    // What was there is there, and every extracted fact landed.
    assert!(text.starts_with("# Facts\n\nMy own notes, kept.\n\n- Likes green tea.\n- Works at Acme. (f1; since 2026-02-01)\n"), "{text}");
    for f in [
        "Drinks oolong now.",
        "Works at Initech.",
        "Plays chess.",
        "Owns a bike.",
        "Runs marathons.",
    ] {
        assert!(
            text.contains(&format!("- {f} (")),
            "{f} missing from {text}"
        );
    }
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("[refused: operation 1 (UPDATE): UPDATE of \"f42\""),
        "{history}"
    );
}

#[tokio::test]
async fn the_same_fact_again_is_one_memory() {
    let env = env().await;
    said(&env.ws, "2026-03-01", &["I like tea."]);
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    env.server.push(extract(&["Likes tea.", "likes tea"]));
    env.server.push(decide(json!([{"fact": 0, "event": "ADD", "text": "Likes tea."}, {"fact": 1, "event": "ADD", "text": "Likes tea."}])));
    engine.consolidate_now(KEY).await.unwrap();
    // A model that ignores the list and adds it again changes nothing.
    let store = mnemo_store::SessionStore::new(&env.ws, Default::default());
    store
        .open(KEY)
        .unwrap()
        .append(&[
            Message::assistant("ok"),
            Message::user("I really like tea."),
            Message::assistant("ok"),
            Message::user("bye"),
        ])
        .unwrap();
    env.server.push(extract(&["Likes tea."]));
    env.server.push(decide(
        json!([{"fact": 0, "event": "ADD", "text": "likes tea."}]),
    ));
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!((r.added.len(), r.duplicates), (0, 1));
    let file = engine.memory().read_facts().unwrap();
    assert_eq!(file.facts().len(), 1, "{}", facts_md(&env));
}

#[tokio::test]
async fn no_tool_call_or_malformed_operations_fail_and_keep_the_cursor() {
    let env = env().await;
    said(&env.ws, "2026-03-01", &["I live in Paris."]);
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    env.server.push(Reply::text("Sure, noted!"));
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(
        err.to_string().contains("did not call extract_facts"),
        "{err}"
    );
    assert!(err.to_string().contains("failed run 1 of 3"), "{err}");
    env.server.push(extract(&["Lives in Paris."]));
    env.server.push(decide(json!("ADD everything")));
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("`operations` is missing or not a list"),
        "{err}"
    );
    assert_eq!(load(&env.ws).meta.last_consolidated, 0);
    assert_eq!(facts_md(&env), "");
    // The third failed run archives the messages raw: nothing is lost.
    env.server.push(Reply::tool_call(
        "extract_facts",
        json!({"facts": "not", "history_entry": 3})
            .to_string()
            .into(),
    ));
    env.server.push(Reply::text("no"));
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(
        matches!(events.last(), Some(EngineEvent::Consolidated(r)) if r.raw),
        "{events:#?}"
    );
    assert!(engine
        .memory()
        .read_history()
        .unwrap()
        .contains("I live in Paris."));
    assert_eq!(load(&env.ws).meta.last_consolidated, 2);
}

#[tokio::test]
async fn similar_memories_come_from_the_search_seam() {
    struct Hits;
    impl mnemo_engine::MemorySearch for Hits {
        fn memory_files(&self, _: &str, _: usize) -> Result<Vec<String>, String> {
            Ok(vec![])
        }
        fn memory_hits(&self, _: &str, _: usize) -> Result<Vec<mnemo_engine::MemoryHit>, String> {
            // Line 4 of the file: the fact about the job, which shares no
            // word with the new fact.
            Ok(vec![mnemo_engine::MemoryHit {
                path: "memory/facts.md".into(),
                start_line: 4,
                end_line: 4,
                score: 0.9,
            }])
        }
    }
    let env = env().await;
    std::fs::create_dir_all(env.ws.root().join("memory")).unwrap();
    std::fs::write(
        env.ws.root().join("memory/facts.md"),
        "# Facts\n\n- Likes tea. (f1)\n- Employed by Acme. (f2)\n",
    )
    .unwrap();
    said(&env.ws, "2026-03-01", &["I quit and joined Initech."]);
    env.server.push(extract(&["Works at Initech."]));
    env.server.push(decide(
        json!([{"fact": 0, "event": "UPDATE", "id": "f2", "text": "Works at Initech."}]),
    ));
    let engine =
        engine(&env, 8_000, 1_000, FACTS, t0()).with_memory_search(std::sync::Arc::new(Hits));
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.updated, vec![("f2".to_string(), "f3".to_string())]);
    let user = env.server.requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(user.contains("- [f2] Employed by Acme."), "{user}");
    assert!(!user.contains("[f1]"), "{user}");
}

#[tokio::test]
async fn the_mem0_profile_consolidates_facts_and_engine_settings_win() {
    let env = env().await;
    let build = |toml: &str| {
        let config = mnemo_core::Config::parse(toml).unwrap();
        mnemo_engine::Engine::new(&env.ws, &config, model(&env.server, 8_000, 1_000))
    };
    let mem0 = build("[memory]\nprofile = \"mem0\"\ntimezone = \"UTC\"\n").unwrap();
    assert_eq!(mem0.settings().consolidation_mode, "facts");
    assert!(!mem0.settings().flush_enabled);
    let nanobot = build("[memory]\nprofile = \"nanobot\"\n").unwrap();
    assert_eq!(nanobot.settings().consolidation_mode, "memory_md");
    assert!(nanobot.settings().consolidation_enabled && !nanobot.settings().flush_enabled);
    let openclaw = build("[memory]\nprofile = \"openclaw\"\n").unwrap();
    assert!(!openclaw.settings().consolidation_enabled && openclaw.settings().flush_enabled);
    let given =
        build("[memory]\nprofile = \"mem0\"\n[engine]\nconsolidation_mode = \"memory_md\"\n")
            .unwrap();
    assert_eq!(given.settings().consolidation_mode, "memory_md");
    let default = build("").unwrap();
    assert_eq!(default.settings().consolidation_mode, "memory_md");
    assert!(default.settings().flush_enabled && default.settings().consolidation_enabled);
    let err = build("[memory]\nprofile = \"letta\"\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("unknown [memory] profile \"letta\""),
        "{err}"
    );

    // A mem0 workspace consolidates facts.
    said(&env.ws, "2026-03-01", &["I live in Paris."]);
    env.server.push(extract(&["Lives in Paris."]));
    env.server.push(decide(
        json!([{"fact": 0, "event": "ADD", "text": "Lives in Paris."}]),
    ));
    let r = round(&mem0.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.added, vec!["f1".to_string()]);
}

/// `lines` said by the user in session `key` on `day`, each acknowledged.
fn said_in(engine: &mnemo_engine::Engine, key: &str, day: &str, lines: &[&str]) {
    let mut msgs = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let at = format!("{day}T10:{:02}:00Z", i * 2);
        msgs.push(Message::user(*l).with_timestamp(at.clone()));
        msgs.push(Message::assistant("Noted.").with_timestamp(at));
    }
    let mut log = engine.sessions().open(key).unwrap();
    log.append(&msgs).unwrap();
}

fn flushed(events: &[EngineEvent]) -> mnemo_engine::FlushReport {
    events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Flushed(f) => Some(f.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no flush in {events:#?}"))
}

#[tokio::test]
async fn the_default_flush_supersedes_and_ends_facts_and_a_weak_model_loses_nothing() {
    let env = env().await;
    let engine = engine(&env, 8_000, 1_000, "", t0());
    // The default profile (mnemo) flushes through the fact decisions.
    assert_eq!(engine.settings().flush_mode, "facts");

    // Day 1: two facts, both new.
    said_in(
        &engine,
        "cli:one",
        "2026-02-10",
        &[
            "My parking spot is B4.",
            "The spare key is under the flowerpot.",
        ],
    );
    env.server.push(Reply::text(
        "- Parking spot is B4.\n- The spare key is under the flowerpot.",
    ));
    env.server.push(decide(json!([
        {"fact": 0, "event": "ADD", "text": "Parking spot is B4."},
        {"fact": 1, "event": "ADD", "text": "The spare key is under the flowerpot."}
    ])));
    let f = flushed(&engine.flush("cli:one").await.unwrap());
    assert_eq!(f.path.as_deref(), Some("memory/facts.md"));
    let r = f.facts.clone().unwrap();
    assert_eq!(r.added, vec!["f1".to_string(), "f2".to_string()]);
    assert_eq!((f.written, f.decision_error.clone()), (2, None));
    let reqs = env.server.requests();
    assert!(system_text(&reqs[0].body).contains("memory/facts.md"));
    assert!(!system_text(&reqs[0].body).contains("appended to today's daily log"));
    assert_eq!(
        reqs[1].body["tool_choice"]["function"]["name"],
        "update_memory"
    );
    // Nothing went to a daily log.
    assert!(engine
        .memory()
        .read_daily(engine.memory().today(t0()))
        .unwrap()
        .is_none());

    // Day 2: one value changes, the other is retracted; the decision call
    // is shown the facts they are about.
    said_in(
        &engine,
        "cli:two",
        "2026-02-20",
        &[
            "My parking spot is now C9.",
            "Please forget where the spare key is.",
        ],
    );
    env.server.push(Reply::text(
        "- Parking spot is C9.\n- The user asked to forget where the spare key is.",
    ));
    env.server.push(decide(json!([
        {"fact": 0, "event": "UPDATE", "id": "f1", "text": "Parking spot is C9."},
        {"fact": 1, "event": "DELETE", "id": "f2"}
    ])));
    let f = flushed(&engine.flush("cli:two").await.unwrap());
    let r = f.facts.clone().unwrap();
    assert_eq!(r.updated, vec![("f1".to_string(), "f3".to_string())]);
    assert_eq!(r.deleted, vec!["f2".to_string()]);
    let decision = env.server.requests()[3].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(decision.contains("[f1] Parking spot is B4."), "{decision}");
    assert!(
        decision.contains("[f2] The spare key is under the flowerpot."),
        "{decision}"
    );
    let file = mnemo_store::memory::facts::FactsFile::parse(&facts_md(&env));
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(current, vec!["Parking spot is C9."]);
    // Supersession, not deletion: the old value and the retracted fact
    // stay, ended on the day they stopped being true.
    let old = file.get("f1").unwrap();
    assert_eq!(
        old.until.map(|d| d.to_string()).as_deref(),
        Some("2026-02-20")
    );
    assert_eq!(old.superseded_by.as_deref(), Some("f3"));
    assert!(file.get("f2").unwrap().retracted);
    insta::assert_snapshot!("facts_md_after_flushes", facts_md(&env));
    // Every change is in the audit log, with the flush and its session.
    let audit = std::fs::read_to_string(env.ws.root().join("memory/audit.jsonl")).unwrap();
    let ops: Vec<serde_json::Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ops.len(), 4, "{audit}");
    assert!(ops.iter().all(|o| o["by"] == "flush"), "{audit}");
    assert_eq!(ops[2]["session"], "cli:two", "{audit}");
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("memory flush of cli:two: 2 fact(s)"),
        "{history}"
    );
    assert!(history.contains("updated f1 -> f3"), "{history}");

    // Day 3: an operation on a memory that does not exist is refused and
    // its fact added instead.
    said_in(&engine, "cli:three", "2026-02-25", &["I drink oolong."]);
    env.server.push(Reply::text("- Drinks oolong."));
    env.server.push(decide(json!([
        {"fact": 0, "event": "UPDATE", "id": "f99", "text": "Drinks oolong."}
    ])));
    let r = flushed(&engine.flush("cli:three").await.unwrap())
        .facts
        .unwrap();
    assert_eq!(r.added, vec!["f4".to_string()]);
    assert!(
        r.refused[0].contains("\"f99\": no such current memory"),
        "{:?}",
        r.refused
    );

    // Day 4: a model that never calls update_memory: the items go to the
    // daily log instead of being lost, and the report says why.
    said_in(
        &engine,
        "cli:four",
        "2026-03-01",
        &["I have a cat named Miso."],
    );
    env.server.push(Reply::text("- Has a cat named Miso."));
    env.server.push(Reply::text("ADD it, I suppose."));
    let before = facts_md(&env);
    let f = flushed(&engine.flush("cli:four").await.unwrap());
    assert!(f.facts.is_none());
    assert!(
        f.decision_error
            .as_deref()
            .unwrap()
            .contains("update_memory"),
        "{f:?}"
    );
    assert_eq!(f.path.as_deref(), Some("memory/2026-03-01.md"));
    let daily = engine
        .memory()
        .read_daily(engine.memory().today(t0()))
        .unwrap()
        .unwrap();
    assert!(
        daily.text.contains("Has a cat named Miso."),
        "{}",
        daily.text
    );
    assert_eq!(facts_md(&env), before);
}

#[tokio::test]
async fn the_openclaw_profile_flushes_to_the_append_only_daily_log() {
    let env = env().await;
    let config =
        mnemo_core::Config::parse("[memory]\nprofile = \"openclaw\"\ntimezone = \"UTC\"\n")
            .unwrap();
    let engine = mnemo_engine::Engine::new(&env.ws, &config, model(&env.server, 8_000, 1_000))
        .unwrap()
        .with_clock(std::sync::Arc::new(t0));
    assert_eq!(engine.settings().flush_mode, "daily_log");
    said_in(
        &engine,
        "cli:one",
        "2026-03-01",
        &["My parking spot is B4."],
    );
    env.server.push(Reply::text("- Parking spot is B4."));
    let f = flushed(&engine.flush("cli:one").await.unwrap());
    assert_eq!(
        (f.path.as_deref(), f.written),
        (Some("memory/2026-03-01.md"), 1)
    );
    // One model call: no decisions, no facts file.
    assert_eq!(env.server.request_count(), 1);
    assert!(facts_md(&env).is_empty());
    let bad = mnemo_core::Config::parse("[engine]\nflush_mode = \"journal\"\n").unwrap();
    let err = mnemo_engine::Engine::new(&env.ws, &bad, model(&env.server, 8_000, 1_000))
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("flush_mode = \"journal\" is unknown"),
        "{err}"
    );
}

#[tokio::test]
async fn two_consolidations_of_one_session_at_once_make_one_round() {
    let env = env().await;
    said(&env.ws, "2026-03-01", &["I live in Paris."]);
    // Every answer comes late, so the second run starts while the first
    // waits for the model.
    env.server.respond_with(|req| {
        let reply = if req.raw_body.contains("\"update_memory\"") {
            decide(json!([{"fact": 0, "event": "ADD", "text": "Lives in Paris."}]))
        } else {
            extract(&["Lives in Paris."])
        };
        Reply::delay(std::time::Duration::from_millis(600), reply)
    });
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let (a, b) = tokio::join!(engine.consolidate_now(KEY), engine.consolidate_now(KEY));
    let (a, b) = (a.unwrap(), b.unwrap());
    // One run did the round; the other waited for the session lock and
    // found nothing past the cursor: no model call, nothing written twice.
    let rounds = [&a, &b]
        .iter()
        .filter(|e| e.iter().any(|e| matches!(e, EngineEvent::Consolidated(_))))
        .count();
    assert_eq!(rounds, 1, "{a:#?} {b:#?}");
    assert_eq!(env.server.request_count(), 2);
    assert_eq!(facts_md(&env).matches("Lives in Paris.").count(), 1);
    let history = engine.memory().read_history().unwrap();
    assert_eq!(
        history
            .matches("[consolidated from cli:test messages 0..2]")
            .count(),
        1,
        "{history}"
    );
    assert_eq!(load(&env.ws).meta.last_consolidated, 2);

    // A second process that will not wait is told the session is busy,
    // and the round of the first is untouched.
    said(&env.ws, "2026-03-02", &["I moved to Lyon."]);
    let impatient = common::engine(
        &env,
        8_000,
        1_000,
        &format!("{FACTS}\nlock_wait_secs = 0"),
        t0(),
    );
    let (a, b) = tokio::join!(engine.consolidate_now(KEY), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        impatient.consolidate_now(KEY).await
    });
    a.unwrap();
    let err = b.unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::Busy, "{err}");
    assert!(err.to_string().contains("is busy"), "{err}");
    assert_eq!(env.server.request_count(), 4);
}
