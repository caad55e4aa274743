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
    // The audit log says so for each fact: the added one is gone, the
    // merged one is current again.
    let last = |id: &str| engine.memory().memory_history(id).unwrap().pop().unwrap();
    let f6 = last("f6");
    assert_eq!(
        (f6.op.as_str(), f6.old.as_deref()),
        ("undo", Some("Deploys on Fridays."))
    );
    assert!(f6.why.unwrap().ends_with("removed"));
    let f3 = last("f3");
    assert_eq!(f3.op, "undo");
    assert!(f3.why.unwrap().contains("current again"));
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

const CONTRADICTIONS: &str = "# Facts\n\n\
- The user's city is Paris. (f1; since 2026-01-05)\n\
- Employer: Initech (f2; since 2026-02-01)\n\
- The user's city is Berlin. (f3; since 2026-02-10)\n\
- Employer: Acme (f4; since 2026-01-01)\n\
- Caroline is a counselor. (f5; since 2026-01-01)\n\
- Caroline is happy. (f6; since 2026-02-01)\n\
- The user's dog is Rex, a beagle who loves long walks on the beach every morning. (f7; since 2026-01-01)\n\
- The user's dog is Max. (f8; since 2026-02-01)\n";

#[tokio::test]
async fn dream_resolves_contradictions_by_supersession_and_undoes_them() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("facts.md"), CONTRADICTIONS).unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());

    let r = engine.dream().unwrap();
    assert!(r.changed, "{r:#?}");
    assert!(r.merged.is_empty(), "{r:#?}");
    // The newer fact about each subject stays, whatever the order of the
    // file; a one-word key (Caroline) and a long value (the beagle) are
    // not clear enough to call a contradiction.
    assert_eq!(
        r.superseded,
        vec![
            ("f4".to_string(), "f2".to_string()),
            ("f1".to_string(), "f3".to_string())
        ]
    );
    let text = std::fs::read_to_string(mem.join("facts.md")).unwrap();
    let file = FactsFile::parse(&text);
    let current: Vec<&str> = file.current().map(|f| f.id.as_str()).collect();
    assert_eq!(current, vec!["f2", "f3", "f5", "f6", "f7", "f8"], "{text}");
    // The older value ends on the day the newer one began, kept as history.
    let paris = file.get("f1").unwrap();
    assert_eq!(paris.until, Some("2026-02-10".parse().unwrap()));
    assert_eq!(paris.superseded_by.as_deref(), Some("f3"));
    assert!(paris.valid_on("2026-01-20".parse().unwrap()));
    assert_eq!(
        file.get("f4").unwrap().until,
        Some("2026-02-01".parse().unwrap())
    );
    let h = engine.memory().memory_history("f1").unwrap();
    assert_eq!(h.last().map(|c| c.op.as_str()), Some("supersede"), "{h:#?}");
    assert_eq!(
        h.last().unwrap().new.as_deref(),
        Some("The user's city is Berlin.")
    );

    // Nothing left to resolve.
    assert!(!engine.dream().unwrap().changed);
    mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(
        std::fs::read_to_string(mem.join("facts.md")).unwrap(),
        CONTRADICTIONS
    );
    // The fact's history ends with the undo that made it current again.
    let h = engine.memory().memory_history("f1").unwrap();
    let last = h.last().unwrap();
    assert_eq!(
        (last.op.as_str(), last.by.as_str()),
        ("undo", "undo"),
        "{h:#?}"
    );
    let why = last.why.as_deref().unwrap_or_default();
    assert!(
        why.contains(&r.id) && why.contains("current again"),
        "{why}"
    );
    // Facts the dream did not touch get no record.
    assert!(engine.memory().memory_history("f5").unwrap().is_empty());
}

#[test]
fn subjects_are_decided_conservatively() {
    use mnemo_engine::dream::subject;
    assert_eq!(
        subject("The user's city is Paris."),
        Some("the user s city".into())
    );
    assert_eq!(subject("Employer: Acme"), Some("employer".into()));
    assert_eq!(subject("生日：五月三日"), Some("生 日".into()));
    assert_eq!(subject("Caroline is a counselor."), None);
    assert_eq!(subject("Likes tea."), None);
    assert_eq!(subject("Employer:"), None);
    assert_eq!(
        subject("The user's dog is Rex, a beagle who loves long walks on the beach."),
        None
    );
}

