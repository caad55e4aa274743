//! The fact-level write path (`consolidation_mode = "facts"`, and the
//! default profile's flush) against the loopback model server: the model
//! proposes facts with the words that say them, the code checks them,
//! resolves their dates, supersedes by subject and attribute, ends what a
//! retraction names, adds a source to a fact said again, asks a yes/no
//! question only where it cannot tell, and refuses (with why, in the audit
//! log) what no message supports; models that answer badly lose nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use common::*;
use mnemo_core::Message;
use mnemo_engine::EngineEvent;
use mnemo_store::memory::facts::FactsFile;
use mnemo_test_support::Reply;
use serde_json::{json, Value};

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

/// One proposed fact as the `extract_facts` schema has it.
fn p(quote: &str, subject: &str, attribute: &str, value: &str, kind: &str, fact: &str) -> Value {
    json!({"quote": quote, "subject": subject, "attribute": attribute, "value": value, "kind": kind, "fact": fact})
}

fn paris() -> Value {
    p(
        "I live in Paris",
        "user",
        "home city",
        "Paris",
        "states",
        "The user lives in Paris.",
    )
}

fn extract(facts: &[Value]) -> Reply {
    Reply::tool_call("extract_facts", json!({ "facts": facts }))
}

fn judge(yes: bool) -> Reply {
    Reply::tool_call("judge", json!({"answer": if yes { "yes" } else { "no" }}))
}

fn facts_md(env: &Env) -> String {
    std::fs::read_to_string(env.ws.root().join("memory/facts.md")).unwrap_or_default()
}

fn current(env: &Env) -> Vec<String> {
    FactsFile::parse(&facts_md(env))
        .current()
        .map(|f| f.text.clone())
        .collect()
}

