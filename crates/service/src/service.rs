//! [`Service`]: every operation of mnemo over one workspace (search, get,
//! write, forget, session append/history/list/context, consolidation,
//! compaction, closing a session, an agent turn), with typed arguments
//! ([`crate::args`]) and typed answers ([`crate::output`]). The CLI, the
//! MCP server and the HTTP API all call these, so they validate, default
//! and answer alike. The workspace parts are synchronous (SQLite, local
//! models, files): every operation runs them on tokio's blocking pool.

use std::sync::{Arc, OnceLock};

use chrono::Utc;
use mnemo::{DownloadProgress, Mnemo};
use mnemo_core::Coded;
use mnemo_engine::{Engine, MemoryWorkMode, MemoryWorkers, Passage, RerankOutcome};
use mnemo_index::{SearchHit, SearchRequest, SearchResponse};
use mnemo_llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelInfo, ProviderConfig,
    ProviderOverrides,
};
use mnemo_store::memory::facts::FACTS_FILE;
use mnemo_store::{FrontMatter, SaveMode};

use crate::args::{
    AppendArgs, CompactArgs, ContextArgs, ForgetArgs, GetArgs, HistoryArgs, MemoryHistoryArgs,
    SearchArgs, TurnArgs, Write, WriteArgs, MAX_RESULTS, MAX_TURN_ITERATIONS,
};
use crate::error::{Error, Result};
use crate::output::{
    AppendOutput, CloseOutput, ContextOutput, DreamOutput, EventsOutput, FactState, ForgetOutput,
    GetOutput, HealthOutput, HistoryOutput, MemoryChange, MemoryHistoryOutput, MemoryWorkOutput,
    MemoryWorkState, ScoreParts, SearchOutput, SectionAction, SessionsOutput, TurnOutput,
    WriteOutput,
};
use crate::validity::{
    dated_lines_of, ended_last, ended_lines, order_by_validity, validity_of, Facts,
};

/// What to do when no chat model is configured.
pub const NO_MODEL_HINT: &str = "no chat model is configured: run one inside mnemo, offline and without a key, \
with --provider local or [provider] kind = \"local\" in mnemo.toml (the first use downloads \
Qwen2.5-Coder-1.5B-Instruct, 1.1 GB), or use a remote one with --provider openai|anthropic --model NAME \
(and --base-url for a server such as Ollama: --base-url http://127.0.0.1:11434/v1), the MNEMO_PROVIDER / \
MNEMO_MODEL / MNEMO_BASE_URL / MNEMO_API_KEY variables, or a [provider] section (kind, base_url, model, \
api_key_env)";

/// The engine, or why there is none.
enum EngineSlot {
    /// With a chat model: everything works.
    Ready(Arc<Engine>),
    /// Without one: the context builder works (no recall side query);
    /// consolidation, compaction and turns are refused with this reason.
    Offline(Arc<Engine>, String),
}

/// One opened workspace and the operations every surface calls.
pub struct Service {
    mnemo: Arc<Mnemo>,
    overrides: ProviderOverrides,
    engine: OnceLock<std::result::Result<EngineSlot, String>>,
    /// The memory work its turns leave running (shared by every workspace
    /// of a multi-tenant server, which waits for all of it as it stops).
    workers: Arc<MemoryWorkers>,
    search_permits: tokio::sync::Semaphore,
    /// `[engine] rerank` and `[engine] expand`, read once: a search without
    /// them never builds the engine.
    rerank: bool,
    expand: bool,
    /// For one registration of a multi-tenant workspace: whether it still
    /// is registered (see [`Service::explain_gone`]).
    registered: OnceLock<Registered>,
}

/// Whether the workspace a service was opened for is still registered.
type Registered = Arc<dyn Fn() -> bool + Send + Sync>;

impl Service {
    /// The operations over an opened workspace, with the chat model of its
    /// configuration (and the environment).
    pub fn new(mnemo: Arc<Mnemo>) -> Arc<Self> {
        Self::with_provider(mnemo, ProviderOverrides::default())
    }

    /// [`Service::new`] with the chat model named by flags (`--provider`,
    /// `--base-url`, `--model`) over the configuration's.
    pub fn with_provider(mnemo: Arc<Mnemo>, overrides: ProviderOverrides) -> Arc<Self> {
        Self::with_memory_workers(mnemo, overrides, MemoryWorkers::new())
    }

    /// [`Service::with_provider`] whose turns' memory work is kept in
    /// `workers` (see [`Service::memory_workers`]).
    pub fn with_memory_workers(
        mnemo: Arc<Mnemo>,
        overrides: ProviderOverrides,
        workers: Arc<MemoryWorkers>,
    ) -> Arc<Self> {
        // Searches are CPU-bound (scoring, vector scan): running more at once
        // than there are cores only makes every one of them slower.
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let engine_settings = mnemo
            .config()
            .section::<mnemo_engine::EngineSettings>("engine")
            .ok();
        let rerank = engine_settings.as_ref().is_some_and(|s| s.rerank);
        let expand = engine_settings.as_ref().is_some_and(|s| s.expand);
        Arc::new(Service {
            mnemo,
            overrides,
            rerank,
            expand,
            engine: OnceLock::new(),
            workers,
            search_permits: tokio::sync::Semaphore::new(cores),
            registered: OnceLock::new(),
        })
    }

    /// Marks this service as one registration of a multi-tenant workspace;
    /// `live` says whether it still is registered (a blocking check).
    pub fn bind_registration(&self, live: impl Fn() -> bool + Send + Sync + 'static) {
        let _ = self.registered.set(Arc::new(live));
    }

