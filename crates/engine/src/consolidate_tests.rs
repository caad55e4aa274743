use super::*;
use mnemo_tokens::EstimateCounter;
use serde_json::json;

fn turn(n: usize) -> Vec<Message> {
    vec![
        Message::user(format!("question {n} {}", "x".repeat(36))),
        Message::assistant(format!("answer {n} {}", "y".repeat(36))),
    ]
}

#[test]
fn boundary_is_first_user_turn_that_frees_enough() {
    let msgs: Vec<Message> = (0..5).flat_map(turn).collect();
    let c = EstimateCounter;
    let per = c.count_message(&msgs[0]);
    // Freeing one message's worth needs the first turn (2 messages).
    assert_eq!(pick_boundary(&msgs, &c, 0, per), Some(2));
    assert_eq!(pick_boundary(&msgs, &c, 0, per * 3), Some(4));
    // More than there is: the last candidate.
    assert_eq!(pick_boundary(&msgs, &c, 0, 1_000_000), Some(8));
    // From a cursor, candidates are after it.
    assert_eq!(pick_boundary(&msgs, &c, 2, 1), Some(4));
    // No user message after the cursor: none.
    assert_eq!(pick_boundary(&msgs, &c, 8, 1), None);
    for b in [2, 4, 8] {
        assert_eq!(msgs[b].role, Role::User);
    }
    // Every turn answered: all of it.
    assert_eq!(last_boundary(&msgs, 0), Some(10));
    assert_eq!(last_boundary(&msgs, 8), Some(10));
    assert_eq!(last_boundary(&msgs, 10), None);
    // A turn still waiting for its answer stays past the cursor.
    let waiting = &msgs[..9];
    assert_eq!(last_boundary(waiting, 0), Some(8));
    assert_eq!(last_boundary(waiting, 8), None);
}

#[test]
fn save_memory_payload_shapes() {
    let ok = SaveMemory {
        history_entry: "[2026-01-01 10:00] e".into(),
        memory_update: "m".into(),
    };
    let obj = json!({"history_entry": "[2026-01-01 10:00] e", "memory_update": "m"});
    assert_eq!(parse_save_memory(&obj).unwrap(), ok);
    assert_eq!(parse_save_memory(&json!(obj.to_string())).unwrap(), ok);
    assert_eq!(parse_save_memory(&json!([1, obj])).unwrap(), ok);
    let nonstr =
        parse_save_memory(&json!({"history_entry": "e", "memory_update": {"a": 1}})).unwrap();
    assert_eq!(nonstr.memory_update, "{\"a\":1}");
    for bad in [
        json!({"memory_update": "m"}),
        json!({"history_entry": null, "memory_update": "m"}),
        json!({"history_entry": "  ", "memory_update": "m"}),
        json!({"history_entry": "e"}),
        json!(42),
        json!("not json"),
        json!([1, 2]),
    ] {
        assert!(parse_save_memory(&bad).is_err(), "{bad}");
    }
}

#[test]
fn memory_is_deduplicated_and_capped() {
    let text = "# Facts\n- likes tea\n- Likes tea\n\n\n- lives in Lyon\n- works at ACME\n";
    let (out, dups, cut) = enforce_memory(text, 100, 10_000, &|_| true);
    assert_eq!(
        out,
        "# Facts\n- likes tea\n\n- lives in Lyon\n- works at ACME\n"
    );
    assert_eq!(dups, 1);
    assert!(cut.is_empty());
    let (out, _, cut) = enforce_memory(text, 3, 10_000, &|_| true);
    assert_eq!(out, "# Facts\n- likes tea\n");
    assert_eq!(
        cut,
        vec!["- lives in Lyon".to_string(), "- works at ACME".to_string()]
    );
    let (out, _, cut) = enforce_memory(text, 100, 25, &|_| true);
    assert!(out.len() <= 25, "{out:?}");
    assert_eq!(cut.len(), 2);
    // Lines consolidation did not write are never cut.
    let (out, _, cut) = enforce_memory(text, 4, 10_000, &|l| !l.contains("Lyon"));
    assert_eq!(out, "# Facts\n- likes tea\n\n- lives in Lyon\n");
    assert_eq!(cut, vec!["- works at ACME".to_string()]);
}
