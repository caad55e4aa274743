//! Memory work off the turn's path: a turn's consolidation rounds and its
//! memory flush at the threshold, run after the answer instead of before
//! it (`[engine] memory_work`; `"auto"` runs them in the background with
//! the local provider, whose small model takes 30-100 s for each, and
//! inline otherwise).
//!
//! In the background a turn does before its answer only what the prompt
//! needs to fit (snip, microcompact, collapse, and autocompact with its
//! flush when over the threshold), and its caller then starts
//! [`Engine::spawn_memory_work`]: one task per session, under the session
//! lock as inline work is, so two never run at once on a session, across
//! processes too. Whatever in this process next takes the session's lock
//! (the next turn first of all) stops the task before it does, so the next
//! answer never waits behind memory work; the next turn starts it again.
//! A stopped task ends at one of its model calls, never between two
//! writes of a consolidation round, and its finished rounds stay (a round
//! is crash-safe anyway, see [`crate::rounds`]).
//!
//! What the task is doing and what its last run did are kept per session
//! ([`Engine::memory_work_status`]), so that a chat can show them and a
//! server can answer them; a [`MemoryWorkers`] shared by many engines lets
//! a server wait for all of them before it exits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::compact::Request;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::events::EngineEvent;
use crate::lock::SessionLock;

/// Where a turn's memory work runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryWorkMode {
    /// Before the answer, in the turn.
    Inline,
    /// After the answer, in a task of its own ([`Engine::spawn_memory_work`]).
    Background,
}

/// Where a session's memory work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkState {
    /// Running now.
    Running,
    /// Finished.
    Done,
    /// Ended with an error (the session lock was busy, a file could not be
    /// read); what it finished before stays.
    Failed,
    /// Stopped by something that needed the session (the next turn) or by
    /// the process leaving; it runs again after the next turn.
    Stopped,
}

/// What a session's memory work is doing, or what its last run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryWorkReport {
    /// The session key.
    pub key: String,
    /// Running, done, failed or stopped.
    pub state: WorkState,
    /// While it runs: what it is doing (`"consolidating messages 4..10"`,
    /// `"memory flush"`); `None` between steps and when it ended.
    pub doing: Option<String>,
    /// When it began (RFC 3339).
    pub started: String,
    /// Seconds it has run (so far, or in all).
    pub seconds: f64,
    /// What it did, in order, as a turn's events (consolidation rounds,
    /// the flush).
    pub events: Vec<EngineEvent>,
    /// Why it failed.
    pub error: Option<String>,
}

/// One session's task.
struct Slot {
    /// While the task may be running.
    handle: Option<JoinHandle<()>>,
    /// Turns true when the task ends (closed when it is stopped).
    done: watch::Receiver<bool>,
    report: Arc<Mutex<MemoryWorkReport>>,
    started: Instant,
    /// A finished report nobody has taken yet ([`Engine::take_memory_work_report`]).
    unseen: bool,
}

/// Called with the report of every run that ends by itself.
pub type OnFinish = Arc<dyn Fn(&MemoryWorkReport) + Send + Sync>;

/// The memory work tasks of one engine, or of many sharing it (a server of
/// many workspaces), by workspace and session.
#[derive(Default)]
pub struct MemoryWorkers {
    slots: Mutex<HashMap<(String, String), Slot>>,
    on_finish: Mutex<Option<OnFinish>>,
}

impl std::fmt::Debug for MemoryWorkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryWorkers")
            .field("running", &self.running())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The report as it stands, with its seconds up to date while it runs.
fn snapshot(report: &Mutex<MemoryWorkReport>, started: Instant) -> MemoryWorkReport {
    let mut r = lock(report).clone();
    if r.state == WorkState::Running {
        r.seconds = started.elapsed().as_secs_f64();
    }
    r
}

