//! The [`Engine`]: one workspace, one model, and the per-session state
//! (failure counters, the compaction breaker, files already surfaced) that
//! consolidation, flush, compaction, recall and the context builder share.
//! The state is kept in the workspace's storage as well, as the state
//! document `.mnemo/engine/<session>.json` (a file in a workspace folder, a
//! row in a database): a process per turn (`mnemo run`, scripts) counts
//! failures across turns like a long-running agent does, and servers
//! sharing a database share one breaker, one round under way and one
//! list of files recalled (issue 41).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use mnemo_core::{Config, TokenCounter, Workspace};
use mnemo_llm::ChatModel;
use mnemo_store::{LoadedSession, MemoryStore, SessionLog, SessionStore};
use serde::{Deserialize, Serialize};

use crate::compactor::{Compactor, ModelCompactor};
use crate::error::{Error, Result};
use crate::lock::SessionLock;
use crate::settings::EngineSettings;

mod toml_free {
    /// Any value of a setting: only which keys are given is read.
    #[derive(Debug, Default)]
    pub struct Any;

    impl<'de> serde::Deserialize<'de> for Any {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(d).map(|_| Any)
        }
    }
}

/// A clock, so tests can move time (microcompact's gap, dates of logs).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// State of one session that outlives a turn.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct SessionState {
    /// Consecutive failed consolidation runs (one per command or turn,
    /// at most one per `consolidation_failure_spacing_secs`).
    pub consolidation_failures: u32,
    /// When the last counted failed consolidation run was.
    pub last_counted_failure: Option<DateTime<Utc>>,
    /// Consecutive autocompact failures (the breaker opens at the limit).
    pub compact_failures: u32,
    /// Memory files the side query already surfaced in this session.
    pub surfaced: HashSet<String>,
    /// A consolidation round that began and has not moved the cursor yet.
    pub pending: Option<crate::rounds::PendingRound>,
}

/// What this process knows of a session's state.
#[derive(Debug, Default)]
struct KnownState {
    state: SessionState,
    /// The last write of `state` failed: it is newer than the stored one.
    unsaved: bool,
}

/// The token thresholds that drive the engine, for a given model.
///
/// Each is the window less some reserves: nanobot's safety buffer,
/// OpenClaw's reserve floor and soft threshold, Claude Code's autocompact
/// buffer and its warning and blocking margins. The configured reserves
/// were made for windows of 100,000 tokens and more; under 24,000 tokens
/// they would leave nothing, and the flush and autocompact would fire on
/// the first turn of every session. So each reserve is the configured
/// value (or Claude Code's fixed margin) but at most a fixed share of the
/// window ([`reserve_share`]): the safety buffer 1/6 of it, the
/// autocompact buffer and the warning margin 1/8, the reserve floor 1/4,
/// the soft threshold 1/16, the blocking margin 1/64. A 200,000-token window keeps
/// every configured value; an 8,192-token one flushes at 5,632 tokens and
/// autocompacts at 6,144 (with 1,024 tokens of output). Two orders hold
/// whatever the settings: the warning comes at or before autocompact, and
/// the flush never after it, so the pre-compaction flush runs in the same
/// cycle, before the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Thresholds {
    /// Context window of the model.
    pub context_window: usize,
    /// Largest output of the model.
    pub max_output: usize,
    /// nanobot's budget: window − max output − safety buffer (1,024).
    pub budget: usize,
    /// Consolidation runs while the prompt is over this (budget × ratio).
    pub consolidation_target: usize,
    /// The flush runs at window − reserve floor (20,000) − soft threshold
    /// (4,000), and at the latest at `autocompact`.
    pub flush: usize,
    /// window − min(max output, 20,000).
    pub effective_window: usize,
    /// Autocompact fires at effective window − autocompact buffer (13,000).
    pub autocompact: usize,
    /// Claude Code warns the user 20,000 tokens before autocompact.
    pub warning: usize,
    /// Past effective window − 3,000 a request would be refused.
    pub blocking: usize,
}

/// The most of the window each reserve of [`Thresholds`] may take, as a
/// divisor of the window: a 200,000-token window keeps every default
/// (20,000 is 1/10 of it, 3,000 under 1/64).
pub mod reserve_share {
    /// The safety buffer of the consolidation budget: 1/6.
    pub const SAFETY_BUFFER: usize = 6;
    /// OpenClaw's reserve floor: 1/4.
    pub const FLUSH_RESERVE_FLOOR: usize = 4;
    /// OpenClaw's soft threshold: 1/16.
    pub const FLUSH_SOFT_THRESHOLD: usize = 16;
    /// The autocompact buffer: 1/8.
    pub const AUTOCOMPACT_BUFFER: usize = 8;
    /// The warning margin before autocompact: 1/8.
    pub const WARNING: usize = 8;
    /// The blocking margin before the effective window: 1/64.
    pub const BLOCKING: usize = 64;
}

