//! What recall puts in the prompt, within `[engine] recall_budget_tokens`:
//! the passages memory search found, best first, cut to their useful lines;
//! a selected file whole when it fits, else its lines nearest the user's
//! message with a pointer to the whole file; a call after tool results
//! shows the same as the turn's first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mnemo_core::Message;

const TEA: &str =
    "---\nname: Tea\ndescription: what the user drinks\ntype: user\n---\n\nOolong, no sugar.\n";

fn write_files(env: &Env) -> Vec<String> {
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("tea.md"), TEA).unwrap();
    let mut long = String::from("# Conversations of March\n\n");
    for i in 0..400 {
        long.push_str(&format!(
            "- Day {i}: we talked about the weather and the news.\n"
        ));
    }
    long.push_str("- Melanie signed up for a pottery class on Saturdays.\n");
    std::fs::write(mem.join("march.md"), long).unwrap();
    vec!["memory/march.md".to_string(), "memory/tea.md".to_string()]
}

fn selected_part(system: &str) -> &str {
    let start = system
        .find("# Relevant memory files")
        .expect("a recall part");
    &system[start..]
}

#[tokio::test]
async fn a_long_file_is_shown_as_its_lines_nearest_the_message() {
    let env = env().await;
    let selected = write_files(&env);
    let engine = engine(&env, 100_000, 1_000, "recall_budget_tokens = 300", t0());
    let message = "Which class did Melanie sign up for?";
    let ctx = engine.build_context_with(KEY, message, &selected).unwrap();
    let part = selected_part(&ctx.system);
    assert!(part.contains("pottery class on Saturdays"), "{part}");
    assert!(
        part.contains("memory_get memory/march.md reads the whole file"),
        "{part}"
    );
    assert!(
        part.contains("Oolong, no sugar."),
        "the small file is whole: {part}"
    );
    assert!(!part.contains("Day 200:"), "{part}");
    // About 300 tokens of files (4 characters each), headings aside.
    assert!(
        part.chars().count() < 300 * 4 + 600,
        "{}",
        part.chars().count()
    );

    // The next call of the turn, after a tool result, reads the same lines.
    let mut log = engine.sessions().open(KEY).unwrap();
    log.append(&[Message::user(message)]).unwrap();
    let again = engine.build_context_from_log(KEY, &selected).unwrap();
    assert_eq!(selected_part(&again.system), part);
}

#[tokio::test]
async fn no_budget_shows_every_file_whole_up_to_its_cap() {
    let env = env().await;
    let selected = write_files(&env);
    let engine = engine(
        &env,
        100_000,
        1_000,
        "recall_budget_tokens = 0\nrestore_file_tokens = 20000",
        t0(),
    );
    let ctx = engine
        .build_context_with(KEY, "Which class did Melanie sign up for?", &selected)
        .unwrap();
    let part = selected_part(&ctx.system);
    assert!(part.contains("Day 200:"), "{part}");
    assert!(!part.contains("an excerpt"), "{part}");
    // Past `restore_file_tokens`, a file is its excerpt, not its opening.
    let engine = engine_with(&env, "recall_budget_tokens = 0\nrestore_file_tokens = 1000");
    let ctx = engine
        .build_context_with(KEY, "Which class did Melanie sign up for?", &selected)
        .unwrap();
    let part = selected_part(&ctx.system);
    assert!(part.contains("pottery class"), "{part}");
    assert!(part.contains("an excerpt"), "{part}");
}

fn engine_with(env: &Env, toml: &str) -> mnemo_engine::Engine {
    engine(env, 100_000, 1_000, toml, t0())
}

/// The workspace's real index (keyword-only: no model to load) as recall's
/// memory search, passages and all.
struct Index(mnemo_index::MemoryIndex);

impl Index {
    fn search(&self, query: &str, limit: usize) -> Result<mnemo_index::SearchResponse, String> {
        self.0.sync(&|_| {}).map_err(|e| e.to_string())?;
        let req = mnemo_index::SearchRequest::new(query)
            .sources(&[mnemo_index::Source::Memory])
            .max_results(limit);
        self.0.search(&req).map_err(|e| e.to_string())
    }
}

impl mnemo_engine::MemorySearch for Index {
    fn memory_files(&self, query: &str, limit: usize) -> Result<Vec<String>, String> {
        Ok(self.search(query, limit)?.files())
    }

    fn memory_hits(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<mnemo_engine::MemoryHit>, String> {
        Ok(self
            .search(query, limit)?
            .results
            .into_iter()
            .map(|h| mnemo_engine::MemoryHit {
                path: h.path,
                start_line: h.start_line,
                end_line: h.end_line,
                score: h.score,
            })
            .collect())
    }
}

#[tokio::test]
async fn recall_from_search_shows_the_passages_it_found() {
    let env = env().await;
    write_files(&env);
    let index = mnemo_index_sqlite::open(&env.ws, Default::default(), None).unwrap();
    let engine = engine(&env, 100_000, 1_000, "recall_mode = \"search\"", t0())
        .with_memory_search(std::sync::Arc::new(Index(index)));
    let message = "Which class did Melanie sign up for? pottery";
    let out = engine.select_memories(KEY, message).await;
    assert!(out.from_search && !out.asked_model, "{out:?}");
    assert!(
        out.selected.iter().all(|s| s.contains("#L")),
        "passages, not files: {out:?}"
    );
    assert!(out.selected[0].starts_with("memory/march.md#L"), "{out:?}");
    let ctx = engine
        .build_context_with(KEY, message, &out.selected)
        .unwrap();
    let part = selected_part(&ctx.system);
    assert!(part.contains("pottery class on Saturdays"), "{part}");
    assert!(!part.contains("Day 200:"), "only the passage: {part}");
    assert!(
        part.contains(&format!("## Relevant memory: {}", out.selected[0])),
        "{part}"
    );
    // Each turn shows what its conversation finds: the same passage again,
    // and the session's state does not keep a list of passages.
    let again = engine.select_memories(KEY, message).await;
    assert_eq!(again.selected.first(), out.selected.first(), "{again:?}");
    let state = std::fs::read_to_string(env.ws.state_dir().join("engine").join(format!(
        "{}.json",
        mnemo_store::session::file_stem(KEY).unwrap()
    )))
    .unwrap_or_default();
    assert!(!state.contains("#L"), "{state}");
}
