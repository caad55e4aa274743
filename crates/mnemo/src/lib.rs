//! mnemo as a library: [`Mnemo`] opens a workspace and hands out its parts
//! (session logs, the Markdown memory, the search index and the embedder
//! chosen by configuration). The CLI, the MCP server and the HTTP API all
//! start here, so they build the same parts from the same configuration.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::sync::{Arc, Mutex};

use mnemo_core::{Config, Embedder, ErrorCode, Workspace};
use serde::{Deserialize, Serialize};

pub use mnemo_core as core;
pub use mnemo_embed as embed;
pub use mnemo_embed::DownloadProgress;
pub use mnemo_engine as engine;
pub use mnemo_index as index;
#[cfg(feature = "postgres")]
pub use mnemo_index_postgres as index_postgres;
#[cfg(feature = "sqlite")]
pub use mnemo_index_sqlite as index_sqlite;
pub use mnemo_llm as llm;
#[cfg(feature = "local-llm")]
pub use mnemo_local_llm as local_llm;
pub use mnemo_store as store;
#[cfg(feature = "postgres")]
pub use mnemo_store_postgres as store_postgres;

mod source;

// Search is half of what mnemo does: a build without any index backend
// would fail at every search, so it fails here instead.
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!("the mnemo crate needs an index backend: its `sqlite` or `postgres` feature");

use mnemo_index::{
    BackendKind, IndexBackendKind, IndexError, IndexSettings, MemoryIndex, SourceTree,
};
use mnemo_store::{MemoryStore, SessionStore, SharedStorage};

/// Opens the search index of `ws` where `settings` say it lives: the
/// embedded SQLite index under `.mnemo/` (`[index] backend = "sqlite"`, the
/// default) or a PostgreSQL database (`backend = "postgres"`, `url`,
/// `schema`). Every surface opens its index here.
pub fn open_index(
    ws: &Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<MemoryIndex, IndexError> {
    open_index_over(ws, settings, embedder, None)
}

/// [`open_index`] over documents read from `source` instead of the
/// workspace folder (a database workspace; see [`MemoryIndex::with_source`]).
pub fn open_index_over(
    ws: &Workspace,
    settings: IndexSettings,
    embedder: Option<Arc<dyn Embedder>>,
    source: Option<Arc<dyn SourceTree>>,
) -> Result<MemoryIndex, IndexError> {
    if let Some(missing) = not_built(&settings.index.backend) {
        return Err(IndexError::Config(missing));
    }
    mnemo_index::open_index_with(&index_backends(), ws, settings, embedder, source)
}

/// The index backends of this build, each under the name `[index]
/// backend` gives it (the crate's `sqlite` and `postgres` features). A
/// library user with a backend of their own opens it with
/// [`mnemo_index::open_index_with`] and this list plus theirs.
pub fn index_backends() -> Vec<&'static dyn IndexBackendKind> {
    vec![
        #[cfg(feature = "sqlite")]
        &mnemo_index_sqlite::Sqlite,
        #[cfg(feature = "postgres")]
        &mnemo_index_postgres::Postgres,
    ]
}

/// Why a backend mnemo ships cannot be opened by this build: its feature
/// was left out.
fn not_built(kind: &BackendKind) -> Option<String> {
    let built = index_backends().iter().any(|k| k.name() == kind.as_str());
    let shipped = [BackendKind::SQLITE, BackendKind::POSTGRES].contains(kind);
    (shipped && !built).then(|| {
        format!(
            "[index] backend = \"{kind}\": this build of mnemo has no {kind} index; \
             build the `mnemo` crate with its `{kind}` feature"
        )
    })
}

