use super::*;
use crate::dataset::Dataset;

fn dataset() -> Dataset {
    Dataset::parse(
        r#"{
        "conversations": [{
            "conv_id": "c1", "speakers": ["Ann", "Bob"],
            "sessions": [
                {"session_id": "s1", "turns": [
                    {"turn_id": "1", "speaker": "Ann", "text": "We adopted a beagle puppy called Biscuit from the Riverside shelter."},
                    {"turn_id": "2", "speaker": "Bob", "text": "Lovely! How old is he?"}
                ]},
                {"session_id": "s2", "turns": [
                    {"turn_id": "3", "speaker": "Bob", "text": "My marathon training starts next week."},
                    {"turn_id": "4", "speaker": "Ann", "text": "Good luck with it."},
                    {"turn_id": "4a", "speaker": "Bob", "text": "Thanks, the weather should be fine."},
                    {"turn_id": "4b", "speaker": "Ann", "text": "I finished reading a novel about sailors."},
                    {"turn_id": "4c", "speaker": "Bob", "text": "Was the ending sad?"},
                    {"turn_id": "4d", "speaker": "Ann", "text": "A little, but hopeful too."},
                    {"turn_id": "4e", "speaker": "Bob", "text": "My sister is visiting on Sunday."},
                    {"turn_id": "4f", "speaker": "Ann", "text": "Say hello from me."}
                ]},
                {"session_id": "s3", "turns": [
                    {"turn_id": "5", "speaker": "Ann", "text": "Work was long today."},
                    {"turn_id": "6", "speaker": "Bob", "text": "Same here, meetings all day."},
                    {"turn_id": "7", "speaker": "Ann", "text": "Biscuit chewed my shoes, that beagle from the shelter is a handful."}
                ]}
            ]
        }],
        "questions": [
            {"qid": "q1", "conv_id": "c1", "question": "What dog did Ann adopt?",
             "evidence_turns": ["1", "7"], "evidence_sessions": ["s1", "s3"]},
            {"qid": "q2", "conv_id": "c1", "question": "When does Bob's training start?",
             "evidence_turns": ["3"], "evidence_sessions": ["s2"]}
        ]
    }"#,
    )
    .unwrap()
}

#[test]
fn questions_stay_questions() {
    let ds = dataset();
    let out = derive(&ds, QueryShape::Question);
    assert_eq!(out.questions.len(), 2);
    assert_eq!(out.questions[0].question, "What dog did Ann adopt?");
    assert!(out.questions[0].exclude_sessions.is_empty());
}

#[test]
fn embedded_questions_end_a_chat_from_a_session_without_evidence() {
    let ds = dataset();
    let out = derive(&ds, QueryShape::Embedded);
    assert_eq!(out.questions.len(), 2);
    let q = &out.questions[0];
    let lines: Vec<&str> = q.question.lines().collect();
    assert!(lines.len() >= 3, "{}", q.question);
    // The question names Ann, so Bob asks it.
    assert_eq!(lines.last().copied(), Some("Bob: What dog did Ann adopt?"));
    // The chat is from s2, the latest session without evidence, and that
    // session is the conversation now, not memory.
    assert_eq!(q.exclude_sessions, vec!["s2".to_string()]);
    for l in &lines[..lines.len() - 1] {
        assert!(l.starts_with("Ann: ") || l.starts_with("Bob: "), "{l}");
    }
    assert_eq!(q.evidence_turns, vec!["1".to_string(), "7".to_string()]);
    // Deterministic.
    assert_eq!(
        derive(&ds, QueryShape::Embedded).questions[0].question,
        q.question
    );
}

#[test]
fn lead_up_ends_at_a_later_evidence_turn_and_keeps_the_earlier_evidence() {
    let ds = dataset();
    let out = derive(&ds, QueryShape::LeadUp);
    // Only q1's evidence spans two sessions.
    assert_eq!(out.questions.len(), 1, "{:?}", out.questions);
    let q = &out.questions[0];
    assert_eq!(q.qid.as_deref(), Some("q1"));
    assert!(
        q.question
            .ends_with("Ann: Biscuit chewed my shoes, that beagle from the shelter is a handful."),
        "{}",
        q.question
    );
    assert!(q.question.lines().count() >= 2, "{}", q.question);
    assert!(
        !q.question.contains('?'),
        "no question in a lead-up: {}",
        q.question
    );
    // s3 is the conversation now: excluded, and its turn is no longer
    // evidence to find.
    assert_eq!(q.exclude_sessions, vec!["s3".to_string()]);
    assert_eq!(q.evidence_turns, vec!["1".to_string()]);
    assert_eq!(q.evidence_sessions, vec!["s1".to_string()]);
}

#[test]
fn both_parties_in_one_turn_are_split_into_utterances() {
    let mut got = Vec::new();
    split_speakers(
        "Emily: I went to the park.\nAI: Which one?\nit was sunny",
        |s, t| got.push((s, t)),
    );
    assert_eq!(
        got,
        vec![
            ("Emily".to_string(), "I went to the park.".to_string()),
            ("AI".to_string(), "Which one? it was sunny".to_string()),
        ]
    );
}

#[test]
fn clipping_prefers_sentences_then_words_and_counts_cjk_wide() {
    let long = "I went hiking. Then we had a very long lunch by the lake with friends and family";
    assert_eq!(clip(long, 26), "I went hiking.");
    assert_eq!(clip(long, 40), "I went hiking. Then we had a very long…");
    assert_eq!(clip("alpha beta gamma delta", 12), "alpha beta…");
    assert_eq!(clip("short", 30), "short");
    // Ten CJK characters are twenty columns.
    assert_eq!(clip("我们昨天去了公园散步看花", 10), "我们昨天去…");
}

#[test]
fn derived_files_load_back() {
    let ds = dataset();
    let out = derive(&ds, QueryShape::LeadUp);
    let text = serde_json::to_string(&out).unwrap();
    let back = Dataset::parse(&text).unwrap();
    assert_eq!(back.questions[0].exclude_sessions, vec!["s3".to_string()]);
    assert_eq!(back.questions[0].evidence_turns, vec!["1".to_string()]);
    assert_eq!(back.questions[0].question, out.questions[0].question);
}

#[test]
fn engine_queries_tag_the_user_and_the_assistant() {
    let ds = dataset();
    let out = as_engine_queries(&derive(&ds, QueryShape::Embedded));
    let q = &out.questions[0];
    for l in q.question.lines() {
        assert!(
            l.starts_with("User: ") || l.starts_with("Assistant: "),
            "{l}"
        );
    }
    // Ann is the conversation's first speaker: the user. Bob asks.
    assert_eq!(
        q.question.lines().last(),
        Some("Assistant: What dog did Ann adopt?")
    );
    // Questions stay questions.
    let plain = as_engine_queries(&ds);
    assert_eq!(plain.questions[0].question, "What dog did Ann adopt?");
}
