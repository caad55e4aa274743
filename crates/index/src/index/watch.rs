//! Keeping the index fresh: the check a search makes before it answers, and
//! the file-system watcher of processes that keep running.
//!
//! A one-shot process (`mnemo search`) runs the freshness check of
//! [`crate::fresh`] (folder times, the change journal, pinned files), which
//! walks every file only once the last walk is `[index] reconcile_secs`
//! old. A process that keeps running (`serve`, `mcp`, `chat`, `index
//! --watch`) also watches file-system events: they name the files edited in
//! place, which no folder time shows; a burst of them is synced after
//! `[index] watch_debounce_ms`, every file is compared in the background
//! every `reconcile_secs`, and a search never walks.
//!
//! Events arrive on the watcher's thread a little after the write that
//! caused them, so a search could run before the event of an edit made just
//! before it. A search therefore first sets a fence: it creates a file in
//! `.mnemo/fence/` and waits until the watcher reports that file's event.
//! Events of one watch arrive in order, so every change made before the
//! search has been reported by then.

use std::collections::BTreeSet;
use std::sync::Condvar;

use super::sync::{now_ms, Scope, Wait};
use super::*;
use crate::fresh::{self, Due};

/// How long a search waits for its fence before it falls back to the
/// freshness check alone (events delayed or lost).
const FENCE_WAIT: Duration = Duration::from_millis(250);

/// How long a search of a watching process waits for a sync under way.
const SYNC_WAIT: Duration = Duration::from_secs(2);

/// What the watcher saw, shared between its callback, its thread and
/// searches.
pub(super) struct WatchState {
    /// Workspace paths named by events since the last sync.
    pending: Mutex<Pending>,
    fence_dir: PathBuf,
    /// The number of the last fence created (fences are created in order).
    fence_made: Mutex<u64>,
    /// The highest fence number whose event has arrived.
    fence_seen: Mutex<u64>,
    fence_arrived: Condvar,
}

#[derive(Default)]
struct Pending {
    paths: BTreeSet<String>,
    /// Events were lost (the kernel's queue overflowed): compare every file.
    rescan: bool,
    /// When the last event arrived (for the debounce).
    last: Option<Instant>,
}

impl WatchState {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self) -> (BTreeSet<String>, bool) {
        let mut p = self.lock_pending();
        p.last = None;
        (std::mem::take(&mut p.paths), std::mem::take(&mut p.rescan))
    }

    /// Puts paths back after a sync that could not run.
    fn give_back(&self, paths: BTreeSet<String>, rescan: bool) {
        if paths.is_empty() && !rescan {
            return;
        }
        let mut p = self.lock_pending();
        p.paths.extend(paths);
        p.rescan |= rescan;
        p.last.get_or_insert_with(Instant::now);
    }

    fn saw_fence(&self, n: u64) {
        let mut seen = self.fence_seen.lock().unwrap_or_else(|e| e.into_inner());
        if n > *seen {
            *seen = n;
            self.fence_arrived.notify_all();
        }
    }

    /// Creates the next fence and waits for its event; false when it did
    /// not arrive within [`FENCE_WAIT`].
    fn fence(&self) -> bool {
        let (n, path) = {
            let mut made = self.fence_made.lock().unwrap_or_else(|e| e.into_inner());
            *made += 1;
            let path = self.fence_dir.join(made.to_string());
            if File::create(&path).is_err() {
                return false;
            }
            (*made, path)
        };
        let deadline = Instant::now() + FENCE_WAIT;
        let mut seen = self.fence_seen.lock().unwrap_or_else(|e| e.into_inner());
        let arrived = loop {
            if *seen >= n {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            seen = match self.fence_arrived.wait_timeout(seen, left) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        };
        drop(seen);
        let _ = std::fs::remove_file(path);
        arrived
    }
}

/// Stops the watcher when dropped.
pub struct WatchHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    _state: Arc<WatchState>,
    _watcher: notify::RecommendedWatcher,
}

