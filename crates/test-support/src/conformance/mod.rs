//! Conformance suites of mnemo's seam traits: one public function per
//! scenario, written once against the trait, and a macro per trait that
//! generates one `#[test]` per scenario for a given implementation
//! ([`embedder_suite!`](crate::embedder_suite),
//! [`chat_model_suite!`](crate::chat_model_suite),
//! [`index_backend_suite!`](crate::index_backend_suite),
//! [`storage_suite!`](crate::storage_suite),
//! [`token_counter_suite!`](crate::token_counter_suite),
//! [`index_store_suite!`](crate::index_store_suite),
//! [`chat_contract_suite!`](crate::chat_contract_suite)).
//!
//! Two lists keep the suites from shrinking unnoticed. Each module's
//! `SCENARIOS` names every scenario function; the macro's generated
//! `suite_is_complete` test fails when the macro skips one, and
//! test-support's own tests fail when a scenario function is missing from
//! the list. [`EMBEDDERS`], [`CHAT_MODELS`], [`TOKEN_COUNTERS`] and
//! [`INDEX_BACKENDS`] (and [`STORAGES`]) name every
//! implementation in the workspace and the suite instances that run it;
//! test-support's tests read the sources and fail when an implementation is
//! missing from them or a named suite instance is not invoked.
//!
//! The suites run from each implementing crate's integration test
//! `tests/conformance.rs` (not its unit tests: there, a crate that
//! test-support depends on would be linked twice); the lifecycle suite
//! of [`INDEX_STORES`] runs from `tests/index_store.rs` and the chat
//! contracts of [`CHAT_CONTRACTS`] from `tests/chat_contract.rs`, which
//! `tests/conformance.rs` checks the same way.

pub mod chat;
pub mod chat_contract;
pub mod embedder;
pub mod index;
pub mod index_store;
pub mod storage;
pub mod tokens;

/// What a suite's case function may return: a case, or `None` when the
/// implementation's server is not there (the scenario then passes without
/// running; the case function prints why, and fails instead where that
/// must not happen, as in CI). One trait for every suite's case type.
pub trait IntoCase<C> {
    /// The case, if there is one.
    fn into_case(self) -> Option<C>;
}

impl<C> IntoCase<C> for C {
    fn into_case(self) -> Option<C> {
        Some(self)
    }
}

impl<C> IntoCase<C> for Option<C> {
    fn into_case(self) -> Option<C> {
        self
    }
}

/// One implementation of a seam trait and where its suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Implementation {
    /// The implementing type, as written after `for` in its `impl`.
    pub ty: &'static str,
    /// The folder under `crates/` whose `tests/conformance.rs` runs it.
    pub tested_in: &'static str,
    /// The suite instances (the macro's first argument) that run it, one
    /// per configuration worth checking. Empty when `exempt` says why not.
    pub suites: &'static [&'static str],
    /// Why the implementation runs no suite, for the few that cannot.
    pub exempt: Option<&'static str>,
}

/// Every [`mnemo_core::Embedder`] in the workspace's libraries.
pub const EMBEDDERS: &[Implementation] = &[
    Implementation {
        ty: "HashEmbedder",
        tested_in: "embed",
        suites: &["hash"],
        exempt: None,
    },
    Implementation {
        ty: "LocalEmbedder",
        tested_in: "embed",
        // The default model (multilingual-e5-small q4, default engine),
        // all-MiniLM-L6-v2 on each BERT forward pass, all-mpnet-base-v2.
        suites: &["e5_q4", "minilm", "minilm_candle", "minilm_int8", "mpnet"],
        exempt: None,
    },
    Implementation {
        ty: "E5Q4Embedder",
        tested_in: "embed",
        suites: &["e5_q4_direct"],
        exempt: None,
    },
    Implementation {
        ty: "OpenAiEmbedder",
        tested_in: "llm",
        suites: &["openai_compatible"],
        exempt: None,
    },
    Implementation {
        ty: "Memo",
        tested_in: "test-support",
        suites: &[],
        exempt: Some(
            "a benchmarks' wrapper that passes each text it has not seen to the embedder it \
             wraps, whose suite runs; its own test checks what it keeps",
        ),
    },
    Implementation {
        ty: "Counting",
        tested_in: "test-support",
        suites: &[],
        exempt: Some("a unit test's stand-in that counts the texts the memo asks it for"),
    },
];

