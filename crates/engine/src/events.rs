//! What the engine tells its caller: one event per consolidation round,
//! flush and compaction, so that nothing happens silently.

use serde::Serialize;

/// One consolidation round.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConsolidationRound {
    /// Cursor before.
    pub from: usize,
    /// Cursor after (the chunk is `from..to`).
    pub to: usize,
    /// True when the chunk was archived raw after repeated failed runs.
    pub raw: bool,
    /// True when the provider refused the forced tool choice and `auto` was used.
    pub fell_back_to_auto: bool,
    /// True when MEMORY.md was rewritten.
    pub memory_changed: bool,
    /// Exact duplicate lines dropped from the model's MEMORY.md.
    pub duplicates_dropped: usize,
    /// Lines beyond the cap moved from MEMORY.md into the history entry.
    pub lines_trimmed: usize,
    /// Lines the model left out that the merge guard kept: index lines,
    /// lines written by tools or people, lines added while it thought.
    pub lines_kept: usize,
    /// Lines an earlier consolidation wrote that the model dropped (the
    /// history's diff keeps them).
    pub lines_dropped: usize,
    /// True when the model's update would have dropped most lines and was
    /// refused: the old lines stayed and its new ones were added.
    pub update_refused: bool,
    /// True when a run that crashed after writing this round's history
    /// entry is finished by moving the cursor (nothing written twice).
    pub recovered: bool,
    /// What a fact-level round (`consolidation_mode = "facts"`) did to
    /// `memory/facts.md`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<crate::facts::FactRound>,
    /// Lines of consolidation's MEMORY.md left out because a current fact
    /// of `memory/facts.md` already says all they say (one home per fact).
    #[serde(skip_serializing_if = "is_zero")]
    pub lines_held_by_facts: usize,
    /// New lines of the model's MEMORY.md that copied the excerpt's
    /// messages (`**User:** …` lines, or a message word for word): not
    /// memory, not saved (see [`crate::guard`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub lines_copied: usize,
    /// New lines of the model's MEMORY.md that repeated mnemo's own
    /// instructions: not saved.
    #[serde(skip_serializing_if = "is_zero")]
    pub lines_echoed: usize,
    /// Messages cut for the prompt (longer than their share of the round;
    /// the session log keeps them whole).
    #[serde(skip_serializing_if = "is_zero")]
    pub messages_cut: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a memory flush did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlushReport {
    /// Why it ran: `threshold`, `autocompact`, `reactive` or `manual`.
    pub reason: String,
    /// The model answered `NO_REPLY` (nothing written).
    pub no_reply: bool,
    /// Daily log written to.
    pub path: Option<String>,
    /// Lines written.
    pub written: usize,
    /// Lines skipped as duplicates.
    pub duplicates: usize,
    /// Lines dropped to stay within the append bound.
    pub truncated: usize,
    /// Lines of the answer that were not bullet items (prose such as
    /// "Nothing new to save."), not saved.
    pub ignored: usize,
    /// Prompt tokens when it ran.
    pub tokens: usize,
    /// What the write path did to `memory/facts.md` (`flush_mode =
    /// "facts"`; a failed extraction is a `FlushFailed` event, and the
    /// messages stay for consolidation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facts: Option<crate::facts::FactRound>,
    /// Items that only repeated mnemo's own instructions ("The
    /// conversation has been compacted."): not memories, not saved.
    #[serde(skip_serializing_if = "is_zero")]
    pub echoed: usize,
}

/// What one compaction level did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionReport {
    /// `tool_budget`, `snip`, `microcompact`, `collapse`, `autocompact` or `reactive`.
    pub kind: String,
    /// Prompt tokens before.
    pub tokens_before: usize,
    /// Prompt tokens after.
    pub tokens_after: usize,
    /// Items changed (messages snipped, results cleared, spans folded,
    /// messages summarised).
    pub changed: usize,
    /// First message kept verbatim (autocompact, reactive).
    pub first_kept: Option<usize>,
}

/// Something the engine did before or during a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EngineEvent {
    /// A chunk was consolidated (or archived raw).
    Consolidated(ConsolidationRound),
    /// A consolidation run failed; the cursor stayed.
    ConsolidationFailed {
        /// Chunk start.
        from: usize,
        /// Chunk end.
        to: usize,
        /// Consecutive failed runs of this session.
        failures: u32,
        /// Why.
        error: String,
    },
    /// The memory flush ran.
    Flushed(FlushReport),
    /// The memory flush failed; compaction went on.
    FlushFailed {
        /// Why.
        error: String,
    },
    /// A compaction level changed the prompt.
    Compacted(CompactionReport),
    /// Autocompact failed.
    CompactionFailed {
        /// Level.
        kind: String,
        /// Consecutive failures.
        failures: u32,
        /// Why.
        error: String,
    },
    /// The breaker is open: autocompact was skipped.
    BreakerOpen {
        /// Consecutive failures.
        failures: u32,
    },
}