const MEMORY_MD: &str = "# Memory\n\n\
## Memory files\n\
- [Deploy notes](memory/deploy.md): how we ship\n\n\
## About the user\n\
- Prefers tabs over spaces.\n\
- Has two kids.\n\
- Likes tea.\n\
- Runs on Sundays.\n\
Some prose a person typed.\n";

#[tokio::test]
async fn dream_moves_memory_md_over_its_caps_into_facts() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(env.ws.root().join("MEMORY.md"), MEMORY_MD).unwrap();
    std::fs::write(mem.join("facts.md"), "# Facts\n\n- Likes tea. (f1)\n").unwrap();
    // 11 lines; the cap is 8: three bullets move, the oldest first.
    let engine = engine(&env, 8_000, 1_000, "memory_max_lines = 8", t0());
    let r = engine.dream().unwrap();
    assert!(r.changed, "{r:#?}");
    assert_eq!(
        r.moved,
        vec![
            ("- Prefers tabs over spaces.".to_string(), "f2".to_string()),
            ("- Has two kids.".to_string(), "f3".to_string()),
            // Already a current fact: accounted for, not added again.
            ("- Likes tea.".to_string(), "f1".to_string()),
        ]
    );
    let md = std::fs::read_to_string(env.ws.root().join("MEMORY.md")).unwrap();
    assert_eq!(md.lines().count(), 8, "{md}");
    assert!(md.contains("- [Deploy notes](memory/deploy.md)"), "{md}");
    assert!(
        md.contains("- Runs on Sundays.\nSome prose a person typed.\n"),
        "{md}"
    );
    let file = engine.memory().read_facts().unwrap();
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(
        current,
        vec!["Likes tea.", "Prefers tabs over spaces.", "Has two kids."]
    );
    // Under its caps now: a second dream changes nothing.
    assert!(!engine.dream().unwrap().changed);
    // Undo puts both files back.
    let undone = mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(undone.id, r.id);
    assert_eq!(
        std::fs::read_to_string(env.ws.root().join("MEMORY.md")).unwrap(),
        MEMORY_MD
    );
    assert_eq!(
        std::fs::read_to_string(mem.join("facts.md")).unwrap(),
        "# Facts\n\n- Likes tea. (f1)\n"
    );
}

#[test]
fn the_loss_guard_accounts_for_every_memory_md_line() {
    let facts = FactsFile::parse(
        "# Facts\n\n- Has two kids. (f1)\n- ~~Likes tea.~~ (f2; until 2026-02-01)\n",
    );
    let after = MEMORY_MD
        .replace("- Has two kids.\n", "")
        .replace("- Likes tea.\n", "")
        .replace("Some prose a person typed.\n", "");
    let lost = mnemo_engine::dream::unaccounted_memory_md(MEMORY_MD, &after, &facts);
    // The kids moved (a current fact); tea is a fact no longer true, so
    // it would be lost; the prose is not a bullet and cannot move.
    assert_eq!(lost.len(), 2, "{lost:?}");
    assert!(lost[0].contains("\"- Likes tea.\" is gone"), "{lost:?}");
    assert!(lost[1].contains("Some prose a person typed."), "{lost:?}");
    assert!(mnemo_engine::dream::unaccounted_memory_md(MEMORY_MD, MEMORY_MD, &facts).is_empty());
}

const RETRACTIONS: &str = "# Facts\n\n\
- The user's city is Paris. (f1; since 2026-01-05)\n\
- The user asked to forget their spare key spot. (f2; since 2026-02-03)\n\
- The user's spare key spot is flowerpot. (f3; since 2026-01-10)\n\
- Works at Acme. (f4; since 2026-01-01)\n\
- The user's dog's name is Rex. (f5; since 2026-02-20)\n";