/// Claude Code's warning margin before autocompact (tokens).
const WARNING_MARGIN: usize = 20_000;
/// Claude Code's blocking margin before the effective window (tokens).
const BLOCKING_MARGIN: usize = 3_000;

/// `reserve`, but at most `window / share`.
fn at_most(reserve: usize, window: usize, share: usize) -> usize {
    reserve.min(window / share)
}

/// The warning of [`Engine::model_notice`]: consolidation that rewrites
/// MEMORY.md, with the local provider's small model.
fn small_model_notice(
    settings: &EngineSettings,
    profile: &str,
    provider: &str,
    mode_given: bool,
) -> Option<String> {
    if provider != "local"
        || !settings.consolidation_enabled
        || settings.consolidation_mode != "memory_md"
    {
        return None;
    }
    let why = if mode_given {
        "`[engine] consolidation_mode = \"memory_md\"` has consolidation rewrite MEMORY.md"
            .to_string()
    } else {
        format!("the `{profile}` profile consolidates by rewriting MEMORY.md")
    };
    Some(format!(
        "{why}, which a small local model cannot do: it copies the conversation instead, and mnemo \
         refuses such answers (the messages stay in the session log). The `mnemo` or `mem0` profile \
         keeps facts instead (`[memory] profile = \"mnemo\"`, without `[engine] consolidation_mode`), \
         or use a remote model"
    ))
}

/// The text of the state document `rel` of the workspace kept in
/// `storage`; `None` when there is none or it cannot be read (with a
/// warning: state steers the engine, it never stops it).
///
/// A database workspace that ran before its state was kept in the
/// database has it in the workspace folder, where it always was: read
/// there until the first write puts it in the database (the merge guard's
/// lines cannot be rebuilt, and a breaker or a round under way should
/// survive the upgrade).
pub(crate) fn read_state_document(
    workspace: &Workspace,
    storage: &dyn mnemo_store::Storage,
    rel: &str,
) -> Option<String> {
    match storage.read_state(rel) {
        Ok(Some(text)) => return Some(text),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!("{rel}: could not read engine state: {e}");
            return None;
        }
    }
    if storage.root() == Some(workspace.root()) {
        return None;
    }
    let local = mnemo_store::FileStorage::new(workspace);
    match mnemo_store::Storage::read_state(&local, rel) {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!("{rel}: could not read engine state in the workspace folder: {e}");
            None
        }
    }
}

