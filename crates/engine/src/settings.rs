//! The `[engine]` section of `mnemo.toml`: every threshold of consolidation,
//! flush, the compaction pipeline and recall, with the reference systems'
//! defaults.

use serde::{Deserialize, Serialize};

/// Settings of the engine, read with `Config::section("engine")`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineSettings {
    /// Overrides the model's context window (tokens) when set.
    pub context_window: Option<usize>,
    /// Overrides the model's largest output (tokens) when set.
    pub max_output: Option<usize>,
    /// Count tokens with the model's tiktoken encoding (else chars/4).
    pub exact_tokens: bool,

    /// Safety buffer of the consolidation budget (nanobot: 1,024).
    pub safety_buffer: usize,
    /// Consolidation target as a fraction of the budget (0.1–0.95).
    pub consolidation_ratio: f64,
    /// Consolidation rounds per turn at most (5).
    pub consolidation_max_rounds: usize,
    /// Separate failed consolidation runs (commands, turns) before the
    /// chunk is archived raw (3); one run asks the model once.
    pub consolidation_max_failures: u32,
    /// Seconds a failed consolidation run must come after the last counted
    /// one to count toward `consolidation_max_failures` (600): a script's
    /// retry loop or a user's quick re-runs during one outage are one
    /// failed run, not three, so the raw archive needs an outage of
    /// `(max_failures - 1) × spacing` at least. 0 counts every failed run.
    pub consolidation_failure_spacing_secs: u64,
    /// Consolidation runs with a turn; off leaves it to `consolidate_now`.
    pub consolidation_enabled: bool,
    /// When a turn's memory work (consolidation rounds and the memory
    /// flush at its threshold) runs: `"inline"` before the answer,
    /// `"background"` after it, beside the conversation (see
    /// [`crate::memory_work`]), or `"auto"` (the default): in the
    /// background with the local provider, whose small model takes 30-100 s
    /// for each, inline otherwise.
    pub memory_work: String,
    /// How consolidation writes long-term memory: `"memory_md"` (one model
    /// call rewrites MEMORY.md through the merge guard, nanobot's design)
    /// or `"facts"` (facts extracted, compared with the most similar ones
    /// and added, updated, ended or left, in `memory/facts.md`).
    pub consolidation_mode: String,
    /// Existing facts shown to the model per new fact (5).
    pub facts_similar: usize,
    /// Daily logs at least this many days old are folded into the facts
    /// by `mnemo dream` (7).
    pub dream_fold_days: u32,
    /// Lines MEMORY.md may have after a consolidation.
    pub memory_max_lines: usize,
    /// Bytes MEMORY.md may have after a consolidation.
    pub memory_max_bytes: usize,
    /// Share of the prompt budget (context window minus output and safety
    /// buffer) that memory may take in the system prompt: MEMORY.md, then
    /// the current facts, then the daily logs, each cut with a note saying
    /// where the rest is (0.25).
    pub prompt_memory_share: f64,

    /// OpenClaw's reserve floor (20,000).
    pub flush_reserve_floor: usize,
    /// OpenClaw's soft threshold (4,000).
    pub flush_soft_threshold: usize,
    /// The flush turn runs at all.
    pub flush_enabled: bool,
    /// Where the flush writes: `"daily_log"` (its items appended to
    /// today's daily log, OpenClaw's design) or `"facts"` (each item
    /// compared with the most similar current facts and added, updated,
    /// ended or left in `memory/facts.md`, as fact-level consolidation
    /// does; the items go to the daily log instead when the model gives no
    /// decision).
    pub flush_mode: String,
    /// A session log this large forces the flush whatever the tokens
    /// (OpenClaw: 2 MB).
    pub flush_transcript_bytes: u64,

    /// Cap on the output reserve of the effective window (20,000).
    pub autocompact_output_cap: usize,
    /// Autocompact fires at effective window minus this (13,000).
    pub autocompact_buffer: usize,
    /// Tokens of the newest messages kept verbatim (20,000).
    pub tail_tokens: usize,
    /// Consecutive autocompact failures that open the breaker (3).
    pub breaker_failures: u32,
    /// Compaction retries after a context-overflow error (3).
    pub reactive_max_retries: u32,

    /// Minutes since the last assistant message before microcompact (60).
    pub microcompact_gap_minutes: i64,
    /// Results kept by microcompact (the last 5).
    pub microcompact_keep: usize,
    /// Tools whose results can be fetched again, so may be cleared.
    pub microcompact_tools: Vec<String>,
    /// Tools whose results are never cleared (sub-agents, skills).
    pub protected_tools: Vec<String>,
    /// Tools whose calls read files (for restoration after autocompact).
    pub read_tools: Vec<String>,
    /// Collapse keeps this many newest user turns unfolded.
    pub collapse_keep_turns: usize,
    /// Characters of an old tool result above which the store's budget is
    /// re-applied to replayed history (50,000).
    pub tool_result_max_chars: usize,
    /// Preview bytes kept when the budget cuts a result (2,000).
    pub tool_result_preview_bytes: usize,

    /// Files restored after autocompact (5).
    pub restore_max_files: usize,
    /// Tokens of each restored file (5,000).
    pub restore_file_tokens: usize,
    /// Tokens of all restored files (50,000).
    pub restore_total_tokens: usize,
    /// Instruction files re-injected after compaction.
    pub instruction_files: Vec<String>,
    /// The current plan, re-injected after compaction when it exists.
    pub plan_file: String,

    /// Memory files scanned by the side query (200).
    pub recall_max_files: usize,
    /// Lines read from each (30).
    pub recall_head_lines: usize,
    /// Files the side query may select (5).
    pub recall_max_selected: usize,
    /// Tokens the selected files may take in the prompt (2,000): a file
    /// that fits is shown whole, a longer one as its lines nearest the
    /// user's message; 0 shows each whole up to `restore_file_tokens`.
    pub recall_budget_tokens: usize,
    /// Side query timeout in milliseconds (3,000); a query that runs out
    /// of time is stopped (a local model stops generating).
    pub recall_timeout_ms: u64,
    /// How recall picks memory files: `"model"` (the side query: the
    /// model picks from a manifest, what memory search found first, and
    /// search's files stand in when it fails or is late), `"search"` (the
    /// files memory search finds with the conversation, no model call) or
    /// `"auto"` (the default): search with the local provider, whose model
    /// cannot answer the side query in its timeout and would keep the
    /// turn's answer waiting, the model otherwise.
    pub recall_mode: String,
    /// Output tokens of the side query (256).
    pub recall_max_tokens: u32,
    /// Turns of the conversation, the new message included, that the
    /// recall searches memory with when the index is plugged in (4; 1
    /// searches with the new message alone).
    pub recall_query_turns: usize,

    /// Re-rank `memory_search` hits with the side model (off: it costs a
    /// model call per search). Hits the model judges helpful come first,
    /// in its order; the others follow in the index's order, so nothing is
    /// lost when it errs or times out.
    pub rerank: bool,
    /// Hits of the index the model judges (10): with the default local
    /// model on two cores, each costs about 0.4 s.
    pub rerank_candidates: usize,
    /// Characters of each hit shown (240): its lines nearest the query.
    pub rerank_passage_chars: usize,
    /// Time for the whole re-rank in milliseconds (10,000): passages not
    /// judged by then keep the index's order.
    pub rerank_timeout_ms: u64,
    /// Output tokens of a written ranking, from a model that cannot judge
    /// by probabilities (200).
    pub rerank_max_tokens: u32,
    /// Weight of the model's judgement against the index's rank, 0 to 1
    /// (0.7): 0 keeps the index's order, 1 sorts by the model alone.
    pub rerank_weight: f32,
    /// Search `memory_search` queries beside a passage the side model
    /// writes as their answer (off: it costs a model call per search,
    /// about 1.5 s with the local 1.5B model). Its words and meaning reach
    /// memory that shares neither with the query ("activities" against
    /// "pottery"); it weighs `[search] expansion_weight` of the ranking.
    pub expand: bool,
    /// Time for that passage in milliseconds (5,000): a late one is
    /// dropped and the query searched alone.
    pub expand_timeout_ms: u64,
    /// Output tokens of that passage (64).
    pub expand_max_tokens: u32,

    /// Last user and assistant messages in a session note (15).
    pub note_messages: usize,
    /// Slug request timeout in milliseconds (15,000).
    pub slug_timeout_ms: u64,
    /// Seconds to wait for a busy session lock (30).
    pub lock_wait_secs: u64,
}

