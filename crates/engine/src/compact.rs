//! The compaction pipeline run against a session log: each level applied,
//! recorded as a `CompactionRecord` and reported; `prepare_turn` (before a
//! turn), `compact` (one level or all) and `send` (reactive compaction on
//! a context-overflow error).

use mnemo_core::{resolve_in_workspace, Message, Role};
use mnemo_llm::{ChatResponse, ErrorKind};
use mnemo_store::{CompactionRecord, LoadedSession, Record, SessionLog};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::context::ContextReport;
use crate::engine::{Engine, Thresholds};
use crate::error::{Error, Result};
use crate::events::{CompactionReport, EngineEvent};
use crate::history::{kind, Entry};
use crate::pipeline::{self, MicrocompactRule};

/// What `prepare_turn` did and the prompt size it left.
#[derive(Debug, Clone, Serialize)]
pub struct TurnReport {
    /// Everything that ran, in order.
    pub events: Vec<EngineEvent>,
    /// Prompt tokens before.
    pub tokens_before: usize,
    /// Prompt tokens after.
    pub tokens_after: usize,
    /// The thresholds used.
    pub thresholds: Thresholds,
}

/// The answer of a turn sent through [`Engine::send`].
#[derive(Debug, Clone)]
pub struct TurnOutcome {
    /// The model's answer.
    pub response: ChatResponse,
    /// The request that succeeded.
    pub context: ContextReport,
    /// Compactions made to get there.
    pub events: Vec<EngineEvent>,
}

/// The user message a preparation is for, as the prompt is measured with it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Request<'a> {
    /// Not in the log yet ([`Engine::prepare_turn`]): counted beside it.
    Pending(&'a str),
    /// Already the log's last message: [`Engine::run_turn`] logs it before
    /// anything slow, so that nothing (Ctrl-C, a failed step) loses it.
    Logged,
    /// None: memory work after a turn's answer.
    None,
}

impl Request<'_> {
    /// The text to count beside the log.
    pub(crate) fn pending(&self) -> &str {
        match self {
            Request::Pending(text) => text,
            _ => "",
        }
    }

    /// Messages at the log's end that are the request itself: never
    /// consolidated before its answer, and a turn of their own for snip
    /// and collapse, which protect the newest turns.
    pub(crate) fn logged(&self) -> usize {
        usize::from(matches!(self, Request::Logged))
    }
}

/// The text of the latest user message when a split at `split` folds it
/// into the summary, that is when no user message stays in the tail.
fn folded_request(entries: &[Entry], split: usize) -> Option<String> {
    let is_request = |e: &&Entry| e.ordinal.is_some() && e.message.role == Role::User;
    if entries.get(split..)?.iter().any(|e| is_request(&e)) {
        return None;
    }
    entries[..split]
        .iter()
        .rev()
        .find(is_request)
        .map(|e| e.message.text())
        .filter(|t| !t.trim().is_empty())
}

/// What a summary level writes: its record kind (autocompact or
/// reactive), the tokens of recent history kept verbatim, and the user's
/// focus, if any.
#[derive(Clone, Copy)]
struct Summarise<'a> {
    kind: &'a str,
    tail_tokens: usize,
    focus: Option<&'a str>,
}

impl Engine {
    fn record(&self, log: &mut SessionLog, rec: CompactionRecord) -> Result<()> {
        log.append_record(&Record::Compaction(rec))?;
        Ok(())
    }

    fn new_record(
        &self,
        kind: &str,
        before: usize,
        after: usize,
        extra: Map<String, Value>,
    ) -> CompactionRecord {
        CompactionRecord {
            kind: kind.to_string(),
            tokens_before: before,
            tokens_after: after,
            summary: None,
            first_kept: None,
            timestamp: self.now().to_rfc3339(),
            extra,
        }
    }

    /// Level 2 on the log: records and reports the snipped messages.
    async fn level_snip(
        &self,
        log: &mut SessionLog,
        request: Request<'_>,
        force: bool,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let message = request.pending();
        let loaded = log.load()?;
        let entries = self.history_entries(&loaded);
        let keep = if force {
            1
        } else {
            self.settings.collapse_keep_turns + request.logged()
        };
        let dropped = pipeline::snip(&entries, keep);
        if dropped.is_empty() {
            return Ok(());
        }
        let changed = dropped.len();
        self.project(
            log,
            &loaded,
            message,
            (kind::SNIP, "dropped", json!(dropped)),
            changed,
            events,
        )
    }

