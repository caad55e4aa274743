//! What each operation answers, as one typed value per operation: the CLI
//! renders it (or prints it with `--json`), the HTTP API and the MCP server
//! send it as JSON, so a search hit has one shape everywhere.

use mnemo_core::Message;
use mnemo_engine::{AgentTurn, ContextReport, EngineEvent};
use mnemo_index::{SearchHit, SearchResponse};
use mnemo_store::SessionInfo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a search ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Keywords (BM25) and vectors.
    Hybrid,
    /// Keywords only (asked for, or no embedding model).
    Keyword,
    /// Vectors only (asked for).
    Vector,
}

impl Mode {
    /// `hybrid`, `keyword` or `vector`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Keyword => "keyword",
            Mode::Vector => "vector",
        }
    }
}

impl From<Mode> for mnemo_index::SearchMode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Hybrid => mnemo_index::SearchMode::Hybrid,
            Mode::Keyword => mnemo_index::SearchMode::Keyword,
            Mode::Vector => mnemo_index::SearchMode::Vector,
        }
    }
}

/// Where a hit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HitSource {
    /// MEMORY.md and memory/*.md.
    Memory,
    /// Session transcripts (sessions/*.jsonl).
    Sessions,
}

/// One search hit, the same on every surface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Hit {
    /// Workspace-relative path.
    pub path: String,
    /// First line (1-based): a block of a Markdown file, or the JSONL line of a message.
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// Final score in 0..=1, rounded to 4 places.
    pub score: f64,
    /// Whether the fact this hit holds is still true: on a hit of one fact
    /// of memory/facts.md, or of one dated line of a typed memory. Read it
    /// before the snippet: a fact that is no longer true says since when
    /// and what replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
    /// The text around the best-matching lines.
    pub snippet: String,
    /// memory or sessions.
    pub source: HitSource,
    /// `path#Lx-Ly`: quote it, or open it with `mnemo get` / `memory_get`.
    pub citation: String,
    /// The session's key, for a transcript hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The day the hit speaks from (`YYYY-MM-DD`, or `first/last` for a span of days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The parts of the score, when `explain` was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<ScoreParts>,
}

/// What a hit's score is made of: the keyword and vector scores, their
/// fusion, the lift of a period the query named (`dates`), the decay with
/// age, an exact match; MMR and the facts' validity then order the hits,
/// and a re-rank by the chat model can move them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScoreParts {
    /// Normalised BM25 score (1 = this query's best keyword hit); absent
    /// when the words did not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword: Option<f64>,
    /// Cosine similarity to the query; absent when the hit was not a
    /// vector candidate (or the search ran on keywords only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<f64>,
    /// The two fused (with the lift of the file's other matching chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fused: Option<f64>,
    /// How closely its days fall in a period the query named (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<f64>,
    /// The age decay the score was multiplied by (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decay: Option<f64>,
    /// It holds one of the query's identifiers or the whole query: ranked first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
    /// Its place before the chat model re-ranked the hits (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_rerank: Option<usize>,
    /// The chat model's judgement that it helps answer the query, 0 to 1
    /// (absent: not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<f64>,
}

impl From<&SearchHit> for Hit {
    fn from(h: &SearchHit) -> Self {
        Hit {
            path: h.path.clone(),
            start_line: h.start_line,
            end_line: h.end_line,
            score: (f64::from(h.score) * 10_000.0).round() / 10_000.0,
            snippet: h.snippet.clone(),
            source: match h.source {
                mnemo_index::Source::Memory => HitSource::Memory,
                mnemo_index::Source::Sessions => HitSource::Sessions,
            },
            citation: h.citation.clone(),
            session_key: h.session_key.clone(),
            date: h.date.clone(),
            validity: None,
            parts: None,
        }
    }
}

/// Whether a fact still holds, as a search hit states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    /// True while it holds; false once it was replaced or retracted.
    pub current: bool,
    /// The fact's id (`f8`); absent for a typed memory's dated line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The day it became true (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The day it stopped being true (`YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The fact that replaced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<FactRef>,
    /// True when it was retracted ("forget that …") rather than replaced.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retracted: bool,
    /// For a fact that is no longer true, what to tell a reader: "no longer
    /// true since 2026-12-05, replaced by f8: The user lives in Berlin." or
    /// "no longer true: retracted on 2026-12-05".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A fact named by another: its id, its text and whether it holds now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactRef {
    /// Its id (`f8`).
    pub id: String,
    /// Its text.
    pub text: String,
    /// True while it holds (a replacement can have been replaced in turn).
    pub current: bool,
}