impl Default for EngineSettings {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        EngineSettings {
            context_window: None,
            max_output: None,
            exact_tokens: true,
            safety_buffer: 1_024,
            consolidation_ratio: 0.5,
            consolidation_max_rounds: 5,
            consolidation_max_failures: 3,
            consolidation_failure_spacing_secs: 600,
            consolidation_enabled: true,
            memory_work: "auto".into(),
            consolidation_mode: "memory_md".into(),
            facts_similar: 5,
            dream_fold_days: 7,
            memory_max_lines: 200,
            memory_max_bytes: 25_000,
            prompt_memory_share: 0.25,
            flush_reserve_floor: 20_000,
            flush_soft_threshold: 4_000,
            flush_enabled: true,
            flush_mode: "daily_log".into(),
            flush_transcript_bytes: 2 * 1024 * 1024,
            autocompact_output_cap: 20_000,
            autocompact_buffer: 13_000,
            tail_tokens: 20_000,
            breaker_failures: 3,
            reactive_max_retries: 3,
            microcompact_gap_minutes: 60,
            microcompact_keep: 5,
            microcompact_tools: s(&[
                "read",
                "read_file",
                "shell",
                "exec",
                "bash",
                "grep",
                "glob",
                "web_search",
                "web_fetch",
                "edit",
                "edit_file",
                "write",
                "write_file",
            ]),
            protected_tools: s(&["agent", "task", "spawn", "skill"]),
            read_tools: s(&["read", "read_file"]),
            collapse_keep_turns: 4,
            tool_result_max_chars: 50_000,
            tool_result_preview_bytes: 2_000,
            restore_max_files: 5,
            restore_file_tokens: 5_000,
            restore_total_tokens: 50_000,
            instruction_files: s(&["AGENTS.md", "CLAUDE.md"]),
            plan_file: "PLAN.md".into(),
            recall_max_files: 200,
            recall_head_lines: 30,
            recall_max_selected: 5,
            recall_budget_tokens: 2_000,
            recall_timeout_ms: 3_000,
            recall_mode: "auto".into(),
            recall_max_tokens: 256,
            recall_query_turns: mnemo_core::dialogue::RECALL_TURNS,
            rerank: false,
            rerank_candidates: 10,
            rerank_passage_chars: 240,
            rerank_timeout_ms: 10_000,
            rerank_max_tokens: 200,
            rerank_weight: 0.7,
            expand: false,
            expand_timeout_ms: 5_000,
            expand_max_tokens: 64,
            note_messages: 15,
            slug_timeout_ms: 15_000,
            lock_wait_secs: 30,
        }
    }
}

