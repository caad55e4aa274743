//! End-to-end runs of the harness through the real session store, the real
//! SQLite index and (for vector modes) the real local model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mnemo_eval::{
    render_comparison, render_json, render_text, run_on_dataset, run_retrieval_eval, Dataset,
    EvalOptions, EvalProgress, EvalReport, EvalStage, EvalUnit, Layout, RetrievalMode,
};

/// Two conversations; in each, one turn carries a word found nowhere else.
const SMALL: &str = r#"{
  "dataset": "handmade", "language": "en",
  "source": {"category_names": {"1": "planted"}},
  "conversations": [
    {"conv_id": "a", "speakers": ["Ann", "Bob"], "sessions": [
      {"session_id": "s1", "date_time": "1:56 pm on 8 May, 2023", "turns": [
        {"turn_id": "a1", "speaker": "Ann", "text": "Good morning Bob, how was the weekend?"},
        {"turn_id": "a2", "speaker": "Bob", "text": "Quiet. I repaired the garden fence and read a novel about sailing."},
        {"turn_id": "a3", "speaker": "Ann", "text": "I spent Sunday baking sourdough bread with my sister."}]},
      {"session_id": "s2", "date_time": "2023-05-20", "turns": [
        {"turn_id": "a4", "speaker": "Bob", "text": "My new hobby is collecting zanzibarite crystals from the coast.", "image_caption": "a photo of purple crystals on a table"},
        {"turn_id": "a5", "speaker": "Ann", "text": "That sounds lovely, where do you keep them?"},
        {"turn_id": "a6", "speaker": "Bob", "text": "On a shelf above the piano in the living room."}]},
      {"session_id": "s3", "date_time": "someday", "turns": [
        {"turn_id": "a7", "speaker": "Ann", "text": "Our team finally shipped the billing migration at work."},
        {"turn_id": "a8", "speaker": "Bob", "text": "Congratulations, that took months of planning."}]}]},
    {"conv_id": "b", "speakers": ["Cleo", "Dan"], "sessions": [
      {"session_id": "s1", "date_time": "2023-06-01", "turns": [
        {"turn_id": "b1", "speaker": "Cleo", "text": "Dan, did you try the new ramen place downtown?"},
        {"turn_id": "b2", "speaker": "Dan", "text": "Not yet, I have been training for the marathon every evening."}]},
      {"session_id": "s2", "date_time": "2023-06-08", "turns": [
        {"turn_id": "b3", "speaker": null, "text": "Cleo: I adopted a tortoise called Quillfeather.\nDan: What a name!"},
        {"turn_id": "b4", "speaker": "Dan", "text": "My knee hurts after the long run on Saturday."}]}]}
  ],
  "questions": [
    {"qid": "qa1", "conv_id": "a", "question": "What are the zanzibarite crystals Bob collects?", "category": 1,
     "evidence_turns": ["a4"], "evidence_sessions": ["s2"]},
    {"qid": "qa2", "conv_id": "a", "question": "What did Ann bake on Sunday?", "category": "2",
     "evidence_turns": ["a3"], "evidence_sessions": ["s1"]},
    {"qid": "qa3", "conv_id": "a", "question": "Would Bob like opera?", "category": 3,
     "evidence_turns": [], "evidence_sessions": []},
    {"qid": "qb1", "conv_id": "b", "question": "What is the name of Cleo's tortoise Quillfeather?", "category": 1,
     "evidence_turns": ["b3"], "evidence_sessions": ["s2"]},
    {"qid": "qb2", "conv_id": "b", "question": "What is Dan training for?", "category": 2,
     "evidence_turns": ["b2", "b4"]},
    {"qid": "qx", "conv_id": "nowhere", "question": "Who?", "evidence_turns": ["z"]}
  ]
}"#;

fn small_dataset() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.json");
    std::fs::write(&path, SMALL).unwrap();
    (dir, path)
}

