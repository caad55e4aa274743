//! `MemoryIndex`: the facade over one workspace's index. This module owns
//! opening it (over an [`IndexStore`]: SQLite files by default) and its
//! metadata; the work is split by concern:
//! - `sync`: bringing the index up to date (incremental by content hash,
//!   full rebuilds into a new generation swapped in atomically);
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
use std::sync::{Arc, Mutex};
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
use crate::source::SourceTree;
use crate::store::{IndexStore, LockWait};
use crate::text;
use crate::transcript;
use crate::types::*;
use crate::when;

/// The memory index of one workspace. Cheap to clone (shared state); safe to
/// use from many threads: searches never wait for a sync.
#[derive(Clone)]
pub struct MemoryIndex {
    inner: Arc<Inner>,
}

/// The live generation and its metadata as one search last read them,
/// under the writers' lock when it synced: the search reads neither
/// again (each is a round trip to a database server). The metadata is
/// for the index's settings (model, chunking, schema), which only a
/// full rebuild changes; its freshness stamp may be older.
struct Live {
    backend: Arc<dyn IndexBackend>,
    meta: HashMap<String, String>,
}

struct Inner {
    ws: Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
    state_dir: PathBuf,
    /// Tokens the embedder's counter adds to any text (special tokens,
    /// document prefix): subtracted so per-line counts add up.
    token_base: usize,
    store: Arc<dyn IndexStore>,
    /// Where the documents are read when the workspace is not a folder.
    source: Option<Arc<dyn SourceTree>>,
    /// This process's syncs, one at a time (the store's lock keeps other
    /// processes out).
    sync_lock: Mutex<()>,
    /// The watcher keeping this index fresh, while one runs.
    watching: Mutex<std::sync::Weak<watch::WatchState>>,
    /// Embedding-cache rows this process's syncs added since it last
    /// pruned the cache (see `sync::PRUNE_EVERY`); starts due, so that a
    /// process's first sync that writes prunes.
    unpruned: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for MemoryIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryIndex")
            .field("root", &self.inner.ws.root())
            .finish()
    }
}

impl MemoryIndex {
    /// The index of `ws` over `store` (SQLite's in mnemo-index-sqlite,
    /// PostgreSQL's in mnemo-index-postgres, or a store of the caller's
    /// own). Nothing is indexed yet: call [`MemoryIndex::sync`] (searches
    /// also sync first when files changed, unless `sync_on_search` is off).
    /// With no embedder the index runs in keyword-only mode, and says so.
    /// The workspace's `.mnemo/` holds the freshness journal and the
    /// watcher's fence.
    pub fn with_store(
        ws: &Workspace,
        settings: IndexSettings,
        embedder: Option<Arc<dyn Embedder>>,
        store: Arc<dyn IndexStore>,
    ) -> Result<MemoryIndex> {
        Self::build(ws, settings, embedder, store, None)
    }

    /// [`MemoryIndex::with_store`] over documents that are not files of
    /// the workspace folder (a database workspace): they are read from
    /// `source`, and its revision tells a search whether to sync first.
    /// `ws` is a folder for derived state only.
    pub fn with_source(
        ws: &Workspace,
        settings: IndexSettings,
        embedder: Option<Arc<dyn Embedder>>,
        store: Arc<dyn IndexStore>,
        source: Arc<dyn SourceTree>,
    ) -> Result<MemoryIndex> {
        Self::build(ws, settings, embedder, store, Some(source))
    }

    fn build(
        ws: &Workspace,
        settings: IndexSettings,
        embedder: Option<Arc<dyn Embedder>>,
        store: Arc<dyn IndexStore>,
        source: Option<Arc<dyn SourceTree>>,
    ) -> Result<MemoryIndex> {
        settings.validate()?;
        let state_dir = ws.state_dir();
        std::fs::create_dir_all(&state_dir).map_err(|e| IndexError::io(&state_dir, e))?;
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
                store,
                source,
                sync_lock: Mutex::new(()),
                watching: Mutex::new(std::sync::Weak::new()),
                unpruned: std::sync::atomic::AtomicUsize::new(sync::PRUNE_EVERY),
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
        self.inner.store.scrub()?;
        Ok(dropped)
    }

    /// Copies this index's embedding cache (the vectors of its model) into
    /// `target`, in pages, calling `progress` with the rows copied so far;
    /// returns how many. A sync of `target` then takes every chunk's vector
    /// from the cache instead of the embedder: an index moves to another
    /// backend without embedding anything again. Both must serve the same
    /// model.
    pub fn copy_embeddings_to(
        &self,
        target: &MemoryIndex,
        progress: &dyn Fn(usize),
    ) -> Result<usize> {
        let ids = |i: &MemoryIndex| i.inner.embedder.as_ref().map(|e| (e.id(), e.dims()));
        if ids(self) != ids(target) {
            return Err(IndexError::Config(
                "the two indexes serve different embedding models: copy between indexes of one \
                 [embedder] (the target would have to embed everything anyway)"
                    .into(),
            ));
        }
        const PAGE: usize = 2_000;
        let (from, to) = (self.backend()?, target.backend()?);
        let mut after = String::new();
        let mut copied = 0;
        loop {
            let page = from.embedding_cache_page(&after, PAGE)?;
            let Some((last, _)) = page.last() else { break };
            after = last.clone();
            to.put_cached_embeddings(&page)?;
            copied += page.len();
            progress(copied);
        }
        Ok(copied)
    }

    /// The live backend, switching to a newer generation if another process
    /// swapped one in.
    fn backend(&self) -> Result<Arc<dyn IndexBackend>> {
        self.inner.store.live()
    }

    /// The live generation and its metadata, read together.
    fn live(&self) -> Result<Live> {
        let backend = self.backend()?;
        let meta = backend.meta()?;
        Ok(Live { backend, meta })
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
            ("schema_version", self.inner.store.schema_version()),
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
    fn needs_full_reindex(&self, backend: &dyn IndexBackend) -> Result<bool> {
        self.needs_full_reindex_in(backend, &backend.meta()?)
    }

    /// [`Self::needs_full_reindex`] with `backend`'s metadata as read.
    fn needs_full_reindex_in(
        &self,
        backend: &dyn IndexBackend,
        meta: &HashMap<String, String>,
    ) -> Result<bool> {
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
        let needs_full = self.needs_full_reindex(backend.as_ref())?;
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
            backend: self.inner.store.kind().to_string(),
            location: self.inner.store.location(),
            dirty,
            needs_full_reindex: needs_full,
        })
    }
}
