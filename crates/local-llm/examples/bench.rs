//! Speed of the local chat model on one GGUF: prompt tokens per second,
//! generation tokens per second and peak RSS, for mnemo's engine or for
//! candle's own quantized model on the same file and prompt.
//!
//! ```text
//! cargo run --release -p mnemo-local-llm --example bench -- FILE.gguf [mnemo|candle] [PROMPT_TOKENS] [GEN_TOKENS]
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use mnemo_core::Message;
use mnemo_llm::ChatRequest;
use mnemo_local_llm::{LocalChat, LocalOptions};

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// A prompt of roughly `n` tokens: a memory-like list of facts.
fn prompt_text(n: usize) -> String {
    let facts = [
        "The user moved to Lisbon in March and works as a data engineer.",
        "They drink green tea, never coffee, and walk to work along the river.",
        "Their sister Ana visits every second weekend with her two children.",
        "The staging deploy key is rotated every thirty days by the ops team.",
    ];
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n * 4 {
        s.push_str(&format!("- [{}] {}\n", i, facts[i % facts.len()]));
        i += 1;
    }
    s.push_str("\nSummarise the facts above in one paragraph.");
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = std::path::PathBuf::from(&args[1]);
    let engine = args.get(2).map(String::as_str).unwrap_or("mnemo");
    let n_prompt: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(512);
    let n_gen: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(64);
    let text = prompt_text(n_prompt);
    let threads = candle_core::utils::get_num_threads();
    match engine {
        "mnemo" => {
            let m = LocalChat::load(
                &file,
                &LocalOptions {
                    name: "bench".into(),
                    context_window: 4096,
                    max_output: n_gen as u32,
                    seed: 0,
                    prompt_cache: None,
                },
            )
            .unwrap();
            let req = ChatRequest::new(vec![Message::user(text)]).with_max_tokens(n_gen as u32);
            // Force the whole budget: no early stop on a short answer matters
            // for the rate, which is tokens over time.
            let answer = m.complete_blocking(&req, &AtomicBool::new(false)).unwrap();
            // The answer on stderr: a glance shows a broken kernel.
            eprintln!("{}", answer.text());
            let s = m.last_stats();
            println!(
                "engine=mnemo threads={threads} prompt_tokens={} prompt_tok_s={:.1} gen_tokens={} gen_tok_s={:.1} peak_rss_mb={:.0}",
                s.prompt_tokens,
                s.prompt_tokens as f64 / s.prompt_secs,
                s.generated_tokens,
                s.generated_tokens as f64 / s.generate_secs.max(1e-9),
                peak_rss_mb()
            );
        }
        "candle" => {
            let mut f = std::fs::File::open(&file).unwrap();
            let ct = gguf_file::Content::read(&mut f).unwrap();
            let arch = ct.metadata["general.architecture"]
                .to_string()
                .unwrap()
                .clone();
            let m = LocalChat::load(
                &file,
                &LocalOptions {
                    name: "tok".into(),
                    context_window: 4096,
                    max_output: 8,
                    seed: 0,
                    prompt_cache: None,
                },
            )
            .unwrap();
            let req = ChatRequest::new(vec![Message::user(text)]);
            let tokens = m.tokenize(&m.render(&req)).unwrap();
            drop(m);
            let dev = Device::Cpu;
            enum W {
                Q(candle_transformers::models::quantized_qwen2::ModelWeights),
                L(candle_transformers::models::quantized_llama::ModelWeights),
            }
            let mut w = if arch == "qwen2" {
                W::Q(
                    candle_transformers::models::quantized_qwen2::ModelWeights::from_gguf(
                        ct, &mut f, &dev,
                    )
                    .unwrap(),
                )
            } else {
                W::L(
                    candle_transformers::models::quantized_llama::ModelWeights::from_gguf(
                        ct, &mut f, &dev,
                    )
                    .unwrap(),
                )
            };
            let mut fwd = |ids: &[u32], pos: usize| -> Tensor {
                let x = Tensor::new(ids, &dev).unwrap().unsqueeze(0).unwrap();
                match &mut w {
                    W::Q(m) => m.forward(&x, pos).unwrap(),
                    W::L(m) => m.forward(&x, pos).unwrap(),
                }
            };
            let t = Instant::now();
            let logits = fwd(&tokens, 0);
            let prompt_secs = t.elapsed().as_secs_f64();
            let mut next = logits
                .flatten_all()
                .unwrap()
                .argmax(0)
                .unwrap()
                .to_scalar::<u32>()
                .unwrap();
            let t = Instant::now();
            for i in 0..n_gen {
                let l = fwd(&[next], tokens.len() + i);
                next = l
                    .flatten_all()
                    .unwrap()
                    .argmax(0)
                    .unwrap()
                    .to_scalar::<u32>()
                    .unwrap();
            }
            let gen_secs = t.elapsed().as_secs_f64();
            println!(
                "engine=candle threads={threads} prompt_tokens={} prompt_tok_s={:.1} gen_tokens={n_gen} gen_tok_s={:.1} peak_rss_mb={:.0}",
                tokens.len(),
                tokens.len() as f64 / prompt_secs,
                n_gen as f64 / gen_secs,
                peak_rss_mb()
            );
        }
        other => panic!("unknown engine {other}: mnemo or candle"),
    }
    std::io::stdout().flush().unwrap();
}
