//! The recall side query (selection, surfaced files, the timeout path),
//! `/new` with its session note, and the context builder's accounting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use mnemo_core::Message;
use mnemo_engine::rebuild_history;
use mnemo_store::{FrontMatter, MemoryType};
use mnemo_test_support::Reply;
use serde_json::json;

fn typed(env: &Env, name: &str, description: &str, kind: MemoryType, body: &str) {
    let engine_store = mnemo_store::MemoryStore::new(&env.ws, Default::default());
    engine_store
        .save_typed(
            FrontMatter {
                name: name.into(),
                description: description.into(),
                kind,
            },
            body,
            mnemo_store::SaveMode::Create,
        )
        .unwrap();
}

#[tokio::test]
async fn side_query_selects_files_once_per_session() {
    let env = env().await;
    typed(
        &env,
        "Coffee",
        "how the user takes coffee",
        MemoryType::User,
        "Black, no sugar.",
    );
    typed(
        &env,
        "Deploy",
        "production deploy procedure",
        MemoryType::Project,
        "Run make deploy.",
    );
    typed(
        &env,
        "Cats",
        "names of the user's cats",
        MemoryType::User,
        "Tom and Mia.",
    );
    env.server.push(Reply::text(
        "Sure: {\"selected_memories\": [\"memory/coffee.md\", \"deploy.md\", \"memory/nope.md\"]}",
    ));
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let out = engine
        .select_memories(KEY, "make me a coffee then deploy")
        .await;
    assert_eq!(out.selected, ["memory/coffee.md", "memory/deploy.md"]);
    assert!(!out.timed_out && out.error.is_none());
    let req = &env.server.requests()[0];
    insta::assert_snapshot!("recall_request", shape(&req.body));
    assert_eq!(req.body["max_tokens"], json!(256));
    let manifest = req.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        manifest.contains("- [user] memory/coffee.md ("),
        "{manifest}"
    );
    assert!(manifest.contains("): how the user takes coffee"));

    // Files surfaced once are not offered again.
    env.server.push(Reply::text("{\"selected_memories\": []}"));
    engine.select_memories(KEY, "and the cats?").await;
    let manifest = env.server.requests()[1].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !manifest.contains("coffee.md") && manifest.contains("cats.md"),
        "{manifest}"
    );

    // The selected files join the context.
    let report = engine.build_context_with(KEY, "hi", &out.selected).unwrap();
    assert!(
        report.system.contains("Black, no sugar.") && report.system.contains("Run make deploy.")
    );
    let part = report
        .parts
        .iter()
        .find(|p| p.name == "selected_memories")
        .unwrap();
    assert!(part.tokens > 0);
}

#[tokio::test]
async fn a_selected_memory_shows_no_line_a_retraction_ended() {
    let env = env().await;
    typed(
        &env,
        "Hobby",
        "what the user does for fun",
        MemoryType::User,
        "- Hobby: go (since 2026-02-10; from memory/2026-02-10.md)\n\n## No longer true\n\n\
         - ~~Hobby: chess~~ (since 2026-02-01; until 2026-02-05; retracted by memory/2026-02-05.md; from memory/2026-02-01.md)\n",
    );
    write_session(&env.ws, &chat_turns(2, 10));
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let report = engine
        .build_context_with(KEY, "hi", &["memory/hobby.md".to_string()])
        .unwrap();
    assert!(
        report.system.contains("- Hobby: go (since 2026-02-10;"),
        "{}",
        report.system
    );
    assert!(
        !report.system.contains("chess") && !report.system.contains("No longer true"),
        "{}",
        report.system
    );
}

