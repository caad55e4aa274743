use super::*;

const FACTS: &str = "# Facts\n\n\
- The user's name is Rui. (f1; about user: name; since 2026-11-02)\n\
- Berlin is my home. (f6; about user: home city; since 2026-11-25)\n\
- The user's sister Ana lives in Madrid. (f9; about Ana: home city; since 2026-12-05)\n\
- Ana works as a doctor. (f10; about Ana: job; since 2026-12-05)\n\
\n\
## No longer true\n\
\n\
- ~~I live in Lisbon~~ (f2; since 2026-11-02; until 2026-11-25; superseded by f6)\n\
- ~~Lives in Porto.~~ (f3; since 2026-01-01; until 2026-11-02; superseded by f2)\n\
- ~~Has a dog.~~ (f5; until 2026-12-03; retracted)\n";

fn hit(citation: &str, score: f32) -> SearchHit {
    let (path, lines) = citation.split_once("#L").unwrap();
    let (a, b) = lines.split_once("-L").unwrap();
    SearchHit {
        path: path.into(),
        start_line: a.parse().unwrap(),
        end_line: b.parse().unwrap(),
        score,
        vector_score: None,
        text_score: None,
        snippet: String::new(),
        source: if path.starts_with("sessions/") {
            mnemo_index::Source::Sessions
        } else {
            mnemo_index::Source::Memory
        },
        citation: citation.into(),
        session_key: None,
        message_range: None,
        date: path.starts_with("sessions/").then(|| "2026-11-02".into()),
        trace: None,
    }
}

fn ordered(query: &str, hits: Vec<SearchHit>, as_of: Option<&str>) -> Vec<String> {
    let mut resp = SearchResponse {
        mode: mnemo_index::SearchMode::Hybrid,
        results: hits,
        warnings: Vec::new(),
        dates: Vec::new(),
        focus: None,
    };
    let facts = Facts::parse(FACTS);
    let as_of = as_of.map(|d| d.parse().unwrap());
    order_by_validity(&mut resp, query, &facts, &HashMap::new(), as_of);
    resp.results.into_iter().map(|h| h.citation).collect()
}

#[test]
fn words_keep_a_possessive_apart() {
    assert_eq!(
        words("Where's the user's sister?"),
        ["where", "'s", "the", "user", "'s", "sister"]
    );
    assert_eq!(words("Rui’s home"), ["rui", "'s", "home"]);
    assert_eq!(words("it's"), ["it", "'s"]);
    assert_eq!(words("states"), ["states"]);
    assert_eq!(subject_words("the user's sister"), ["user", "'s", "sister"]);
}

#[test]
fn a_query_names_whom_it_asks_about() {
    let file = FactsFile::parse(FACTS);
    assert_eq!(user_names(&file), ["rui"]);
    let q = |s: &str| Query::new(s, &file);
    assert!(q("where does the user live?").names("user"));
    assert!(q("which city does Rui live in now?").names("user"));
    assert!(!q("which city does Rui live in now?").names("Ana"));
    // The owner of someone else is not whom the query asks about; the
    // owner of one of their attributes is.
    assert!(!q("where does the user's sister live?").names("user"));
    assert!(q("where is the user's home?").names("user"));
    assert!(q("what is Ana's job?").names("Ana"));
    assert!(q("where does the user's sister live?").names("the user's sister"));
    assert!(q("用户住在哪里？").names("user"));
    assert!(!q("where do people live?").names("user"));
    // "I" is the user; "my sister" is not.
    assert!(q("where do I live?").names("user"));
    assert!(q("what is my name?").names("user"));
    assert!(!q("where does my sister live?").names("user"));
    assert_eq!(
        q("which city does Rui live in now?").attribute_words("home city"),
        1
    );
    assert_eq!(
        q("where does the user live?").attribute_words("home city"),
        0
    );
}

