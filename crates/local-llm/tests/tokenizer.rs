//! The tokenizer built from GGUF metadata gives the token ids of the
//! models' official tokenizers. The expected ids (`data/tokenizer_reference.json`)
//! were computed with Python `tokenizers` configured as each model's
//! official `tokenizer.json`, reading the same vocabulary and merges;
//! `data/qwen2-vocab.gguf` is Qwen2.5-Coder-1.5B-Instruct's GGUF metadata
//! without its weights (as llama.cpp keeps vocab-only files for its own
//! tokenizer tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use candle_core::quantized::gguf_file::Content;
use mnemo_local_llm::tokenizer::GgufTokenizer;
use serde_json::Value;

fn tokenizer(path: &Path) -> GgufTokenizer {
    let mut f = std::fs::File::open(path).unwrap();
    GgufTokenizer::from_gguf(&Content::read(&mut f).unwrap()).unwrap()
}

fn reference() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenizer_reference.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn check(tok: &GgufTokenizer, model: &str) {
    let r = reference();
    let texts = r["texts"].as_array().unwrap();
    for (i, text) in texts.iter().enumerate() {
        let text = text.as_str().unwrap();
        let want: Vec<u32> = serde_json::from_value(r[model][i].clone()).unwrap();
        let got = tok.encode(text).unwrap();
        assert_eq!(got, want, "{model}: {text:?}");
        if !text.contains('\u{301}') && !text.contains("<|") {
            assert_eq!(tok.decode(&got), text, "{model}: round trip");
        }
    }
}

#[test]
fn smollm2_ids_match_the_reference() {
    check(&tokenizer(&mnemo_test_support::smollm2_gguf()), "smollm2");
}

#[test]
fn qwen2_ids_match_the_reference() {
    let t = tokenizer(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qwen2-vocab.gguf"));
    check(&t, "qwen2");
    // Control tokens are single ids and are left out of decoded text.
    let ids = t.encode("<|im_start|>user\nhi<|im_end|>").unwrap();
    assert_eq!(ids[0], t.id("<|im_start|>").unwrap());
    assert!(t.is_control(ids[0]));
    assert_eq!(t.decode(&ids), "user\nhi");
    // `<tool_call>` is one token the model writes, not a control token.
    let tc = t.id("<tool_call>").unwrap();
    assert!(!t.is_control(tc));
    assert_eq!(t.token_bytes(tc), b"<tool_call>");
}