#[tokio::test]
async fn dream_retractions_end_the_facts_they_name_and_undo_gives_them_back() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("facts.md"), RETRACTIONS).unwrap();
    let logs = [
        (
            "2026-02-01.md",
            "# 2026-02-01\n\n- [09:00] The user's bike lock code is 4417.\n",
        ),
        (
            "2026-02-05.md",
            "# 2026-02-05\n\n- [09:00] The user asked to forget their bike lock code.\n\
             - [09:01] The user no longer works at Acme.\n\
             - [09:02] Please forget that my city is Lyon.\n\
             - [09:03] Forget their dog's name.\n",
        ),
    ];
    for (name, text) in logs {
        std::fs::write(mem.join(name), text).unwrap();
    }
    let engine = engine(&env, 8_000, 1_000, "", t0());

    let r = engine.dream().unwrap();
    assert!(r.changed, "{r:#?}");
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        r.retracted,
        vec![
            pair("f6", "memory/2026-02-05.md"),
            pair("f3", "f2"),
            pair("f2", "f2")
        ],
        "{r:#?}"
    );
    // "No longer" is a fact of its own, which supersedes the old one.
    assert_eq!(r.superseded, vec![pair("f4", "f7")], "{r:#?}");
    assert_eq!(r.added, vec!["f6".to_string(), "f7".to_string()]);
    // Lyon is not the city held; the dog's name was stated after the
    // retraction: both are left alone.
    assert_eq!(
        r.retractions_unmatched,
        vec![
            "Please forget that my city is Lyon.".to_string(),
            "Forget their dog's name.".to_string()
        ]
    );
    let text = std::fs::read_to_string(mem.join("facts.md")).unwrap();
    let file = FactsFile::parse(&text);
    let current: Vec<&str> = file.current().map(|f| f.id.as_str()).collect();
    assert_eq!(current, vec!["f1", "f5", "f7"], "{text}");
    // Nothing is deleted: the retracted facts are kept as no longer true,
    // ended on the retraction's day, saying what retracted them.
    let bike = file.get("f6").unwrap();
    assert!(bike.retracted && !bike.is_current(), "{text}");
    assert_eq!(bike.until, Some("2026-02-05".parse().unwrap()));
    assert_eq!(bike.retracted_by.as_deref(), Some("memory/2026-02-05.md"));
    assert!(
        text.contains("- ~~The user's spare key spot is flowerpot.~~ (f3; since 2026-01-10; until 2026-02-03; retracted by f2)"),
        "{text}"
    );
    assert!(!text.contains("asked to forget their bike"), "{text}");
    assert_eq!(file.get("f4").unwrap().superseded_by.as_deref(), Some("f7"));
    let h = engine.memory().memory_history("f3").unwrap();
    assert_eq!(h.last().map(|c| c.op.as_str()), Some("retract"), "{h:#?}");
    // The daily logs are append-only: untouched.
    assert_eq!(
        std::fs::read_to_string(mem.join("2026-02-05.md")).unwrap(),
        logs[1].1
    );

    // Done: a second dream finds nothing more to retract.
    let again = engine.dream().unwrap();
    assert!(!again.changed, "{again:#?}");
    // Undo gives every retracted fact back, current again.
    mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(
        std::fs::read_to_string(mem.join("facts.md")).unwrap(),
        RETRACTIONS
    );
}

#[test]
fn retractions_are_read_by_rule() {
    use mnemo_engine::dream::{retraction, Retraction};
    let subject = |s: &str| Some(Retraction::Subject(s.into()));
    assert_eq!(
        retraction("The user asked to forget their bike lock code."),
        subject("bike lock code")
    );
    assert_eq!(
        retraction("Please forget that my city is Paris."),
        Some(Retraction::Statement("city is paris".into()))
    );
    assert_eq!(
        retraction("The user's city is no longer Paris."),
        Some(Retraction::NoLonger("city is paris".into()))
    );
    assert_eq!(retraction("Forget about the employer"), subject("employer"));
    // Not retractions: forgetting as a fact, a long phrase, nothing named.
    assert_eq!(retraction("The user tends to forget their keys."), None);
    assert_eq!(retraction("Likes tea."), None);
    assert_eq!(
        retraction("Forget it all, every single thing you know now"),
        None
    );
    assert!(retraction("Forget that my city is Paris.")
        .unwrap()
        .names("The user's city is Paris."));
    assert!(!retraction("Forget their city.")
        .unwrap()
        .names("The user's city is a long way from the sea and the hills."));
}

const TEA: &str =
    "---\nname: Tea\ndescription: how the user takes tea\ntype: user\n---\n\nGreen, no sugar.\n";

