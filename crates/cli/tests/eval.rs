//! `mnemo eval retrieval` through the real binary: keyword mode on a small
//! handmade file, and `--rerank`, which asks the configured chat model (a
//! scripted OpenAI-compatible server on loopback) to order each question's
//! hits; `mnemo eval consolidation` with the local SmolLM2 model, and on a
//! file without reference answers with the rule-based model; and
//! `mnemo eval write-path` against the rule-based model served on loopback,
//! whose numbers on a handmade conversation follow from the script.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::Value;

/// One conversation, six sessions, three of them about Sunday baking; the
/// question's evidence is session s1.
const DATA: &str = r#"{
  "dataset": "handmade", "language": "en",
  "conversations": [
    {"conv_id": "a", "speakers": ["Ann", "Bob"], "sessions": [
      {"session_id": "s1", "date_time": "2023-05-08", "turns": [
        {"turn_id": "a1", "speaker": "Ann", "text": "I spent Sunday baking sourdough bread with my sister."}]},
      {"session_id": "s2", "date_time": "2023-05-20", "turns": [
        {"turn_id": "a2", "speaker": "Bob", "text": "Ann, my sister says your bread was the best she had on Sunday."}]},
      {"session_id": "s3", "date_time": "2023-06-01", "turns": [
        {"turn_id": "a3", "speaker": "Ann", "text": "No baking this Sunday, Bob."}]},
      {"session_id": "s4", "date_time": "2023-06-10", "turns": [
        {"turn_id": "a4", "speaker": "Bob", "text": "The garden fence needs a new coat of paint."}]},
      {"session_id": "s5", "date_time": "2023-06-12", "turns": [
        {"turn_id": "a5", "speaker": "Bob", "text": "I finished the novel about sailing to Lisbon."}]},
      {"session_id": "s6", "date_time": "2023-06-14", "turns": [
        {"turn_id": "a6", "speaker": "Bob", "text": "Work was busy; we shipped the billing migration."}]}]}
  ],
  "questions": [
    {"qid": "q1", "conv_id": "a", "question": "What did Ann bake with her sister on Sunday?",
     "evidence_turns": ["a1"], "evidence_sessions": ["s1"]}
  ]
}"#;

fn eval(ws: &Path, file: &Path, extra: &[String]) -> Value {
    let mut args = vec![
        "--set",
        "embedder.kind=none",
        "eval",
        "retrieval",
        file.to_str().unwrap(),
        "--mode",
        "keyword",
        "--json",
    ];
    args.extend(extra.iter().map(String::as_str));
    let out = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, &args)
        .output()
        .unwrap();
    serde_json::from_str(stdout_of_success(&out).trim()).unwrap()
}

/// `mnemo eval write-path FILE --fillers 4 --json` with `extra`, against
/// the rule-based model on a scripted server, in a workspace under `dir`.
fn write_path(dir: &Path, file: &Path, extra: &[&str]) -> Value {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let model = ScriptedServer::start_blocking();
    model.respond_with(|req| match mnemo_eval::rule_model::answer(&req.body) {
        mnemo_eval::rule_model::RuleAnswer::Tool { name, arguments } => {
            Reply::tool_call(name, arguments)
        }
        mnemo_eval::rule_model::RuleAnswer::Text(t) => Reply::text(t),
    });
    let base = format!("provider.base_url={}", model.openai_base());
    let mut args = vec![
        "--set",
        "embedder.kind=none",
        "--set",
        "provider.kind=openai",
        "--set",
        &base,
        "--set",
        "provider.model=rule-based",
        "--set",
        "provider.max_retries=0",
        "eval",
        "write-path",
        file.to_str().unwrap(),
        "--fillers",
        "4",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), &ws, &args)
        .output()
        .unwrap();
    serde_json::from_str(stdout_of_success(&out).trim()).unwrap()
}