fn audit(env: &Env) -> Vec<Value> {
    std::fs::read_to_string(env.ws.root().join("memory/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
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
async fn a_move_supersedes_the_old_home_and_leaves_the_job() {
    let env = env().await;
    said(
        &env.ws,
        "2026-12-01",
        &[
            "I live in Lisbon, near the river.",
            "I work as a nurse at the city hospital.",
        ],
    );
    env.server.push(extract(&[
        p(
            "I live in Lisbon, near the river",
            "user",
            "home city",
            "Lisbon",
            "states",
            "The user lives in Lisbon, near the river.",
        ),
        p(
            "I work as a nurse at the city hospital",
            "user",
            "job",
            "nurse at the city hospital",
            "states",
            "The user works as a nurse at the city hospital.",
        ),
    ]));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(
        (r.extracted, r.added.len(), r.model_calls),
        (2, 2, 1),
        "{r:#?}"
    );
    let body = &env.server.requests()[0].body;
    assert_eq!(body["tool_choice"]["function"]["name"], "extract_facts");
    // The model sees numbered messages, not the saved facts.
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("[1] USER: I live in Lisbon, near the river."),
        "{user}"
    );
    assert!(!user.contains("(f1"), "{user}");
    insta::assert_snapshot!("facts_extract_request", shape(body));
    insta::assert_snapshot!("facts_extract_user", user);

    // A week later: a move said as a copied first-person message with a
    // relative date, a job repeated in other words, and the model calling
    // the move a plain statement.
    said(
        &env.ws,
        "2026-12-08",
        &[
            "Big news: I moved to Berlin last week, I don't live in Lisbon anymore.",
            "Still a nurse at the hospital, though.",
        ],
    );
    env.server.push(extract(&[
        p(
            "I moved to Berlin last week",
            "user",
            "home city",
            "Berlin",
            "states",
            "Big news: I moved to Berlin last week, I don't live in Lisbon anymore",
        ),
        p(
            "Still a nurse at the hospital",
            "user",
            "occupation",
            "nurse",
            "states",
            "The user is a nurse.",
        ),
    ]));
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(
        r.updated,
        vec![("f1".to_string(), "f3".to_string())],
        "{r:#?}"
    );
    assert_eq!((r.duplicates, r.rewritten), (1, 1), "{r:#?}");
    let file = FactsFile::parse(&facts_md(&env));
    let berlin = file.get("f3").unwrap();
    // Third person, no relative date, dated to the week it names.
    assert_eq!(berlin.text, "The user's home city is Berlin.");
    assert_eq!(berlin.since.unwrap().to_string(), "2026-11-30");
    let lisbon = file.get("f1").unwrap();
    assert_eq!(lisbon.superseded_by.as_deref(), Some("f3"));
    assert_eq!(lisbon.until.unwrap().to_string(), "2026-12-01");
    // The job is untouched and has both sources.
    let job = file.get("f2").unwrap();
    assert!(job.is_current());
    assert_eq!(job.sources(), vec!["cli:test 2..3", "cli:test 7..8"]);
    insta::assert_snapshot!("facts_md_after_a_move", facts_md(&env));
    // The audit log says why, with the words that said it.
    let a = audit(&env);
    let update = a.iter().find(|r| r["op"] == "update").unwrap();
    assert_eq!(update["supersedes"], "f1");
    assert_eq!(update["evidence"], "I moved to Berlin last week");
    assert_eq!(update["messages"], "5..6");
    assert!(update["why"]
        .as_str()
        .unwrap()
        .contains("same subject and attribute"));
    assert!(a
        .iter()
        .any(|r| r["op"] == "confirm" && r["memory"] == "f2"));
    // The history names ids, never a copy of what was said.
    let history = engine.memory().read_history().unwrap();
    assert!(history.contains("replaced f1 by f3"), "{history}");
    assert!(!history.contains("Big news"), "{history}");
}

/// A call that lists as many facts as it may has not read the messages
/// after the last one its facts came from: they are asked about again.
#[tokio::test]
async fn the_messages_a_full_list_did_not_reach_are_read_again() {
    let env = env().await;
    let cousins: Vec<(String, String)> = (0..=mnemo_engine::extract::MAX_FACTS)
        .map(|i| (format!("Cousin{i}"), format!("Town{i}")))
        .collect();
    let lines: Vec<String> = cousins
        .iter()
        .map(|(who, town)| format!("My cousin {who} lives in {town}."))
        .collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    said(&env.ws, "2026-12-01", &refs);
    let fact = |(who, town): &(String, String)| {
        p(
            &format!("My cousin {who} lives in {town}"),
            &format!("{who} (the user's cousin)"),
            "home city",
            town,
            "states",
            &format!("The user's cousin {who} lives in {town}."),
        )
    };
    let (first, rest) = cousins.split_at(mnemo_engine::extract::MAX_FACTS);
    env.server
        .push(extract(&first.iter().map(fact).collect::<Vec<_>>()));
    env.server
        .push(extract(&rest.iter().map(fact).collect::<Vec<_>>()));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!((r.model_calls, r.added.len()), (2, cousins.len()), "{r:#?}");
    // The second call reads what the first did not reach, numbered anew.
    let again = env.server.requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let last = lines.last().unwrap();
    assert!(again.contains(&format!("USER: {last}")), "{again}");
    assert!(!again.contains(&lines[0]), "{again}");
    assert_eq!(current(&env).len(), cousins.len());
}

#[tokio::test]
async fn what_no_message_supports_is_refused_with_why_and_nothing_is_lost() {
    let env = env().await;
    said(
        &env.ws,
        "2026-03-01",
        &[
            "Hi there!",
            "My locker code is 4471.",
            "I'm typing on my phone.",
        ],
    );
    env.server.push(extract(&[
        p(
            "Hi there!",
            "user",
            "greeting",
            "hi",
            "states",
            "The user greeted the assistant.",
        ),
        p(
            "My locker code is 4471",
            "user",
            "locker code",
            "4417",
            "states",
            "The user's locker code is 4417.",
        ),
        p(
            "The conversation has been compacted",
            "user",
            "status",
            "compacted",
            "states",
            "The conversation has been compacted.",
        ),
        p(
            "Noted.",
            "assistant",
            "reply",
            "noted",
            "states",
            "The assistant noted it.",
        ),
        p(
            "I'm typing on my phone",
            "user",
            "activity",
            "typing",
            "states",
            "The user is typing on the phone.",
        ),
        p(
            "My locker code is 4471",
            "user",
            "locker code",
            "4471",
            "states",
            "My locker code is 4471 (f2; since 2026-03-01)",
        ),
    ]));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(
        current(&env),
        vec!["The user's locker code is 4471.".to_string()],
        "{r:#?}"
    );
    assert_eq!(r.refused.len(), 5, "{:#?}", r.refused);
    for (refusal, why) in r.refused.iter().zip([
        "small talk",
        "the value \"4417\" is not in the message",
        "are in no message",
        "small talk",
        "true only for the moment",
    ]) {
        assert!(refusal.contains(why), "{refusal} / {why}");
    }
    // Each refusal is in the audit log with why; the messages stay in the
    // session and the round is done.
    let refusals: Vec<&Value> = audit(&env)
        .into_iter()
        .filter(|r| r["op"] == "refuse")
        .collect::<Vec<_>>()
        .leak()
        .iter()
        .collect();
    assert_eq!(refusals.len(), 5);
    assert!(refusals
        .iter()
        .all(|r| r["why"].is_string() && r["session"] == KEY));
    assert_eq!(load(&env.ws).messages.len(), 7);
    assert_eq!(load(&env.ws).meta.last_consolidated, 6);
}

#[tokio::test]
async fn no_tool_call_or_a_malformed_answer_fails_and_keeps_the_cursor() {
    let env = env().await;
    said(&env.ws, "2026-03-01", &["I live in Paris."]);
    // Three failed runs in a row count three (no spacing between them).
    let settings = format!("{FACTS}\nconsolidation_failure_spacing_secs = 0");
    let engine = engine(&env, 8_000, 1_000, &settings, t0());
    env.server.push(Reply::text("Sure, noted!"));
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(
        err.to_string().contains("did not call extract_facts"),
        "{err}"
    );
    assert!(err.to_string().contains("failed run 1 of 3"), "{err}");
    env.server
        .push(Reply::tool_call("extract_facts", json!({"facts": 3})));
    let err = engine.consolidate_now(KEY).await.unwrap_err();
    assert!(err.to_string().contains("`facts` is not a list"), "{err}");
    assert_eq!(load(&env.ws).meta.last_consolidated, 0);
    assert_eq!(facts_md(&env), "");
    // The third failed run archives the messages raw: nothing is lost.
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
async fn a_pair_the_code_cannot_tell_apart_is_one_yes_or_no() {
    let env = env().await;
    std::fs::create_dir_all(env.ws.root().join("memory")).unwrap();
    std::fs::write(
        env.ws.root().join("memory/facts.md"),
        "# Facts\n\n- The user feels tired. (f1; about user: mood; since 2026-02-01)\n- Jon's favourite dance style is contemporary. (f2; about Jon: favourite dance style; since 2026-02-01)\n- The user's weekend plan is hiking. (f3; about user: weekend plan; since 2026-02-01)\n",
    )
    .unwrap();
    said(
        &env.ws,
        "2026-03-01",
        &[
            "I feel great today.",
            "Gina: thanks for supporting me, Jon.",
            "My weekend plan is also a concert.",
        ],
    );
    env.server.push(extract(&[
        p(
            "I feel great today",
            "user",
            "mood",
            "great",
            "states",
            "The user feels great.",
        ),
        p(
            "thanks for supporting me, Jon",
            "Gina",
            "feeling",
            "thankful for Jon's support",
            "changes",
            "Gina is thankful for Jon's support.",
        ),
        p(
            "My weekend plan is also a concert",
            "user",
            "weekend plan",
            "a concert",
            "states",
            "The user's weekend plan includes a concert.",
        ),
    ]));
    // Mood: an attribute the code does not know how many values it holds.
    env.server.push(judge(true));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.questions, 1, "{r:#?}");
    assert_eq!(r.updated, vec![("f1".to_string(), "f4".to_string())]);
    let reqs = env.server.requests();
    assert_eq!(reqs[1].body["tool_choice"]["function"]["name"], "judge");
    let q = reqs[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        q.contains("The user feels tired.") && q.contains("The user feels great."),
        "{q}"
    );
    insta::assert_snapshot!("facts_judge_request", shape(&reqs[1].body));
    // Jon's dance style shares only a name with Gina's thanks, and plans
    // hold many values: both stay current.
    let file = FactsFile::parse(&facts_md(&env));
    assert!(file.get("f2").unwrap().is_current());
    assert!(file.get("f3").unwrap().is_current());
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(current.len(), 5, "{current:#?}");
    assert!(
        current.contains(&"Gina is thankful for Jon's support."),
        "{current:#?}"
    );
}

#[tokio::test]
async fn a_retraction_ends_the_fact_in_the_same_round_and_chinese_works_alike() {
    let env = env().await;
    said(
        &env.ws,
        "2026-03-01",
        &["I have a dog called Bolt.", "我最喜欢的颜色是蓝色。"],
    );
    env.server.push(extract(&[
        p(
            "I have a dog called Bolt",
            "user",
            "pet",
            "dog called Bolt",
            "states",
            "The user has a dog called Bolt.",
        ),
        p(
            "我最喜欢的颜色是蓝色",
            "user",
            "最喜欢的颜色",
            "蓝色",
            "states",
            "用户最喜欢的颜色是蓝色。",
        ),
    ]));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    round(&engine.consolidate_now(KEY).await.unwrap());
    said(
        &env.ws,
        "2026-03-05",
        &[
            "Please forget what I said about my dog.",
            "其实我现在最喜欢绿色了。",
        ],
    );
    env.server.push(extract(&[
        // Labelled a plain statement: the words say it is a retraction.
        p(
            "Please forget what I said about my dog",
            "user",
            "pet",
            "dog",
            "states",
            "The user wants to forget their dog.",
        ),
        p(
            "其实我现在最喜欢绿色了",
            "user",
            "最喜欢的颜色",
            "绿色",
            "changes",
            "用户现在最喜欢绿色。",
        ),
    ]));
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.deleted, vec!["f1".to_string()], "{r:#?}");
    assert_eq!(
        r.updated,
        vec![("f2".to_string(), "f3".to_string())],
        "{r:#?}"
    );
    // Said without its noun, written with it: the colour is the
    // favourite the question asks for.
    assert_eq!(current(&env), vec!["用户最喜欢的颜色是绿色。".to_string()]);
    let file = FactsFile::parse(&facts_md(&env));
    let dog = file.get("f1").unwrap();
    assert!(
        dog.retracted && dog.until.unwrap().to_string() == "2026-03-05",
        "{dog:?}"
    );
    assert_eq!(dog.retracted_by.as_deref(), Some("cli:test 5..6"));
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
    env.server.push(extract(&[paris()]));
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
        let _ = req;
        Reply::delay(std::time::Duration::from_millis(600), extract(&[paris()]))
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
    assert_eq!(env.server.request_count(), 1);
    assert_eq!(
        facts_md(&env).matches("The user lives in Paris.").count(),
        1
    );
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
    assert_eq!(env.server.request_count(), 2);
}

#[tokio::test]
async fn where_consolidation_writes_facts_the_flush_is_a_consolidation_round() {
    let env = env().await;
    // The default profile with fact consolidation (as on the local model):
    // the flush and consolidation would read the same messages.
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    assert_eq!(engine.settings().flush_mode, "facts");
    said(&env.ws, "2026-03-01", &["I live in Paris."]);
    env.server.push(extract(&[paris()]));
    let events = engine.flush(KEY).await.unwrap();
    let report = events
        .iter()
        .find_map(|e| match e {
            EngineEvent::Flushed(f) => f.facts.clone(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(report.added, vec!["f1".to_string()]);
    // The cursor moved: consolidation has nothing left and asks nothing.
    assert_eq!(load(&env.ws).meta.last_consolidated, 2);
    let events = engine.consolidate_now(KEY).await.unwrap();
    assert!(events.is_empty(), "{events:#?}");
    assert_eq!(env.server.request_count(), 1);
}

/// A facts round undone: the facts it added go, the facts it ended are
/// current again (back among the current ones), a fact it said again
/// loses its messages as a source; the history and the audit log record
/// the undo, and undoing again goes one round further back.
#[tokio::test]
async fn a_facts_round_undone_takes_back_what_it_added_and_ended() {
    let env = env().await;
    said(
        &env.ws,
        "2026-12-01",
        &[
            "I live in Lisbon, near the river.",
            "I work as a nurse at the city hospital.",
        ],
    );
    let nurse = p(
        "I work as a nurse at the city hospital",
        "user",
        "job",
        "nurse at the city hospital",
        "states",
        "The user works as a nurse at the city hospital.",
    );
    env.server.push(extract(&[
        p(
            "I live in Lisbon, near the river",
            "user",
            "home city",
            "Lisbon",
            "states",
            "The user lives in Lisbon.",
        ),
        nurse.clone(),
    ]));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    round(&engine.consolidate_now(KEY).await.unwrap());
    let first = facts_md(&env);
    said(
        &env.ws,
        "2026-12-08",
        &[
            "I moved to Berlin, I don't live in Lisbon anymore.",
            "I work as a nurse at the city hospital.",
        ],
    );
    env.server.push(extract(&[
        p(
            "I moved to Berlin",
            "user",
            "home city",
            "Berlin",
            "states",
            "The user lives in Berlin.",
        ),
        nurse,
    ]));
    let r = round(&engine.consolidate_now(KEY).await.unwrap());
    assert_eq!(r.updated, vec![("f1".to_string(), "f3".to_string())]);
    assert_eq!(r.duplicates, 1, "{r:#?}");
    let second = facts_md(&env);
    assert!(second.contains("~~The user lives in Lisbon.~~"), "{second}");

    let u = mnemo_engine::undo_facts_round(engine.memory(), t0()).unwrap();
    assert_eq!(u.removed, vec!["f3"]);
    assert_eq!(u.restored, vec!["f1"]);
    assert!(u.round.starts_with("cli:test messages "), "{u:?}");
    // As it was after the first round, line for line (Lisbon back among
    // the current facts, after the last of them).
    let lines = |t: &str| {
        let mut l: Vec<String> = t.lines().map(str::to_string).collect();
        l.sort();
        l
    };
    assert_eq!(lines(&facts_md(&env)), lines(&first), "{}", facts_md(&env));
    assert!(!facts_md(&env).contains("## No longer true"));
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains(&format!(
            "[memory/facts.md] undo of the facts round of {}\n[memory/facts.md: removed f3; current again f1; its sources taken from f2]",
            u.round
        )),
        "{history}"
    );
    let a = audit(&env);
    let undos: Vec<(&str, &str)> = a
        .iter()
        .filter(|r| r["op"] == "undo")
        .map(|r| (r["memory"].as_str().unwrap(), r["why"].as_str().unwrap()))
        .collect();
    assert_eq!(undos.len(), 3, "{undos:?}");
    assert_eq!(undos[0].0, "f3");
    assert!(undos[0].1.ends_with("the round added it; removed"));
    assert_eq!(undos[1].0, "f1");
    assert!(undos[1].1.ends_with("current again"));
    assert_eq!(undos[2].0, "f2");
    let removed = a.iter().find(|r| r["op"] == "undo").unwrap();
    assert_eq!(removed["old"], "The user lives in Berlin.");
    assert_eq!(removed["session"], KEY);

    // Again: the first round, whose facts all go.
    let u = mnemo_engine::undo_facts_round(engine.memory(), t0()).unwrap();
    assert_eq!(u.removed, vec!["f1", "f2"]);
    assert!(current(&env).is_empty(), "{}", facts_md(&env));
    let none = mnemo_engine::undo_facts_round(engine.memory(), t0()).unwrap_err();
    assert!(
        none.to_string().contains("no facts round to undo"),
        "{none}"
    );
}

/// A round whose fact was ended since by something else is not undone,
/// and nothing changes.
#[tokio::test]
async fn a_facts_round_whose_fact_changed_since_is_not_undone() {
    let env = env().await;
    said(&env.ws, "2026-12-01", &["I live in Paris."]);
    env.server.push(extract(&[paris()]));
    let engine = engine(&env, 8_000, 1_000, FACTS, t0());
    round(&engine.consolidate_now(KEY).await.unwrap());
    // A person ends it by hand.
    let mut file = FactsFile::parse(&facts_md(&env));
    file.end("f1", None, None).unwrap();
    std::fs::write(env.ws.root().join("memory/facts.md"), file.render()).unwrap();
    let before = facts_md(&env);
    let history = engine.memory().read_history().unwrap();
    let e = mnemo_engine::undo_facts_round(engine.memory(), t0()).unwrap_err();
    assert!(
        e.to_string().contains("f1 was ended since (retracted)"),
        "{e}"
    );
    assert_eq!(facts_md(&env), before);
    assert_eq!(engine.memory().read_history().unwrap(), history);
}