use mnemo_test_support::model_dir;

fn data_dir() -> PathBuf {
    let dir = std::env::var_os("MNEMO_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    assert!(
        dir.is_dir(),
        "benchmark data folder {} is missing: it must sit at ../shared/data beside the repository (or set MNEMO_DATA_DIR)",
        dir.display()
    );
    dir
}

fn assert_unit_interval(r: &EvalReport) {
    let mut all = vec![&r.overall];
    all.extend(r.per_category.iter().map(|c| &c.metrics));
    all.extend(r.questions.iter().map(|q| &q.metrics));
    for m in all {
        let mut n = 0;
        for (name, v) in m.iter() {
            if name.starts_with("auto_tokens@") {
                // A count of tokens, not a share.
                assert!(v >= 0.0, "{name} = {v}");
            } else {
                assert!((0.0..=1.0).contains(&v), "{name} = {v} outside [0, 1]");
            }
            n += 1;
        }
        // 24 of the ranking, 4 of the hits cut to each budget, and for
        // Markdown notes 10 of what automatic recall puts in the prompt
        // (its recall and tokens within each budget, and of whole files).
        let expected = match r.settings.layout {
            Layout::Sessions => 28,
            Layout::Notes => 38,
        };
        assert_eq!(n, expected, "every metric is reported");
    }
}

fn question<'a>(r: &'a EvalReport, qid: &str) -> &'a mnemo_eval::QuestionReport {
    r.questions
        .iter()
        .find(|q| q.qid == qid)
        .unwrap_or_else(|| panic!("{qid} not scored"))
}

fn small_chunks(opts: &mut EvalOptions) {
    // One message per chunk, so turn rankings are not ties inside a chunk.
    opts.index_settings.index.chunk_tokens = 16;
    opts.index_settings.index.chunk_overlap = 0;
}

