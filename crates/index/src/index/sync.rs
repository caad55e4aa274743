//! Bringing the index up to date with the workspace: which files changed
//! (by mtime and size, then content hash), chunking them, embedding what
//! the embedding cache lacks, and writing each file in its own transaction;
//! full rebuilds go into a new database swapped in when done.

use std::collections::{BTreeMap, BTreeSet};

use mnemo_core::journal;

use super::*;
use crate::fresh::{self, Due, Stamp};

/// The journal is emptied (and every file compared) once it grows past
/// this: about 20,000 noted appends.
const JOURNAL_MAX_BYTES: u64 = 1 << 20;
/// The embedding cache is pruned after this many rows were added to it
/// (or a tenth of `[index] embedding_cache_max`, when less), not after
/// every sync that writes: counting the cache's rows is a scan of it, which
/// a search after each append would otherwise pay. The cache may hold that
/// many rows over its bound between prunes.
pub(super) const PRUNE_EVERY: usize = 1024;

/// A file larger than this is not read to be indexed: it would be held in
/// memory whole (see `transcript` for the bounds of what is indexed of a
/// file that is read).
const MAX_FILE_BYTES: u64 = 1 << 30;

/// What a sync compares with the index.
pub(super) enum Scope {
    /// Every file (a walk).
    All,
    /// What the freshness check finds changed (`fresh::due`, which walks
    /// once the last walk is `reconcile_ms` old), and the `extra` paths
    /// file-system events named.
    Changed {
        reconcile_ms: i64,
        extra: BTreeSet<String>,
    },
}

/// How long a sync waits for another one to finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    Forever,
    /// Gives up at once.
    Never,
    UpTo(Duration),
}

/// Counts `added` cache rows into `unpruned`; true (and the count reset)
/// once they reach [`PRUNE_EVERY`], or a tenth of the cache's bound `cap`.
fn prune_due(unpruned: &std::sync::atomic::AtomicUsize, cap: usize, added: usize) -> bool {
    use std::sync::atomic::Ordering;
    let every = (cap / 10).clamp(1, PRUNE_EVERY);
    if unpruned.fetch_add(added, Ordering::Relaxed) + added < every {
        return false;
    }
    unpruned.store(0, Ordering::Relaxed);
    true
}

/// Milliseconds since the epoch.
pub(super) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The folder of a workspace-relative path (`""` at the root).
fn parent_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// A changed file, chunked and waiting for its vectors.
struct Prepared {
    record: FileRecord,
    chunks: Vec<NewChunk>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Bytes of tokens [`cached_tokens`] keeps at most, for all the indexes of the
/// process; past that it starts again.
const TOKENS_MEMO_BYTES: usize = 16 << 20;

/// The keyword tokens of a chunk's text (`hash`: its sha256), kept for the
/// next sync: a session log appended since the last one is chunked again
/// whole, and all but its last chunks are texts tokenised then (the
/// stemmer is half of re-chunking a log: docs/BENCHMARKS-LOG.md item 65).
/// The tokens depend on the text alone, so every index of the process
/// shares them.
fn cached_tokens(hash: &str, text: &str) -> String {
    type Memo = (HashMap<String, String>, usize);
    static MEMO: std::sync::OnceLock<Mutex<Memo>> = std::sync::OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    if let Some(t) = memo.lock().unwrap_or_else(|e| e.into_inner()).0.get(hash) {
        return t.clone();
    }
    let tokens = text::index_text(text);
    let mut m = memo.lock().unwrap_or_else(|e| e.into_inner());
    let size = hash.len() + tokens.len();
    if m.1 + size > TOKENS_MEMO_BYTES {
        *m = Memo::default();
    }
    m.1 += size;
    m.0.insert(hash.to_string(), tokens.clone());
    tokens
}

impl MemoryIndex {
    /// Brings the index up to date with the workspace: files whose mtime or
    /// size changed are hashed, changed ones re-chunked and re-embedded
    /// (through the embedding cache), deleted ones dropped. When the model
    /// or chunking changed, the whole index is rebuilt into a new database
    /// and swapped in; searches keep using the old one meanwhile.
    /// Waits for a sync running in another thread or process.
    pub fn sync(&self, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        self.run_sync(false, Wait::Forever, true, Scope::All, progress)?
            .map(|(report, _)| report)
            .ok_or_else(|| IndexError::Busy(self.inner.store.lock_location()))
    }

    /// Like [`MemoryIndex::sync`]; with `force` the whole index is rebuilt
    /// into a new database (and swapped in) even if nothing changed.
    pub fn reindex(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        self.run_sync(force, Wait::Forever, true, Scope::All, progress)?
            .map(|(report, _)| report)
            .ok_or_else(|| IndexError::Busy(self.inner.store.lock_location()))
    }

