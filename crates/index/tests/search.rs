//! Indexing and searching fixture workspaces with real SQLite and the real
//! local model: hybrid and keyword-only modes, CJK, the needle, transcripts,
//! damaged files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
mod common;

use common::{daily_log, e5_model, model, Fixture};
use mnemo_index::{IndexSettings, MemoryIndex, SearchMode, SearchRequest, Source};

fn open(f: &Fixture, with_model: bool) -> MemoryIndex {
    mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), with_model.then(model)).unwrap()
}

fn topic_fixture() -> Fixture {
    let f = Fixture::new();
    f.write("MEMORY.md", "# Core memory\n\n- The user is called Dana and lives in Porto.\n- Dana prefers tea over coffee.\n");
    f.write(
        "memory/people/lena.md",
        "# Lena\n\nLena has been taking piano lessons every Tuesday since March.\nShe is practising a Chopin nocturne for a recital.\n",
    );
    f.write(
        "memory/projects/garden.md",
        "# Garden\n\nPlanted tomatoes and basil on the balcony.\nThe irrigation timer runs at 6 am.\n",
    );
    f.write(
        "memory/2026-02-10.md",
        "# 2026-02-10\n\n- Car service booked for Friday at the dealership.\n",
    );
    f
}

#[test]
fn the_minimum_score_filters_unrelated_files_with_the_default_model() {
    // e5 gives unrelated texts cosines near 0.8: the minimum score must
    // judge the similarity above that background, not the raw cosine.
    let f = topic_fixture();
    let index =
        mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(e5_model())).unwrap();
    index.sync(&|_| {}).unwrap();
    let paths = |r: &mnemo_index::SearchResponse| {
        r.results.iter().map(|h| h.path.clone()).collect::<Vec<_>>()
    };
    let question = "which musical instrument is Lena learning?";
    let r = index.search(&SearchRequest::new(question)).unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert_eq!(paths(&r), ["memory/people/lena.md"], "{r:#?}");
    assert!(r.results[0].vector_score.unwrap() > 0.5);

    // With no minimum every file comes back, each with a cosine e5 calls
    // high: only the scale tells them apart.
    let all = index
        .search(&SearchRequest::new(question).min_score(0.0))
        .unwrap();
    let mut files = paths(&all);
    files.sort();
    files.dedup();
    assert_eq!(files.len(), 4, "{all:#?}");
    assert!(all.results.iter().all(|h| h.vector_score.unwrap() > 0.3));
}

#[test]
fn markdown_hits_are_single_blocks() {
    let f = topic_fixture();
    let index = open(&f, true);
    index.sync(&|_| {}).unwrap();
    let tea = || SearchRequest::new("does Dana prefer tea or coffee?").sources(&[Source::Memory]);
    let r = index.search(&tea()).unwrap();
    let top = &r.results[0];
    assert_eq!(top.path, "MEMORY.md");
    assert_eq!((top.start_line, top.end_line), (4, 4), "{r:#?}");
    assert_eq!(top.citation, "MEMORY.md#L4-L4");
    // An undated file has no date, and says nothing of one in JSON.
    assert_eq!(top.date, None);
    assert!(serde_json::to_value(top).unwrap().get("date").is_none());
    assert_eq!(top.snippet, "- Dana prefers tea over coffee.");
    assert_eq!(top.message_range, None);
    // The heading travels with the block under it, which follows as a
    // hit of its own.
    let all = index.search(&tea().min_score(0.0)).unwrap();
    let first = all
        .results
        .iter()
        .find(|h| h.path == "MEMORY.md" && h.start_line == 1)
        .expect("the first block");
    assert_eq!(first.end_line, 3);
    assert!(first.snippet.starts_with("# Core memory"), "{first:#?}");
    assert!(first.score < top.score);

    // Off: the whole chunk.
    let mut whole = IndexSettings::default();
    whole.search.block_hits = false;
    let chunks = mnemo_index_sqlite::open(&f.ws, whole, Some(model())).unwrap();
    let r = chunks.search(&tea()).unwrap();
    assert_eq!(
        (r.results[0].start_line, r.results[0].end_line),
        (1, 4),
        "{r:#?}"
    );
}

#[test]
fn hybrid_search_finds_by_meaning_and_cites_lines() {
    let f = topic_fixture();
    let index = open(&f, true);
    let report = index.sync(&|_| {}).unwrap();
    assert_eq!(report.indexed.len(), 4, "{report:?}");
    assert!(report.chunks_embedded >= 4);

    let r = index
        .search(&SearchRequest::new(
            "which musical instrument is Lena learning?",
        ))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid);
    let top = &r.results[0];
    assert_eq!(top.path, "memory/people/lena.md", "{r:#?}");
    assert_eq!(
        top.citation,
        format!(
            "memory/people/lena.md#L{}-L{}",
            top.start_line, top.end_line
        )
    );
    assert!(top.vector_score.unwrap() > 0.2);
    assert!(top.snippet.contains("piano"));
    assert_eq!(top.source, Source::Memory);

    // Purely semantic: no shared word with the garden note.
    let r = index
        .search(&SearchRequest::new("vegetables growing outside").min_score(0.0))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/projects/garden.md", "{r:#?}");

    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["mode"], "hybrid");
    assert!(json["results"][0].get("start_line").is_some());
    assert_eq!(json["results"][0]["source"], "memory");

    let st = index.status().unwrap();
    assert_eq!(
        (st.files, st.mode, st.dims, st.dirty),
        (4, SearchMode::Hybrid, Some(384), false)
    );
    assert_eq!(st.vectors, st.chunks);
}

