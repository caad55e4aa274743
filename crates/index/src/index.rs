//! `MemoryIndex`: the facade that syncs the workspace into the index (one
//! sync at a time, incremental by content hash, full rebuilds into a new
//! database swapped in atomically), answers searches, `memory_get` and
//! status, and watches the workspace.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use mnemo_core::{EmbedKind, Embedder, Workspace};
use sha2::{Digest, Sha256};

use crate::backend::{ChunkRecord, FileRecord, IndexBackend, NewChunk};
use crate::chunk::{self, Chunk, ChunkLimits, MessagePart};
use crate::error::{IndexError, Result};
use crate::redact;
use crate::scan::{self, Found};
use crate::search;
use crate::settings::{IndexSettings, SearchOptions};
use crate::sqlite::{SqliteBackend, SCHEMA_VERSION};
use crate::text;
use crate::transcript;
use crate::types::*;
use crate::when;

/// Name of the first database file; later generations are `index-<ms>.sqlite`.
const FIRST_DB: &str = "index.sqlite";
/// File naming the live database (replaced atomically by rename).
const POINTER: &str = "index.current";
/// Lock file held during a sync.
const LOCK: &str = "sync.lock";

/// A changed file, chunked and waiting for its vectors.
struct Prepared {
    record: FileRecord,
    chunks: Vec<NewChunk>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The memory index of one workspace. Cheap to clone (shared state); safe to
/// use from many threads: searches never wait for a sync.
#[derive(Clone)]
pub struct MemoryIndex {
    inner: Arc<Inner>,
}

struct Inner {
    ws: Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
    state_dir: PathBuf,
    /// Tokens the embedder's counter adds to any text (special tokens,
    /// document prefix): subtracted so per-line counts add up.
    token_base: usize,
    current: RwLock<Arc<SqliteBackend>>,
    sync_lock: Mutex<()>,
}

impl std::fmt::Debug for MemoryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIndex")
            .field("root", &self.inner.ws.root())
            .finish()
    }
}

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
    /// Opens (creating if needed) the index of `ws` under `.mnemo/`.
    /// Nothing is indexed yet: call [`MemoryIndex::sync`] (searches also sync
    /// first when files changed, unless `sync_on_search` is off). With no
    /// embedder the index runs in keyword-only mode, and says so.
    pub fn open(
        ws: &Workspace,
        settings: IndexSettings,
        embedder: Option<Arc<dyn Embedder>>,
    ) -> Result<MemoryIndex> {
        settings.validate()?;
        let state_dir = ws.state_dir();
        std::fs::create_dir_all(&state_dir).map_err(|e| IndexError::io(&state_dir, e))?;
        let emb_id = embedder.as_ref().map(|e| (e.id(), e.dims()));
        let live = read_pointer(&state_dir).unwrap_or_else(|| FIRST_DB.to_string());
        collect_stale_generations(&state_dir, &live);
        let db = state_dir.join(live);
        let backend =
            SqliteBackend::open(&db, emb_id)?.with_vector_scan(settings.index.vector_scan);
        let token_base = embedder
            .as_ref()
            .and_then(|e| e.count_tokens(""))
            .unwrap_or(0);
        Ok(MemoryIndex {
            inner: Arc::new(Inner {
                ws: ws.clone(),
                settings,
                embedder,
                state_dir,
                token_base,
                current: RwLock::new(Arc::new(backend)),
                sync_lock: Mutex::new(()),
            }),
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &IndexSettings {
        &self.inner.settings
    }

    /// The live backend, switching to a newer generation if another process
    /// swapped one in.
    fn backend(&self) -> Result<Arc<SqliteBackend>> {
        let cur = self
            .inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(name) = read_pointer(&self.inner.state_dir) else {
            return Ok(cur);
        };
        if cur
            .path()
            .file_name()
            .is_some_and(|n| n.to_string_lossy() == name)
        {
            return Ok(cur);
        }
        let path = self.inner.state_dir.join(&name);
        if !path.exists() {
            return Ok(cur);
        }
        let fresh = Arc::new(
            SqliteBackend::open(&path, self.emb_id())?
                .with_vector_scan(self.inner.settings.index.vector_scan),
        );
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = fresh.clone();
        Ok(fresh)
    }

    fn emb_id(&self) -> Option<(mnemo_core::EmbedderId, usize)> {
        self.inner.embedder.as_ref().map(|e| (e.id(), e.dims()))
    }

    /// Chunk size actually used: the configured size, capped by the model's
    /// input limit (minus the special tokens its counter adds), so the
    /// model never truncates a chunk silently.
    pub fn effective_chunk_tokens(&self) -> usize {
        let configured = self.inner.settings.index.chunk_tokens;
        match self
            .inner
            .embedder
            .as_ref()
            .and_then(|e| e.max_input_tokens())
        {
            Some(limit) => configured.min(limit.saturating_sub(self.inner.token_base).max(16)),
            None => configured,
        }
    }

    /// Tokens of `text` as chunk content (without the model's fixed extras).
    fn count_tokens(&self, text: &str) -> usize {
        match self
            .inner
            .embedder
            .as_ref()
            .and_then(|e| e.count_tokens(text))
        {
            Some(n) => n.saturating_sub(self.inner.token_base),
            None => chunk::estimate_tokens(text),
        }
    }

    /// The metadata an index built now would have.
    fn desired_meta(&self) -> Vec<(&'static str, String)> {
        let (model, dims) = match &self.inner.embedder {
            Some(e) => {
                let id = e.id();
                (
                    format!("{}/{}/{}", id.provider, id.model, id.provider_key),
                    e.dims().to_string(),
                )
            }
            None => ("none".to_string(), "0".to_string()),
        };
        let tokenizer = if self
            .inner
            .embedder
            .as_ref()
            .and_then(|e| e.count_tokens("a"))
            .is_some()
        {
            "model"
        } else {
            "estimate"
        };
        let chunk_tokens = self.effective_chunk_tokens();
        vec![
            ("schema_version", SCHEMA_VERSION.to_string()),
            ("fts_tokenizer", text::TOKENIZER_VERSION.to_string()),
            ("model", model),
            ("dims", dims),
            ("chunk_tokens", chunk_tokens.to_string()),
            (
                "chunk_overlap",
                self.inner
                    .settings
                    .index
                    .chunk_overlap
                    .min(chunk_tokens / 2)
                    .to_string(),
            ),
            ("chunk_counter", tokenizer.to_string()),
            ("chunker", chunk::CHUNKER_VERSION.to_string()),
            (
                "session_tool_results",
                self.inner.settings.index.session_tool_results.to_string(),
            ),
            (
                "transcript_redaction",
                if self.inner.settings.index.redact_transcripts {
                    format!("v{}", redact::RULES_VERSION)
                } else {
                    "off".to_string()
                },
            ),
        ]
    }

    /// True when the live index was built with another model, chunking or
    /// schema (an empty index never needs a rebuild).
    fn needs_full_reindex(&self, backend: &SqliteBackend) -> Result<bool> {
        let meta = backend.meta()?;
        if !meta.contains_key("schema_version") {
            return Ok(backend.counts()?.files > 0);
        }
        Ok(self
            .desired_meta()
            .iter()
            .any(|(k, v)| meta.get(*k) != Some(v)))
    }

    /// Brings the index up to date with the workspace: files whose mtime or
    /// size changed are hashed, changed ones re-chunked and re-embedded
    /// (through the embedding cache), deleted ones dropped. When the model
    /// or chunking changed, the whole index is rebuilt into a new database
    /// and swapped in; searches keep using the old one meanwhile.
    /// Waits for a sync running in another thread or process.
    pub fn sync(&self, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        self.run_sync(false, true, true, progress)?
            .ok_or_else(|| IndexError::Busy(self.inner.state_dir.join(LOCK)))
    }

    /// Like [`MemoryIndex::sync`]; with `force` the whole index is rebuilt
    /// into a new database (and swapped in) even if nothing changed.
    pub fn reindex(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        self.run_sync(force, true, true, progress)?
            .ok_or_else(|| IndexError::Busy(self.inner.state_dir.join(LOCK)))
    }

    /// `Ok(None)` when `wait` is false and another sync holds the lock, or
    /// when a full rebuild is needed but not allowed (searches only sync
    /// incrementally: a rebuild can take minutes).
    fn run_sync(
        &self,
        force: bool,
        wait: bool,
        allow_full: bool,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<Option<SyncReport>> {
        let _guard = if wait {
            self.inner
                .sync_lock
                .lock()
                .unwrap_or_else(|e| e.into_inner())
        } else {
            match self.inner.sync_lock.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
            }
        };
        let lock_path = self.inner.state_dir.join(LOCK);
        let lock_file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| IndexError::io(&lock_path, e))?;
        if wait {
            lock_file
                .lock()
                .map_err(|e| IndexError::io(&lock_path, e))?;
        } else {
            match lock_file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(IndexError::io(&lock_path, e)),
            }
        }
        let backend = self.backend()?;
        let full = force || self.needs_full_reindex(&backend)?;
        if full && !allow_full {
            let _ = lock_file.unlock();
            return Ok(None);
        }
        let report = if full {
            self.full_rebuild(&backend, progress)
        } else {
            let mut report = SyncReport::default();
            let r = self.sync_into(&backend, false, &mut report, progress);
            r.and_then(|()| {
                if !backend.meta()?.contains_key("schema_version") {
                    backend.set_meta(&self.desired_meta())?;
                }
                Ok(report)
            })
        };
        let _ = lock_file.unlock();
        progress(SyncProgress::Finished);
        report.map(Some)
    }

    fn full_rebuild(
        &self,
        old: &Arc<SqliteBackend>,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<SyncReport> {
        let name = format!("index-{}.sqlite", chrono::Utc::now().timestamp_millis());
        let path = self.inner.state_dir.join(&name);
        remove_db_files(&path);
        let fresh = Arc::new(
            SqliteBackend::open(&path, self.emb_id())?
                .with_vector_scan(self.inner.settings.index.vector_scan),
        );
        fresh.import_cache_from(old.path())?;
        let mut report = SyncReport {
            full_rebuild: true,
            ..Default::default()
        };
        if let Err(e) = self.sync_into(&fresh, true, &mut report, progress) {
            drop(fresh);
            remove_db_files(&path);
            return Err(e);
        }
        fresh.set_meta(&self.desired_meta())?;
        fresh.checkpoint()?;
        write_pointer(&self.inner.state_dir, &name)?;
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = fresh;
        // Searches that still hold the old generation keep their open
        // connections (the file stays readable until they finish on Unix).
        if old.path() != path {
            remove_db_files(old.path());
        }
        Ok(report)
    }

    fn sync_into(
        &self,
        backend: &SqliteBackend,
        full: bool,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        let found = scan::walk(
            self.inner.ws.root(),
            &self.inner.settings.index,
            &mut report.issues,
        );
        let known: HashMap<String, FileRecord> = backend
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let total = found.len();
        report.files_scanned = total;
        progress(SyncProgress::Started { total, full });
        let want_vectors = self.inner.embedder.is_some();
        let batch = self
            .inner
            .embedder
            .as_ref()
            .map(|e| e.max_batch().max(1))
            .unwrap_or(256);
        let mut pending: Vec<Prepared> = Vec::new();
        let mut pending_chunks = 0usize;
        let mut embedded_so_far = 0usize;
        for (i, f) in found.iter().enumerate() {
            let prev = known.get(&f.rel);
            let complete = |p: &FileRecord| p.embedded || !want_vectors;
            let unchanged_stat =
                prev.is_some_and(|p| p.mtime_ms == f.mtime_ms && p.size == f.size && complete(p));
            if !unchanged_stat {
                match mnemo_core::files::read_regular(&f.abs) {
                    Ok(bytes) => {
                        let hash = sha256_hex(&bytes);
                        if let Some(p) = prev.filter(|p| p.hash == hash && complete(p)) {
                            backend.touch_file(&p.path, f.mtime_ms, f.size)?;
                            report.touched += 1;
                        } else {
                            let prepared = self.prepare_file(f, &bytes, hash, report);
                            pending_chunks += prepared.chunks.len();
                            pending.push(prepared);
                            // Small files are embedded together so the model
                            // sees full batches.
                            if pending_chunks >= batch {
                                self.flush(
                                    backend,
                                    &mut pending,
                                    report,
                                    &mut embedded_so_far,
                                    progress,
                                )?;
                                pending_chunks = 0;
                            }
                        }
                    }
                    Err(e) => report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: format!("cannot read ({e}); kept the previous index entry"),
                    }),
                }
            }
            progress(SyncProgress::File {
                done: i + 1,
                total,
                path: f.rel.clone(),
            });
        }
        self.flush(
            backend,
            &mut pending,
            report,
            &mut embedded_so_far,
            progress,
        )?;
        let present: HashSet<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        let mut gone: Vec<&String> = known
            .keys()
            .filter(|k| !present.contains(k.as_str()))
            .collect();
        gone.sort();
        for path in gone {
            // A file that exists but could not be read is kept above; only
            // files that vanished are dropped.
            if self.inner.ws.root().join(path).exists()
                && report.issues.iter().any(|i| &i.path == path)
            {
                continue;
            }
            backend.delete_file(path)?;
            report.removed.push(path.clone());
        }
        report.indexed.sort();
        if report.chunks_written > 0 || !report.removed.is_empty() {
            report.cache_pruned =
                backend.prune_embedding_cache(self.inner.settings.index.embedding_cache_max)?;
        }
        Ok(())
    }

    /// Reads and chunks a changed file (no embedding yet).
    fn prepare_file(
        &self,
        f: &Found,
        bytes: &[u8],
        hash: String,
        report: &mut SyncReport,
    ) -> Prepared {
        let text = String::from_utf8_lossy(bytes);
        if matches!(text, std::borrow::Cow::Owned(_)) {
            report.issues.push(FileIssue {
                path: f.rel.clone(),
                message:
                    "not valid UTF-8: invalid bytes were replaced with U+FFFD and the rest indexed"
                        .into(),
            });
        }
        let max = self.effective_chunk_tokens();
        let overlap = self.inner.settings.index.chunk_overlap.min(max / 2);
        let count = |s: &str| self.count_tokens(s);
        let limits = ChunkLimits {
            max_tokens: max,
            overlap_tokens: overlap,
            count: &count,
        };
        // Each chunk with the days it speaks from.
        type Days = Option<(chrono::NaiveDate, chrono::NaiveDate)>;
        let (chunks, session_key): (Vec<(Chunk, Days)>, Option<String>) = match f.source {
            Source::Sessions => {
                let opts = &self.inner.settings.index;
                let t =
                    transcript::parse(&text, opts.session_tool_results, opts.redact_transcripts);
                if t.skipped_lines > 0 {
                    report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: format!("{} malformed line(s) skipped", t.skipped_lines),
                    });
                }
                let key = t.key.clone().or_else(|| {
                    Path::new(&f.rel)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                });
                let chunks = chunk::chunk_transcript(&t.messages, &limits)
                    .into_iter()
                    .map(|c| {
                        let days = c.messages.and_then(|(a, b)| t.days_between(a, b));
                        (c, days)
                    })
                    .collect();
                (chunks, key)
            }
            Source::Memory => {
                if let Some(msg) = front_matter_problem(&text) {
                    report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: msg,
                    });
                }
                let days = when::date_in_path(&f.rel).map(|d| (d, d));
                let chunks = chunk::chunk_markdown(&text, &limits)
                    .into_iter()
                    .map(|c| (c, days))
                    .collect();
                (chunks, None)
            }
        };
        let chunks = chunks
            .into_iter()
            .map(|(c, days)| NewChunk {
                days,
                start_line: c.start_line,
                end_line: c.end_line,
                hash: sha256_hex(c.text.as_bytes()),
                tokens: text::index_text(&c.text),
                text: c.text,
                messages: c.messages,
                parts: c.parts,
            })
            .collect();
        let record = FileRecord {
            path: f.rel.clone(),
            source: f.source,
            hash,
            mtime_ms: f.mtime_ms,
            size: f.size,
            embedded: true,
            session_key,
        };
        Prepared { record, chunks }
    }

    /// Embeds the pending files' cache misses in batches of
    /// `Embedder::max_batch()`, then writes each file in its own short
    /// transaction. When the embedder fails, the files are still written for
    /// keyword search and marked so the next sync retries their vectors.
    fn flush(
        &self,
        backend: &SqliteBackend,
        pending: &mut Vec<Prepared>,
        report: &mut SyncReport,
        embedded_so_far: &mut usize,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        let mut have: HashMap<String, Vec<f32>> = HashMap::new();
        let mut failure: Option<IndexError> = None;
        if let Some(emb) = &self.inner.embedder {
            let hashes: Vec<&str> = pending
                .iter()
                .flat_map(|p| p.chunks.iter().map(|c| c.hash.as_str()))
                .collect();
            have = backend.cached_embeddings(&hashes)?;
            report.cache_hits += hashes.iter().filter(|h| have.contains_key(**h)).count();
            let mut todo: Vec<&NewChunk> = Vec::new();
            let mut queued = HashSet::new();
            for c in pending.iter().flat_map(|p| p.chunks.iter()) {
                if !have.contains_key(&c.hash) && queued.insert(c.hash.as_str()) {
                    todo.push(c);
                }
            }
            let dims = emb.dims();
            for batch in todo.chunks(emb.max_batch().max(1)) {
                let texts: Vec<&str> = batch.iter().map(|c| c.text.as_str()).collect();
                let vs = match emb.embed(&texts, EmbedKind::Document) {
                    Ok(vs) => vs,
                    Err(e) => {
                        failure = Some(e.into());
                        break;
                    }
                };
                if vs.len() != texts.len() || vs.iter().any(|v| v.len() != dims) {
                    failure = Some(IndexError::EmbedShape {
                        got: vs.len(),
                        dims: vs.first().map(Vec::len).unwrap_or(0),
                        expected: texts.len(),
                        want: dims,
                    });
                    break;
                }
                for (c, v) in batch.iter().zip(vs) {
                    have.insert(c.hash.clone(), v);
                }
                report.chunks_embedded += batch.len();
                *embedded_so_far += batch.len();
                progress(SyncProgress::Embedded {
                    chunks: *embedded_so_far,
                });
            }
        }
        for mut p in pending.drain(..) {
            let vectors: Option<Vec<Vec<f32>>> = if self.inner.embedder.is_some() {
                p.chunks
                    .iter()
                    .map(|c| have.get(&c.hash).cloned())
                    .collect()
            } else {
                None
            };
            if self.inner.embedder.is_some() && vectors.is_none() {
                p.record.embedded = false;
                let why = failure
                    .as_ref()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "embedding failed".into());
                report.issues.push(FileIssue {
                    path: p.record.path.clone(),
                    message: format!(
                        "{why}; indexed for keyword search, vectors retried on the next sync"
                    ),
                });
            }
            backend.upsert_file(&p.record, &p.chunks, vectors.as_deref())?;
            report.chunks_written += p.chunks.len();
            report.indexed.push(p.record.path);
        }
        Ok(())
    }
    /// (a directory walk comparing mtime and size; nothing is read).
    pub fn is_dirty(&self) -> Result<bool> {
        let backend = self.backend()?;
        let mut issues = Vec::new();
        let found = scan::walk(
            self.inner.ws.root(),
            &self.inner.settings.index,
            &mut issues,
        );
        let known: HashMap<String, FileRecord> = backend
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        if found.len() != known.len() {
            return Ok(true);
        }
        let want_vectors = self.inner.embedder.is_some();
        Ok(found.iter().any(|f| match known.get(&f.rel) {
            None => true,
            Some(p) => {
                p.mtime_ms != f.mtime_ms || p.size != f.size || (want_vectors && !p.embedded)
            }
        }))
    }

    /// `memory_search`: hybrid (or keyword-only) search over the index.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        let query = req.query.trim();
        if query.is_empty() {
            return Err(IndexError::InvalidInput(
                "the query is empty: give a few words to search for".into(),
            ));
        }
        let mut warnings = Vec::new();
        let opts = &self.inner.settings.search;
        if opts.sync_on_search {
            match self.is_dirty() {
                Ok(true) => match self.run_sync(false, false, false, &|_| {}) {
                    Ok(Some(r)) => {
                        for i in r.issues {
                            warnings.push(format!("{}: {}", i.path, i.message));
                        }
                    }
                    Ok(None) => warnings.push(
                        "the index is being updated; results may miss the latest changes".into(),
                    ),
                    Err(e) => {
                        warnings.push(format!("could not update the index before searching: {e}"))
                    }
                },
                Ok(false) => {}
                Err(e) => warnings.push(format!("could not check the index for changes: {e}")),
            }
        }
        match self.search_once(query, req, &mut warnings) {
            Ok(r) => Ok(r),
            // A generation swapped by another process can vanish under an
            // old connection; resolve the live one and retry once.
            Err(IndexError::Sqlite(_)) => self.search_once(query, req, &mut warnings),
            Err(e) => Err(e),
        }
    }

    fn search_once(
        &self,
        query: &str,
        req: &SearchRequest,
        warnings: &mut Vec<String>,
    ) -> Result<SearchResponse> {
        let opts = &self.inner.settings.search;
        let backend = self.backend()?;
        let max_results = req.max_results.unwrap_or(opts.max_results).max(1);
        let min_score = req.min_score.unwrap_or(opts.min_score);
        let sources: Vec<Source> = req.sources.clone().unwrap_or_default();
        let n_cand = (max_results * opts.candidate_multiplier)
            .clamp(50, 1000)
            .max(max_results);
        let mut hybrid = self.vectors_usable(&backend, query, warnings)?;

        // Candidates: keyword and phrase hits, vector hits, and what was
        // said in the periods the query names.
        let today = chrono::Local::now().date_naive();
        let readings = readings(query, opts.dialogue_focus);
        // Dates count where the need is: in the focus of a dialogue.
        let (periods, _) = if opts.date_boost > 0.0 {
            let d = when::dates(&readings[0].text, today);
            (d.periods, d.rest)
        } else {
            (Vec::new(), String::new())
        };
        let mut keyword: Vec<(i64, f64)> = Vec::new();
        let mut tokens: Vec<String> = Vec::new();
        for r in &readings {
            let keyword_query = if opts.date_boost > 0.0 {
                when::dates(&r.text, today).rest
            } else {
                r.text.clone()
            };
            let toks = text::query_tokens(&keyword_query);
            if !toks.is_empty() && (opts.text_weight > 0.0 || !hybrid) {
                let hits =
                    keyword_candidates(&backend, &toks, &keyword_query, opts, n_cand, &sources)?;
                search::blend_keyword(&mut keyword, &hits, r.weight);
            }
            for t in toks {
                if !tokens.contains(&t) {
                    tokens.push(t);
                }
            }
        }
        let vector = if hybrid {
            self.vector_candidates(&backend, &readings, n_cand, &sources, warnings)?
        } else {
            None
        };
        hybrid = vector.is_some();
        if self.inner.embedder.is_none() {
            warnings.push("no embedding model configured: keyword-only search".into());
        }
        let mut cands = search::merge(&keyword, vector.as_deref().unwrap_or_default());
        if !periods.is_empty() {
            period_candidates(&backend, &periods, &mut cands, n_cand, &sources)?;
        }

        // Scores: fusion, then what the chunks' files, identifiers, dates
        // and ages say about them.
        search::fuse(&mut cands, opts, hybrid);
        let mut records = records_of(&backend, &cands)?;
        cands.retain(|c| records.contains_key(&c.id));
        if opts.file_context > 0.0 {
            let file_of: HashMap<i64, &str> = records
                .iter()
                .map(|(id, r)| (*id, r.path.as_str()))
                .collect();
            search::file_context(&mut cands, &file_of, opts.file_context);
        }
        let (_, tw) = search::weights(opts, hybrid);
        let idents = text::identifiers(query);
        if tw > 0.0 && !idents.is_empty() {
            for c in cands.iter_mut() {
                if let Some(r) = records.get(&c.id) {
                    let lower = r.text.to_lowercase();
                    c.exact = idents.iter().any(|i| lower.contains(i.as_str()));
                }
            }
        }
        if !periods.is_empty() {
            search::date_boost(&mut cands, &records, &periods, opts.date_boost);
        }
        if opts.temporal_decay {
            for c in cands.iter_mut().filter(|c| !c.exact) {
                if let Some(r) = records.get(&c.id) {
                    c.score *= search::decay_factor(r, today, opts.half_life_days);
                }
            }
        }
        search::protect_exact(&mut cands);
        search::sort(&mut cands);

        // Hits: the minimum, MMR, and the split into messages and blocks.
        cands.retain(|c| search::passes(c, min_score, opts.vector_scale, tw > 0.0));
        set_parts(&mut records, &cands, opts);
        if opts.mmr {
            let texts: HashMap<i64, String> = cands
                .iter()
                .filter_map(|c| records.get(&c.id).map(|r| (c.id, r.text.clone())))
                .collect();
            cands = search::mmr(cands, &texts, opts.mmr_lambda);
        }
        let ranked: Vec<search::Ranked> = if opts.message_hits || opts.block_hits {
            let how = search::MessageFocus {
                query: &tokens,
                idents: &idents,
                focus: opts.message_focus,
                answer_lift: opts.answer_lift,
                min_score,
            };
            search::message_hits(&cands, &records, &how, max_results, opts.mmr)
        } else {
            cands
                .iter()
                .take(max_results)
                .map(|c| search::Ranked {
                    cand: c,
                    part: None,
                    score: c.score,
                })
                .collect()
        };
        let results = ranked
            .iter()
            .filter_map(|x| {
                records
                    .get(&x.cand.id)
                    .map(|r| hit(x, r, &tokens, opts.snippet_chars))
            })
            .collect();
        Ok(SearchResponse {
            mode: if hybrid {
                SearchMode::Hybrid
            } else {
                SearchMode::Keyword
            },
            results,
            warnings: std::mem::take(warnings),
            dates: periods.iter().map(when::Period::describe).collect(),
        })
    }

    /// Whether this search can use vectors: an embedder, a vector weight,
    /// an index built for the embedder's dimensions, and a model that
    /// knows the query's language. Says why not in `warnings`.
    fn vectors_usable(
        &self,
        backend: &SqliteBackend,
        query: &str,
        warnings: &mut Vec<String>,
    ) -> Result<bool> {
        let Some(emb) = self.inner.embedder.as_ref() else {
            return Ok(false);
        };
        if self.inner.settings.search.vector_weight <= 0.0 {
            return Ok(false);
        }
        if self.needs_full_reindex(backend)? {
            warnings.push("the index was built with other settings (model or chunking); run `mnemo index` to rebuild it".into());
            let dims = backend.meta()?.get("dims").cloned();
            if dims != Some(emb.dims().to_string()) {
                return Ok(false);
            }
        }
        if text::mostly_cjk(query) && emb.multilingual() == Some(false) {
            warnings.push(format!(
                "the embedding model {} knows English only, so this query in Chinese, Japanese or Korean was \
                 searched by keywords; for vector search in those languages set [embedder] model = \
                 \"multilingual-e5-small-q4\" (README: Configuration)",
                emb.id().model
            ));
            return Ok(false);
        }
        Ok(true)
    }

    /// Vector candidates `(chunk id, cosine)`, best first; `None` (with a
    /// warning) when the query could not be embedded.
    fn vector_candidates(
        &self,
        backend: &SqliteBackend,
        readings: &[Reading],
        n_cand: usize,
        sources: &[Source],
        warnings: &mut Vec<String>,
    ) -> Result<Option<Vec<(i64, f32)>>> {
        let Some(emb) = &self.inner.embedder else {
            return Ok(None);
        };
        let texts: Vec<&str> = readings.iter().map(|r| r.text.as_str()).collect();
        match emb.embed(&texts, EmbedKind::Query) {
            Ok(vs) if vs.len() == readings.len() => {
                let mut out: Vec<(i64, f32)> = Vec::new();
                for (v, r) in vs.iter().zip(readings) {
                    let hits = backend.vector_search(v, n_cand, sources)?;
                    search::blend_vector(&mut out, &hits, r.weight);
                }
                Ok(Some(out))
            }
            Ok(_) => {
                warnings.push(
                    "the embedder returned no vector for the query; keyword results only".into(),
                );
                Ok(None)
            }
            Err(e) => {
                warnings.push(format!(
                    "query embedding failed ({e}); keyword results only"
                ));
                Ok(None)
            }
        }
    }

    /// `memory_get`: lines of a memory file (MEMORY.md, memory/**, extra
    /// paths; Markdown only). `from` is 1-based (default 1); `lines` caps the
    /// count (default: to the end). A missing file gives empty text.
    pub fn get(
        &self,
        path: &str,
        from: Option<usize>,
        lines: Option<usize>,
    ) -> Result<GetResponse> {
        let rel = path.replace('\\', "/");
        let abs = mnemo_core::resolve_in_workspace(self.inner.ws.root(), &rel)?;
        let clean: String = rel
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect::<Vec<_>>()
            .join("/");
        // A link inside memory/ may point at another workspace file (say
        // mnemo.toml): the target must be a memory path too.
        let target_ok = match abs.canonicalize() {
            Ok(real) => {
                let root = self
                    .inner
                    .ws
                    .root()
                    .canonicalize()
                    .unwrap_or_else(|_| self.inner.ws.root().to_path_buf());
                real.strip_prefix(&root).ok().is_some_and(|r| {
                    let r = r.to_string_lossy().replace('\\', "/");
                    scan::is_memory_path(&r, &self.inner.settings.index)
                })
            }
            Err(_) => true, // missing: answered with empty text below
        };
        if !scan::is_memory_path(&clean, &self.inner.settings.index) || !target_ok {
            return Err(IndexError::Forbidden {
                path: path.to_string(),
                reason: "memory_get reads Markdown memory files only: MEMORY.md, memory/**/*.md or a configured \
                         extra path"
                    .into(),
            });
        }
        let from = from.unwrap_or(1).max(1);
        // Regular files only, opened without blocking: a FIFO named like a
        // memory file would otherwise hang the call forever.
        let bytes = match mnemo_core::files::read_regular(&abs) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(IndexError::Forbidden {
                    path: path.to_string(),
                    reason: format!("{e}"),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(GetResponse {
                    path: clean,
                    text: String::new(),
                    from,
                    lines: 0,
                    total_lines: 0,
                });
            }
            Err(e) => return Err(IndexError::io(abs, e)),
        };
        let text = String::from_utf8_lossy(&bytes);
        let all: Vec<&str> = text.lines().collect();
        let total = all.len();
        let start = (from - 1).min(total);
        let end = lines
            .map(|n| start.saturating_add(n).min(total))
            .unwrap_or(total);
        Ok(GetResponse {
            path: clean,
            text: all[start..end].join("\n"),
            from,
            lines: end - start,
            total_lines: total,
        })
    }

    /// Files, chunks, model and whether a sync is due.
    pub fn status(&self) -> Result<IndexStatus> {
        let backend = self.backend()?;
        let counts = backend.counts()?;
        let needs_full = self.needs_full_reindex(&backend)?;
        let dirty = needs_full || self.is_dirty()?;
        let (model, dims) = match &self.inner.embedder {
            Some(e) => {
                let id = e.id();
                (
                    Some(format!("{}/{}", id.provider, id.model)),
                    Some(e.dims()),
                )
            }
            None => (None, None),
        };
        let mode =
            if self.inner.embedder.is_some() && self.inner.settings.search.vector_weight > 0.0 {
                SearchMode::Hybrid
            } else {
                SearchMode::Keyword
            };
        Ok(IndexStatus {
            files: counts.files,
            chunks: counts.chunks,
            vectors: counts.vectors,
            model,
            dims,
            mode,
            db_path: backend.path().to_string_lossy().into_owned(),
            dirty,
            needs_full_reindex: needs_full,
        })
    }

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