#[tokio::test]
async fn dream_folds_items_into_typed_memories_one_home_each_and_undoes_it() {
    let env = env().await;
    let root = env.ws.root().to_path_buf();
    let mem = root.join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("tea.md"), TEA).unwrap();
    let md = "# Memory\n\n## Memory files\n\n- [Tea](memory/tea.md): how the user takes tea\n";
    std::fs::write(root.join("MEMORY.md"), md).unwrap();
    let log = "# 2026-02-01\n\n\
        - [09:00] Tea: oolong on Sundays.\n\
        - [09:01] [feedback] Code review: keep pull requests under 300 lines.\n\
        - [09:02] [feedback] Ask before running migrations.\n\
        - [09:03] Deploys on Fridays.\n\
        - [09:04] Tea: oolong on Sundays.\n";
    std::fs::write(mem.join("2026-02-01.md"), log).unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());

    let r = engine.dream().unwrap();
    assert!(r.changed, "{r:#?}");
    // Each item has one home: the typed memory it names, a new typed
    // memory for a tagged one, else a fact.
    assert_eq!(r.added, vec!["f1".to_string()], "{r:#?}");
    let homes: Vec<&str> = r.typed.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(
        homes,
        vec![
            "memory/tea.md",
            "memory/code-review.md",
            "memory/feedback-notes.md",
            "memory/tea.md"
        ]
    );
    assert_eq!(
        r.typed_created,
        vec![
            "memory/code-review.md".to_string(),
            "memory/feedback-notes.md".to_string()
        ]
    );
    let tea = std::fs::read_to_string(mem.join("tea.md")).unwrap();
    assert_eq!(
        tea,
        format!("{TEA}- Tea: oolong on Sundays. (since 2026-02-01; from memory/2026-02-01.md)\n")
    );
    let review = engine.memory().read_typed("memory/code-review.md").unwrap();
    assert_eq!(review.front.name, "Code review");
    assert_eq!(review.front.kind, mnemo_store::memory::MemoryType::Feedback);
    assert!(
        review
            .body
            .contains("- Code review: keep pull requests under 300 lines. (since 2026-02-01;"),
        "{}",
        review.body
    );
    let facts = engine.memory().read_facts().unwrap();
    let current: Vec<&str> = facts.current().map(|f| f.text.as_str()).collect();
    assert_eq!(current, vec!["Deploys on Fridays."]);
    // The new memories are indexed in MEMORY.md; the old index line stays.
    let md_after = std::fs::read_to_string(root.join("MEMORY.md")).unwrap();
    assert_eq!(
        md_after,
        "# Memory\n\n## Memory files\n\n- [Tea](memory/tea.md): how the user takes tea\n\
         - [Code review](memory/code-review.md): Code review: keep pull requests under 300 lines.\n\
         - [Feedback notes](memory/feedback-notes.md): Ask before running migrations.\n"
    );
    let history = engine.memory().read_history().unwrap();
    for f in [
        "memory/tea.md",
        "memory/code-review.md",
        "memory/facts.md",
        "MEMORY.md",
    ] {
        assert!(
            history.contains(&format!("--- {f}\n+++ {f}\n")),
            "{f}: {history}"
        );
    }
    assert!(!engine.dream().unwrap().changed);

    // Undo reverses every file: the typed memories it made are removed.
    mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(std::fs::read_to_string(mem.join("tea.md")).unwrap(), TEA);
    assert_eq!(std::fs::read_to_string(root.join("MEMORY.md")).unwrap(), md);
    assert!(!mem.join("code-review.md").exists());
    assert!(!mem.join("feedback-notes.md").exists());
    assert_eq!(engine.memory().read_facts().unwrap().current().count(), 0);
}