#[test]
fn keyword_only_mode_is_stated_and_keyword_hits_pass_min_score() {
    let f = topic_fixture();
    let index = open(&f, false);
    index.sync(&|_| {}).unwrap();
    let r = index
        .search(&SearchRequest::new("irrigation timer").min_score(0.35))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Keyword);
    assert!(
        r.warnings.iter().any(|w| w.contains("keyword-only")),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.results[0].path, "memory/projects/garden.md");
    assert_eq!(r.results[0].vector_score, None);
    assert_eq!(r.results[0].text_score, Some(1.0));
    // OR semantics: one matching word out of three is enough.
    let r = index
        .search(&SearchRequest::new("piano xylophone zither").min_score(0.0))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/people/lena.md");
    let st = index.status().unwrap();
    assert_eq!(
        (st.mode, st.model, st.vectors),
        (SearchMode::Keyword, None, 0)
    );
    assert!(matches!(
        index.search(&SearchRequest::new("   ")),
        Err(e) if e.code() == mnemo_core::ErrorCode::InvalidInput
    ));
}

#[test]
fn two_character_cjk_word_found_in_both_modes() {
    let f = Fixture::new();
    f.write(
        "memory/zh/lessons.md",
        "# 日程\n\n我女儿每个星期二下午去上钢琴课，老师很严格。\n",
    );
    f.write(
        "memory/zh/food.md",
        "# 饮食\n\n昨天晚上我们在家里做了红烧肉和青菜汤。\n",
    );
    f.write(
        "memory/zh/work.md",
        "# 工作\n\n下个月公司要搬到新的办公室，离地铁站很近。\n",
    );
    for with_model in [false, true] {
        let index = open(&f, with_model);
        index.reindex(true, &|_| {}).unwrap();
        let r = index
            .search(&SearchRequest::new("钢琴").min_score(0.0))
            .unwrap();
        assert_eq!(
            r.results[0].path, "memory/zh/lessons.md",
            "model={with_model} {r:#?}"
        );
        assert!(r.results[0].text_score.is_some());
        let r = index
            .search(&SearchRequest::new("办公室").min_score(0.0))
            .unwrap();
        assert_eq!(r.results[0].path, "memory/zh/work.md", "model={with_model}");
    }
}

#[test]
fn needle_in_the_oldest_daily_log_survives_vectors_and_decay() {
    let f = Fixture::new();
    for i in 0..60 {
        let date =
            chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Duration::days(i as i64);
        let mut text = daily_log(i);
        if i == 0 {
            text.push_str("- The nightly deploy failed with ERR-4711 in the payment service.\n");
        }
        f.write(&format!("memory/{}.md", date.format("%Y-%m-%d")), text);
    }
    let mut settings = IndexSettings::default();
    settings.search.temporal_decay = true;
    settings.search.mmr = true;
    let index = mnemo_index_sqlite::open(&f.ws, settings, Some(model())).unwrap();
    index.sync(&|_| {}).unwrap();
    for q in [
        "ERR-4711",
        "err-4711",
        "what broke the deploy with ERR-4711?",
    ] {
        let r = index.search(&SearchRequest::new(q)).unwrap();
        assert_eq!(r.mode, SearchMode::Hybrid);
        assert_eq!(
            r.results.first().map(|h| h.path.as_str()),
            Some("memory/2026-01-01.md"),
            "query {q}: {r:#?}"
        );
        // A daily log speaks from the day in its name.
        assert_eq!(r.results[0].date.as_deref(), Some("2026-01-01"));
    }
}

