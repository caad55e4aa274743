//! What the memory inspector shows (the page `mnemo serve` and `mnemo
//! inspect` serve at `/`): memory with each fact's sources, memory as it
//! stood on a day, every consolidation and dream as a diff with the facts
//! the write path refused, a session's timeline one page at a time with
//! the prompt's size over it and what memory made of the session
//! (consolidations, flushes, undos, session notes), and the index. Everything here reads; the
//! page changes memory only through the service's own operations (write,
//! forget, undo), so the same checks hold and the audit log records them.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_core::Message;
use mnemo_store::memory::facts::{parse_audit, AuditRecord, Fact, AUDIT_FILE, FACTS_FILE};
use mnemo_store::session::LineRead;
use mnemo_store::{CompactionRecord, Record};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::output::MemoryChange;
use crate::service::blocking;
use crate::Service;

/// The most lines a timeline page holds.
pub const MAX_PAGE: usize = 500;
/// Points of the prompt-size chart, at most.
const CHART_POINTS: usize = 400;
/// Characters of a message shown in a timeline row.
const PREVIEW_CHARS: usize = 4_000;
/// Audit records listed, newest first.
const AUDIT_SHOWN: usize = 2_000;

/// Arguments of the memory view.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryViewArgs {
    /// Memory as it stood at the end of this day (`YYYY-MM-DD`); default: now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
}

/// Memory, with each fact's state and sources.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MemoryView {
    /// The day asked for, when memory is shown as it stood then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// MEMORY.md (as of the day when one was asked for).
    pub memory_md: String,
    /// MEMORY.md line by line, each with the entry of memory/HISTORY.md
    /// that last added it and the messages it was taken from.
    pub memory_md_lines: Vec<MemoryMdLine>,
    /// What could not be shown as asked, and why.
    pub notes: Vec<String>,
    /// Every fact of memory/facts.md (as of the day: those recorded by
    /// then, current if they held that day), current ones first.
    pub facts: Vec<FactView>,
    /// Every file under memory/, newest first; as of a day, without the
    /// daily logs and session notes dated after it (the others as they
    /// are today).
    pub files: Vec<MemoryFile>,
}

/// A line of MEMORY.md and where it came from: the newest entry of
/// memory/HISTORY.md whose diff added it (a line removed and added again
/// is credited to the later addition). A line no entry added was written
/// by hand, or before the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MemoryMdLine {
    /// Its line number (1-based).
    pub line: usize,
    /// Its text.
    pub text: String,
    /// The entry that added it (see [`HistoryEntry::id`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<usize>,
    /// That entry's kind: `consolidation`, `undo` (it restored the line),
    /// `dream`, `dream_undo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// That entry's stamp, `YYYY-MM-DD HH:MM` (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The session whose messages it was taken from: the consolidation's,
    /// or, for a line an undo restored, the one of the addition restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Its first message (0-based ordinal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// One past its last message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<usize>,
}

/// A fact and where it came from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FactView {
    /// Its id (`f8`).
    pub id: String,
    /// Its text.
    pub text: String,
    /// True while it holds (on the day asked for).
    pub current: bool,
    /// The day it became true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// The day it stopped being true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// The fact that replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Retracted rather than replaced.
    pub retracted: bool,
    /// What retracted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retracted_by: Option<String>,
    /// When mnemo recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<String>,
    /// Who it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// What about them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    /// What caused it: messages of a session, a dream, a person.
    pub sources: Vec<FactSource>,
}

/// One source of a fact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FactSource {
    /// As recorded (`chat:7 4..9`, `dream`, `person`).
    pub text: String,
    /// The session, when messages of one caused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Its first message (0-based ordinal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// One past its last message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<usize>,
}

/// A file under memory/.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MemoryFile {
    /// Workspace-relative path.
    pub path: String,
    /// `typed`, `daily`, `note`, `facts`, `history`, `audit` or `other`.
    pub kind: String,
    /// When it was last written (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// A typed memory's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A typed memory's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A typed memory's type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
    /// Why its front matter cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The changes to review: the history's entries, the refused proposals
/// and the audit log.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangesView {
    /// memory/HISTORY.md, one entry each, newest first.
    pub entries: Vec<HistoryEntry>,
    /// Facts the write path did not store, with why, newest first.
    pub refused: Vec<MemoryChange>,
    /// The audit log, newest first (the newest 2,000).
    pub audit: Vec<MemoryChange>,
    /// Records of the audit log in all.
    pub audit_total: usize,
}

/// One entry of memory/HISTORY.md.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryEntry {
    /// Its place in the file, 1 for the oldest (the file is append-only,
    /// so the number stays): the page opens `#/changes?entry=N`.
    pub id: usize,
    /// Its stamp, `YYYY-MM-DD HH:MM` (UTC).
    pub at: String,
    /// `consolidation` (of MEMORY.md), `facts` (a round of memory/facts.md),
    /// `undo`, `facts_undo`, `dream`, `dream_undo`, `raw` (archived as it
    /// was), `flush` (a round of memory/facts.md too), `other`.
    pub kind: String,
    /// Its first line, without the stamp.
    pub title: String,
    /// The lines after it (diffs start with `---`/`+++`/`@@`/`+`/`-`).
    pub body: String,
    /// A consolidation, facts round or dream that was undone since.
    pub undone: bool,
    /// The consolidation, facts round or dream the undo of its kind
    /// (`memory/undo` with `what`) would reverse next.
    pub undo_next: bool,
}

/// Arguments of a session's timeline.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineArgs {
    /// First line of the page (1-based); default: the page of `message`, else the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Lines in the page (default and most: 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Open the page holding this message (0-based ordinal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<usize>,
}

/// A page of a session's log, and the prompt's size over the whole log.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimelineView {
    /// The session key.
    pub key: String,
    /// Its log, workspace-relative.
    pub file: String,
    /// Lines in the log.
    pub total_lines: usize,
    /// Messages in the log.
    pub messages: usize,
    /// Bytes of the log.
    pub bytes: usize,
    /// The consolidation cursor: messages before it are in long-term memory.
    pub last_consolidated: usize,
    /// First line of this page (1-based).
    pub from: usize,
    /// The page's lines.
    pub lines: Vec<TimelineLine>,
    /// The prompt's estimated tokens after each message (at most 400
    /// points over the log): growing with each message, cut by each
    /// compaction.
    pub chart: Vec<ChartPoint>,
    /// Every compaction and cursor move of the log, in order.
    pub marks: Vec<TimelineMark>,
    /// What memory made of the session, from outside its log: each
    /// consolidation, flush and undo memory/HISTORY.md records for its
    /// messages, and its session notes; in the order of the messages they
    /// follow.
    pub events: Vec<TimelineEvent>,
}

