use super::*;
use pretty_assertions::assert_eq;

fn set(keys: &[&str]) -> LineSet {
    keys.iter().copied().collect()
}

#[test]
fn lines_the_model_did_not_write_come_back_where_they_were() {
    // Two lines of consolidation's own: rewording one of them drops half,
    // which is the model's call (one of one would be refused).
    let current = "# Memory\n\n- has a cat\n- works at ACME\n- person wrote this\n\n## Preferences\n\n- tea, no sugar\n\n## Memory files\n\n- [Tea](memory/tea.md): likes tea\n";
    let update = "# Memory\n\n- has a cat\n- works at ACME since 2024\n- lives in Lyon\n";
    let m = merge(MergeInput {
        seen: current,
        current,
        update,
        consolidated: &set(&["has a cat", "works at acme"]),
    });
    assert_eq!(
        m.text,
        "# Memory\n\n- has a cat\n- person wrote this\n- works at ACME since 2024\n- lives in Lyon\n\n## Preferences\n\n- tea, no sugar\n\n## Memory files\n\n- [Tea](memory/tea.md): likes tea\n"
    );
    assert_eq!(m.kept, 3);
    assert_eq!(m.dropped, vec!["- works at ACME".to_string()]);
    assert!(!m.refused);
    assert_eq!(
        m.consolidated,
        set(&["has a cat", "works at acme since 2024", "lives in lyon"])
    );
}

#[test]
fn lines_added_while_the_model_thought_are_kept() {
    let seen = "- a\n- b\n";
    let current = "- a\n- b\n\n## Preferences\n\n- written meanwhile\n";
    // Even a line consolidation wrote (another session's, meanwhile) stays.
    let m = merge(MergeInput {
        seen,
        current: &format!("{current}- from session two\n"),
        update: "- a\n- b\n- c\n",
        consolidated: &set(&["a", "b", "from session two"]),
    });
    assert_eq!(
        m.text,
        "- a\n- b\n- c\n\n## Preferences\n\n- written meanwhile\n- from session two\n"
    );
    assert_eq!(m.kept, 2);
    assert!(m.consolidated.contains("from session two") && m.consolidated.contains("c"));
    assert!(!m.consolidated.contains("written meanwhile"));
}

#[test]
fn lines_removed_while_the_model_thought_stay_removed() {
    let seen = "- a\n\n## Prefs\n\n- tea\n\n## Memory files\n\n- [Cat](memory/cat.md): cat\n";
    // Meanwhile the section was rewritten and the memory forgotten.
    let current = "- a\n\n## Prefs\n\n- coffee\n\n## Memory files\n\n";
    let m = merge(MergeInput {
        seen,
        current,
        update: "- a\n- b\n\n## Prefs\n\n- tea\n\n## Memory files\n\n- [Cat](memory/cat.md): cat\n",
        consolidated: &set(&["a"]),
    });
    assert_eq!(
        m.text,
        "- a\n- b\n\n## Prefs\n\n- coffee\n\n## Memory files\n"
    );
}

#[test]
fn an_update_dropping_most_of_its_own_lines_is_refused() {
    let current = "- one\n- two\n- three\n- four\n- five\n";
    let all = set(&["one", "two", "three", "four", "five"]);
    let m = merge(MergeInput {
        seen: current,
        current,
        update: "- six\n",
        consolidated: &all,
    });
    assert!(m.refused);
    assert_eq!(m.text, "- six\n- one\n- two\n- three\n- four\n- five\n");
    assert!(m.dropped.is_empty());
    // Dropping two of five is the model's call.
    let m = merge(MergeInput {
        seen: current,
        current,
        update: "- one\n- two\n- three\n- six\n",
        consolidated: &all,
    });
    assert!(!m.refused);
    assert_eq!(m.text, "- one\n- two\n- three\n- six\n");
    assert_eq!(m.dropped.len(), 2);
    // An empty answer never wipes MEMORY.md.
    let m = merge(MergeInput {
        seen: "- a\n",
        current: "- a\n",
        update: "",
        consolidated: &set(&["a"]),
    });
    assert!(m.refused);
    assert_eq!(m.text, "- a\n");
}

#[test]
fn without_provenance_nothing_is_dropped() {
    let current = "# Facts\n\n- old fact\n";
    let m = merge(MergeInput {
        seen: current,
        current,
        update: "# Facts\n\n- new fact\n",
        consolidated: &LineSet::default(),
    });
    assert_eq!(m.text, "# Facts\n\n- old fact\n- new fact\n");
    assert_eq!(m.consolidated, set(&["new fact"]));
}

#[test]
fn diffs_reverse_to_the_old_text() {
    let cases = [
        ("", "- a\n"),
        ("- a\n", ""),
        ("# M\n\n- a\n- b\n- c\n", "# M\n\n- a\n- c\n- d\n"),
        ("x\ny\nz\n", "z\ny\nx\n"),
        ("- a\n\n- b\n", "- b\n\n- a\n- new\n\n"),
        ("same\n", "same\n"),
    ];
    for (old, new) in cases {
        let diff = unified_diff(old, new);
        assert_eq!(diff.is_empty(), old == new);
        assert!(!diff.contains("\n\n"), "{diff}");
        assert_eq!(
            reverse_diff(new, &diff).unwrap().trim_end(),
            old.trim_end(),
            "{old:?} -> {new:?}\n{diff}"
        );
    }
    let diff = unified_diff("- a\n- b\n", "- a\n- c\n");
    assert_eq!(
        diff,
        "--- MEMORY.md\n+++ MEMORY.md\n@@ -2 +2 @@\n-- b\n+- c\n"
    );
    assert!(reverse_diff("- a\n- changed since\n", &diff).is_err());
}

#[test]
fn a_short_memory_is_guarded_too() {
    // Issue 43 N15: five rounds of a model that answers with the new fact
    // only used to leave just the last one, each earlier fact dropped the
    // round after it was written.
    let mut memory = String::new();
    let mut consolidated = LineSet::default();
    for round in 0..5 {
        let update = format!("- fact MARK-S{round}x\n");
        let m = merge(MergeInput {
            seen: &memory,
            current: &memory,
            update: &update,
            consolidated: &consolidated,
        });
        memory = m.text;
        consolidated = m.consolidated;
    }
    for round in 0..5 {
        assert!(
            memory.contains(&format!("- fact MARK-S{round}x")),
            "S{round} was dropped: {memory}"
        );
    }
    // Dropping the only line is refused: the new one joins it.
    let m = merge(MergeInput {
        seen: "- lives in Paris\n",
        current: "- lives in Paris\n",
        update: "- lives in Berlin\n",
        consolidated: &set(&["lives in paris"]),
    });
    assert!(m.refused);
    assert_eq!(m.text, "- lives in Berlin\n- lives in Paris\n");
    // With two, one may go: the stale line leaves in the next round.
    let m = merge(MergeInput {
        seen: &m.text,
        current: &m.text,
        update: "- lives in Berlin\n",
        consolidated: &m.consolidated,
    });
    assert!(!m.refused);
    assert_eq!(m.text, "- lives in Berlin\n");
}
