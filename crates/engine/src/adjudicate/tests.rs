use chrono::{NaiveDate, TimeZone, Utc};
use mnemo_core::Message;
use mnemo_store::memory::facts::FactsFile;
use pretty_assertions::assert_eq;

use super::*;

fn day(s: &str) -> NaiveDate {
    s.parse().unwrap()
}

fn msg(role: &str, text: &str, ts: &str) -> Message {
    let m = if role == "user" {
        Message::user(text)
    } else {
        Message::assistant(text)
    };
    m.with_timestamp(ts)
}

fn prop(
    quote: &str,
    subject: &str,
    attribute: &str,
    value: &str,
    kind: &str,
    fact: &str,
) -> Proposed {
    Proposed {
        quote: quote.into(),
        subject: subject.into(),
        attribute: attribute.into(),
        value: value.into(),
        kind: kind.into(),
        fact: fact.into(),
    }
}

#[test]
fn keys_normalise_who_and_what() {
    let names = vec!["Rui".to_string()];
    assert_eq!(subject_key("user", &names), "user");
    assert_eq!(subject_key("The User", &names), "user");
    assert_eq!(subject_key("I", &names), "user");
    assert_eq!(subject_key("Rui", &names), "user");
    assert_eq!(subject_key("用户", &names), "user");
    assert_eq!(subject_key("the user's sister", &names), "sister");
    assert_eq!(subject_key("Ana", &names), "ana");
    assert!(same_subject("sister ana", "ana"));
    assert!(!same_subject("user", "ana"));
    // Two named cousins are two people; a cousin without a name may be either.
    let (ana, rui) = (
        subject_key("Ana (the user's cousin)", &[]),
        subject_key("Rui (the user's cousin)", &[]),
    );
    assert!(!same_subject(&ana, &rui), "{ana} / {rui}");
    assert!(same_subject(&ana, &subject_key("the user's cousin", &[])));
    assert!(same_subject(&ana, &subject_key("Ana", &[])));
    assert_eq!(attribute_key("home city"), ("home city".into(), Some(true)));
    assert_eq!(attribute_key("current city of residence").0, "home city");
    assert_eq!(attribute_key("lives in").0, "home city");
    assert_eq!(attribute_key("occupation"), ("job".into(), Some(true)));
    assert_eq!(
        attribute_key("favourite tea"),
        ("favourite tea".into(), Some(true))
    );
    assert_eq!(attribute_key("favorite teas").0, "favourite tea");
    assert_eq!(
        attribute_key("最喜欢的颜色"),
        ("favourite colour".into(), Some(true))
    );
    assert_eq!(attribute_key("pets"), ("pet".into(), Some(false)));
    assert_eq!(
        attribute_key("gym locker number"),
        ("gym locker number".into(), Some(true))
    );
    assert_eq!(attribute_key("dog's name"), ("dog name".into(), Some(true)));
    assert_eq!(attribute_key("dentist's name").0, "dentist name");
    assert_eq!(attribute_key("dentist name").0, "dentist name");
    assert_eq!(
        attribute_key("favorite color"),
        attribute_key("最喜欢的颜色")
    );
    assert_eq!(attribute_key("action").1, Some(false));
    assert_eq!(
        keys::keys_of("location", "The user is back to chat.").0,
        "location"
    );
    assert_eq!(attribute_key("location").0, "home city");
    assert_eq!(attribute_key("current location").0, "home city");
    assert_ne!(attribute_key("wedding location").0, "home city");
    assert_ne!(attribute_key("event city").0, "home city");
    assert_eq!(
        keys::keys_of("location", "The wedding is in Lyon after all."),
        keys::keys_of("wedding location", "The wedding is in Nantes.")
    );
    assert_eq!(
        keys::keys_of("location", "The user is in Ghent.").0,
        "home city"
    );
    assert_eq!(attribute_key("first name").0, "name");
    assert_eq!(attribute_key("name").0, "name");
    assert_eq!(attribute_key("user's city").0, "home city");
    assert_eq!(attribute_key("weekend plans").1, Some(false));
    assert_eq!(attribute_key("mood").1, None);
}

