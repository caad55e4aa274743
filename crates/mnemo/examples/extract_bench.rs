//! Time of one write-path extraction on a local GGUF model: the forced
//! `extract_facts` call the engine makes for a round of messages, built by
//! the engine's own `extract_request`, on a fixed conversation of 20
//! messages. Prints the prompt and generation seconds, the tokens
//! generated (how many of them the schema forced and ran in the pass of
//! the token before them, how many forced tokens ran and were dropped, and
//! the model's passes), and the arguments, so runs can be compared.
//!
//! ```text
//! cargo build --release -p mnemo --example extract_bench
//! target/release/examples/extract_bench FILE.gguf
//! MNEMO_LLM_FORCED_BATCH=0 target/release/examples/extract_bench FILE.gguf   # every token sampled
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use mnemo_core::Message;
use mnemo_engine::extract::extract_request;
use mnemo_llm::{ToolChoice, DEFAULT_LOCAL_CONTEXT, DEFAULT_LOCAL_MAX_OUTPUT};
use mnemo_local_llm::{LocalChat, LocalOptions};

/// Ten turns of a user and an assistant: statements, a change, a
/// correction, a retraction, another person's move, small talk.
const CONVERSATION: [(&str, &str); 10] = [
    (
        "Hi! I live in Lisbon, near the river, and I work as a nurse at the city hospital.",
        "Nice to meet you. Lisbon by the river sounds lovely. How long have you been a nurse?",
    ),
    (
        "About eight years now. Mostly night shifts in the emergency ward.",
        "Night shifts in emergency are demanding. Do you get enough rest between them?",
    ),
    (
        "Not really. I drink a lot of coffee, three or four cups a night.",
        "That is quite a lot of caffeine. Have you tried green tea on some nights?",
    ),
    (
        "My sister Marta says the same. She lives in Porto and teaches chemistry.",
        "Good advice from Marta, then. Is she also in healthcare, or only in teaching?",
    ),
    (
        "Only teaching. Oh, and I have a dog called Bolt, a very lazy greyhound.",
        "A lazy greyhound is a classic. Does Bolt mind your night shifts?",
    ),
    (
        "He sleeps through them. Big news though: I moved to Berlin last week, I don't live in Lisbon anymore.",
        "Congratulations on the move to Berlin! Are you still working as a nurse there?",
    ),
    (
        "Yes, I started at the Charité on Monday, day shifts this time.",
        "Day shifts should help with the coffee. How are you finding Berlin so far?",
    ),
    (
        "Cold, but I like it. Sorry, I got something wrong earlier: Marta lives in Braga, not Porto.",
        "Thanks for correcting that: Marta lives in Braga. Does she plan to visit you?",
    ),
    (
        "In March, maybe. And forget what I said about the dog, Bolt is my neighbour's dog, not mine.",
        "Understood, Bolt is your neighbour's greyhound. Anything else you would like me to remember?",
    ),
    (
        "My favourite colour is green these days, it used to be blue. That's all, thanks!",
        "Noted: green is your favourite colour now. Have a good first week in Berlin!",
    ),
];

fn main() {
    let file = std::env::args()
        .nth(1)
        .expect("usage: extract_bench FILE.gguf");
    let started = Instant::now();
    let model = LocalChat::load(
        std::path::Path::new(&file),
        &LocalOptions {
            name: "extract-bench".into(),
            context_window: DEFAULT_LOCAL_CONTEXT,
            max_output: DEFAULT_LOCAL_MAX_OUTPUT,
            seed: 0,
            prompt_cache: None,
        },
    )
    .unwrap();
    let load_secs = started.elapsed().as_secs_f64();
    let messages: Vec<Message> = CONVERSATION
        .iter()
        .flat_map(|(u, a)| [Message::user(*u), Message::assistant(*a)])
        .collect();
    let req = extract_request(&messages, ToolChoice::Function("extract_facts".into()));
    let started = Instant::now();
    let resp = model
        .complete_blocking(&req, &AtomicBool::new(false))
        .unwrap();
    let call_secs = started.elapsed().as_secs_f64();
    let s = model.last_stats();
    let forced_batch = std::env::var("MNEMO_LLM_FORCED_BATCH").map_or(true, |v| v.trim() != "0");
    println!(
        "forced_batch={forced_batch} load_s={load_secs:.1} prompt_tokens={} prompt_s={:.1} gen_tokens={} forced_tokens={} dropped_tokens={} passes={} gen_s={:.1} call_s={call_secs:.1}",
        s.prompt_tokens,
        s.prompt_secs,
        s.generated_tokens,
        s.forced_tokens,
        s.dropped_tokens,
        s.generated_tokens - s.forced_tokens,
        s.generate_secs
    );
    let args = resp
        .tool_calls()
        .first()
        .map(|c| c.function.arguments_value())
        .unwrap_or_default();
    println!("arguments={args}");
}