/// One way of reading the query, and how much its ranking weighs.
pub(crate) struct Reading {
    text: String,
    weight: f32,
}

/// The query as searched: itself, or a dialogue's focus and context
/// ([`dialogue`]) weighing `focus` and `1 - focus`. The first reading is
/// the one dates are read from.
fn readings(query: &str, focus: f32) -> Vec<Reading> {
    match crate::dialogue::parse(query).filter(|_| focus > 0.0) {
        Some(d) => vec![
            Reading {
                text: d.focus,
                weight: focus,
            },
            Reading {
                text: d.context,
                weight: 1.0 - focus,
            },
        ],
        None => vec![Reading {
            text: query.to_string(),
            weight: 1.0,
        }],
    }
}

/// Keyword candidates `(chunk id, -bm25)`, best first, with the BM25 of the
/// query's adjacent word pairs added (`phrase_weight`).
fn keyword_candidates(
    backend: &SqliteBackend,
    tokens: &[String],
    keyword_query: &str,
    opts: &SearchOptions,
    n_cand: usize,
    sources: &[Source],
) -> Result<Vec<(i64, f64)>> {
    let mut keyword = backend.keyword_search(tokens, n_cand, sources)?;
    if opts.phrase_weight > 0.0 && !keyword.is_empty() {
        let phrases = text::query_phrases(keyword_query);
        if !phrases.is_empty() {
            let hits = backend.keyword_search(&phrases, n_cand, sources)?;
            search::add_phrases(&mut keyword, &hits, opts.phrase_weight);
        }
    }
    Ok(keyword)
}

