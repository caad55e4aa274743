//! The passes alone, on plain data (the whole dream is tested in
//! `tests/dream.rs`).

use chrono::{NaiveDate, TimeZone, Utc};
use mnemo_store::memory::facts::FactsFile;
use pretty_assertions::assert_eq;

use super::fold::{fold_daily_logs, DueLog};
use super::state::DreamState;
use super::{duplicates, rules, supersede};

fn state(facts: &str) -> DreamState {
    let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let today = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
    DreamState::new(
        "20260301T120000",
        now,
        today,
        FactsFile::parse(facts),
        Vec::new(),
    )
}

fn current(s: &DreamState) -> Vec<&str> {
    s.file.current().map(|f| f.text.as_str()).collect()
}

#[test]
fn merging_near_duplicates_keeps_the_fuller_fact() {
    let mut s = state(
        "# Facts\n\n- Likes tea. (f1; since 2026-02-01)\n- likes tea (f2; since 2026-02-03)\n\
         - Has a cat. (f3; since 2026-02-01)\n- Has a cat named Biscuit. (f4; since 2026-02-10)\n",
    );
    duplicates::merge_near_duplicates(&mut s).unwrap();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(s.report.merged, vec![pair("f2", "f1"), pair("f3", "f4")]);
    assert_eq!(current(&s), vec!["Likes tea.", "Has a cat named Biscuit."]);
    assert_eq!(s.audit.records.len(), 2);
    assert_eq!(s.audit.records[0].op, "merge");
}

#[test]
fn superseding_keeps_the_newest_fact_of_a_subject() {
    let mut s = state(
        "# Facts\n\n- The user's city is Paris. (f1; since 2026-01-01)\n\
         - The user's city is Lyon. (f2; since 2026-02-01)\n- Likes tea. (f3; since 2026-01-01)\n",
    );
    supersede::supersede_contradictions(&mut s).unwrap();
    assert_eq!(
        s.report.superseded,
        vec![("f1".to_string(), "f2".to_string())]
    );
    assert_eq!(current(&s), vec!["The user's city is Lyon.", "Likes tea."]);
    let ended = s.file.get("f1").unwrap();
    assert_eq!(ended.until, NaiveDate::from_ymd_opt(2026, 2, 1));
}

/// "The user is …" names no attribute: facts that only share it are not
/// one subject, and the newest does not end the others (a local model's
/// "The user is an AI companion." ended where the user lives, what they
/// read and their name).
#[test]
fn the_user_alone_is_no_subject() {
    let mut s = state(
        "# Facts\n\n- The user is in Ghent. (f1; since 2026-01-01)\n\
         - The user is reading a novel. (f2; since 2026-01-02)\n\
         - The user's name is Emily. (f3; since 2026-01-03)\n\
         - The user is an AI companion. (f4; since 2026-02-01)\n\
         - User: likes tea (f5; since 2026-02-02)\n",
    );
    supersede::supersede_contradictions(&mut s).unwrap();
    assert!(s.report.superseded.is_empty(), "{:?}", s.report.superseded);
    assert_eq!(current(&s).len(), 5);
    assert_eq!(rules::subject("The user is in Ghent."), None);
    assert_eq!(rules::subject("User: likes tea"), None);
    assert_eq!(
        rules::subject("The user's city is Paris.").as_deref(),
        Some("the user s city")
    );
}

#[test]
fn folding_a_log_adds_its_new_items_and_carries_out_its_retractions() {
    let mut s = state(
        "# Facts\n\n- Works at Acme. (f1; since 2026-01-01)\n\
         - The user's city is Paris. (f2; since 2026-01-01)\n",
    );
    let log = DueLog {
        date: NaiveDate::from_ymd_opt(2026, 2, 1).unwrap(),
        rel: "memory/2026-02-01.md".into(),
        text: "# 2026-02-01\n\n- [09:00] Deploys on Fridays.\n- [09:05] Works at Acme.\n\
               - [09:10] Please forget that my city is Paris.\n"
            .into(),
    };
    let no_path = |_: &str| -> String { unreachable!("no typed memory is made") };
    fold_daily_logs(&mut s, vec![log], &no_path).unwrap();
    assert_eq!(
        s.report.folded_logs,
        vec!["memory/2026-02-01.md".to_string()]
    );
    assert_eq!(s.report.added, vec!["f3".to_string()]);
    assert_eq!(current(&s), vec!["Works at Acme.", "Deploys on Fridays."]);
    let log = "memory/2026-02-01.md".to_string();
    assert_eq!(s.report.retracted, vec![("f2".to_string(), log)]);
    assert!(s.report.retractions_unmatched.is_empty());
    assert_eq!(s.folded_items, vec!["Deploys on Fridays.".to_string()]);
}
