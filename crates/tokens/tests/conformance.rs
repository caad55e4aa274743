//! The `TokenCounter` conformance suite (mnemo-test-support) on every
//! counter of this crate: tiktoken in both encodings, the chars/4
//! estimate, and the memo in front of each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_test_support::conformance::tokens::TokenCase;
use mnemo_tokens::{Encoding, EstimateCounter, MemoCounter, TiktokenCounter};

mnemo_test_support::token_counter_suite!(tiktoken_cl100k, || TokenCase::new(
    TiktokenCounter::new(Encoding::Cl100kBase),
    true
));

mnemo_test_support::token_counter_suite!(tiktoken_o200k, || TokenCase::new(
    TiktokenCounter::new(Encoding::O200kBase),
    true
));

mnemo_test_support::token_counter_suite!(estimate, || TokenCase::new(EstimateCounter, false));

mnemo_test_support::token_counter_suite!(memo_tiktoken, || TokenCase::new(
    MemoCounter::new(Arc::new(TiktokenCounter::for_model("gpt-4o"))),
    true
));

mnemo_test_support::token_counter_suite!(memo_estimate, || TokenCase::new(
    MemoCounter::new(Arc::new(EstimateCounter)),
    false
));