/// The flags that make `model` the chat model, then `flag`.
fn with_model(model: &ScriptedServer, flag: &str) -> Vec<String> {
    let base = format!("provider.base_url={}", model.openai_base());
    [
        "--set",
        "provider.kind=openai",
        "--set",
        &base,
        "--set",
        "provider.model=test-model",
        "--set",
        "provider.max_retries=0",
        flag,
    ]
    .map(String::from)
    .to_vec()
}

fn top_units(report: &Value) -> Vec<String> {
    report["questions"][0]["top_units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn rerank_orders_each_questions_hits_with_the_chat_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    std::fs::write(&file, DATA).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();

    let plain = top_units(&eval(&ws, &file, &[]));
    assert_eq!(
        plain.len(),
        3,
        "the three baking sessions are hits: {plain:?}"
    );

    // The model reverses the index's order.
    let model = ScriptedServer::start_blocking();
    // The probabilities of a first token are asked for once; this server
    // answers without them, so the ranking is asked for in writing.
    model.push(Reply::text("Yes"));
    model.push(Reply::text(r#"{"ranking": [3, 2, 1]}"#));
    let reranked = eval(&ws, &file, &with_model(&model, "--rerank"));
    let mut reversed = plain;
    reversed.reverse();
    assert_eq!(top_units(&reranked), reversed, "{reranked:#}");
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the probe, then one call per question");
    let prompt = requests[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        prompt.contains("What did Ann bake with her sister on Sunday?"),
        "{prompt}"
    );
    assert!(prompt.contains("[3] "), "every hit is shown: {prompt}");
}

/// `--expand`: the chat model's passage is searched beside each question
/// (a question that shares only a name with its evidence finds it first
/// through it), and a second run reads the kept answers instead of asking again.
#[test]
fn expand_searches_the_models_passage_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data.json");
    let data = DATA.replace(
        "What did Ann bake with her sister on Sunday?",
        "Which hobby does Ann have at weekends?",
    );
    std::fs::write(&file, data).unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let first_evidence = |r: &Value| r["questions"][0]["first_evidence_rank"].clone();
    let plain = first_evidence(&eval(&ws, &file, &[]));
    assert!(plain.as_u64().is_none_or(|r| r > 1), "{plain}");

    let model = ScriptedServer::start_blocking();
    model.push(Reply::text("Ann spent Sunday baking sourdough."));
    let expanded = eval(&ws, &file, &with_model(&model, "--expand"));
    assert_eq!(first_evidence(&expanded), 1, "{expanded:#}");
    assert_eq!(model.requests().len(), 1);
    let prompt = model.requests()[0].body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("Which hobby does Ann have"), "{prompt}");
    assert!(ws.join(".mnemo/eval/answers.json").is_file());
    let again = eval(&ws, &file, &with_model(&model, "--expand"));
    assert_eq!(first_evidence(&again), 1);
    assert_eq!(model.requests().len(), 1, "the kept answer is read");
}

/// Three short sessions, two of them replayed (`--limit-sessions 2`); one
/// question per session, one adversarial question (category 5) on s1.
const CONSOLIDATION_DATA: &str = r#"{
  "dataset": "handmade", "language": "en",
  "conversations": [
    {"conv_id": "c", "speakers": ["Ann", "Bob"], "sessions": [
      {"session_id": "s1", "date_time": "2023-05-08", "turns": [
        {"turn_id": "c1", "speaker": "Ann", "text": "My sister Beatrice adopted a grey cat named Pepper."},
        {"turn_id": "c2", "speaker": "Bob", "text": "What a lovely name for a cat."}]},
      {"session_id": "s2", "date_time": "2023-05-20", "turns": [
        {"turn_id": "c3", "speaker": "Ann", "text": "I started learning the cello in March."},
        {"turn_id": "c4", "speaker": "Bob", "text": "The cello sounds wonderful."}]},
      {"session_id": "s3", "date_time": "2023-06-01", "turns": [
        {"turn_id": "c5", "speaker": "Ann", "text": "We booked a trip to Porto in July."}]}]}
  ],
  "questions": [
    {"qid": "q1", "conv_id": "c", "question": "What is the name of the cat Beatrice adopted?",
     "answer": "Pepper", "category": 4, "evidence_turns": ["c1"], "evidence_sessions": ["s1"]},
    {"qid": "q2", "conv_id": "c", "question": "Which instrument did Ann start learning in March?",
     "answer": "the cello", "category": 4, "evidence_turns": ["c3"], "evidence_sessions": ["s2"]},
    {"qid": "q3", "conv_id": "c", "question": "Where is the trip booked for July?",
     "answer": "Porto", "category": 4, "evidence_turns": ["c5"], "evidence_sessions": ["s3"]},
    {"qid": "q4", "conv_id": "c", "question": "What is the name of Bob's dog?",
     "answer": "no dog", "category": 5, "evidence_turns": ["c1"], "evidence_sessions": ["s1"]}
  ]
}"#;