#[test]
fn the_loss_guard_accounts_for_typed_memories() {
    use mnemo_engine::dream::unaccounted_typed;
    let facts = FactsFile::parse("- The user asked to forget their tea. (f1; since 2026-02-01)\n");
    let after = format!("{TEA}- Oolong. (since 2026-02-01; from memory/2026-02-01.md)\n");
    let guard = |before: &str, after: &str, items: &[String]| {
        unaccounted_typed("memory/tea.md", before, after, items, &facts)
    };
    assert!(guard(TEA, &after, &["Oolong.".into()]).is_empty());
    let lost = guard(TEA, TEA, &["Oolong.".into()]);
    assert_eq!(
        lost,
        vec!["the item \"Oolong.\" is not in memory/tea.md".to_string()]
    );
    let cut = after.replace("Green, no sugar.\n", "");
    let lost = guard(TEA, &cut, &[]);
    assert!(lost[0].contains("\"Green, no sugar.\" is gone"), "{lost:?}");

    // A dated line ended by a retraction the dream read, under "No longer
    // true": accounted for; any other way for it to go is a loss.
    let ended = |by: &str| {
        format!(
            "{TEA}\n## No longer true\n\n- ~~Oolong.~~ (since 2026-02-01; until 2026-02-05; retracted by {by}; from memory/2026-02-01.md)\n"
        )
    };
    for by in ["memory/2026-02-05.md", "f1"] {
        assert!(guard(&after, &ended(by), &[]).is_empty(), "{by}");
    }
    let lost = guard(&after, &ended("f99"), &[]);
    assert!(lost[0].contains("Oolong. (since 2026-02-01;"), "{lost:?}");
    let above = ended("f1").replace("\n## No longer true\n\n", "\n");
    assert_eq!(guard(&after, &above, &[]).len(), 1);
    let other_day = ended("f1").replace("since 2026-02-01; until", "since 2026-01-01; until");
    assert_eq!(guard(&after, &other_day, &[]).len(), 1);
    // A person's line is never ended by rule.
    let by_hand = format!("{TEA}- Oolong.\n");
    let struck = format!(
        "{TEA}\n## No longer true\n\n- ~~Oolong.~~ (since 2026-02-01; until 2026-02-05; retracted by f1; from memory/2026-02-01.md)\n"
    );
    assert_eq!(guard(&by_hand, &struck, &[]).len(), 1);
}

const HOBBY: &str =
    "---\nname: Hobby\ndescription: what the user does for fun\ntype: user\n---\n\n\
Chess on Sundays, mostly.\n\
- The user's hobby is chess.\n";

#[tokio::test]
async fn a_retraction_ends_the_lines_a_dream_wrote_into_a_typed_memory() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("hobby.md"), HOBBY).unwrap();
    std::fs::write(
        mem.join("2026-02-01.md"),
        "# 2026-02-01\n\n- [09:00] Hobby: chess\n- [09:01] Hobby: go on weekdays\n",
    )
    .unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let first = engine.dream().unwrap();
    assert_eq!(first.typed.len(), 2, "{first:#?}");
    let folded = std::fs::read_to_string(mem.join("hobby.md")).unwrap();
    assert_eq!(
        folded,
        format!(
            "{HOBBY}- Hobby: chess (since 2026-02-01; from memory/2026-02-01.md)\n\
             - Hobby: go on weekdays (since 2026-02-01; from memory/2026-02-01.md)\n"
        )
    );

    // A later log asks to forget it.
    std::fs::write(
        mem.join("2026-02-05.md"),
        "# 2026-02-05\n\n- [10:00] Please forget that my hobby is chess.\n",
    )
    .unwrap();
    let r = engine.dream().unwrap();
    assert!(r.changed, "{r:#?}");
    assert_eq!(
        r.retracted,
        vec![(
            "memory/hobby.md: Hobby: chess".to_string(),
            "memory/2026-02-05.md".to_string()
        )]
    );
    assert!(r.retractions_unmatched.is_empty(), "{r:#?}");
    assert!(r.added.is_empty() && r.typed.is_empty(), "{r:#?}");
    // The dream's line is under "No longer true", dated as an ended fact;
    // the line a person wrote, saying the same, is untouched.
    let text = std::fs::read_to_string(mem.join("hobby.md")).unwrap();
    assert_eq!(
        text,
        format!(
            "{HOBBY}- Hobby: go on weekdays (since 2026-02-01; from memory/2026-02-01.md)\n\
             \n\
             ## No longer true\n\
             \n\
             - ~~Hobby: chess~~ (since 2026-02-01; until 2026-02-05; retracted by memory/2026-02-05.md; from memory/2026-02-01.md)\n"
        )
    );
    // No facts file is made for a dream that changes no fact.
    assert!(!mem.join("facts.md").exists());
    let h = engine.memory().memory_history("Hobby").unwrap();
    let last = h.last().unwrap();
    assert_eq!(
        (last.op.as_str(), last.old.as_deref()),
        ("retract", Some("Hobby: chess")),
        "{h:#?}"
    );
    let history = engine.memory().read_history().unwrap();
    assert!(
        history.contains("--- memory/hobby.md\n+++ memory/hobby.md\n")
            && history.contains("1 retracted"),
        "{history}"
    );

    // Done: nothing more to retract, the folded line is not written again.
    let again = engine.dream().unwrap();
    assert!(!again.changed, "{again:#?}");
    assert_eq!(std::fs::read_to_string(mem.join("hobby.md")).unwrap(), text);

    // Undo gives the line back, byte for byte; then the fold.
    let undone = mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(undone.id, r.id);
    assert_eq!(
        std::fs::read_to_string(mem.join("hobby.md")).unwrap(),
        folded
    );
    mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(
        std::fs::read_to_string(mem.join("hobby.md")).unwrap(),
        HOBBY
    );
}