/// The memory engine of one workspace.
pub struct Engine {
    pub(crate) workspace: Workspace,
    pub(crate) settings: EngineSettings,
    pub(crate) sessions: SessionStore,
    pub(crate) memory: MemoryStore,
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) side_model: Arc<dyn ChatModel>,
    pub(crate) compactor: Arc<dyn Compactor>,
    pub(crate) counter: Arc<dyn TokenCounter>,
    pub(crate) clock: Clock,
    pub(crate) searcher: Option<Arc<dyn crate::recall::MemorySearch>>,
    /// The tools a turn offers the model (declared by the caller, who runs them).
    pub(crate) tools: Vec<mnemo_llm::ToolSpec>,
    /// Why this model and these settings will not write good memory, when
    /// they will not ([`Engine::model_notice`]).
    notice: Option<String>,
    /// Memory work running after turns (see [`crate::memory_work`]).
    pub(crate) workers: Arc<crate::memory_work::MemoryWorkers>,
    state: Mutex<HashMap<String, KnownState>>,
    /// The search re-rank's judgements (see [`crate::rerank`]).
    pub(crate) judgements: crate::rerank::JudgementCache,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("workspace", &self.workspace)
            .field("model", &self.model.info().model)
            .field("compactor", &self.compactor.name())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// The engine over other stores than the workspace folder's (a
    /// database workspace): `sessions` and `memory` replace the ones
    /// [`new`](Self::new) opened, with the same settings.
    pub fn with_stores(mut self, sessions: SessionStore, memory: MemoryStore) -> Self {
        self.sessions = sessions;
        self.memory = memory;
        self
    }

    /// An engine over `workspace` with the `[engine]`, `[session]` and
    /// `[memory]` sections of `config`, calling `model` for consolidation,
    /// flush, summaries, slugs and (unless [`with_side_model`](Self::with_side_model))
    /// the recall side query.
    pub fn new(workspace: &Workspace, config: &Config, model: Arc<dyn ChatModel>) -> Result<Self> {
        let mut settings: EngineSettings = config.section("engine")?;
        let sessions = SessionStore::from_config(workspace, config)?;
        let memory = MemoryStore::from_config(workspace, config)?;
        // The profile's defaults, under whatever [engine] says itself.
        let given: std::collections::BTreeMap<String, toml_free::Any> = config.section("engine")?;
        crate::settings::apply_profile(&mut settings, &memory.settings().profile, &|k| {
            given.contains_key(k)
        })
        .map_err(Error::Invalid)?;
        // A small local model cannot rewrite a whole MEMORY.md inside its
        // budget (Qwen2.5-1.5B copies the excerpt into the call until the
        // budget runs out), but it does write a bounded list of facts; so
        // the default profile consolidates per fact on the local provider.
        // The facts' share of the prompt is bounded by the window
        // (`prompt_memory_share`), which a 2,048-token model needs.
        if memory.settings().profile == "mnemo"
            && model.info().provider == "local"
            && !given.contains_key("consolidation_mode")
        {
            settings.consolidation_mode = "facts".into();
        }
        settings.validate().map_err(Error::Invalid)?;
        let notice = small_model_notice(
            &settings,
            &memory.settings().profile,
            &model.info().provider,
            given.contains_key("consolidation_mode"),
        );
        if let Some(n) = &notice {
            tracing::warn!("{n}");
        }
        let counter = mnemo_tokens::counter_for(&model.info().model, settings.exact_tokens);
        let compactor: Arc<dyn Compactor> =
            Arc::new(ModelCompactor::new(model.clone(), counter.clone()));
        Ok(Engine {
            workspace: workspace.clone(),
            settings,
            sessions,
            memory,
            side_model: model.clone(),
            model,
            compactor,
            counter,
            clock: Arc::new(Utc::now),
            searcher: None,
            tools: Vec::new(),
            notice,
            workers: crate::memory_work::MemoryWorkers::new(),
            state: Mutex::new(HashMap::new()),
            judgements: crate::rerank::JudgementCache::default(),
        })
    }

    /// Lets the recall side query search long-term memory with the
    /// conversation itself (see [`crate::recall::MemorySearch`]).
    pub fn with_memory_search(mut self, searcher: Arc<dyn crate::recall::MemorySearch>) -> Self {
        self.searcher = Some(searcher);
        self
    }

    /// Offers these tools to the model in every turn (and counts them in the
    /// prompt). The caller declares them and runs them with its
    /// [`crate::ToolExecutor`]; without any, a turn offers none.
    pub fn with_tools(mut self, tools: Vec<mnemo_llm::ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Uses another (cheaper) model for the recall side query.
    pub fn with_side_model(mut self, model: Arc<dyn ChatModel>) -> Self {
        self.side_model = model;
        self
    }

    /// Uses another summariser for autocompact (e.g. [`crate::TemplateCompactor`]).
    pub fn with_compactor(mut self, compactor: Arc<dyn Compactor>) -> Self {
        self.compactor = compactor;
        self
    }

    /// Uses another token counter.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// Uses another clock.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The settings in force.
    pub fn settings(&self) -> &EngineSettings {
        &self.settings
    }

    /// A warning for the user when this model cannot do the memory work
    /// these settings ask of it: a small local model asked to rewrite
    /// MEMORY.md (the `nanobot` profile, or `consolidation_mode =
    /// "memory_md"` set by hand) copies the conversation instead. Logged
    /// once when the engine is made; `mnemo consolidate` prints it.
    pub fn model_notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// What the chat model (else the side model) is doing now, when it
    /// can tell: a progress line for a local model's long turn.
    pub fn model_activity(&self) -> Option<mnemo_llm::ModelActivity> {
        self.model.activity().or_else(|| self.side_model.activity())
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The memory store.
    pub fn memory(&self) -> &MemoryStore {
        &self.memory
    }

    /// The session store.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The thresholds for the configured model (see [`Thresholds`] for
    /// how the reserves scale with the window).
    pub fn thresholds(&self) -> Thresholds {
        let info = self.model.info();
        let window = self
            .settings
            .context_window
            .unwrap_or(info.context_window as usize);
        let max_output = self.settings.max_output.unwrap_or(info.max_output as usize);
        let s = &self.settings;
        use reserve_share as share;
        let budget = window.saturating_sub(max_output).saturating_sub(at_most(
            s.safety_buffer,
            window,
            share::SAFETY_BUFFER,
        ));
        let effective = window.saturating_sub(max_output.min(s.autocompact_output_cap));
        let autocompact = effective.saturating_sub(at_most(
            s.autocompact_buffer,
            window,
            share::AUTOCOMPACT_BUFFER,
        ));
        let flush = window
            .saturating_sub(at_most(
                s.flush_reserve_floor,
                window,
                share::FLUSH_RESERVE_FLOOR,
            ))
            .saturating_sub(at_most(
                s.flush_soft_threshold,
                window,
                share::FLUSH_SOFT_THRESHOLD,
            ));
        Thresholds {
            context_window: window,
            max_output,
            budget,
            consolidation_target: (budget as f64 * s.consolidation_ratio) as usize,
            flush: flush.min(autocompact),
            effective_window: effective,
            autocompact,
            warning: autocompact.saturating_sub(at_most(WARNING_MARGIN, window, share::WARNING)),
            blocking: effective.saturating_sub(at_most(BLOCKING_MARGIN, window, share::BLOCKING)),
        }
    }

    /// Tokens of the newest messages a summary keeps verbatim: `[engine]
    /// tail_tokens`, at most a quarter of the effective window (20,000 of
    /// an 8,192-token window would keep everything and fold nothing).
    pub(crate) fn tail_tokens(&self) -> usize {
        self.settings
            .tail_tokens
            .min(self.thresholds().effective_window / 4)
            .max(1)
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    fn state(&self) -> MutexGuard<'_, HashMap<String, KnownState>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the state of `key` and writes it back when `f` changed
    /// it. The state is read from the storage each time: another process,
    /// or another server on the same database, may have changed it (a
    /// round it began, its failed runs, its breaker, the files it
    /// recalled), and a write must not put back what this process knew
    /// before. Its writers take the session lock (all but recall, which
    /// reads and writes the state at once: a write between the two is
    /// lost, a file then surfaces twice).
    ///
    /// The state only steers retries, the breaker and recall, so a state
    /// that cannot be read or written costs a warning, never the turn:
    /// what this process counted stays in memory, and is written again
    /// with the next change.
    pub(crate) fn with_state<T>(&self, key: &str, f: impl FnOnce(&mut SessionState) -> T) -> T {
        // Read before the map is locked: a database's answer takes a
        // round trip, and other sessions need not wait for it.
        let stored = self.load_state(key);
        let mut map = self.state();
        let known = map.entry(key.to_string()).or_default();
        if let Some(stored) = stored {
            if !known.unsaved {
                known.state = stored;
            }
        }
        let before = known.state.clone();
        let out = f(&mut known.state);
        if known.state != before || known.unsaved {
            known.unsaved = !self.save_state(key, &known.state);
        }
        out
    }

    /// Reads the state of `key` from the storage again (the next
    /// [`with_state`](Self::with_state) does too): for a consolidation
    /// starting under the session lock, what other processes recorded
    /// counts.
    pub(crate) fn reload_state(&self, key: &str) {
        self.with_state(key, |_| ());
    }

    /// The state document of `key` (`.mnemo/engine/<stem>.json`): one per
    /// session, in the workspace's storage, so that every server on a
    /// database shares it (issue 41), and in the folder where it always was.
    fn state_rel(key: &str) -> Option<String> {
        let stem = mnemo_store::session::file_stem(key).ok()?;
        Some(format!("{}/engine/{stem}.json", mnemo_store::STATE_DIR))
    }

    /// The stored state of `key`: `None` when there is none, or it cannot
    /// be read; the default, with a warning, when it is not valid.
    fn load_state(&self, key: &str) -> Option<SessionState> {
        let rel = Self::state_rel(key)?;
        let text = read_state_document(&self.workspace, self.sessions.storage().as_ref(), &rel)?;
        Some(serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::warn!("{rel}: unreadable engine state ({e}); starting afresh");
            SessionState::default()
        }))
    }

    /// Writes the state of `key`; false (with a warning) when it could
    /// not be written.
    fn save_state(&self, key: &str, state: &SessionState) -> bool {
        let Some(rel) = Self::state_rel(key) else {
            // A key no file can be named after: kept in memory only.
            return true;
        };
        let written = serde_json::to_string_pretty(state)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                self.sessions
                    .storage()
                    .write_state(&rel, &text)
                    .map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{rel}: could not save engine state: {e}");
                false
            }
        }
    }

    /// The session lock, once this process's memory work of `key` has
    /// stopped (a command or a turn goes first).
    pub(crate) async fn lock(&self, key: &str) -> Result<SessionLock> {
        self.stop_memory_work(key).await;
        SessionLock::acquire(
            self.sessions.storage(),
            key,
            Duration::from_secs(self.settings.lock_wait_secs),
        )
        .await
    }

    /// Opens the log of `key` and loads it (empty when it does not exist yet).
    pub(crate) fn open(&self, key: &str) -> Result<(SessionLog, LoadedSession)> {
        let log = self.sessions.open(key)?;
        let loaded = log.load()?;
        Ok((log, loaded))
    }
}