#[test]
fn a_current_fact_that_answers_leads_the_records_and_ended_ones_go_last() {
    let got = ordered(
        "where does the user live?",
        vec![
            hit("MEMORY.md#L1-L1", 0.9),
            hit("sessions/a.jsonl#L2-L2", 0.8),
            hit("memory/facts.md#L5-L5", 0.75),
            hit("memory/HISTORY.md#L1-L3", 0.7),
            hit("memory/facts.md#L10-L10", 0.69),
            hit("memory/facts.md#L6-L6", 0.3),
        ],
        None,
    );
    // f9 (L5) is within FACT_LEAD of the best: before the records, after
    // MEMORY.md, which the index put above both. f2 (L10) ended: last, and
    // it brings Berlin (f6, L4), which replaced it, with its score; the
    // query names the user, so the user's fact comes first. f10 (L6) does
    // not answer: it keeps its place.
    assert_eq!(
        got,
        [
            "MEMORY.md#L1-L1",
            "memory/facts.md#L4-L4",
            "memory/facts.md#L5-L5",
            "sessions/a.jsonl#L2-L2",
            "memory/HISTORY.md#L1-L3",
            "memory/facts.md#L6-L6",
            "memory/facts.md#L10-L10",
        ]
    );
    // Without facts that answer, the index's order stays.
    let got = ordered(
        "what did we say about the deploy key?",
        vec![
            hit("sessions/a.jsonl#L2-L2", 0.8),
            hit("memory/facts.md#L6-L6", 0.3),
            hit("memory/HISTORY.md#L1-L3", 0.2),
        ],
        None,
    );
    assert_eq!(
        got,
        [
            "sessions/a.jsonl#L2-L2",
            "memory/facts.md#L6-L6",
            "memory/HISTORY.md#L1-L3"
        ]
    );
}

#[test]
fn as_of_a_day_only_what_held_then_and_nothing_said_after() {
    let mut history = hit("memory/HISTORY.md#L5-L5", 0.5);
    history.snippet = "[2026-12-02 09:10] USER: I moved to Berlin".into();
    let mut older = hit("memory/HISTORY.md#L1-L1", 0.4);
    older.snippet = "[2026-11-02 09:10] USER: I live in Lisbon".into();
    let got = ordered(
        "where does the user live?",
        vec![
            hit("memory/facts.md#L4-L4", 0.9),
            hit("memory/facts.md#L10-L10", 0.8),
            history,
            older,
            hit("sessions/a.jsonl#L2-L2", 0.3),
        ],
        Some("2026-11-10"),
    );
    assert_eq!(
        got,
        [
            "memory/facts.md#L10-L10",
            "memory/HISTORY.md#L1-L1",
            "sessions/a.jsonl#L2-L2"
        ]
    );
}

#[test]
fn an_ended_fact_says_since_when_and_what_replaced_it() {
    let file = FactsFile::parse(FACTS);
    let v = fact_validity(file.get("f2").unwrap(), &file);
    assert!(!v.current);
    assert_eq!(v.until.as_deref(), Some("2026-11-25"));
    assert_eq!(
        v.replaced_by,
        Some(FactRef {
            id: "f6".into(),
            text: "Berlin is my home.".into(),
            current: true,
        })
    );
    assert_eq!(
        v.note.as_deref(),
        Some("no longer true since 2026-11-25, replaced by f6: Berlin is my home.")
    );
    // A replacement replaced in turn: what holds now is named too.
    let v = fact_validity(file.get("f3").unwrap(), &file);
    assert_eq!(
        v.note.as_deref(),
        Some(
            "no longer true since 2026-11-02, replaced by f2: I live in Lisbon \
             (itself no longer true; true now: f6: Berlin is my home.)"
        )
    );
    let v = fact_validity(file.get("f5").unwrap(), &file);
    assert!(v.retracted);
    assert_eq!(
        v.note.as_deref(),
        Some("no longer true: retracted on 2026-12-03")
    );
    let v = fact_validity(file.get("f6").unwrap(), &file);
    assert!(v.current && v.note.is_none() && v.replaced_by.is_none());
    assert_eq!(v.since.as_deref(), Some("2026-11-25"));
    // The JSON a hit carries.
    let json = serde_json::to_value(fact_validity(file.get("f2").unwrap(), &file)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "current": false, "id": "f2", "since": "2026-11-02", "until": "2026-11-25",
            "replaced_by": {"id": "f6", "text": "Berlin is my home.", "current": true},
            "note": "no longer true since 2026-11-25, replaced by f6: Berlin is my home."
        })
    );
}