#[tokio::test]
async fn slow_side_query_times_out_and_the_turn_goes_on() {
    let env = env().await;
    typed(
        &env,
        "Coffee",
        "how the user takes coffee",
        MemoryType::User,
        "Black.",
    );
    write_session(&env.ws, &chat_turns(2, 10));
    env.server.push(Reply::delay(
        Duration::from_secs(5),
        Reply::text("{\"selected_memories\": [\"memory/coffee.md\"]}"),
    ));
    let engine = engine(&env, 100_000, 1_000, "recall_timeout_ms = 200", t0());
    let report = engine.build_context(KEY, "coffee?").await.unwrap();
    assert!(report.recall_timed_out);
    assert!(report.selected_memories.is_empty());
    assert_eq!(report.messages.last().unwrap().text(), "coffee?");
    assert_eq!(report.messages.len(), 5);
}

#[tokio::test]
async fn concurrent_side_query_and_turn_preparation() {
    let env = env().await;
    typed(
        &env,
        "Coffee",
        "how the user takes coffee",
        MemoryType::User,
        "Black.",
    );
    write_session(&env.ws, &chat_turns(2, 10));
    env.server.push(Reply::text(
        "{\"selected_memories\": [\"memory/coffee.md\"]}",
    ));
    // Not a test of the timeout: a loaded machine must not make it one.
    let engine = engine(&env, 100_000, 1_000, "recall_timeout_ms = 60000", t0());
    let (recall, prepared) = tokio::join!(
        engine.select_memories(KEY, "coffee?"),
        engine.prepare_turn(KEY, "coffee?")
    );
    assert!(prepared.unwrap().events.is_empty());
    let report = engine
        .build_context_with(KEY, "coffee?", &recall.selected)
        .unwrap();
    assert_eq!(report.selected_memories, ["memory/coffee.md"], "{recall:?}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["exact"], json!(true));
    let names: Vec<&str> = json["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "identity",
            "memory_md",
            "daily_logs",
            "selected_memories",
            "tools",
            "summary",
            "tail",
            "user_message"
        ]
    );
    let sum: u64 = json["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(json["total_tokens"].as_u64().unwrap(), sum);
}

/// The history is two parts: the last compaction's summary and the tail
/// it kept, which add up to what the request carries.
#[tokio::test]
async fn the_context_reports_the_summary_and_the_tail_apart() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(6, 10));
    let store = mnemo_store::SessionStore::new(&env.ws, Default::default());
    let mut log = store.open(KEY).unwrap();
    log.append_record(&mnemo_store::Record::Compaction(
        mnemo_store::CompactionRecord {
            kind: "autocompact".into(),
            tokens_before: 900,
            tokens_after: 200,
            summary: Some("## Goal\nPlan the trip to Kyoto in spring.".repeat(20)),
            first_kept: Some(8),
            timestamp: String::new(),
            extra: Default::default(),
        },
    ))
    .unwrap();
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let report = engine.build_context_with(KEY, "and then?", &[]).unwrap();
    let part = |n: &str| report.parts.iter().find(|p| p.name == n).unwrap().tokens;
    assert!(part("summary") > part("tail"), "{:?}", report.parts);
    assert!(part("tail") > 0, "{:?}", report.parts);
    assert_eq!(
        report.parts.iter().map(|p| p.tokens).sum::<usize>(),
        report.total_tokens
    );
    // The summary message leads the messages; the tail follows it.
    assert!(report.messages[0].text().contains("Kyoto"));
    assert_eq!(report.messages.len(), 1 + 4 + 1, "{:#?}", report.messages);
}