/// A consolidation, flush, undo or session note of a session.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimelineEvent {
    /// When (`YYYY-MM-DD HH:MM`, UTC).
    pub at: String,
    /// `consolidation`, `flush`, `undo` or `note`.
    pub kind: String,
    /// The history entry's first line, or the note's name.
    pub title: String,
    /// The first message it covers (0-based ordinal); none for a note.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<usize>,
    /// Messages before it: it follows message `to - 1`.
    pub to: usize,
    /// The line of the log it follows (0: before the first).
    pub after_line: usize,
    /// Its entry of memory/HISTORY.md (see [`HistoryEntry::id`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<usize>,
    /// The session note, workspace-relative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A session note of a session: when it was written, and where.
#[derive(Debug, Clone)]
struct SessionNote {
    at: chrono::DateTime<chrono::Utc>,
    path: String,
}

/// One line of a session log.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimelineLine {
    /// Its line number (1-based).
    pub line: usize,
    /// `message`, `metadata`, `compaction`, `record` (a kind this version
    /// does not know), `blank`, or `malformed` (a line the store does not
    /// load: not UTF-8, not a record, or torn; it counts as no message).
    pub kind: String,
    /// A message's ordinal (0-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<usize>,
    /// A message's role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The text: a message's (cut at 4,000 characters), a compaction's
    /// summary, or what is wrong with a malformed line.
    pub text: String,
    /// The text was cut.
    pub cut: bool,
    /// Tool calls of an assistant message, `name(arguments)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<String>,
    /// A tool result's call id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool result's tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Where a large tool result was stored whole (this line holds its preview).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_at: Option<String>,
    /// When it was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// A compaction's level and tokens, or the cursor a metadata line set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The prompt's estimated size after a message.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
pub struct ChartPoint {
    /// The message (0-based ordinal).
    pub message: usize,
    /// Estimated prompt tokens then.
    pub tokens: usize,
}

/// A compaction or a move of the consolidation cursor.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimelineMark {
    /// Its line (1-based).
    pub line: usize,
    /// Messages before it.
    pub message: usize,
    /// The compaction's level (`snip`, `autocompact`, …), or `cursor`.
    pub kind: String,
    /// Prompt tokens before a compaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<usize>,
    /// Prompt tokens after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<usize>,
    /// The cursor a consolidation moved to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<usize>,
}

/// The index and the saved evaluation reports.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IndexView {
    /// The index's state: backend, model, files, chunks, vectors.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub status: mnemo_index::IndexStatus,
    /// Reports saved by `mnemo eval … --save` (`.mnemo/eval/*.json`), newest first.
    pub evals: Vec<EvalReport>,
}

/// A saved evaluation report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvalReport {
    /// Its file name.
    pub name: String,
    /// When it was written (RFC 3339).
    pub modified: String,
    /// The report as `mnemo eval --json` printed it.
    pub report: serde_json::Value,
}

/// What to undo.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum UndoWhat {
    /// The newest consolidation's change to MEMORY.md not undone yet.
    #[default]
    Consolidation,
    /// The newest dream not undone yet.
    Dream,
    /// The newest round of memory/facts.md (a consolidation in `facts`
    /// mode, or a memory flush) that changed a fact and is not undone yet.
    Facts,
}

/// Arguments of `memory/undo`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UndoArgs {
    /// `consolidation` (default), `facts` or `dream`.
    #[serde(default)]
    pub what: UndoWhat,
}

/// What an undo did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UndoOutput {
    /// What was undone.
    pub what: UndoWhat,
    /// Which one: `<session> messages <from>..<to>` (a flush's `memory
    /// flush of …`), or the dream's id.
    pub undone: String,
    /// Lines changed back (a facts round: facts removed, made current
    /// again, or whose sources changed back).
    pub lines: usize,
    /// A facts round's facts removed (it added them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// A facts round's facts current again (it ended them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restored: Vec<String>,
}

impl Service {
    /// The memory view: MEMORY.md, facts with their sources, the files of
    /// memory/; as of a day when asked.
    pub async fn inspect_memory(self: &Arc<Self>, args: MemoryViewArgs) -> Result<MemoryView> {
        let as_of = crate::args::as_of_day(args.as_of.as_deref())?;
        let me = self.clone();
        blocking(move || {
            let memory = me.mnemo().memory();
            let mut notes = Vec::new();
            let mut memory_md = memory.read_memory_md()?;
            let history = memory.read_history()?;
            // The entries the lines are credited to: as of a day, those
            // of that day and before.
            let mut until = None;
            if let Some(day) = as_of {
                match memory_md_as_of(&memory_md, &history, day) {
                    Ok(old) => {
                        memory_md = old;
                        until = Some(day);
                    }
                    Err(why) => notes.push(format!(
                        "MEMORY.md as of {day} cannot be rebuilt from memory/HISTORY.md ({why}): \
                         it was edited by hand since; today's is shown"
                    )),
                }
            }
            let memory_md_lines = memory_md_blame(&memory_md, &history, until);
            let file = memory.read_facts()?;
            let mut facts: Vec<FactView> = file
                .facts()
                .iter()
                .filter(|f| as_of.is_none_or(|d| recorded_by(f, d)))
                .map(|f| fact_view(f, as_of))
                .collect();
            facts.sort_by_key(|f| !f.current);
            let files = memory
                .scan_memory_files(usize::MAX, 0)?
                .into_iter()
                // As of a day, the daily logs and notes dated after it did
                // not exist yet; every other file is shown as it is today
                // (the page says so).
                .filter(|h| as_of.is_none_or(|day| file_day(&h.path).is_none_or(|d| d <= day)))
                .map(|h| {
                    let kind = file_kind(&h.path, h.front.is_some() || h.front_error.is_some());
                    MemoryFile {
                        modified: Some(
                            h.modified
                                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        ),
                        name: h.front.as_ref().map(|f| f.name.clone()),
                        description: h.front.as_ref().map(|f| f.description.clone()),
                        memory_type: h.front.as_ref().map(|f| f.kind.as_str().to_string()),
                        error: h.front_error,
                        kind: kind.into(),
                        path: h.path,
                    }
                })
                .collect();
            Ok(MemoryView {
                as_of: as_of.map(|d| d.to_string()),
                memory_md,
                memory_md_lines,
                notes,
                facts,
                files,
            })
        })
        .await
    }

    /// The changes to review: history entries, refused facts, the audit log.
    pub async fn inspect_changes(self: &Arc<Self>) -> Result<ChangesView> {
        let me = self.clone();
        blocking(move || {
            let memory = me.mnemo().memory();
            let history = memory.read_history()?;
            let records = parse_audit(&memory.read_document(AUDIT_FILE)?.unwrap_or_default());
            let audit_total = records.len();
            let refused = records
                .iter()
                .rev()
                .filter(|r| r.op == "refuse")
                .take(AUDIT_SHOWN)
                .map(change)
                .collect();
            let audit = records.iter().rev().take(AUDIT_SHOWN).map(change).collect();
            Ok(ChangesView {
                entries: history_entries(&history),
                refused,
                audit,
                audit_total,
            })
        })
        .await
    }