    /// The freshness stamp in an index's metadata (`None` before its
    /// first sync).
    pub(super) fn stamp(meta: &HashMap<String, String>) -> Option<Stamp> {
        meta.get(fresh::META_KEY).and_then(|t| Stamp::parse(t))
    }

    /// The sync's report, and the live generation it synced with its
    /// metadata as read under the writers' lock (for a search that
    /// follows, see [`Live`]). `Ok(None)` when another sync still holds
    /// the lock after `wait`, or when a full rebuild is needed but not
    /// allowed (searches only sync incrementally: a rebuild can take
    /// minutes).
    pub(super) fn run_sync(
        &self,
        force: bool,
        wait: Wait,
        allow_full: bool,
        scope: Scope,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<Option<(SyncReport, Live)>> {
        // This process's syncs, then other processes' (the store's lock).
        let deadline = match wait {
            Wait::UpTo(d) => Some(Instant::now() + d),
            _ => None,
        };
        let _guard = loop {
            if wait == Wait::Forever {
                break self
                    .inner
                    .sync_lock
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
            }
            match self.inner.sync_lock.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            if deadline.is_none_or(|d| Instant::now() >= d) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let lock_wait = match (wait, deadline) {
            (Wait::Forever, _) => LockWait::Forever,
            (_, Some(d)) => LockWait::Until(d),
            (_, None) => LockWait::Until(Instant::now()),
        };
        let Some(writer) = self.inner.store.lock(lock_wait)? else {
            return Ok(None);
        };
        // Read once under the lock: another process may have synced since.
        let Live { backend, mut meta } = self.live()?;
        let full = force || self.needs_full_reindex_in(backend.as_ref(), &meta)?;
        if full && !allow_full {
            return Ok(None);
        }
        let synced = if full {
            self.full_rebuild(progress)
                .and_then(|report| Ok((report, self.live()?)))
        } else {
            let mut report = SyncReport::default();
            let r = match scope {
                Scope::All => self.sync_into(backend.as_ref(), false, &mut report, progress),
                Scope::Changed {
                    reconcile_ms,
                    extra,
                } => self.sync_changed(
                    backend.as_ref(),
                    &meta,
                    reconcile_ms,
                    extra,
                    &mut report,
                    progress,
                ),
            };
            r.and_then(|()| {
                // Only a sync under the lock writes these keys.
                if !meta.contains_key("schema_version") {
                    let desired = self.desired_meta();
                    backend.set_meta(&desired)?;
                    meta.extend(desired.into_iter().map(|(k, v)| (k.to_string(), v)));
                }
                Ok((report, Live { backend, meta }))
            })
        };
        drop(writer);
        progress(SyncProgress::Finished);
        synced.map(Some)
    }

    /// Builds every file into a new generation and swaps it in; searches
    /// keep using the old one meanwhile.
    fn full_rebuild(&self, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        let generation = self.inner.store.new_generation()?;
        let fresh = generation.backend();
        let mut report = SyncReport {
            full_rebuild: true,
            ..Default::default()
        };
        // On an error the generation is dropped, and with it its data.
        self.sync_into(fresh.as_ref(), true, &mut report, progress)?;
        fresh.set_meta(&self.desired_meta())?;
        generation.swap_in()?;
        Ok(report)
    }

    /// Compares every file with the index (a walk) and records the stamp
    /// the freshness check starts from next time.
    fn sync_into(
        &self,
        backend: &dyn IndexBackend,
        full: bool,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        if let Some(source) = &self.inner.source {
            return self.sync_source(source.as_ref(), None, backend, full, report, progress);
        }
        let ws = &self.inner.ws;
        let opts = &self.inner.settings.index;
        // The stamp's parts are read before the files, so a change made
        // during the walk is seen by the next check rather than lost. A
        // journal grown large is emptied here, right before every file is
        // compared: nothing noted in it can be missed.
        let started = now_ms();
        journal::ensure(ws);
        let journal = journal::truncate_if_over(ws, JOURNAL_MAX_BYTES).or_else(|| journal::end(ws));
        let pinned = fresh::pinned_times(ws.root(), &opts.extra_paths);
        let walked = scan::walk_all(ws.root(), opts, &mut report.issues);
        let known: HashMap<String, FileRecord> = backend
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let missing = self.apply(backend, &walked.files, &known, full, report, progress)?;
        let mut stamp = Stamp::of_walk(&walked.dirs, pinned, journal, started);
        stamp.incomplete = missing > 0;
        backend.set_meta(&[(fresh::META_KEY, stamp.to_text())])
    }

    /// Brings in what the freshness check finds changed since the stamp
    /// (plus `extra` paths that file-system events named); walks every file
    /// when the check says so.
    /// `meta` is `backend`'s, read under the writers' lock.
    fn sync_changed(
        &self,
        backend: &dyn IndexBackend,
        meta: &HashMap<String, String>,
        reconcile_ms: i64,
        extra: BTreeSet<String>,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        if let Some(source) = &self.inner.source {
            let now = Self::source_revision(source.as_ref())?;
            if extra.is_empty() && !Self::source_moved(&now, meta) {
                return Ok(());
            }
            return self.sync_source(source.as_ref(), Some(now), backend, false, report, progress);
        }
        let stamp = Self::stamp(meta);
        let changes = match (
            fresh::due(&self.inner.ws, stamp.as_ref(), now_ms(), reconcile_ms),
            &stamp,
        ) {
            (Due::Look(c), Some(_)) => c,
            (Due::Nothing, Some(s)) if !extra.is_empty() => fresh::Changes {
                journal: s.journal,
                ..Default::default()
            },
            (Due::Nothing, Some(_)) => return Ok(()),
            _ => return self.sync_into(backend, false, report, progress),
        };
        match stamp {
            Some(stamp) => self.sync_changes(backend, stamp, changes, extra, report, progress),
            None => self.sync_into(backend, false, report, progress),
        }
    }

    /// Compares the files in the changed folders, the files the journal or
    /// events named, and the files whose vectors are missing, with the
    /// index; then moves the stamp on.
    fn sync_changes(
        &self,
        backend: &dyn IndexBackend,
        stamp: Stamp,
        changes: fresh::Changes,
        extra: BTreeSet<String>,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        let root = self.inner.ws.root();
        let opts = &self.inner.settings.index;
        let pinned = fresh::pinned_times(root, &opts.extra_paths);
        let all: HashMap<String, FileRecord> = backend
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let known_dirs: HashSet<String> = stamp.dirs.keys().cloned().collect();
        let mut next = stamp.clone();
        let mut found: BTreeMap<String, Found> = BTreeMap::new();
        let mut scope: HashSet<String> = HashSet::new();
        for dir in &changes.dirs {
            let Some(walked) = scan::rescan_dir(root, opts, dir, &known_dirs, &mut report.issues)
            else {
                return self.sync_into(backend, false, report, progress);
            };
            next.dirs.remove(dir);
            for (d, t) in walked.dirs {
                if let Some(t) = t {
                    next.dirs.insert(d, t);
                }
            }
            scope.extend(all.keys().filter(|p| parent_of(p) == dir.as_str()).cloned());
            for f in walked.files {
                scope.insert(f.rel.clone());
                found.insert(f.rel.clone(), f);
            }
        }
        let mut files: BTreeSet<String> = changes.files.iter().chain(&extra).cloned().collect();
        if changes.incomplete {
            files.extend(all.values().filter(|f| !f.embedded).map(|f| f.path.clone()));
        }
        for rel in files {
            if let Some(f) = scan::one_file(root, opts, &rel, &mut report.issues) {
                found.insert(rel.clone(), f);
            }
            scope.insert(rel);
        }
        let known: HashMap<String, FileRecord> =
            all.into_iter().filter(|(p, _)| scope.contains(p)).collect();
        let found: Vec<Found> = found.into_values().collect();
        let missing = self.apply(backend, &found, &known, false, report, progress)?;
        for (p, t) in pinned {
            if changes.files.contains(&p) || extra.contains(&p) {
                next.pinned.insert(p, t);
            }
        }
        next.journal = changes.journal;
        next.incomplete = missing > 0 || (stamp.incomplete && !changes.incomplete);
        if next != stamp {
            backend.set_meta(&[(fresh::META_KEY, next.to_text())])?;
        }
        Ok(())
    }

    /// Brings `found` into the index: files whose mtime or size differs
    /// from `known` are read and hashed, changed ones chunked and embedded;
    /// files of `known` that were not found are dropped. Returns how many
    /// files are left without vectors (the embedder failed).
    fn apply(
        &self,
        backend: &dyn IndexBackend,
        found: &[Found],
        known: &HashMap<String, FileRecord>,
        full: bool,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<usize> {
        let total = found.len();
        report.files_scanned += total;
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
        let mut missing = 0usize;
        for (i, f) in found.iter().enumerate() {
            let prev = known.get(&f.rel);
            let complete = |p: &FileRecord| p.embedded || !want_vectors;
            let unchanged_stat =
                prev.is_some_and(|p| p.mtime_ms == f.mtime_ms && p.size == f.size && complete(p));
            if !unchanged_stat && f.size > MAX_FILE_BYTES {
                // Read whole, a file this large would be in memory at once.
                report.issues.push(FileIssue {
                    path: f.rel.clone(),
                    message: format!(
                        "{} bytes, over the {} GiB a file may have to be indexed: not read; split it, or move it out of the workspace",
                        f.size,
                        MAX_FILE_BYTES >> 30
                    ),
                });
            } else if !unchanged_stat {
                match self.read_found(f) {
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
                                missing += self.flush(
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
        missing += self.flush(
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
            if report.issues.iter().any(|i| &i.path == path)
                && (self.inner.source.is_some() || self.inner.ws.root().join(path).exists())
            {
                continue;
            }
            backend.delete_file(path)?;
            report.removed.push(path.clone());
        }
        report.indexed.sort();
        if report.chunks_written > 0 || !report.removed.is_empty() {
            if self.prune_due(report.chunks_embedded) {
                report.cache_pruned =
                    backend.prune_embedding_cache(self.inner.settings.index.embedding_cache_max)?;
            }
            backend.after_writes()?;
        }
        Ok(missing)
    }

    /// True when the embedding cache is due a prune, `added` rows after
    /// the last one (see [`PRUNE_EVERY`]).
    fn prune_due(&self, added: usize) -> bool {
        prune_due(
            &self.inner.unpruned,
            self.inner.settings.index.embedding_cache_max,
            added,
        )
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
                let mut bounded = Vec::new();
                if t.long_lines > 0 {
                    bounded.push(format!(
                        "{} line(s) over {} MiB not indexed",
                        t.long_lines,
                        transcript::MAX_LINE_BYTES >> 20
                    ));
                }
                if t.cut_messages > 0 {
                    bounded.push(format!(
                        "{} message(s) indexed in their first {} MiB only",
                        t.cut_messages,
                        transcript::MAX_MESSAGE_BYTES >> 20
                    ));
                }
                if t.unindexed_messages > 0 {
                    bounded.push(format!(
                        "{} message(s) after the first {} MiB of text not indexed",
                        t.unindexed_messages,
                        transcript::MAX_FILE_TEXT_BYTES >> 20
                    ));
                }
                if !bounded.is_empty() {
                    report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: format!(
                            "{}: what one log costs to index is bounded (the log itself is kept whole)",
                            bounded.join(", ")
                        ),
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
                let mut end = text.len().min(transcript::MAX_FILE_TEXT_BYTES);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                if end < text.len() {
                    report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: format!(
                            "indexed in its first {} MiB only: what one file costs to index is bounded",
                            transcript::MAX_FILE_TEXT_BYTES >> 20
                        ),
                    });
                }
                let text = text.get(..end).unwrap_or_default();
                if let Some(msg) = front_matter_problem(text) {
                    report.issues.push(FileIssue {
                        path: f.rel.clone(),
                        message: msg,
                    });
                }
                let days = when::date_in_path(&f.rel).map(|d| (d, d));
                let chunks = if chunk::ITEM_FILES.contains(&f.rel.as_str()) {
                    chunk::chunk_items(text, &limits)
                } else {
                    chunk::chunk_markdown(text, &limits)
                };
                let chunks = chunks.into_iter().map(|c| (c, days)).collect();
                (chunks, None)
            }
        };
        let chunks = chunks
            .into_iter()
            .map(|(c, days)| {
                let hash = sha256_hex(c.text.as_bytes());
                NewChunk {
                    days,
                    start_line: c.start_line,
                    end_line: c.end_line,
                    tokens: cached_tokens(&hash, &c.text),
                    hash,
                    text: c.text,
                    messages: c.messages,
                    parts: c.parts,
                }
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
        backend: &dyn IndexBackend,
        pending: &mut Vec<Prepared>,
        report: &mut SyncReport,
        embedded_so_far: &mut usize,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<usize> {
        let mut missing = 0;
        let mut have: HashMap<String, Vec<f32>> = HashMap::new();
        let mut failure: Option<IndexError> = None;
        if let Some(emb) = &self.inner.embedder {
            let hashes: Vec<&str> = pending
                .iter()
                .flat_map(|p| p.chunks.iter().map(|c| c.hash.as_str()))
                .collect();
            have = backend.cached_embeddings(&hashes)?;
            report.cache_hits += hashes.iter().filter(|h| have.contains_key(**h)).count();
            // `Embedder::embed` refuses blank texts, and a blank chunk has no
            // meaning to search by vector: it is stored without one (an empty
            // vector, which `upsert_file` skips), and its file still counts
            // as embedded.
            for c in pending.iter().flat_map(|p| p.chunks.iter()) {
                if c.text.trim().is_empty() {
                    have.insert(c.hash.clone(), Vec::new());
                }
            }
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
                missing += 1;
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
        Ok(missing)
    }

    /// (a directory walk comparing mtime and size; nothing is read).
    pub fn is_dirty(&self) -> Result<bool> {
        let backend = self.backend()?;
        if let Some(source) = &self.inner.source {
            return Self::source_changed(source.as_ref(), backend.as_ref());
        }
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
}

/// A message when the file opens a YAML front matter block that never closes.
fn front_matter_problem(text: &str) -> Option<String> {
    (chunk::front_matter(text) == chunk::FrontMatter::Unclosed).then(|| {
        "front matter opened with `---` is never closed; the file was indexed as plain text".into()
    })
}

/// Meta key of the source revision the index was last synced to.
const SOURCE_REVISION: &str = "source_revision";

impl MemoryIndex {
    /// A sync from a [`SourceTree`]: every document listed is compared
    /// with the index (by time and size, then by hash); the revision read
    /// first is recorded, so a change made during the sync shows next time.
    /// `revision` is the source's, read by the caller under the writers'
    /// lock (`None`: read here).
    fn sync_source(
        &self,
        source: &dyn SourceTree,
        revision: Option<String>,
        backend: &dyn IndexBackend,
        full: bool,
        report: &mut SyncReport,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<()> {
        let fail = |m: String| IndexError::database(source.location(), m);
        let revision = match revision {
            Some(r) => r,
            None => Self::source_revision(source)?,
        };
        let opts = &self.inner.settings.index;
        let files: Vec<Found> = source
            .documents()
            .map_err(fail)?
            .into_iter()
            .filter(|d| match d.source {
                Source::Memory => scan::is_memory_path(&d.rel, opts),
                Source::Sessions => opts.sessions && scan::is_session_path(&d.rel),
            })
            .map(|d| Found {
                rel: d.rel,
                abs: PathBuf::new(),
                source: d.source,
                mtime_ms: d.mtime_ms,
                size: d.size,
            })
            .collect();
        let known: HashMap<String, FileRecord> = backend
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let missing = self.apply(backend, &files, &known, full, report, progress)?;
        // Vectors missing (the embedder failed): the next search tries again.
        let recorded = if missing > 0 { String::new() } else { revision };
        backend.set_meta(&[(SOURCE_REVISION, recorded)])
    }

    /// True when the source moved past the revision last synced.
    pub(super) fn source_changed(
        source: &dyn SourceTree,
        backend: &dyn IndexBackend,
    ) -> Result<bool> {
        let now = Self::source_revision(source)?;
        Ok(Self::source_moved(&now, &backend.meta()?))
    }

    /// The source's revision now.
    pub(super) fn source_revision(source: &dyn SourceTree) -> Result<String> {
        source
            .revision()
            .map_err(|m| IndexError::database(source.location(), m))
    }

    /// True when revision `now` is not the one an index with metadata
    /// `meta` was last synced to.
    pub(super) fn source_moved(now: &str, meta: &HashMap<String, String>) -> bool {
        meta.get(SOURCE_REVISION).map(String::as_str) != Some(now)
    }

    /// The bytes of a found document, from the source or the file.
    fn read_found(&self, f: &Found) -> std::io::Result<Vec<u8>> {
        match &self.inner.source {
            Some(source) => source
                .read(&f.rel)
                .map_err(std::io::Error::other)?
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)),
            None => mnemo_core::files::read_regular(&f.abs),
        }
    }
}

#[cfg(test)]
mod prune_tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn the_cache_is_pruned_once_enough_rows_were_added() {
        let unpruned = AtomicUsize::new(PRUNE_EVERY);
        // A process's first sync that writes prunes.
        assert!(prune_due(&unpruned, 50_000, 0));
        assert!(!prune_due(&unpruned, 50_000, 10));
        assert!(!prune_due(&unpruned, 50_000, PRUNE_EVERY - 11));
        assert!(prune_due(&unpruned, 50_000, 1));
        // A small bound is kept by a prune every tenth of it, at least one row.
        assert!(!prune_due(&unpruned, 100, 9));
        assert!(prune_due(&unpruned, 100, 1));
        assert!(prune_due(&unpruned, 3, 1));
        assert!(!prune_due(&unpruned, 3, 0));
    }
}