#[tokio::test]
async fn new_session_consolidates_and_writes_a_note() {
    let env = env().await;
    let mut msgs = chat_turns(10, 20);
    msgs.push(Message::user("/help").with_timestamp(ts(30)));
    msgs.push(Message::user("plan the trip to Kyoto").with_timestamp(ts(31)));
    write_session(&env.ws, &msgs);
    env.server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] trip planning", "memory_update": "- going to Kyoto\n"}),
    ));
    env.server.push(Reply::text("Trip Planning!\n"));
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let report = engine.new_session(KEY).await.unwrap();
    assert_eq!(report.slug.as_deref(), Some("trip-planning"));
    assert!(!report.slug_fallback);
    assert_eq!(
        report.note.as_deref(),
        Some("memory/2026-03-01-trip-planning.md")
    );
    assert_eq!(report.cursor, msgs.len());
    let note =
        std::fs::read_to_string(env.ws.root().join("memory/2026-03-01-trip-planning.md")).unwrap();
    assert!(
        note.starts_with("# Session: 2026-03-01 10:00:00 UTC\n"),
        "{note}"
    );
    assert!(note.contains("- **Session Key**: cli:test"));
    assert!(note.contains("## Conversation Summary"));
    assert!(note.contains("user: plan the trip to Kyoto"));
    assert!(!note.contains("/help"));
    // The last 15 user and assistant messages only.
    assert!(
        !note.contains("question 2:") && note.contains("question 3:"),
        "{note}"
    );
    let reqs = env.server.requests();
    assert_eq!(
        reqs[0].body["tool_choice"]["function"]["name"],
        "save_memory"
    );
    insta::assert_snapshot!("slug_request", shape(&reqs[1].body));
    assert_eq!(
        engine.memory().read_memory_md().unwrap(),
        "- going to Kyoto\n"
    );
    let loaded = load(&env.ws);
    assert_eq!(loaded.meta.last_consolidated, msgs.len());
    assert_eq!(loaded.messages.len(), msgs.len(), "nothing deleted");
    assert!(rebuild_history(&loaded).is_empty());
}

#[tokio::test]
async fn slug_falls_back_to_hhmm_on_timeout() {
    let env = env().await;
    write_session(&env.ws, &chat_turns(1, 10));
    env.server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-03-01 10:00] hi", "memory_update": ""}),
    ));
    env.server.push(Reply::delay(
        Duration::from_secs(5),
        Reply::text("late-slug"),
    ));
    let engine = engine(&env, 100_000, 1_000, "slug_timeout_ms = 200", t0());
    let report = engine.new_session(KEY).await.unwrap();
    assert!(report.slug_fallback);
    assert_eq!(report.note.as_deref(), Some("memory/2026-03-01-1000.md"));
}

#[tokio::test]
async fn rerank_asks_the_side_model_and_keeps_every_passage() {
    use mnemo_engine::Passage;
    let env = env().await;
    let passages: Vec<Passage> = [
        ("memory/2026-11-01.md#L3-L4", "- Ada likes green tea."),
        (
            "sessions/cli:direct.jsonl#L7-L9",
            "Ada: my cat Miso sleeps on the radiator.",
        ),
        (
            "memory/projects.md#L1-L5",
            "# Projects\n\n- Ada leads the billing migration.",
        ),
    ]
    .iter()
    .map(|(label, text)| Passage {
        label: label.to_string(),
        day: None,
        text: text.to_string(),
    })
    .collect();
    // The first request asks for the probabilities of the answer's first
    // token; a server that answers without them is asked for a written
    // ranking, now and from then on.
    env.server.push(Reply::text("Yes"));
    env.server.push(Reply::text("{\"ranking\": [2]}"));
    let engine = engine(&env, 100_000, 1_000, "rerank_timeout_ms = 300", t0());
    let out = engine.rerank("Does Ada have a pet?", &passages).await;
    assert_eq!(out.order, [1, 0, 2], "the pick first, the rest in order");
    assert_eq!(out.picked, 1);
    assert!(!out.timed_out && out.error.is_none());
    assert_eq!(env.server.requests()[0].body["logprobs"], json!(true));
    let req = &env.server.requests()[1];
    assert_eq!(req.body["max_tokens"], json!(200));
    let system = req.body["messages"][0]["content"].as_str().unwrap();
    let user = req.body["messages"][1]["content"].as_str().unwrap();
    insta::assert_snapshot!("rerank_prompt", format!("{system}\n---\n{user}"));

    // A slow model and a model error keep the index's order, with the reason.
    env.server.push(Reply::delay(
        Duration::from_secs(5),
        Reply::text("{\"ranking\": [3]}"),
    ));
    let out = engine.rerank("Does Ada have a pet?", &passages).await;
    assert!(out.timed_out);
    assert_eq!(out.order, [0, 1, 2]);
    assert_eq!(out.judged, 0);
    env.server.push(Reply::error(
        500,
        json!({"error": {"message": "overloaded"}}),
    ));
    let out = engine.rerank("Does Ada have a pet?", &passages).await;
    assert_eq!(out.order, [0, 1, 2]);
    assert!(out.error.unwrap_or_default().contains("overloaded"));
}

