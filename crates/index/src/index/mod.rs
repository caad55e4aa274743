//! `MemoryIndex`: the facade over one workspace's index. This module owns
//! opening it, its generations (the live database named by a pointer file,
//! replaced by a full rebuild) and its metadata; the work is split by
//! concern:
//! - `sync`: bringing the index up to date (incremental by content hash,
//!   full rebuilds into a new database swapped in atomically);
//! - `query`: answering `memory_search`;
//! - `get`: `memory_get`;
//! - `watch`: re-indexing on file-system events.

mod get;
mod query;
mod sync;
mod watch;

pub use watch::WatchHandle;

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
    /// The watcher keeping this index fresh, while one runs.
    watching: Mutex<std::sync::Weak<watch::WatchState>>,
}

impl std::fmt::Debug for MemoryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIndex")
            .field("root", &self.inner.ws.root())
            .finish()
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
                watching: Mutex::new(std::sync::Weak::new()),
            }),
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &IndexSettings {
        &self.inner.settings
    }

    /// After a forget: syncs what changed (the chunks and vectors of text
    /// that is gone are deleted), then drops every cached embedding that no
    /// chunk uses any more, so nothing derived from the forgotten text stays
    /// in the index, nor in its free pages or write-ahead log. Returns the
    /// cached embeddings dropped.
    pub fn forget_unused(&self) -> Result<usize> {
        self.sync(&|_| {})?;
        let backend = self.backend()?;
        let dropped = backend.prune_embedding_cache(0)?;
        backend.scrub()?;
        Ok(dropped)
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