#[test]
fn evidence_decides_what_is_stored() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("user", "Hi!", ts),
        msg("assistant", "Hello! How can I help?", ts),
        msg(
            "user",
            "Big news: I moved to Berlin last week, I don't live in Lisbon anymore.",
            ts,
        ),
        msg(
            "assistant",
            "Should I note your new employer as Kestrel Robotics?",
            ts,
        ),
        msg("user", "Yes, please.", ts),
        msg(
            "assistant",
            "I am always happy to help you with anything.",
            ts,
        ),
        msg("user", "I'm typing this from the train.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "I moved to Berlin last week",
                "user",
                "home city",
                "Berlin",
                "states",
                "I moved to Berlin last week",
            ),
            prop(
                "Hi!",
                "user",
                "greeting",
                "hi",
                "states",
                "The user said hi.",
            ),
            prop(
                "I moved to Paris",
                "user",
                "home city",
                "Paris",
                "changes",
                "The user lives in Paris.",
            ),
            prop(
                "I moved to Berlin last week",
                "user",
                "home city",
                "Munich",
                "changes",
                "The user lives in Munich.",
            ),
            prop(
                "your new employer as Kestrel Robotics",
                "user",
                "employer",
                "Kestrel Robotics",
                "states",
                "The user works at Kestrel Robotics.",
            ),
            prop(
                "happy to help",
                "assistant",
                "attitude",
                "helpful",
                "states",
                "The assistant is happy to help.",
            ),
            prop(
                "I'm typing this",
                "user",
                "activity",
                "typing",
                "states",
                "The user is typing on the train.",
            ),
            prop(
                "I moved to Berlin",
                "user",
                "home city",
                "Berlin",
                "states",
                "The user lives in Berlin with his wife Clara.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    let texts: Vec<&str> = ok.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        vec![
            "The user's home city is Berlin.",
            "The user works at Kestrel Robotics.",
        ],
        "{refused:#?}"
    );
    // A change by its words, dated to the week it names.
    assert_eq!(ok[0].kind, Kind::Changes);
    assert!(ok[0].rewritten);
    assert_eq!(ok[0].since, day("2026-11-23"));
    assert_eq!(ok[0].message, 2);
    // Confirmed by the user's "yes": the assistant's words count.
    assert_eq!(ok[1].message, 3);
    let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(why.len(), 5, "{why:#?}");
    assert!(why[0].contains("small talk"), "{why:?}");
    assert!(why[1].contains("in no message"), "{why:?}");
    assert!(why[2].contains("value"), "{why:?}");
    assert!(why[3].contains("assistant"), "{why:?}");
    assert!(why[4].contains("moment"), "{why:?}");
    // The copy with the invented wife was written again from its checked
    // parts, and then it was the first claim again: stored once.
}

#[test]
fn an_unconfirmed_assistant_claim_about_the_user_is_refused() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("assistant", "You mentioned you live in Oslo.", ts),
        msg("user", "What's the weather there?", ts),
    ];
    let (ok, refused) = check(
        &[prop(
            "you live in Oslo",
            "user",
            "home city",
            "Oslo",
            "states",
            "The user lives in Oslo.",
        )],
        &messages,
        day("2026-12-05"),
    );
    assert!(ok.is_empty());
    assert!(refused[0].why.contains("did not confirm"), "{refused:?}");
}

#[test]
fn a_negated_quote_retracts_instead_of_stating() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg(
        "user",
        "I no longer eat meat. I am vegetarian now.",
        ts,
    )];
    let (ok, _) = check(
        &[
            prop(
                "I no longer eat meat",
                "user",
                "diet",
                "meat",
                "states",
                "The user eats meat.",
            ),
            prop(
                "I am vegetarian now",
                "user",
                "diet",
                "vegetarian",
                "states",
                "The user is vegetarian.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert_eq!(ok.len(), 2);
    assert_eq!(ok[0].kind, Kind::Retracts);
    assert_eq!(ok[1].kind, Kind::Changes);
    assert_eq!(ok[1].text, "The user is vegetarian.");
}

fn now() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, 12, 0, 0).unwrap()
}

fn checked(text: &str, subject: &str, attribute: &str, value: &str, kind: Kind) -> Checked {
    let (attribute_key, single) = attribute_key(attribute);
    Checked {
        text: text.into(),
        subject: subject.into(),
        subject_key: subject_key(subject, &[]),
        attribute: attribute.into(),
        attribute_key,
        single,
        value: value.into(),
        kind,
        message: 0,
        evidence: text.into(),
        since: day("2026-12-05"),
        said: day("2026-12-05"),
        rewritten: false,
    }
}

fn run(file: &mut FactsFile, facts: &[Checked], answers: &mut Answers) -> Vec<Decision> {
    let sources: Vec<Option<String>> = (0..facts.len())
        .map(|i| Some(format!("s {i}..{}", i + 1)))
        .collect();
    decide(file, facts, &[], now(), &sources, answers)
        .unwrap()
        .into_iter()
        .map(|(d, _)| d)
        .collect()
}