#[test]
fn keyword_only_end_to_end() {
    let (_dir, path) = small_dataset();
    let events = Mutex::new(Vec::<EvalProgress>::new());
    let opts = EvalOptions::new(&path);
    let r = run_retrieval_eval(&opts, &|p| events.lock().unwrap().push(p.clone())).unwrap();

    assert_eq!(r.unit, EvalUnit::Session);
    assert_eq!(r.mode, RetrievalMode::Keyword);
    assert_eq!(r.index_mode, "keyword");
    assert_eq!(r.counts.conversations, 2);
    assert_eq!(r.counts.sessions, 5);
    assert_eq!(r.counts.turns, 12);
    assert_eq!(r.counts.questions_asked, 5);
    // qa3 has no evidence; qb2 has turns only, so its session evidence is derived.
    assert_eq!(r.counts.questions_scored, 4);
    assert_eq!(r.counts.questions_skipped_no_evidence, 1);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("1 questions name a conversation")),
        "{:?}",
        r.warnings
    );
    assert_unit_interval(&r);
    assert_eq!(question(&r, "qa1").first_evidence_rank, Some(1));
    assert_eq!(question(&r, "qb1").first_evidence_rank, Some(1));
    assert_eq!(
        question(&r, "qb2").evidence,
        vec!["s1".to_string(), "s2".to_string()]
    );
    assert_eq!(
        r.per_category
            .iter()
            .map(|c| c.category.as_str())
            .collect::<Vec<_>>(),
        vec!["1", "2"]
    );
    assert_eq!(r.per_category[0].label.as_deref(), Some("planted"));
    assert_eq!(r.per_category[0].metrics.get("any@1"), Some(1.0));

    let events = events.into_inner().unwrap();
    let last = events.last().unwrap();
    assert_eq!(last.stage, EvalStage::Finished);
    assert_eq!(last.conversations_done, 2);
    assert_eq!(last.questions_done, last.questions_total);

    let text = render_text(&r);
    assert!(text.contains("overall"), "{text}");
    assert!(text.contains("1 planted"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    for key in [
        "overall",
        "per_category",
        "questions",
        "unit",
        "mode",
        "settings",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["unit"], "session");
    assert_eq!(json["mode"], "keyword");
    assert_eq!(json["overall"]["any@1"].as_f64(), r.overall.get("any@1"));
    assert!(json["overall"].get("recall@500tok").is_some());
    assert!(json["overall"].get("recall@1000tok").is_some());
    assert!(json["per_category"]["1"].get("metrics").is_some());
}

#[test]
fn keyword_only_turn_units() {
    let (_dir, path) = small_dataset();
    let mut opts = EvalOptions::new(&path);
    opts.unit = EvalUnit::Turn;
    small_chunks(&mut opts);
    let r = run_retrieval_eval(&opts, &|_| {}).unwrap();
    assert_eq!(r.unit, EvalUnit::Turn);
    assert_eq!(r.counts.questions_scored, 4);
    assert_unit_interval(&r);
    assert_eq!(
        question(&r, "qa1").first_evidence_rank,
        Some(1),
        "{:?}",
        question(&r, "qa1")
    );
    assert_eq!(
        question(&r, "qb1").first_evidence_rank,
        Some(1),
        "{:?}",
        question(&r, "qb1")
    );
    assert_eq!(question(&r, "qa1").metrics.get("recall@1"), Some(1.0));
}

#[test]
fn markdown_notes_layout_maps_block_hits_to_turns() {
    let (_dir, path) = small_dataset();
    let mut opts = EvalOptions::new(&path);
    opts.layout = Layout::Notes;
    let run = |unit| {
        let mut o = opts.clone();
        o.unit = unit;
        run_retrieval_eval(&o, &|_| {}).unwrap()
    };
    let turns = run(EvalUnit::Turn);
    assert_eq!(turns.settings.layout, Layout::Notes);
    assert_eq!(turns.counts.questions_scored, 4);
    assert_unit_interval(&turns);
    // Each turn is a list item: the block holding the planted word is the
    // evidence turn itself (the heading travels with a session's first turn).
    for qid in ["qa1", "qb1", "qa2"] {
        let q = question(&turns, qid);
        assert_eq!(q.first_evidence_rank, Some(1), "{q:?}");
        assert_eq!(q.top_units[0], q.evidence[0], "{q:?}");
        assert_eq!(q.evidence_ranks.len(), q.evidence.len(), "{q:?}");
        assert_eq!(q.evidence_ranks[0], Some(1), "{q:?}");
    }
    // What automatic recall puts in the prompt holds the evidence, within
    // every budget and whole; the hits cut to a budget hold it too.
    for qid in ["qa1", "qb1", "qa2"] {
        let m = &question(&turns, qid).metrics;
        for name in ["auto@500tok", "auto@1000tok", "auto@whole", "fit@500tok"] {
            assert_eq!(m.get(name), Some(1.0), "{qid} {name}: {m:?}");
        }
        assert!(m.get("auto_tokens@whole").unwrap() > 0.0);
        assert!(m.get("auto_tokens@500tok").unwrap() <= 500.0);
    }
    let sessions = run(EvalUnit::Session);
    assert_eq!(question(&sessions, "qa1").top_units[0], "s2");
    assert_eq!(question(&sessions, "qb1").top_units[0], "s2");
    let json: serde_json::Value = serde_json::from_str(&render_json(&sessions)).unwrap();
    assert_eq!(json["settings"]["layout"], "notes");
    assert!(render_text(&sessions).contains("turns as Markdown notes"));
}

#[test]
fn limit_conversations_and_vector_mode_without_model() {
    let (_dir, path) = small_dataset();
    let mut opts = EvalOptions::new(&path);
    opts.limit_conversations = Some(1);
    let r = run_retrieval_eval(&opts, &|_| {}).unwrap();
    assert_eq!(r.counts.conversations, 1);
    assert_eq!(r.counts.questions_asked, 3);
    assert!(r.questions.iter().all(|q| q.conv_id == "a"));

    opts.mode = RetrievalMode::Hybrid;
    let e = run_retrieval_eval(&opts, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("needs an embedding model"), "{e}");
    assert_eq!(e.code(), mnemo_core::ErrorCode::InvalidInput);
}

#[test]
fn missing_or_bad_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let e =
        run_retrieval_eval(&EvalOptions::new(dir.path().join("none.json")), &|_| {}).unwrap_err();
    assert_eq!(e.code(), mnemo_core::ErrorCode::NotFound);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[1, 2]").unwrap();
    let e = run_retrieval_eval(&EvalOptions::new(&bad), &|_| {}).unwrap_err();
    assert!(e.to_string().contains("is not a benchmark file"), "{e}");
}