/// The answer of `memory_search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchOutput {
    /// hybrid, vector (as asked), or keyword (as asked, or vectors could
    /// not be used, and why is in `warnings`).
    pub mode: Mode,
    /// Hits, best first.
    pub results: Vec<Hit>,
    /// Anything the caller should know (keyword-only, a re-rank that failed, …).
    pub warnings: Vec<String>,
    /// How dates named in the query were read, as ISO 8601 days or intervals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dates: Vec<String>,
    /// The query's focus when it was read as dialogue (speaker-tagged
    /// turns): its latest turn, which the ranking weighed most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// Whether the chat model re-ordered the hits (present when a re-rank was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reranked: Option<bool>,
    /// What the re-rank added to the search, in milliseconds (present when one ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank_ms: Option<u64>,
    /// The passage the chat model wrote as the query's answer and the
    /// search read beside it (present when an expansion was asked for and
    /// the model wrote one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion: Option<String>,
    /// What the expansion added to the search, in milliseconds (present
    /// when one ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand_ms: Option<u64>,
    /// The snippets' tokens (4 Latin characters or 1 CJK character each),
    /// when a budget was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<usize>,
}

impl SearchOutput {
    /// The index's answer in the shape every surface sends.
    pub fn from_response(resp: &SearchResponse, reranked: Option<bool>) -> Self {
        SearchOutput {
            mode: match resp.mode {
                mnemo_index::SearchMode::Hybrid => Mode::Hybrid,
                mnemo_index::SearchMode::Keyword => Mode::Keyword,
                mnemo_index::SearchMode::Vector => Mode::Vector,
            },
            results: resp.results.iter().map(Hit::from).collect(),
            warnings: resp.warnings.clone(),
            dates: resp.dates.clone(),
            focus: resp.focus.clone(),
            reranked,
            rerank_ms: None,
            expansion: None,
            expand_ms: None,
            tokens: None,
        }
    }
}

/// The answer of `memory_get`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GetOutput {
    /// The path read (normalised to `/`).
    pub path: String,
    /// The lines, joined with `\n`; empty when the file is missing.
    pub text: String,
    /// First line returned (1-based).
    pub from: usize,
    /// Lines returned.
    pub lines: usize,
    /// Lines in the whole file (0 when missing).
    pub total_lines: usize,
    /// The lines returned whose fact no longer holds (memory/facts.md, and
    /// the dated lines of typed memories), each with since when and what
    /// replaced it: read them as history, not as what is true now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ended: Vec<EndedLine>,
}

/// A line of a memory file whose fact no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EndedLine {
    /// The line (1-based).
    pub line: usize,
    /// Since when it no longer holds, and what replaced it.
    pub validity: Validity,
}

impl From<mnemo_index::GetResponse> for GetOutput {
    fn from(g: mnemo_index::GetResponse) -> Self {
        GetOutput {
            path: g.path,
            text: g.text,
            from: g.from,
            lines: g.lines,
            total_lines: g.total_lines,
            ended: Vec::new(),
        }
    }
}

/// What a typed-memory save did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SaveActionOut {
    /// A new memory file.
    Created,
    /// The memory of that name was updated.
    Replaced,
    /// It was already there, word for word.
    Unchanged,
}

impl From<mnemo_store::SaveAction> for SaveActionOut {
    fn from(a: mnemo_store::SaveAction) -> Self {
        match a {
            mnemo_store::SaveAction::Created => SaveActionOut::Created,
            mnemo_store::SaveAction::Replaced => SaveActionOut::Replaced,
            mnemo_store::SaveAction::Unchanged => SaveActionOut::Unchanged,
        }
    }
}

/// What a section write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SectionAction {
    /// The section was new.
    Added,
    /// An existing section's body was replaced.
    Replaced,
}

/// The answer of `memory_write`, by mode.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum WriteOutput {
    /// Lines appended to today's log.
    Daily {
        /// The log, workspace-relative.
        path: String,
        /// Lines written.
        written: usize,
        /// Lines the log already had, skipped.
        duplicates: usize,
    },
    /// A typed memory saved.
    Typed {
        /// Its file, workspace-relative.
        path: String,
        /// Its name.
        name: String,
        /// Its kind.
        #[serde(rename = "type")]
        kind: String,
        /// What the save did.
        action: SaveActionOut,
    },
    /// A section of MEMORY.md written.
    MemorySection {
        /// Always MEMORY.md.
        path: String,
        /// The heading, without `## `.
        heading: String,
        /// added or replaced.
        action: SectionAction,
        /// False when MEMORY.md already held exactly this.
        changed: bool,
    },
}

