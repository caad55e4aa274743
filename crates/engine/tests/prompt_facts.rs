//! The facts in the prompt: `## Facts` lists the current facts only,
//! newest first and within its caps, and a fact that ended reaches the
//! prompt by no other way (the recall side query does not offer the facts
//! file; a caller that selects it gets its current facts only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mnemo_test_support::Reply;

const FACTS: &str = "# Facts\n\n\
What mnemo knows, one fact per line.\n\n\
- The user's name is Rui. (f1; about user: name; since 2026-02-01; recorded 2026-02-01 09:00; by cli:test 0..2)\n\
- Keeps the spare key under the mat\n\
- The user lives in Berlin. (f6; about user: home city; since 2026-02-20; recorded 2026-02-22 09:00; by cli:test 6..8)\n\
- The user works at Kestrel Robotics. (f4; about user: job; since 2026-02-01; recorded 2026-02-01 09:00; by cli:test 2..4)\n\
- The user's sister Ana lives in Madrid. (f9; about Ana: home city; since 2026-02-25; recorded 2026-02-25 09:00; by cli:test 10..12)\n\
\n\
## No longer true\n\
\n\
- ~~I live in Lisbon~~ (f2; since 2026-02-01; until 2026-02-20; superseded by f6; recorded 2026-02-01 09:00; by cli:test 0..2)\n\
- ~~The user has a dog called Bolt.~~ (f5; about user: pet; since 2026-02-01; until 2026-02-23; retracted; recorded 2026-02-23 09:00; by cli:test 8..10)\n";

/// The `## Facts` part of a system prompt.
fn facts_part(system: &str) -> &str {
    let start = system.find("## Facts").expect("a facts part");
    let rest = &system[start..];
    let end = rest.find("\n\n---\n\n").unwrap_or(rest.len());
    &rest[..end]
}

fn write_facts(env: &Env) {
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("facts.md"), FACTS).unwrap();
}

#[tokio::test]
async fn the_prompt_lists_current_facts_newest_first() {
    let env = env().await;
    write_facts(&env);
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let ctx = engine
        .build_context_with(KEY, "where do I live?", &[])
        .unwrap();
    // A person's own line first, then the newest recorded; nothing that
    // ended.
    insta::assert_snapshot!("prompt_facts", facts_part(&ctx.system));
    assert!(!ctx.system.contains("Lisbon"), "{}", ctx.system);
    assert!(!ctx.system.contains("Bolt"), "{}", ctx.system);
}

#[tokio::test]
async fn facts_over_the_cap_leave_out_the_oldest_and_say_so() {
    let env = env().await;
    write_facts(&env);
    let config = mnemo_core::Config::parse(
        "[engine]\n[memory]\ntimezone = \"UTC\"\nmemory_md_max_lines = 3\n",
    )
    .unwrap();
    let engine = mnemo_engine::Engine::new(&env.ws, &config, model(&env.server, 100_000, 1_000))
        .unwrap()
        .with_clock(std::sync::Arc::new(t0));
    let ctx = engine.build_context_with(KEY, "hi", &[]).unwrap();
    let part = facts_part(&ctx.system);
    assert!(part.contains("Ana lives in Madrid"), "{part}");
    assert!(part.contains("lives in Berlin"), "{part}");
    assert!(!part.contains("Kestrel"), "the oldest goes first: {part}");
    assert!(
        part.contains("> 2 older lines of memory/facts.md are not shown"),
        "{part}"
    );
}

#[tokio::test]
async fn ended_facts_do_not_reach_the_prompt_through_recall() {
    let env = env().await;
    write_facts(&env);
    let mem = env.ws.root().join("memory");
    std::fs::write(
        mem.join("coffee.md"),
        "---\nname: Coffee\ndescription: how the user takes coffee\ntype: user\n---\n\nBlack, no sugar.\n",
    )
    .unwrap();
    env.server.push(Reply::text(
        "{\"selected_memories\": [\"memory/facts.md\", \"memory/coffee.md\"]}",
    ));
    let engine = engine(&env, 100_000, 1_000, "", t0());
    let out = engine
        .select_memories(KEY, "where did I live before?")
        .await;
    let manifest = env.server.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!manifest.contains("memory/facts.md"), "{manifest}");
    assert_eq!(out.selected, ["memory/coffee.md"]);

    // A caller that selects the facts file gets what holds now.
    let ctx = engine
        .build_context_with(
            KEY,
            "where did I live before?",
            &["memory/facts.md".to_string()],
        )
        .unwrap();
    assert!(
        ctx.system.contains("## Relevant memory: memory/facts.md"),
        "{}",
        ctx.system
    );
    assert!(!ctx.system.contains("Lisbon"), "{}", ctx.system);
    assert!(!ctx.system.contains("No longer true"), "{}", ctx.system);
}