#[test]
fn all_modes_with_the_local_model() {
    let embedder = mnemo_embed::LocalEmbedder::load(&model_dir()).unwrap();
    let (_dir, path) = small_dataset();
    let ds = Dataset::load(&path).unwrap();
    let mut opts = EvalOptions::new(&path).with_embedder(Arc::new(embedder));
    small_chunks(&mut opts);
    let modes = [
        RetrievalMode::Keyword,
        RetrievalMode::Vector,
        RetrievalMode::Hybrid,
    ];
    let reports = run_on_dataset(
        &ds,
        &opts,
        &modes,
        &[EvalUnit::Session, EvalUnit::Turn],
        &|_| {},
    )
    .unwrap();
    assert_eq!(reports.len(), 6);
    for r in &reports {
        assert_unit_interval(r);
        assert_eq!(r.counts.questions_scored, 4);
        let want = match r.mode {
            RetrievalMode::Keyword => "keyword",
            RetrievalMode::Vector => "vector",
            _ => "hybrid",
        };
        assert_eq!(r.index_mode, want, "{:?}", r.warnings);
        assert_eq!(
            r.settings.embedder.is_some(),
            r.mode != RetrievalMode::Keyword
        );
    }
    let hybrid_session = reports
        .iter()
        .find(|r| r.mode == RetrievalMode::Hybrid && r.unit == EvalUnit::Session)
        .unwrap();
    assert_eq!(question(hybrid_session, "qa1").first_evidence_rank, Some(1));
    assert_eq!(question(hybrid_session, "qb1").first_evidence_rank, Some(1));
    let vector = reports
        .iter()
        .find(|r| r.mode == RetrievalMode::Vector)
        .unwrap();
    assert_eq!(vector.settings.index["search"]["text_weight"], 0.0);
    let table = render_comparison(&reports);
    assert!(
        table.contains("session vector") && table.contains("turn hybrid"),
        "{table}"
    );
}

#[test]
fn memorybank_zh_first_conversation_keyword_only() {
    let path = data_dir().join("memorybank_zh.json");
    let ds = Dataset::load(&path).unwrap();
    let first = &ds.conversations[0];
    let want_turns: usize = first.sessions.iter().map(|s| s.turns.len()).sum();
    let want_scored = ds
        .questions
        .iter()
        .filter(|q| q.conv_id == first.conv_id && !q.evidence_turns.is_empty())
        .count();
    let mut opts = EvalOptions::new(&path);
    opts.unit = EvalUnit::Turn;
    opts.limit_conversations = Some(1);
    let r = run_retrieval_eval(&opts, &|_| {}).unwrap();
    assert_eq!(r.counts.turns, want_turns);
    assert_eq!(r.counts.questions_scored, want_scored);
    assert!(want_scored > 0);
    assert_unit_interval(&r);
    // Chinese questions must find something through keywords alone.
    assert!(
        r.overall.get("any@50").unwrap() > 0.0,
        "{}",
        render_text(&r)
    );
    assert!(r.overall.get("mrr").unwrap() > 0.0, "{}", render_text(&r));
}