/// The workspace's real index (keyword-only: no model to load) as the
/// recall's memory search.
struct Index(mnemo_index::MemoryIndex);

impl mnemo_engine::MemorySearch for Index {
    fn memory_files(&self, query: &str, limit: usize) -> Result<Vec<String>, String> {
        self.0.sync(&|_| {}).map_err(|e| e.to_string())?;
        let req = mnemo_index::SearchRequest::new(query)
            .sources(&[mnemo_index::Source::Memory])
            .max_results(limit);
        Ok(self.0.search(&req).map_err(|e| e.to_string())?.files())
    }
}

#[tokio::test]
async fn recall_searches_memory_with_the_conversation() {
    let env = env().await;
    typed(
        &env,
        "Coffee",
        "how the user takes coffee",
        MemoryType::User,
        "Black, no sugar.",
    );
    typed(
        &env,
        "Parties",
        "parties the user threw",
        MemoryType::User,
        "Last June's lake party: it rained all afternoon.",
    );
    write_session(
        &env.ws,
        &[
            Message::user("We threw a lake party last June and it rained."),
            Message::assistant("Sounds like it was still fun!"),
        ],
    );
    let index = mnemo_index_sqlite::open(&env.ws, Default::default(), None).unwrap();
    let engine = engine(&env, 100_000, 1_000, "recall_timeout_ms = 300", t0())
        .with_memory_search(std::sync::Arc::new(Index(index)));

    // The new message alone names nothing; the conversation does.
    let message = "Planning another one this summer, any ideas?";
    let query = engine.recall_query(KEY, message).unwrap();
    assert_eq!(
        query,
        "User: We threw a lake party last June and it rained.\n\
         Assistant: Sounds like it was still fun!\n\
         User: Planning another one this summer, any ideas?"
    );

    // The model answers: the files search found lead its manifest.
    env.server.push(Reply::text(
        "{\"selected_memories\": [\"memory/parties.md\"]}",
    ));
    let out = engine.select_memories(KEY, message).await;
    assert_eq!(out.query.as_deref(), Some(query.as_str()));
    assert_eq!(
        out.found.first().map(String::as_str),
        Some("memory/parties.md"),
        "{out:?}"
    );
    assert_eq!(out.selected, ["memory/parties.md"]);
    assert!(!out.from_search);
    let manifest = env.server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let first_file = manifest.lines().find(|l| l.starts_with("- [")).unwrap();
    assert!(first_file.contains("memory/parties.md"), "{manifest}");

    // The model is late: what search found is the selection (the parties
    // file was surfaced already, so it is not offered twice).
    typed(
        &env,
        "Boathouse",
        "the lake's boathouse",
        MemoryType::Reference,
        "The boathouse at the lake holds forty people; book it in spring.",
    );
    env.server.push(Reply::delay(
        Duration::from_secs(5),
        Reply::text("{\"selected_memories\": []}"),
    ));
    let out = engine
        .select_memories(KEY, "Would the boathouse fit everyone if it rains again?")
        .await;
    assert!(out.timed_out);
    assert!(out.from_search, "{out:?}");
    assert_eq!(out.selected, ["memory/boathouse.md"], "{out:?}");
}