/// The answer of `memory_forget`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ForgetOutput {
    /// The file removed, workspace-relative.
    pub removed: String,
}

/// One change to a memory (the audit log's record).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MemoryChange {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// `add`, `update`, `delete` (ended, kept as no longer true), `forget`
    /// (removed, its text scrubbed), `write` (a typed memory saved),
    /// `undo` (an undo of a consolidation or a dream took a change back:
    /// `why` says which).
    pub op: String,
    /// The memory changed.
    pub memory: String,
    /// The memory an update replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The text before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The session that caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Its messages, `from..to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<String>,
    /// `consolidation`, `dream`, `memory_write`, `forget`.
    pub by: String,
    /// The words of the message that say it (the write path's evidence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Why the change was made, or why a proposal was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl From<mnemo_store::memory::facts::AuditRecord> for MemoryChange {
    fn from(r: mnemo_store::memory::facts::AuditRecord) -> Self {
        MemoryChange {
            at: r.at,
            op: r.op,
            memory: r.memory,
            supersedes: r.supersedes,
            old: r.old,
            new: r.new,
            session: r.session,
            messages: r.messages,
            by: r.by,
            evidence: r.evidence,
            why: r.why,
        }
    }
}

/// The state of a fact in memory/facts.md.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FactState {
    /// Its id.
    pub id: String,
    /// Its text.
    pub text: String,
    /// True while it has not stopped being true.
    pub current: bool,
    /// The day it became true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// The day it stopped being true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    /// The fact that replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// When mnemo recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
}

/// The answer of `memory_history`: every recorded change, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MemoryHistoryOutput {
    /// The memory asked about.
    pub name: String,
    /// The fact as it stands, when the name is a fact's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<FactState>,
    /// The changes, oldest first.
    pub changes: Vec<MemoryChange>,
}

/// The answer of `mnemo dream`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DreamOutput {
    /// The dream's id (its time).
    pub id: String,
    /// False when there was nothing to do (nothing written).
    pub changed: bool,
    /// Duplicates merged: `[ended, kept]` fact ids.
    pub merged: Vec<(String, String)>,
    /// Daily logs folded into facts.
    pub folded_logs: Vec<String>,
    /// Facts added from them.
    pub added: Vec<String>,
    /// Contradictions resolved: `[ended, kept]` fact ids (the older fact
    /// about a subject ended in favour of the newer).
    pub superseded: Vec<(String, String)>,
    /// MEMORY.md lines moved into the facts file to bring it under its
    /// caps: `[line, fact id]`.
    pub moved: Vec<(String, String)>,
    /// Facts and typed memories' dated lines ended by a retraction:
    /// `[ended, by]` (`ended` a fact id or `path: text`, `by` the
    /// retraction's fact id or daily log).
    pub retracted: Vec<(String, String)>,
    /// Folded items whose home is a typed memory: `[item, memory path]`.
    pub typed: Vec<(String, String)>,
    /// Typed memories the dream made (indexed in MEMORY.md).
    pub typed_created: Vec<String>,
    /// Current facts after the dream.
    pub current: usize,
    /// Lines of memory/facts.md changed back (`--undo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undone_lines: Option<usize>,
}

/// The answer of `session_append`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AppendOutput {
    /// The session key.
    pub key: String,
    /// Messages stored by this call.
    pub appended: usize,
    /// Messages in the log now.
    pub messages: usize,
}

/// A session's messages.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryOutput {
    /// The session key.
    pub key: String,
    /// The consolidation cursor: messages already distilled into memory.
    pub last_consolidated: usize,
    /// Messages in the log.
    pub total: usize,
    /// The messages asked for.
    #[schemars(with = "Vec<crate::args::MessageShape>")]
    pub messages: Vec<Message>,
    /// Lines of the log that could not be read (`line N: why`); they stay in the file.
    pub warnings: Vec<String>,
}

/// One session, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionEntry {
    /// The session key.
    pub key: String,
    /// Its log, workspace-relative.
    pub file: String,
    /// When it was created.
    pub created_at: String,
    /// When its log was last written.
    pub updated_at: String,
    /// Messages in the log.
    pub messages: usize,
    /// The consolidation cursor.
    pub last_consolidated: usize,
}

impl From<SessionInfo> for SessionEntry {
    fn from(s: SessionInfo) -> Self {
        SessionEntry {
            key: s.key,
            file: s.file,
            created_at: s.created_at,
            updated_at: s.updated_at,
            messages: s.messages,
            last_consolidated: s.last_consolidated,
        }
    }
}

