//! The `Embedder` conformance suite (mnemo-test-support) on every embedder
//! of this crate, on the real models: the default multilingual-e5-small q4
//! (through `LocalEmbedder` with the default engine, and as
//! `E5Q4Embedder`), all-MiniLM-L6-v2 on each BERT forward pass (fast,
//! candle, int8), all-mpnet-base-v2, and the hashing embedder. A missing model
//! fails the test with the command that fetches it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_embed::{E5Q4Embedder, Engine, HashEmbedder, LocalEmbedder, LocalModelSpec};
use mnemo_test_support::conformance::embedder::{EmbedderCase, Kinds};
use mnemo_test_support::{e5_model_file, model_dir, mpnet_model_dir};

mnemo_test_support::embedder_suite!(hash, || EmbedderCase::new(
    HashEmbedder::default(),
    Kinds::Same
));

mnemo_test_support::embedder_suite!(e5_q4, || {
    // What `[embedder] path = ".../e5-small-q4.bin"` resolves to.
    let spec = LocalModelSpec::from_path(e5_model_file());
    EmbedderCase::new(LocalEmbedder::resolve(&spec).unwrap(), Kinds::Prefixed)
});

mnemo_test_support::embedder_suite!(e5_q4_direct, || EmbedderCase::new(
    E5Q4Embedder::load(&e5_model_file()).unwrap(),
    Kinds::Prefixed
));

mnemo_test_support::embedder_suite!(minilm, || EmbedderCase::new(
    LocalEmbedder::load(&model_dir()).unwrap(),
    Kinds::Same
));

mnemo_test_support::embedder_suite!(minilm_candle, || EmbedderCase::new(
    LocalEmbedder::load_on(&model_dir(), Engine::Candle).unwrap(),
    Kinds::Same
));

mnemo_test_support::embedder_suite!(minilm_int8, || EmbedderCase::new(
    LocalEmbedder::load_on(&model_dir(), Engine::Int8).unwrap(),
    Kinds::Same
));

mnemo_test_support::embedder_suite!(mpnet, || EmbedderCase::new(
    LocalEmbedder::load(&mpnet_model_dir()).unwrap(),
    Kinds::Same
));