/// The real consolidation path on the local model, then the three searches:
/// the transcript and the raw archive hold every answer word for word, so
/// both keep both questions asked (s3's question and the adversarial one
/// are not asked); what SmolLM2 keeps in memory is its own affair. With
/// `--keep`, the workspaces stay to be read.
#[test]
fn eval_consolidation_scores_a_local_model_against_the_transcript_and_the_raw_archive() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let kept = dir.path().join("kept");
    let file = dir.path().join("data.json");
    std::fs::write(&file, CONSOLIDATION_DATA).unwrap();
    let gguf = mnemo_test_support::smollm2_gguf();
    let o = mnemo_command(env!("CARGO_BIN_EXE_mnemo"), &ws, &["init"])
        .output()
        .unwrap();
    stdout_of_success(&o);
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "--set",
            "provider.context_window=2048",
            "--set",
            "provider.max_output=160",
            "eval",
            "consolidation",
            file.to_str().unwrap(),
            "--limit-sessions",
            "2",
            "--keep",
            kept.to_str().unwrap(),
            "--provider",
            "local",
            "--model",
            gguf.to_str().unwrap(),
            "--json",
        ],
    )
    .output()
    .unwrap();
    let r: Value = serde_json::from_str(&stdout_of_success(&o)).unwrap();
    assert_eq!(r["conversations"], 1, "{r}");
    assert_eq!(r["sessions"], 2, "{r}");
    let (valid, failed) = (
        r["valid_calls"].as_u64().unwrap(),
        r["failed"].as_u64().unwrap(),
    );
    assert_eq!(valid + failed, 2, "{r}");
    assert_eq!(r["round_seconds"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["transcript"]["asked"], 2, "{r}");
    assert_eq!(r["transcript"]["kept"], 2, "{r}");
    assert_eq!(r["raw_archive"]["asked"], 2, "{r}");
    assert_eq!(r["raw_archive"]["kept"], 2, "{r}");
    assert_eq!(r["memory"]["asked"], 2, "{r}");
    assert!(r["memory"]["kept"].as_u64().unwrap() <= 2, "{r}");
    assert!(r["model"].as_str().unwrap().starts_with("local/"), "{r}");
    // Each question asked, and where its answer was found.
    let questions = r["questions"].as_array().unwrap();
    let answers: Vec<&str> = questions
        .iter()
        .map(|q| q["answer"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["Pepper", "the cello"], "{r}");
    assert!(questions
        .iter()
        .all(|q| q["transcript"] == true && q["raw_archive"] == true));
    let in_memory = questions.iter().filter(|q| q["memory"] == true).count();
    assert_eq!(r["memory"]["kept"], in_memory, "{r}");
    // The kept workspaces: the model's memory beside the session logs, and
    // the outage's archive with the sessions' words in its history.
    assert!(kept.join("c/memory/sessions").is_dir());
    let history = std::fs::read_to_string(kept.join("c/raw-archive/memory/HISTORY.md")).unwrap();
    assert!(
        history.contains("Pepper") && history.contains("cello"),
        "{history}"
    );
    // A second run refuses to mix its workspaces into the first one's.
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &ws,
        &[
            "eval",
            "consolidation",
            file.to_str().unwrap(),
            "--keep",
            kept.to_str().unwrap(),
            "--provider",
            "local",
            "--model",
            gguf.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not empty"), "{err}");
}

/// Three days of a Chinese MemoryBank-like conversation whose question has
/// no reference answer.
const CHINESE_DAYS: &str = r#"{
  "dataset": "handmade", "language": "zh",
  "conversations": [
    {"conv_id": "u", "speakers": ["林", "AI"], "sessions": [
      {"session_id": "2023-05-01", "date_time": "2023-05-01", "turns": [
        {"turn_id": "1#0", "text": "林: 你好，今天天气很好。\nAI: 是啊，适合出去走走。"},
        {"turn_id": "1#1", "text": "林: 我想去公园散步。\nAI: 好主意。"}]},
      {"session_id": "2023-05-02", "date_time": "2023-05-02", "turns": [
        {"turn_id": "2#0", "text": "林: 我最近在学做饭。\nAI: 学了什么菜？"},
        {"turn_id": "2#1", "text": "林: 红烧肉。\nAI: 听起来很好吃。"}]},
      {"session_id": "2023-05-03", "date_time": "2023-05-03", "turns": [
        {"turn_id": "3#0", "text": "林: 周末要去看电影。\nAI: 看什么电影？"},
        {"turn_id": "3#1", "text": "林: 还没想好。\nAI: 可以看看评分高的。"}]}]}
  ],
  "questions": [{"qid": "u#q0", "conv_id": "u", "question": "我周末要做什么？", "answer": null, "evidence_sessions": ["2023-05-03"]}]
}"#;

/// A file without reference answers is scored on scripted ones: the
/// user's Chinese statements with known answers are said in the
/// conversation and asked about. With the rule-based model (right on
/// every one of them) the memory keeps every answer, as the transcript
/// and the raw archive do; the last value said is the one in MEMORY.md.
#[test]
fn eval_consolidation_scores_scripted_chinese_answers_without_reference_answers() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let kept = dir.path().join("kept");
    let file = dir.path().join("zh.json");
    std::fs::write(&file, CHINESE_DAYS).unwrap();
    let model = ScriptedServer::start_blocking();
    model.respond_with(|req| match mnemo_eval::rule_model::answer(&req.body) {
        mnemo_eval::rule_model::RuleAnswer::Tool { name, arguments } => {
            Reply::tool_call(name, arguments)
        }
        mnemo_eval::rule_model::RuleAnswer::Text(t) => Reply::text(t),
    });
    let base = format!("provider.base_url={}", model.openai_base());
    std::fs::create_dir_all(&ws).unwrap();
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "--set",
            "provider.kind=openai",
            "--set",
            &base,
            "--set",
            "provider.model=rule-based",
            "--set",
            "provider.max_retries=0",
            "eval",
            "consolidation",
            file.to_str().unwrap(),
            "--keep",
            kept.to_str().unwrap(),
            "--json",
        ],
    )
    .output()
    .unwrap();
    let r: Value = serde_json::from_str(&stdout_of_success(&o)).unwrap();
    assert_eq!(r["scripted"], true, "{r}");
    assert_eq!(r["sessions"], 3, "{r}");
    for memory in ["memory", "transcript", "raw_archive"] {
        assert_eq!(r[memory]["asked"], 8, "{memory}: {r}");
        assert_eq!(r[memory]["kept"], 8, "{memory}: {r}");
    }
    let answers: Vec<&str> = r["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["answer"].as_str().unwrap())
        .collect();
    assert_eq!(
        answers,
        [
            "根特",
            "毕尔巴鄂",
            "里昂",
            "佐尔巴",
            "汉莎航空",
            "靛青色",
            "B7",
            "K38"
        ],
        "{r}"
    );
    let memory = std::fs::read_to_string(kept.join("u/memory/MEMORY.md")).unwrap();
    assert!(
        memory.contains("根特") && !memory.contains("塔林"),
        "{memory}"
    );
    // The text report says where its questions came from.
    let o = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &ws,
        &[
            "--set",
            "embedder.kind=none",
            "--set",
            "provider.kind=openai",
            "--set",
            &base,
            "--set",
            "provider.model=rule-based",
            "eval",
            "consolidation",
            file.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let text = stdout_of_success(&o);
    assert!(text.contains("questions: 8 scripted"), "{text}");
}

/// Six short sessions between Ann (the user) and Bob, none of whose turns
/// states a `my ... is ...` fact: every fact comes from the script.
const SIX_SESSIONS: &str = r#"{
  "dataset": "handmade", "language": "en",
  "conversations": [
    {"conv_id": "c", "speakers": ["Ann", "Bob"], "sessions": [
      {"session_id": "s1", "date_time": "2023-05-01", "turns": [
        {"turn_id": "c1", "speaker": "Ann", "text": "Morning! The garden looks lovely today."},
        {"turn_id": "c2", "speaker": "Bob", "text": "It does, the roses came out."}]},
      {"session_id": "s2", "date_time": "2023-05-02", "turns": [
        {"turn_id": "c3", "speaker": "Ann", "text": "I finished the novel about sailing to Lisbon."},
        {"turn_id": "c4", "speaker": "Bob", "text": "Was the ending good?"}]},
      {"session_id": "s3", "date_time": "2023-05-03", "turns": [
        {"turn_id": "c5", "speaker": "Ann", "text": "We shipped the billing migration at work."},
        {"turn_id": "c6", "speaker": "Bob", "text": "Congratulations to the team."}]},
      {"session_id": "s4", "date_time": "2023-05-04", "turns": [
        {"turn_id": "c7", "speaker": "Ann", "text": "Baking sourdough again this Sunday."},
        {"turn_id": "c8", "speaker": "Bob", "text": "Save me a slice."}]},
      {"session_id": "s5", "date_time": "2023-05-05", "turns": [
        {"turn_id": "c9", "speaker": "Ann", "text": "The fence needs a new coat of paint."},
        {"turn_id": "c10", "speaker": "Bob", "text": "I can help on Saturday."}]},
      {"session_id": "s6", "date_time": "2023-05-06", "turns": [
        {"turn_id": "c11", "speaker": "Ann", "text": "Off to the coast for the weekend."},
        {"turn_id": "c12", "speaker": "Bob", "text": "Have a good trip."}]}]}
  ],
  "questions": []
}"#;