impl MemoryWorkers {
    /// A registry of its own (what [`Engine::new`] starts with).
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Calls `f` with the report of each run that ends by itself (not
    /// stopped): a server prints or logs what the background did.
    pub fn on_finish(&self, f: OnFinish) {
        *lock(&self.on_finish) = Some(f);
    }

    /// Tasks running now.
    pub fn running(&self) -> usize {
        lock(&self.slots)
            .values()
            .filter(|s| !*s.done.borrow() && s.handle.as_ref().is_some_and(|h| !h.is_finished()))
            .count()
    }

    /// The reports of the tasks running now.
    pub fn running_reports(&self) -> Vec<MemoryWorkReport> {
        lock(&self.slots)
            .values()
            .filter(|s| s.handle.as_ref().is_some_and(|h| !h.is_finished()))
            .map(|s| snapshot(&s.report, s.started))
            .collect()
    }

    /// Waits until every running task has ended, at most `bound`; returns
    /// how many still run.
    pub async fn wait_all(&self, bound: Duration) -> usize {
        let waits: Vec<watch::Receiver<bool>> = lock(&self.slots)
            .values()
            .filter(|s| s.handle.is_some())
            .map(|s| s.done.clone())
            .collect();
        let all = async {
            for mut done in waits {
                // Closed: the task was stopped, so it ended too.
                let _ = done.wait_for(|d| *d).await;
            }
        };
        let _ = tokio::time::timeout(bound, all).await;
        self.running()
    }

    /// Stops every running task (each at its next model call) and waits
    /// until they have let go of their sessions; returns how many it
    /// stopped.
    pub async fn stop_all(&self) -> usize {
        let keys: Vec<(String, String)> = lock(&self.slots)
            .iter()
            .filter(|(_, s)| s.handle.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        let mut stopped = 0;
        for k in keys {
            if self.stop(&k).await.is_some() {
                stopped += 1;
            }
        }
        stopped
    }

    /// Stops the task of `slot` if it runs; its report when it did.
    async fn stop(&self, slot: &(String, String)) -> Option<MemoryWorkReport> {
        let (handle, report, started) = {
            let mut slots = lock(&self.slots);
            let s = slots.get_mut(slot)?;
            let own = s
                .handle
                .as_ref()
                .is_some_and(|h| tokio::task::try_id() == Some(h.id()));
            if own {
                // The task itself asking for its session: it cannot wait
                // for its own end.
                return None;
            }
            (s.handle.take()?, s.report.clone(), s.started)
        };
        handle.abort();
        // Aborted at its next await point: once this returns, the task's
        // session lock is released.
        let _ = handle.await;
        let mut r = lock(&report);
        if r.state != WorkState::Running {
            // It ended on its own just before.
            return None;
        }
        r.state = WorkState::Stopped;
        r.seconds = started.elapsed().as_secs_f64();
        Some(r.clone())
    }
}

/// What a run of memory work reports as it goes.
pub(crate) struct Progress(Option<Arc<Mutex<MemoryWorkReport>>>);

impl Progress {
    /// No one reads along (inline work: its events go to the turn).
    pub(crate) fn none() -> Self {
        Progress(None)
    }

    /// What it is doing now (`None`: between steps).
    pub(crate) fn doing(&self, what: Option<String>) {
        if let Some(r) = &self.0 {
            lock(r).doing = what;
        }
    }

    /// Events just done.
    pub(crate) fn events(&self, events: &[EngineEvent]) {
        if let Some(r) = &self.0 {
            lock(r).events.extend_from_slice(events);
        }
    }
}

impl Engine {
    /// Where this engine runs a turn's memory work (`[engine] memory_work`,
    /// `"auto"` resolved by the provider).
    pub fn memory_work_mode(&self) -> MemoryWorkMode {
        match self.settings.memory_work.as_str() {
            "background" => MemoryWorkMode::Background,
            "auto" if self.model.info().provider == "local" => MemoryWorkMode::Background,
            _ => MemoryWorkMode::Inline,
        }
    }

    /// Uses `workers` for its memory work tasks (one registry for many
    /// engines, so a server can wait for all of them).
    pub fn with_memory_workers(mut self, workers: Arc<MemoryWorkers>) -> Self {
        self.workers = workers;
        self
    }

    /// The registry of this engine's memory work tasks.
    pub fn memory_workers(&self) -> &Arc<MemoryWorkers> {
        &self.workers
    }

    fn slot(&self, key: &str) -> (String, String) {
        (self.workspace.root().display().to_string(), key.to_string())
    }

    /// Starts the memory work of `key` in a task of its own (on the tokio
    /// runtime this is called in), unless it runs already. Returns whether
    /// it started one.
    pub fn spawn_memory_work(self: &Arc<Self>, key: &str) -> Result<bool> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::Invalid("memory work runs on a tokio runtime: start it inside one".into())
        })?;
        let slot = self.slot(key);
        let mut slots = lock(&self.workers.slots);
        if let Some(s) = slots.get(&slot) {
            if s.handle.as_ref().is_some_and(|h| !h.is_finished()) {
                return Ok(false);
            }
        }
        let report = Arc::new(Mutex::new(MemoryWorkReport {
            key: key.to_string(),
            state: WorkState::Running,
            doing: None,
            started: self.now().to_rfc3339(),
            seconds: 0.0,
            events: Vec::new(),
            error: None,
        }));
        let (tx, done) = watch::channel(false);
        let started = Instant::now();
        let engine = self.clone();
        let progress = Progress(Some(report.clone()));
        let shared = report.clone();
        let k = key.to_string();
        let handle = runtime.spawn(async move {
            let outcome = engine.run_memory_work(&k, &progress).await;
            let finished = {
                let mut r = lock(&shared);
                r.doing = None;
                r.seconds = started.elapsed().as_secs_f64();
                match outcome {
                    Ok(()) => r.state = WorkState::Done,
                    Err(e) => {
                        r.state = WorkState::Failed;
                        r.error = Some(e.to_string());
                    }
                }
                r.clone()
            };
            for e in &finished.events {
                tracing::info!(session = %k, "memory work: {}", serde_json::to_string(e).unwrap_or_default());
            }
            if let Some(e) = &finished.error {
                tracing::warn!(session = %k, "memory work failed: {e}");
            }
            let _ = tx.send(true);
            let hook = lock(&engine.workers.on_finish).clone();
            if let Some(f) = hook {
                f(&finished);
            }
        });
        slots.insert(
            slot,
            Slot {
                handle: Some(handle),
                done,
                report,
                started,
                unseen: true,
            },
        );
        Ok(true)
    }

    /// Stops the memory work of `key` if it runs in this process (at its
    /// next model call) and waits until it has let go of the session;
    /// returns its report when it stopped one. It runs again when the next
    /// turn starts it.
    pub async fn stop_memory_work(&self, key: &str) -> Option<MemoryWorkReport> {
        let slot = self.slot(key);
        let report = self.workers.stop(&slot).await;
        if report.is_some() {
            // Whoever stopped it says so; nobody needs to be told again.
            if let Some(s) = lock(&self.workers.slots).get_mut(&slot) {
                s.unseen = false;
            }
        }
        report
    }

    /// Waits until the memory work of `key` ends (now when none runs).
    pub async fn wait_memory_work(&self, key: &str) {
        let done = lock(&self.workers.slots)
            .get(&self.slot(key))
            .filter(|s| s.handle.is_some())
            .map(|s| s.done.clone());
        if let Some(mut done) = done {
            let _ = done.wait_for(|d| *d).await;
        }
    }

    /// What the memory work of `key` is doing, or what its last run did
    /// (`None`: none ran in this process).
    pub fn memory_work_status(&self, key: &str) -> Option<MemoryWorkReport> {
        lock(&self.workers.slots)
            .get(&self.slot(key))
            .map(|s| snapshot(&s.report, s.started))
    }

    /// The report of the last run of `key` once it has ended, the first
    /// time it is asked for (a chat shows it once).
    pub fn take_memory_work_report(&self, key: &str) -> Option<MemoryWorkReport> {
        let mut slots = lock(&self.workers.slots);
        let s = slots.get_mut(&self.slot(key))?;
        let r = snapshot(&s.report, s.started);
        if !s.unseen || r.state == WorkState::Running {
            return None;
        }
        s.unseen = false;
        Some(r)
    }

    /// Runs the memory work of `key` here and now (what the background
    /// task runs): under the session lock, consolidation rounds while the
    /// prompt is over the target, then the flush at its threshold. Returns
    /// what it did.
    pub async fn memory_work(&self, key: &str) -> Result<Vec<EngineEvent>> {
        self.stop_memory_work(key).await;
        let report = Arc::new(Mutex::new(MemoryWorkReport {
            key: key.to_string(),
            state: WorkState::Running,
            doing: None,
            started: self.now().to_rfc3339(),
            seconds: 0.0,
            events: Vec::new(),
            error: None,
        }));
        self.run_memory_work(key, &Progress(Some(report.clone())))
            .await?;
        let events = std::mem::take(&mut lock(&report).events);
        Ok(events)
    }

    async fn run_memory_work(&self, key: &str, progress: &Progress) -> Result<()> {
        if !self.sessions.exists(key)? {
            return Ok(());
        }
        // Not `self.lock`: that stops this very work first.
        let _lock = SessionLock::acquire(
            self.sessions.storage(),
            key,
            Duration::from_secs(self.settings.lock_wait_secs),
        )
        .await?;
        let (mut log, _) = self.open(key)?;
        let mut events = Vec::new();
        if self.settings.consolidation_enabled {
            self.consolidate_for_turn(key, &mut log, Request::None, progress, &mut events)
                .await?;
        }
        let tokens = self.measure(&log.load()?, "")?;
        if let Some(reason) = self.flush_reason(&log, tokens) {
            let before = events.len();
            progress.doing(Some("memory flush".into()));
            self.flush_if_needed(&mut log, reason, tokens, &mut events)
                .await?;
            progress.doing(None);
            progress.events(&events[before..]);
        }
        Ok(())
    }
}