    /// `e`, or "not found" when this service's workspace was deleted while
    /// the request ran: an I/O failure or an unexpected state met because
    /// its rows and index were dropped underneath is its absence, not a
    /// fault of the server. Surfaces whose errors travel inside a success
    /// (MCP's tool results) call it; HTTP asks [`Service::deregistered`]
    /// of any failed answer.
    pub async fn explain_gone(self: &Arc<Self>, e: Error) -> Error {
        if !matches!(
            e.code(),
            mnemo_core::ErrorCode::Io | mnemo_core::ErrorCode::Internal
        ) {
            return e;
        }
        if self.deregistered().await {
            return Error::NotFound(
                "this workspace was deleted while the request ran: nothing more can be read or \
                 written in it (GET /v1/workspaces lists the workspaces there are)"
                    .into(),
            );
        }
        e
    }

    /// True when this service was opened for a registration of a
    /// multi-tenant workspace that no longer stands (deleted, perhaps
    /// created again); false for a folder's, and when the registry cannot
    /// be read (that says nothing either way).
    pub async fn deregistered(self: &Arc<Self>) -> bool {
        let Some(live) = self.registered.get().cloned() else {
            return false;
        };
        matches!(blocking(move || Ok(live())).await, Ok(false))
    }

    /// The workspace handle.
    pub fn mnemo(&self) -> &Arc<Mnemo> {
        &self.mnemo
    }

    /// `memory_search`: the index's hits for `args.query`, searched beside
    /// a passage the chat model writes as its answer when asked
    /// (`args.expand`, else `[engine] expand`) and re-ranked by it when
    /// asked (`args.rerank`, else `[engine] rerank`).
    pub async fn search(self: &Arc<Self>, args: SearchArgs) -> Result<SearchOutput> {
        args.validate()?;
        let wants = |asked: Option<bool>, configured: bool| {
            asked
                .unwrap_or(configured)
                .then(|| match self.engine_slot() {
                    Ok(EngineSlot::Ready(e)) => Ok(e.clone()),
                    Ok(EngineSlot::Offline(_, why)) => Err(why.clone()),
                    Err(e) => Err(e.to_string()),
                })
        };
        let rerank = wants(args.rerank, self.rerank);
        // The model writes before the search queue is joined: a search
        // waiting for a permit should not wait for a model too.
        let mut expand_ms = None;
        let mut expand_warning = None;
        let expansion = match wants(args.expand, self.expand) {
            None => None,
            Some(Err(why)) => {
                expand_warning = Some(format!(
                    "an expansion was asked for but is unavailable: {why}"
                ));
                None
            }
            Some(Ok(engine)) => {
                let started = std::time::Instant::now();
                // Of a dialogue, the model reads what its latest turn asks.
                let answer = engine.expansion(&mnemo_index::need_of(&args.query)).await;
                expand_ms = Some(started.elapsed().as_millis() as u64);
                if answer.is_none() {
                    expand_warning = Some(
                        "the chat model wrote no passage to search beside the query (failed, or late: [engine] expand_timeout_ms); the query was searched alone".into(),
                    );
                }
                answer
            }
        };
        let _permit = self
            .search_permits
            .acquire()
            .await
            .map_err(|e| Error::Internal(format!("search queue closed: {e}")))?;
        let wider = rerank
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .map(|e| e.settings().rerank_candidates);
        let me = self.clone();
        let query = args.query.clone();
        let as_of = args.as_of_day()?;
        let explain = args.explain.unwrap_or(false);
        let budget = args.budget_tokens;
        let expansion_for_search = expansion.clone();
        let (mut resp, wanted, marks, ended) = blocking(move || {
            let index = me.mnemo.index()?;
            let wanted = args
                .max_results
                .unwrap_or(index.settings().search.max_results)
                .clamp(1, MAX_RESULTS);
            let args_query = args.query.clone();
            let mut req = SearchRequest::new(args.query)
                .expansions(expansion_for_search.into_iter().collect());
            // Facts that ended (or, as of a day, did not hold then) go last
            // or go, and a current fact just past the first `wanted` hits
            // can lead the records: ask for more so that the answer still
            // has `wanted` and sees that fact.
            let asked = wider.map_or(wanted, |w| w.clamp(wanted, MAX_RESULTS));
            let widen = if as_of.is_some() { 3 } else { 2 };
            req.max_results = Some((asked * widen).min(MAX_RESULTS));
            req.min_score = args.min_score;
            req.mode = args.mode.map(Into::into);
            let mut resp = index.search(&req)?;
            keyword_only_because(&mut resp, me.mnemo.embedder()?.warning);
            let memory = me.mnemo.memory();
            let facts = Facts::parse(&memory.read_document(FACTS_FILE)?.unwrap_or_default());
            // Typed memories only: not the history or a daily log, which
            // can be long and hold no dated lines.
            let dated = dated_lines_of(&resp, |p| memory.read_typed_document(p))?;
            order_by_validity(&mut resp, &args_query, &facts, &dated, as_of);
            snippets_after_front_matter(&mut resp, |p| memory.read_typed_document(p))?;
            let (marks, ended) = validity_of(&resp, &facts, &dated);
            Ok((resp, wanted, marks, ended))
        })
        .await?;
        let mut before_rerank: Vec<String> = Vec::new();
        let mut judged: std::collections::HashMap<String, f32> = Default::default();
        let mut rerank_ms = None;
        let reranked = match rerank {
            None => None,
            Some(Err(why)) => {
                resp.warnings.push(format!(
                    "re-ranking was asked for but is unavailable: {why}"
                ));
                Some(false)
            }
            Some(Ok(engine)) => {
                before_rerank = resp.results.iter().map(|h| h.citation.clone()).collect();
                let passages = rerank_passages(&resp, engine.settings().rerank_candidates);
                let started = std::time::Instant::now();
                let outcome = engine.rerank(&query, &passages).await;
                rerank_ms = Some(started.elapsed().as_millis() as u64);
                judged = before_rerank
                    .iter()
                    .zip(&outcome.scores)
                    .filter_map(|(c, s)| Some((c.clone(), (*s)?)))
                    .collect();
                let applied = apply_rerank(&mut resp, outcome);
                // The model judges relevance, not whether a fact still holds.
                ended_last(&mut resp, &ended);
                Some(applied)
            }
        };
        resp.results.truncate(wanted);
        let spent = budget.map(|tokens| fit_curated_first(&mut resp.results, &query, tokens));
        resp.warnings.extend(expand_warning);
        let mut out = SearchOutput::from_response(&resp, reranked);
        out.rerank_ms = rerank_ms;
        out.expansion = expansion;
        out.expand_ms = expand_ms;
        out.tokens = spent;
        for (hit, scored) in out.results.iter_mut().zip(&resp.results) {
            hit.validity = marks.get(&hit.citation).cloned();
            if explain {
                let round = |s: f32| (f64::from(s) * 10_000.0).round() / 10_000.0;
                let trace = scored.trace.unwrap_or_default();
                hit.parts = Some(ScoreParts {
                    keyword: scored.text_score.map(round),
                    vector: scored.vector_score.map(round),
                    fused: scored.trace.map(|t| round(t.fused)),
                    date: (trace.date > 0.0).then(|| round(trace.date)),
                    decay: (trace.decay < 1.0).then(|| round(trace.decay)),
                    exact: trace.exact,
                    before_rerank: before_rerank
                        .iter()
                        .position(|c| *c == hit.citation)
                        .map(|i| i + 1),
                    judged: judged.get(&hit.citation).map(|&p| round(p)),
                });
            }
        }
        Ok(out)
    }