#[test]
fn write_path_scores_each_profile_against_the_rule_based_model() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("six.json");
    std::fs::write(&file, SIX_SESSIONS).unwrap();
    let kept = dir.path().join("kept");
    let report = write_path(dir.path(), &file, &["--keep", kept.to_str().unwrap()]);
    assert_eq!(report["sessions"], 6, "{report:#}");
    // --keep leaves each replay's workspace, its audit log naming why.
    let conv = std::fs::read_dir(&kept)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let audit = std::fs::read_to_string(conv.join("mnemo/memory/audit.jsonl")).unwrap();
    assert!(audit.contains("\"op\":\"add\""), "{audit}");
    assert!(conv.join("mem0/sessions").is_dir());
    // A kept folder is one run's: a second run into it is refused.
    let again = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &dir.path().join("ws"),
        &[
            "eval",
            "write-path",
            file.to_str().unwrap(),
            "--keep",
            kept.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("give --keep a new or empty folder"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // (a) 3 changed subjects (7 statements), (b) 2 repeated (8), (c) 2
    // retracted (4), (d) 4 fillers; (e) 2, (f) 3, (g) 2, (h) 2 (the second
    // the assistant's proposal and the user's yes), (i) 2, (j) 4.
    assert_eq!(report["statements"], 38, "{report:#}");
    let profile = |name: &str| {
        report["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["profile"] == name)
            .unwrap_or_else(|| panic!("no {name} in {report:#}"))
            .clone()
    };
    let row = |p: &Value| {
        (
            p["current_correct"].as_u64().unwrap(),
            p["subjects"].as_u64().unwrap(),
            p["retractions_honoured"].as_u64().unwrap(),
            p["duplicates"].as_u64().unwrap(),
            p["contradictions"].as_u64().unwrap(),
            p["old_values_in_history"].as_u64().unwrap(),
            p["model_calls"].as_u64().unwrap(),
        )
    };
    // Each kind's score, `correct/subjects`, (a) to (j).
    let kinds = |p: &Value| {
        p["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| format!("{}/{}", k["correct"], k["subjects"]))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let clean = |p: &Value| {
        (
            p["wrong_supersessions"].as_u64().unwrap(),
            p["invented_facts"].as_u64().unwrap(),
        )
    };
    let all_right = "3/3 2/2 2/2 4/4 1/1 1/1 1/1 1/1 1/1 2/2";
    // Facts: every value current, the old ones ended (in history), the
    // retractions ended, nothing twice, nothing ended that was still true,
    // nothing no message says; one extraction per session (no pair the
    // code could not tell apart, so no yes/no question).
    let mem0 = profile("mem0");
    assert_eq!(row(&mem0), (14, 14, 4, 0, 0, 9, 6), "{mem0:#}");
    assert_eq!(kinds(&mem0), all_right, "{mem0:#}");
    assert_eq!(clean(&mem0), (0, 0), "{mem0:#}");
    assert_eq!(mem0["writes"], "facts");
    // MEMORY.md rewritten per session: the same, old values in the diffs.
    let nanobot = profile("nanobot");
    assert_eq!(row(&nanobot), (14, 14, 4, 0, 0, 9, 6), "{nanobot:#}");
    assert_eq!(kinds(&nanobot), all_right, "{nanobot:#}");
    assert_eq!(clean(&nanobot), (0, 0), "{nanobot:#}");
    assert_eq!(nanobot["within_caps"], true);
    // Daily logs are append-only: every value ever stated stays, so the
    // changed subjects contradict themselves, retractions are not honoured
    // and a repeated fact is in every day's log.
    let openclaw = profile("openclaw");
    assert_eq!(row(&openclaw), (6, 14, 0, 7, 8, 9, 6), "{openclaw:#}");
    assert_eq!(
        kinds(&openclaw),
        "0/3 2/2 0/2 4/4 0/1 0/1 0/1 0/1 0/1 0/2",
        "{openclaw:#}"
    );
    assert_eq!(clean(&openclaw), (0, 0), "{openclaw:#}");
    assert_eq!(openclaw["writes"], "flush");
    // mnemo: the flush through the fact-level write path: every value
    // current, the old ones and the retractions ended in the facts file,
    // no contradiction; consolidation leaves to the facts file what a
    // current fact says (one home per fact: no duplicate); flush
    // (extraction) and consolidation per session.
    let mnemo = profile("mnemo");
    assert_eq!(row(&mnemo), (14, 14, 4, 0, 0, 9, 12), "{mnemo:#}");
    assert_eq!(kinds(&mnemo), all_right, "{mnemo:#}");
    assert_eq!(clean(&mnemo), (0, 0), "{mnemo:#}");
    assert_eq!(mnemo["memory_md_lines"], 0, "{mnemo:#}");
    assert_eq!(mnemo["writes"], "memory_md+facts flush");
    assert_eq!(mnemo["refused_operations"], 0, "{mnemo:#}");
    // claude-code writes nothing in the background.
    let cc = profile("claude-code");
    assert_eq!(row(&cc), (0, 14, 4, 0, 0, 0, 0), "{cc:#}");
    assert_eq!(cc["writes"], "none");
    assert!(mem0["tokens_per_100_turns"].as_f64().unwrap() > 0.0);
}

#[test]
fn write_path_with_dream_scores_the_memory_a_dream_leaves() {
    let dir = tempfile::tempdir().unwrap();
    // The six sessions ten days apart: every log but the last is older
    // than `dream_fold_days` (7) when the replay ends.
    let mut data = SIX_SESSIONS.to_string();
    for (from, to) in [
        ("2023-05-02", "2023-05-11"),
        ("2023-05-03", "2023-05-21"),
        ("2023-05-04", "2023-05-31"),
        ("2023-05-05", "2023-06-10"),
        ("2023-05-06", "2023-06-20"),
    ] {
        data = data.replace(from, to);
    }
    let file = dir.path().join("spread.json");
    std::fs::write(&file, data).unwrap();
    let report = write_path(
        dir.path(),
        &file,
        &["--profiles", "openclaw,mnemo", "--dream"],
    );
    assert_eq!(report["dream"], true, "{report:#}");
    let profile = |name: &str| {
        report["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["profile"] == name)
            .unwrap_or_else(|| panic!("no {name} in {report:#}"))
            .clone()
    };
    let n = |p: &Value, k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k} in {p:#}"));
    // openclaw: the five old logs fold into facts, and the dream supersedes
    // the older values among them whose facts read `X is V` (gym locker 14
    // and 27 by 33, parking spot B4 by C9, the airline, the wedding's Lyon
    // by its correction Nantes; "lives in" has no `is` to read); the one
    // retraction folded that says "forget" ends the fact it names instead
    // of becoming one. The logs stay (append-only, still searched), so the
    // contradictions stay and each folded item is now a log line and a
    // fact. The wedding's Lyon, corrected back in the last (unfolded) log,
    // is left ended: a wrong supersession by the scores' rule (a fact
    // ended by a dream is judged against what is true at the end).
    let openclaw = profile("openclaw");
    assert_eq!(openclaw["writes"], "flush+dream");
    assert_eq!(
        [
            "dream_folded_logs",
            "dream_added",
            "dream_superseded",
            "dream_merged",
            "dream_retracted",
            "dream_retractions_unmatched",
            "dream_refused"
        ]
        .map(|k| n(&openclaw, k)),
        [5, 26, 5, 0, 1, 0, 0],
        "{openclaw:#}"
    );
    assert_eq!(
        [
            "current_correct",
            "retractions_honoured",
            "duplicates",
            "contradictions",
            "wrong_supersessions",
            "invented_facts"
        ]
        .map(|k| n(&openclaw, k)),
        [6, 0, 18, 8, 1, 0],
        "{openclaw:#}"
    );
    // mnemo: nothing for the dream to do (no daily log, no contradiction).
    let mnemo = profile("mnemo");
    assert_eq!(mnemo["writes"], "memory_md+facts flush+dream");
    assert_eq!(
        [
            "dream_folded_logs",
            "dream_added",
            "dream_superseded",
            "current_correct",
            "contradictions",
            "wrong_supersessions"
        ]
        .map(|k| n(&mnemo, k)),
        [0, 0, 0, 14, 0, 0],
        "{mnemo:#}"
    );
}

/// An evaluation's own errors exit with their code, as every other
/// command's do: a benchmark file that is not JSON is the caller's
/// mistake (2), not a failure of mnemo (1).
#[test]
fn an_eval_error_exits_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.json");
    std::fs::write(&file, "{\"conversations\": [").unwrap();
    let out = mnemo_command(
        env!("CARGO_BIN_EXE_mnemo"),
        &dir.path().join("ws"),
        &["eval", "retrieval"],
    )
    .arg(&file)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a benchmark file"), "{stderr}");
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}