    /// A page of a session's log, with the prompt's size over all of it.
    pub async fn inspect_session(
        self: &Arc<Self>,
        key: String,
        args: TimelineArgs,
    ) -> Result<TimelineView> {
        let limit = args.limit.unwrap_or(MAX_PAGE);
        if limit == 0 || limit > MAX_PAGE {
            return Err(Error::Invalid(format!(
                "`limit` is {limit}: ask for 1 to {MAX_PAGE} lines"
            )));
        }
        let me = self.clone();
        blocking(move || {
            let storage = me.mnemo().sessions().storage().clone();
            let rel = storage.session_rel(&key)?;
            let Some(bytes) = storage.read_session_file(&rel)? else {
                return Err(Error::NotFound(format!(
                    "no session {key:?}: the sessions view lists those there are"
                )));
            };
            let memory = me.mnemo().memory();
            let history = memory.read_history()?;
            let notes = session_notes(memory, &key)?;
            let memory_side = MemorySide {
                history: &history,
                notes: &notes,
            };
            Ok(timeline(key, rel, &bytes, &args, limit, &memory_side))
        })
        .await
    }

    /// The index's state and the saved evaluation reports.
    pub async fn inspect_index(self: &Arc<Self>) -> Result<IndexView> {
        let me = self.clone();
        blocking(move || {
            let status = me.mnemo().index()?.status()?;
            let dir = me.mnemo().workspace().state_dir().join("eval");
            Ok(IndexView {
                status,
                evals: eval_reports(&dir),
            })
        })
        .await
    }

    /// `memory/undo`: reverses the newest consolidation of MEMORY.md (or
    /// round of memory/facts.md, or dream) not undone yet, recording the
    /// undo in the history and the audit log.
    pub async fn undo(self: &Arc<Self>, args: UndoArgs) -> Result<UndoOutput> {
        if args.what == UndoWhat::Dream {
            let d = self.dream(true).await?;
            return Ok(UndoOutput {
                what: UndoWhat::Dream,
                undone: d.id,
                lines: d.undone_lines.unwrap_or(0),
                removed: Vec::new(),
                restored: Vec::new(),
            });
        }
        let me = self.clone();
        blocking(move || {
            let memory = me.mnemo().memory();
            if args.what == UndoWhat::Facts {
                let u = mnemo_engine::undo_facts_round(memory, chrono::Utc::now())?;
                return Ok(UndoOutput {
                    what: UndoWhat::Facts,
                    lines: u.removed.len() + u.restored.len() + u.unsaid.len(),
                    undone: u.round,
                    removed: u.removed,
                    restored: u.restored,
                });
            }
            let u = mnemo_engine::undo_consolidation(memory, chrono::Utc::now())?;
            Ok(UndoOutput {
                what: UndoWhat::Consolidation,
                undone: u.consolidation,
                lines: u.lines,
                removed: Vec::new(),
                restored: Vec::new(),
            })
        })
        .await
    }
}

/// The fact was recorded by the end of `day` (a fact with no record
/// stamp, typed by a person, counts as always there).
fn recorded_by(f: &Fact, day: NaiveDate) -> bool {
    f.recorded
        .as_deref()
        .and_then(|r| r.get(..10))
        .and_then(|d| d.parse::<NaiveDate>().ok())
        .is_none_or(|d| d <= day)
}

fn fact_view(f: &Fact, as_of: Option<NaiveDate>) -> FactView {
    let current = match as_of {
        Some(day) => f.valid_on(day) && f.until.is_none_or(|u| u > day),
        None => f.is_current(),
    };
    // As of a day, what happened later is not known yet.
    let later = |d: Option<NaiveDate>| as_of.is_some_and(|day| d.is_some_and(|d| d > day));
    let ended_later = later(f.until);
    FactView {
        id: f.id.clone(),
        text: f.text.clone(),
        current,
        since: f.since.map(|d| d.to_string()),
        until: if ended_later {
            None
        } else {
            f.until.map(|d| d.to_string())
        },
        superseded_by: if ended_later {
            None
        } else {
            f.superseded_by.clone()
        },
        retracted: f.retracted && !ended_later,
        retracted_by: if ended_later {
            None
        } else {
            f.retracted_by.clone()
        },
        recorded: f.recorded.clone(),
        subject: f.subject.clone(),
        attribute: f.attribute.clone(),
        sources: f.sources().into_iter().map(fact_source).collect(),
    }
}

/// `chat:7 4..9` → session `chat:7`, messages 4..9; anything else as it is.
fn fact_source(s: &str) -> FactSource {
    let parsed = s.rsplit_once(' ').and_then(|(session, range)| {
        let (from, to) = range.split_once("..")?;
        Some((session, from.parse().ok()?, to.parse().ok()?))
    });
    match parsed {
        Some((session, from, to)) if !session.trim().is_empty() => FactSource {
            text: s.to_string(),
            session: Some(session.to_string()),
            from: Some(from),
            to: Some(to),
        },
        _ => FactSource {
            text: s.to_string(),
            session: None,
            from: None,
            to: None,
        },
    }
}

fn file_kind(path: &str, has_front_matter: bool) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path == FACTS_FILE {
        "facts"
    } else if path == AUDIT_FILE {
        "audit"
    } else if name == "HISTORY.md" {
        "history"
    } else if has_front_matter {
        "typed"
    } else if name.len() == 13 && name.ends_with(".md") && name[..10].parse::<NaiveDate>().is_ok() {
        "daily"
    } else if name
        .get(..10)
        .is_some_and(|d| d.parse::<NaiveDate>().is_ok())
    {
        "note"
    } else {
        "other"
    }
}