#[test]
fn transcripts_are_indexed_with_message_ranges() {
    let f = Fixture::new();
    let mut lines = vec![
        r#"{"_type":"metadata","key":"telegram:42","created_at":"2026-03-01T10:00:00"}"#
            .to_string(),
    ];
    let msgs = [
        (
            "user",
            "Hi! I just adopted a border collie puppy named Biscuit.",
        ),
        ("assistant", "Congratulations! How old is Biscuit?"),
        (
            "user",
            "Twelve weeks. We start obedience classes next Saturday.",
        ),
        ("assistant", "Great, early training helps a lot."),
    ];
    for (i, (role, text)) in msgs.into_iter().enumerate() {
        // The reply with the puppy's age comes the next morning.
        let ts = if i < 2 {
            "2026-03-01T22:00:00"
        } else {
            "2026-03-02T08:00:00"
        };
        lines.push(serde_json::json!({"role": role, "content": text, "timestamp": ts}).to_string());
    }
    lines.insert(3, r#"{"role":"user","content":"torn li"#.to_string()); // malformed, skipped
    for i in 0..40 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        let text = format!("Message {i}: {}", common::TOPICS[i % common::TOPICS.len()]);
        lines.push(serde_json::json!({"role": role, "content": text}).to_string());
    }
    f.write("sessions/telegram_42.jsonl", lines.join("\n") + "\n");
    f.write("MEMORY.md", "# Core\n- nothing about dogs here\n");
    let mut settings = IndexSettings::default();
    settings.index.chunk_tokens = 64;
    let index = mnemo_index_sqlite::open(&f.ws, settings, Some(model())).unwrap();
    let report = index.sync(&|_| {}).unwrap();
    assert!(report
        .issues
        .iter()
        .any(|i| i.path == "sessions/telegram_42.jsonl" && i.message.contains("malformed")));

    // The puppy question, over transcripts only.
    let puppy =
        || SearchRequest::new("what is the name of the puppy?").sources(&[Source::Sessions]);
    let r = index.search(&puppy()).unwrap();
    // Hits are single messages: the one that names the puppy comes first,
    // cited by its own JSONL line (the first message is on line 2).
    let top = &r.results[0];
    assert_eq!(top.source, Source::Sessions);
    assert_eq!(top.session_key.as_deref(), Some("telegram:42"));
    assert_eq!(top.message_range, Some((0, 0)), "{top:#?}");
    assert_eq!(
        top.snippet,
        "User: Hi! I just adopted a border collie puppy named Biscuit."
    );
    assert_eq!((top.start_line, top.end_line), (2, 2));
    assert!(
        top.citation.ends_with("telegram_42.jsonl#L2-L2"),
        "{}",
        top.citation
    );
    // When it was said: the message's day.
    assert_eq!(top.date.as_deref(), Some("2026-03-01"));
    let json = serde_json::to_value(top).unwrap();
    assert_eq!(json["date"], "2026-03-01");
    // Its chunk's other messages score lower: with no minimum score they
    // follow as hits of their own; below a minimum (0.3) they are left out,
    // while the best message stays.
    let all = index.search(&puppy().min_score(0.0)).unwrap();
    assert_eq!(all.results[0].message_range, Some((0, 0)));
    let second = all
        .results
        .iter()
        .find(|h| h.message_range == Some((1, 1)))
        .expect("the reply is a hit of its own");
    assert!(second.score < all.results[0].score);
    assert!(second.score < 0.3, "{second:#?}");
    let strict = index.search(&puppy().min_score(0.3)).unwrap();
    assert_eq!(strict.results[0].message_range, Some((0, 0)));
    assert!(
        strict
            .results
            .iter()
            .all(|h| h.message_range != Some((1, 1))),
        "{strict:#?}"
    );
    assert_eq!(
        second.snippet,
        "Assistant: Congratulations! How old is Biscuit?"
    );
    // The answer to a question is found with it: "Twelve weeks." shares no
    // word with the query but replies to the message that matches it.
    let age = || SearchRequest::new("how old is Biscuit?").sources(&[Source::Sessions]);
    let r = index.search(&age()).unwrap();
    let ranges: Vec<_> = r.results.iter().map(|h| h.message_range).collect();
    assert_eq!(ranges[..2], [Some((1, 1)), Some((2, 2))], "{r:#?}");
    assert_eq!(r.results[1].score, r.results[0].score);
    assert!(r.results[1].snippet.starts_with("User: Twelve weeks."));
    // Each message hit has its own day, though its chunk spans two.
    assert_eq!(r.results[0].date.as_deref(), Some("2026-03-01"));
    assert_eq!(r.results[1].date.as_deref(), Some("2026-03-02"));
    let mut no_lift = IndexSettings::default();
    no_lift.index.chunk_tokens = 64;
    no_lift.search.answer_lift = 0.0;
    let plain = mnemo_index_sqlite::open(&f.ws, no_lift, Some(model())).unwrap();
    let r = plain.search(&age().min_score(0.0)).unwrap();
    let answer = r
        .results
        .iter()
        .position(|h| h.message_range == Some((2, 2)));
    assert!(answer.is_some_and(|i| i > 1), "{r:#?}");
    // Whole chunks when message hits are off.
    let mut whole = IndexSettings::default();
    whole.index.chunk_tokens = 64;
    whole.search.message_hits = false;
    let chunks = mnemo_index_sqlite::open(&f.ws, whole, Some(model())).unwrap();
    let r = chunks.search(&puppy()).unwrap();
    let top = &r.results[0];
    let (a, b) = top.message_range.unwrap();
    assert_eq!(a, 0, "{top:#?}");
    assert!((1..44).contains(&b));
    assert!(
        top.snippet.starts_with("User: Hi! I just adopted"),
        "{}",
        top.snippet
    );
    assert_eq!(top.start_line, 2);
    assert!(top.end_line > 2);
    // A whole chunk speaks from all its messages' days.
    assert_eq!(top.date.as_deref(), Some("2026-03-01/2026-03-02"));
    // A later message: ordinal 42 is "Message 38" (4 messages + 38 before it),
    // on line 45 (the metadata record and the torn line hold lines too).
    let r = index
        .search(
            &SearchRequest::new("Message 38")
                .sources(&[Source::Sessions])
                .min_score(0.0),
        )
        .unwrap();
    let hit = r
        .results
        .iter()
        .find(|h| h.snippet.contains("Message 38:"))
        .expect("message 38 found");
    assert_eq!(hit.message_range, Some((42, 42)), "{hit:#?}");
    assert_eq!((hit.start_line, hit.end_line), (45, 45));
    // Memory-only filter excludes the transcript.
    let r = index
        .search(
            &SearchRequest::new("puppy Biscuit")
                .sources(&[Source::Memory])
                .min_score(0.0),
        )
        .unwrap();
    assert!(r.results.iter().all(|h| h.source == Source::Memory));
}