/// Every session, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SessionsOutput {
    /// The sessions.
    pub sessions: Vec<SessionEntry>,
}

/// The request the engine would send for the next turn.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContextOutput {
    /// The request and its accounting: key, model, system, messages, tools,
    /// parts (tokens per part), total_tokens, exact, selected_memories, recall.
    #[serde(flatten)]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub report: ContextReport,
    /// Why a part is missing (no recall without a chat model).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What consolidation or compaction did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EventsOutput {
    /// The session key.
    pub key: String,
    /// The engine's events, each `{"event": name, …}`.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub events: Vec<EngineEvent>,
}

/// What closing a session did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CloseOutput {
    /// The session key.
    pub key: String,
    /// The consolidation of its tail, each `{"event": name, …}`.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub events: Vec<EngineEvent>,
    /// The session note written, workspace-relative (none for an empty session).
    pub note: Option<String>,
    /// The note's slug.
    pub slug: Option<String>,
    /// True when the model gave no usable slug and the time was used.
    pub slug_fallback: bool,
    /// The cursor after: every message is consolidated.
    pub cursor: usize,
}

/// One agent turn: the answer, the tool calls and what the engine did.
/// `memory_work` says where its consolidation and memory flush ran:
/// "inline" (before the answer, their events in `events`) or "background"
/// (after it: GET /v1/sessions/{key}/memory-work says what they did).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TurnOutput {
    /// key, answer, tool_calls, events, iterations, hit_iteration_limit,
    /// prepare, recall, memory_work.
    #[serde(flatten)]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub turn: AgentTurn,
}

/// Where a turn's memory work (consolidation, the memory flush at its
/// threshold) runs: `[engine] memory_work`, "auto" resolved by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryWorkMode {
    /// Before the answer, inside the turn (its events are the turn's).
    Inline,
    /// After the answer, beside the conversation.
    Background,
}

impl From<mnemo_engine::MemoryWorkMode> for MemoryWorkMode {
    fn from(m: mnemo_engine::MemoryWorkMode) -> Self {
        match m {
            mnemo_engine::MemoryWorkMode::Inline => MemoryWorkMode::Inline,
            mnemo_engine::MemoryWorkMode::Background => MemoryWorkMode::Background,
        }
    }
}

/// Where a session's memory work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryWorkState {
    /// None ran on this session since the server started.
    Idle,
    /// Running now.
    Running,
    /// Finished; `events` says what it did.
    Done,
    /// Ended with an error (`error`); what it finished before stays.
    Failed,
    /// Stopped by something that needed the session (a turn, a compaction)
    /// or by the server stopping; it runs again after the next turn.
    Stopped,
}

impl From<mnemo_engine::WorkState> for MemoryWorkState {
    fn from(s: mnemo_engine::WorkState) -> Self {
        match s {
            mnemo_engine::WorkState::Running => MemoryWorkState::Running,
            mnemo_engine::WorkState::Done => MemoryWorkState::Done,
            mnemo_engine::WorkState::Failed => MemoryWorkState::Failed,
            mnemo_engine::WorkState::Stopped => MemoryWorkState::Stopped,
        }
    }
}

/// A session's memory work after its turns: what it is doing, or what its
/// last run did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MemoryWorkOutput {
    /// The session key.
    pub key: String,
    /// Where this server runs a turn's memory work.
    pub mode: MemoryWorkMode,
    /// Idle, running, done, failed or stopped.
    pub state: MemoryWorkState,
    /// While it runs: what it is doing ("consolidating messages 4..10",
    /// "memory flush").
    pub doing: Option<String>,
    /// When the run began (RFC 3339).
    pub started: Option<String>,
    /// Seconds it has run, so far or in all.
    pub seconds: Option<f64>,
    /// What it did, each `{"event": name, …}` as a turn's `events`
    /// (consolidation rounds, the flush); a running one's so far.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub events: Vec<EngineEvent>,
    /// Why it failed.
    pub error: Option<String>,
}

/// The server is up.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HealthOutput {
    /// Always "ok".
    pub status: String,
    /// mnemo's version.
    pub version: String,
}

/// An error, as every surface answers it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error's code and message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ErrorDetail {
    /// invalid_input, forbidden, not_found, corrupt, busy, provider, config, not_configured, io, internal.
    pub code: String,
    /// What went wrong and what to do instead.
    pub message: String,
}
