//! `memory_search` within a token budget (issue 42, item 4): the hits,
//! best first, cut to the lines that share the query's words, a hit that
//! says what an earlier one said left out, nothing past the budget.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::sync::Arc;

use mnemo_core::{Config, Workspace};
use mnemo_service::args::SearchArgs;
use mnemo_service::Service;

fn filler(topic: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("- Line {i} about the {topic} project schedule and its budget review.\n"))
        .collect()
}

#[tokio::test]
async fn a_budget_keeps_the_useful_lines_of_the_best_hits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("memory")).unwrap();
    // The line that answers sits among lines that do not.
    let long = format!(
        "# Notes\n\n{}- Alice drinks espresso every morning, no sugar.\n{}",
        filler("harbour", 6),
        filler("harbour", 6)
    );
    std::fs::write(root.join("memory/notes.md"), &long).unwrap();
    // The same words again, in another file.
    std::fs::write(
        root.join("memory/copy.md"),
        "# Copy\n\n- Alice drinks espresso every morning, no sugar.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("memory/other.md"),
        format!("# Other\n\n{}", filler("garden", 4)),
    )
    .unwrap();
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let svc = Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ));
    let ask = |budget: Option<usize>| SearchArgs {
        query: "what does Alice drink every morning".into(),
        min_score: Some(0.0),
        budget_tokens: budget,
        ..Default::default()
    };

    let whole = svc.search(ask(None)).await.unwrap();
    assert_eq!(whole.tokens, None);
    let whole_chars: usize = whole
        .results
        .iter()
        .map(|h| h.snippet.chars().count())
        .sum();

    let fitted = svc.search(ask(Some(40))).await.unwrap();
    let tokens = fitted.tokens.expect("the tokens a budget spent");
    assert!(
        tokens <= 40 + fitted.results.len(),
        "{tokens} tokens: {fitted:?}"
    );
    let chars: usize = fitted
        .results
        .iter()
        .map(|h| h.snippet.chars().count())
        .sum();
    assert!(chars < whole_chars, "{chars} of {whole_chars} characters");
    let first = &fitted.results[0];
    assert!(first.snippet.contains("espresso"), "{first:?}");
    // The copy says nothing the first hit did not.
    let espresso = fitted
        .results
        .iter()
        .filter(|h| h.snippet.contains("espresso"))
        .count();
    assert_eq!(espresso, 1, "{:?}", fitted.results);

    let err = svc.search(ask(Some(5))).await.unwrap_err();
    assert_eq!(err.code().as_str(), "invalid_input", "{err}");
}

/// A tight budget goes to the curated memory before the transcripts: the
/// fact is kept and the conversation it came from, ranked above it, is
/// the hit left out; the hits kept stay in their ranked order.
#[tokio::test]
async fn a_budget_is_spent_on_memory_before_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("memory")).unwrap();
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    std::fs::write(
        root.join("memory/facts.md"),
        "# Facts\n\n- The espresso machine is a Gaggia. (f1)\n",
    )
    .unwrap();
    let mut log = String::new();
    for (role, text) in [
        (
            "user",
            "Alice here: every morning I use my espresso machine, a Gaggia, every single morning.",
        ),
        ("assistant", "Noted."),
    ] {
        log.push_str(&serde_json::json!({"role": role, "content": text, "timestamp": "2026-11-02T10:00:00Z"}).to_string());
        log.push('\n');
    }
    std::fs::write(root.join("sessions/chat.jsonl"), log).unwrap();
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let svc = Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ));
    let ask = |budget: Option<usize>| SearchArgs {
        query: "which espresso machine does Alice use every morning".into(),
        min_score: Some(0.0),
        budget_tokens: budget,
        ..Default::default()
    };
    let whole = svc.search(ask(None)).await.unwrap();
    let paths: Vec<&str> = whole.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(
        paths.first().copied(),
        Some("sessions/chat.jsonl"),
        "the transcript ranks first without a budget: {paths:?}"
    );
    assert!(paths.contains(&"memory/facts.md"), "{paths:?}");

    let fitted = svc.search(ask(Some(20))).await.unwrap();
    let paths: Vec<&str> = fitted.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(paths, ["memory/facts.md"], "{fitted:?}");

    let roomy = svc.search(ask(Some(2000))).await.unwrap();
    let paths: Vec<&str> = roomy.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(
        paths.first().copied(),
        Some("sessions/chat.jsonl"),
        "with room for both, the ranked order: {paths:?}"
    );
}