#[test]
fn the_code_supersedes_by_subject_and_attribute() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    let first = [
        checked(
            "The user lives in Lisbon.",
            "user",
            "home city",
            "Lisbon",
            Kind::States,
        ),
        checked(
            "The user works as a nurse.",
            "user",
            "job",
            "nurse",
            Kind::States,
        ),
        checked(
            "Ana lives in Madrid.",
            "the user's sister Ana",
            "home city",
            "Madrid",
            Kind::States,
        ),
    ];
    run(&mut file, &first, &mut answers);
    assert_eq!(file.current().count(), 3);
    let second = [
        // The sister moves: the user's home stays.
        checked(
            "Ana lives in Seville.",
            "Ana",
            "city",
            "Seville",
            Kind::Changes,
        ),
        // The user moves, said without a trigger word.
        checked(
            "The user lives in Berlin.",
            "user",
            "residence",
            "Berlin",
            Kind::States,
        ),
        // Said again: a source, not a line.
        checked(
            "The user is a nurse.",
            "user",
            "occupation",
            "nurse",
            Kind::States,
        ),
    ];
    let d = run(&mut file, &second, &mut answers);
    assert!(
        matches!(&d[0], Decision::Supersede { ends, .. } if ends == &vec!["f3".to_string()]),
        "{d:?}"
    );
    assert!(
        matches!(&d[1], Decision::Supersede { ends, .. } if ends == &vec!["f1".to_string()]),
        "{d:?}"
    );
    assert!(
        matches!(&d[2], Decision::Confirm { id } if id == "f2"),
        "{d:?}"
    );
    assert!(
        answers.open.is_empty(),
        "no question needed: {:?}",
        answers.open
    );
    let text = file.render();
    assert!(text.contains("- The user works as a nurse. (f2; about user: job; since 2026-12-05; recorded 2026-12-05 12:00; by s 1..2, s 2..3)"), "{text}");
    assert!(text.contains("~~The user lives in Lisbon.~~ (f1; about user: home city; since 2026-12-05; until 2026-12-05; superseded by f5;"), "{text}");
    // A retraction ends the fact it names, and adds nothing.
    let d = run(
        &mut file,
        &[checked("forget my job", "user", "job", "", Kind::Retracts)],
        &mut answers,
    );
    assert!(
        matches!(&d[0], Decision::Retract { ends, .. } if ends == &vec!["f2".to_string()]),
        "{d:?}"
    );
    let d = run(
        &mut file,
        &[checked(
            "forget my boat",
            "user",
            "boat",
            "",
            Kind::Retracts,
        )],
        &mut answers,
    );
    assert_eq!(d, vec![Decision::Unmatched]);
    assert_eq!(
        file.current().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        vec!["f4", "f5"]
    );
}

#[test]
fn many_valued_attributes_gain_values_and_unknown_ones_ask() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[checked(
            "The user has a dog called Bolt.",
            "user",
            "pet",
            "dog called Bolt",
            Kind::States,
        )],
        &mut answers,
    );
    let d = run(
        &mut file,
        &[checked(
            "The user has a cat called Mia.",
            "user",
            "pet",
            "cat called Mia",
            Kind::States,
        )],
        &mut answers,
    );
    assert!(matches!(&d[0], Decision::Add { .. }), "{d:?}");
    run(
        &mut file,
        &[checked(
            "The user feels tired.",
            "user",
            "mood",
            "tired",
            Kind::States,
        )],
        &mut answers,
    );
    let d = run(
        &mut file,
        &[checked(
            "The user feels great.",
            "user",
            "mood",
            "great",
            Kind::States,
        )],
        &mut answers,
    );
    assert!(matches!(&d[0], Decision::Add { .. }), "{d:?}");
    assert_eq!(
        answers.open.len(),
        1,
        "one question for the unknown attribute"
    );
    assert_eq!(answers.open[0].question, QuestionKind::Replaces);
    // With the model's yes, the same round supersedes.
    let mut file2 = FactsFile::parse("");
    let mut a2 = Answers::default();
    run(
        &mut file2,
        &[checked(
            "The user feels tired.",
            "user",
            "mood",
            "tired",
            Kind::States,
        )],
        &mut a2,
    );
    a2.known.insert(answers.open[0].clone(), true);
    let d = run(
        &mut file2,
        &[checked(
            "The user feels great.",
            "user",
            "mood",
            "great",
            Kind::States,
        )],
        &mut a2,
    );
    assert!(matches!(&d[0], Decision::Supersede { .. }), "{d:?}");
}

#[test]
fn a_fact_from_before_keys_is_read_from_its_text() {
    let mut file = FactsFile::parse("- I live in Lisbon, near the river (f1; since 2026-12-01; recorded 2026-12-01 10:00; by s 0..2)\n- Jon's favourite dance style is contemporary (f2; since 2026-12-01)\n");
    let mut answers = Answers::default();
    let d = run(
        &mut file,
        &[
            checked(
                "The user lives in Berlin.",
                "user",
                "home city",
                "Berlin",
                Kind::Changes,
            ),
            // Shares only a name with f2: ends nothing.
            checked(
                "Gina appreciates Jon's support.",
                "Gina",
                "feeling",
                "appreciates Jon's support",
                Kind::Changes,
            ),
        ],
        &mut answers,
    );
    assert!(
        matches!(&d[0], Decision::Supersede { ends, .. } if ends == &vec!["f1".to_string()]),
        "{d:?}"
    );
    assert!(matches!(&d[1], Decision::Add { .. }), "{d:?}");
    assert!(file.get("f2").unwrap().is_current());
}

