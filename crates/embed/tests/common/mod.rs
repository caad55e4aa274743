//! Helpers shared by the integration tests: the model files and cosine.
#![allow(dead_code)]

#[allow(unused_imports)]
pub use mnemo_test_support::{e5_model_file, model_dir, mpnet_model_dir};

pub fn cos(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

pub const REF_A: &str = "A man is eating food.";
pub const REF_B: &str = "A man is eating a piece of bread.";
/// cos(REF_A, REF_B) with all-MiniLM-L6-v2 in sentence-transformers.
pub const REF_COS: f32 = 0.7553;

/// Sentences of varied length and content, deterministic; none blank
/// (`Embedder::embed` refuses blank texts, so the one in `base` only
/// shapes the longer texts).
pub fn sentences() -> Vec<String> {
    let base = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The girl is carrying a baby.",
        "A man is riding a horse.",
        "A woman is playing violin.",
        "Two men pushed carts through the woods.",
        "A man is riding a white horse on an enclosed ground.",
        "A monkey is playing drums.",
        "Someone in a gorilla costume is playing a set of drums.",
        "Hey Mel! Good to see you! How have you been?",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        "The deploy key for staging is ERR-4711; rotate it every 30 days.",
        "我每周二上钢琴课。",
        "",
        "ok",
        "Remember that the user prefers tea over coffee in the morning, but only green tea, never black tea after 2 pm.",
    ];
    let mut out: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    // Longer, multi-sentence texts, built deterministically.
    for i in 0..20 {
        let n = 1 + (i * 7) % 9;
        let mut s = String::new();
        for j in 0..n {
            s.push_str(base[(i + j * 3) % base.len()]);
            s.push(' ');
        }
        out.push(s.trim().to_string());
    }
    out.retain(|s| !s.trim().is_empty());
    out
}
