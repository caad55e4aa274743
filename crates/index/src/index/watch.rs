//! Re-indexing on change: file-system events under the workspace,
//! debounced, each burst followed by a sync.

use super::*;

/// Stops the watcher when dropped.
pub struct WatchHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
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

impl MemoryIndex {
    /// Re-indexes on change: file events under the workspace (outside
    /// `.mnemo/`) are debounced by `[index] watch_debounce_ms` (1.5 s), then
    /// a sync runs and `on_sync` gets its outcome. Dropping the handle stops
    /// watching.
    pub fn watch(
        &self,
        on_sync: impl Fn(Result<SyncReport>) + Send + 'static,
    ) -> Result<WatchHandle> {
        use notify::Watcher;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let state_dir = self.inner.state_dir.clone();
        let real_state = state_dir
            .canonicalize()
            .unwrap_or_else(|_| state_dir.clone());
        let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
            if let Ok(ev) = ev {
                if ev.kind.is_access() {
                    return;
                }
                if ev
                    .paths
                    .iter()
                    .any(|p| !p.starts_with(&state_dir) && !p.starts_with(&real_state))
                {
                    let _ = tx.send(());
                }
            }
        })?;
        watcher.watch(self.inner.ws.root(), notify::RecursiveMode::Recursive)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let me = self.clone();
        let debounce = Duration::from_millis(self.inner.settings.index.watch_debounce_ms);
        let thread = std::thread::spawn(move || {
            let mut pending: Option<Instant> = None;
            while !stop2.load(Ordering::SeqCst) {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(()) => pending = Some(Instant::now()),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                }
                if pending.is_some_and(|t| t.elapsed() >= debounce) {
                    pending = None;
                    on_sync(me.sync(&|_| {}));
                }
            }
        });
        Ok(WatchHandle {
            stop,
            thread: Some(thread),
            _watcher: watcher,
        })
    }
}
