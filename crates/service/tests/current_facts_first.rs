//! Reading never serves a stale value as current: a workspace as the
//! newcomer's four write-path rounds leave it (the session log and the
//! HISTORY.md entries quote "I live in Lisbon", the facts file holds the
//! current "The user lives in Berlin." and the ended Lisbon fact), searched
//! through the service with the real index and the local embedding model.
//! The current fact is the first hit, no ended fact ranks above it, an
//! ended fact that is shown says so, and `as_of` still answers what was
//! true on a day.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_core::{Config, Message, Workspace};
use mnemo_service::args::{AppendArgs, GetArgs, SearchArgs};
use mnemo_service::output::{Hit, SearchOutput};
use mnemo_service::Service;

/// `memory/facts.md` after the four rounds, as the fact write path writes
/// it: third person, with what each fact is about.
const FACTS: &str = "# Facts\n\n\
What mnemo knows, one fact per line: `(id; since; until; recorded; by session messages)`. \
Edit or add lines freely; facts that stopped being true move under \"No longer true\".\n\n\
- The user's name is Rui. (f1; about user: name; since 2026-11-02; recorded 2026-11-02 09:10; by cli:direct 0..6)\n\
- The user works as a robotics engineer at Kestrel Robotics. (f4; about user: job; since 2026-11-02; recorded 2026-11-02 09:10; by cli:direct 0..6)\n\
- The user lives in Berlin. (f6; about user: home city; since 2026-11-25; recorded 2026-12-02 09:10; by cli:direct 6..12)\n\
- The user is vegetarian. (f7; about user: diet; since 2026-12-02; recorded 2026-12-02 09:10; by cli:direct 6..12)\n\
- The user drinks green tea every morning. (f8; about user: morning drink; since 2026-12-02; recorded 2026-12-02 09:10; by cli:direct 6..12)\n\
- The user's sister Ana lives in Madrid. (f9; about Ana: home city; since 2026-12-05; recorded 2026-12-05 09:10; by cli:direct 16..20)\n\
- The user's sister Ana is a doctor. (f10; about Ana: job; since 2026-12-05; recorded 2026-12-05 09:10; by cli:direct 16..20)\n\
\n\
## No longer true\n\
\n\
- ~~I live in Lisbon~~ (f2; since 2026-11-02; until 2026-11-25; superseded by f6; recorded 2026-11-02 09:10; by cli:direct 0..6)\n\
- ~~The user eats meat; steak is their favourite food.~~ (f3; about user: diet; since 2026-11-02; until 2026-12-02; superseded by f7; recorded 2026-11-02 09:10; by cli:direct 0..6)\n\
- ~~The user has a dog called Bolt.~~ (f5; about user: pet; since 2026-11-02; until 2026-12-03; retracted; recorded 2026-12-03 09:10; by cli:direct 12..16)\n";

/// The history as fact rounds wrote it before the entries stopped quoting
/// the round's first message.
const HISTORY: &str = "[2026-11-02 09:10] USER: Hi, my name is Rui. I live in Lisbon.\n\
USER: I eat meat; steak is my favourite food. I have a dog called Bolt.\n\
[memory/facts.md: added f1, f2, f3, f4, f5]\n\
[consolidated from cli:direct messages 0..6]\n\n\
[2026-12-02 09:10] USER: Big news: I moved from Lisbon to Berlin last week, I don't live in Lisbon anymore.\n\
[memory/facts.md: added f7, f8; updated f2 -> f6, f3 -> f7]\n\
[consolidated from cli:direct messages 6..12]\n\n\
[2026-12-03 09:10] USER: I work at Kestrel Robotics as a robotics engineer. Please forget that I have a dog.\n\
[memory/facts.md: ended f5; 1 unchanged]\n\
[consolidated from cli:direct messages 12..16]\n\n\
[2026-12-05 09:10] USER: My sister Ana lives in Madrid and she is a doctor.\n\
[memory/facts.md: added f9, f10; 1 unchanged]\n\
[consolidated from cli:direct messages 16..20]\n\n";