/// The day a daily log (`memory/YYYY-MM-DD.md`) or a session note
/// (`memory/YYYY-MM-DD-slug.md`) is of; `None` for any other file.
fn file_day(path: &str) -> Option<NaiveDate> {
    if !matches!(file_kind(path, false), "daily" | "note") {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    name.get(..10)?.parse().ok()
}

fn change(r: &AuditRecord) -> MemoryChange {
    MemoryChange::from(r.clone())
}

/// memory/HISTORY.md as entries, newest first, each with its kind and
/// whether an undo reversed it (or would reverse it next).
pub fn history_entries(history: &str) -> Vec<HistoryEntry> {
    let mut entries: Vec<HistoryEntry> = Vec::new();
    // Each consolidation's label, as `mnemo memory undo` reads it.
    let mut labels: Vec<Option<String>> = Vec::new();
    for line in history.lines() {
        // A stamp is ASCII: the slices below are on char boundaries.
        if mnemo_store::memory::has_stamp(line) {
            let title = line[18..].trim_start().to_string();
            labels.push(mnemo_engine::undo::consolidation_label(line));
            entries.push(HistoryEntry {
                id: entries.len() + 1,
                at: line[1..17].to_string(),
                kind: entry_kind(&title).into(),
                title,
                body: String::new(),
                undone: false,
                undo_next: false,
            });
        } else if let Some(e) = entries.last_mut() {
            e.body.push_str(line);
            e.body.push('\n');
        }
    }
    for e in &mut entries {
        e.body = e.body.trim_end().to_string();
    }
    // Which consolidations are still open, as `mnemo memory undo` reads them.
    let open = mnemo_engine::undo::undoable(history);
    let next_label = open.last().map(|(l, _)| l.clone());
    let mut next_marked = false;
    for (e, label) in entries.iter_mut().zip(labels).rev() {
        let Some(l) = label else { continue };
        e.undone = !open.iter().any(|(o, _)| *o == l);
        if !next_marked && Some(&l) == next_label.as_ref() {
            e.undo_next = true;
            next_marked = true;
        }
    }
    mark_dreams(&mut entries);
    mark_facts_rounds(history, &mut entries);
    entries.reverse();
    entries
}

/// The facts rounds that changed a fact: undone, or still open (the
/// newest of which `memory/undo` with `facts` reverses next). `entries`
/// are oldest first, numbered as the engine numbers them.
fn mark_facts_rounds(history: &str, entries: &mut [HistoryEntry]) {
    let open = mnemo_engine::undo::undoable_facts_rounds(history);
    let next = open.last().map(|r| r.entry);
    for e in entries.iter_mut() {
        if !matches!(e.kind.as_str(), "facts" | "flush") {
            continue;
        }
        let header = format!("[{}] {}", e.at, e.title);
        if mnemo_engine::undo::facts_round(&header, &e.body).is_none() {
            continue;
        }
        e.undone = !open.iter().any(|r| r.entry == e.id);
        e.undo_next = next == Some(e.id);
    }
}

/// The newest dream not undone is the one `dream --undo` reverses.
fn mark_dreams(entries: &mut [HistoryEntry]) {
    let mut undone = 0usize;
    for e in entries.iter_mut().rev() {
        match e.kind.as_str() {
            "dream_undo" => undone += 1,
            "dream" if undone > 0 => {
                undone -= 1;
                e.undone = true;
            }
            "dream" => {
                e.undo_next = true;
                return;
            }
            _ => {}
        }
    }
}

fn entry_kind(title: &str) -> &'static str {
    if title.starts_with("[MEMORY.md] undo of the consolidation") {
        "undo"
    } else if title.starts_with("[memory/facts.md] undo of the facts round") {
        "facts_undo"
    } else if title.starts_with("[MEMORY.md] consolidation of") {
        "consolidation"
    } else if title.contains("] undo of dream") {
        "dream_undo"
    } else if title.contains("] dream applied") {
        "dream_applied"
    } else if title.contains("] dream ") {
        "dream"
    } else if title.starts_with("[RAW]") {
        "raw"
    } else if title.contains("memory flush of") {
        "flush"
    } else if title.contains("[memory/facts.md]") || title.contains(" messages ") {
        "facts"
    } else {
        "other"
    }
}

/// MEMORY.md as it stood at the end of `day`: today's text with every
/// later change recorded in the history (consolidations, undos, dreams)
/// reversed, newest first.
fn memory_md_as_of(current: &str, history: &str, day: NaiveDate) -> Result<String, String> {
    let mut text = current.to_string();
    for e in history_entries(history) {
        let later =
            e.at.get(..10)
                .and_then(|d| d.parse::<NaiveDate>().ok())
                .is_some_and(|d| d > day);
        // Not `break`: an entry the model wrote carries the model's own
        // stamp, which can be older than the real ones around it.
        if !later {
            continue;
        }
        if let Some(diff) = memory_md_diff(&e.body) {
            text = mnemo_engine::merge::reverse_diff(&text, &diff)?;
        }
    }
    Ok(text)
}

/// Who added a line of MEMORY.md: an entry of the history, and the
/// messages the line was taken from.
#[derive(Debug, Clone)]
struct Credit {
    entry: usize,
    kind: String,
    at: String,
    source: Option<(String, usize, usize)>,
}

/// Each line of `current` (MEMORY.md) with the newest entry of `history`
/// whose MEMORY.md diff added it: the entries are walked oldest first
/// (their order in the file, not their stamps, which the model may have
/// written), each `+` line credited to its entry and each `-` line taking
/// the newest credit of its text back. A consolidation's lines come from
/// the messages it names; a line an undo (of a consolidation or a dream)
/// adds back keeps the messages of the addition it restores. Lines no
/// entry added, and blank lines, have no credit. With `until`, only the
/// entries of that day and before count.
fn memory_md_blame(current: &str, history: &str, until: Option<NaiveDate>) -> Vec<MemoryMdLine> {
    use std::collections::HashMap;
    let mut entries = history_entries(history);
    entries.reverse();
    // The credits of each text still in the file, newest last, and the
    // one each text lost last.
    let mut live: HashMap<String, Vec<Credit>> = HashMap::new();
    let mut removed: HashMap<String, Credit> = HashMap::new();
    for e in entries {
        let later = until.is_some_and(|day| {
            e.at.get(..10)
                .and_then(|d| d.parse::<NaiveDate>().ok())
                .is_some_and(|d| d > day)
        });
        if later {
            continue;
        }
        let Some(diff) = memory_md_diff(&e.body) else {
            continue;
        };
        let own = (e.kind == "consolidation")
            .then(|| mnemo_engine::undo::consolidation_label(&format!("] {}", e.title)))
            .flatten()
            .and_then(|label| label_messages(&label));
        for l in diff.lines() {
            if l.starts_with("@@") {
                continue;
            }
            if let Some(text) = l.strip_prefix('-') {
                if let Some(c) = live.get_mut(text).and_then(Vec::pop) {
                    removed.insert(text.to_string(), c);
                }
            } else if let Some(text) = l.strip_prefix('+') {
                let source = match e.kind.as_str() {
                    "consolidation" => own.clone(),
                    "undo" | "dream_undo" => removed.get(text).and_then(|c| c.source.clone()),
                    _ => None,
                };
                live.entry(text.to_string()).or_default().push(Credit {
                    entry: e.id,
                    kind: e.kind.clone(),
                    at: e.at.clone(),
                    source,
                });
            }
        }
    }
    current
        .lines()
        .enumerate()
        .map(|(i, text)| {
            let credit = (!text.trim().is_empty())
                .then(|| live.get(text).and_then(|c| c.last()))
                .flatten();
            let source = credit.and_then(|c| c.source.clone());
            MemoryMdLine {
                line: i + 1,
                text: text.to_string(),
                entry: credit.map(|c| c.entry),
                kind: credit.map(|c| c.kind.clone()),
                at: credit.map(|c| c.at.clone()),
                from: source.as_ref().map(|s| s.1),
                to: source.as_ref().map(|s| s.2),
                session: source.map(|s| s.0),
            }
        })
        .collect()
}