    /// Appends a projection record (its kind, and what it changed as
    /// `field: value`), measuring the prompt before and after it, and
    /// reports it with the count of what it changed.
    fn project(
        &self,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        message: &str,
        (kind, field, value): (&str, &str, Value),
        changed: usize,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let before = self.measure(loaded, message)?;
        let mut probe = loaded.clone();
        let mut extra = Map::new();
        extra.insert(field.into(), value);
        let mut rec = self.new_record(kind, before, 0, extra);
        probe.compactions.push((loaded.messages.len(), rec.clone()));
        let after = self.measure(&probe, message)?;
        rec.tokens_after = after;
        self.record(log, rec)?;
        events.push(EngineEvent::Compacted(CompactionReport {
            kind: kind.into(),
            tokens_before: before,
            tokens_after: after,
            changed,
            first_kept: None,
        }));
        Ok(())
    }

    /// Level 3 on the log.
    async fn level_microcompact(
        &self,
        log: &mut SessionLog,
        message: &str,
        force: bool,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let loaded = log.load()?;
        let entries = self.history_entries(&loaded);
        let rule = MicrocompactRule {
            gap_minutes: self.settings.microcompact_gap_minutes,
            keep: self.settings.microcompact_keep,
            tools: &self.settings.microcompact_tools,
            protected: &self.settings.protected_tools,
        };
        let cleared = pipeline::microcompact(&entries, self.now(), &rule, force);
        if cleared.is_empty() {
            return Ok(());
        }
        let changed = cleared.len();
        self.project(
            log,
            &loaded,
            message,
            (kind::MICROCOMPACT, "cleared", json!(cleared)),
            changed,
            events,
        )
    }

    /// Level 4 on the log.
    async fn level_collapse(
        &self,
        log: &mut SessionLog,
        request: Request<'_>,
        events: &mut Vec<EngineEvent>,
    ) -> Result<()> {
        let message = request.pending();
        let loaded = log.load()?;
        let entries = self.history_entries(&loaded);
        let spans = pipeline::collapse(
            &entries,
            self.settings.collapse_keep_turns + request.logged(),
        );
        if spans.is_empty() {
            return Ok(());
        }
        let changed = spans.len();
        self.project(
            log,
            &loaded,
            message,
            (kind::COLLAPSE, "spans", json!(spans)),
            changed,
            events,
        )
    }

    /// Level 5 (or 6 with `kind::REACTIVE`): flush first, then a summary of
    /// the head and the verbatim tail, then restoration. Failures count
    /// towards the breaker.
    async fn level_autocompact(
        &self,
        key: &str,
        log: &mut SessionLog,
        message: &str,
        how: Summarise<'_>,
        events: &mut Vec<EngineEvent>,
    ) -> Result<bool> {
        let Summarise {
            kind: record_kind,
            tail_tokens,
            focus,
        } = how;
        let loaded = log.load()?;
        let before = self.measure(&loaded, message)?;
        let entries = self.history_entries(&loaded);
        if pipeline::split_tail(&entries, &*self.counter, tail_tokens).is_none() {
            // Nothing would be folded: no reason to flush before it.
            return Ok(false);
        }
        self.flush_if_needed(log, record_kind, before, events)
            .await?;
        let loaded = log.load()?;
        let entries = self.history_entries(&loaded);
        let Some(split) = pipeline::split_tail(&entries, &*self.counter, tail_tokens) else {
            return Ok(false);
        };
        let head = pipeline::messages_of(&entries[..split]);
        match self.compactor.summarize(&head, focus).await {
            Ok(summary) => {
                self.with_state(key, |s| s.compact_failures = 0);
                let first_kept = entries[split].ordinal;
                let mut extra = Map::new();
                extra.insert("messages_folded".into(), json!(head.len()));
                extra.insert("compactor".into(), json!(self.compactor.name()));
                let mut restored = self.restoration(&entries);
                if let Some(request) = folded_request(&entries, split) {
                    // Mid-turn (a reactive compaction while tools run), the
                    // user's request can fall into the head: the model must
                    // still read it as it was written, not only as summarised.
                    restored.push_str(&format!(
                        "## The user's current request (folded into the summary)\n\n{}\n\n",
                        self.clip_tokens(request.trim(), 2_000).trim_end()
                    ));
                }
                if !restored.is_empty() {
                    extra.insert("restored".into(), json!(restored));
                }
                let mut rec = self.new_record(record_kind, before, 0, extra);
                rec.summary = Some(summary);
                rec.first_kept = first_kept;
                let mut probe = loaded.clone();
                probe.compactions.push((loaded.messages.len(), rec.clone()));
                let after = self.measure(&probe, message)?;
                if after >= before {
                    // Nothing to gain (the history already fits in the
                    // tail): writing the record would only grow the prompt.
                    return Ok(false);
                }
                rec.tokens_after = after;
                self.record(log, rec)?;
                events.push(EngineEvent::Compacted(CompactionReport {
                    kind: record_kind.into(),
                    tokens_before: before,
                    tokens_after: after,
                    changed: head.len(),
                    first_kept,
                }));
                Ok(true)
            }
            Err(e) => {
                let failures = self.with_state(key, |s| {
                    s.compact_failures += 1;
                    s.compact_failures
                });
                events.push(EngineEvent::CompactionFailed {
                    kind: record_kind.into(),
                    failures,
                    error: e.to_string(),
                });
                Ok(false)
            }
        }
    }