#[test]
fn the_clause_that_says_the_value_decides_its_kind_and_subject() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg(
            "user",
            "Big news: I moved to Berlin last week, I don't live in Lisbon anymore.",
            ts,
        ),
        msg(
            "user",
            "My sister Ana lives in Madrid and she is a doctor.",
            ts,
        ),
        msg("user", "My sister is Ana.", ts),
        msg("user", "我最喜欢的颜色是蓝色。", ts),
    ];
    let (ok, refused) = check(
        &[
            // The quote holds the old value's negation, not the new one's.
            prop(
                "Big news: I moved to Berlin last week, I don't live in Lisbon anymore.",
                "user",
                "home city",
                "Berlin",
                "states",
                "The user lives in Berlin.",
            ),
            // The model says it is the user's: the words say the sister's.
            prop(
                "My sister Ana lives in Madrid",
                "user",
                "home city",
                "Madrid",
                "states",
                "The user's sister Ana lives in Madrid.",
            ),
            prop(
                "My sister is Ana",
                "user",
                "sister",
                "Ana",
                "states",
                "The user's sister is Ana.",
            ),
            prop(
                "我最喜欢的颜色是蓝色",
                "user",
                "最喜欢的颜色",
                "蓝色",
                "states",
                "The user最喜欢的颜色是蓝色。",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:#?}");
    assert_eq!(ok[0].kind, Kind::Changes);
    assert_eq!(ok[1].subject_key, "sister ana");
    assert_eq!(ok[2].subject_key, "user");
    assert_eq!(ok[3].text, "用户最喜欢的颜色是蓝色。");
}

#[test]
fn greetings_and_questions_inside_a_longer_message_are_not_facts() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg(
        "user",
        "Emily: Hello, my name is Emily. Nice to meet you. Can you recommend a book about tea?",
        ts,
    )];
    let (ok, refused) = check(
        &[
            prop(
                "Emily: Hello, my name is Emily.",
                "user",
                "name",
                "Emily",
                "states",
                "The user's name is Emily.",
            ),
            prop(
                "Nice to meet you.",
                "user",
                "greeting",
                "nice to meet you",
                "states",
                "The user greeted the AI.",
            ),
            prop(
                "Can you recommend a book about tea?",
                "user",
                "interest",
                "a book about tea",
                "states",
                "The user wants a book about tea.",
            ),
            prop(
                "recommend a book about tea",
                "user",
                "question",
                "book about tea",
                "states",
                "The user asked for a book.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert_eq!(ok.len(), 1, "{refused:#?}");
    assert_eq!(ok[0].subject_key, "user");
    let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(
        why,
        [
            "small talk",
            "a question states nothing",
            "a question states nothing"
        ]
    );
}

/// The assistant's words about itself, written as the user's, are not a
/// fact of the user (a local model's "The user is an AI companion." once
/// ended four true facts in a dream).
#[test]
fn the_user_is_no_ai_companion() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("user", "Hello my AI companion, I'm Emily.", ts),
        msg("assistant", "Hello Emily! Nice to meet you.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "Hello my AI companion",
                "user",
                "name",
                "AI companion",
                "states",
                "The user is an AI companion.",
            ),
            prop(
                "I'm Emily.",
                "user",
                "name",
                "Emily",
                "states",
                "The user's name is Emily.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert_eq!(ok.len(), 1, "{refused:#?}");
    assert_eq!(ok[0].text, "The user's name is Emily.");
    let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(why, ["about the assistant, not the user"]);
}

/// The assistant's name taken for the user's, and a fact about the
/// assistant under another subject, are refused as well (a local model's
/// "The user is named AI Companion." and "The AI companion responds
/// warmly."); the user's own facts that merely mention an AI are kept.
#[test]
fn the_assistant_is_not_the_user_under_any_name() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg(
            "user",
            "Hello my AI companion, I'm Ai. I work at an AI startup and my name is Ai Tanaka.",
            ts,
        ),
        msg("assistant", "Hello Ai! Nice to meet you.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "Hello my AI companion",
                "user",
                "name",
                "AI Companion",
                "states",
                "The user is named AI Companion.",
            ),
            prop(
                "Hello my AI companion",
                "user",
                "style",
                "warm",
                "states",
                "The AI companion responds warmly.",
            ),
            prop(
                "I'm Ai.",
                "user",
                "name",
                "Ai",
                "states",
                "The user is named Ai.",
            ),
            prop(
                "I work at an AI startup",
                "user",
                "job",
                "AI startup",
                "states",
                "The AI startup the user works for is in Tokyo.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    let why: Vec<&str> = refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(
        why,
        [
            "about the assistant, not the user",
            "about the assistant, not the user"
        ],
        "{ok:#?}"
    );
    let kept: Vec<&str> = ok.iter().map(|p| p.text.as_str()).collect();
    assert!(kept.contains(&"The user is named Ai."), "{kept:?}");
}

#[test]
fn what_is_stored_does_not_say_now() {
    assert_eq!(
        timeless("The user now lives in Berlin."),
        "The user lives in Berlin."
    );
    assert_eq!(
        timeless("Now the user is vegetarian"),
        "The user is vegetarian"
    );
    assert_eq!(
        timeless("The user's locker is now 27, not 14."),
        "The user's locker is 27, not 14."
    );
    assert_eq!(timeless("用户现在最喜欢绿色。"), "用户最喜欢绿色。");
    assert_eq!(timeless("The user knows Nowak."), "The user knows Nowak.");
}

#[test]
fn a_fact_without_words_is_refused() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg("user", "- , ; -- ,", ts)];
    let (ok, refused) = check(
        &[prop("- , ;", "user", ",", ",", "states", "- ,")],
        &messages,
        day("2026-12-05"),
    );
    assert!(ok.is_empty());
    assert_eq!(refused[0].why, "no words");
    // Digits are no words either ("2.0" from a version string); a fact of
    // any script's letters is (用户喜欢绿色).
    let messages = vec![msg("user", "v 2.0 -- 3", ts)];
    let (ok, refused) = check(
        &[prop("2.0", "user", "2", "2.0", "states", "2.0")],
        &messages,
        day("2026-12-05"),
    );
    assert!(ok.is_empty());
    assert_eq!(refused[0].why, "no words");
    let messages = vec![msg("user", "我喜欢绿色", ts)];
    let (ok, _) = check(
        &[prop(
            "我喜欢绿色",
            "user",
            "颜色",
            "绿色",
            "states",
            "用户喜欢绿色。",
        )],
        &messages,
        day("2026-12-05"),
    );
    assert_eq!(ok.len(), 1);
}

#[test]
fn a_person_speaking_in_the_assistant_place_is_about_themselves() {
    // A transcript of two people: the second speaks where the agent would.
    let ts = "2022-01-21T19:31:00Z";
    let messages = vec![
        msg("user", "Joanna: I finished my first screenplay!", ts),
        msg(
            "assistant",
            "Nate: Congrats! I've had my turtles for 3 years now.",
            ts,
        ),
    ];
    let (ok, refused) = check(
        &[prop(
            "I've had my turtles for 3 years",
            "user",
            "pets",
            "turtles",
            "states",
            "The user has had turtles for 3 years.",
        )],
        &messages,
        day("2022-01-21"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(ok[0].subject, "Nate");
    assert_eq!(ok[0].subject_key, "nate");
    assert!(
        ok[0].text.starts_with("Nate has had turtles"),
        "{}",
        ok[0].text
    );
    // The agent saying it of the user is still refused.
    let agent = vec![msg("assistant", "You have had turtles for 3 years.", ts)];
    let (ok, _) = check(
        &[prop(
            "You have had turtles for 3 years",
            "user",
            "pets",
            "turtles",
            "states",
            "The user has had turtles for 3 years.",
        )],
        &agent,
        day("2022-01-21"),
    );
    assert!(ok.is_empty());
}

#[test]
fn a_plan_ends_nothing_today() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    let job = checked(
        "The user works as a data engineer.",
        "user",
        "job",
        "data engineer",
        Kind::States,
    );
    run(&mut file, &[job], &mut answers);
    let mut plan = checked(
        "The user will work on moving the warehouse to DuckDB.",
        "user",
        "work",
        "moving the warehouse to DuckDB",
        Kind::States,
    );
    plan.since = day("2027-01-01");
    run(&mut file, &[plan], &mut answers);
    assert_eq!(file.current().count(), 2, "{}", file.render());
}

#[test]
fn a_change_of_another_attribute_needs_its_words() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[checked(
            "The user's name is Emily.",
            "user",
            "name",
            "Emily",
            Kind::States,
        )],
        &mut answers,
    );
    // Labelled a change by the model, said as a plain statement: the
    // user's name is not asked about, whatever the model would answer.
    let mut dentist = checked(
        "The user's dentist's name is Okafor.",
        "user",
        "dentist's name",
        "Okafor",
        Kind::Changes,
    );
    dentist.evidence = "Just so you know, my dentist's name is Okafor.".into();
    let d = run(&mut file, &[dentist.clone()], &mut answers);
    assert!(matches!(&d[0], Decision::Add { .. }), "{d:?}");
    assert!(answers.open.is_empty(), "{:?}", answers.open);
    // Said as a change, the pair is asked.
    let mut file = FactsFile::parse("");
    run(
        &mut file,
        &[checked(
            "The user's name is Emily.",
            "user",
            "name",
            "Emily",
            Kind::States,
        )],
        &mut answers,
    );
    dentist.evidence = "My dentist's name is Okafor now.".into();
    run(&mut file, &[dentist], &mut answers);
    assert_eq!(answers.open.len(), 1, "{:?}", answers.open);
}

#[test]
fn the_users_own_my_a_is_b_is_kept_in_their_words() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("user", "Noting it here: my storage box 3 label is Q7z.", ts),
        msg(
            "user",
            "Update: my favourite tea is now sencha, not oolong.",
            ts,
        ),
        msg("user", "My sister's car is red.", ts),
        msg("user", "My old bike was blue.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "my storage box 3 label is Q7z",
                "user",
                "storage box label",
                "Q7z",
                "states",
                "The user has a storage box labeled Q7z.",
            ),
            prop(
                "my favourite tea is now sencha",
                "user",
                "tea",
                "sencha",
                "changes",
                "The user now likes sencha.",
            ),
            prop(
                "My sister's car is red",
                "user's sister",
                "car colour",
                "red",
                "states",
                "The user's sister has a red car.",
            ),
            prop(
                "My old bike was blue",
                "user",
                "bike colour",
                "blue",
                "states",
                "The user's old bike was blue.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    let got: Vec<(&str, &str)> = ok
        .iter()
        .map(|c| (c.text.as_str(), c.attribute.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "The user's storage box 3 label is Q7z.",
                "storage box 3 label"
            ),
            ("The user's favourite tea is sencha.", "favourite tea"),
            // Someone else's, and the past: the model's sentence.
            ("The user's sister has a red car.", "car colour"),
            ("The user's old bike was blue.", "bike colour"),
        ]
    );
    // Box 3 and box 4 are two attributes.
    assert_ne!(ok[0].attribute_key, attribute_key("storage box 4 label").0);
}