    /// `memory_get`: lines of a Markdown memory file, or of a session log
    /// a search cited (`sessions/….jsonl#L45-L45`) with its secrets taken
    /// out as the index takes them out of its copy: a raw log never goes
    /// into a prompt.
    pub async fn get(self: &Arc<Self>, args: GetArgs) -> Result<GetOutput> {
        let (path, from, lines) = args.resolve()?;
        if is_session_path(&path) {
            let mut got = self.session_lines(path, from, lines).await?;
            got.text = mnemo_core::redact::redact(&got.text).into_owned();
            return Ok(got);
        }
        let me = self.clone();
        blocking(move || {
            let mut got: GetOutput = me.mnemo.index()?.get(&path, from, lines)?.into();
            let memory = me.mnemo.memory();
            got.ended = ended_lines(&got.path, &got.text, got.from, || memory.read_facts())?;
            Ok(got)
        })
        .await
    }

    /// Lines of any file a search cites, for a person at the terminal
    /// (`mnemo get`): memory files as [`Service::get`], and session logs
    /// (`sessions/….jsonl`) as they are written.
    pub async fn read(self: &Arc<Self>, args: GetArgs) -> Result<GetOutput> {
        let (path, from, lines) = args.resolve()?;
        if !is_session_path(&path) {
            return self.get(args).await;
        }
        self.session_lines(path, from, lines).await
    }

    /// Lines of a session log inside the workspace's sessions folder (a
    /// log not written yet is empty).
    async fn session_lines(
        self: &Arc<Self>,
        path: String,
        from: Option<usize>,
        lines: Option<usize>,
    ) -> Result<GetOutput> {
        let me = self.clone();
        blocking(move || {
            let root = me.mnemo.workspace().root().to_path_buf();
            let abs = mnemo_core::resolve_in_workspace(&root, &path)?;
            let abs = mnemo_core::confine(&root, &abs, mnemo_core::Area::Sessions)?;
            // Read through the storage: a database workspace's logs are
            // rows, not files under its folder.
            let rel = abs
                .strip_prefix(&root)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_else(|_| path.clone());
            // A citation names one log; the folder (`sessions/`) is none.
            if !rel.starts_with("sessions/") || rel.ends_with('/') || root.join(&rel).is_dir() {
                return Err(Error::Invalid(format!(
                    "`{path}` is no session log: memory_get reads one, as a search cites it (sessions/<file>.jsonl#L12-L14)"
                )));
            }
            let text = me
                .mnemo
                .sessions()
                .storage()
                .read_session_file(&rel)?
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            Ok(slice_lines(&path, &text, from, lines))
        })
        .await
    }

    /// `memory_write`.
    pub async fn write(self: &Arc<Self>, args: WriteArgs) -> Result<WriteOutput> {
        let write = args.into_write()?;
        let me = self.clone();
        blocking(move || me.write_sync(write)).await
    }