/// The conversation of the four rounds, `(day, user, assistant)`.
const ROUNDS: &[(&str, &str, &str)] = &[
    (
        "2026-11-02",
        "Hi, my name is Rui. I live in Lisbon.",
        "Nice to meet you, Rui from Lisbon.",
    ),
    (
        "2026-11-02",
        "I eat meat; steak is my favourite food. I have a dog called Bolt.",
        "Steak, and a dog called Bolt: noted.",
    ),
    (
        "2026-11-02",
        "I work as a robotics engineer at Kestrel Robotics.",
        "A robotics engineer at Kestrel Robotics, great.",
    ),
    (
        "2026-12-02",
        "Big news: I moved from Lisbon to Berlin last week, I don't live in Lisbon anymore.",
        "Congratulations on the move!",
    ),
    (
        "2026-12-02",
        "I no longer eat meat. I am vegetarian now.",
        "Noted: vegetarian from now on.",
    ),
    (
        "2026-12-02",
        "I drink green tea every morning.",
        "Green tea every morning, lovely.",
    ),
    (
        "2026-12-03",
        "I work at Kestrel Robotics as a robotics engineer.",
        "Still at Kestrel Robotics, got it.",
    ),
    (
        "2026-12-03",
        "Please forget that I have a dog.",
        "Done, I will forget the dog.",
    ),
    (
        "2026-12-05",
        "My sister Ana lives in Madrid and she is a doctor.",
        "A doctor in Madrid, nice.",
    ),
    (
        "2026-12-05",
        "I drink green tea every morning, still.",
        "Still green tea, good.",
    ),
];

fn service(root: &std::path::Path) -> Arc<Service> {
    let config = Config::parse(&format!(
        "[embedder]\nkind = \"local\"\nmodel = \"sentence-transformers/all-MiniLM-L6-v2\"\npath = {:?}\nengine = \"fast\"\n[memory]\ntimezone = \"UTC\"\n",
        mnemo_test_support::model_dir().display().to_string()
    ))
    .unwrap();
    Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ))
}

fn message(role: &str, text: &str, day: &str, n: usize) -> Message {
    serde_json::from_value(serde_json::json!({
        "role": role,
        "content": text,
        "timestamp": format!("{day}T09:{:02}:00Z", n),
    }))
    .unwrap()
}

/// The workspace after the four rounds.
async fn trial_workspace(root: &std::path::Path, facts: &str) -> Arc<Service> {
    std::fs::create_dir_all(root.join("memory")).unwrap();
    std::fs::write(root.join("memory/facts.md"), facts).unwrap();
    std::fs::write(root.join("memory/HISTORY.md"), HISTORY).unwrap();
    let svc = service(root);
    let mut messages = Vec::new();
    for (i, (day, user, assistant)) in ROUNDS.iter().enumerate() {
        messages.push(message("user", user, day, 2 * i));
        messages.push(message("assistant", assistant, day, 2 * i + 1));
    }
    svc.append(
        "cli:direct".into(),
        AppendArgs {
            messages: Some(messages),
            message: None,
        },
    )
    .await
    .unwrap();
    svc
}

async fn search(svc: &Arc<Service>, query: &str, as_of: Option<&str>) -> SearchOutput {
    svc.search(SearchArgs {
        query: query.into(),
        as_of: as_of.map(str::to_string),
        ..Default::default()
    })
    .await
    .unwrap()
}

