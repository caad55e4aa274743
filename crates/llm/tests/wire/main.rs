//! Integration tests of mnemo-llm against the scripted loopback server:
//! outgoing request bodies, conversions, retries, error classification,
//! embeddings batching and provider resolution. One test binary keeps link
//! times low.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod common;
mod embeddings;
mod limits;
mod openai;
mod provider;
mod snapshots;