#[test]
fn a_correction_labelled_a_retraction_and_a_visit_are_read_by_their_words() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg(
            "user",
            "Sorry, I got that wrong: the wedding is in Nantes.",
            ts,
        ),
        msg("user", "Today I went for a walk in the park.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "the wedding is in Nantes",
                "user's cousin",
                "wedding",
                "Nantes",
                "retracts",
                "The wedding is in Nantes.",
            ),
            prop(
                "I went for a walk in the park",
                "user",
                "location",
                "park",
                "states",
                "The user went for a walk in the park.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(ok[0].kind, Kind::Corrects);
    assert_eq!(ok[1].attribute_key, "place visited");
    assert_eq!(ok[1].single, Some(false));
    // A retraction is asked about only against facts it names a word of.
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[checked(
            "The user lives in Ghent.",
            "user",
            "home city",
            "Ghent",
            Kind::States,
        )],
        &mut answers,
    );
    let mut forget = checked("", "user", "pet", "", Kind::Retracts);
    forget.evidence = "Scratch what I told you about the iguana, that isn't true.".into();
    let d = run(&mut file, &[forget], &mut answers);
    assert!(matches!(&d[0], Decision::Unmatched), "{d:?}");
    assert!(answers.open.is_empty(), "{:?}", answers.open);
}