/// What was said in the periods the query names is a candidate even when
/// no word or vector matched ("what did we talk about on 3 June?").
fn period_candidates(
    backend: &SqliteBackend,
    periods: &[when::Period],
    cands: &mut Vec<search::Candidate>,
    n_cand: usize,
    sources: &[Source],
) -> Result<()> {
    let Some(range) = backend.day_range()? else {
        return Ok(());
    };
    let mut known: HashSet<i64> = cands.iter().map(|c| c.id).collect();
    for (first, last) in when::windows(periods, range) {
        for id in backend.chunks_in_days(first, last, n_cand, sources)? {
            if known.insert(id) {
                cands.push(search::blank(id));
            }
        }
    }
    Ok(())
}

/// The candidates' chunks by id.
fn records_of(
    backend: &SqliteBackend,
    cands: &[search::Candidate],
) -> Result<HashMap<i64, ChunkRecord>> {
    let ids: Vec<i64> = cands.iter().map(|c| c.id).collect();
    Ok(backend
        .chunks(&ids)?
        .into_iter()
        .map(|r| (r.id, r))
        .collect())
}

/// Sets the parts `message_hits` splits on the chunks of the candidates
/// left after the minimum score: transcripts stored their messages,
/// Markdown blocks are found here.
fn set_parts(
    records: &mut HashMap<i64, ChunkRecord>,
    cands: &[search::Candidate],
    opts: &SearchOptions,
) {
    for c in cands {
        let Some(r) = records.get_mut(&c.id) else {
            continue;
        };
        if r.messages.is_none() && opts.block_hits {
            r.parts = chunk::markdown_parts(&r.text, r.start_line);
        } else if r.messages.is_some() && !opts.message_hits {
            r.parts.clear();
        }
    }
}