/// Every `mnemo_llm::ChatModel` in the workspace's libraries.
pub const CHAT_MODELS: &[Implementation] = &[
    Implementation {
        ty: "OpenAiChat",
        tested_in: "llm",
        suites: &["openai"],
        exempt: None,
    },
    Implementation {
        ty: "AnthropicChat",
        tested_in: "llm",
        suites: &["anthropic"],
        exempt: None,
    },
    Implementation {
        ty: "Counting",
        tested_in: "eval",
        suites: &["counting"],
        exempt: None,
    },
    Implementation {
        ty: "LocalChat",
        tested_in: "local-llm",
        suites: &[],
        exempt: Some(
            "runs in process with no wire: the suite's scenarios are HTTP failures (429, 5xx, timeouts, refused connections); \
             its behaviour contracts run (CHAT_CONTRACTS)",
        ),
    },
    Implementation {
        ty: "NoModel",
        tested_in: "service",
        suites: &[],
        exempt: Some("a stand-in that refuses every request when no chat model is configured"),
    },
];

/// Every `mnemo_llm::ChatModel` again, and where its behaviour contracts
/// ([`chat_contract_suite!`](crate::chat_contract_suite)) run: every
/// model, in process or over a wire (against the scripted server).
pub const CHAT_CONTRACTS: &[Implementation] = &[
    Implementation {
        ty: "OpenAiChat",
        tested_in: "llm",
        suites: &["openai"],
        exempt: None,
    },
    Implementation {
        ty: "AnthropicChat",
        tested_in: "llm",
        suites: &["anthropic"],
        exempt: None,
    },
    Implementation {
        ty: "LocalChat",
        tested_in: "local-llm",
        // SmolLM2-135M-Instruct, the local tests' model.
        suites: &["smollm2"],
        exempt: None,
    },
    Implementation {
        ty: "Counting",
        tested_in: "eval",
        suites: &[],
        exempt: Some(
            "a wrapper that passes every request to the model it counts, whose contracts run; \
             the HTTP suite runs it over a client",
        ),
    },
    Implementation {
        ty: "NoModel",
        tested_in: "service",
        suites: &[],
        exempt: Some("a stand-in that refuses every request when no chat model is configured"),
    },
];

/// Every [`mnemo_core::TokenCounter`] in the workspace's libraries.
pub const TOKEN_COUNTERS: &[Implementation] = &[
    Implementation {
        ty: "TiktokenCounter",
        tested_in: "tokens",
        suites: &["tiktoken_cl100k", "tiktoken_o200k"],
        exempt: None,
    },
    Implementation {
        ty: "EstimateCounter",
        tested_in: "tokens",
        suites: &["estimate"],
        exempt: None,
    },
    Implementation {
        ty: "MemoCounter",
        tested_in: "tokens",
        suites: &["memo_tiktoken", "memo_estimate"],
        exempt: None,
    },
];

/// Every `mnemo_index::IndexBackend` in the workspace's libraries.
pub const INDEX_BACKENDS: &[Implementation] = &[
    Implementation {
        ty: "SqliteBackend",
        tested_in: "index-sqlite",
        suites: &["sqlite"],
        exempt: None,
    },
    Implementation {
        ty: "PostgresBackend",
        tested_in: "index-postgres",
        suites: &["postgres"],
        exempt: None,
    },
];

/// Every `mnemo_index::IndexStore` in the workspace's libraries, and
/// where its lifecycle suite ([`index_store_suite!`](crate::index_store_suite)) runs.
pub const INDEX_STORES: &[Implementation] = &[
    Implementation {
        ty: "SqliteStore",
        tested_in: "index-sqlite",
        suites: &["sqlite"],
        exempt: None,
    },
    Implementation {
        ty: "PostgresStore",
        tested_in: "index-postgres",
        suites: &["postgres"],
        exempt: None,
    },
];

/// Every `mnemo_store::Storage` in the workspace's libraries.
pub const STORAGES: &[Implementation] = &[
    Implementation {
        ty: "FileStorage",
        tested_in: "store",
        suites: &["files"],
        exempt: None,
    },
    Implementation {
        ty: "PgStorage",
        tested_in: "store-postgres",
        // The tenant case binds every statement to a registration (issue 43 N2).
        suites: &["postgres", "postgres_registered"],
        exempt: None,
    },
];

/// Fails unless `covered` (what a suite macro generates) is exactly
/// `scenarios` (what its module defines), naming the difference.
#[allow(clippy::panic)]
pub fn assert_covers(suite: &str, scenarios: &[&str], covered: &[&str]) {
    let missing: Vec<&&str> = scenarios.iter().filter(|s| !covered.contains(s)).collect();
    let unknown: Vec<&&str> = covered.iter().filter(|s| !scenarios.contains(s)).collect();
    if !missing.is_empty() || !unknown.is_empty() {
        panic!(
            "the {suite} suite macro does not match its scenarios: missing {missing:?}, unknown {unknown:?}; \
             add a #[test] per scenario to the macro"
        );
    }
}
