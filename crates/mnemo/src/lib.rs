//! mnemo as a library: [`Mnemo`] opens a workspace and hands out its parts
//! (session logs, the Markdown memory, the search index and the embedder
//! chosen by configuration). The CLI, the MCP server and the HTTP API all
//! start here, so they build the same parts from the same configuration.
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

use std::sync::{Arc, Mutex, OnceLock};

use mnemo_core::{Config, Embedder, ErrorCode, Workspace};
use serde::{Deserialize, Serialize};

pub use mnemo_core as core;
pub use mnemo_embed::DownloadProgress;
pub use mnemo_index as index;
pub use mnemo_store as store;

use mnemo_index::{IndexSettings, MemoryIndex};
use mnemo_store::{MemoryStore, SessionStore};

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

impl Error {
    /// The wire-level code.
    pub fn code(&self) -> ErrorCode {
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
#[derive(Clone)]
pub struct EmbedderChoice {
    /// The embedder, when one could be built.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Why search runs keyword-only, when it does.
    pub warning: Option<String>,
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
    index: OnceLock<Arc<MemoryIndex>>,
}

impl Mnemo {
    /// Opens `workspace` with `config` (already carrying env and flag overrides).
    pub fn open(workspace: Workspace, config: Config) -> Result<Self> {
        let sessions = SessionStore::from_config(&workspace, &config)?;
        let memory = MemoryStore::from_config(&workspace, &config)?;
        memory.validate()?;
        Ok(Mnemo {
            workspace,
            config,
            sessions,
            memory,
            embedder: Mutex::new(None),
            index: OnceLock::new(),
        })
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

    /// The search index over this workspace, opened once.
    pub fn index(&self) -> Result<Arc<MemoryIndex>> {
        if let Some(i) = self.index.get() {
            return Ok(i.clone());
        }
        let settings = IndexSettings::from_config(&self.config)?;
        let choice = self.embedder()?;
        let index = Arc::new(MemoryIndex::open(
            &self.workspace,
            settings,
            choice.embedder,
        )?);
        Ok(self.index.get_or_init(|| index).clone())
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
    match kind.kind {
        EmbedderKind::None => Ok(EmbedderChoice {
            embedder: None,
            warning: Some("keyword-only: [embedder] kind = \"none\"".into()),
        }),
        EmbedderKind::Hash => {
            #[derive(Deserialize)]
            #[serde(default)]
            struct HashCfg {
                dims: usize,
            }
            impl Default for HashCfg {
                fn default() -> Self {
                    HashCfg { dims: 384 }
                }
            }
            let c: HashCfg = config.section("embedder")?;
            Ok(EmbedderChoice {
                embedder: Some(Arc::new(mnemo_embed::HashEmbedder::new(c.dims))),
                warning: None,
            })
        }
        EmbedderKind::Local => {
            let spec: mnemo_embed::LocalModelSpec = config.section("embedder")?;
            match mnemo_embed::LocalEmbedder::resolve_with_progress(&spec, progress) {
                Ok(e) => Ok(EmbedderChoice { embedder: Some(Arc::new(e)), warning: None }),
                Err(e) => Ok(EmbedderChoice {
                    embedder: None,
                    warning: Some(format!(
                        "keyword-only: the local embedding model is unavailable ({e}); set [embedder] path to a model \
                         folder, allow the download, or choose kind = \"openai\""
                    )),
                }),
            }
        }
        EmbedderKind::Openai => {
            // The client's config refuses unknown fields: hand it the section without `kind`.
            let mut table = config
                .table()
                .get("embedder")
                .and_then(|v| v.as_table())
                .cloned()
                .unwrap_or_default();
            table.remove("kind");
            let cfg: mnemo_llm::OpenAiEmbedderConfig = toml::Value::Table(table)
                .try_into()
                .map_err(|e: toml::de::Error| {
                    Error::Embedder(format!("bad [embedder] section: {e}"))
                })?;
            let e =
                mnemo_llm::OpenAiEmbedder::new(cfg).map_err(|e| Error::Embedder(e.to_string()))?;
            Ok(EmbedderChoice {
                embedder: Some(Arc::new(e)),
                warning: None,
            })
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
        mnemo_llm::ProviderKind::Local => {
            let label = config.label();
            let model = mnemo_local_llm::local_chat_model(config, progress)
                .map_err(|e| e.into_llm(&label))?;
            Ok(Arc::new(model))
        }
        _ => mnemo_llm::build_chat_model(config),
    }
}
