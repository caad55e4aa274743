//! `mnemo dream` on the facts file: duplicates merged by supersession, old
//! daily logs folded in, the loss guard, and undo from the history.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use mnemo_store::memory::facts::FactsFile;

const BEFORE: &str = "# Facts\n\nKept as I wrote it.\n\n\
- Likes tea. (f1; since 2026-02-01)\n\
- likes tea (f2; since 2026-02-03)\n\
- Has a cat. (f3; since 2026-02-01)\n\
- Has a cat named Biscuit. (f4; since 2026-02-10)\n\
- Works at Acme. (f5; since 2026-01-01)\n";

#[tokio::test]
async fn dream_merges_duplicates_folds_old_logs_and_can_be_undone() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("facts.md"), BEFORE).unwrap();
    std::fs::write(
        mem.join("2026-02-01.md"),
        "# 2026-02-01\n\n- [09:00] Deploys on Fridays.\n- [09:05] Works at Acme.\n",
    )
    .unwrap();
    // Too recent to fold (t0 is 2026-03-01, the fold age 7 days).
    std::fs::write(
        mem.join("2026-02-28.md"),
        "# 2026-02-28\n\n- [09:00] Trying a new editor.\n",
    )
    .unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());

    let r = engine.dream().unwrap();
    assert!(r.changed);
    assert_eq!(
        r.merged,
        vec![
            ("f2".to_string(), "f1".to_string()),
            ("f3".to_string(), "f4".to_string())
        ]
    );
    assert_eq!(r.folded_logs, vec!["memory/2026-02-01.md".to_string()]);
    assert_eq!(r.added, vec!["f6".to_string()]);
    let text = std::fs::read_to_string(mem.join("facts.md")).unwrap();
    let file = FactsFile::parse(&text);
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(
        current,
        vec![
            "Likes tea.",
            "Has a cat named Biscuit.",
            "Works at Acme.",
            "Deploys on Fridays."
        ]
    );
    assert!(text.contains("Kept as I wrote it."), "{text}");
    // Nothing lost: the merged facts are kept as no longer true.
    assert_eq!(file.get("f3").unwrap().superseded_by.as_deref(), Some("f4"));
    assert_eq!(
        file.get("f6").unwrap().since,
        Some("2026-02-01".parse().unwrap())
    );
    assert!(!text.contains("new editor"), "{text}");
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("--- memory/facts.md\n+++ memory/facts.md"),
        "{history}"
    );
    assert_eq!(
        engine
            .memory()
            .memory_history("f3")
            .unwrap()
            .last()
            .map(|c| c.op.clone()),
        Some("merge".into())
    );

    // Again: nothing to do, nothing written.
    let again = engine.dream().unwrap();
    assert!(
        !again.changed && again.merged.is_empty() && again.added.is_empty(),
        "{again:#?}"
    );
    assert_eq!(std::fs::read_to_string(mem.join("facts.md")).unwrap(), text);

    // Undo gives the file back exactly as it was.
    let undone = mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(undone.id, r.id);
    assert_eq!(
        std::fs::read_to_string(mem.join("facts.md")).unwrap(),
        BEFORE
    );
    assert!(
        mnemo_engine::undo_dream(engine.memory(), t0()).is_err(),
        "only one dream to undo"
    );
}

#[test]
fn the_loss_guard_names_what_would_be_lost() {
    let before = FactsFile::parse(BEFORE);
    let mut after = before.clone();
    after.forget("f5").unwrap();
    let mut ended = before.clone();
    ended.end("f1", None, Some("f99")).unwrap();
    let (a, e) = (after.render(), ended.render());
    let lost = mnemo_engine::dream::unaccounted(&before, &FactsFile::parse(&a), BEFORE, &a);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(lost[0].contains("f5 (Works at Acme.) is gone"), "{lost:?}");
    let lost = mnemo_engine::dream::unaccounted(&before, &FactsFile::parse(&e), BEFORE, &e);
    assert!(
        lost[0].contains("f1 (Likes tea.) ends without a current replacement"),
        "{lost:?}"
    );
    let no_prose = a.replace("Kept as I wrote it.\n", "");
    let lost =
        mnemo_engine::dream::unaccounted(&before, &FactsFile::parse(&no_prose), BEFORE, &no_prose);
    assert!(
        lost.iter().any(|l| l.contains("Kept as I wrote it.")),
        "{lost:?}"
    );
    assert!(mnemo_engine::dream::near_duplicate(
        "Has a cat.",
        "Has a cat named Biscuit."
    ));
    assert!(!mnemo_engine::dream::near_duplicate(
        "Lives in Paris.",
        "Lives in Berlin."
    ));
}