/// The hit for a whole chunk, or for one of its messages.
fn hit(x: &search::Ranked, r: &ChunkRecord, tokens: &[String], snippet_chars: usize) -> SearchHit {
    let part = x.part.and_then(|i| r.parts.get(i).map(|p| (i, p)));
    let (start_line, end_line, body, messages) = match part {
        // A message: one JSONL line.
        Some((i, p)) if r.messages.is_some() => (
            p.line,
            p.line,
            MessagePart::text_of(&r.parts, i, &r.text),
            Some((p.ordinal, p.ordinal)),
        ),
        // A Markdown block: its lines, without the blank ones after it.
        Some((i, p)) => {
            let body = MessagePart::text_of(&r.parts, i, &r.text).trim_end();
            let end = p.line + body.lines().count().saturating_sub(1);
            (p.line, end.min(r.end_line), body, None)
        }
        None => (r.start_line, r.end_line, r.text.as_str(), r.messages),
    };
    SearchHit {
        path: r.path.clone(),
        start_line,
        end_line,
        score: x.score,
        vector_score: x.cand.vector,
        text_score: x.cand.text,
        snippet: text::snippet(body, tokens, snippet_chars),
        source: r.source,
        citation: format!("{}#L{start_line}-L{end_line}", r.path),
        session_key: r.session_key.clone(),
        message_range: messages,
        // A message's own day when it was stored, else the chunk's days.
        date: part
            .and_then(|(_, p)| p.day)
            .map(|d| (d, d))
            .or(r.days)
            .map(|(first, last)| {
                if first == last {
                    first.to_string()
                } else {
                    format!("{first}/{last}")
                }
            }),
    }
}

