use super::*;

fn msgs(texts: &[&str]) -> Vec<Message> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i % 2 == 0 {
                Message::user(*t)
            } else {
                Message::assistant(*t)
            }
        })
        .collect()
}

/// The newcomer's ten messages (report of 2026-12-05, N1).
fn trial() -> Vec<Message> {
    msgs(&[
        "Hi, my name is Rui. I live in Lisbon.",
        "Nice to meet you, Rui from Lisbon.",
        "I eat meat; steak is my favourite food. I have a dog called Bolt.",
        "Steak and a dog named Bolt, noted.",
        "I work as a robotics engineer at Kestrel Robotics.",
        "Robotics at Kestrel sounds exciting.",
        "Big news: I moved from Lisbon to Berlin last week.",
        "Congratulations on the move to Berlin!",
        "I no longer eat meat. I am vegetarian now.",
        "Noted: you are vegetarian now.",
    ])
}

#[test]
fn transcript_lines_in_every_shape() {
    for line in [
        "**User:** Hi, my name is Rui. I live in Lisbon.",
        "- **Assistant:** Nice to meet you, Rui from Lisbon.",
        "**User**: I live in Lisbon.",
        "User: I live in Lisbon.",
        "USER: I live in Lisbon.",
        "[2026-12-05 10:00] USER: I live in Lisbon.",
        "- [2026-12-05 10:01] ASSISTANT [tools: memory_search]: Let me check.",
        "[2026-12-05 10:02] TOOL memory_search: 1 result",
        "assistant: noted",
    ] {
        assert!(is_transcript_line(line), "{line}");
    }
    for line in [
        "- Rui lives in Berlin.",
        "- User's name is Rui.",
        "- Username: rui42",
        "## User",
        "**User:**",
        "- Users: Rui and Ana",
        "- [Tea](memory/tea.md): prefers green tea",
        "[2026-12-05 10:00] Moved to Berlin.",
    ] {
        assert!(!is_transcript_line(line), "{line}");
    }
}

#[test]
fn copies_of_messages_and_of_their_sentences() {
    let m = trial();
    for line in [
        "**User:** Hi, my name is Rui. I live in Lisbon.",
        "- I eat meat; steak is my favourite food. I have a dog called Bolt.",
        "- Big news: I moved from Lisbon to Berlin last week",
        "- I work as a robotics engineer at Kestrel Robotics",
        // One sentence of a longer message, word for word.
        "- I have a dog called Bolt",
        // With the metadata of a fact line.
        "- Big news: I moved from Lisbon to Berlin last week (f2)",
    ] {
        assert!(is_copy_of(line, &m), "{line}");
    }
    for line in [
        "- The user is Rui and lives in Berlin (moved from Lisbon).",
        "- Rui is a robotics engineer at Kestrel Robotics.",
        "- Vegetarian since December 2026; used to love steak.",
        "- Has a dog called Bolt.",
        // Short messages are not judged: a fact may say the same words.
        "- I am vegetarian now",
        "# Memory",
        "",
    ] {
        assert!(!is_copy_of(line, &m), "{line}");
    }
}

#[test]
fn chinese_copies_are_found_and_restatements_are_not() {
    let m = msgs(&["我最喜欢的颜色是蓝色，但是其实我现在最喜欢绿色了。"]);
    assert!(is_copy_of("- 其实我现在最喜欢绿色了", &m));
    assert!(!is_copy_of("- 用户最喜欢绿色", &m));
    let m = msgs(&["我最喜欢的颜色是琥珀色。"]);
    assert!(is_copy_of("- 我最喜欢的颜色是琥珀色。", &m));
    assert!(!is_copy_of("- 用户最喜欢的颜色是琥珀色。", &m));
}

#[test]
fn a_short_message_said_of_the_user_is_memory() {
    let m = msgs(&["My preferred airline is Lufthansa."]);
    assert!(is_copy_of("- My preferred airline is Lufthansa", &m));
    assert!(!is_copy_of(
        "- The user's preferred airline is Lufthansa.",
        &m
    ));
}

#[test]
fn a_line_of_copied_sentences_is_a_copy() {
    let m = msgs(&[
        "I live in Lisbon, near the river by the old bridge.",
        "That sounds lovely.",
        "I work as a nurse at the city hospital.",
    ]);
    assert!(is_copy_of(
        "- I live in Lisbon, near the river by the old bridge. I work as a nurse at the city hospital.",
        &m
    ));
    assert!(!is_copy_of(
        "- Lives in Lisbon by the old bridge. Works as a nurse at the city hospital.",
        &m
    ));
}