    fn write_sync(&self, write: Write) -> Result<WriteOutput> {
        let memory = self.mnemo.memory();
        match write {
            Write::Daily { text } => {
                let out = memory.append_daily(&text, Utc::now(), true)?;
                Ok(WriteOutput::Daily {
                    path: out.path,
                    written: out.written,
                    duplicates: out.duplicates,
                })
            }
            Write::Typed {
                name,
                description,
                kind,
                body,
                replace,
            } => {
                let front = FrontMatter {
                    name,
                    description,
                    kind,
                };
                let mode = if replace {
                    SaveMode::Replace
                } else {
                    SaveMode::Create
                };
                // The text before, for the audit log (a replace's old body).
                let old = memory
                    .find_typed(&front.name)
                    .ok()
                    .flatten()
                    .map(|m| m.body);
                let saved = memory.save_typed(front, &body, mode)?;
                let m = &saved.memory;
                if saved.action != mnemo_store::SaveAction::Unchanged {
                    memory.append_audit(&[mnemo_store::memory::facts::AuditRecord {
                        at: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        op: "write".into(),
                        memory: m.front.name.clone(),
                        old: old.map(|b| b.trim().to_string()),
                        new: Some(m.body.trim().to_string()),
                        by: "memory_write".into(),
                        ..Default::default()
                    }])?;
                }
                Ok(WriteOutput::Typed {
                    path: m.path.clone(),
                    name: m.front.name.clone(),
                    kind: m.front.kind.as_str().to_string(),
                    action: saved.action.into(),
                })
            }
            Write::MemorySection { heading, body } => {
                let out = memory.write_section(&heading, &body)?;
                Ok(WriteOutput::MemorySection {
                    path: "MEMORY.md".into(),
                    heading: heading.trim().trim_start_matches('#').trim().to_string(),
                    action: if out.replaced {
                        SectionAction::Replaced
                    } else {
                        SectionAction::Added
                    },
                    changed: out.changed,
                })
            }
        }
    }

    /// `memory_forget`: a typed memory (by name or path) or a fact (by id).
    pub async fn forget(self: &Arc<Self>, args: ForgetArgs) -> Result<ForgetOutput> {
        if args.name.trim().is_empty() {
            return Err(Error::Invalid(
                "`name` is empty: give the typed memory's name".into(),
            ));
        }
        let me = self.clone();
        blocking(move || {
            let memory = me.mnemo.memory();
            let name = args.name.trim();
            // A fact's id (f12) names a line of memory/facts.md; anything
            // else a typed memory.
            let removed = (|| -> Result<String> {
                if memory.read_facts()?.get(name).is_some() {
                    let fact = memory.forget_fact(name, chrono::Utc::now())?;
                    return Ok(format!(
                        "{}#{}",
                        mnemo_store::memory::facts::FACTS_FILE,
                        fact.id
                    ));
                }
                // Read before the file goes: the name its history is under.
                let audit_name = typed_audit_name(memory, name);
                let rel = memory.forget_typed(name)?;
                memory.append_audit(&[mnemo_store::memory::facts::AuditRecord {
                    at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    op: "forget".into(),
                    memory: audit_name,
                    by: "forget".into(),
                    ..Default::default()
                }])?;
                Ok(rel)
            })();
            // A merge-guard file written before it kept digests holds
            // MEMORY.md lines word for word (issue 43 N7): hashed now, not
            // at the next consolidation. Under the memory lock, as
            // consolidation writes it.
            let upgraded = memory.lock().map_err(Error::from).and_then(|_held| {
                mnemo_engine::consolidate::upgrade_provenance(me.mnemo.workspace())
                    .map_err(Error::from)
            });
            if let Err(e) = upgraded {
                tracing::warn!("the merge guard's line list could not be rewritten: {e}");
            }
            // Gone from the index, its vectors and the embedding cache now,
            // not at the next search. A forget that finds nothing does this
            // too: the one before may have been killed after the files
            // changed and before the index did (issue 43 N8), and running it
            // again finishes that job. An index that cannot be opened (no
            // embedder configured, say) drops the file at its next sync.
            let not_found =
                matches!(&removed, Err(e) if e.code() == mnemo_core::ErrorCode::NotFound);
            if removed.is_ok() || not_found {
                match me.mnemo.index() {
                    Ok(index) => {
                        if let Err(e) = index.forget_unused() {
                            tracing::warn!("the index could not drop {name} yet: {e}");
                        }
                    }
                    Err(e) => tracing::debug!("no index to update after forget: {e}"),
                }
            }
            Ok(ForgetOutput { removed: removed? })
        })
        .await
    }

    /// `memory_history`: every recorded change of a memory (a fact's id or
    /// a typed memory's name), oldest first; a name nothing is recorded
    /// about is not found.
    pub async fn memory_history(
        self: &Arc<Self>,
        args: MemoryHistoryArgs,
    ) -> Result<MemoryHistoryOutput> {
        let name = args.name.trim().to_string();
        if name.is_empty() {
            return Err(Error::Invalid(
                "`name` is empty: give a fact's id (f12) or a typed memory's name".into(),
            ));
        }
        let me = self.clone();
        blocking(move || {
            let memory = me.mnemo.memory();
            let facts = memory.read_facts()?;
            let fact = facts.get(&name).map(|f| FactState {
                id: f.id.clone(),
                text: f.text.clone(),
                current: f.is_current(),
                valid_from: f.since.map(|d| d.to_string()),
                valid_until: f.until.map(|d| d.to_string()),
                superseded_by: f.superseded_by.clone(),
                recorded: f.recorded.clone(),
            });
            let changes: Vec<MemoryChange> = memory
                .memory_history(&name)?
                .into_iter()
                .map(MemoryChange::from)
                .collect();
            if fact.is_none() && changes.is_empty() {
                return Err(Error::NotFound(format!(
                    "nothing is recorded about {name:?}: give a fact's id from memory/facts.md or a typed memory's name"
                )));
            }
            Ok(MemoryHistoryOutput { name, fact, changes })
        })
        .await
    }