#[test]
fn damaged_files_are_indexed_or_reported_without_aborting() {
    let f = Fixture::new();
    let mut bad = b"# Notes\n\nThe locker code is 4417 \xff\xfe and the wifi is ".to_vec();
    bad.extend_from_slice("caf\u{e9}-guest\n".as_bytes());
    f.write("memory/bad-utf8.md", bad);
    f.write(
        "memory/front.md",
        "---\ntype: preference\nname: [unclosed\n\nDana likes jasmine tea.\n",
    );
    f.write("memory/ok.md", "# Fine\nAll good here.\n");
    let index = open(&f, false);
    let report = index.sync(&|_| {}).unwrap();
    assert_eq!(report.indexed.len(), 3, "{report:#?}");
    assert!(report
        .issues
        .iter()
        .any(|i| i.path == "memory/bad-utf8.md" && i.message.contains("UTF-8")));
    assert!(report
        .issues
        .iter()
        .any(|i| i.path == "memory/front.md" && i.message.contains("front matter")));
    let r = index
        .search(&SearchRequest::new("locker code").min_score(0.0))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/bad-utf8.md");
    let r = index
        .search(&SearchRequest::new("jasmine").min_score(0.0))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/front.md");
}

#[test]
fn cjk_queries_skip_the_vectors_of_an_english_only_model_and_say_so() {
    use mnemo_embed::{LocalEmbedder, LocalModelSpec};
    let f = Fixture::new();
    f.write(
        "memory/zh/lessons.md",
        "# 日程\n\n我女儿每个星期二下午去上钢琴课，老师很严格。\n",
    );
    f.write(
        "memory/en/garden.md",
        "# Garden\n\nPlanted tomatoes and basil on the balcony.\n",
    );
    let spec = LocalModelSpec {
        multilingual: Some(false),
        ..LocalModelSpec::from_path(common::model_dir())
    };
    let english_only =
        std::sync::Arc::new(LocalEmbedder::load_with(&common::model_dir(), &spec).unwrap());
    let index =
        mnemo_index_sqlite::open(&f.ws, IndexSettings::default(), Some(english_only)).unwrap();
    index.reindex(true, &|_| {}).unwrap();
    let r = index
        .search(&SearchRequest::new("女儿的钢琴课").min_score(0.0))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Keyword, "{r:#?}");
    assert!(
        r.warnings.iter().any(|w| w.contains("knows English only")),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.results[0].path, "memory/zh/lessons.md");
    assert!(r.results[0].vector_score.is_none());
    // English queries keep both sides.
    let r = index
        .search(&SearchRequest::new("herbs growing on the balcony").min_score(0.0))
        .unwrap();
    assert_eq!(r.mode, SearchMode::Hybrid, "{r:#?}");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // A multilingual (or unknown) model keeps vectors for CJK queries.
    let index = open(&f, true);
    let r = index
        .search(&SearchRequest::new("女儿的钢琴课").min_score(0.0))
        .unwrap();
    let expected = match common::model().multilingual() {
        Some(false) => SearchMode::Keyword,
        _ => SearchMode::Hybrid,
    };
    assert_eq!(r.mode, expected);
}

/// A session log of `(role, text)` turns, every message stamped `ts`.
fn session_log(key: &str, ts: &str, turns: &[(&str, &str)]) -> String {
    let mut lines =
        vec![serde_json::json!({"_type": "metadata", "key": key, "created_at": ts}).to_string()];
    for (role, text) in turns {
        lines.push(serde_json::json!({"role": role, "content": text, "timestamp": ts}).to_string());
    }
    lines.join("\n") + "\n"
}

