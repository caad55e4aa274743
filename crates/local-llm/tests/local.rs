//! The local provider end to end on the real SmolLM2-135M-Instruct GGUF:
//! the KV cache's prefix reuse, budgets, cancellation, bad model files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mnemo_core::Message;
use mnemo_llm::{ChatModel, ChatRequest, ErrorKind, ToolChoice};
use mnemo_local_llm::{Error, LocalChat, LocalOptions};

fn req(text: &str) -> ChatRequest {
    ChatRequest::new(vec![Message::user(text)])
        .with_system("You are a terse assistant. Answer in one sentence.")
        .with_max_tokens(24)
}

#[test]
fn usage_counts_the_rendered_prompt() {
    let m = common::smollm2(2048);
    let r = req("What is the capital of France?");
    let expected = m.tokenize(&m.render(&r)).unwrap().len();
    let resp = m.complete_blocking(&r, &AtomicBool::new(false)).unwrap();
    assert_eq!(resp.usage.input_tokens as usize, expected);
    assert_eq!(m.last_stats().prompt_tokens, expected);
    assert!(!resp.text().is_empty());
}

#[test]
fn a_shared_prefix_is_reused_and_changes_nothing() {
    let cached = common::smollm2(2048);
    let no = AtomicBool::new(false);
    cached
        .complete_blocking(&req("What is the capital of France?"), &no)
        .unwrap();
    let second = req("Name a colour of the sky.");
    let with_cache = cached.complete_blocking(&second, &no).unwrap();
    let stats = cached.last_stats();
    assert!(
        stats.reused_tokens >= 10,
        "the system prompt is reused: {stats:?}"
    );
    assert!(stats.reused_tokens < stats.prompt_tokens);
    // A fresh model (empty cache) gives the same greedy answer.
    let fresh = common::smollm2(2048)
        .complete_blocking(&second, &no)
        .unwrap();
    assert_eq!(with_cache.text(), fresh.text());
    assert_eq!(common::smollm2(2048).last_stats().reused_tokens, 0);
}

#[test]
fn a_saved_system_block_starts_the_next_process_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let with_cache = |dir: &std::path::Path| {
        LocalChat::load(
            &mnemo_test_support::smollm2_gguf(),
            &LocalOptions {
                name: "smollm2".into(),
                context_window: 2048,
                max_output: 64,
                seed: 7,
                prompt_cache: Some(dir.to_path_buf()),
            },
        )
        .unwrap()
    };
    let no = AtomicBool::new(false);
    // A system block long enough to save (instructions and a tool), marked
    // as fixed instructions.
    let long = |text: &str| {
        ChatRequest::new(vec![Message::user(text)])
            .with_system("You are a terse assistant. Answer in one sentence. ".repeat(8))
            .with_tools(vec![common::save_memory_tool()])
            .with_tool_choice(ToolChoice::None)
            .with_max_tokens(24)
            .with_fixed_system()
    };
    let first = with_cache(dir.path());
    first
        .complete_blocking(&long("What is the capital of France?"), &no)
        .unwrap();
    assert_eq!(first.last_stats().loaded_tokens, 0);
    let saved: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(saved.len(), 1, "one file for the system block");

    // A new process (a new model, its cache empty) starts from the file.
    let second = with_cache(dir.path());
    let q = long("Name a colour of the sky.");
    let answer = second.complete_blocking(&q, &no).unwrap();
    let stats = second.last_stats();
    assert!(stats.loaded_tokens >= 64, "{stats:?}");
    assert_eq!(stats.reused_tokens, stats.loaded_tokens, "{stats:?}");
    // The same answer as a model that read the whole prompt.
    let fresh = common::smollm2(2048).complete_blocking(&q, &no).unwrap();
    assert_eq!(answer.text(), fresh.text());

    // A damaged file is ignored: the block runs again, the answer holds.
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let p = f.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    }
    let third = with_cache(dir.path());
    let again = third.complete_blocking(&q, &no).unwrap();
    assert_eq!(third.last_stats().loaded_tokens, 0);
    assert_eq!(again.text(), fresh.text());
}