    /// `mnemo dream`: tidies memory/facts.md (no model needed); with
    /// `undo`, reverses the newest dream instead.
    pub async fn dream(self: &Arc<Self>, undo: bool) -> Result<DreamOutput> {
        let engine = match self.engine_slot()? {
            EngineSlot::Ready(e) | EngineSlot::Offline(e, _) => e.clone(),
        };
        blocking(move || {
            if undo {
                let u = mnemo_engine::undo_dream(engine.memory(), chrono::Utc::now())?;
                return Ok(DreamOutput {
                    id: u.id,
                    changed: true,
                    merged: Vec::new(),
                    folded_logs: Vec::new(),
                    added: Vec::new(),
                    superseded: Vec::new(),
                    moved: Vec::new(),
                    retracted: Vec::new(),
                    typed: Vec::new(),
                    typed_created: Vec::new(),
                    current: engine.memory().read_facts()?.current().count(),
                    undone_lines: Some(u.lines),
                });
            }
            let r = engine.dream()?;
            Ok(DreamOutput {
                id: r.id,
                changed: r.changed,
                merged: r.merged,
                folded_logs: r.folded_logs,
                added: r.added,
                superseded: r.superseded,
                moved: r.moved,
                retracted: r.retracted,
                typed: r.typed,
                typed_created: r.typed_created,
                current: r.current,
                undone_lines: None,
            })
        })
        .await
    }

    /// `session_append`: the messages stored and the session's total.
    pub async fn append(self: &Arc<Self>, key: String, args: AppendArgs) -> Result<AppendOutput> {
        let messages = args.into_messages()?;
        let me = self.clone();
        blocking(move || {
            let mut log = me.mnemo.sessions().open(&key)?;
            let stored = log.append(&messages)?;
            let total = log.load()?.messages.len();
            Ok(AppendOutput {
                key,
                appended: stored.len(),
                messages: total,
            })
        })
        .await
    }

    /// A session's messages: all of them, or those since the consolidation
    /// cursor replayed for a model. A missing session is not found.
    pub async fn history(
        self: &Arc<Self>,
        key: String,
        args: HistoryArgs,
    ) -> Result<HistoryOutput> {
        let me = self.clone();
        blocking(move || {
            let loaded = me.mnemo.sessions().load(&key)?;
            let messages = if args.since_cursor {
                loaded.replay()
            } else {
                loaded.messages.clone()
            };
            Ok(HistoryOutput {
                last_consolidated: loaded.meta.last_consolidated,
                total: loaded.messages.len(),
                messages,
                warnings: loaded
                    .warnings
                    .iter()
                    .map(|w| format!("line {}: {}", w.line, w.message))
                    .collect(),
                key,
            })
        })
        .await
    }

    /// Every session, newest first.
    pub async fn sessions(self: &Arc<Self>) -> Result<SessionsOutput> {
        let me = self.clone();
        blocking(move || {
            Ok(SessionsOutput {
                sessions: me
                    .mnemo
                    .sessions()
                    .list()?
                    .into_iter()
                    .map(Into::into)
                    .collect(),
            })
        })
        .await
    }

    /// `session_context`: the request the engine would send for the next
    /// turn (system prompt with memory, replayed history, the message).
    pub async fn context(
        self: &Arc<Self>,
        key: String,
        args: ContextArgs,
    ) -> Result<ContextOutput> {
        self.require_session(&key).await?;
        let message = args.message.unwrap_or_default();
        let (engine, offline) = match self.engine_slot()? {
            EngineSlot::Ready(e) => (e.clone(), None),
            EngineSlot::Offline(e, why) => (e.clone(), Some(why.clone())),
        };
        let report = match &offline {
            None => engine.build_context(&key, &message).await?,
            Some(_) => {
                blocking(move || Ok(engine.build_context_with(&key, &message, &[])?)).await?
            }
        };
        Ok(ContextOutput {
            report,
            notes: offline
                .map(|why| vec![format!("no recall side query: {why}")])
                .unwrap_or_default(),
        })
    }

    /// Consolidates a session now (needs a chat model).
    ///
    /// A run that archived a round raw after repeated failed runs is an
    /// error (`provider`, saying what it did), as `mnemo consolidate` exits
    /// 6: nothing is lost, but nothing was distilled.
    pub async fn consolidate(self: &Arc<Self>, key: String) -> Result<EventsOutput> {
        let out = self.consolidate_with(key, &|_| {}).await?;
        match mnemo_engine::Error::from_raw_archive(&out.key, &out.events) {
            Some(e) => Err(e.into()),
            None => Ok(out),
        }
    }

    /// [`Service::consolidate`], telling `on_round` of each round as it
    /// begins (`mnemo consolidate`'s progress line).
    pub async fn consolidate_with(
        self: &Arc<Self>,
        key: String,
        on_round: mnemo_engine::consolidate::OnRound<'_>,
    ) -> Result<EventsOutput> {
        let engine = self.session_engine(&key).await?;
        let events = engine.consolidate_now_with(&key, on_round).await?;
        Ok(EventsOutput { key, events })
    }

    /// Runs the compaction pipeline (or one level of it) on a session
    /// (needs a chat model).
    pub async fn compact(self: &Arc<Self>, key: String, args: CompactArgs) -> Result<EventsOutput> {
        if let Some(l) = args.level {
            if !(1..=6).contains(&l) {
                return Err(Error::Invalid(format!(
                    "`level` is {l}: give 1 to 6, or omit it to run the whole pipeline"
                )));
            }
        }
        let engine = self.session_engine(&key).await?;
        let events = engine
            .compact_with_focus(&key, args.level, args.focus.as_deref())
            .await?;
        Ok(EventsOutput { key, events })
    }

    /// Closes a session's conversation: consolidates its tail, writes the
    /// session note and moves the cursor to the end (needs a chat model).
    pub async fn close(self: &Arc<Self>, key: String) -> Result<CloseOutput> {
        let engine = self.session_engine(&key).await?;
        let r = engine.new_session(&key).await?;
        Ok(CloseOutput {
            key,
            events: r.events,
            note: r.note,
            slug: r.slug,
            slug_fallback: r.slug_fallback,
            cursor: r.cursor,
        })
    }