impl WatchHandle {
    /// Stops watching and waits for a running sync to finish.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// `path` relative to the workspace (`/`-separated), given the root as
/// configured and as resolved.
fn relative(path: &Path, roots: &[PathBuf]) -> Option<String> {
    roots.iter().find_map(|r| {
        let rel = path.strip_prefix(r).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(parts.join("/"))
    })
}

impl MemoryIndex {
    /// Keeps the index fresh for a process that keeps running: watches the
    /// workspace (see [`MemoryIndex::watch`]), syncs what changed, compares
    /// every file every `[index] reconcile_secs`, and lets searches rely on
    /// the events instead of walking. Sync failures are logged (`tracing`).
    pub fn keep_fresh(&self) -> Result<WatchHandle> {
        self.watch(|r| {
            if let Err(e) = r {
                tracing::warn!("re-indexing after a change failed: {e}");
            }
        })
    }

    /// Re-indexes on change: file events under the workspace (outside
    /// `.mnemo/`) are debounced by `[index] watch_debounce_ms` (1.5 s), then
    /// the changed files are synced and `on_sync` gets the outcome; every
    /// file is compared when the watcher starts and then every `[index]
    /// reconcile_secs`. While the handle lives, searches of this index (in
    /// any thread) use the events instead of walking the workspace.
    /// Dropping the handle stops watching.
    pub fn watch(
        &self,
        on_sync: impl Fn(Result<SyncReport>) + Send + 'static,
    ) -> Result<WatchHandle> {
        use notify::Watcher;
        if let Some(source) = &self.inner.source {
            return Err(IndexError::Config(format!(
                "the documents of this index are in {}, not in files to watch: searches check its revision instead",
                source.location()
            )));
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let state_dir = self.inner.state_dir.clone();
        let fence_dir = state_dir.join("fence");
        std::fs::create_dir_all(&fence_dir).map_err(|e| IndexError::io(&fence_dir, e))?;
        let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let states = [state_dir.clone(), real(&state_dir)];
        let fences = [fence_dir.clone(), real(&fence_dir)];
        let roots = [
            self.inner.ws.root().to_path_buf(),
            real(self.inner.ws.root()),
        ];
        let state = Arc::new(WatchState {
            pending: Mutex::new(Pending::default()),
            fence_dir,
            fence_made: Mutex::new(0),
            fence_seen: Mutex::new(0),
            fence_arrived: Condvar::new(),
        });
        let seen = Arc::downgrade(&state);
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            let (Ok(ev), Some(state)) = (ev, seen.upgrade()) else {
                return;
            };
            if ev.need_rescan() {
                state.lock_pending().rescan = true;
                let _ = tx.send(());
            }
            if ev.kind.is_access() {
                return;
            }
            let mut changed = false;
            for p in &ev.paths {
                if fences.iter().any(|f| p.starts_with(f)) {
                    let n = p.file_name().and_then(|n| n.to_str()?.parse::<u64>().ok());
                    if let Some(n) = n {
                        state.saw_fence(n);
                    }
                } else if !states.iter().any(|s| p.starts_with(s)) {
                    if let Some(rel) = relative(p, &roots) {
                        let mut pending = state.lock_pending();
                        pending.paths.insert(rel);
                        pending.last = Some(Instant::now());
                        changed = true;
                    }
                }
            }
            if changed {
                let _ = tx.send(());
            }
        })?;
        watcher.watch(self.inner.ws.root(), notify::RecursiveMode::Recursive)?;
        *self
            .inner
            .watching
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Arc::downgrade(&state);
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let me = self.clone();
        let shared = state.clone();
        let debounce = Duration::from_millis(self.inner.settings.index.watch_debounce_ms);
        let reconcile = Duration::from_secs(self.inner.settings.index.reconcile_secs.max(1));
        let thread = std::thread::spawn(move || {
            // Catch up with what changed while nobody watched.
            let mut last_walk = Instant::now();
            on_sync(me.sync_scoped(Scope::Changed {
                reconcile_ms: reconcile.as_millis() as i64,
                extra: BTreeSet::new(),
            }));
            while !stop2.load(Ordering::SeqCst) {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if last_walk.elapsed() >= reconcile {
                    last_walk = Instant::now();
                    shared.take();
                    on_sync(me.sync_scoped(Scope::All));
                    continue;
                }
                let due = shared
                    .lock_pending()
                    .last
                    .is_some_and(|t| t.elapsed() >= debounce);
                if due {
                    let (extra, rescan) = shared.take();
                    let scope = if rescan {
                        last_walk = Instant::now();
                        Scope::All
                    } else {
                        Scope::Changed {
                            reconcile_ms: i64::MAX,
                            extra,
                        }
                    };
                    on_sync(me.sync_scoped(scope));
                }
            }
        });
        Ok(WatchHandle {
            stop,
            thread: Some(thread),
            _state: state,
            _watcher: watcher,
        })
    }