    /// Reactive last resort: drop the oldest turns without a summary
    /// (the previous summary, if any, is carried over).
    async fn drop_oldest(
        &self,
        log: &mut SessionLog,
        message: &str,
        fraction: f64,
        events: &mut Vec<EngineEvent>,
    ) -> Result<bool> {
        let loaded = log.load()?;
        let before = self.measure(&loaded, message)?;
        let entries = self.history_entries(&loaded);
        let Some(k) = pipeline::drop_oldest(&entries, fraction) else {
            return Ok(false);
        };
        let first_kept = entries[k].ordinal;
        let mut extra = Map::new();
        extra.insert("dropped_messages".into(), json!(k));
        let mut rec = self.new_record(kind::REACTIVE, before, 0, extra);
        rec.first_kept = first_kept;
        rec.summary = crate::history::last_base(&loaded).and_then(|(_, r)| r.summary.clone());
        let mut probe = loaded.clone();
        probe.compactions.push((loaded.messages.len(), rec.clone()));
        let after = self.measure(&probe, message)?;
        rec.tokens_after = after;
        self.record(log, rec)?;
        events.push(EngineEvent::Compacted(CompactionReport {
            kind: kind::REACTIVE.into(),
            tokens_before: before,
            tokens_after: after,
            changed: k,
            first_kept,
        }));
        Ok(true)
    }

    /// Restoration after a summary: the most recently read files (within
    /// the per-file and total token caps), the instruction files and the
    /// current plan.
    pub(crate) fn restoration(&self, entries: &[Entry]) -> String {
        let mut out = String::new();
        let root = self.workspace.root();
        let mut total = 0usize;
        let files = pipeline::recently_read_files(entries, &self.settings.read_tools);
        for f in files.into_iter().take(self.settings.restore_max_files) {
            let path = if std::path::Path::new(&f).is_absolute() {
                Some(std::path::PathBuf::from(&f))
            } else {
                resolve_in_workspace(root, &f).ok()
            };
            let Some(text) = path.and_then(|p| std::fs::read_to_string(p).ok()) else {
                continue;
            };
            let body = self.clip_tokens(&text, self.settings.restore_file_tokens);
            let t = self.counter.count_text(&body);
            if total + t > self.settings.restore_total_tokens {
                break;
            }
            total += t;
            out.push_str(&format!(
                "## Recently read: {f}\n\n```\n{}\n```\n\n",
                body.trim_end()
            ));
        }
        for name in &self.settings.instruction_files {
            if let Ok(text) = std::fs::read_to_string(root.join(name)) {
                if !text.trim().is_empty() {
                    out.push_str(&format!("## Instructions ({name})\n\n{}\n\n", text.trim()));
                }
            }
        }
        if !self.settings.plan_file.is_empty() {
            if let Ok(text) = std::fs::read_to_string(root.join(&self.settings.plan_file)) {
                if !text.trim().is_empty() {
                    out.push_str(&format!(
                        "## Current plan ({})\n\n{}\n\n",
                        self.settings.plan_file,
                        text.trim()
                    ));
                }
            }
        }
        out.trim_end().to_string()
    }

    fn clip_tokens(&self, text: &str, max_tokens: usize) -> String {
        if self.counter.count_text(text) <= max_tokens {
            return text.to_string();
        }
        // Halve until it fits: counts are not linear in characters.
        let mut chars = max_tokens * 4;
        loop {
            let cut = pipeline::clip(text, chars);
            if self.counter.count_text(&cut) <= max_tokens || chars < 64 {
                return format!("{cut}\n(… cut to {max_tokens} tokens)");
            }
            chars = chars * 3 / 4;
        }
    }

