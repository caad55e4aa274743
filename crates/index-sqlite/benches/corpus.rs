//! The generated corpus of the index benchmark and of the `scale`
//! example: daily logs of `## Note` sections whose words come from a skewed
//! vocabulary, from a seeded RNG (the same text on every machine).
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

pub const WORDS: &[&str] = &[
    "budget",
    "river",
    "search",
    "dinner",
    "trip",
    "flaky",
    "server",
    "history",
    "team",
    "design",
    "lentil",
    "memory",
    "cache",
    "piano",
    "garden",
    "tomato",
    "deploy",
    "payment",
    "sailing",
    "book",
    "hotel",
    "flight",
    "meeting",
    "review",
    "recipe",
    "paprika",
    "leak",
    "image",
    "knee",
    "physio",
    "chapter",
    "empire",
    "onboarding",
    "alice",
    "sam",
    "priya",
    "dana",
    "porto",
    "lisbon",
    "tuesday",
    "friday",
    "morning",
    "evening",
    "weekend",
    "tokenizer",
    "index",
    "vector",
    "query",
    "release",
    "invoice",
    "doctor",
    "school",
    "concert",
    "coffee",
    "tea",
];

/// Words drawn from a skewed vocabulary: 30 % from a small set of frequent
/// words (present in most chunks, like stop words), the rest from 5,000 rarer
/// terms with a long tail, so posting lists look like real text.
pub fn sentence(rng: &mut StdRng, words: usize) -> String {
    (0..words)
        .map(|_| {
            if rng.random::<f32>() < 0.3 {
                WORDS[rng.random_range(0..WORDS.len())].to_string()
            } else {
                let u: f64 = rng.random();
                format!("term{}", (u * u * u * 5000.0) as usize)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A workspace of `chunks` sections (one chunk each with chunk_tokens 80),
/// `per_file` sections per daily-log file (one day each from 2020-01-01);
/// with `per_file = 1`, one note file per section under `memory/notes/`.
pub fn write_corpus(root: &Path, chunks: usize, per_file: usize, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let per_file = per_file.max(1);
    let files = chunks.div_ceil(per_file);
    for f in 0..files {
        let (dir, name) = if per_file == 1 {
            (
                root.join(format!("memory/notes/{:03}", f / 1000)),
                format!("n{f:07}.md"),
            )
        } else {
            let date = chrono::NaiveDate::from_ymd_opt(2020, 1, 1).unwrap()
                + chrono::Duration::days(f as i64);
            (
                root.join("memory"),
                format!("{}.md", date.format("%Y-%m-%d")),
            )
        };
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for s in 0..per_file.min(chunks - f * per_file) {
            text.push_str(&format!(
                "## Note {s}\n{} id-{f}-{s}.\n",
                sentence(&mut rng, 36)
            ));
        }
        std::fs::write(dir.join(name), text).unwrap();
    }
}