    /// A sync of `scope` that waits for other syncs (never a full rebuild).
    fn sync_scoped(&self, scope: Scope) -> Result<SyncReport> {
        self.run_sync(false, Wait::Forever, true, scope, &|_| {})?
            .map(|(report, _)| report)
            .ok_or_else(|| IndexError::Busy(self.inner.store.lock_location()))
    }

    pub(super) fn watching(&self) -> Option<Arc<WatchState>> {
        self.inner
            .watching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .upgrade()
    }

    /// Brings the index up to date before a search (see the module docs);
    /// what could not be done is said in `warnings`. Returns the live
    /// generation and its metadata as last read, for the search.
    pub(super) fn refresh(&self, warnings: &mut Vec<String>) -> Option<Live> {
        let configured = (self.inner.settings.index.reconcile_secs as i64).saturating_mul(1000);
        let watching = self.watching();
        let (reconcile_ms, extra, rescan) = match &watching {
            Some(w) => {
                // With the fence passed, every event of an earlier change
                // is in `pending`; the watcher's thread does the walks.
                let fenced = w.fence();
                let (extra, rescan) = w.take();
                let reconcile = if fenced { i64::MAX } else { configured };
                (reconcile, extra, rescan)
            }
            None => (configured, BTreeSet::new(), false),
        };
        let mut seen = None;
        if extra.is_empty() && !rescan {
            let live = match self.live() {
                Ok(live) => live,
                Err(e) => {
                    warnings.push(format!("could not check the index for changes: {e}"));
                    return None;
                }
            };
            let stale = match &self.inner.source {
                Some(source) => Self::source_revision(source.as_ref())
                    .map(|now| Self::source_moved(&now, &live.meta)),
                None => Ok(!matches!(
                    fresh::due(
                        &self.inner.ws,
                        Self::stamp(&live.meta).as_ref(),
                        now_ms(),
                        reconcile_ms
                    ),
                    Due::Nothing
                )),
            };
            match stale {
                Ok(false) => return Some(live),
                Ok(true) => seen = Some(live),
                Err(e) => {
                    warnings.push(format!("could not check the index for changes: {e}"));
                    return Some(live);
                }
            }
        }
        let scope = if rescan {
            Scope::All
        } else {
            Scope::Changed {
                reconcile_ms,
                extra: extra.clone(),
            }
        };
        // A process that watches waits a little for a sync under way (the
        // watcher's own, usually short); a one-shot search does not wait
        // behind another process's long `mnemo index`.
        let wait = if watching.is_some() {
            Wait::UpTo(SYNC_WAIT)
        } else {
            Wait::Never
        };
        let outcome = self.run_sync(false, wait, false, scope, &|_| {});
        if !matches!(outcome, Ok(Some(_))) {
            if let Some(w) = &watching {
                w.give_back(extra, rescan);
            }
        }
        match outcome {
            Ok(Some((r, live))) => {
                for i in r.issues {
                    warnings.push(format!("{}: {}", i.path, i.message));
                }
                return Some(live);
            }
            Ok(None) => warnings
                .push("the index is being updated; results may miss the latest changes".into()),
            Err(e) => warnings.push(format!("could not update the index before searching: {e}")),
        }
        seen
    }
}