/// The `[engine]` keys a `[memory] profile` sets when the file leaves
/// them out.
pub const PROFILE_KEYS: &[&str] = &[
    "consolidation_mode",
    "consolidation_enabled",
    "flush_enabled",
    "flush_mode",
];

/// The `[engine]` defaults of a `[memory] profile`: consolidation mode,
/// consolidation on, flush on, flush mode.
type ProfileDefaults = (&'static str, bool, bool, &'static str);

fn profile_defaults(profile: &str) -> Result<ProfileDefaults, String> {
    Ok(match profile {
        // Consolidation rewrites MEMORY.md; the flush before compaction
        // saves durable facts through the fact-level decisions (a changed
        // value supersedes the old one, a retraction ends it), typed
        // memories and the fact file are read.
        "mnemo" => ("memory_md", true, true, "facts"),
        // save_memory rewrites MEMORY.md; no pre-compaction flush.
        "nanobot" => ("memory_md", true, false, "daily_log"),
        // No consolidation: the flush appends durable facts to the daily
        // logs, which stay append-only.
        "openclaw" => ("memory_md", false, true, "daily_log"),
        // Memory is written by the agent's own tool calls (typed memories)
        // and found by the recall side query; nothing in the background.
        "claude-code" => ("memory_md", false, false, "daily_log"),
        // Facts extracted and added, updated, ended per fact.
        "mem0" => ("facts", true, false, "facts"),
        other => {
            return Err(format!(
            "unknown [memory] profile {other:?}: use mnemo, nanobot, openclaw, claude-code or mem0"
        ))
        }
    })
}