/// `KEY messages a..b` → (`KEY`, a, b).
fn label_messages(label: &str) -> Option<(String, usize, usize)> {
    let (key, range) = label.rsplit_once(" messages ")?;
    let (a, b) = range.split_once("..")?;
    Some((key.to_string(), a.parse().ok()?, b.parse().ok()?))
}

/// The MEMORY.md part of an entry's diffs.
fn memory_md_diff(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut inside = false;
    for line in body.lines() {
        if let Some(path) = line.strip_prefix("--- ") {
            inside = path.trim() == "MEMORY.md";
            continue;
        }
        if inside && !line.starts_with("+++ ") {
            out.push_str(line);
            out.push('\n');
        }
    }
    (!out.is_empty()).then_some(out)
}

fn cut(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((i, _)) => (text[..i].to_string(), true),
        None => (text.to_string(), false),
    }
}

/// What memory recorded about a session outside its log.
#[derive(Default)]
struct MemorySide<'a> {
    /// memory/HISTORY.md.
    history: &'a str,
    /// The session's notes.
    notes: &'a [SessionNote],
}

fn timeline(
    key: String,
    file: String,
    bytes: &[u8],
    args: &TimelineArgs,
    limit: usize,
    side: &MemorySide,
) -> TimelineView {
    // The store's own reading of each line: a message here has the
    // ordinal it has everywhere else (a fact's `chat:7 4..9` points at
    // the rows it names), and a line the store does not load shows as
    // what it is, with its number.
    let reads = mnemo_store::session::read_log_lines(std::path::Path::new(&file), bytes);
    let mut ordinals: Vec<Option<usize>> = Vec::with_capacity(reads.len());
    let mut messages = 0usize;
    let mut tokens = 0usize;
    let mut raw_points: Vec<ChartPoint> = Vec::new();
    let mut marks = Vec::new();
    let mut cursor = 0usize;
    // Each message's line, and its time when a note is to be placed.
    let mut message_lines: Vec<usize> = Vec::new();
    let mut times: Vec<Option<DateTime<Utc>>> = Vec::new();
    for (i, (raw, read)) in reads.iter().enumerate() {
        let mut ordinal = None;
        match read {
            LineRead::Record(Record::Message(m)) => {
                ordinal = Some(messages);
                message_lines.push(i + 1);
                if !side.notes.is_empty() {
                    times.push(m.timestamp.as_deref().and_then(message_time));
                }
                tokens += raw.len().div_ceil(4);
                raw_points.push(ChartPoint {
                    message: messages,
                    tokens,
                });
                messages += 1;
            }
            LineRead::Record(Record::Compaction(c)) => {
                // The record counts the whole prompt with the model's
                // tokenizer; the chart estimates the history alone:
                // cut the estimate by the record's ratio.
                if let Some(cut) =
                    (tokens * c.tokens_after.min(c.tokens_before)).checked_div(c.tokens_before)
                {
                    tokens = cut;
                }
                // The drop, drawn where it happened.
                if let Some(last) = messages.checked_sub(1) {
                    raw_points.push(ChartPoint {
                        message: last,
                        tokens,
                    });
                }
                marks.push(compaction_mark(i + 1, messages, c));
            }
            LineRead::Record(Record::Metadata(m)) if m.last_consolidated != cursor => {
                cursor = m.last_consolidated;
                marks.push(TimelineMark {
                    line: i + 1,
                    message: messages,
                    kind: "cursor".into(),
                    tokens_before: None,
                    tokens_after: None,
                    cursor: Some(cursor),
                });
            }
            _ => {}
        }
        ordinals.push(ordinal);
    }
    let total = reads.len();
    let start = match (args.from, args.message) {
        (Some(f), _) => f.clamp(1, total.max(1)),
        (None, Some(m)) => ordinals
            .iter()
            .position(|o| *o == Some(m))
            .map_or(1, |i| i + 1 - (i % limit)),
        (None, None) => total.saturating_sub(limit) + 1,
    };
    let page = reads
        .into_iter()
        .enumerate()
        .skip(start - 1)
        .take(limit)
        .map(|(i, (raw, read))| timeline_line(i + 1, raw, read, ordinals[i]))
        .collect();
    let events = session_events(&key, side, &message_lines, &times);
    TimelineView {
        key,
        file,
        total_lines: total,
        messages,
        bytes: bytes.len(),
        last_consolidated: cursor,
        from: start,
        lines: page,
        chart: thin(raw_points),
        marks,
        events,
    }
}

/// The consolidations, flushes and undos memory/HISTORY.md records for
/// messages of session `key`, and its notes, each placed after the last
/// message it covers (a note after the last message written before it).
fn session_events(
    key: &str,
    side: &MemorySide,
    message_lines: &[usize],
    times: &[Option<DateTime<Utc>>],
) -> Vec<TimelineEvent> {
    let messages = message_lines.len();
    let after_line = |to: usize| {
        to.min(messages)
            .checked_sub(1)
            .and_then(|i| message_lines.get(i))
            .copied()
            .unwrap_or(0)
    };
    let mut out = Vec::new();
    for e in history_entries(side.history) {
        // The title names the messages (`consolidation of KEY messages
        // a..b`, `memory flush of …`, `undo of …`, a facts round's `KEY
        // messages a..b`), or the round's marker line does (an entry the
        // model wrote, messages archived raw).
        let range = messages_of(&e.title, key).or_else(|| {
            e.body
                .lines()
                .filter(|l| l.starts_with("[consolidated from "))
                .find_map(|l| messages_of(l, key))
        });
        let Some((from, to)) = range else { continue };
        let kind = match e.kind.as_str() {
            "flush" => "flush",
            "undo" | "facts_undo" => "undo",
            _ => "consolidation",
        };
        out.push(TimelineEvent {
            at: e.at,
            kind: kind.into(),
            title: e.title,
            from: Some(from),
            to,
            after_line: after_line(to),
            entry: Some(e.id),
            path: None,
        });
    }
    let timed = times.iter().any(Option::is_some);
    for n in side.notes {
        let to = if timed {
            times
                .iter()
                .rposition(|t| t.is_some_and(|t| t <= n.at))
                .map_or(0, |i| i + 1)
        } else {
            messages
        };
        out.push(TimelineEvent {
            at: n.at.format("%Y-%m-%d %H:%M").to_string(),
            kind: "note".into(),
            title: n
                .path
                .rsplit('/')
                .next()
                .unwrap_or(&n.path)
                .trim_end_matches(".md")
                .to_string(),
            from: None,
            to,
            after_line: after_line(to),
            entry: None,
            path: Some(n.path.clone()),
        });
    }
    out.sort_by(|a, b| (a.to, &a.at, a.entry).cmp(&(b.to, &b.at, b.entry)));
    out
}

