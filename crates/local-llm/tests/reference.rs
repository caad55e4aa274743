//! mnemo's forward pass (its own kernels, attention and half-float KV
//! cache) against candle's reference implementation of the same GGUF
//! (`candle_transformers`' `quantized_llama`, f32 cache, candle's
//! products) on the real SmolLM2-135M-Instruct: the same next token and
//! nearly the same logits, for a prompt run in one batch, in several
//! batches, and token by token after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::AtomicBool;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use mnemo_core::Message;
use mnemo_llm::ChatRequest;
use mnemo_local_llm::model::{argmax, Model};

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn logits_agree_with_candles_reference_model() {
    let path = mnemo_test_support::smollm2_gguf();
    let chat = common::smollm2(2048);
    let text = "My sister Ana moved to Lisbon in March. She works as a data engineer and \
                walks to work along the river. Where does my sister live, and what is her job?";
    let req = ChatRequest::new(vec![Message::user(text)]);
    let tokens = chat.tokenize(&chat.render(&req)).unwrap();
    drop(chat);
    assert!(tokens.len() > 40, "{}", tokens.len());

    let open = || {
        let mut f = std::fs::File::open(&path).unwrap();
        let ct = gguf_file::Content::read(&mut f).unwrap();
        (ct, f)
    };
    let (ct, mut f) = open();
    let mut reference = ModelWeights::from_gguf(ct, &mut f, &Device::Cpu).unwrap();
    let run_ref = |m: &mut ModelWeights, ids: &[u32], pos: usize| -> Vec<f32> {
        let x = Tensor::new(ids, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        m.forward(&x, pos)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let (ct, mut f) = open();
    let mut ours = Model::load(&ct, &mut f, 2048).unwrap();
    let no = AtomicBool::new(false);

    let want = run_ref(&mut reference, &tokens, 0);
    let (got, reused) = ours.prefill(&tokens, &no).unwrap();
    assert_eq!(reused, 0);
    assert_eq!(got.len(), want.len());
    assert_eq!(argmax(&got), argmax(&want), "the next token");
    let c = cosine(&got, &want);
    assert!(c > 0.995, "cosine of the prompt's logits: {c}");

    // Ten greedy steps, both fed the reference's choice: each one's logits
    // stay close to the reference's, and where the two pick different
    // tokens it is a near tie (int8 activations and a half-float cache
    // against candle's own rounding), never a different answer.
    let mut next = argmax(&want);
    let mut same = 0;
    for i in 0..10 {
        let want = run_ref(&mut reference, &[next], tokens.len() + i);
        let got = ours.step(next).unwrap();
        let c = cosine(&got, &want);
        assert!(c > 0.99, "step {i}: cosine {c}");
        let (mine, theirs) = (argmax(&got) as usize, argmax(&want) as usize);
        if mine == theirs {
            same += 1;
        } else {
            let gap = got[mine] - got[theirs];
            assert!(gap < 0.5, "step {i}: {mine} over {theirs} by {gap}");
        }
        next = theirs as u32;
    }
    assert!(same >= 7, "the same greedy token in {same} of 10 steps");

    // The same prompt again from an empty cache, split across batches and
    // token by token: the same bits as in one batch.
    ours.reset();
    let (again, _) = ours.prefill(&tokens, &no).unwrap();
    assert_eq!(again, got_prompt(&mut ours, &tokens));
    assert_eq!(again, got);
}

/// The prompt's logits computed one token at a time.
fn got_prompt(m: &mut Model, tokens: &[u32]) -> Vec<f32> {
    m.reset();
    let mut last = Vec::new();
    for &t in tokens {
        last = m.step(t).unwrap();
    }
    last
}

/// Tokens appended as one batch after a prompt (a run a schema forces)
/// give, at every position, the bits of the same tokens stepped one at a
/// time, and leave the cache as the steps do: the next token's logits are
/// the same too, and a cut back to part of the run is as if only that part
/// had run.
#[test]
fn appended_tokens_give_the_bits_of_steps() {
    let path = mnemo_test_support::smollm2_gguf();
    let chat = common::smollm2(2048);
    let req = ChatRequest::new(vec![Message::user("Where does my sister live?")]);
    let prompt = chat.tokenize(&chat.render(&req)).unwrap();
    let run = chat.tokenize(r#"{"facts": [{"quote": ""#).unwrap();
    let next = chat.tokenize("My").unwrap()[0];
    drop(chat);
    assert!(run.len() >= 5, "{run:?}");
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let mut m = Model::load(&ct, &mut f, 2048).unwrap();
    let no = AtomicBool::new(false);

    m.prefill(&prompt, &no).unwrap();
    let rows = m.append_rows(&run, &no).unwrap();
    let after = m.step(next).unwrap();
    m.truncate(prompt.len());
    assert_eq!(m.append(&run, &no).unwrap(), rows[run.len() - 1]);

    m.reset();
    m.prefill(&prompt, &no).unwrap();
    assert_eq!(rows.len(), run.len());
    for (i, &t) in run.iter().enumerate() {
        assert_eq!(m.step(t).unwrap(), rows[i], "token {i} of the run");
    }
    assert_eq!(m.step(next).unwrap(), after);

    // Cut back to the first two tokens of the run: the next token sees
    // only them.
    m.truncate(prompt.len() + 2);
    assert_eq!(m.cached_len(), prompt.len() + 2);
    let cut = m.step(next).unwrap();
    m.reset();
    let mut two = prompt.clone();
    two.extend(&run[..2]);
    two.push(next);
    let (fresh, _) = m.prefill(&two, &no).unwrap();
    assert_eq!(cut, fresh);
}