fn hikes_fixture() -> Fixture {
    let f = Fixture::new();
    // September matches the words better; only its date sets June apart.
    f.write(
        "sessions/cli_june.jsonl",
        session_log(
            "cli:june",
            "2023-06-04T18:00:00",
            &[
                (
                    "user",
                    "Yesterday we hiked up to the lake above the village.",
                ),
                ("assistant", "Sounds lovely. Was the trail busy?"),
            ],
        ),
    );
    f.write(
        "sessions/cli_september.jsonl",
        session_log(
            "cli:september",
            "2023-09-20T18:00:00",
            &[
                (
                    "user",
                    "We hiked the ridge trail again; the hike took five hours.",
                ),
                ("assistant", "A long hike. How were your knees?"),
            ],
        ),
    );
    f.write(
        "memory/2023-06-12.md",
        "# 2023-06-12\n\n- Booked the dentist.\n",
    );
    f.write(
        "memory/2023-09-21.md",
        "# 2023-09-21\n\n- Hike photos sorted; the hike album is done.\n",
    );
    f.write(
        "memory/2023-06-05.md",
        "# 2023-06-05\n\n- Sorted the hike photos into an album.\n",
    );
    // Undated notes on other things, so hiking words stay rare enough to count.
    for (i, topic) in common::TOPICS.iter().enumerate() {
        f.write(
            &format!("memory/notes/{i}.md"),
            format!("# Note\n\n{topic}\n"),
        );
    }
    f
}

#[test]
fn dates_in_the_query_lift_what_was_said_then() {
    let f = hikes_fixture();
    for with_model in [false, true] {
        let index = open(&f, with_model);
        index.sync(&|_| {}).unwrap();
        let first = |q: &str, source: Source| {
            let r = index
                .search(&SearchRequest::new(q).max_results(10).sources(&[source]))
                .unwrap();
            r.results.first().map(|h| h.path.clone())
        };
        let r = index
            .search(&SearchRequest::new("where did we hike on 3 June 2023?"))
            .unwrap();
        assert_eq!(r.dates, ["2023-06-03"]);
        // Each hit says how its score was made: the June hike was lifted
        // for the day, the September one was not.
        let trace = |path: &str| {
            r.results
                .iter()
                .find(|h| h.path == path)
                .and_then(|h| h.trace)
                .unwrap()
        };
        assert!(trace("sessions/cli_june.jsonl").date > 0.0, "{r:#?}");
        assert!(trace("sessions/cli_june.jsonl").fused > 0.0, "{r:#?}");
        if let Some(sept) = r
            .results
            .iter()
            .find(|h| h.path == "sessions/cli_september.jsonl")
        {
            assert_eq!(sept.trace.unwrap().date, 0.0, "{r:#?}");
        }
        let r = index
            .search(&SearchRequest::new("where did we hike?"))
            .unwrap();
        assert!(r.dates.is_empty());
        assert!(r
            .results
            .iter()
            .all(|h| h.trace.is_some_and(|t| t.date == 0.0)));
        for q in [
            "where did we hike on 3 June 2023?",
            "where did we hike in June?",
            "where did we hike on 2023-06-03",
            "我们6月3日去哪里hike了",
        ] {
            assert_eq!(
                first(q, Source::Sessions).as_deref(),
                Some("sessions/cli_june.jsonl"),
                "{q} (model: {with_model})"
            );
            assert_eq!(
                first(q, Source::Memory).as_deref(),
                Some("memory/2023-06-05.md"),
                "{q} (model: {with_model})"
            );
        }
        // A date alone finds what was said then.
        for q in [
            "what did we talk about on 4 June 2023?",
            "what happened in June?",
            "De quoi avons-nous parlé le 4 juin 2023 ?",
            "Worüber haben wir am 4. Juni 2023 gesprochen?",
        ] {
            assert_eq!(
                first(q, Source::Sessions).as_deref(),
                Some("sessions/cli_june.jsonl"),
                "{q} (model: {with_model})"
            );
        }
        // Without a date, or with the boost off, the better words win.
        assert_eq!(
            first("where did we hike?", Source::Sessions).as_deref(),
            Some("sessions/cli_september.jsonl")
        );
    }
    let mut settings = IndexSettings::default();
    settings.search.date_boost = 0.0;
    let index = mnemo_index_sqlite::open(&f.ws, settings, None).unwrap();
    let r = index
        .search(
            &SearchRequest::new("where did we hike on 3 June 2023?").sources(&[Source::Sessions]),
        )
        .unwrap();
    assert_eq!(r.results[0].path, "sessions/cli_september.jsonl", "{r:#?}");
    assert!(r.results.iter().all(|h| (0.0..=1.0).contains(&h.score)));
}