    /// Everything before a turn, under the session lock: consolidation while
    /// over the target, snip and microcompact, the flush at its threshold,
    /// and when over the autocompact threshold collapse then autocompact
    /// (flushing first). `user_message` is not in the log yet. Returns an
    /// event for each thing done.
    pub async fn prepare_turn(&self, key: &str, user_message: &str) -> Result<TurnReport> {
        self.prepare(key, Request::Pending(user_message), true)
            .await
    }

    /// [`Engine::prepare_turn`] for `request`; without `memory_work` only
    /// what the prompt needs to fit (no consolidation, no flush at its
    /// threshold: see [`crate::memory_work`]).
    pub(crate) async fn prepare(
        &self,
        key: &str,
        request: Request<'_>,
        memory_work: bool,
    ) -> Result<TurnReport> {
        let _lock = self.lock(key).await?;
        let (mut log, loaded) = self.open(key)?;
        let user_message = request.pending();
        let t = self.thresholds();
        let tokens_before = self.measure(&loaded, user_message)?;
        let mut events = Vec::new();
        if memory_work && self.settings.consolidation_enabled {
            let progress = crate::memory_work::Progress::none();
            self.consolidate_for_turn(key, &mut log, request, &progress, &mut events)
                .await?;
        }
        self.level_snip(&mut log, request, false, &mut events)
            .await?;
        self.level_microcompact(&mut log, user_message, false, &mut events)
            .await?;
        let tokens = self.measure(&log.load()?, user_message)?;
        if memory_work {
            if let Some(reason) = self.flush_reason(&log, tokens) {
                self.flush_if_needed(&mut log, reason, tokens, &mut events)
                    .await?;
            }
        }
        if tokens >= t.autocompact {
            self.level_collapse(&mut log, request, &mut events).await?;
            let tokens = self.measure(&log.load()?, user_message)?;
            if tokens >= t.autocompact {
                let failures = self.with_state(key, |s| s.compact_failures);
                if failures >= self.settings.breaker_failures {
                    events.push(EngineEvent::BreakerOpen { failures });
                } else {
                    self.level_autocompact(
                        key,
                        &mut log,
                        user_message,
                        Summarise {
                            kind: kind::AUTOCOMPACT,
                            tail_tokens: self.tail_tokens(),
                            focus: None,
                        },
                        &mut events,
                    )
                    .await?;
                }
            }
        }
        let tokens_after = self.measure(&log.load()?, user_message)?;
        Ok(TurnReport {
            events,
            tokens_before,
            tokens_after,
            thresholds: t,
        })
    }