/// Errors opening a workspace's parts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing workspace files failed.
    #[error(transparent)]
    Store(#[from] mnemo_store::Error),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] mnemo_index::IndexError),
    /// Configuration is wrong.
    #[error(transparent)]
    Config(#[from] mnemo_core::ConfigError),
    /// The configured embedder could not be built.
    #[error("embedder: {0}")]
    Embedder(String),
}

impl mnemo_core::Coded for Error {
    /// The wire-level code.
    fn code(&self) -> ErrorCode {
        match self {
            Error::Store(e) => e.code(),
            Error::Index(e) => e.code(),
            Error::Config(_) | Error::Embedder(_) => ErrorCode::Config,
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which embedder the `[embedder]` section asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// The local model (multilingual-e5-small, 4-bit, unless configured otherwise).
    #[default]
    Local,
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    Openai,
    /// Deterministic feature hashing: not semantic, for tests and benchmarks.
    Hash,
    /// No vectors: keyword-only search.
    None,
}

#[derive(Debug, Default, Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: EmbedderKind,
}

/// The embedder that was built, or why there is none.
#[derive(Clone, Default)]
pub struct EmbedderChoice {
    /// The embedder, when one could be built.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Why search runs keyword-only, when it does.
    pub warning: Option<String>,
    /// `[embedder]` settings that belong to another kind and were ignored
    /// (`engine` under `kind = "openai"`, say), one line each.
    pub notes: Vec<String>,
}

/// One workspace, opened.
pub struct Mnemo {
    workspace: Workspace,
    config: Config,
    sessions: SessionStore,
    memory: MemoryStore,
    /// Built on first use. A mutex rather than a `OnceLock`, so that two
    /// first callers (a server warming up and its first search) load or
    /// download the model once.
    embedder: Mutex<Option<EmbedderChoice>>,
    /// Opened on first use, by one caller: the watcher starting beside a
    /// server's first search would otherwise open the database twice.
    index: Mutex<Option<Arc<MemoryIndex>>>,
    /// Set by [`Mnemo::keep_index_fresh`]: the index is watched once open.
    keep_fresh: std::sync::atomic::AtomicBool,
    watch: Mutex<Option<mnemo_index::WatchHandle>>,
}

impl Mnemo {
    /// Opens `workspace` with `config` (already carrying env and flag overrides).
    pub fn open(workspace: Workspace, config: Config) -> Result<Self> {
        let storage: SharedStorage = Arc::new(mnemo_store::FileStorage::new(&workspace));
        Self::open_with_storage(workspace, config, storage)
    }

    /// Opens a workspace whose sessions and memory are kept in `storage`
    /// (rows of a database, say); `workspace` is then a folder for derived
    /// state only (caches; the index's freshness notes). The index reads
    /// the documents from the storage and checks its revision before a
    /// search.
    pub fn open_with_storage(
        workspace: Workspace,
        config: Config,
        storage: SharedStorage,
    ) -> Result<Self> {
        let sessions = SessionStore::with_storage(storage.clone(), config.section("session")?);
        let memory = MemoryStore::with_storage(&workspace, config.section("memory")?, storage);
        memory.validate()?;
        Ok(Mnemo {
            workspace,
            config,
            sessions,
            memory,
            embedder: Mutex::new(None),
            index: Mutex::new(None),
            keep_fresh: std::sync::atomic::AtomicBool::new(false),
            watch: Mutex::new(None),
        })
    }

    /// This workspace with `choice` as its embedder instead of one built
    /// from `[embedder]`: a server of many workspaces loads its model
    /// once and shares it.
    pub fn with_embedder(self, choice: EmbedderChoice) -> Self {
        *self.embedder.lock().unwrap_or_else(|e| e.into_inner()) = Some(choice);
        self
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Session logs.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The Markdown memory.
    pub fn memory(&self) -> &MemoryStore {
        &self.memory
    }

    /// The embedder of the `[embedder]` section, built once. A local model
    /// that cannot be found (or downloaded) leaves search keyword-only, with
    /// a warning that says how to fix it; a misconfigured remote embedder is
    /// an error.
    pub fn embedder(&self) -> Result<EmbedderChoice> {
        self.embedder_with_progress(&mut |_| {})
    }

    /// [`Mnemo::embedder`], reporting the model's download when the first
    /// call has to fetch it.
    pub fn embedder_with_progress(
        &self,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> Result<EmbedderChoice> {
        let mut built = self.embedder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = built.as_ref() {
            return Ok(c.clone());
        }
        let choice = build_embedder_with_progress(&self.config, progress)?;
        Ok(built.insert(choice).clone())
    }

    /// The search index over this workspace, opened once (and watched, once
    /// [`Mnemo::keep_index_fresh`] was called).
    pub fn index(&self) -> Result<Arc<MemoryIndex>> {
        let index = {
            let mut open = self.index.lock().unwrap_or_else(|e| e.into_inner());
            match open.as_ref() {
                Some(i) => i.clone(),
                None => {
                    let settings = IndexSettings::from_config(&self.config)?;
                    let choice = self.embedder()?;
                    let storage = self.sessions.storage();
                    let source = storage.root().is_none().then(|| {
                        Arc::new(source::StorageSource(storage.clone())) as Arc<dyn SourceTree>
                    });
                    let index = Arc::new(open_index_over(
                        &self.workspace,
                        settings,
                        choice.embedder,
                        source,
                    )?);
                    open.insert(index).clone()
                }
            }
        };
        // A workspace that is not a folder has no files to watch: its
        // index follows the storage's revision instead.
        if self.keep_fresh.load(std::sync::atomic::Ordering::Relaxed)
            && self.sessions.storage().root().is_some()
        {
            self.watch_index(&index);
        }
        Ok(index)
    }

    /// Starts the watcher unless it runs; a failure is logged once and
    /// leaves searches on their own freshness check.
    fn watch_index(&self, index: &MemoryIndex) {
        let mut watch = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        if watch.is_some() {
            return;
        }
        match index.keep_fresh() {
            Ok(handle) => *watch = Some(handle),
            Err(e) => {
                self.keep_fresh
                    .store(false, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!("cannot watch the workspace for changes: {e}");
            }
        }
    }
}

impl Mnemo {
    /// Keeps the search index fresh from file-system events for as long
    /// as this `Mnemo` lives, as a server or a chat should: searches then
    /// see a file edited by hand at once and never walk the workspace
    /// (`MemoryIndex::keep_fresh`). The index is opened in the background
    /// (that may first load the embedding model); a search that opens it
    /// first starts the watcher itself, before it searches.
    pub fn keep_index_fresh(self: &Arc<Self>) {
        self.keep_fresh
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let me = self.clone();
        std::thread::spawn(move || {
            if let Err(e) = me.index() {
                tracing::warn!("cannot open the index to keep it fresh: {e}");
            }
        });
    }
}

/// Builds the embedder `config` asks for.
pub fn build_embedder(config: &Config) -> Result<EmbedderChoice> {
    build_embedder_with_progress(config, &mut |_| {})
}

/// [`build_embedder`], reporting a local model's download.
pub fn build_embedder_with_progress(
    config: &Config,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> Result<EmbedderChoice> {
    let kind: KindOnly = config.section("embedder")?;
    // Settings of the other kinds (a workspace switched from "local" to
    // "openai" keeps `engine = "auto"`) are dropped with a note rather than
    // refused; a key no kind knows still fails, so typos are caught.
    let (section, notes) = embedder_section(config, kind.kind);
    let mut choice = match kind.kind {
        EmbedderKind::None => EmbedderChoice {
            warning: Some("keyword-only: [embedder] kind = \"none\"".into()),
            ..Default::default()
        },
        EmbedderKind::Hash => {
            let c: HashCfg = section_as(section)?;
            EmbedderChoice {
                embedder: Some(Arc::new(mnemo_embed::HashEmbedder::new(c.dims))),
                ..Default::default()
            }
        }
        #[cfg(not(feature = "local-embed"))]
        EmbedderKind::Local => {
            let _: mnemo_embed::LocalModelSpec = section_as(section)?;
            let _ = progress;
            EmbedderChoice {
                warning: Some(
                    "keyword-only: this build of mnemo has no local embedding model (the `mnemo` \
                     crate's `local-embed` feature); choose [embedder] kind = \"openai\""
                        .into(),
                ),
                ..Default::default()
            }
        }
        #[cfg(feature = "local-embed")]
        EmbedderKind::Local => {
            let spec: mnemo_embed::LocalModelSpec = section_as(section)?;
            match mnemo_embed::LocalEmbedder::resolve_with_progress(&spec, progress) {
                Ok(e) => EmbedderChoice {
                    embedder: Some(Arc::new(e)),
                    ..Default::default()
                },
                Err(e) => EmbedderChoice {
                    warning: Some(format!(
                        "keyword-only: the local embedding model is unavailable ({e}); set [embedder] path to a model \
                         folder, allow the download, or choose kind = \"openai\""
                    )),
                    ..Default::default()
                },
            }
        }
        EmbedderKind::Openai => {
            let cfg: mnemo_llm::OpenAiEmbedderConfig = section_as(section)?;
            let e =
                mnemo_llm::OpenAiEmbedder::new(cfg).map_err(|e| Error::Embedder(e.to_string()))?;
            EmbedderChoice {
                embedder: Some(Arc::new(e)),
                ..Default::default()
            }
        }
    };
    choice.notes = notes;
    Ok(choice)
}

/// `[embedder]` of the hash kind.
#[derive(Deserialize, Serialize)]
#[serde(default)]
struct HashCfg {
    dims: usize,
}

impl Default for HashCfg {
    fn default() -> Self {
        HashCfg { dims: 384 }
    }
}

impl EmbedderKind {
    fn name(self) -> &'static str {
        match self {
            EmbedderKind::Local => "local",
            EmbedderKind::Openai => "openai",
            EmbedderKind::Hash => "hash",
            EmbedderKind::None => "none",
        }
    }

    /// The `[embedder]` keys this kind reads (besides `kind`).
    fn keys(self) -> Vec<String> {
        let of = |v: serde_json::Result<serde_json::Value>| -> Vec<String> {
            v.ok()
                .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
                .unwrap_or_default()
        };
        match self {
            EmbedderKind::Local => of(serde_json::to_value(mnemo_embed::LocalModelSpec::default())),
            EmbedderKind::Openai => {
                let mut k = of(serde_json::to_value(
                    mnemo_llm::OpenAiEmbedderConfig::default(),
                ));
                // Never serialised, but read.
                k.push("api_key".into());
                k
            }
            EmbedderKind::Hash => of(serde_json::to_value(HashCfg::default())),
            EmbedderKind::None => Vec::new(),
        }
    }
}

/// Builds the chat model a resolved `[provider]` names: an HTTP client for
/// `openai` and `anthropic`, a GGUF model run in this process for `local`
/// (its file found in the cache, else downloaded with `progress`
/// reporting, then loaded).
pub fn build_chat_model(
    config: &mnemo_llm::ProviderConfig,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> std::result::Result<Arc<dyn mnemo_llm::ChatModel>, mnemo_llm::LlmError> {
    match config.kind {
        #[cfg(feature = "local-llm")]
        mnemo_llm::ProviderKind::Local => {
            let label = config.label();
            let model = mnemo_local_llm::local_chat_model(config, progress)
                .map_err(|e| e.into_llm(&label))?;
            Ok(Arc::new(model))
        }
        #[cfg(not(feature = "local-llm"))]
        mnemo_llm::ProviderKind::Local => {
            let _ = progress;
            Err(mnemo_llm::LlmError::Config(
                "[provider] kind = \"local\": this build of mnemo has no local chat model; \
                 build the `mnemo` crate with its `local-llm` feature"
                    .into(),
            ))
        }
        _ => mnemo_llm::build_chat_model(config),
    }
}

/// The `[embedder]` table for `kind`, without `kind` and without the keys
/// only other kinds read, and a note for each key dropped.
fn embedder_section(config: &Config, kind: EmbedderKind) -> (toml::Table, Vec<String>) {
    let mut table = config
        .table()
        .get("embedder")
        .and_then(|v| v.as_table())
        .cloned()
        .unwrap_or_default();
    table.remove("kind");
    let mut notes = Vec::new();
    if kind == EmbedderKind::None {
        return (table, notes);
    }
    let own = kind.keys();
    let others = [
        EmbedderKind::Local,
        EmbedderKind::Openai,
        EmbedderKind::Hash,
    ];
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        if own.contains(&key) {
            continue;
        }
        let owners: Vec<&str> = others
            .iter()
            .filter(|k| **k != kind && k.keys().contains(&key))
            .map(|k| k.name())
            .collect();
        if owners.is_empty() {
            continue; // unknown to every kind: the kind's own reader says so
        }
        table.remove(&key);
        notes.push(format!(
            "[embedder] {key} applies to kind = \"{}\" only; ignored with kind = \"{}\" (remove it from mnemo.toml to silence this note)",
            owners.join("\" or \""),
            kind.name()
        ));
    }
    (table, notes)
}

/// Reads an `[embedder]` table into the kind's settings.
fn section_as<T: serde::de::DeserializeOwned>(table: toml::Table) -> Result<T> {
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            Error::Config(mnemo_core::ConfigError::Section {
                section: "embedder".into(),
                message: e.to_string(),
            })
        })
}

/// The keys of each `mnemo.toml` section, for checking a `--set
/// section.key=value` before any part reads it: `None` for a section mnemo
/// does not have. `[providers.NAME]` takes a provider's keys.
pub fn setting_keys(section: &str) -> Option<Vec<String>> {
    fn keys_of<T: Serialize>(defaults: T) -> Vec<String> {
        serde_json::to_value(defaults)
            .ok()
            .and_then(|v| v.as_object().map(|o| o.keys().cloned().collect()))
            .unwrap_or_default()
    }
    let mut keys = match section {
        "session" => keys_of(mnemo_store::SessionOptions::default()),
        "memory" => keys_of(mnemo_store::MemorySettings::default()),
        "index" => keys_of(mnemo_index::IndexOptions::default()),
        "search" => keys_of(mnemo_index::SearchOptions::default()),
        "engine" => keys_of(mnemo_engine::EngineSettings::default()),
        "provider" => mnemo_llm::PROVIDER_KEYS
            .iter()
            .map(|k| k.to_string())
            .collect(),
        "embedder" => {
            let mut k: Vec<String> = [
                EmbedderKind::Local,
                EmbedderKind::Openai,
                EmbedderKind::Hash,
            ]
            .iter()
            .flat_map(|kind| kind.keys())
            .collect();
            k.push("kind".into());
            k
        }
        _ => return None,
    };
    keys.sort();
    keys.dedup();
    Some(keys)
}

/// Checks a dotted setting name (`search.max_results`): its section and key
/// exist. The error says which are known.
pub fn check_setting(dotted: &str) -> std::result::Result<(), String> {
    let mut parts = dotted.split('.');
    let section = parts.next().unwrap_or("");
    if section == "providers" {
        let key = dotted.splitn(3, '.').nth(2).unwrap_or("");
        return match mnemo_llm::PROVIDER_KEYS.contains(&key) {
            true => Ok(()),
            false => Err(format!(
                "unknown setting {dotted:?}: a [providers.NAME] section takes {}",
                mnemo_llm::PROVIDER_KEYS.join(", ")
            )),
        };
    }
    let Some(keys) = setting_keys(section) else {
        return Err(format!(
            "unknown setting {dotted:?}: the sections are session, memory, embedder, index, search, provider, providers.NAME and engine"
        ));
    };
    let key = parts.next().unwrap_or("");
    if keys.iter().any(|k| k == key) {
        Ok(())
    } else {
        Err(format!(
            "unknown setting {dotted:?}: [{section}] takes {}",
            keys.join(", ")
        ))
    }
}

#[cfg(test)]
mod setting_tests {
    use super::*;

    #[test]
    fn settings_are_checked_by_section_and_key() {
        assert!(check_setting("search.max_results").is_ok());
        assert!(check_setting("session.fsync").is_ok());
        assert!(check_setting("embedder.engine").is_ok());
        assert!(check_setting("embedder.base_url").is_ok());
        assert!(check_setting("provider.kind").is_ok());
        assert!(check_setting("providers.work.model").is_ok());
        assert!(check_setting("engine.rerank").is_ok());
        let e = check_setting("search.max_result").unwrap_err();
        assert!(e.contains("max_results"), "{e}");
        assert!(check_setting("serch.max_results").is_err());
        assert!(check_setting("providers.work.modle").is_err());
    }
}