#[test]
fn a_system_block_not_marked_fixed_is_never_saved() {
    // Issue 43 N7: a chat turn's system block holds MEMORY.md and facts;
    // saved to the prompt cache, a forgotten fact stayed on disk.
    let dir = tempfile::tempdir().unwrap();
    let with_cache = || {
        LocalChat::load(
            &mnemo_test_support::smollm2_gguf(),
            &LocalOptions {
                name: "smollm2".into(),
                context_window: 2048,
                max_output: 64,
                seed: 7,
                prompt_cache: Some(dir.path().to_path_buf()),
            },
        )
        .unwrap()
    };
    let m = with_cache();
    let no = AtomicBool::new(false);
    let memory = "You are a helpful assistant.\n\n# Memory\n\n".to_string()
        + &"- The user's locker code is CACHE-LEAK-4242.\n".repeat(8);
    let turn = |text: &str| {
        ChatRequest::new(vec![Message::user(text)])
            .with_system(memory.clone())
            .with_tools(vec![common::save_memory_tool()])
            .with_tool_choice(ToolChoice::None)
            .with_max_tokens(8)
    };
    m.complete_blocking(&turn("What is my locker code?"), &no)
        .unwrap();
    // The block is long enough to save, and the model's own cache reused
    // it for the next prompt as before.
    assert!(m.last_stats().prompt_tokens >= 64 + 8);
    m.complete_blocking(&turn("And my name?"), &no).unwrap();
    assert!(m.last_stats().reused_tokens >= 64, "{:?}", m.last_stats());
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 0, "a chat turn's system block was saved");
    // Marked as fixed instructions, the same block is saved (by a model
    // whose cache does not hold it yet: a block already there is not
    // saved again).
    with_cache()
        .complete_blocking(&turn("Once more?").with_fixed_system(), &no)
        .unwrap();
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(files, 1);
}

#[test]
fn a_forced_call_that_runs_out_of_budget_is_an_error_not_a_cut_call() {
    let m = common::smollm2(2048);
    let r = ChatRequest::new(common::dialogue())
        .with_tools(vec![common::save_memory_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()))
        .with_max_tokens(4);
    let err = m
        .complete_blocking(&r, &AtomicBool::new(false))
        .unwrap_err();
    assert!(matches!(err, Error::BadAnswer(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("budget of 4 tokens") && msg.contains("save_memory"),
        "{msg}"
    );
    // Through the seam it is a decode error, which the engine counts as a
    // failed consolidation (and archives raw after repeated failures).
    let llm = err.into_llm("local");
    assert_eq!(llm.kind(), ErrorKind::Decode);
}

/// A budget that leaves room for the call's shortest form is kept: near
/// its end the decoder steers the model to close its JSON, so the call
/// arrives whole and valid instead of failing at the limit.
#[test]
fn a_forced_call_closes_within_a_small_budget() {
    let m = common::smollm2(2048);
    let note = mnemo_llm::ToolSpec::new(
        "note",
        "Write down what the user said.",
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }),
    );
    let call = |budget: u32| {
        let r = ChatRequest::new(common::dialogue())
            .with_tools(vec![note.clone()])
            .with_tool_choice(ToolChoice::Function("note".into()))
            .with_max_tokens(budget);
        m.complete_blocking(&r, &AtomicBool::new(false))
    };
    // Left alone, the model writes more than the small budget holds.
    let free = call(200).unwrap();
    assert!(free.usage.output_tokens > 12, "{:?}", free.usage);
    let resp = call(12).unwrap();
    assert!(resp.usage.output_tokens <= 12, "{:?}", resp.usage);
    let calls = resp.tool_calls();
    assert_eq!(calls.len(), 1, "{resp:?}");
    assert_eq!(calls[0].function.name, "note");
    // OpenAI-shaped: the arguments are JSON text.
    let args: serde_json::Value =
        serde_json::from_str(calls[0].function.arguments.as_str().unwrap()).unwrap();
    assert!(args["text"].is_string(), "{args}");
}