fn listing(out: &SearchOutput) -> String {
    out.results
        .iter()
        .map(|h| format!("{} {:.4} {:?}", h.citation, h.score, h.snippet))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fact a facts-file hit holds, by its id in the snippet.
fn fact_id(h: &Hit) -> Option<&str> {
    if h.path != "memory/facts.md" {
        return None;
    }
    let meta = h.snippet.rsplit_once(" (")?.1;
    meta.split([';', ')']).next()
}

/// The first hit is the current fact `id`, and every fact that ended
/// comes after every current one.
fn assert_current_first(out: &SearchOutput, id: &str) {
    let all = listing(out);
    assert_eq!(
        out.results.first().and_then(fact_id),
        Some(id),
        "the current fact is the first hit:\n{all}"
    );
    let current = |h: &Hit| h.validity.as_ref().map(|v| v.current);
    let last_current = out.results.iter().rposition(|h| current(h) == Some(true));
    let first_ended = out.results.iter().position(|h| current(h) == Some(false));
    if let (Some(c), Some(e)) = (last_current, first_ended) {
        assert!(c < e, "an ended fact above a current one:\n{all}");
    }
}

#[tokio::test]
async fn the_current_fact_is_the_first_hit_after_the_four_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let svc = trial_workspace(dir.path(), FACTS).await;

    for query in [
        "where does the user live?",
        "which city does Rui live in now?",
    ] {
        let out = search(&svc, query, None).await;
        assert_current_first(&out, "f6");
        // An ended fact that is shown comes after every current one and
        // says it is no longer true.
        let all = listing(&out);
        for h in out.results.iter().filter(|h| fact_id(h) == Some("f2")) {
            let v = h.validity.as_ref().expect("an ended fact is marked");
            assert!(!v.current, "{all}");
            assert_eq!(v.until.as_deref(), Some("2026-11-25"));
            let by = v.replaced_by.as_ref().expect("replaced by f6");
            assert_eq!(by.id, "f6");
            assert_eq!(by.text, "The user lives in Berlin.");
        }
    }
}

#[tokio::test]
async fn an_ended_fact_read_with_memory_get_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let svc = trial_workspace(dir.path(), FACTS).await;
    let got = svc
        .get(GetArgs {
            path: "memory/facts.md".into(),
            from: None,
            lines: None,
        })
        .await
        .unwrap();
    let ended: Vec<(usize, Option<&str>)> = got
        .ended
        .iter()
        .map(|e| (e.line, e.validity.note.as_deref()))
        .collect();
    assert_eq!(
        ended,
        [
            (
                15,
                Some("no longer true since 2026-11-25, replaced by f6: The user lives in Berlin.")
            ),
            (
                16,
                Some("no longer true since 2026-12-02, replaced by f7: The user is vegetarian.")
            ),
            (17, Some("no longer true: retracted on 2026-12-03")),
        ]
    );
    // The agent's memory_get answers alike.
    let tools = svc.tools();
    let answer = mnemo_engine::ToolExecutor::execute(
        &tools,
        "memory_get",
        &serde_json::json!({"path": "memory/facts.md#L15-L15"}),
    )
    .await
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["ended"][0]["line"], 15);
    assert_eq!(v["ended"][0]["validity"]["replaced_by"]["id"], "f6");
    assert_eq!(v["ended"][0]["validity"]["current"], false);
}

#[tokio::test]
async fn a_current_fact_in_other_words_than_the_query_is_found_first() {
    // The wording a small model gave ("Berlin is my home") shares no word
    // with "where does the user live?"; what it is about does.
    let dir = tempfile::tempdir().unwrap();
    let facts = FACTS.replace(
        "The user lives in Berlin. (f6; about user: home city;",
        "Berlin is my home. (f6; about user: home city;",
    );
    let svc = trial_workspace(dir.path(), &facts).await;
    for query in [
        "where does the user live?",
        "which city does Rui live in now?",
        "where do I live?",
    ] {
        let out = search(&svc, query, None).await;
        assert_current_first(&out, "f6");
    }
    // The sister's home is hers: asked about, it comes first.
    let out = search(&svc, "where does my sister live?", None).await;
    assert_current_first(&out, "f9");
}

#[tokio::test]
async fn as_of_a_day_the_fact_true_then_answers() {
    let dir = tempfile::tempdir().unwrap();
    let svc = trial_workspace(dir.path(), FACTS).await;
    let out = search(&svc, "where does the user live?", Some("2026-11-10")).await;
    let all = listing(&out);
    let facts: Vec<&str> = out.results.iter().filter_map(fact_id).collect();
    assert!(facts.contains(&"f2"), "Lisbon was true then:\n{all}");
    assert!(!facts.contains(&"f6"), "Berlin was not yet:\n{all}");
    assert!(
        !out.results.iter().any(|h| h.snippet.contains("Berlin")),
        "nothing said after the day:\n{all}"
    );
}