#[test]
fn fact_metadata_is_stripped_and_other_parentheses_stay() {
    assert_eq!(
        strip_fact_meta("Rui is vegetarian now (f3)"),
        "Rui is vegetarian now"
    );
    assert_eq!(
        strip_fact_meta("Rui lives in Lisbon (since 2026-12-05) (f4; since 2026-12-05; recorded 2026-12-05 01:00; by cli:direct 10..12)"),
        "Rui lives in Lisbon"
    );
    assert_eq!(
        strip_fact_meta(
            "~~Lives in Paris.~~ (f1; since 2026-03-01; until 2026-03-05; superseded by f3)"
        ),
        "Lives in Paris."
    );
    assert_eq!(strip_fact_meta("Likes tea (h3fa2c1)"), "Likes tea");
    assert_eq!(
        strip_fact_meta("Lives near the river (by the bridge)"),
        "Lives near the river (by the bridge)"
    );
    assert_eq!(
        strip_fact_meta("Moved (since last week)"),
        "Moved (since last week)"
    );
    assert_eq!(
        strip_fact_meta("Plays the f-horn (f)"),
        "Plays the f-horn (f)"
    );
}

#[test]
fn echoes_of_the_prompts_are_recognised() {
    for line in [
        "- The conversation has been compacted.",
        "- Older turns will be replaced by a summary and their details will leave your context.",
        "[memory flush] Save the durable memories of this conversation now",
        "- Never invent facts.",
        "- Current time: 2026-12-05 10:00",
    ] {
        assert!(echoes_instructions(line), "{line}");
    }
    for line in [
        "- Rui lives in Berlin.",
        "- The user prefers short answers in French.",
        "- Deploys on Fridays.",
        "- Memory",
        "- 我住在柏林",
        // An example of the fact extraction's prompt, and a fact too.
        "- The user lives in Porto.",
    ] {
        assert!(!echoes_instructions(line), "{line}");
    }
    let prompt = "Each line is compared with the facts already saved (memory/facts.md).";
    assert!(echoes_text(
        "- Each line is compared with the saved facts",
        prompt
    ));
    assert!(!echoes_text(
        "- Each line is compared with the saved facts",
        "Something else entirely."
    ));
}

#[test]
fn an_answer_of_copied_messages_is_refused() {
    let m = trial();
    let known = "# Memory\n\nCore facts that hold across sessions.\n";
    let mut update = String::from("*Memory*\n");
    for (i, msg) in m.iter().enumerate() {
        let role = if i % 2 == 0 { "User" } else { "Assistant" };
        update.push_str(&format!("**{role}:** {}\n", msg.text()));
    }
    update.push_str(known);
    let s = screen_update(known, &update, &m);
    assert_eq!((s.new_lines, s.copied, s.echoed), (11, 10, 0));
    let why = s.refusal().unwrap();
    assert!(why.contains("10 of the 11 new lines"), "{why}");
}

#[test]
fn a_partly_copied_answer_keeps_the_rest() {
    let m = trial();
    let known = "# Memory\n\n- Name: Rui\n";
    let update = "# Memory\n\n- Name: Rui\n- Lives in Berlin (moved from Lisbon).\n- Vegetarian; used to eat meat. (f2; since 2026-12-05)\n- Works as a robotics engineer at Kestrel Robotics.\n**User:** I have a dog called Bolt.\n- The conversation has been compacted.\n";
    let s = screen_update(known, update, &m);
    assert_eq!((s.new_lines, s.copied, s.echoed), (5, 1, 1));
    assert_eq!(s.refusal(), None);
    assert_eq!(
        s.text,
        "# Memory\n\n- Name: Rui\n- Lives in Berlin (moved from Lisbon).\n- Vegetarian; used to eat meat.\n- Works as a robotics engineer at Kestrel Robotics.\n"
    );
}

#[test]
fn lines_already_in_memory_md_are_not_judged() {
    let m = msgs(&["User: I live in Lisbon and I like long walks by the river."]);
    // A person wrote this line; the model only kept it.
    let known = "- User: I live in Lisbon and I like long walks by the river.\n";
    let s = screen_update(known, known, &m);
    assert_eq!((s.new_lines, s.copied), (0, 0));
    assert_eq!(s.text, known);
    assert_eq!(s.refusal(), None);
}