    /// One agent turn: `message` from the user, answered by the chat model
    /// with the memory tools run on this service. A new key starts a session.
    /// In the background mode (`memory_work` of the answer) the turn's
    /// consolidation and memory flush run after it, in a task that outlives
    /// the request ([`Service::memory_work`] reports it).
    pub async fn turn(self: &Arc<Self>, key: String, args: TurnArgs) -> Result<TurnOutput> {
        let turn = self.turn_observed(&key, args, &|_| {}).await?;
        if turn.memory_work == MemoryWorkMode::Background {
            self.engine()?.spawn_memory_work(&key)?;
        }
        Ok(TurnOutput { turn })
    }

    /// One agent turn as [`Service::turn`] runs it (the same checks and
    /// bounds, the memory tools run on this service), with `observe` told
    /// each step as it happens, for a terminal that shows them. The memory
    /// work after the turn is the caller's ([`AgentTurn::memory_work`]
    /// says which kind).
    pub async fn turn_observed(
        self: &Arc<Self>,
        key: &str,
        args: TurnArgs,
        observe: &(dyn Fn(mnemo_engine::AgentStep<'_>) + Send + Sync),
    ) -> Result<mnemo_engine::AgentTurn> {
        if args.message.trim().is_empty() {
            return Err(Error::Invalid(
                "`message` is empty: give the user's message".into(),
            ));
        }
        let engine = self.engine()?;
        let defaults = mnemo_engine::TurnOptions::default();
        let options = mnemo_engine::TurnOptions {
            max_iterations: args
                .max_iterations
                .unwrap_or(defaults.max_iterations)
                .clamp(1, MAX_TURN_ITERATIONS),
            recall: args.recall.unwrap_or(defaults.recall),
        };
        let tools = self.tools();
        Ok(engine
            .run_turn(key, &args.message, &tools, &options, observe)
            .await?)
    }

    /// `memory_work`: what a session's memory work after its turns is
    /// doing, or what its last run did.
    pub async fn memory_work(self: &Arc<Self>, key: String) -> Result<MemoryWorkOutput> {
        let engine = match self.engine_slot()? {
            EngineSlot::Ready(e) | EngineSlot::Offline(e, _) => e.clone(),
        };
        self.require_session(&key).await?;
        let mode = engine.memory_work_mode();
        Ok(match engine.memory_work_status(&key) {
            Some(r) => MemoryWorkOutput {
                key,
                mode: mode.into(),
                state: MemoryWorkState::from(r.state),
                doing: r.doing,
                started: Some(r.started),
                seconds: Some((r.seconds * 10.0).round() / 10.0),
                events: r.events,
                error: r.error,
            },
            None => MemoryWorkOutput {
                key,
                mode: mode.into(),
                state: MemoryWorkState::Idle,
                doing: None,
                started: None,
                seconds: None,
                events: Vec::new(),
                error: None,
            },
        })
    }

    /// The memory work this service's turns left running (a server waits
    /// for it before it exits).
    pub fn memory_workers(&self) -> &Arc<MemoryWorkers> {
        &self.workers
    }

    /// The server is up.
    pub fn health(&self) -> HealthOutput {
        HealthOutput {
            status: "ok".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// The memory tools of an agent turn, run on this service.
    pub fn tools(self: &Arc<Self>) -> crate::agent::ServiceTools {
        crate::agent::ServiceTools(self.clone())
    }

    /// The engine with its chat model, built on first use; without a chat
    /// model, an error that says how to configure one.
    pub fn engine(&self) -> Result<Arc<Engine>> {
        self.engine_with_progress(&mut |_| {})
    }

    /// [`Service::engine`], reporting a local model's download when the
    /// first call has to fetch it.
    pub fn engine_with_progress(
        &self,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> Result<Arc<Engine>> {
        match self.engine_slot_with(progress)? {
            EngineSlot::Ready(e) => Ok(e.clone()),
            EngineSlot::Offline(_, why) => Err(Error::NotConfigured(why.clone())),
        }
    }

    /// The index as the engine's recall searches it.
    pub fn memory_search(&self) -> Arc<dyn mnemo_engine::MemorySearch> {
        Arc::new(IndexMemorySearch(self.mnemo.clone()))
    }

    /// The chat model the flags, the environment and mnemo.toml name.
    pub fn chat_model(
        &self,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> std::result::Result<Arc<dyn ChatModel>, LlmError> {
        chat_model(self.mnemo.config(), &self.overrides, progress)
    }

    /// The chat model, or why there is none, said as the user needs it:
    /// with none configured, how to configure one; with one configured
    /// that cannot be built (a broken model file, a missing key), its own
    /// failure first (issue 43 N13: a configured model is not "no chat
    /// model").
    fn chat_model_or_why(
        &self,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> std::result::Result<Arc<dyn ChatModel>, String> {
        let env = |k: &str| std::env::var(k).ok();
        let provider = ProviderConfig::resolve(self.mnemo.config(), None, &self.overrides, &env)
            .map_err(|e| format!("{NO_MODEL_HINT} ({e})"))?;
        mnemo::build_chat_model(&provider, progress).map_err(|e| configured_model_failed(&e))
    }

    async fn require_session(self: &Arc<Self>, key: &str) -> Result<()> {
        let me = self.clone();
        let k = key.to_string();
        if blocking(move || Ok(me.mnemo.sessions().exists(&k)?)).await? {
            return Ok(());
        }
        Err(Error::NotFound(format!(
            "no session {key:?}: append messages to it first (session_append)"
        )))
    }

    async fn session_engine(self: &Arc<Self>, key: &str) -> Result<Arc<Engine>> {
        let engine = self.engine()?;
        self.require_session(key).await?;
        Ok(engine)
    }

    /// The engine over the workspace's own stores (a database workspace's
    /// rows, not files of its folder).
    fn over_stores(&self, engine: Engine) -> Engine {
        engine.with_stores(self.mnemo.sessions().clone(), self.mnemo.memory().clone())
    }

    fn engine_slot(&self) -> Result<&EngineSlot> {
        self.engine_slot_with(&mut |_| {})
    }

    fn engine_slot_with(&self, progress: &mut dyn FnMut(&DownloadProgress)) -> Result<&EngineSlot> {
        let slot = self.engine.get_or_init(|| {
            let ws = self.mnemo.workspace();
            let config = self.mnemo.config();
            let tools = crate::tools::agent_tools();
            match self.chat_model_or_why(progress) {
                Ok(model) => Engine::new(ws, config, model).map(|e| {
                    EngineSlot::Ready(Arc::new(
                        self.over_stores(e)
                            .with_memory_search(self.memory_search())
                            .with_tools(tools)
                            .with_memory_workers(self.workers.clone()),
                    ))
                }),
                Err(why) => {
                    let model: Arc<dyn ChatModel> = Arc::new(NoModel::new(why.clone()));
                    Engine::new(ws, config, model).map(|e| {
                        EngineSlot::Offline(
                            Arc::new(
                                self.over_stores(e)
                                    .with_memory_search(self.memory_search())
                                    .with_tools(tools),
                            ),
                            why,
                        )
                    })
                }
            }
            .map_err(|e| e.to_string())
        });
        slot.as_ref()
            .map_err(|e| Error::Invalid(format!("bad [engine] configuration: {e}")))
    }
}

/// The chat model `overrides` (flags), the environment (`MNEMO_PROVIDER`,
/// …) and `config`'s `[provider]` name, built (a local one loaded, and
/// downloaded the first time with `progress` reporting).
pub fn chat_model(
    config: &mnemo_core::Config,
    overrides: &ProviderOverrides,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> std::result::Result<Arc<dyn ChatModel>, LlmError> {
    let env = |k: &str| std::env::var(k).ok();
    let provider = ProviderConfig::resolve(config, None, overrides, &env)?;
    mnemo::build_chat_model(&provider, progress)
}

/// Why a configured chat model cannot be used: its own failure, then
/// where to choose another.
fn configured_model_failed(e: &LlmError) -> String {
    format!(
        "{e} (the chat model configured with --provider, MNEMO_PROVIDER or [provider] in \
         mnemo.toml; fix it there, or choose another one)"
    )
}

/// Lines `from..from+lines` of `text` (1-based), as `memory_get` answers.
/// A path in the sessions folder (`sessions/….jsonl`).
fn is_session_path(path: &str) -> bool {
    path.replace('\\', "/").starts_with("sessions/")
}

fn slice_lines(path: &str, text: &str, from: Option<usize>, lines: Option<usize>) -> GetOutput {
    let all: Vec<&str> = text.lines().collect();
    let from = from.unwrap_or(1).max(1);
    let picked: Vec<&str> = all
        .iter()
        .skip(from - 1)
        .take(lines.unwrap_or(usize::MAX))
        .copied()
        .collect();
    GetOutput {
        path: path.to_string(),
        text: picked.join("\n"),
        from,
        lines: picked.len(),
        total_lines: all.len(),
        ended: Vec::new(),
    }
}

/// The workspace's index as the recall side query's memory search: Markdown
/// memory only (the files recall can put into the prompt), the workspace's
/// minimum score.
pub struct IndexMemorySearch(pub Arc<Mnemo>);

impl mnemo_engine::MemorySearch for IndexMemorySearch {
    fn memory_files(&self, query: &str, limit: usize) -> std::result::Result<Vec<String>, String> {
        let index = self.0.index().map_err(|e| e.to_string())?;
        let req = SearchRequest::new(query)
            .sources(&[mnemo_index::Source::Memory])
            .max_results(limit.max(1));
        Ok(index.search(&req).map_err(|e| e.to_string())?.files())
    }

    fn memory_hits(
        &self,
        query: &str,
        limit: usize,
    ) -> std::result::Result<Vec<mnemo_engine::MemoryHit>, String> {
        let index = self.0.index().map_err(|e| e.to_string())?;
        let req = SearchRequest::new(query)
            .sources(&[mnemo_index::Source::Memory])
            .max_results(limit.clamp(1, MAX_RESULTS));
        Ok(index
            .search(&req)
            .map_err(|e| e.to_string())?
            .results
            .into_iter()
            .map(|h| mnemo_engine::MemoryHit {
                path: h.path,
                start_line: h.start_line,
                end_line: h.end_line,
                score: h.score,
            })
            .collect())
    }
}

/// The start of the index's warning when it has no embedder. It does not
/// know why; the embedder's choice does.
const NO_EMBEDDER: &str = "no embedding model configured";

/// Puts why a search ran keyword-only (`why`: the model is not configured,
/// or it could not be loaded or downloaded) in place of the index's
/// "no embedding model configured", which contradicted it when the model
/// was configured and only unavailable.
/// The name the audit log knows a typed memory by (its saves are under
/// its front matter's name, and `memory history` looks it up so): a
/// memory named by its path (`memory/tea.md`, as the inspector's page
/// sends it) goes by the name in its front matter, else by the file's
/// stem; one named by name, by the name it was saved under.
fn typed_audit_name(memory: &mnemo_store::MemoryStore, given: &str) -> String {
    let by_path = given.ends_with(".md") || given.contains('/');
    let found = if by_path {
        memory.read_typed(given.trim_start_matches("./")).ok()
    } else {
        memory.find_typed(given).ok().flatten()
    };
    match found {
        Some(m) => m.front.name,
        None if by_path => given
            .rsplit('/')
            .next()
            .unwrap_or(given)
            .trim_end_matches(".md")
            .to_string(),
        None => given.to_string(),
    }
}

fn keyword_only_because(resp: &mut SearchResponse, why: Option<String>) {
    let Some(why) = why else { return };
    resp.warnings.retain(|w| !w.starts_with(NO_EMBEDDER));
    resp.warnings.insert(0, why);
}

/// A typed memory's front matter (`---`, name, description, type, `---`)
/// is how mnemo files it, not what it says: the snippet of a hit that
/// opens with it starts after it (the citation's lines stay the chunk's).
/// A hit over the front matter alone shows the description.
fn snippets_after_front_matter(
    resp: &mut SearchResponse,
    read: impl Fn(&str) -> mnemo_store::Result<Option<String>>,
) -> Result<()> {
    for h in &mut resp.results {
        if !h.path.starts_with("memory/") || !h.path.ends_with(".md") || h.path == FACTS_FILE {
            continue;
        }
        let Some(text) = read(&h.path)? else {
            continue;
        };
        let (Some(front), body) = mnemo_store::memory::split_front_matter(&text) else {
            continue;
        };
        let head = text
            .get(..text.len().saturating_sub(body.len()))
            .unwrap_or_default();
        if h.start_line > head.lines().count() {
            continue;
        }
        let head: std::collections::HashSet<&str> = head.lines().map(str::trim_end).collect();
        let kept: Vec<&str> = h
            .snippet
            .lines()
            .skip_while(|l| head.contains(l.trim_end()) || l.trim().is_empty())
            .collect();
        if !kept.is_empty() {
            h.snippet = kept.join("\n");
        } else if let Ok(front) = front {
            h.snippet = front.description;
        }
    }
    Ok(())
}

/// Stands in for a chat model when none is configured: the context builder
/// only reads its name, and any call fails with the reason.
struct NoModel {
    info: ModelInfo,
    why: String,
}

impl NoModel {
    fn new(why: String) -> Self {
        NoModel {
            info: ModelInfo {
                provider: "none".into(),
                model: "none".into(),
                context_window: 128_000,
                max_output: 8_192,
            },
            why,
        }
    }
}

impl ChatModel for NoModel {
    fn complete(
        &self,
        _req: ChatRequest,
    ) -> BoxFuture<'_, std::result::Result<ChatResponse, LlmError>> {
        let why = self.why.clone();
        Box::pin(async move { Err(LlmError::Config(why)) })
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }
}

/// The first `n` hits as the re-rank model reads them.
pub fn rerank_passages(resp: &SearchResponse, n: usize) -> Vec<Passage> {
    resp.results
        .iter()
        .take(n)
        .map(|h| Passage {
            // The day helps the model with "when" questions.
            label: match &h.date {
                Some(d) => format!("{} ({d})", h.citation),
                None => h.citation.clone(),
            },
            day: h.date.clone(),
            text: h.snippet.clone(),
        })
        .collect()
}

/// Applies a re-rank of the first hits (see [`mnemo_engine::rerank`]):
/// the re-ranked hits in their new order, hits past them after them. On a
/// failure the index's order stays and the warnings say why; when the time
/// budget ran out, the hits judged by then are re-ordered and a warning
/// says how many. True when the model moved the order at all.
pub fn apply_rerank(resp: &mut SearchResponse, outcome: RerankOutcome) -> bool {
    if outcome.timed_out {
        let n = outcome.order.len();
        resp.warnings.push(if outcome.judged < 2 {
            "the re-rank model did not answer in time ([engine] rerank_timeout_ms); hits are in the index's order".to_string()
        } else {
            format!(
                "the re-rank read {} of {n} hits within [engine] rerank_timeout_ms; the rest are in the index's order",
                outcome.judged
            )
        });
        if outcome.judged < 2 {
            return false;
        }
    }
    if let Some(e) = outcome.error {
        resp.warnings.push(format!(
            "the re-rank failed ({e}); hits are in the index's order"
        ));
        return false;
    }
    let mut slots: Vec<Option<SearchHit>> = std::mem::take(&mut resp.results)
        .into_iter()
        .map(Some)
        .collect();
    let mut out: Vec<SearchHit> = outcome
        .order
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect();
    out.extend(slots.into_iter().flatten());
    resp.results = out;
    true
}

/// Runs `f` on the blocking pool.
pub async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("blocking task failed: {e}")))?
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;

/// Fits `hits` into `tokens` ([`mnemo_engine::fit_budget`]) spending it on
/// the curated memory first (facts, MEMORY.md, typed memories, daily
/// logs), then on the transcripts: a memory says in a line what a
/// conversation took many to say, and a transcript that repeats it is the
/// one left out. The hits kept stay in their ranked order.
fn fit_curated_first(hits: &mut Vec<SearchHit>, query: &str, tokens: usize) -> usize {
    let mut ranked: Vec<(usize, SearchHit)> = hits.drain(..).enumerate().collect();
    ranked.sort_by_key(|(rank, h)| (h.source == mnemo_index::Source::Sessions, *rank));
    let spent = mnemo_engine::fit_budget(&mut ranked, query, tokens, |(_, h)| &mut h.snippet);
    ranked.sort_by_key(|(rank, _)| *rank);
    hits.extend(ranked.into_iter().map(|(_, h)| h));
    spent
}
