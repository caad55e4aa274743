//! mnemo-eval: the retrieval benchmark. It replays conversations with
//! annotated evidence through the session store and the memory index, asks
//! each question through the index's search, and scores the rankings of
//! sessions or turns (any@k, all@k, recall@k, MRR, NDCG, evidence recall
//! within a token budget). Nothing in it knows which dataset it reads: any
//! file in the schema of `dataset` is scored the same way. `consolidation`
//! scores what a chat model's consolidation keeps of the same
//! conversations.
//!
//! It also holds the write-path suite ([`write_path`]): scripted facts
//! interleaved into the same conversations, replayed through each memory
//! profile's consolidation, and scored on what memory holds afterwards,
//! with a deterministic rule-based model ([`rule_model`]) to serve for a
//! reproducible baseline, and the checks of wrong supersessions and
//! invented facts ([`memory_checks`]).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod consolidation;
pub mod consolidation_script;
pub mod dataset;
pub mod dates;
pub mod dialogue;
pub mod error;
pub mod memory_checks;
pub mod metrics;
pub mod replay;
pub mod report;
pub mod rule_model;
pub mod run;
pub mod write_path;

pub use consolidation::{
    render_consolidation, run_consolidation_eval, ConsolidationOptions, ConsolidationProgress,
    ConsolidationReport, Retention,
};
pub use dataset::{Conversation, Dataset, Question, SessionData, Turn};
pub use dialogue::{as_engine_queries, derive, QueryShape};
pub use error::{EvalError, Result};
pub use metrics::{MetricSpec, Metrics, RankedHit};
pub use report::{
    render_comparison, render_json, render_text, CategoryReport, EvalCounts, EvalReport,
    EvalSettings, EvalTimings, EvalUnit, Layout, QuestionReport, RetrievalMode,
};
pub use run::{
    run_on_dataset, run_retrieval_eval, EvalOptions, EvalProgress, EvalStage, IndexOpener, Need,
    Rerank,
};
pub use write_path::{run_write_path, ProfileReport, WritePathOptions, WritePathReport};