#[test]
fn a_request_to_forget_the_model_missed_ends_what_it_names() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    let facts = [
        checked(
            "The user's hotel room number is 512.",
            "user",
            "hotel room number",
            "512",
            Kind::States,
        ),
        checked(
            "The user has a pet iguana named Zorba.",
            "user",
            "pet",
            "iguana named Zorba",
            Kind::States,
        ),
        checked(
            "The user lives in Ghent.",
            "user",
            "home city",
            "Ghent",
            Kind::States,
        ),
    ];
    run(&mut file, &facts, &mut answers);
    let messages = vec![
        Message::user("Please forget that my hotel room number is 512."),
        Message::user("Scratch what I told you about the iguana, that isn't true."),
    ];
    let code = unproposed(&messages, &[], day("2026-12-05"));
    let d = run(&mut file, &code, &mut answers);
    assert!(
        matches!(&d[0], Decision::Retract { ends, .. } if ends == &["f1".to_string()]),
        "{d:?}"
    );
    // The iguana is asked about, the home is not.
    assert!(matches!(&d[1], Decision::Unmatched), "{d:?}");
    assert_eq!(answers.open.len(), 1, "{:?}", answers.open);
    assert!(answers.open[0].old.contains("iguana"));
}

#[test]
fn a_half_translated_quote_is_found_by_its_chinese() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg("user", "其实我现在最喜欢靛青色了。", ts)];
    let (ok, refused) = check(
        &[prop(
            "I actually最喜欢靛青色了",
            "user",
            "最喜欢的颜色",
            "靛青色",
            "changes",
            "用户最喜欢靛青色。",
        )],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(ok[0].message, 0);
    assert_ne!(ok[0].kind, Kind::States);
}

#[test]
fn a_retraction_of_an_attribute_no_fact_has_asks_about_the_fact_it_names() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[
            checked(
                "The user has a parking number of B7.",
                "user",
                "parking number",
                "B7",
                Kind::States,
            ),
            checked(
                "The user lives in Ghent.",
                "user",
                "home city",
                "Ghent",
                Kind::States,
            ),
        ],
        &mut answers,
    );
    // The model quoted it half translated and named the wrong attribute.
    let mut forget = checked(
        "The user asked to forget their phone number.",
        "user",
        "phone number",
        "",
        Kind::Retracts,
    );
    forget.evidence = "Please forget my车位号码是B7.".into();
    run(&mut file, &[forget], &mut answers);
    assert_eq!(answers.open.len(), 1, "{:?}", answers.open);
    assert!(answers.open[0].old.contains("B7"));
}