/// `a..b` of the first `KEY messages a..b` in `text` naming session `key`
/// (the key standing alone: `chat:1` is not `chat:10`'s or `xchat:1`'s).
fn messages_of(text: &str, key: &str) -> Option<(usize, usize)> {
    let needle = format!("{key} messages ");
    let mut start = 0;
    while let Some(i) = text.get(start..)?.find(&needle) {
        let at = start + i;
        start = at + needle.len();
        let alone = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || c == '[');
        if !alone {
            continue;
        }
        let rest = &text[start..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if let Some((a, b)) = rest[..end].split_once("..") {
            if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                return Some((a, b));
            }
        }
    }
    None
}

/// A message's timestamp: RFC 3339, or a local time without offset as
/// nanobot writes it.
fn message_time(ts: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(ts) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = chrono::NaiveDateTime::parse_from_str(ts, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    naive
        .and_local_timezone(chrono::Local)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
}

/// The session notes of session `key` (`memory/YYYY-MM-DD-slug.md` naming
/// it as their `Session Key`), each with when it was written: its
/// `# Session: … UTC` stamp, else when the file was last written.
fn session_notes(memory: &mnemo_store::MemoryStore, key: &str) -> Result<Vec<SessionNote>> {
    let mut out = Vec::new();
    let wanted = format!("- **Session Key**: {key}");
    for e in memory.storage().list("memory")? {
        if e.rel.matches('/').count() != 1 || file_kind(&e.rel, false) != "note" {
            continue;
        }
        let Some(text) = memory.read_document(&e.rel)? else {
            continue;
        };
        let head: Vec<&str> = text.lines().take(12).collect();
        if !head.iter().any(|l| l.trim_end() == wanted) {
            continue;
        }
        let stamped = head.iter().find_map(|l| {
            let stamp = l
                .strip_prefix("# Session: ")?
                .trim()
                .trim_end_matches(" UTC");
            chrono::NaiveDateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S").ok()
        });
        out.push(SessionNote {
            at: stamped.map_or(e.modified, |t| t.and_utc()),
            path: e.rel,
        });
    }
    Ok(out)
}

fn compaction_mark(line: usize, message: usize, c: &CompactionRecord) -> TimelineMark {
    TimelineMark {
        line,
        message,
        kind: c.kind.clone(),
        tokens_before: Some(c.tokens_before),
        tokens_after: Some(c.tokens_after),
        cursor: None,
    }
}

/// At most [`CHART_POINTS`] points, keeping each stretch's highest.
fn thin(points: Vec<ChartPoint>) -> Vec<ChartPoint> {
    if points.len() <= CHART_POINTS {
        return points;
    }
    let per = points.len().div_ceil(CHART_POINTS);
    points
        .chunks(per)
        .filter_map(|c| c.iter().max_by_key(|p| p.tokens).copied())
        .collect()
}

fn timeline_line(line: usize, raw: &[u8], read: LineRead, ordinal: Option<usize>) -> TimelineLine {
    let mut out = TimelineLine {
        line,
        kind: "malformed".into(),
        ordinal,
        role: None,
        text: String::new(),
        cut: false,
        tool_calls: Vec::new(),
        tool_call_id: None,
        tool: None,
        stored_at: None,
        timestamp: None,
        detail: None,
    };
    match read {
        LineRead::Record(Record::Message(m)) => fill_message(&mut out, &m),
        LineRead::Record(Record::Metadata(m)) => {
            out.kind = "metadata".into();
            out.timestamp = Some(m.updated_at.clone());
            out.detail = Some(format!("consolidation cursor at {}", m.last_consolidated));
        }
        LineRead::Record(Record::Compaction(c)) => {
            out.kind = "compaction".into();
            out.timestamp = Some(c.timestamp.clone());
            out.detail = Some(format!(
                "{}: {} → {} tokens{}",
                c.kind,
                c.tokens_before,
                c.tokens_after,
                c.first_kept
                    .map(|k| format!(", messages from {k} kept"))
                    .unwrap_or_default()
            ));
            (out.text, out.cut) = cut(c.summary.as_deref().unwrap_or_default(), PREVIEW_CHARS);
        }
        LineRead::Record(Record::Other(v)) => {
            out.kind = "record".into();
            (out.text, out.cut) = cut(&v.to_string(), PREVIEW_CHARS);
        }
        LineRead::Blank => out.kind = "blank".into(),
        LineRead::Skipped(w) => {
            let (head, was_cut) = cut(&String::from_utf8_lossy(raw), 200);
            out.text = format!(
                "line {line} cannot be read ({}): {}; it reads: {head}{}",
                match w.kind {
                    mnemo_store::session::WarningKind::InvalidUtf8 => "not UTF-8",
                    mnemo_store::session::WarningKind::TornTail => "torn",
                    mnemo_store::session::WarningKind::Malformed => "not a record",
                },
                w.message,
                if was_cut { "…" } else { "" }
            );
        }
    }
    out
}

fn fill_message(out: &mut TimelineLine, m: &Message) {
    out.kind = "message".into();
    out.role = serde_json::to_value(m.role)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string));
    (out.text, out.cut) = cut(&m.text(), PREVIEW_CHARS);
    out.tool_calls = m
        .tool_calls
        .iter()
        .flatten()
        .map(|c| {
            let args = match &c.function.arguments {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            let (args, was_cut) = cut(&args, 300);
            format!(
                "{}({args}{})",
                c.function.name,
                if was_cut { "…" } else { "" }
            )
        })
        .collect();
    out.tool_call_id = m.tool_call_id.clone();
    out.tool = m.name.clone();
    out.stored_at = mnemo_store::session::persisted_path(m).map(str::to_string);
    out.timestamp = m.timestamp.clone();
}