/// A message when the file opens a YAML front matter block that never closes.
fn front_matter_problem(text: &str) -> Option<String> {
    (chunk::front_matter(text) == chunk::FrontMatter::Unclosed).then(|| {
        "front matter opened with `---` is never closed; the file was indexed as plain text".into()
    })
}

fn read_pointer(state_dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(state_dir.join(POINTER)).ok()?;
    let name = name.trim();
    // Only a plain file name inside .mnemo/ is accepted.
    (!name.is_empty() && !name.contains(['/', '\\']) && name.ends_with(".sqlite"))
        .then(|| name.to_string())
}

fn write_pointer(state_dir: &Path, name: &str) -> Result<()> {
    let tmp = state_dir.join(format!("{POINTER}.tmp"));
    std::fs::write(&tmp, format!("{name}\n")).map_err(|e| IndexError::io(&tmp, e))?;
    if let Ok(f) = File::open(&tmp) {
        let _ = f.sync_all();
    }
    let dst = state_dir.join(POINTER);
    std::fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))
}

/// Removes index generations that are not the live one: a full rebuild
/// killed before its swap leaves its `index-<ms>.sqlite` (and WAL) behind.
/// Only while no sync runs (the sync lock is free), since a running rebuild's
/// new generation looks just like an orphan; otherwise the next open does it.
fn collect_stale_generations(state_dir: &Path, live: &str) {
    let lock_path = state_dir.join(LOCK);
    let Ok(lock) = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
    else {
        return;
    };
    if lock.try_lock().is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        let _ = lock.unlock();
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let base = ["-wal", "-shm", "-journal"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name);
        let generation = base == FIRST_DB
            || base
                .strip_prefix("index-")
                .and_then(|r| r.strip_suffix(".sqlite"))
                .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()));
        if generation && base != live {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                tracing::warn!("cannot remove the stale index file {name}: {e}");
            }
        }
    }
    let _ = lock.unlock();
}

fn remove_db_files(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