/// True when `profile` consolidates (the "consolidation" column of the
/// README's table is not "off"); false for an unknown profile.
pub fn profile_consolidates(profile: &str) -> bool {
    profile_defaults(profile).is_ok_and(|(_, consolidate, _, _)| consolidate)
}

/// Sets the `[engine]` defaults of a `[memory] profile` (see the README's
/// table), leaving every key `given` says the file sets.
pub fn apply_profile(
    s: &mut EngineSettings,
    profile: &str,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), String> {
    let (mode, consolidate, flush, flush_mode) = profile_defaults(profile)?;
    if !given("consolidation_mode") {
        s.consolidation_mode = mode.into();
    }
    if !given("consolidation_enabled") {
        s.consolidation_enabled = consolidate;
    }
    if !given("flush_enabled") {
        s.flush_enabled = flush;
    }
    if !given("flush_mode") {
        s.flush_mode = flush_mode.into();
    }
    Ok(())
}

impl EngineSettings {
    /// How a search re-rank runs, from `rerank_*`.
    pub fn rerank_options(&self) -> crate::rerank::RerankOptions {
        crate::rerank::RerankOptions {
            passage_chars: self.rerank_passage_chars,
            max_tokens: self.rerank_max_tokens,
            budget: std::time::Duration::from_millis(self.rerank_timeout_ms),
            weight: self.rerank_weight,
        }
    }

    /// Checks ranges; the message names the field to fix.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.1..=0.95).contains(&self.consolidation_ratio) {
            return Err(format!(
                "[engine] consolidation_ratio = {} is out of range: use a value from 0.1 to 0.95",
                self.consolidation_ratio
            ));
        }
        if !(self.prompt_memory_share > 0.0 && self.prompt_memory_share <= 1.0) {
            return Err(format!(
                "[engine] prompt_memory_share = {} is out of range: use a value above 0 and at most 1",
                self.prompt_memory_share
            ));
        }
        if !matches!(self.consolidation_mode.as_str(), "memory_md" | "facts") {
            return Err(format!(
                "[engine] consolidation_mode = {:?} is unknown: use \"memory_md\" or \"facts\"",
                self.consolidation_mode
            ));
        }
        if !matches!(self.flush_mode.as_str(), "daily_log" | "facts") {
            return Err(format!(
                "[engine] flush_mode = {:?} is unknown: use \"daily_log\" or \"facts\"",
                self.flush_mode
            ));
        }
        if !matches!(self.memory_work.as_str(), "auto" | "inline" | "background") {
            return Err(format!(
                "[engine] memory_work = {:?} is unknown: use \"auto\" (background with the local model), \"inline\" or \"background\"",
                self.memory_work
            ));
        }
        if !matches!(self.recall_mode.as_str(), "auto" | "model" | "search") {
            return Err(format!(
                "[engine] recall_mode = {:?} is unknown: use \"auto\" (search with the local model), \"model\" or \"search\"",
                self.recall_mode
            ));
        }
        if !(0.0..=1.0).contains(&self.rerank_weight) {
            return Err(format!(
                "[engine] rerank_weight = {} is out of range: use a value from 0 (the index's order) to 1 (the model's alone)",
                self.rerank_weight
            ));
        }
        if self.consolidation_max_failures == 0 || self.breaker_failures == 0 {
            return Err(
                "[engine] consolidation_max_failures and breaker_failures must be at least 1"
                    .into(),
            );
        }
        Ok(())
    }
}