const GAMES: &str = "---\nname: Hobby\ndescription: what the user does for fun\ntype: user\n---\n\n\
- Hobby: go (since 2026-02-01; from memory/2026-02-01.md)\n\
- Hobby: chess (since 2026-02-20; from memory/2026-02-20.md)\n\
\n\
## No longer true\n\
\n\
- ~~Hobby: darts~~ (since 2026-01-01; until 2026-01-10; retracted by memory/2026-01-10.md; from memory/2026-01-01.md)\n";

#[tokio::test]
async fn a_retraction_among_the_facts_ends_older_dated_lines_only() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::write(mem.join("hobby.md"), GAMES).unwrap();
    let facts = "# Facts\n\n- The user asked to forget their hobby. (f1; since 2026-02-10)\n";
    std::fs::write(mem.join("facts.md"), facts).unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let r = engine.dream().unwrap();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    // The line stated after the retraction stays; the retraction, carried
    // out, ends itself.
    assert_eq!(
        r.retracted,
        vec![pair("memory/hobby.md: Hobby: go", "f1"), pair("f1", "f1")],
        "{r:#?}"
    );
    let text = std::fs::read_to_string(mem.join("hobby.md")).unwrap();
    assert_eq!(
        text,
        GAMES
            .replace(
                "- Hobby: go (since 2026-02-01; from memory/2026-02-01.md)\n",
                ""
            )
            .replace(
                "## No longer true\n\n",
                "## No longer true\n\n- ~~Hobby: go~~ (since 2026-02-01; until 2026-02-10; retracted by f1; from memory/2026-02-01.md)\n"
            )
    );
    assert_eq!(engine.memory().read_facts().unwrap().current().count(), 0);
    mnemo_engine::undo_dream(engine.memory(), t0()).unwrap();
    assert_eq!(
        std::fs::read_to_string(mem.join("hobby.md")).unwrap(),
        GAMES
    );
    assert_eq!(
        std::fs::read_to_string(mem.join("facts.md")).unwrap(),
        facts
    );
}

#[tokio::test]
async fn a_copy_with_fact_ids_in_its_text_is_the_one_that_ends() {
    let env = env().await;
    let mem = env.ws.root().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    // What a weak model's flush wrote before the write path checked it:
    // the current facts copied back with their ids and dates in the text.
    std::fs::write(
        mem.join("facts.md"),
        "# Facts\n\n\
- Rui is vegetarian now (f3) (f6; since 2026-02-05; by cli:direct 10..12)\n\
- Rui is vegetarian now (f3; since 2026-02-05; by cli:direct 0..10)\n\
- Rui lives in Lisbon (since 2026-02-05) (f4; since 2026-02-05)\n\
- Rui lives in Lisbon (f1; since 2026-02-01)\n",
    )
    .unwrap();
    let engine = engine(&env, 8_000, 1_000, "", t0());
    let r = engine.dream().unwrap();
    assert_eq!(
        r.merged,
        vec![
            ("f6".to_string(), "f3".to_string()),
            ("f4".to_string(), "f1".to_string())
        ]
    );
    let file = FactsFile::parse(&std::fs::read_to_string(mem.join("facts.md")).unwrap());
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(
        current,
        vec!["Rui is vegetarian now", "Rui lives in Lisbon"]
    );
}