#[test]
fn an_event_named_without_its_owner_is_the_one_named_before() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[checked(
            "The user's cousin's wedding is in Lyon.",
            "the user's cousin",
            "wedding",
            "Lyon",
            Kind::States,
        )],
        &mut answers,
    );
    let mut nantes = checked(
        "The wedding is in Nantes.",
        "user",
        "location",
        "Nantes",
        Kind::Corrects,
    );
    (nantes.attribute_key, nantes.single) = keys::keys_of("location", &nantes.text);
    nantes.evidence = "Sorry, I got that wrong: the wedding is in Nantes.".into();
    // An event has one place: the correction moves it by rule.
    let d = run(&mut file, &[nantes], &mut answers);
    assert!(
        matches!(&d[0], Decision::Supersede { ends, .. } if ends.len() == 1),
        "{d:?}"
    );
    assert!(answers.open.is_empty(), "{:?}", answers.open);
    let current: Vec<&str> = file.current().map(|f| f.text.as_str()).collect();
    assert_eq!(current, vec!["The wedding is in Nantes."]);
    // Said again of the same wedding: no second line.
    let mut lyon = checked(
        "The wedding is in Lyon.",
        "user",
        "wedding location",
        "Lyon",
        Kind::States,
    );
    lyon.evidence = "The wedding is in Lyon.".into();
    let mut file = FactsFile::parse("");
    run(
        &mut file,
        &[checked(
            "The user's cousin's wedding is in Lyon.",
            "the user's cousin",
            "wedding",
            "Lyon",
            Kind::States,
        )],
        &mut answers,
    );
    let d = run(&mut file, &[lyon], &mut answers);
    assert!(matches!(&d[0], Decision::Confirm { .. }), "{d:?}");
}

#[test]
fn a_many_valued_attribute_changes_only_when_the_words_say_so() {
    let mut file = FactsFile::parse("");
    let mut answers = Answers::default();
    run(
        &mut file,
        &[checked(
            "The user plans to read a novel.",
            "user",
            "action",
            "read a novel",
            Kind::States,
        )],
        &mut answers,
    );
    let mut next = checked(
        "The user will give it a try.",
        "user",
        "action",
        "give it a try",
        Kind::Changes,
    );
    next.evidence = "I'll give it a try.".into();
    let d = run(&mut file, &[next], &mut answers);
    assert!(matches!(&d[0], Decision::Add { .. }), "{d:?}");
    assert!(answers.open.is_empty(), "{:?}", answers.open);
}

#[test]
fn a_proposal_the_code_reads_under_another_key_gives_way() {
    let messages = vec![Message::user("Marisol moved to Bilbao last month.")];
    let (model, _) = check(
        &[prop(
            "Marisol moved to Bilbao last month",
            "Marisol",
            "move",
            "Bilbao",
            "changes",
            "Marisol's move is Bilbao.",
        )],
        &messages,
        day("2026-12-05"),
    );
    let code = unproposed(&messages, &model, day("2026-12-05"));
    assert_eq!(code.len(), 1, "{code:?}");
    assert!(gives_way(&code[0], &model[0]));
}

