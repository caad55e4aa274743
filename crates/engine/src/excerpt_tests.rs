use super::*;
use mnemo_tokens::EstimateCounter;

#[test]
fn a_long_message_is_cut_within_the_cap_and_says_so() {
    let c = EstimateCounter;
    let short = "I like tea.";
    assert_eq!(
        cut_for_prompt(short, 100, &c),
        (Cow::Borrowed(short), false)
    );
    let long = format!("{} I like tea.", "x".repeat(40_000));
    let (shown, cut) = cut_for_prompt(&long, 1_000, &c);
    assert!(cut);
    let head = shown.split(" [… cut here").next().unwrap();
    assert!(c.count_text(head) <= 1_000, "{}", c.count_text(head));
    assert!(c.count_text(head) > 990, "{}", c.count_text(head));
    assert!(shown.contains("of 40012 characters shown"), "{shown}");
    assert!(shown.contains("the whole message stays in the session log"));
    // Multibyte text is cut at a character boundary.
    let wide = "é🙂".repeat(10_000);
    let (shown, cut) = cut_for_prompt(&wide, 50, &c);
    assert!(cut && shown.starts_with("é🙂"), "{shown}");
}

#[test]
fn rounds_fit_the_budget_and_end_before_a_user_turn() {
    let c = EstimateCounter;
    let msgs: Vec<Message> = (0..100)
        .flat_map(|i| {
            [
                Message::user(format!("question {i} {}", "q".repeat(200))),
                Message::assistant(format!("answer {i} {}", "a".repeat(200))),
            ]
        })
        .collect();
    let per: usize = shown_tokens(&msgs[0], 1_000, &c) + shown_tokens(&msgs[1], 1_000, &c);
    let budget = per * 10 + per / 2;
    let mut from = 0;
    let mut rounds = 0;
    while from < msgs.len() {
        let end = round_end(&msgs, from, msgs.len(), budget, 1_000, &c);
        assert!(end > from);
        let used: usize = msgs[from..end]
            .iter()
            .map(|m| shown_tokens(m, 1_000, &c))
            .sum();
        assert!(used <= budget, "{used} > {budget}");
        assert!(end == msgs.len() || msgs[end].role == Role::User, "{end}");
        from = end;
        rounds += 1;
    }
    assert_eq!(rounds, 10);
    // Everything fits: the whole range.
    assert_eq!(round_end(&msgs, 0, 6, 1_000_000, 1_000, &c), 6);
}

#[test]
fn one_long_turn_ends_before_a_call_and_one_huge_message_is_a_round() {
    let c = EstimateCounter;
    let mut msgs = vec![Message::user("look at the files")];
    for i in 0..50 {
        let mut call = Message::assistant(format!("reading file {i}"));
        call.tool_calls = Some(vec![mnemo_core::ToolCall {
            id: format!("c{i}"),
            kind: "function".into(),
            function: mnemo_core::FunctionCall {
                name: "read".into(),
                arguments: "{}".into(),
            },
            extra: Default::default(),
        }]);
        msgs.push(call);
        msgs.push(Message::tool_result(
            format!("c{i}"),
            "read",
            "z".repeat(400),
        ));
    }
    let end = round_end(&msgs, 0, msgs.len(), 1_000, 250, &c);
    assert!(end > 1 && end < msgs.len());
    assert_eq!(msgs[end].role, Role::Assistant, "{end}");
    // A single message over the budget is a round of its own (cut).
    let huge = vec![Message::user("x".repeat(100_000)), Message::user("next")];
    assert_eq!(round_end(&huge, 0, 2, 30, 25, &c), 1);
}

#[test]
fn cut_messages_keep_calls_and_count_the_cut() {
    let c = EstimateCounter;
    let msgs = vec![
        Message::user("short"),
        Message::user("y".repeat(10_000)),
        Message::assistant("fine"),
    ];
    let (shown, cut) = cut_messages(&msgs, 100, &c);
    assert_eq!(cut, 1);
    assert_eq!(shown[0], msgs[0]);
    assert!(shown[1].text().len() < 1_000);
    assert_eq!(shown[1].role, Role::User);
}