/// The `*.json` reports under `dir`, newest first; a file that is not
/// JSON is listed with what is wrong.
fn eval_reports(dir: &std::path::Path) -> Vec<EvalReport> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(std::time::SystemTime, EvalReport)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| {
            let modified = e.metadata().ok()?.modified().ok()?;
            let bytes = mnemo_core::files::read_regular(&e.path()).ok()?;
            let report = serde_json::from_slice(&bytes)
                .unwrap_or_else(|err| serde_json::json!({"error": format!("not a report: {err}")}));
            Some((
                modified,
                EvalReport {
                    name: e.file_name().to_string_lossy().into_owned(),
                    modified: chrono::DateTime::<chrono::Utc>::from(modified)
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    report,
                },
            ))
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.0));
    out.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HISTORY: &str = "[2026-01-01 10:00] [MEMORY.md] consolidation of s:1 messages 0..4: 1 added; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -1,0 +2 @@\n+- Ada deploys on Fridays.\n\n[2026-01-03 09:00] [MEMORY.md] consolidation of s:1 messages 4..8: 1 changed; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -2 +2 @@\n-- Ada deploys on Fridays.\n+- Ada deploys on Mondays.\n\n[2026-01-04 09:00] [MEMORY.md] undo of the consolidation of s:1 messages 4..8\n--- MEMORY.md\n+++ MEMORY.md\n@@ -2 +2 @@\n-- Ada deploys on Mondays.\n+- Ada deploys on Fridays.\n";

    #[test]
    fn history_entries_know_what_was_undone_and_what_undo_reverses_next() {
        let e = history_entries(HISTORY);
        let kinds: Vec<&str> = e.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["undo", "consolidation", "consolidation"]);
        assert!(e[1].undone && !e[1].undo_next, "{:?}", e[1]);
        assert!(!e[2].undone && e[2].undo_next, "{:?}", e[2]);
        assert!(e[2].body.contains("+- Ada deploys on Fridays."));
    }

    #[test]
    fn memory_md_as_of_a_day_reverses_the_later_changes() {
        let now = "# Memory\n- Ada deploys on Fridays.\n";
        // A model's entry stamped with an older day after the last change.
        let history = format!("{HISTORY}\n[2025-06-01 08:00] Ada mentioned Fridays.\n");
        assert_eq!(
            memory_md_as_of(now, &history, "2026-01-03".parse().unwrap()).unwrap(),
            "# Memory\n- Ada deploys on Mondays.\n"
        );
        assert_eq!(
            memory_md_as_of(now, HISTORY, "2026-01-03".parse().unwrap()).unwrap(),
            "# Memory\n- Ada deploys on Mondays.\n"
        );
        assert_eq!(
            memory_md_as_of(now, HISTORY, "2025-12-31".parse().unwrap()).unwrap(),
            "# Memory\n"
        );
        assert!(
            memory_md_as_of("# Hand edited\n", HISTORY, "2026-01-02".parse().unwrap()).is_err()
        );
    }

    /// Each line of MEMORY.md is credited to the newest entry that added
    /// it: a consolidation with its messages, an undo with the messages of
    /// the addition it restored; a line typed by a person to none.
    #[test]
    fn memory_md_lines_are_credited_to_the_entry_that_added_them() {
        let history = "[2026-01-01 10:00] [MEMORY.md] consolidation of s:1 messages 0..4: 2 added; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -1,0 +2,2 @@\n+- Ada deploys on Fridays.\n+- Ada lives in Paris.\n\n\
            [2026-01-01 10:01] Ada said she deploys on Fridays.\n[consolidated from s:1 messages 0..4]\n\n\
            [2026-01-02 09:00] [MEMORY.md] consolidation of s:2 messages 2..6: 1 changed, 1 added; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -2 +2 @@\n-- Ada deploys on Fridays.\n+- Ada deploys on Mondays.\n@@ -3,0 +4 @@\n+- Ada likes tea.\n\n\
            [2026-01-03 09:00] [MEMORY.md] undo of the consolidation of s:2 messages 2..6\n--- MEMORY.md\n+++ MEMORY.md\n@@ -2 +2 @@\n-- Ada deploys on Mondays.\n+- Ada deploys on Fridays.\n@@ -4 +3,0 @@\n-- Ada likes tea.\n\n\
            [2026-01-05 09:00] [MEMORY.md] consolidation of s:1 messages 4..9: 1 added; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -4,0 +5 @@\n+- Ada likes tea.\n";
        // Between the undo and the last consolidation a person added the cat.
        let now = "# Memory\n- Ada deploys on Fridays.\n- Ada lives in Paris.\n- Ada has a cat.\n- Ada likes tea.\n\n";
        let credit = |l: &MemoryMdLine| match (&l.kind, &l.session) {
            (Some(k), Some(s)) => format!(
                "{} {k} {} {s} {}..{}",
                l.line,
                l.entry.unwrap(),
                l.from.unwrap(),
                l.to.unwrap()
            ),
            (Some(k), None) => format!("{} {k} {}", l.line, l.entry.unwrap()),
            _ => format!("{} none", l.line),
        };
        let got: Vec<String> = memory_md_blame(now, history, None)
            .iter()
            .map(credit)
            .collect();
        assert_eq!(
            got,
            [
                "1 none",
                // Restored by the undo: from the messages it was first taken from.
                "2 undo 4 s:1 0..4",
                "3 consolidation 1 s:1 0..4",
                "4 none",
                // Removed by the undo, added again: the later addition.
                "5 consolidation 5 s:1 4..9",
                "6 none",
            ]
        );
        let lines = memory_md_blame(now, history, None);
        assert_eq!(lines[2].text, "- Ada lives in Paris.");
        assert_eq!(lines[1].at.as_deref(), Some("2026-01-03 09:00"));
        // As of a day, the entries after it do not count.
        let then = "# Memory\n- Ada deploys on Mondays.\n- Ada lives in Paris.\n- Ada likes tea.\n";
        let got: Vec<String> = memory_md_blame(then, history, Some("2026-01-02".parse().unwrap()))
            .iter()
            .map(credit)
            .collect();
        assert_eq!(
            got,
            [
                "1 none",
                "2 consolidation 3 s:2 2..6",
                "3 consolidation 1 s:1 0..4",
                "4 consolidation 3 s:2 2..6",
            ]
        );
    }

    #[test]
    fn a_timeline_numbers_messages_around_records_and_torn_lines() {
        let log = "{\"_type\":\"metadata\",\"key\":\"k\",\"last_consolidated\":0}\n\
                   {\"role\":\"user\",\"content\":\"<script>alert(1)</script>\"}\n\
                   {\"role\":\"assistant\",\"content\":\"hi\"}\n\
                   {\"_type\":\"compaction\",\"kind\":\"snip\",\"tokens_before\":900,\"tokens_after\":100}\n\
                   {\"role\":\"user\",\"cont\n\
                   {\"role\":\"user\",\"content\":\"again\"}\n";
        let v = timeline(
            "k".into(),
            "sessions/k.jsonl".into(),
            log.as_bytes(),
            &TimelineArgs::default(),
            MAX_PAGE,
            &MemorySide::default(),
        );
        assert_eq!((v.total_lines, v.messages), (6, 3));
        let kinds: Vec<&str> = v.lines.iter().map(|l| l.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "metadata",
                "message",
                "message",
                "compaction",
                "malformed",
                "message"
            ]
        );
        assert_eq!(v.lines[5].ordinal, Some(2));
        assert!(v.lines[4].text.starts_with("line 5 cannot be read"));
        assert_eq!(v.lines[1].text, "<script>alert(1)</script>");
        assert_eq!(v.marks.len(), 1);
        assert_eq!(v.chart.last().unwrap().message, 2);
        assert!(v.chart.last().unwrap().tokens < 200, "{:?}", v.chart);
        let page = timeline(
            "k".into(),
            "f".into(),
            log.as_bytes(),
            &TimelineArgs {
                message: Some(2),
                limit: Some(2),
                ..Default::default()
            },
            2,
            &MemorySide::default(),
        );
        assert_eq!(page.from, 5);
    }

    /// Lines the store does not load (a JSON object that is no message, a
    /// role it does not know, bytes that are not UTF-8, a torn last line)
    /// count as no message: later messages keep the store's ordinals, so a
    /// fact's `from` link opens the row it names.
    #[test]
    fn a_timeline_numbers_messages_as_the_store_does() {
        let mut log = b"{\"_type\":\"metadata\",\"key\":\"k\",\"last_consolidated\":0}\n\
                        {\"role\":\"user\",\"content\":\"first\"}\n\
                        {}\n\
                        {\"role\":\"robot\",\"content\":\"beep\"}\n"
            .to_vec();
        log.extend_from_slice(b"{\"role\":\"user\",\"content\":\"caf\xe9\"}\n");
        log.extend_from_slice(b"\n{\"role\":\"assistant\",\"content\":\"second\"}\n");
        log.extend_from_slice(b"{\"role\":\"user\",\"content\":\"third\"}\n{\"role\":\"us");
        let stored =
            mnemo_store::session::parse_session_bytes(std::path::Path::new("k.jsonl"), &log);
        let v = timeline(
            "k".into(),
            "sessions/k.jsonl".into(),
            &log,
            &TimelineArgs::default(),
            MAX_PAGE,
            &MemorySide::default(),
        );
        assert_eq!(v.messages, stored.messages.len());
        assert_eq!(v.messages, 3);
        let shown: Vec<(usize, Option<usize>, &str)> = v
            .lines
            .iter()
            .map(|l| (l.line, l.ordinal, l.kind.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                (1, None, "metadata"),
                (2, Some(0), "message"),
                (3, None, "malformed"),
                (4, None, "malformed"),
                (5, None, "malformed"),
                (6, None, "blank"),
                (7, Some(1), "message"),
                (8, Some(2), "message"),
                (9, None, "malformed"),
            ]
        );
        // Each ordinal opens the message the store gives it.
        for l in v.lines.iter().filter(|l| l.ordinal.is_some()) {
            let n = l.ordinal.unwrap();
            assert_eq!(l.text, stored.messages[n].text(), "line {}", l.line);
        }
        assert!(
            v.lines[2].text.starts_with("line 3 cannot be read"),
            "{}",
            v.lines[2].text
        );
        assert!(v.lines[3].text.contains("robot"), "{}", v.lines[3].text);
        assert!(v.lines[4].text.contains("not UTF-8"), "{}", v.lines[4].text);
        assert!(v.lines[8].text.contains("torn"), "{}", v.lines[8].text);
        // Opening message 2 lands on its row.
        let page = timeline(
            "k".into(),
            "f".into(),
            &log,
            &TimelineArgs {
                message: Some(2),
                limit: Some(4),
                ..Default::default()
            },
            4,
            &MemorySide::default(),
        );
        assert!(page
            .lines
            .iter()
            .any(|l| l.ordinal == Some(2) && l.text == "third"));
    }

    /// The session's consolidations, flushes, undos and notes follow the
    /// messages they cover; another session's (`chat:10`, `xchat:1`) do not
    /// show.
    #[test]
    fn a_timeline_shows_what_memory_made_of_the_session() {
        let mut log =
            String::from("{\"_type\":\"metadata\",\"key\":\"chat:1\",\"last_consolidated\":0}\n");
        for i in 0..6 {
            log.push_str(&format!(
                "{{\"role\":\"user\",\"content\":\"m{i}\",\"timestamp\":\"2026-01-01T10:0{i}:00+00:00\"}}\n"
            ));
        }
        let history = "[2026-01-01 10:02] chat:1 messages 0..2: 1 fact(s) proposed\n[memory/facts.md: added f1]\n[consolidated from chat:1 messages 0..2]\n\n\
            [2026-01-01 10:03] chat:10 messages 0..2: 1 fact(s) proposed\n\n\
            [2026-01-01 10:03] xchat:1 messages 0..2: 1 fact(s) proposed\n\n\
            [2026-01-01 10:04] memory flush of chat:1 messages 2..4: 1 fact(s) proposed\n[memory/facts.md: added f2]\n\n\
            [2026-01-01 10:05] Ada said she deploys on Fridays.\n[consolidated from chat:1 messages 2..5]\n\n\
            [2026-01-01 10:05] [MEMORY.md] consolidation of chat:1 messages 2..5: 1 added; to undo it\n--- MEMORY.md\n+++ MEMORY.md\n@@ -1,0 +2 @@\n+- Ada.\n\n\
            [2026-01-01 10:06] [MEMORY.md] undo of the consolidation of chat:1 messages 2..5\n";
        let notes = [SessionNote {
            at: "2026-01-01T10:03:30Z".parse().unwrap(),
            path: "memory/2026-01-01-deploys.md".into(),
        }];
        let side = MemorySide {
            history,
            notes: &notes,
        };
        let v = timeline(
            "chat:1".into(),
            "sessions/chat_1.jsonl".into(),
            log.as_bytes(),
            &TimelineArgs::default(),
            MAX_PAGE,
            &side,
        );
        // Each as `kind from..to after line L, entry E`.
        let got: Vec<String> = v
            .events
            .iter()
            .map(|e| {
                format!(
                    "{} {:?}..{} after line {}, entry {:?}",
                    e.kind, e.from, e.to, e.after_line, e.entry
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "consolidation Some(0)..2 after line 3, entry Some(1)",
                "note None..4 after line 5, entry None",
                "flush Some(2)..4 after line 5, entry Some(4)",
                "consolidation Some(2)..5 after line 6, entry Some(5)",
                "consolidation Some(2)..5 after line 6, entry Some(6)",
                "undo Some(2)..5 after line 6, entry Some(7)",
            ],
            "{:#?}",
            v.events
        );
        assert_eq!(
            v.events[1].path.as_deref(),
            Some("memory/2026-01-01-deploys.md")
        );
        assert_eq!(v.events[1].title, "2026-01-01-deploys");
        assert!(v.events[2].title.starts_with("memory flush of chat:1"));
        assert_eq!(
            messages_of("[chat:1 messages 3..9]", "chat:1"),
            Some((3, 9))
        );
        assert_eq!(messages_of("chat:10 messages 3..9", "chat:1"), None);
    }

    #[test]
    fn daily_logs_and_notes_have_their_day_and_other_files_none() {
        let day = |p: &str| file_day(p).map(|d| d.to_string());
        assert_eq!(day("memory/2026-01-03.md").as_deref(), Some("2026-01-03"));
        assert_eq!(
            day("memory/2026-01-03-tea-talk.md").as_deref(),
            Some("2026-01-03")
        );
        assert_eq!(day("memory/tea.md"), None);
        assert_eq!(day("memory/facts.md"), None);
        assert_eq!(day("memory/HISTORY.md"), None);
    }
}