#[test]
fn forcing_a_tool_that_is_not_offered_is_refused() {
    let m = common::smollm2(2048);
    let r = ChatRequest::new(common::dialogue())
        .with_tools(vec![common::search_tool()])
        .with_tool_choice(ToolChoice::Function("save_memory".into()));
    let err = m
        .complete_blocking(&r, &AtomicBool::new(false))
        .unwrap_err();
    assert!(
        err.to_string().contains("not among the offered tools"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_request_stops_and_the_model_serves_the_next() {
    let m = common::smollm2(2048);
    let long = ChatRequest::new(vec![Message::user("Write a long story about the sea.")])
        .with_max_tokens(2000);
    let r = tokio::time::timeout(Duration::from_millis(300), m.complete(long)).await;
    assert!(r.is_err(), "the request timed out");
    // The generation thread notices, stops and frees the model for the next.
    assert!(m.complete(req("Hi")).await.is_ok());
    assert_eq!(m.cancelled_generations(), 1);
    assert!(m.last_stats().generated_tokens <= 24);
}

#[test]
fn a_cancelled_flag_stops_before_the_prompt_runs() {
    let m = common::smollm2(2048);
    let err = m
        .complete_blocking(&req("Hi"), &AtomicBool::new(true))
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err:?}");
    assert_eq!(m.cancelled_generations(), 1);
}

#[test]
fn missing_truncated_and_foreign_files_get_clear_errors() {
    let opts = LocalOptions {
        name: "x".into(),
        context_window: 1024,
        max_output: 16,
        seed: 0,
        prompt_cache: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.gguf");
    let e = LocalChat::load(&missing, &opts).unwrap_err();
    assert!(
        matches!(e, Error::NotFound(_)) && e.to_string().contains("nope.gguf"),
        "{e}"
    );

    let full = std::fs::read(mnemo_test_support::smollm2_gguf()).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let e = LocalChat::load(&cut, &opts).unwrap_err().to_string();
    // The file and its problem first, then what to do (issue 43 N13).
    assert!(
        e.starts_with(&format!(
            "the model file {} could not be loaded: it is truncated",
            cut.display()
        )) && e.contains("re-download it"),
        "{e}"
    );

    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "# not a model\n").unwrap();
    let e = LocalChat::load(&text, &opts).unwrap_err().to_string();
    assert!(e.contains("not a readable GGUF"), "{e}");
    // One line, even with RUST_BACKTRACE set: the advice is not buried.
    assert!(!e.contains('\n') && e.contains("re-download it"), "{e}");
    // The files are left as they were.
    assert_eq!(std::fs::read(&cut).unwrap().len(), full.len() / 2);
}

/// The write path's `extract_facts` shape: required strings and an enum.
fn extract_facts_tool() -> mnemo_llm::ToolSpec {
    let text = serde_json::json!({"type": "string", "maxLength": 80});
    mnemo_llm::ToolSpec::new(
        "extract_facts",
        "Save the facts worth remembering from the conversation, one item per claim.",
        serde_json::json!({
            "type": "object",
            "properties": {"facts": {"type": "array", "maxItems": 2, "items": {
                "type": "object",
                "properties": {
                    "quote": text,
                    "subject": text,
                    "kind": {"type": "string", "enum": ["states", "changes", "corrects", "retracts"]},
                    "fact": text
                },
                "required": ["quote", "subject", "kind", "fact"]
            }}},
            "required": ["facts"]
        }),
    )
}

/// What the schema forces (key names, separators, the rest of a settled
/// enum option, closing brackets) runs through the model in the pass of
/// the token before it, each token kept where the model chooses it: fewer
/// passes, and the same answer as a pass per token, greedy or sampled.
#[test]
fn a_forced_call_runs_what_its_schema_forces_in_batches() {
    let batched = common::smollm2(2048);
    let stepped = common::smollm2(2048);
    stepped.set_forced_batch(false);
    let no = AtomicBool::new(false);
    for temperature in [0.0, 0.8] {
        let r = ChatRequest::new(common::dialogue())
            .with_system("Extract the facts the user states.")
            .with_tools(vec![extract_facts_tool()])
            .with_tool_choice(ToolChoice::Function("extract_facts".into()))
            .with_max_tokens(300)
            .with_temperature(temperature);
        let fast = batched.complete_blocking(&r, &no).unwrap();
        let stats = batched.last_stats();
        // `"facts": [` after `{`, then each item's keys and separators.
        assert!(stats.forced_tokens >= 10, "{stats:?}");
        assert!(stats.forced_tokens < stats.generated_tokens, "{stats:?}");
        assert_eq!(fast.usage.output_tokens as usize, stats.generated_tokens);
        let args = fast.tool_calls()[0].function.arguments_value();
        let facts = args["facts"].as_array().unwrap();
        assert!(!facts.is_empty(), "{args}");
        for f in facts {
            let keys: Vec<&String> = f.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["quote", "subject", "kind", "fact"], "{args}");
        }

        let slow = stepped.complete_blocking(&r, &no).unwrap();
        let one_by_one = stepped.last_stats();
        assert_eq!(
            (one_by_one.forced_tokens, one_by_one.dropped_tokens),
            (0, 0)
        );
        assert_eq!(one_by_one.generated_tokens, stats.generated_tokens);
        assert_eq!(
            slow.tool_calls()[0].function,
            fast.tool_calls()[0].function,
            "temperature {temperature}"
        );
    }
}

/// While it answers, the model says how far it is (the prompt's tokens,
/// then the answer's tokens as they are written), read from another
/// thread without waiting for the generation: a progress line for a turn
/// that takes a minute. Idle, it says nothing.
#[test]
fn its_activity_follows_a_generation() {
    let m = std::sync::Arc::new(common::smollm2(2048));
    assert_eq!(m.activity(), None);
    let r = req("Count from one to twenty in words.").with_max_tokens(48);
    let prompt = m.tokenize(&m.render(&r)).unwrap().len();
    let runner = m.clone();
    let handle = std::thread::spawn(move || runner.complete_blocking(&r, &AtomicBool::new(false)));
    let mut seen = Vec::new();
    while !handle.is_finished() {
        seen.extend(m.activity());
        std::thread::sleep(Duration::from_millis(1));
    }
    let resp = handle.join().unwrap().unwrap();
    assert_eq!(m.activity(), None, "idle again");
    let writing: Vec<_> = seen.iter().filter(|a| !a.reading).collect();
    assert!(
        writing
            .iter()
            .any(|a| a.written > 0 && a.prompt_tokens == prompt),
        "{seen:?}"
    );
    let most = writing.iter().map(|a| a.written).max().unwrap_or(0);
    assert!(
        most <= resp.usage.output_tokens as usize,
        "{most} > {:?}",
        resp.usage
    );
}

/// The probabilities a re-rank judges by: one pass over the prompt, the
/// greedy first token the likeliest of the options offered, the same
/// numbers from a warm cache as from a cold one.
#[test]
fn option_logprobs_read_the_next_token_distribution() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let m = common::smollm2(2048);
    let r = req("Is Paris in France? Answer yes or no.");
    let first = m
        .complete_blocking(&r.clone().with_max_tokens(1), &AtomicBool::new(false))
        .unwrap()
        .text();
    let greedy = first.trim().to_string();
    assert!(!greedy.is_empty(), "{first:?}");
    let options = vec![greedy, "zebra".to_string()];
    let lp = rt
        .block_on(m.option_logprobs(r.clone(), options.clone()))
        .unwrap()
        .expect("a local model reads its probabilities");
    assert_eq!(lp.len(), 2);
    assert!(lp.iter().all(|l| *l <= 0.0), "log-probabilities: {lp:?}");
    assert!(lp[0].is_finite() && lp[0] >= lp[1], "{lp:?}");
    assert_eq!(m.last_stats().generated_tokens, 0, "nothing is written");
    let warm = rt
        .block_on(m.option_logprobs(r.clone(), options.clone()))
        .unwrap()
        .unwrap();
    assert!(m.last_stats().reused_tokens > 0);
    let cold = rt
        .block_on(common::smollm2(2048).option_logprobs(r, options))
        .unwrap()
        .unwrap();
    for ((a, b), c) in lp.iter().zip(&warm).zip(&cold) {
        assert!(
            (a - b).abs() < 1e-3 && (a - c).abs() < 1e-3,
            "{lp:?} {warm:?} {cold:?}"
        );
    }
}
