//! The memory engine of mnemo: consolidation of old turns into MEMORY.md
//! and the history log ([`consolidate`]) through the merge guard
//! ([`merge`]), undone with [`undo`], the pre-compaction memory flush
//! ([`flush`]), the compaction pipeline, cheapest level first
//! ([`pipeline`], [`compact`]), session notes ([`session`]), recall
//! selection ([`recall`]), the context builder ([`context`]), the agent
//! loop that runs a turn with the memory tools ([`agent`]) and the memory
//! work that runs after a turn's answer ([`memory_work`]) and recall within
//! a token budget ([`budget`]).
//!
//! Everything that changes the prompt is written to the session log as a
//! compaction record, so [`rebuild_history`] gives the same prompt from the
//! same log, and every change is reported to the caller as an
//! [`EngineEvent`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod adjudicate;
pub mod agent;
pub mod budget;
pub mod compact;
pub mod compactor;
pub mod consolidate;
pub mod context;
pub mod dates;
pub mod dream;
pub mod engine;
pub mod error;
pub mod events;
pub mod excerpt;
pub mod extract;
pub mod facts;
pub mod flush;
pub mod guard;
pub mod history;
pub mod lock;
pub mod memory_work;
pub mod merge;
pub mod pipeline;
pub mod recall;
pub mod rerank;
pub mod rounds;
pub mod session;
pub mod settings;
pub mod templates;
pub mod undo;

pub use agent::{
    iteration_limit_notice, AgentStep, AgentTurn, ToolCallRecord, ToolExecutor, TurnOptions,
    DEFAULT_MAX_ITERATIONS,
};
pub use budget::{fit_budget, fit_recall, split_citation, Recall, Recalled};
pub use compact::{TurnOutcome, TurnReport};
pub use compactor::{Compactor, ModelCompactor, TemplateCompactor};
pub use consolidate::{pick_boundary, save_memory_tool, OnRound, RunProgress};
pub use context::{ContextPart, ContextReport};
pub use dream::{undo_dream, DreamReport, DreamUndone};
pub use engine::{Clock, Engine, Thresholds};
pub use error::{Error, Result};
pub use events::{CompactionReport, ConsolidationRound, EngineEvent, FlushReport};
pub use facts::FactRound;
pub use history::{rebuild_entries, rebuild_history, Entry};
pub use memory_work::{MemoryWorkMode, MemoryWorkReport, MemoryWorkers, WorkState};
pub use recall::{MemoryHit, MemorySearch, RecallOutcome};
pub use rerank::{cut_passage, JudgementCache, Passage, RerankOptions, RerankOutcome};
pub use rounds::round_marker;
pub use session::NewSessionReport;
pub use settings::EngineSettings;
pub use undo::{undo_consolidation, undo_facts_round, FactsUndone, Undone};