#[test]
fn a_date_never_buries_an_exact_identifier() {
    let f = hikes_fixture();
    f.write(
        "memory/2023-09-22.md",
        "# 2023-09-22\n\n- The photo upload failed with ERR-4711.\n",
    );
    let index = open(&f, true);
    index.sync(&|_| {}).unwrap();
    let r = index
        .search(&SearchRequest::new(
            "ERR-4711 with the hike photos on 5 June 2023",
        ))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/2023-09-22.md", "{r:#?}");
    assert!(r.results.iter().all(|h| (0.0..=1.0).contains(&h.score)));
}

/// Secrets said in a session reach neither the keyword index nor the
/// snippets; the session log itself keeps them, and turning redaction off
/// (a full rebuild) indexes them as written.
#[test]
fn secrets_in_transcripts_are_redacted_in_the_index_only() {
    let f = Fixture::new();
    let key = "sk-proj-Zq8vN3kT5rX1wY7uB2mC4dE6fG9hJ0aL";
    let log = session_log(
        "cli:ops",
        "2026-05-04T09:00:00",
        &[
            (
                "user",
                &format!("Here is the billing API key for the invoice job: {key}"),
            ),
            (
                "assistant",
                "Noted. The invoice job reads it from postgres://billing:Pa55w0rd-x@db:5432/inv as well.",
            ),
        ],
    );
    f.write("sessions/cli_ops.jsonl", &log);
    let index = open(&f, false);
    index.sync(&|_| {}).unwrap();

    let hits = index
        .search(&SearchRequest::new("billing invoice job"))
        .unwrap();
    let snippets: String = hits.results.iter().map(|r| r.snippet.as_str()).collect();
    assert!(snippets.contains("invoice job"), "{hits:?}");
    assert!(snippets.contains("[redacted]"), "{snippets}");
    assert!(
        !snippets.contains(key) && !snippets.contains("Pa55w0rd"),
        "{snippets}"
    );
    let by_secret = index.search(&SearchRequest::new(key)).unwrap();
    assert!(
        by_secret.results.iter().all(|r| !r.snippet.contains(key)),
        "{by_secret:?}"
    );
    let on_disk = std::fs::read_to_string(f.ws.root().join("sessions/cli_ops.jsonl")).unwrap();
    assert!(on_disk.contains(key), "the log keeps every word");

    let mut settings = IndexSettings::default();
    settings.index.redact_transcripts = false;
    let plain = mnemo_index_sqlite::open(&f.ws, settings, None).unwrap();
    assert!(plain.sync(&|_| {}).unwrap().full_rebuild);
    let hits = plain
        .search(&SearchRequest::new("billing invoice job"))
        .unwrap();
    assert!(
        hits.results.iter().any(|r| r.snippet.contains(key)),
        "{hits:?}"
    );
}

/// With `phrase_weight`, the chunk where the query's words stand side by
/// side ("ice cream") outranks one that has the same words apart.
#[test]
fn words_side_by_side_count_with_phrase_weight() {
    let f = Fixture::new();
    f.write(
        "memory/apart.md",
        "# Apart\n\nWe need ice for the cooler and cream for the coffee; more ice, more cream.\n",
    );
    f.write(
        "memory/together.md",
        "# Together\n\nNate makes coconut milk ice cream on Sundays, and his kids love it a lot.\n",
    );
    for (i, topic) in common::TOPICS.iter().enumerate() {
        f.write(
            &format!("memory/notes/{i}.md"),
            format!("# Note\n\n{topic}\n"),
        );
    }
    let first = |weight: f32| {
        let mut settings = IndexSettings::default();
        settings.search.phrase_weight = weight;
        let index = mnemo_index_sqlite::open(&f.ws, settings, None).unwrap();
        index.sync(&|_| {}).unwrap();
        let r = index
            .search(&SearchRequest::new("ice cream").max_results(3))
            .unwrap();
        r.results[0].path.clone()
    };
    assert_eq!(first(0.0), "memory/apart.md");
    assert_eq!(first(1.0), "memory/together.md");
}

/// Queries are user text, not FTS5 syntax: quotes, operators, column
/// filters, brackets, stars, identifiers, CJK and emoji in any mix must
/// search (or, when nothing searchable is left, say so), never fail on
/// SQLite's query parser.
#[test]
fn any_query_text_searches_without_a_syntax_error() {
    let f = topic_fixture();
    let keyword = open(&f, false);
    keyword.sync(&|_| {}).unwrap();
    let hybrid = open(&f, true);
    hybrid.sync(&|_| {}).unwrap();
    let pieces = [
        "\"",
        "\"piano",
        "lessons\"",
        "*",
        "piano*",
        "NEAR(",
        "NEAR/2",
        "AND",
        "OR",
        "NOT",
        "-",
        "^",
        "text:",
        "path:",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "ERR-4711",
        "c++",
        "a.b.c",
        "'",
        "\\",
        "%",
        "_",
        "钢琴",
        "学钢琴课",
        "😀",
        "Lena",
        "tea",
        "?",
        "!",
        ";",
        "--",
        "/*",
        "*/",
        "0x1F",
        "2026-02-10",
        "yesterday",
        "on 3 June",
        ",",
        ":",
        "+",
        "Ω",
    ];
    let mut rng = mnemo_test_support::XorShift::new(0x51_7cc1_b727_220a_u64);
    for round in 0..400 {
        let sep = if rng.below(3) == 0 { "" } else { " " };
        let query: Vec<&str> = (0..1 + rng.below(6)).map(|_| rng.pick(&pieces)).collect();
        let query = query.join(sep);
        let index = if round % 4 == 0 { &hybrid } else { &keyword };
        match index.search(&SearchRequest::new(&query).min_score(0.0)) {
            Ok(r) => assert!(r.results.len() <= 6, "{query:?}: {r:#?}"),
            Err(e) => panic!("query {query:?} failed: {e}"),
        }
    }
    // Words found inside operator-looking text still find their file.
    let r = keyword
        .search(&SearchRequest::new("\"piano* AND (lessons) NOT:"))
        .unwrap();
    assert_eq!(r.results[0].path, "memory/people/lena.md", "{r:#?}");
}

/// A long dialogue in Chinese: every turn before the last is chat about
/// other things, and the last asks about the cherry blossoms in the park.
fn chat_about_the_park() -> String {
    let filler = [
        "张曼婷: 今天工作特别忙，开了一整天的会，午饭都没有时间好好吃，晚上还要继续整理报告和表格。",
        "AI: 辛苦了！忙碌的时候也要记得休息，喝点水，站起来走一走，照顾好自己的身体和心情。",
        "张曼婷: 是啊，最近天气也变冷了，早上起床特别困难，地铁上人又多，每天通勤都觉得很累。",
        "AI: 天冷的时候可以多穿一点，早点睡觉，周末的时候好好放松一下，看看电影或者听听音乐。",
    ];
    let mut q = filler.join("\n");
    q.push_str("\n张曼婷: 对了，你还记得我上次说在绿禾公园看到的樱花吗？");
    q
}

#[test]
fn a_dialogue_is_searched_for_its_latest_turn() {
    // Keyword-only, so the test is about reading the query: searched as one
    // text, the keyword side kept only the first 64 tokens (CJK pairs) of
    // the oldest turns and lost the question at the end.
    let f = Fixture::new();
    f.write(
        "memory/2023-04-28.md",
        "# 2023-04-28\n\n- 张曼婷在绿禾公园看到了盛开的樱花和一只可爱的松鼠。\n",
    );
    f.write(
        "memory/2023-05-02.md",
        "# 2023-05-02\n\n- 张曼婷最近工作很忙，每天开会，通勤很累，天气变冷了。\n",
    );
    let search = |focus: f32| {
        let mut s = IndexSettings::default();
        s.search.dialogue_focus = focus;
        let index = mnemo_index_sqlite::open(&f.ws, s, None).unwrap();
        index.sync(&|_| {}).unwrap();
        index
            .search(&SearchRequest::new(chat_about_the_park()).min_score(0.0))
            .unwrap()
    };
    let read_as_dialogue = search(0.5);
    assert_eq!(
        read_as_dialogue.results[0].path, "memory/2023-04-28.md",
        "{read_as_dialogue:#?}"
    );
    let read_as_one_text = search(0.0);
    assert_ne!(
        read_as_one_text.results.first().map(|h| h.path.as_str()),
        Some("memory/2023-04-28.md"),
        "{read_as_one_text:#?}"
    );
}

#[test]
fn a_dialogue_s_vectors_weigh_its_latest_turn() {
    // With the model: the whole chat is about work and weather, only the
    // last turn about the park; the focus finds the park.
    let f = Fixture::new();
    f.write(
        "memory/people/emily.md",
        "# Emily\n\n- Emily saw cherry blossoms and a squirrel in Green Meadow Park.\n",
    );
    f.write(
        "memory/work.md",
        "# Work\n\n- Emily's job is busy: long meetings, reports, a tiring commute in the cold.\n",
    );
    let q = "Emily: Work was so busy today, meetings all day and reports tonight.\n\
             AI: Take breaks and drink some water.\n\
             Emily: The commute was cold and tiring too.\n\
             AI: Rest well this weekend.\n\
             Emily: By the way, do you remember what I saw in the park?";
    let search = |focus: f32| {
        let mut s = IndexSettings::default();
        s.search.dialogue_focus = focus;
        let index = mnemo_index_sqlite::open(&f.ws, s, Some(model())).unwrap();
        index.sync(&|_| {}).unwrap();
        index.search(&SearchRequest::new(q).min_score(0.0)).unwrap()
    };
    let r = search(0.5);
    assert_eq!(r.mode, SearchMode::Hybrid);
    assert_eq!(r.results[0].path, "memory/people/emily.md", "{r:#?}");
    let whole = search(0.0);
    assert_eq!(whole.results[0].path, "memory/work.md", "{whole:#?}");
}

/// A request's mode picks the signals: keywords alone, vectors alone, or
/// both fused; the answer says which ran.
#[test]
fn a_request_picks_keyword_vector_or_hybrid_search() {
    let f = topic_fixture();
    let index = open(&f, true);
    index.sync(&|_| {}).unwrap();
    let ask = |q: &str, mode: Option<SearchMode>| {
        let mut req = SearchRequest::new(q).min_score(0.0);
        req.mode = mode;
        index.search(&req).unwrap()
    };
    let hybrid = ask("irrigation timer", None);
    assert_eq!(hybrid.mode, SearchMode::Hybrid);
    assert!(hybrid.results[0].vector_score.is_some() && hybrid.results[0].text_score.is_some());
    let keyword = ask("irrigation timer", Some(SearchMode::Keyword));
    assert_eq!(keyword.mode, SearchMode::Keyword);
    assert_eq!(keyword.results[0].path, "memory/projects/garden.md");
    assert!(
        keyword.results.iter().all(|h| h.vector_score.is_none()),
        "{keyword:#?}"
    );
    // No shared word: only the vectors find the garden.
    let vector = ask("vegetables growing outside", Some(SearchMode::Vector));
    assert_eq!(vector.mode, SearchMode::Vector);
    assert_eq!(
        vector.results[0].path, "memory/projects/garden.md",
        "{vector:#?}"
    );
    assert!(
        vector.results.iter().all(|h| h.text_score.is_none()),
        "{vector:#?}"
    );
    assert_eq!(serde_json::to_value(&vector).unwrap()["mode"], "vector");

    // Without a model, a vector search answers by keywords, and says so.
    let plain = open(&f, false);
    let mut req = SearchRequest::new("irrigation timer");
    req.mode = Some(SearchMode::Vector);
    let r = plain.search(&req).unwrap();
    assert_eq!(r.mode, SearchMode::Keyword);
    assert_eq!(r.results[0].path, "memory/projects/garden.md");
}

/// A query read as dialogue names its focus; any other query has none.
#[test]
fn a_dialogue_query_names_its_focus() {
    let f = topic_fixture();
    let index = open(&f, false);
    index.sync(&|_| {}).unwrap();
    let r = index
        .search(&SearchRequest::new(
            "Dana: The weather was awful all week.\nAI: Sorry to hear that.\nDana: Who is practising a Chopin nocturne?",
        ))
        .unwrap();
    assert_eq!(
        r.focus.as_deref(),
        Some("Who is practising a Chopin nocturne?")
    );
    assert_eq!(r.results[0].path, "memory/people/lena.md", "{r:#?}");
    let plain = index
        .search(&SearchRequest::new("Chopin nocturne"))
        .unwrap();
    assert_eq!(plain.focus, None);
    assert!(serde_json::to_value(&plain).unwrap().get("focus").is_none());
}

/// A request's expansions (a model's hypothetical answer) are searched
/// beside the query: a note that shares neither words nor much meaning
/// with the question is found when the expansion names it, dates are still
/// read from the query alone, and `expansion_weight = 0` ignores
/// expansions.
#[test]
fn expansions_reach_what_the_question_does_not_name() {
    let f = Fixture::new();
    f.write(
        "memory/school.md",
        "# School\n\nMelanie said the activities of the school fair were a success for the kids.\n",
    );
    f.write(
        "memory/weekend.md",
        "# Weekend\n\nMelanie fired her first bowl at the pottery studio and went camping by the lake.\n",
    );
    let question = "What activities does Melanie partake in?";
    let answer = "Melanie enjoys pottery, painting and camping trips in June 2023.";
    let found = |settings: IndexSettings, expansions: Vec<String>| {
        let index = mnemo_index_sqlite::open(&f.ws, settings, Some(model())).unwrap();
        index.sync(&|_| {}).unwrap();
        let r = index
            .search(&SearchRequest::new(question).expansions(expansions))
            .unwrap();
        assert_eq!(r.mode, SearchMode::Hybrid, "{r:#?}");
        assert!(
            r.dates.is_empty(),
            "the answer's date is not the question's: {r:#?}"
        );
        r.results.iter().map(|h| h.path.clone()).collect::<Vec<_>>()
    };
    let weekend = "memory/weekend.md".to_string();
    let alone = found(IndexSettings::default(), Vec::new());
    assert!(!alone.contains(&weekend), "{alone:?}");
    let expanded = found(IndexSettings::default(), vec![answer.into(), "  ".into()]);
    assert!(expanded.contains(&weekend), "{expanded:?}");
    let mut off = IndexSettings::default();
    off.search.expansion_weight = 0.0;
    assert_eq!(found(off, vec![answer.into()]), alone);
    let mut bad = IndexSettings::default();
    bad.search.expansion_weight = 1.0;
    assert!(
        bad.validate().is_err(),
        "the query itself must weigh something"
    );
}