    /// Why the flush is due at `tokens` (its threshold, or a transcript
    /// over `flush_transcript_bytes`), if it is.
    pub(crate) fn flush_reason(&self, log: &SessionLog, tokens: usize) -> Option<&'static str> {
        if !self.settings.flush_enabled {
            return None;
        }
        let log_bytes = std::fs::metadata(log.path()).map(|m| m.len()).unwrap_or(0);
        if tokens >= self.thresholds().flush {
            Some("threshold")
        } else if log_bytes >= self.settings.flush_transcript_bytes {
            Some("transcript_size")
        } else {
            None
        }
    }

    /// Runs one level (1 budget, 2 snip, 3 microcompact ignoring the gap,
    /// 4 collapse, 5 autocompact, 6 reactive) or, with `None`, the whole
    /// pipeline in order, whatever the thresholds. An explicit run resets
    /// the breaker.
    pub async fn compact(&self, key: &str, level: Option<u8>) -> Result<Vec<EngineEvent>> {
        self.compact_with_focus(key, level, None).await
    }

    /// [`Engine::compact`] with a focus for the summary levels (5 and 6):
    /// what the user wants kept above all ("the API decisions").
    pub async fn compact_with_focus(
        &self,
        key: &str,
        level: Option<u8>,
        focus: Option<&str>,
    ) -> Result<Vec<EngineEvent>> {
        let _lock = self.lock(key).await?;
        let (mut log, loaded) = self.open(key)?;
        self.with_state(key, |s| s.compact_failures = 0);
        let mut events = Vec::new();
        let levels: Vec<u8> = match level {
            Some(l @ 1..=6) => vec![l],
            Some(l) => {
                return Err(Error::Invalid(format!(
                    "no compaction level {l}: use 1 (tool-result budget), 2 (snip), 3 (microcompact), 4 (collapse), 5 (autocompact) or 6 (reactive)"
                )))
            }
            None => vec![1, 2, 3, 4, 5],
        };
        for l in levels {
            match l {
                1 => {
                    // A projection applied on every rebuild: report what it does.
                    let raw: Vec<Entry> = loaded
                        .messages
                        .iter()
                        .enumerate()
                        .skip(loaded.meta.last_consolidated)
                        .map(|(i, m)| Entry::logged(i, m.clone()))
                        .collect();
                    let mut projected = raw.clone();
                    let n = crate::history::apply_tool_budget(
                        &mut projected,
                        crate::history::ResultBudget {
                            max_chars: self.settings.tool_result_max_chars,
                            preview_bytes: self.settings.tool_result_preview_bytes,
                        },
                    );
                    if n > 0 {
                        events.push(EngineEvent::Compacted(CompactionReport {
                            kind: "tool_budget".into(),
                            tokens_before: pipeline::entries_tokens(&raw, &*self.counter),
                            tokens_after: pipeline::entries_tokens(&projected, &*self.counter),
                            changed: n,
                            first_kept: None,
                        }));
                    }
                }
                2 => {
                    self.level_snip(&mut log, Request::None, true, &mut events)
                        .await?
                }
                3 => {
                    self.level_microcompact(&mut log, "", true, &mut events)
                        .await?
                }
                4 => {
                    self.level_collapse(&mut log, Request::None, &mut events)
                        .await?
                }
                5 => {
                    self.level_autocompact(
                        key,
                        &mut log,
                        "",
                        Summarise {
                            kind: kind::AUTOCOMPACT,
                            tail_tokens: self.tail_tokens(),
                            focus,
                        },
                        &mut events,
                    )
                    .await?;
                }
                _ => {
                    if !self
                        .level_autocompact(
                            key,
                            &mut log,
                            "",
                            Summarise {
                                kind: kind::REACTIVE,
                                tail_tokens: self.tail_tokens() / 2,
                                focus,
                            },
                            &mut events,
                        )
                        .await?
                    {
                        self.drop_oldest(&mut log, "", 0.2, &mut events).await?;
                    }
                }
            }
        }
        Ok(events)
    }

    /// Sends a turn to the model with reactive compaction: on a
    /// context-overflow error the session is flushed (once per cycle) and
    /// compacted with a smaller tail each time, dropping the oldest turns
    /// when no summary can be made, up to `reactive_max_retries` times. The
    /// caller appends the user message and the answer to the log.
    pub async fn send(
        &self,
        key: &str,
        user_message: &str,
        selected: &[String],
    ) -> Result<TurnOutcome> {
        self.send_with(key, Some(user_message), selected).await
    }

    /// Like [`send`](Self::send) for a turn already in the log: the request
    /// is the log alone (see [`Engine::build_context_from_log`]), so the
    /// model can be called again after tool results without a new user
    /// message. The caller appends the answer to the log.
    pub async fn send_from_log(&self, key: &str, selected: &[String]) -> Result<TurnOutcome> {
        self.send_with(key, None, selected).await
    }

    async fn send_with(
        &self,
        key: &str,
        pending: Option<&str>,
        selected: &[String],
    ) -> Result<TurnOutcome> {
        // Measured with the pending message when it is not in the log yet.
        let user_message = pending.unwrap_or("");
        let mut events = Vec::new();
        let mut attempt = 0u32;
        loop {
            let context = match pending {
                Some(m) => self.build_context_with(key, m, selected)?,
                None => self.build_context_from_log(key, selected)?,
            };
            match self.model.complete(context.request()).await {
                Ok(response) => {
                    return Ok(TurnOutcome {
                        response,
                        context,
                        events,
                    })
                }
                Err(e) if e.kind() == ErrorKind::ContextOverflow => {
                    if attempt >= self.settings.reactive_max_retries {
                        return Err(Error::StillOverflowing {
                            key: key.to_string(),
                            attempts: attempt,
                            message: e.to_string(),
                        });
                    }
                    attempt += 1;
                    let _lock = self.lock(key).await?;
                    let (mut log, _) = self.open(key)?;
                    let tail = self.tail_tokens() >> attempt;
                    let compacted = self
                        .level_autocompact(
                            key,
                            &mut log,
                            user_message,
                            Summarise {
                                kind: kind::REACTIVE,
                                tail_tokens: tail,
                                focus: None,
                            },
                            &mut events,
                        )
                        .await?;
                    if !compacted {
                        let fraction = 0.2 * f64::from(attempt);
                        if !self
                            .drop_oldest(&mut log, user_message, fraction, &mut events)
                            .await?
                        {
                            return Err(Error::StillOverflowing {
                                key: key.to_string(),
                                attempts: attempt,
                                message: format!("{e}; nothing left to compact"),
                            });
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// The plain messages of a history (for callers that hold entries).
pub fn plain(entries: &[Entry]) -> Vec<Message> {
    pipeline::messages_of(entries)
}