#[test]
fn a_proposal_of_the_read_sentence_gives_way_unless_it_says_more() {
    let messages = vec![Message::user(
        "Noting it here: my storage box 1 label is L1x, and I work as a nurse.",
    )];
    let (model, _) = check(
        &[
            prop(
                "Noting it here: my storage box 1 label is L1x",
                "user",
                "storage box",
                "storage box label",
                "states",
                "The user notes the storage box label.",
            ),
            prop(
                "I work as a nurse",
                "user",
                "job",
                "nurse",
                "states",
                "The user works as a nurse.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert_eq!(model.len(), 2, "{model:?}");
    let code = unproposed(&messages, &model, day("2026-12-05"));
    assert_eq!(code.len(), 1, "{code:?}");
    assert_eq!(code[0].text, "The user's storage box 1 label is L1x.");
    assert!(gives_way(&code[0], &model[0]));
    assert!(!gives_way(&code[0], &model[1]));
}

#[test]
fn the_code_reads_homes_corrections_and_a_colour_without_its_noun() {
    let messages = vec![
        Message::user("I live in Tallinn."),
        Message::user("We're in Ghent these days."),
        Message::user("I'm in Paris for work."),
        Message::user("We're in Rome for the weekend now and then."),
        Message::user("My cousin's wedding is in Lyon."),
        Message::user("No wait, the wedding is in Lyon after all."),
        Message::user("The wedding is in Lyon."),
        Message::user("其实我现在最喜欢靛青色了。"),
        Message::user("我最喜欢吃饺子。"),
        Message::user("My sister's home is in Porto."),
    ];
    let got = unproposed(&messages, &[], day("2026-12-05"));
    let seen: Vec<(usize, Kind, &str, &str)> = got
        .iter()
        .map(|c| (c.message, c.kind, c.text.as_str(), c.attribute_key.as_str()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (0, Kind::States, "The user lives in Tallinn.", "home city"),
            (1, Kind::Changes, "The user lives in Ghent.", "home city"),
            (
                4,
                Kind::States,
                "The user's cousin's wedding is in Lyon.",
                got[2].attribute_key.as_str()
            ),
            (5, Kind::Corrects, "The wedding is in Lyon.", "wed"),
            (
                7,
                Kind::Corrects,
                "用户最喜欢的颜色是靛青色。",
                "favourite colour"
            ),
        ]
    );
    assert!(got[2].attribute_key.ends_with("wed"), "{:?}", got[2]);
}

#[test]
fn what_the_user_says_of_themselves_is_theirs_whoever_the_model_named() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("assistant", "Melanie: Where do you live these days?", ts),
        msg("user", "Caroline: Oh, I live in Tallinn.", ts),
        msg(
            "user",
            "Caroline: Melanie, I love your painting of Tallinn.",
            ts,
        ),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "I live in Tallinn",
                "Melanie",
                "home city",
                "Tallinn",
                "states",
                "Melanie lives in Tallinn.",
            ),
            prop(
                "Melanie, I love your painting of Tallinn",
                "Melanie",
                "painting",
                "Tallinn",
                "states",
                "Melanie painted Tallinn.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(ok[0].subject_key, "user", "{:?}", ok[0]);
    assert!(!ok[0].text.contains("Melanie"), "{:?}", ok[0]);
    assert_eq!(ok[1].subject_key, "melanie", "{:?}", ok[1]);
}

#[test]
fn a_relation_is_read_from_the_message_when_the_quote_changed_it() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg("user", "我妹妹玛丽索尔住在瓦伦西亚。", ts)];
    let (ok, refused) = check(
        &[prop(
            "你妹妹玛丽索尔住在瓦伦西亚",
            "USER",
            "home city",
            "瓦伦西亚",
            "states",
            "用户住在瓦伦西亚。",
        )],
        &messages,
        day("2026-12-05"),
    );
    assert!(refused.is_empty(), "{refused:?}");
    assert_ne!(ok[0].subject_key, "user", "{:?}", ok[0]);
}

#[test]
fn a_chinese_home_is_written_with_zhu_zai() {
    assert_eq!(
        compose("user", "user", "home city", "根特", Kind::Changes, true).as_deref(),
        Some("用户住在根特。")
    );
    assert_eq!(
        compose("user", "user", "车位号码", "B7", Kind::States, true).as_deref(),
        Some("用户的车位号码是B7。")
    );
}

#[test]
fn a_guessed_relation_a_baseless_retraction_and_an_update_in_other_words() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![
        msg("user", "Caroline: I went to a support group yesterday.", ts),
        msg(
            "assistant",
            "Melanie: Here's a pic of my family camping at the beach.",
            ts,
        ),
        msg("user", "Update: my parking spot is now C9.", ts),
    ];
    let (ok, refused) = check(
        &[
            prop(
                "I went to a support group yesterday",
                "user",
                "gym locker number",
                "",
                "retracts",
                "The user asked to forget their gym locker number.",
            ),
            prop(
                "Here's a pic of my family camping at the beach",
                "Melanie (the user's sister)",
                "family camping",
                "family camping at the beach",
                "states",
                "The user's sister Melanie went family camping at the beach.",
            ),
            prop(
                "Update: my parking spot is now C9",
                "user",
                "parking",
                "updated to C9",
                "changes",
                "The user's parking spot has been updated to C9.",
            ),
        ],
        &messages,
        day("2026-12-05"),
    );
    // No words of forgetting, none of a locker: no retraction.
    assert!(ok.iter().all(|c| c.kind != Kind::Retracts), "{ok:?}");
    assert_eq!(refused.len(), 1, "{refused:?}");
    let melanie = ok.iter().find(|c| c.message == 1).unwrap();
    assert_eq!(melanie.subject_key, "melanie", "{melanie:?}");
    assert_eq!(melanie.text, "Melanie went family camping at the beach.");
    let parking = ok.iter().find(|c| c.message == 2).unwrap();
    assert_eq!(parking.text, "The user's parking spot is C9.");
    assert_eq!(parking.attribute_key, keys::attribute_key("parking spot").0);
}

#[test]
fn the_users_own_words_whatever_the_model_called_the_value() {
    let ts = "2026-12-05T10:00:00Z";
    let messages = vec![msg("user", "Update: my gym locker number is now 27.", ts)];
    for value in ["27", "updated to 27", "now 27", "locker number", ""] {
        let (ok, refused) = check(
            &[prop(
                "Update: my gym locker number is now 27.",
                "user",
                "gym",
                value,
                "changes",
                "The user's gym locker number has been updated to 27.",
            )],
            &messages,
            day("2026-12-05"),
        );
        assert!(refused.is_empty(), "{value:?}: {refused:?}");
        assert_eq!(
            ok[0].text, "The user's gym locker number is 27.",
            "{value:?}"
        );
        assert_eq!(ok[0].value, "27", "{value:?}");
        assert_eq!(ok[0].attribute, "gym locker number", "{value:?}");
    }
}
