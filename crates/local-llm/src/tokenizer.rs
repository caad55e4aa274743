//! The tokenizer built from a GGUF file's metadata (`tokenizer.ggml.*`):
//! byte-level BPE with the pre-tokenizer of the model family (Qwen2's split
//! regex, SmolLM's single digits, GPT-2's regex), control tokens matched
//! whole, and every token's bytes for constrained decoding.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::error::{Error, Result};

/// Qwen2's pre-tokenizer regex (as in its `tokenizer.json` and llama.cpp).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token types (llama.cpp's `llama_token_type`).
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;

/// A model's tokenizer and what decoding needs to know about its tokens.
pub struct GgufTokenizer {
    inner: Tokenizer,
    /// Each token's bytes (the text of a control token).
    bytes: Vec<Vec<u8>>,
    /// Control tokens (`<|im_end|>`, …): never part of constrained JSON,
    /// never shown in an answer.
    control: Vec<bool>,
    ids: HashMap<String, u32>,
    /// End-of-sequence id from the metadata.
    pub eos: Option<u32>,
}

fn md<'a>(ct: &'a Content, key: &str) -> Option<&'a Value> {
    ct.metadata.get(key)
}

fn string_array(ct: &Content, key: &str) -> Result<Vec<String>> {
    let bad = |m: String| Error::Invalid(format!("GGUF metadata {key}: {m}"));
    let v = md(ct, key).ok_or_else(|| bad("missing".into()))?;
    v.to_vec()
        .map_err(|e| bad(e.to_string()))?
        .iter()
        .map(|s| s.to_string().cloned().map_err(|e| bad(e.to_string())))
        .collect()
}

/// GPT-2's map from bytes to the printable characters byte-level BPE
/// vocabularies are written in.
fn byte_to_char() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
        map[b as usize] = if printable {
            char::from(b)
        } else {
            n += 1;
            char::from_u32(255 + n).unwrap_or('\0')
        };
    }
    map
}

impl GgufTokenizer {
    /// Builds the tokenizer from `tokenizer.ggml.*` metadata. Only
    /// byte-level BPE (`tokenizer.ggml.model = "gpt2"`) is supported.
    pub fn from_gguf(ct: &Content) -> Result<Self> {
        let model = md(ct, "tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if model != "gpt2" {
            return Err(Error::Invalid(format!(
                "tokenizer type `{model}` is not supported: mnemo runs byte-level BPE (`gpt2`) models such as Qwen2.5 and SmolLM2"
            )));
        }
        let pre = md(ct, "tokenizer.ggml.pre")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let tokens = string_array(ct, "tokenizer.ggml.tokens")?;
        let merges: Vec<(String, String)> = string_array(ct, "tokenizer.ggml.merges")?
            .into_iter()
            .filter_map(|m| {
                let (a, b) = m.split_once(' ')?;
                Some((a.to_string(), b.to_string()))
            })
            .collect();
        let types: Vec<i32> = match md(ct, "tokenizer.ggml.token_type").map(Value::to_vec) {
            Some(Ok(v)) => v.iter().map(|t| t.to_i32().unwrap_or(1)).collect(),
            _ => vec![1; tokens.len()],
        };
        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| {
                Error::Invalid(format!(
                    "the GGUF vocabulary does not make a BPE model: {e}"
                ))
            })?;
        let mut inner = Tokenizer::new(bpe);
        let pre_tokenizer: PreTokenizerWrapper = match pre.as_str() {
            "qwen2" => {
                let split = Split::new(
                    SplitPattern::Regex(QWEN2_SPLIT.into()),
                    SplitDelimiterBehavior::Isolated,
                    false,
                )
                .map_err(|e| Error::Invalid(format!("pre-tokenizer regex: {e}")))?;
                inner
                    .with_normalizer(Some(NFC))
                    .map_err(|e| Error::Invalid(format!("normalizer: {e}")))?;
                Sequence::new(vec![
                    split.into(),
                    ByteLevel::new(false, false, false).into(),
                ])
                .into()
            }
            "smollm" => Sequence::new(vec![
                Digits::new(true).into(),
                ByteLevel::new(false, true, true).into(),
            ])
            .into(),
            _ => ByteLevel::new(false, true, true).into(),
        };
        inner.with_pre_tokenizer(Some(pre_tokenizer));
        inner.with_decoder(Some(ByteLevelDecoder::default()));

        let mut control = vec![false; tokens.len()];
        let mut special = Vec::new();
        let mut user = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            match types.get(i).copied() {
                Some(TYPE_CONTROL) => {
                    control[i] = true;
                    special.push(AddedToken::from(t.clone(), true));
                }
                Some(TYPE_USER_DEFINED) => user.push(AddedToken::from(t.clone(), false)),
                _ => {}
            }
        }
        inner
            .add_special_tokens(special)
            .and_then(|_| inner.add_tokens(user))
            .map_err(|e| Error::Invalid(format!("added tokens: {e}")))?;

        let mut char_to_byte = HashMap::new();
        for (b, c) in byte_to_char().iter().enumerate() {
            char_to_byte.insert(*c, b as u8);
        }
        let bytes = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if control[i] || types.get(i).copied() == Some(TYPE_USER_DEFINED) {
                    t.as_bytes().to_vec()
                } else {
                    t.chars()
                        .map(|c| char_to_byte.get(&c).copied().unwrap_or(b'?'))
                        .collect()
                }
            })
            .collect();
        let eos = md(ct, "tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok());
        let ids = tokens
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as u32))
            .collect();
        Ok(GgufTokenizer {
            inner,
            bytes,
            control,
            ids,
            eos,
        })
    }

    /// Token ids of `text`; control tokens written in the text (`<|im_start|>`)
    /// become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| Error::Inference(format!("tokenizing: {e}")))
    }

    /// The text of `ids`, control tokens left out.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .filter(|&&i| !self.is_control(i))
            .flat_map(|&i| self.token_bytes(i).iter().copied())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The bytes of token `id` (empty when out of range).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.bytes
            .get(id as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// True for control tokens.
    pub fn is_control(&self, id: u32) -> bool {
        self.control.get(id as usize).copied().unwrap_or(false)
    }

    /// The id of the token written `text`, when there is one.
    pub fn id(&self, text: &str) -> Option<u32> {
        self.ids.get(text).copied()
    }

    /// Number of tokens.
    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }
}
